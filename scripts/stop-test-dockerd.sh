#!/usr/bin/env bash
# Stops the Docker daemon the test run started (tests/integration/engines.rs starts it
# detached on the test socket, for every test process of the run): `make test` calls this
# when the run ends, pass or fail, so no daemon outlives the tests. A daemon that is not
# the test's (another pidfile, another program) is never touched.
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer"
pidfile="$cache/containers/docker/docker.pid"
[[ -s "$pidfile" ]] || exit 0
pid=$(cat "$pidfile")
[[ "$pid" =~ ^[0-9]+$ ]] || exit 0
[[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == dockerd ]] || exit 0
kill -s TERM "$pid" 2>/dev/null || exit 0
for _ in $(seq 1 300); do
    kill -s 0 "$pid" 2>/dev/null || exit 0
    sleep 0.1
done
echo "stop-test-dockerd: dockerd $pid did not stop within 30 s of SIGTERM; killing it" >&2
kill -s KILL "$pid" 2>/dev/null || true
