#!/usr/bin/env bash
# Makes sure the tools the test suite runs for real are installed: OpenSSH's sshd (the SSH
# target tests), shellcheck (generated shell scripts), PyYAML (the Axolotl YAML
# round trip) and what the llama.cpp build needs (a C++ compiler, curl, flock). Installs the missing ones with apt-get when running as root; otherwise
# names them and fails.
set -euo pipefail

missing=()
packages=()
[[ -x /usr/sbin/sshd ]] || command -v sshd >/dev/null 2>&1 || { missing+=("sshd"); packages+=("openssh-server"); }
command -v ssh >/dev/null 2>&1 || { missing+=("ssh"); packages+=("openssh-client"); }
command -v shellcheck >/dev/null 2>&1 || { missing+=("shellcheck"); packages+=("shellcheck"); }
# The pinned llama.cpp's build (scripts/llama-env.sh): a C++ compiler, curl and flock.
command -v c++ >/dev/null 2>&1 || { missing+=("c++"); packages+=("g++"); }
command -v curl >/dev/null 2>&1 || { missing+=("curl"); packages+=("curl"); }
command -v flock >/dev/null 2>&1 || { missing+=("flock"); packages+=("util-linux"); }
if ! command -v python3 >/dev/null 2>&1; then
    missing+=("python3"); packages+=("python3" "python3-yaml")
elif ! python3 -c 'import yaml' >/dev/null 2>&1; then
    missing+=("PyYAML"); packages+=("python3-yaml")
fi
# The Axolotl, llama.cpp tools and huggingface_hub venvs are made with `python3 -m venv`.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    missing+=("python3-venv"); packages+=("python3-venv")
fi

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: installing ${packages[*]} (missing: ${missing[*]})" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    exit 0
fi

echo "test-deps: missing ${missing[*]}; install them, e.g.: sudo apt-get install ${packages[*]}" >&2
exit 1
