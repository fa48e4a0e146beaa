#!/usr/bin/env bash
# Sets up the real container engines the tests of the `docker` runtime use (issue 11), once
# per machine, outside the checkout, in ${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer/containers:
#   - installs Podman (with runc), Docker (docker.io), debootstrap and busybox-static with
#     apt-get when running as root and one is missing;
#   - writes a private Podman configuration: podman/containers.conf (the `runc` runtime,
#     since crun refuses cgroups in hybrid mode; explicit ulimits, since Podman asks for
#     more open files than this machine's hard limit; cgroupfs; file events; no network)
#     and podman/storage.conf (overlay, a private graph root). The tests pass them through
#     CONTAINERS_CONF and CONTAINERS_STORAGE_CONF, so overbrainer's own command lines stay
#     as a user's would;
#   - builds two local images, in Podman and in a private Docker daemon (its data root,
#     exec root and socket under docker/; this script starts it for the import and stops it
#     again, the tests start their own): `localhost/overbrainer-test/shell:<key>`, busybox
#     only (2 MB), and `localhost/overbrainer-test/axolotl:<key>`, a Debian bookworm
#     minbase root (debootstrap against the mirror apt already uses) holding the Axolotl
#     venv of scripts/training-env.sh, its Python and the tiny model at their host paths;
#     in Podman only, `localhost/overbrainer-test/pod:<key>` and `.../pod-plain:<key>`, a
#     bookworm root with sshd, curl and python3 for the Runpod stand-in's pods (issue 12),
#     the first with an entrypoint and a /start.sh like runpod/pytorch's (issue 34).
#     Nothing is ever pulled from a registry. An image is built only when its tag is missing
#     (the key digests what went into it).
# Prints KEY=VALUE lines on stdout (see the end); everything else goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/overbrainer"
base="$cache/containers"
mkdir -p "$base"

log() { echo "container-env: $*" >&2; }

# One at a time: two runs at once would start two Docker daemons on one socket and
# build the same image twice (the lock goes with this process).
exec 9>"$base/.lock"
flock -w 3600 9 || { log "another scripts/container-env.sh held $base/.lock for an hour"; exit 1; }

