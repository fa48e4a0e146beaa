#!/usr/bin/env bash
# Installs the pinned huggingface_hub (the Hub's own Python client, which proves the Hub
# stand-in of tests/integration/hub_standin.rs) into
# ${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer/hf-hub-<version>, once per machine, outside
# the checkout (used by `make test`). Prints `HF_HUB_VENV=<dir>` on stdout.
set -euo pipefail

HF_HUB_VERSION=2.4.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer"
venv="$cache/hf-hub-$HF_HUB_VERSION"
mkdir -p "$cache"

if ! "$venv/bin/python" -c "import huggingface_hub as h; assert h.__version__ == '$HF_HUB_VERSION'" >/dev/null 2>&1; then
    command -v python3 >/dev/null 2>&1 || { echo "hf-hub-env: no python3 found; install Python 3" >&2; exit 1; }
    echo "hf-hub-env: installing huggingface_hub $HF_HUB_VERSION into $venv" >&2
    rm -rf "$venv" "$venv.tmp"
    python3 -m venv "$venv.tmp"
    if ! "$venv.tmp/bin/pip" install --quiet "huggingface_hub==$HF_HUB_VERSION" >&2; then
        rm -rf "$venv.tmp"
        echo "hf-hub-env: installing huggingface_hub failed" >&2
        exit 1
    fi
    mv "$venv.tmp" "$venv"
fi
echo "HF_HUB_VENV=$venv"
