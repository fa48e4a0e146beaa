#!/usr/bin/env bash
# Sets up what real Axolotl training on the CPU needs, once per machine, outside the
# checkout (used by `make demo`, `make test` and bench/training.sh):
#   - the Axolotl 0.19.0 venv in ${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer/axolotl-0.19.0
#     (`pip install axolotl==0.19.0` on Python 3.11; about 7 GB and 8 minutes), created only
#     when its bin/axolotl is missing;
#   - the demo's tiny model (scripts/build-tiny-model.py) in
#     ${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer/tiny-llama-<digest of the data and script>,
#     built only when missing.
# Prints `AXOLOTL_VENV=<dir>` and `TINY_MODEL=<dir>` on stdout; everything else goes to stderr.
# `--venv-only` sets up and prints the venv alone (scripts/demo-env.sh: `make demo` trains
# SmolLM2, not the tiny model).
set -euo pipefail

AXOLOTL_VERSION=0.19.0
root=$(cd "$(dirname "$0")/.." && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer"
venv="$cache/axolotl-$AXOLOTL_VERSION"
mkdir -p "$cache"

if ! { [[ -x "$venv/bin/axolotl" ]] && "$venv/bin/python" -m pip show -q axolotl >/dev/null 2>&1; }; then
    python=""
    for candidate in python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1; then python=$candidate; break; fi
    done
    [[ -n "$python" ]] || { echo "training-env: no python3 found; install Python 3.11" >&2; exit 1; }
    echo "training-env: installing Axolotl $AXOLOTL_VERSION into $venv (several minutes, once)" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    if ! { "$venv/bin/pip" install --quiet --upgrade pip >&2 &&
           "$venv/bin/pip" install --quiet "axolotl==$AXOLOTL_VERSION" >&2; }; then
        rm -rf "$venv"
        echo "training-env: installing Axolotl failed" >&2
        exit 1
    fi
fi

echo "AXOLOTL_VENV=$venv"
[[ ${1:-} != --venv-only ]] || exit 0

digest=$(cat "$root/scripts/build-tiny-model.py" "$root/examples/demo/data/train.jsonl" \
    "$root/examples/demo/data/eval.jsonl" | sha256sum | cut -c1-12)
model="$cache/tiny-llama-$digest"
if [[ ! -e "$model/.complete" ]]; then
    echo "training-env: building the tiny model in $model" >&2
    HF_HUB_OFFLINE=1 CUDA_VISIBLE_DEVICES="" "$venv/bin/python" "$root/scripts/build-tiny-model.py" \
        "$model" "$root/examples/demo/data/train.jsonl" "$root/examples/demo/data/eval.jsonl" >&2
fi

echo "TINY_MODEL=$model"