# ---------------------------------------------------------------- packages
packages=()
command -v podman >/dev/null 2>&1 || packages+=(podman)
command -v runc >/dev/null 2>&1 || packages+=(runc)
command -v dockerd >/dev/null 2>&1 || packages+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || packages+=(debootstrap)
[[ -x /bin/busybox ]] || packages+=(busybox-static)
if [[ ${#packages[@]} -gt 0 ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing ${packages[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    else
        log "missing ${packages[*]}; install them, e.g.: sudo apt-get install --no-install-recommends ${packages[*]}"
        exit 1
    fi
fi
if [[ $(id -u) -ne 0 ]]; then
    log "the container tests run the engines as root (rootful Podman and Docker): run make test as root"
    exit 1
fi

# ---------------------------------------------------------------- Podman configuration
podman_dir="$base/podman"
mkdir -p "$podman_dir/graph" "$podman_dir/run" "$podman_dir/tmp"
nofile=$(ulimit -Hn)
[[ "$nofile" == unlimited ]] && nofile=1048576
nproc=$(cat /proc/sys/kernel/pid_max)
[[ "$nproc" -gt 32768 ]] && nproc=32768
write_if_changed() { # FILE: replaces FILE with stdin when it differs
    local new
    new=$(cat)
    if [[ ! -e "$1" ]] || [[ "$(cat "$1")" != "$new" ]]; then
        printf '%s\n' "$new" > "$1.tmp" && mv -f "$1.tmp" "$1"
    fi
}
write_if_changed "$podman_dir/containers.conf" <<EOF
# Written by scripts/container-env.sh for the test suite.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
netns = "none"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$podman_dir/events.log"
tmp_dir = "$podman_dir/tmp"
EOF
write_if_changed "$podman_dir/storage.conf" <<EOF
# Written by scripts/container-env.sh for the test suite.
[storage]
driver = "overlay"
graphroot = "$podman_dir/graph"
runroot = "$podman_dir/run"
EOF
export CONTAINERS_CONF="$podman_dir/containers.conf"
export CONTAINERS_STORAGE_CONF="$podman_dir/storage.conf"

# ---------------------------------------------------------------- Docker daemon
docker_dir="$base/docker"
case "$docker_dir" in *[[:space:]]*) log "$docker_dir holds a space: set XDG_CACHE_HOME to a path without one"; exit 1;; esac
mkdir -p "$docker_dir/data" "$docker_dir/exec"
[[ -e "$docker_dir/daemon.json" ]] || echo '{}' > "$docker_dir/daemon.json"
docker_sock="$docker_dir/docker.sock"
docker_pid="$docker_dir/docker.pid"
dockerd_args=(--config-file "$docker_dir/daemon.json" --data-root "$docker_dir/data"
    --exec-root "$docker_dir/exec" -H "unix://$docker_sock" --pidfile "$docker_pid"
    --bridge none --iptables=false --ip6tables=false --ip-masq=false
    --storage-driver overlay2 --exec-opt native.cgroupdriver=cgroupfs)
docker_started=""
docker_cmd() { docker -H "unix://$docker_sock" "$@"; }
stop_dockerd() {
    if [[ -n "$docker_started" ]]; then
        kill -s TERM "$docker_started" 2>/dev/null || true
        wait "$docker_started" 2>/dev/null || true
        docker_started=""
    fi
}
trap stop_dockerd EXIT
start_dockerd() {
    docker_cmd info >/dev/null 2>&1 && return 0
    dockerd "${dockerd_args[@]}" > "$docker_dir/dockerd.log" 2>&1 &
    docker_started=$!
    local i=0
    until docker_cmd info >/dev/null 2>&1; do
        kill -s 0 "$docker_started" 2>/dev/null || { log "dockerd failed, see $docker_dir/dockerd.log"; tail -5 "$docker_dir/dockerd.log" >&2; exit 1; }
        i=$((i + 1))
        [[ $i -lt 600 ]] || { log "dockerd never answered on $docker_sock"; exit 1; }
        sleep 0.1
    done
}

# ---------------------------------------------------------------- images
# import IMAGE CHANGES... < tar: into both engines, unless already there (dockerd running).
import_image() {
    local image=$1; shift
    local changes=()
    for change in "$@"; do changes+=(--change "$change"); done
    local tar="$base/image.tar"
    cat > "$tar"
    podman image exists "$image" || podman import -q "${changes[@]}" "$tar" "$image" >/dev/null
    docker_cmd image inspect "$image" >/dev/null 2>&1 || docker_cmd import "${changes[@]}" "$tar" "$image" >/dev/null
    rm -f "$tar"
}
has_image() {
    podman image exists "$1" && docker_cmd image inspect "$1" >/dev/null 2>&1
}
# Started here, not in import_image: that runs in a pipeline's subshell.
start_dockerd

# The shell image: busybox and its applets.
shell_key=$(sha256sum /bin/busybox | cut -c1-12)
shell_image="localhost/overbrainer-test/shell:$shell_key"
if ! has_image "$shell_image"; then
    log "building $shell_image"
    rootfs=$(mktemp -d "$base/shell-root.XXXXXX")
    mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev" "$rootfs/etc"
    cp /bin/busybox "$rootfs/bin/busybox"
    for applet in $(/bin/busybox --list); do
        [[ "$applet" == busybox ]] || ln -sf busybox "$rootfs/bin/$applet"
    done
    echo 'root:x:0:0:root:/root:/bin/sh' > "$rootfs/etc/passwd"
    tar -C "$rootfs" -cf - . | import_image "$shell_image" 'CMD ["/bin/sh"]' 'ENV PATH=/bin'
    rm -rf "$rootfs"
fi

# The Axolotl image: a bookworm root, plus the venv, its Python and the tiny model.
eval "$("$root/scripts/training-env.sh")"
venv=${AXOLOTL_VENV:-}
model=${TINY_MODEL:-}
[[ -n "$venv" && -n "$model" ]] ||
    { log "scripts/training-env.sh printed an empty AXOLOTL_VENV or TINY_MODEL (an empty value counts as unset)"; exit 1; }
python_home=$(sed -n 's/^home *= *//p' "$venv/pyvenv.cfg")
python_prefix=$(dirname "$python_home")
debian="$base/bookworm-minbase"
includes=libssl3,libffi8,libsqlite3-0,libreadline8,libbz2-1.0,liblzma5,zlib1g,libuuid1,libgomp1
[[ "$python_prefix" == /usr ]] && includes="$includes,python3.11"
if [[ ! -e "$debian/.complete" ]] || [[ "$(cat "$debian/.complete")" != "$includes" ]]; then
    log "building a Debian bookworm minbase root in $debian (about a minute, once)"
    rm -rf "$debian"
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
    debootstrap --variant=minbase --include="$includes" bookworm "$debian" "$mirror" > "$base/debootstrap.log" 2>&1 ||
        { log "debootstrap failed, see $base/debootstrap.log"; tail -5 "$base/debootstrap.log" >&2; exit 1; }
    rm -rf "$debian/var/cache/apt/archives/"*.deb
    printf '%s' "$includes" > "$debian/.complete"
fi
axolotl_key=$( { echo "$includes $venv $python_prefix $model"; cat "$venv/pyvenv.cfg" "$model/.complete";
    "$venv/bin/python" -m pip freeze 2>/dev/null; } | sha256sum | cut -c1-12)
axolotl_image="localhost/overbrainer-test/axolotl:$axolotl_key"
if ! has_image "$axolotl_image"; then
    log "building $axolotl_image (the venv is several GB: a few minutes, once)"
    extra=("${venv#/}" "${model#/}")
    [[ "$python_prefix" == /usr ]] || extra+=("${python_prefix#/}")
    tar -C "$debian" --exclude=./.complete -cf - . -C / "${extra[@]}" |
        import_image "$axolotl_image" 'CMD ["/bin/bash"]' \
            "ENV PATH=$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
            'ENV HF_HUB_OFFLINE=1' 'ENV CUDA_VISIBLE_DEVICES='
fi
stop_dockerd

# The pod images of the Runpod stand-in (issue 12): a bookworm root with sshd, bash,
# python3, curl, tar, sha256sum and setsid; its own host keys stay in it (a pod must
# present the run's pinned key instead). Podman only: the stand-in runs its pods there.
# The libraries beside python3 are those the Axolotl venv's own Python and torch load
# (the venv is mounted into the pods read-only, as on a Runpod image that holds it).
# Two images of that root, as a pod's `args` meets images on Runpod, where it replaces
# the image's CMD and runs under its ENTRYPOINT (issue 34):
#   - `pod`, shaped like runpod/pytorch: an ENTRYPOINT like nvidia/cuda's (it sets up
#     the environment, here exporting OB_ENTRYPOINT_CANARY, and ends in `exec "$@"`),
#     CMD /start.sh (the image's own command, which `args` replaces), and environment a
#     job must keep: an image-only directory on PATH, LD_LIBRARY_PATH, CUDA_VERSION and
#     OB_IMAGE_CANARY;
#   - `pod-plain`: no ENTRYPOINT, CMD bash, the same environment: `args` is the command.
pod_includes=openssh-server,curl,python3-minimal,libsqlite3-0,libreadline8,libgomp1
pod_root_key=$(echo "$pod_includes" | sha256sum | cut -c1-12)
pod_root="$base/bookworm-pod-$pod_root_key"
if [[ ! -e "$pod_root/.complete" ]] || [[ "$(cat "$pod_root/.complete")" != "$pod_includes" ]]; then
    log "building a Debian bookworm root with sshd in $pod_root (about a minute, once)"
    rm -rf "$pod_root"
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
    debootstrap --variant=minbase --include="$pod_includes" bookworm "$pod_root" "$mirror" > "$base/debootstrap-pod.log" 2>&1 ||
        { log "debootstrap failed, see $base/debootstrap-pod.log"; tail -5 "$base/debootstrap-pod.log" >&2; exit 1; }
    rm -rf "$pod_root/var/cache/apt/archives/"*.deb
    mkdir -p "$pod_root/run/sshd"
    printf '%s' "$pod_includes" > "$pod_root/.complete"
fi
pod_image_canary=ob-image-canary-Vq7Lx2Wm9Tz4Kb6Rn1Hd8Jc3Pf5Gs0Yt
pod_entrypoint_canary=ob-entrypoint-canary-Hs4Nq9Xb2Kv7Tm1Zr6Ld3Wc8Jp5Fy0
pod_entrypoint='#!/bin/bash
# Like nvidia/cuda'"'"'s entrypoint, which runpod/pytorch images run: it sets up the
# environment, then runs the container'"'"'s command (the image'"'"'s CMD, or a pod'"'"'s args).
export OB_ENTRYPOINT_CANARY='"$pod_entrypoint_canary"'
exec "$@"'
pod_start='#!/bin/bash
# Like runpod/pytorch'"'"'s /start.sh: the image'"'"'s own command, which a pod'"'"'s args replace.
echo "start.sh: the image'"'"'s own command"
exec sleep infinity'
pod_env=("ENV PATH=/opt/image-tools/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    "ENV LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64"
    "ENV CUDA_VERSION=12.8.1"
    "ENV OB_IMAGE_CANARY=$pod_image_canary")
pod_key=$(printf '%s\n' "$pod_includes" "$pod_entrypoint" "$pod_start" "${pod_env[@]}" | sha256sum | cut -c1-12)
pod_image="localhost/overbrainer-test/pod:$pod_key"
pod_plain_image="localhost/overbrainer-test/pod-plain:$pod_key"
if ! podman image exists "$pod_image" || ! podman image exists "$pod_plain_image"; then
    log "building $pod_image and $pod_plain_image"
    mkdir -p "$pod_root/opt/image-tools/bin" "$pod_root/usr/local/bin"
    printf '%s\n' "$pod_entrypoint" > "$pod_root/usr/local/bin/pod-entrypoint"
    printf '%s\n' "$pod_start" > "$pod_root/start.sh"
    chmod 755 "$pod_root/usr/local/bin/pod-entrypoint" "$pod_root/start.sh"
    env_changes=()
    for change in "${pod_env[@]}"; do env_changes+=(--change "$change"); done
    podman image exists "$pod_image" ||
        tar -C "$pod_root" --exclude=./.complete -cf - . |
        podman import -q --change 'ENTRYPOINT ["/usr/local/bin/pod-entrypoint"]' \
            --change 'CMD ["/start.sh"]' "${env_changes[@]}" - "$pod_image" >/dev/null
    podman image exists "$pod_plain_image" ||
        tar -C "$pod_root" --exclude=./.complete -cf - . |
        podman import -q --change 'CMD ["/bin/bash"]' "${env_changes[@]}" - "$pod_plain_image" >/dev/null
fi

# Shims for tests that drive an executor directly, whose scripts see this process's
# environment: each sets the configuration variables above and runs the real engine.
shims="$base/shims"
mkdir -p "$shims"
write_if_changed "$shims/podman" <<EOF
#!/bin/sh
# Written by scripts/container-env.sh: the real Podman with the test configuration.
export CONTAINERS_CONF='$CONTAINERS_CONF' CONTAINERS_STORAGE_CONF='$CONTAINERS_STORAGE_CONF'
exec $(command -v podman) "\$@"
EOF
write_if_changed "$shims/docker" <<EOF
#!/bin/sh
# Written by scripts/container-env.sh: the real Docker client, on the test's daemon.
export DOCKER_HOST='unix://$docker_sock'
exec $(command -v docker) "\$@"
EOF
chmod 755 "$shims/podman" "$shims/docker"

# An empty value counts as unset: refuse it here, naming the variable, rather than
# hand an empty image name to `podman run`.
for ob_var in shims CONTAINERS_CONF CONTAINERS_STORAGE_CONF shell_image axolotl_image pod_image pod_plain_image venv model; do
    [[ -n "${!ob_var// /}" ]] || { log "internal error: \$$ob_var is empty"; exit 1; }
done
echo "SHIMS=$shims"
echo "CONTAINERS_CONF=$CONTAINERS_CONF"
echo "CONTAINERS_STORAGE_CONF=$CONTAINERS_STORAGE_CONF"
echo "PODMAN_EVENTS=$podman_dir/events.log"
echo "DOCKER_DIR=$docker_dir"
echo "DOCKER_HOST=unix://$docker_sock"
echo "DOCKERD_ARGS=${dockerd_args[*]}"
echo "SHELL_IMAGE=$shell_image"
echo "AXOLOTL_IMAGE=$axolotl_image"
echo "POD_IMAGE=$pod_image"
echo "POD_PLAIN_IMAGE=$pod_plain_image"
echo "POD_IMAGE_CANARY=$pod_image_canary"
echo "POD_ENTRYPOINT_CANARY=$pod_entrypoint_canary"
echo "AXOLOTL_VENV=$venv"
echo "TINY_MODEL=$model"
