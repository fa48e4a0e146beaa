#!/usr/bin/env bash
# Makes sure the tools the test suite runs for real are installed: OpenSSH's sshd (the SSH
# target tests), shellcheck (generated shell scripts), PyYAML (the Axolotl YAML
# round trip), what the llama.cpp build needs (a C++ compiler, curl, flock) and Prometheus
# (Debian 12's 2.42, which the metrics tests start themselves; its packaged service is kept
# from starting and never left running), slurm-wlm and munge (the Slurm tests' private
# cluster; their services kept from starting too). Installs the missing ones with apt-get when running as root; otherwise
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
command -v prometheus >/dev/null 2>&1 || { missing+=("prometheus"); packages+=("prometheus"); }
# The TUI test drives the real binary in a terminal multiplexer.
command -v tmux >/dev/null 2>&1 || { missing+=("tmux"); packages+=("tmux"); }
# The Slurm target's tests start a private single-node cluster (tests/integration/
# slurm_cluster.rs): slurm-wlm's daemons and clients, and munge. Their packaged services
# are kept from starting, like Prometheus's.
{ [[ -x /usr/sbin/slurmctld ]] && [[ -x /usr/sbin/slurmd ]] && command -v sbatch >/dev/null 2>&1; } ||
    { missing+=("slurm"); packages+=("slurm-wlm"); }
[[ -x /usr/sbin/munged ]] || { missing+=("munged"); packages+=("munge"); }

# The package's own service must not run: the tests start Prometheus on a free port of
# their own, and nothing may stay listening on 9090.
stop_packaged_prometheus() {
    if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    fi
    if [[ -x /etc/init.d/prometheus ]]; then
        update-rc.d prometheus disable >/dev/null 2>&1 || true
        if /etc/init.d/prometheus status >/dev/null 2>&1; then
            /etc/init.d/prometheus stop >/dev/null 2>&1 || true
        fi
    fi
}

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: installing ${packages[*]} (missing: ${missing[*]})" >&2
    # No service starts during the install (invoke-rc.d asks policy-rc.d; 101: refused).
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    stop_packaged_prometheus
    exit 0
fi

echo "test-deps: missing ${missing[*]}; install them, e.g.: sudo apt-get install ${packages[*]}" >&2
exit 1
