#!/usr/bin/env bash
# Export speed on the local target (issue 14, "Speed"): wall time of `overbrainer export`
# of the demo's trained run against the same conversion and quantization run by hand with
# the same cached llama.cpp build (`convert_hf_to_gguf.py` through the export tool's
# `convert`, which only adds `[export] pre_tokenizer` for the demo's custom tokenizer,
# then `llama-quantize`). Rounds alternate hand, overbrainer; the figure is the ratio of
# the summed times (target: at most 1.1). overbrainer's time also holds what the hand
# run skips: the preflight, the read-back, one answer from llama-server and the
# retrieval's manifest.
#
# Usage: bench/export.sh [ROUNDS]   (default 3). Needs what scripts/training-env.sh and
# scripts/llama-env.sh set up (it runs both), and a built target/debug/overbrainer.
set -euo pipefail

rounds=${1:-3}
quantize=Q8_0
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/debug/overbrainer"
[[ -x "$bin" ]] || { echo "bench: build first: cargo build" >&2; exit 1; }
eval "$("$root/scripts/training-env.sh")"
eval "$("$root/scripts/llama-env.sh")"
export CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1
export OVERBRAINER_TRAINING__BASE_MODEL="$TINY_MODEL" OVERBRAINER_TARGETS__LOCAL__VENV="$AXOLOTL_VENV"
export OVERBRAINER_TARGETS__LOCAL__LLAMA_CPP_DIR="$LLAMA_CPP_DIR" OVERBRAINER_EXPORT__PRE_TOKENIZER=gpt-2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }

project="$work/demo"
mkdir -p "$project"
cp -r "$root/examples/demo/overbrainer.toml" "$root/examples/demo/data" "$project/"
"$bin" -C "$project" train >"$work/train.out" 2>"$work/train.err" || { cat "$work/train.err" >&2; exit 1; }
run=$(ls "$project/runs" | grep -v '^\.' | head -1)
merged="$project/runs/$run/output/merged"

hand_total=0
ob_total=0
for round in $(seq 1 "$rounds"); do
    hand="$work/hand-$round"
    mkdir -p "$hand"
    start=$(now)
    "$AXOLOTL_VENV/bin/python3" "$root/src/gguf/export_tool.py" convert --tree "$LLAMA_CPP_DIR" \
        --model "$merged" --out "$hand/16bit.gguf" --outtype auto --name "$run" --pre-tokenizer gpt-2 \
        >"$hand/log" 2>&1
    "$LLAMA_CPP_DIR/build/bin/llama-quantize" "$hand/16bit.gguf" "$hand/$run-$quantize.gguf" "$quantize" >>"$hand/log" 2>&1
    by_hand=$(echo "$(now) - $start" | bc)
    start=$(now)
    "$bin" -C "$project" export "$run" --quantize "$quantize" >"$work/ob-$round.out" 2>"$work/ob-$round.err" \
        || { cat "$work/ob-$round.err" >&2; exit 1; }
    ob=$(echo "$(now) - $start" | bc)
    printf 'round %d: overbrainer export %.1f s, by hand %.1f s, ratio %.3f\n' "$round" "$ob" "$by_hand" "$(echo "$ob / $by_hand" | bc -l)"
    ob_total=$(echo "$ob_total + $ob" | bc)
    hand_total=$(echo "$hand_total + $by_hand" | bc)
done
printf 'overhead: overbrainer export %.1f s, by hand %.1f s over %d rounds: ratio %.3f (target <= 1.1)\n' \
    "$ob_total" "$hand_total" "$rounds" "$(echo "$ob_total / $hand_total" | bc -l)"
