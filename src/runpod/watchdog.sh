#!/bin/bash
# The pod's watchdog (spec/runpod.md POD-29, POD-33..POD-35, POD-40, POD-41, POD-48, POD-50):
# deletes its own pod through the Runpod API with the pod-scoped RUNPOD_API_KEY when a
# rule says so, and confirms the answer. Rendered by src/runpod/watchdog.rs; its bounds
# come in the pod's environment (OVERBRAINER_*), in whole seconds already scaled.
# The key goes to curl on its standard input (`-K -`), never on a command line.
set -u
run_dir=$OVERBRAINER_RUN_DIR
pod_dir="$run_dir/.pod"
mkdir -p "$pod_dir"
base=${OVERBRAINER_API_BASE%/}
started=$(date +%s)

log() {
    printf '%s watchdog: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$pod_dir/watchdog.log"
}

# api METHOD: the HTTP status of METHOD on this pod (000 when no answer came).
api() {
    printf 'header = "Authorization: Bearer %s"\n' "${RUNPOD_API_KEY:-}" |
        curl -sS -K - -o /dev/null -w '%{http_code}' --max-time 30 -X "$1" \
            "$base/pods/$RUNPOD_POD_ID" 2>>"$pod_dir/watchdog.log" || true
}

# A number held by a file, or empty.
number() {
    [ -f "$1" ] || return 0
    tr -cd '0-9' <"$1"
}

# Deletes the pod; returns 0 once the API says it is deleted or gone.
delete_pod() {
    log "deleting pod $RUNPOD_POD_ID: $1"
    code=$(api DELETE)
    case $code in
    2?? | 404)
        log "pod $RUNPOD_POD_ID deleted (HTTP $code)"
        return 0
        ;;
    esac
    log "delete refused (HTTP $code); trying again at the next check"
    return 1
}

# POD-29: the key inside the pod must be allowed to read this pod. A 429 (rate
# limited) says nothing about the key: the check asks again after a tick, ten times at
# most (issue 34). A refused delete (a 429 among others) is sent again at each check.
code=$(api GET)
limited=0
while [ "$code" = 429 ] && [ "$limited" -lt 10 ]; do
    limited=$((limited + 1))
    log "self-check rate limited (HTTP 429); asking again in ${OVERBRAINER_TICK_S}s"
    sleep "$OVERBRAINER_TICK_S"
    code=$(api GET)
done
if [ "$code" != 200 ]; then
    log "self-check failed: the pod's Runpod key cannot read pod $RUNPOD_POD_ID (HTTP $code)"
    printf 'failed %s\n' "$code" >"$pod_dir/selfcheck"
    until delete_pod "self-check failed"; do sleep "$OVERBRAINER_TICK_S"; done
    exit 1
fi
printf 'ok\n' >"$pod_dir/selfcheck"
log "self-check passed; deadline $OVERBRAINER_DEADLINE_AT, keep pod $OVERBRAINER_KEEP_POD"

