#!/usr/bin/env bash
# `make demo` (issue 36): distills for real on this machine, with no key. SmolLM2-135M-Instruct
# served by llama.cpp's llama-server on 127.0.0.1 is the parent (and, under grammars, the
# generator and the judge); the same model as a Hugging Face model is the child. On a fresh
# copy of examples/distill it runs the product's own commands: `run` (subtopics, questions,
# answers, split, then the LoRA training on the CPU), `export` to GGUF, `compare` judged by
# the local model, `push --dry-run`; then it prints three answers of the child before and
# after training and where everything is.
#
# The servers are stopped at the end whatever happens: success, a failed step, Ctrl-C or
# SIGTERM. A training run that an interruption left running is cancelled (`train cancel`),
# so nothing stays behind.
#
# Environment: DEMO_BIN (default target/debug/overbrainer), DEMO_DIR (default demo-run/ in
# the checkout; an earlier one is kept as <dir>.previous). Any OVERBRAINER_* setting passes
# through to the commands, which read every such variable as a setting.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${DEMO_BIN:-$root/target/debug/overbrainer}
out=${DEMO_DIR:-$root/demo-run}
model_name=smollm2-135m-instruct
started=$(date +%s)

say() { printf 'demo [%4ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }

[[ -x $bin ]] || { echo "demo: $bin is missing; build it with \`cargo build\` (make demo does)" >&2; exit 1; }

servers=()
interrupted=0

# Cancels the runs an interruption left running, then stops the servers; bounded.
cleanup() {
    local status=$?
    trap - EXIT INT TERM HUP
    if [[ $interrupted == 1 && -d $out/runs ]]; then
        local run state
        for run in "$out"/runs/*/; do
            run=$(basename "$run")
            state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("state",""))' \
                "$out/runs/$run/run.json" 2>/dev/null || true)
            case $state in
                succeeded | failed | cancelled | stopped | "") ;;
                *)
                    say "cancelling run $run ($state), which the interruption left running"
                    timeout 300 "$bin" -C "$out" train cancel "$run" >/dev/null 2>&1 ||
                        say "could not cancel run $run; see \`$bin -C $out runs ls\`"
                    ;;
            esac
        done
    fi
    local pid
    for pid in ${servers[@]+"${servers[@]}"}; do
        kill -s TERM "$pid" 2>/dev/null || true
    done
    for pid in ${servers[@]+"${servers[@]}"}; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -s KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [[ ${#servers[@]} -gt 0 ]]; then say "local model servers stopped"; fi
    if [[ $status != 0 ]]; then
        if [[ $interrupted == 1 ]]; then say "interrupted; what is done so far is in $out"; else say "failed (exit $status); what is done so far is in $out"; fi
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'interrupted=1; exit 130' INT
trap 'interrupted=1; exit 143' TERM HUP

say "setting up (built once and cached: the Axolotl venv, llama.cpp b11434, SmolLM2-135M-Instruct)"
eval "$("$root/scripts/demo-env.sh")"
server_bin=$LLAMA_CPP_DIR/build/bin/llama-server

# A bad setting (an OVERBRAINER_* variable) is refused before anything moves or starts.
"$bin" -C "$root/examples/distill" config check >/dev/null

if [[ -e $out ]]; then
    rm -rf "$out.previous"
    mv "$out" "$out.previous"
    say "the previous demo project is kept in $out.previous"
fi
cp -r "$root/examples/distill" "$out"
mkdir -p "$out/logs"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts llama-server on a free loopback port with the extra arguments; sets `url`.
serve() {
    local name=$1 port pid
    shift
    port=$(free_port)
    "$server_bin" -m "$SMOLLM2_GGUF" --alias "$model_name" --host 127.0.0.1 --port "$port" \
        -c 8192 --parallel 2 --threads 2 "$@" >"$out/logs/$name.log" 2>&1 &
    pid=$!
    servers+=("$pid")
    for _ in $(seq 300); do
        if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
            url="http://127.0.0.1:$port/v1"
            say "$name: llama-server with SmolLM2-135M-Instruct on $url (log: $out/logs/$name.log)"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    echo "demo: the $name llama-server did not become ready; its log, $out/logs/$name.log, ends:" >&2
    tail -n 20 "$out/logs/$name.log" >&2
    return 1
}

serve parent
export OVERBRAINER_PROVIDERS__LOCAL__BASE_URL=$url
parent_url=$url
serve generator --grammar-file "$out/grammars/lists.gbnf"
export OVERBRAINER_PROVIDERS__LOCAL_LISTS__BASE_URL=$url
serve judge --grammar-file "$out/grammars/verdict.gbnf"
export OVERBRAINER_PROVIDERS__LOCAL_JUDGE__BASE_URL=$url

# What the user already set wins (any OVERBRAINER_* setting passes through).
export OVERBRAINER_TRAINING__BASE_MODEL=${OVERBRAINER_TRAINING__BASE_MODEL:-$SMOLLM2_MODEL}
export OVERBRAINER_TARGETS__LOCAL__VENV=${OVERBRAINER_TARGETS__LOCAL__VENV:-$AXOLOTL_VENV}
export OVERBRAINER_TARGETS__LOCAL__LLAMA_CPP_DIR=${OVERBRAINER_TARGETS__LOCAL__LLAMA_CPP_DIR:-$LLAMA_CPP_DIR}
export CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1

say "1/4 run: subtopics, questions and answers from the local parent, the split, then LoRA training of the child on the CPU"
"$bin" -C "$out" run
runs=("$out"/runs/*/run.json)
run_id=$(basename "$(dirname "${runs[-1]}")")

say "2/4 export: run $run_id merged and converted to GGUF (Q8_0)"
"$bin" -C "$out" export "$run_id"

say "3/4 compare: the child against its parent on the eval set, judged by the local model"
status=0
"$bin" -C "$out" compare --run "$run_id" || status=$?
if [[ $status == 3 ]]; then
    # The judge failed calibration, as a 135M judge does. The demo shows the report anyway,
    # and the report says first that its verdicts are uncalibrated.
    say "the local judge failed its calibration, as a 135M judge does; comparing again with --skip-calibration so that the report exists (it says first that its verdicts prove little; the push gate would refuse it)"
    "$bin" -C "$out" compare --run "$run_id" --skip-calibration
elif [[ $status != 0 ]]; then
    exit "$status"
fi

say "4/4 push --dry-run: what would go to the Hugging Face Hub (nothing is sent)"
"$bin" -C "$out" push "$run_id" --dry-run

say "three eval questions, answered by the model before training and by the child after"
python3 "$root/scripts/demo-answers.py" "$out/runs/$run_id/compares" "$parent_url" "$model_name"

echo
say "done in $(( $(date +%s) - started )) s. The demo project is $out:"
echo "  dataset:    $out/data/train.jsonl, $out/data/eval.jsonl"
echo "  adapter:    $out/runs/$run_id/output/ (merged model: $out/runs/$run_id/output/merged/)"
ggufs=("$out/runs/$run_id"/output/gguf/*.gguf)
reports=("$out/runs/$run_id"/compares/*/compare.md)
echo "  GGUF:       ${ggufs[-1]}"
echo "  compare:    ${reports[-1]}"
echo "  look at it: $bin -C $out tui    (runs, logs, compare)"
echo "              $bin -C $out runs ls"
