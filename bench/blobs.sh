#!/usr/bin/env bash
# Uploads through the blob cache over loopback SSH (issue 21, "Speed"): the first upload
# of a 1 GiB model-like tree against `tar c | ssh tar x`, and the re-upload of the
# unchanged tree against `rsync -a`, both through the executor's own master connection
# (bench/blobs.rs says what each figure is). Installs rsync first when it is missing.
#
# Usage: bench/blobs.sh [MIB]   (default 1024: the tree's size in MiB, written under the
# system's temporary directory, never in the checkout).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v rsync >/dev/null; then
    apt-get update >/dev/null
    apt-get install -y rsync >/dev/null
fi
cd "$root"
OB_BENCH_MIB=${1:-1024} cargo bench --bench blobs
