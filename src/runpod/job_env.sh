# The pod's own environment for its jobs (spec/runpod.md POD-27, POD-74): a job started
# over SSH starts from sshd's environment, not the image's, and so would lose the
# image's PATH, its CUDA library path, HF_HOME and the rest of what the image (its ENV
# lines and its entrypoint) set. write_job_env FILE writes the environment of this
# process (the bootstrap, which the image's entrypoint started) to FILE as POSIX
# `export NAME='value'` lines, which the job's launch sources first
# (src/runpod/bootstrap.rs, source_job_env).
#
# Never a secret: overbrainer's own variables (OVERBRAINER_*: the pinned host key among
# them), the pod's Runpod key, and any variable whose name says it holds a key, a token,
# a secret, a password or a credential are left out, and so is any variable whose value
# holds the value of one of those (a copy of a key under another name). The shell's own
# per-process variables are left out too.
job_env_secret_name() {
    case "${1^^}" in
    OVERBRAINER_* | RUNPOD_API_KEY | *KEY* | *TOKEN* | *SECRET* | *PASSWORD* | *PASSWD* | \
        *CREDENTIAL* | *AUTH* | *COOKIE* | *SESSION* | *PRIVATE*) return 0 ;;
    esac
    return 1
}
write_job_env() {
    local file=$1 name value secret secrets=() skip
    for name in $(compgen -e); do
        if job_env_secret_name "$name"; then
            value=${!name}
            # Short values (0, 1, true) say nothing and would drop harmless variables.
            [ "${#value}" -ge 8 ] && secrets+=("$value")
        fi
    done
    {
        printf '# Written by the overbrainer bootstrap: the image'"'"'s environment for jobs.\n'
        for name in $(compgen -e); do
            case "$name" in
            PWD | OLDPWD | SHLVL | _ | HOSTNAME | TERM | SHELLOPTS | BASHOPTS) continue ;;
            esac
            job_env_secret_name "$name" && continue
            value=${!name}
            skip=
            for secret in ${secrets[@]+"${secrets[@]}"}; do
                case "$value" in *"$secret"*) skip=1 ;; esac
            done
            [ -n "$skip" ] && continue
            printf "export %s='%s'\n" "$name" "${value//\'/\'\\\'\'}"
        done
    } >"$file.tmp" && mv -f "$file.tmp" "$file"
}
