#!/usr/bin/env bash
# Training speed on the local target (issue 4), in one script:
#
# 1. Overhead: wall time of `overbrainer train` on the demo project against the same work
#    run by hand (`axolotl train axolotl.yaml` then `axolotl merge-lora axolotl.yaml`, with
#    the same generated YAML, plugin, data and environment, in a copy of the run's start
#    files). Rounds alternate hand, overbrainer, hand, overbrainer, ...; the figure is the
#    ratio of the summed times (target: at most 1.1).
# 2. Follow cost: CPU time (user + system, its own and its waited-for children: status
#    and probe scripts, not the job) of `overbrainer train attach` following a run whose
#    job another overbrainer process started, over its wall time (target: under 2% of
#    one core).
#
# Usage: bench/training.sh [ROUNDS]   (default 2). Needs what scripts/training-env.sh
# sets up (it runs it), and a built target/debug/overbrainer (`cargo build`).
set -euo pipefail

rounds=${1:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/debug/overbrainer"
[[ -x "$bin" ]] || { echo "bench: build first: cargo build" >&2; exit 1; }
eval "$("$root/scripts/training-env.sh")"
export CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1
export OVERBRAINER_TRAINING__BASE_MODEL="$TINY_MODEL" OVERBRAINER_TARGETS__LOCAL__VENV="$AXOLOTL_VENV"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }

new_project() {
    local dir="$work/$1"
    mkdir -p "$dir"
    cp -r "$root/examples/demo/overbrainer.toml" "$root/examples/demo/data" "$dir/"
    echo "$dir"
}

hand_total=0
ob_total=0
for round in $(seq 1 "$rounds"); do
    # The generated YAML: the start files of a run of this very project.
    project=$(new_project "ob-$round")
    start=$(now)
    "$bin" -C "$project" train >"$work/ob-$round.out" 2>"$work/ob-$round.err"
    ob=$(echo "$(now) - $start" | bc)
    run=$(ls "$project/runs" | grep -v '^\.' | head -1)

    hand="$work/hand-$round"
    mkdir -p "$hand"
    cp "$project/runs/$run/"{axolotl.yaml,train.jsonl,eval.jsonl,overbrainer_metrics.py} "$hand/"
    start=$(now)
    (
        cd "$hand"
        export PATH="$AXOLOTL_VENV/bin:$PATH" PYTHONPATH="$hand" AXOLOTL_DO_NOT_TRACK=1
        export HF_HOME="$work/hf-cache" PYTHONUNBUFFERED=1 HF_HUB_DISABLE_TELEMETRY=1
        axolotl train axolotl.yaml && axolotl merge-lora axolotl.yaml
    ) >"$hand/job.log" 2>&1
    by_hand=$(echo "$(now) - $start" | bc)
    [[ -f "$hand/output/merged/model.safetensors" ]] || { echo "bench: the hand run failed, see $hand/job.log" >&2; exit 1; }
    printf 'round %d: overbrainer train %.1f s, by hand %.1f s, ratio %.3f\n' "$round" "$ob" "$by_hand" "$(echo "$ob / $by_hand" | bc -l)"
    ob_total=$(echo "$ob_total + $ob" | bc)
    hand_total=$(echo "$hand_total + $by_hand" | bc)
done
printf 'overhead: overbrainer train %.1f s, by hand %.1f s over %d rounds: ratio %.3f (target <= 1.1)\n' \
    "$ob_total" "$hand_total" "$rounds" "$(echo "$ob_total / $hand_total" | bc -l)"

# Follow cost: start a run, kill its follower once the job runs, then time `train attach`.
project=$(new_project follow)
"$bin" -C "$project" train >/dev/null 2>&1 &
follower=$!
for _ in $(seq 1 600); do
    if grep -qs '"state": "running"' "$project"/runs/*/run.json; then break; fi
    sleep 0.1
done
kill -s KILL -- "$follower"
wait "$follower" 2>/dev/null || true
run=$(ls "$project/runs" | grep -v '^\.' | head -1)
/usr/bin/time -f '%U %S %e' -o "$work/attach.time" "$bin" -C "$project" train attach "$run" >/dev/null 2>&1
read -r user sys wall <"$work/attach.time"
printf 'follow: train attach used %.2f s CPU over %.1f s: %.2f%% of one core (target < 2%%)\n' \
    "$(echo "$user + $sys" | bc)" "$wall" "$(echo "($user + $sys) * 100 / $wall" | bc -l)"
