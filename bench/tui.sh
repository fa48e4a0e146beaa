#!/usr/bin/env bash
# The TUI's idle cost and key-to-screen latency (issue 17, "Speed"), measured on the real
# binary in a real tmux (120x40), as a person would use it:
# 1. Idle CPU with a followed run: the demo project (real Axolotl on the CPU, tiny model,
#    max_steps raised so it runs long enough) started from the TUI with `4`, `t`, `y`;
#    once the step counter moves, the TUI process's own CPU time (utime + stime from
#    /proc/PID/stat) over WINDOW seconds, as a share of one core (target: under 1%).
# 2. Key-to-screen: with the run still followed, KEYS presses alternating `3` and `5`
#    (Pipeline and Logs views); each from `send-keys` until `capture-pane` shows the
#    other view's text. tmux's own round trips are included, so this is an upper bound
#    (target: under 50 ms). The median and the worst are printed.
# The redraw itself (under 2 ms at 120x40 with 10,000 loss points) is `cargo bench --bench
# tui`.
#
# Usage: bench/tui.sh [WINDOW] [KEYS]   (default 30 s and 40). Needs tmux, what
# scripts/training-env.sh sets up (it runs it), and a built target/debug/overbrainer.
set -euo pipefail

window=${1:-30}
keys=${2:-40}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/debug/overbrainer"
[[ -x "$bin" ]] || { echo "bench: build first: cargo build" >&2; exit 1; }
command -v tmux >/dev/null || { echo "bench: install tmux (scripts/test-deps.sh)" >&2; exit 1; }
eval "$("$root/scripts/training-env.sh")"

work=$(mktemp -d)
socket="ob-bench-$$"
cleanup() {
    tmux -L "$socket" kill-server 2>/dev/null || true
    # The run goes on after the TUI: cancel it, then remove the project.
    [[ -d $work/demo/runs ]] && for run in $(ls "$work/demo/runs" | grep -v '^\.'); do
        "$bin" -C "$work/demo" train cancel "$run" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

project="$work/demo"
mkdir -p "$project"
cp -r "$root/examples/demo/overbrainer.toml" "$root/examples/demo/data" "$project/"
sed -i 's/^max_steps = 10$/max_steps = 100000/' "$project/overbrainer.toml"
grep -q '^max_steps = 100000$' "$project/overbrainer.toml"

tmux -L "$socket" new-session -d -x 120 -y 40 -s bench env -i PATH="$PATH" HOME="$HOME" \
    TERM=screen CUDA_VISIBLE_DEVICES= HF_HUB_OFFLINE=1 \
    OVERBRAINER_TRAINING__BASE_MODEL="$TINY_MODEL" OVERBRAINER_TARGETS__LOCAL__VENV="$AXOLOTL_VENV" \
    "$bin" -C "$project" tui
screen() { tmux -L "$socket" capture-pane -p -t bench; }
wait_for() { # PATTERN SECONDS (an extended regular expression)
    local deadline=$((SECONDS + $2))
    until screen | grep -qE -- "$1"; do
        ((SECONDS < deadline)) || { echo "bench: no '$1' on screen after $2 s:" >&2; screen >&2; exit 1; }
        sleep 0.05
    done
}
wait_for "training.base_model" 60
tmux -L "$socket" send-keys -t bench 4
wait_for "t start" 10
tmux -L "$socket" send-keys -t bench t
wait_for "y yes" 10
tmux -L "$socket" send-keys -t bench y
# A step counter past 1: the job runs and the TUI follows it.
wait_for "step ([2-9]|[1-9][0-9]+)/" 600
pid=$(tmux -L "$socket" list-panes -t bench -F '#{pane_pid}')
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
before=$(cpu)
start=$(date +%s.%N)
sleep "$window"
after=$(cpu)
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
idle=$(echo "scale=3; 100 * ($after - $before) / $ticks / $elapsed" | bc)
echo "idle CPU of the TUI following a run: ${idle}% of one core over ${elapsed%.*} s (target < 1%)"
last=$(screen | grep -oE "step [0-9]+/" | head -1)
echo "the run was followed to ${last%/}"
screen | grep -q "running" || { echo "bench: the run is no longer running" >&2; exit 1; }

times=()
for n in $(seq 1 "$keys"); do
    if ((n % 2)); then key=3 text=" pipeline "; else key=5 text=" log: "; fi
    start=$(date +%s%N)
    tmux -L "$socket" send-keys -t bench "$key"
    until screen | grep -qF -- "┌$text"; do :; done
    times+=($((($(date +%s%N) - start) / 1000)))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
median=${sorted[$((${#sorted[@]} / 2))]}
worst=${sorted[-1]}
echo "key to screen over $keys view switches: median $((median / 1000)).$(((median % 1000) / 100)) ms, worst $((worst / 1000)).$(((worst % 1000) / 100)) ms (target < 50 ms; tmux round trips included)"
