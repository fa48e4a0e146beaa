//! Whether the project's `.env` holds a secret that other users of the machine can read
//! (issue 22): `cp .env.example .env` leaves it at mode 644 on most systems. Every command
//! warns once, naming the file and the fix; `config check` shows it with its problems.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::load::DOTENV_NAME;

/// A `.env` that holds a secret and that the group or others may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotenvExposed {
    /// The file, as the user names it (`.env` in the current directory).
    pub path: PathBuf,
    /// Its permission bits.
    pub mode: u32,
}

impl std::fmt::Display for DotenvExposed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let who = match (self.mode & 0o040 != 0, self.mode & 0o004 != 0) {
            (true, true) => "the members of its group and every other user of this machine",
            (true, false) => "the members of its group",
            _ => "every other user of this machine",
        };
        write!(
            f,
            "`{}` holds secrets and {who} can read it (mode {:03o}); run `chmod 600 {}`",
            self.path.display(),
            self.mode,
            self.path.display()
        )
    }
}

/// The `.env` of `project_dir` when it holds a secret and its mode lets the group or others
/// read it; `None` when it is absent, unreadable (the loader reports that), private, or
/// holds no secret.
#[must_use]
pub fn dotenv_exposed(project_dir: &Path) -> Option<DotenvExposed> {
    let path = if project_dir == Path::new(".") || project_dir.as_os_str().is_empty() {
        PathBuf::from(DOTENV_NAME)
    } else {
        project_dir.join(DOTENV_NAME)
    };
    let mode = std::fs::metadata(&path).ok()?.mode() & 0o7777;
    if mode & 0o044 == 0 {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    holds_secret(&text).then_some(DotenvExposed { path, mode })
}

/// Whether a variable holds a secret (SEC-1), or the Vault token that opens them.
#[must_use]
pub fn is_secret_variable(name: &str) -> bool {
    let provider_key = name
        .strip_prefix("OVERBRAINER_PROVIDERS__")
        .and_then(|rest| rest.strip_suffix("__API_KEY"))
        .is_some_and(|provider| !provider.is_empty());
    provider_key
        || matches!(
            name,
            "OVERBRAINER_RUNPOD__API_KEY" | "OVERBRAINER_HF_TOKEN" | "VAULT_TOKEN"
        )
}

/// Whether `.env` text assigns a secret variable a value of its own: not empty, not a
/// `vault:` reference (a location, not a secret) and not only a `${VAR}` reference to the
/// environment. Read line by line, so a file that does not parse is judged too.
fn holds_secret(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start().trim_start_matches('\u{feff}');
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            return false;
        };
        if !is_secret_variable(name.trim()) {
            return false;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value)
            .trim();
        let only_reference =
            value.starts_with("${") && value.ends_with('}') && value.matches('}').count() == 1;
        !value.is_empty() && !value.starts_with(crate::secrets::VAULT_PREFIX) && !only_reference
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn dotenv(text: &str, mode: u32) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DOTENV_NAME);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    }

    #[test]
    fn regression_a_dotenv_with_a_key_readable_by_others_is_named_with_its_fix() {
        let dir = dotenv(
            "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=sk-abc-T6nW2qX8vK4mZ9rB3h\n",
            0o644,
        );
        let exposed = dotenv_exposed(dir.path()).unwrap();
        assert_eq!(exposed.mode, 0o644);
        let text = exposed.to_string();
        assert!(text.contains("chmod 600"), "{text}");
        assert!(
            text.contains(&dir.path().join(".env").display().to_string()),
            "{text}"
        );
        assert!(text.contains("mode 644"), "{text}");
        assert!(!text.contains("sk-abc-T6nW2qX8vK4mZ9rB3h"), "{text}");
        let group = dotenv("OVERBRAINER_HF_TOKEN=hf_x\n", 0o640);
        assert!(
            dotenv_exposed(group.path())
                .unwrap()
                .to_string()
                .contains("the members of its group can read it")
        );
    }

    #[test]
    fn private_files_and_files_without_secrets_are_fine() {
        for mode in [0o600, 0o400, 0o700, 0o622] {
            let dir = dotenv("OVERBRAINER_RUNPOD__API_KEY=rp_x\n", mode);
            assert_eq!(dotenv_exposed(dir.path()), None, "{mode:o}");
        }
        for text in [
            "OVERBRAINER_PROVIDERS__X__BASE_URL=http://127.0.0.1:1\n",
            "# OVERBRAINER_PROVIDERS__X__API_KEY=sk-commented\n",
            "OVERBRAINER_PROVIDERS__X__API_KEY=\n",
            "OVERBRAINER_PROVIDERS__X__API_KEY=\"vault:secret/x#key\"\n",
            "OVERBRAINER_PROVIDERS__X__API_KEY=${OPENROUTER_KEY}\n",
            "",
        ] {
            let dir = dotenv(text, 0o644);
            assert_eq!(dotenv_exposed(dir.path()), None, "{text}");
        }
        let none = tempfile::tempdir().unwrap();
        assert_eq!(dotenv_exposed(none.path()), None);
    }

    #[test]
    fn every_kind_of_secret_counts() {
        for text in [
            "OVERBRAINER_PROVIDERS__LOCAL_LLM__API_KEY='k'",
            "export OVERBRAINER_HF_TOKEN=hf_x",
            "VAULT_TOKEN=hvs.x",
            "OVERBRAINER_RUNPOD__API_KEY = rp",
            "OVERBRAINER_PROVIDERS__X__API_KEY=pre${SUFFIX}",
        ] {
            assert!(holds_secret(text), "{text}");
        }
        assert!(!is_secret_variable("OVERBRAINER_PROVIDERS____API_KEY"));
        assert!(!is_secret_variable("OVERBRAINER_TARGETS__GPU__HOST"));
    }
}
