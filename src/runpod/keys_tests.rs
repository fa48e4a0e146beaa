//! A run's SSH keys: private from the first byte, the host key pinned under the run's
//! alias, its private half on no disk of ours, never replaced.
#![allow(
    clippy::disallowed_methods,
    reason = "tests run real programs to check the keys"
)]

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use super::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn base64_is_rfc_4648_with_padding() {
    for (plain, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
    }
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

#[tokio::test]
async fn run_keys_are_private_and_pin_only_the_run_host_key() {
    let run_dir = tempfile::tempdir().unwrap();
    let run = "r_20261201-130000-ke01";
    let keys = create(run_dir.path(), run).await.unwrap();
    assert_eq!(keys.dir, run_dir.path().join(SSH_DIR));
    assert_eq!(mode(&keys.dir), 0o700);
    assert_eq!(mode(&keys.dir.join(CLIENT_KEY)), 0o600);
    // Only the run's files are left: no scratch key of the host.
    let mut names: Vec<String> = std::fs::read_dir(&keys.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [CONFIG, CLIENT_KEY, "id_ed25519.pub", KNOWN_HOSTS]);
    // The client's private key answers to its public line.
    let derived = Command::new("ssh-keygen")
        .arg("-y")
        .arg("-f")
        .arg(keys.dir.join(CLIENT_KEY))
        .output()
        .expect("ssh-keygen: install it with `apt-get install openssh-client`");
    let derived = String::from_utf8_lossy(&derived.stdout);
    assert!(keys.client_public.starts_with(derived.trim()), "{derived}");
    // known_hosts: one line, the run's alias and the host key.
    let known = std::fs::read_to_string(keys.dir.join(KNOWN_HOSTS)).unwrap();
    let fields: Vec<&str> = keys.host_public.split_whitespace().take(2).collect();
    assert_eq!(
        known,
        format!("{} {} {}\n", host_alias(run), fields[0], fields[1])
    );
    // The secret decodes to the host's private key, which no file of the run holds.
    let mut decode = Command::new("base64")
        .arg("-d")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("base64: install it with `apt-get install coreutils`");
    std::io::Write::write_all(
        &mut decode.stdin.take().unwrap(),
        keys.host_secret.expose_secret().as_bytes(),
    )
    .unwrap();
    let decoded = decode.wait_with_output().unwrap();
    let host_private = String::from_utf8(decoded.stdout).unwrap();
    assert!(
        host_private.contains("BEGIN OPENSSH PRIVATE KEY"),
        "{host_private}"
    );
    let body: String = host_private.lines().nth(2).unwrap().to_owned();
    for name in &names {
        let text = std::fs::read_to_string(keys.dir.join(name)).unwrap();
        assert!(!text.contains(&body), "{name}");
        assert!(
            !text.contains(&keys.host_secret.expose_secret()[40..80]),
            "{name}"
        );
    }
    let config = std::fs::read_to_string(&keys.config).unwrap();
    for line in [
        format!("IdentityFile \"{}/{CLIENT_KEY}\"", keys.dir.display()),
        format!(
            "UserKnownHostsFile \"{}/{KNOWN_HOSTS}\"",
            keys.dir.display()
        ),
        format!("HostKeyAlias {}", host_alias(run)),
        "IdentityAgent none".to_owned(),
        "StrictHostKeyChecking yes".to_owned(),
    ] {
        assert!(config.contains(&line), "{line}\n{config}");
    }
}

#[tokio::test]
async fn a_run_with_keys_is_never_given_new_ones() {
    let run_dir = tempfile::tempdir().unwrap();
    let run = "r_20261201-130000-ke02";
    let first = create(run_dir.path(), run).await.unwrap();
    let key = std::fs::read(first.dir.join(CLIENT_KEY)).unwrap();
    let error = create(run_dir.path(), run).await.unwrap_err();
    assert!(matches!(error, KeyError::Exists(_)), "{error}");
    assert_eq!(std::fs::read(first.dir.join(CLIENT_KEY)).unwrap(), key);
}
