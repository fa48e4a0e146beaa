# The pod's bootstrap (spec/runpod.md POD-27, POD-29, POD-33): started by the pod's
# `args` (src/runpod/bootstrap.rs) with the run directory, run ID and venv set above it.
# It first checks what a custom image must keep (POD-74, image_lacks): a miss is logged
# in one line and ends the boot like any other failure, without sshd. It then writes
# the image's environment for the jobs to /etc/overbrainer/job.env (POD-74,
# write_job_env), claims the run directory (RUN-4), installs the pinned host key from
# its secret (base64, one line) and the run's client key, starts the watchdog as the
# first process, waits for its self-check, and only then starts sshd with the pinned
# host key alone. Logs go to .pod/bootstrap.log in the run directory and to the pod's
# own log.
set -u
umask 077
pod_dir="$run_dir/.pod"
mkdir -p "$pod_dir" /etc/overbrainer /run/sshd /root/.ssh
log() {
    printf '%s bootstrap: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"
}
boot() {
    failed=
    lacks=$(image_lacks "$venv")
    if [ -n "$lacks" ]; then
        log "$lacks"
    fi
    if ! write_job_env /etc/overbrainer/job.env; then
        failed="the job environment /etc/overbrainer/job.env could not be written"
    fi
    claimed=$(claim) || true
    if [ "$claimed" != claimed ]; then
        failed="the run directory $run_dir is not this run's ($claimed)"
    fi
    if ! printf '%s' "${OVERBRAINER_HOST_KEY:-}" | base64 -d >/etc/ssh/overbrainer_host_key ||
        [ ! -s /etc/ssh/overbrainer_host_key ]; then
        failed="the pinned host key could not be installed"
    fi
    unset OVERBRAINER_HOST_KEY
    printf '%s\n' "${OVERBRAINER_AUTHORIZED_KEY:-}" >/root/.ssh/authorized_keys
    watchdog >/etc/overbrainer/watchdog.sh
    setsid bash /etc/overbrainer/watchdog.sh </dev/null &
    log "watchdog started (process $!)"
    until [ -e "$pod_dir/selfcheck" ]; do
        if ! kill -0 "$!" 2>/dev/null; then break; fi
        sleep 1
    done
    if [ "$(cat "$pod_dir/selfcheck" 2>/dev/null)" != ok ]; then
        log "the watchdog's self-check failed: training does not start"
        wait
        exit 1
    fi
    if [ -n "$lacks" ]; then
        failed=$lacks
    fi
    if [ -n "$failed" ]; then
        log "bootstrap failed: $failed"
        printf '%s\n' "$failed" >"$pod_dir/bootstrap_failed"
        wait
        exit 1
    fi
    log "starting sshd with the pinned host key"
    sshd=$(command -v sshd || echo /usr/sbin/sshd)
    exec "$sshd" -D -e -o HostKey=/etc/ssh/overbrainer_host_key -o PasswordAuthentication=no
}
boot 2>&1 | tee -a "$pod_dir/bootstrap.log"