# Issue 21: the job's stall, as its follower declares it, from metrics.jsonl: its
# process group lives (job.pid, no exit_code) but no training step or evaluation line
# came within the bound: OVERBRAINER_STALL_S when set (not 0), else the larger of
# OVERBRAINER_STALL_FLOOR_S and OVERBRAINER_STALL_FACTOR median step times (the
# differences of consecutive steps' ts); before the first step, and until a step time
# is known, OVERBRAINER_STALL_FIRST_S (at least the floor once a step came), counted
# from the train stage line or the job's start. Nothing is watched after the training
# loop (an end or snapshot line, a merge or export stage). Prints "<silence>s after step
# <n>" (or "before the first step") when stalled, nothing otherwise.
metric_lines() {
    cat "$run_dir/metrics.jsonl" 2>/dev/null || true
}
stalled() {
    if [ -z "${OVERBRAINER_STALL_FIRST_S:-}" ] || [ -z "${OVERBRAINER_STALL_FLOOR_S:-}" ]; then return 0; fi
    if [ ! -e "$run_dir/job.pid" ] || [ -e "$run_dir/exit_code" ]; then return 0; fi
    job_start=$(stat -c %Y "$run_dir/job.pid")
    # shellcheck disable=SC2016 # awk programs
    field='function field(name,   m) {
        if (!match($0, "\"" name "\": *\"?[^,\"}]*")) return ""
        m = substr($0, RSTART, RLENGTH); sub("^\"" name "\": *\"?", "", m); return m
    }'
    # shellcheck disable=SC2016
    median=$(metric_lines | awk "$field"'
        field("kind") == "train" {
            ts = field("ts") + 0; step = field("step") + 0
            if (seen && step > last && ts >= prev) printf "%.6f\n", ts - prev
            seen = 1; prev = ts; last = step
        }' | sort -n | awk '
        { v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    # shellcheck disable=SC2016
    metric_lines | awk -v now="$now" -v since="$job_start" -v median="$median" -v fixed="${OVERBRAINER_STALL_S:-0}" \
        -v floor="$OVERBRAINER_STALL_FLOOR_S" -v first="$OVERBRAINER_STALL_FIRST_S" \
        -v factor="${OVERBRAINER_STALL_FACTOR:-20}" "$field"'
        { kind = field("kind") }
        over { next }
        kind == "stage" { if (field("stage") == "train") { if (!steps) since = field("ts") + 0 } else over = 1; next }
        kind == "end" || kind == "snapshot" { over = 1; next }
        kind == "train" { steps++; last = field("step"); since = field("ts") + 0; next }
        kind == "eval" || kind == "eval_progress" { since = field("ts") + 0 }
        END {
            if (over) exit
            if (!steps) bound = first
            else if (fixed > 0) bound = fixed
            else if (median != "") { bound = factor * median; if (bound < floor) bound = floor }
            else bound = first > floor ? first : floor
            silent = now - since
            if (silent >= bound) {
                if (steps) printf "%ds after step %s\n", silent, last
                else printf "%ds before the first step\n", silent
            }
        }'
}

# POD-48: the disk backstop, at each tick (a minute): at 97% used a snapshot is
# requested (reason disk) even when nothing follows. The run directory's disk from `df`
# (bounded); with a network volume (OVERBRAINER_VOLUME_PATH), the last background `du`
# of its mount against 94% of the size overbrainer wrote to .pod/volume_gb, else its
# size at pod creation (OVERBRAINER_VOLUME_GB). One `du` at a time runs in the
# background, so a slow mount delays no other rule. Sets disk_why when full.
volume_du_pid=
disk_full() {
    disk_why=
    # shellcheck disable=SC2046 # two numbers
    set -- $(timeout 20 df -P -k -- "$run_dir" 2>/dev/null | awk 'NR==2 {print $3, $2}')
    if [ $# -eq 2 ] && [ "$2" -gt 0 ] && [ $(($1 * 100)) -ge $(($2 * 97)) ]; then
        disk_why="the disk of the run directory is $(($1 * 100 / $2))% used"
        return 0
    fi
    if [ -z "${OVERBRAINER_VOLUME_PATH:-}" ]; then return 0; fi
    if [ -z "$volume_du_pid" ] || ! kill -0 "$volume_du_pid" 2>/dev/null; then
        (timeout 900 du -skx -- "$OVERBRAINER_VOLUME_PATH" 2>/dev/null | awk '{print $1}' >"$pod_dir/volume_du.new" &&
            mv -f "$pod_dir/volume_du.new" "$pod_dir/volume_du") </dev/null >/dev/null 2>&1 &
        volume_du_pid=$!
    fi
    used_kib=$(number "$pod_dir/volume_du")
    volume_gb=$(number "$pod_dir/volume_gb")
    [ -n "$volume_gb" ] || volume_gb=${OVERBRAINER_VOLUME_GB:-}
    if [ -z "$used_kib" ] || [ -z "$volume_gb" ] || [ "$volume_gb" -le 0 ]; then return 0; fi
    usable_kib=$((volume_gb * 1000000000 * 94 / 100 / 1024))
    if [ $((used_kib * 100)) -ge $((usable_kib * 97)) ]; then
        disk_why="the network volume is $((used_kib * 100 / usable_kib))% used of its usable ${volume_gb} GB x 0.94"
    fi
}

asked=
disk_asked=
stall_seen=
while :; do
    now=$(date +%s)
    why=
    if [ -e "$pod_dir/retrieved" ]; then
        why="the results were retrieved"
    elif [ -e "$pod_dir/bootstrap_failed" ]; then
        why="the bootstrap failed: $(cat "$pod_dir/bootstrap_failed")"
    elif [ -e "$run_dir/job.pid" ] && [ "$OVERBRAINER_KEEP_POD" = 1 ]; then
        log "--keep-pod: no rule removes this pod once its job exists"
        exit 0
    fi
    cap=$(number "$pod_dir/cost_cap_at")
    snap=$(number "$pod_dir/snapshot_at")
    if [ -z "$why" ] && [ -n "$cap" ] && [ "$now" -ge "$cap" ]; then
        why="max_cost_usd reached"
    elif [ -n "$snap" ] && [ "$now" -ge "$snap" ] && [ ! -e "$run_dir/snapshot.request" ]; then
        log "cost snapshot requested: the cap is reached in $(((cap - now) / 60)) minutes"
        printf 'cost\n' >"$run_dir/snapshot.request"
    fi
    disk_full
    if [ -n "$disk_why" ] && [ -z "$disk_asked" ] && [ -e "$run_dir/job.pid" ] &&
        [ ! -e "$run_dir/exit_code" ]; then
        disk_asked=$now
        if [ ! -e "$run_dir/snapshot.request" ]; then
            printf 'disk\n' >"$run_dir/snapshot.request"
        fi
        log "disk snapshot requested: $disk_why"
    fi
    if [ -z "$why" ] && [ ! -e "$run_dir/job.pid" ] &&
        [ "$now" -ge $((started + OVERBRAINER_BOOT_GRACE_S)) ]; then
        why="no job started within boot_grace_minutes"
    fi
    if [ -z "$why" ] && [ -e "$run_dir/exit_code" ]; then
        ended=$(stat -c %Y "$run_dir/exit_code")
        if [ "$now" -ge $((ended + OVERBRAINER_RETRIEVE_GRACE_S)) ]; then
            why="the results were not retrieved within retrieve_grace_minutes"
        fi
    fi
    lease=$(number "$pod_dir/lease")
    fresh=0
    if [ -n "$lease" ] && [ $((now - lease)) -lt "$OVERBRAINER_LEASE_FRESH_S" ]; then
        fresh=1
    fi
    # Issue 21: a stalled job holds no lease, whatever its follower wrote (POD-35).
    stall=$(stalled)
    if [ -n "$stall" ]; then
        if [ "$stall_seen" != 1 ]; then
            log "the job stalled: no training step or evaluation progress for $stall; the lease no longer holds the pod"
        fi
        stall_seen=1
        fresh=0
    else
        stall_seen=
    fi
    deadline=$OVERBRAINER_DEADLINE_AT
    if [ "$fresh" = 0 ] && [ -z "$asked" ] &&
        [ $((now + OVERBRAINER_SNAPSHOT_LEAD_S)) -ge "$deadline" ]; then
        asked=$now
        if [ ! -e "$run_dir/snapshot.request" ]; then
            printf 'deadline\n' >"$run_dir/snapshot.request"
        fi
        log "deadline snapshot requested: max_hours ends in $(((deadline - now) / 60)) minutes"
    fi
    # POD-40: deletion waits for the snapshot, at most the window past the deadline.
    until_at=$deadline
    if [ -n "$asked" ]; then
        until_at=$((asked + OVERBRAINER_SNAPSHOT_WINDOW_S))
        if [ "$until_at" -gt $((deadline + OVERBRAINER_SNAPSHOT_WINDOW_S)) ]; then
            until_at=$((deadline + OVERBRAINER_SNAPSHOT_WINDOW_S))
        fi
        if [ "$until_at" -lt "$deadline" ]; then until_at=$deadline; fi
    fi
    if [ -z "$why" ] && [ "$fresh" = 0 ] && [ "$now" -ge "$until_at" ]; then
        why="max_hours reached"
    fi
    if [ -n "$why" ]; then
        if delete_pod "$why"; then exit 0; fi
    else
        log "$(((until_at - now) / 60)) minutes before the deadline deletion (lease fresh: $fresh)"
    fi
    sleep "$OVERBRAINER_TICK_S"
done
