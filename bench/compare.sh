#!/usr/bin/env bash
# Compare's overhead on the child's side (issue 15, "Speed"): the wall time of asking the
# demo's 40 eval questions one at a time with compare's client (`compare_client.py`:
# streamed, the time to the first token measured, one JSON line appended per answer)
# against the same 40 requests sent by hand with `curl` to the same `llama-server`
# serving the demo's exported Q8_0 GGUF on the CPU. Rounds alternate curl, client; the
# figure is the ratio of the summed times (target: at most 1.05), after one warm-up pass.
# On a loaded machine the rounds vary; the per-round ratios are printed too.
#
# Usage: bench/compare.sh [ROUNDS] [MAX_TOKENS]   (default 3 and 64). Needs what
# scripts/training-env.sh and scripts/llama-env.sh set up (it runs both), and a built
# target/debug/overbrainer.
set -euo pipefail

rounds=${1:-3}
max_tokens=${2:-64}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/debug/overbrainer"
[[ -x "$bin" ]] || { echo "bench: build first: cargo build" >&2; exit 1; }
eval "$("$root/scripts/training-env.sh")"
eval "$("$root/scripts/llama-env.sh")"
export CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1
export OVERBRAINER_TRAINING__BASE_MODEL="$TINY_MODEL" OVERBRAINER_TARGETS__LOCAL__VENV="$AXOLOTL_VENV"
export OVERBRAINER_TARGETS__LOCAL__LLAMA_CPP_DIR="$LLAMA_CPP_DIR" OVERBRAINER_EXPORT__PRE_TOKENIZER=gpt-2

work=$(mktemp -d)
server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
now() { date +%s.%N; }

project="$work/demo"
mkdir -p "$project"
cp -r "$root/examples/demo/overbrainer.toml" "$root/examples/demo/data" "$project/"
"$bin" -C "$project" train >"$work/train.out" 2>"$work/train.err" || { cat "$work/train.err" >&2; exit 1; }
run=$(ls "$project/runs" | grep -v '^\.' | head -1)
"$bin" -C "$project" export "$run" --quantize Q8_0 >"$work/export.out" 2>"$work/export.err" \
    || { cat "$work/export.err" >&2; exit 1; }
gguf="$project/runs/$run/output/gguf/$run-Q8_0.gguf"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$LLAMA_CPP_DIR/build/bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port" -c 512 -np 1 \
    >"$work/server.log" 2>&1 &
server_pid=$!
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
    kill -0 "$server_pid" || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.2
done

# The questions as compare writes them, and each one's request body for curl.
python3 - "$project/data/eval.jsonl" "$work" "$max_tokens" <<'PY'
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
with open(f"{sys.argv[2]}/questions.jsonl", "w") as out:
    for n, r in enumerate(records):
        user = next(m["content"] for m in r["messages"] if m["role"] == "user")
        out.write(json.dumps({"id": r["id"], "system": None, "user": user}) + "\n")
        body = {"messages": [{"role": "user", "content": user}], "max_tokens": int(sys.argv[3]),
                "temperature": 0.0, "stream": True}
        json.dump(body, open(f"{sys.argv[2]}/body-{n}.json", "w"))
PY
count=$(wc -l <"$work/questions.jsonl")

ask_by_curl() {
    for n in $(seq 0 $((count - 1))); do
        curl -sfN -H 'Content-Type: application/json' --data-binary "@$work/body-$n.json" \
            "http://127.0.0.1:$port/v1/chat/completions" >/dev/null
    done
}
ask_by_curl # warm-up, not counted

curl_total=0
client_total=0
for round in $(seq 1 "$rounds"); do
    start=$(now)
    ask_by_curl
    by_curl=$(echo "$(now) - $start" | bc)
    rm -f "$work/answers.jsonl"
    start=$(now)
    "$AXOLOTL_VENV/bin/python3" "$root/src/compare/compare_client.py" --port "$port" \
        --server "$LLAMA_CPP_DIR/build/bin/llama-server" --gguf "$gguf" --questions "$work/questions.jsonl" \
        --answers "$work/answers.jsonl" --log "$work/client-server.log" --hardware "$work/hardware.json" \
        --ctx 512 --max-tokens "$max_tokens" --temperature 0 --start-secs 60 2>"$work/client.err"
    by_client=$(echo "$(now) - $start" | bc)
    [[ $(wc -l <"$work/answers.jsonl") == "$count" ]] || { cat "$work/client.err" >&2; exit 1; }
    printf 'round %d: %d questions, compare client %.2f s, curl %.2f s, ratio %.3f\n' \
        "$round" "$count" "$by_client" "$by_curl" "$(echo "$by_client / $by_curl" | bc -l)"
    curl_total=$(echo "$curl_total + $by_curl" | bc)
    client_total=$(echo "$client_total + $by_client" | bc)
done
printf 'overhead: compare client %.2f s, curl %.2f s over %d rounds: ratio %.3f (target <= 1.05)\n' \
    "$client_total" "$curl_total" "$rounds" "$(echo "$client_total / $curl_total" | bc -l)"
