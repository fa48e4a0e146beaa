//! The script that claims a run directory on the target (RUN-3).
use crate::exec::CLAIM_FILE;
use crate::shell::quote;

/// A script that claims `dir` for `owner` (one line): creates `dir` and its
/// parents, then [`CLAIM_FILE`] exclusively (`set -C`, which opens with `O_EXCL`)
/// holding `owner`. Prints `claimed` when the claim is new or already held by
/// `owner`, `taken` when [`CLAIM_FILE`] holds anything else.
#[must_use]
pub fn claim_script(dir: &str, owner: &str) -> String {
    format!(
        r#"d={dir}
o={owner}
mkdir -p -- "$d" || exit 1
if (set -C; printf '%s\n' "$o" > "$d/{claim}") 2>/dev/null; then echo claimed; exit 0; fi
[ -f "$d/{claim}" ] || {{ echo "cannot create $d/{claim}" >&2; exit 1; }}
IFS= read -r ob_held < "$d/{claim}" || true
if [ "$ob_held" = "$o" ]; then echo claimed; else echo taken; fi
"#,
        dir = quote(dir),
        owner = quote(owner),
        claim = CLAIM_FILE,
    )
}
