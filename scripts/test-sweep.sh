#!/usr/bin/env bash
# What a test killed at its bound (or a run stopped by hand) can leave behind, removed
# when the run ends: `make test` calls this after nextest, pass or fail (issue 31).
#   - The Docker daemon the run started for every test process (scripts/stop-test-dockerd.sh).
#   - What is left of the tests' private Slurm clusters whose test process is gone: each
#     test's cluster (tests/integration/slurm_cluster.rs, /tmp/ob-slurm-*) stops with its
#     process, but a `slurmstepd` it forked and the job under it live on (and a daemon
#     can miss its parent-death signal). They are found by the cluster's `SLURM_CONF` in
#     their environment, and only when the test process that started the cluster
#     (`owner.pid`) is gone, or, for a cluster without one, when its directory is gone or
#     none of the daemons its pidfiles name lives.
# Only processes of this machine's test clusters are touched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/stop-test-dockerd.sh"

alive() { # PIDFILE: whether the process it names lives
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] && [[ -d "/proc/$pid" ]]
}

tmp=${TMPDIR:-/tmp}
for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [[ "$pid" == "$$" ]] && continue
    conf=$(grep -zaoE -m1 "^SLURM_CONF=$tmp/ob-slurm-[A-Za-z0-9]+/slurm.conf\$" "$proc/environ" 2>/dev/null | tr -d '\0') || continue
    dir=$(dirname "${conf#SLURM_CONF=}")
    if [[ -e "$dir/owner.pid" ]]; then
        # The test process that started the cluster: while it lives, the cluster is its.
        alive "$dir/owner.pid" && continue
    elif [[ -d "$dir" ]] && { alive "$dir/slurmctld.pid" || alive "$dir/slurmd.pid" || alive "$dir/munge/pid"; }; then
        continue
    fi
    echo "test-sweep: killing $pid ($(cat "$proc/comm" 2>/dev/null)), left by the dead test cluster $dir" >&2
    kill -s KILL "$pid" 2>/dev/null || true
done
