//! Run IDs: `<slug>_<YYYYMMDD>-<HHMMSS>` from the project name and the UTC creation time,
//! with `_2`, `_3`, … on collision (spec/training.md, RUN-1, RUN-2, RUN-5).

/// Longest slug, in characters (RUN-1).
pub const MAX_SLUG: usize = 40;

/// The slug of a project name: lower-cased, each run of characters other than ASCII
/// letters and digits replaced by one `_`, `_` trimmed at both ends, at most
/// [`MAX_SLUG`] characters; `run` when nothing is left (RUN-1).
#[must_use]
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    let mut pending = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if pending && !out.is_empty() {
                out.push('_');
            }
            pending = false;
            out.push(c.to_ascii_lowercase());
        } else {
            pending = true;
        }
    }
    out.truncate(MAX_SLUG);
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() {
        "run".to_owned()
    } else {
        out
    }
}

/// The base run ID of `name` at `time` (UTC).
#[must_use]
pub fn base_id(name: &str, time: jiff::Timestamp) -> String {
    let utc = time.to_zoned(jiff::tz::TimeZone::UTC);
    format!("{}_{}", slug(name), utc.strftime("%Y%m%d-%H%M%S"))
}

/// The `n`-th candidate for `base` (RUN-2): `base` itself for 1, else `base_<n>`.
#[must_use]
pub fn candidate(base: &str, n: u32) -> String {
    if n <= 1 {
        base.to_owned()
    } else {
        format!("{base}_{n}")
    }
}

/// Whether `id` can be a run ID: non-empty, at most 128 characters of ASCII letters,
/// digits, `_` and `-`, so it holds no path separator and no `..` (RUN-5).
#[must_use]
pub fn is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("Malware Development"), "malware_development");
        assert_eq!(slug("  --Hello, World!!  "), "hello_world");
        assert_eq!(slug("日本"), "run");
        assert_eq!(slug(""), "run");
        let long = "a".repeat(39) + " b";
        assert_eq!(slug(&long), "a".repeat(39));
        assert_eq!(slug(&"x".repeat(60)).len(), 40);
    }

    #[test]
    fn ids_and_candidates() {
        let time: jiff::Timestamp = "2026-09-22T14:30:05Z".parse().unwrap();
        let base = base_id("malware development", time);
        assert_eq!(base, "malware_development_20260922-143005");
        assert_eq!(candidate(&base, 1), base);
        assert_eq!(candidate(&base, 3), format!("{base}_3"));
    }

    #[test]
    fn validation() {
        assert!(is_valid("demo_20260922-143005_2"));
        for bad in ["", "a/b", "..", "../x", "a b", "a.b", "x\n"] {
            assert!(!is_valid(bad), "{bad:?}");
        }
    }
}
