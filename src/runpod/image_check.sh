# What a custom image must keep (spec/runpod.md POD-74), checked by the bootstrap before
# anything else: image_lacks VENV prints one line naming every tool the image lacks and
# Axolotl when VENV holds no executable bin/axolotl, or nothing when the image has it
# all. The bootstrap logs that line to the pod's log, where the client reads it while it
# waits for the pod (src/runpod/bootstrap.rs, image_lacks), and starts neither sshd nor
# training. The entrypoint cannot be checked from here: that this runs at all shows
# that it ran the pod's command.
image_lacks() {
    local tool missing=
    for tool in bash sshd ssh-keygen base64 curl setsid nohup tar find sha256sum; do
        if command -v "$tool" >/dev/null 2>&1; then continue; fi
        if [ "$tool" = sshd ] && [ -x /usr/sbin/sshd ]; then continue; fi
        missing="$missing${missing:+, }$tool"
    done
    if [ ! -x "$1/bin/axolotl" ] || [ -d "$1/bin/axolotl" ]; then
        missing="$missing${missing:+, }axolotl in $1"
    fi
    if [ -n "$missing" ]; then
        printf 'the image lacks what overbrainer needs: %s\n' "$missing"
    fi
}
