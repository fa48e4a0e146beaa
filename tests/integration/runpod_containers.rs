//! The stand-in's pods are real (issue 12): a created pod is a Podman container of the
//! local pod image running the create body's `args` with its secret references
//! substituted, port 22 published on 127.0.0.1 only; the run's pinned host key, carried
//! by an account secret and never by the pod description, is the only key accepted, and
//! `DELETE` removes the container.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use overbrainer::llm::Redactor;
use overbrainer::runpod::api::{
    CreatePod, GpuRequest, RunpodClient, host_key_secret, pod_name, secret_reference,
};
use secrecy::SecretString;

use crate::runpod_standin::Standin;
use crate::util::poll;

const KEY: &str = "rpa_CANARY2Hv7Qm4Xt9Ls3Kd8Wb6Nj1Zc5Pr0Fg";
const RUN: &str = "r_20261201-130000-cd34";

/// The pod's command: the pinned host key from its secret (base64, one line), the client
/// key authorized, then `sshd` with that host key only.
pub const PINNED_BOOT: &str = r#"set -eu; umask 077; mkdir -p /run/sshd /root/.ssh
printf '%s' "$OVERBRAINER_HOST_KEY" | base64 -d > /etc/ssh/pinned_host_key
printf '%s\n' "$OVERBRAINER_AUTHORIZED_KEY" > /root/.ssh/authorized_keys
unset OVERBRAINER_HOST_KEY
exec /usr/sbin/sshd -D -e -o HostKey=/etc/ssh/pinned_host_key -o PasswordAuthentication=no"#;

/// A pod that starts `sshd` with the image's own host keys.
pub const IMAGE_KEYS_BOOT: &str = r#"set -eu; mkdir -p /run/sshd /root/.ssh
printf '%s\n' "$OVERBRAINER_AUTHORIZED_KEY" > /root/.ssh/authorized_keys
exec /usr/sbin/sshd -D -e -o PasswordAuthentication=no"#;

/// A pod's `args` running `script` with `bash -c`, quoted as a start command is (the
/// stand-in splits `args` into words as a shell does, as Runpod's examples quote them).
pub fn bash_args(script: &str) -> String {
    format!("bash -c {}", overbrainer::exec::quote(script))
}

pub fn tool(command: &mut Command) -> Output {
    command.output().unwrap_or_else(|e| {
        panic!("cannot run {command:?} ({e}): install it with `apt-get install openssh-client coreutils`")
    })
}

/// A fresh ed25519 key pair `dir/name`; its public line.
pub fn keygen(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let out = tool(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
            .arg(&path),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(path.with_extension("pub"))
        .unwrap()
        .trim()
        .to_owned()
}

fn body(name: &str, args: &str, client_pub: &str) -> CreatePod {
    CreatePod {
        name: pod_name(name),
        image: "overbrainer-pod:test".into(),
        gpu: GpuRequest {
            id: "NVIDIA A40".into(),
            count: 1,
        },
        cloud: "SECURE".into(),
        data_center_ids: Vec::new(),
        disk: 20,
        env: [
            (
                "OVERBRAINER_HOST_KEY".to_owned(),
                secret_reference(&host_key_secret(RUN)),
            ),
            (
                "OVERBRAINER_AUTHORIZED_KEY".to_owned(),
                client_pub.to_owned(),
            ),
        ]
        .into(),
        ports: vec!["22/tcp".into()],
        mounts: None,
        args: Some(args.into()),
    }
}

/// `ssh` to `port` trusting only `known_hosts`, with the client key.
fn ssh(dir: &Path, known_hosts: &Path, port: u16, command: &str) -> Output {
    tool(
        Command::new("ssh")
            .args(["-F", "/dev/null", "-o", "BatchMode=yes"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
            .args([
                "-o",
                "GlobalKnownHostsFile=/dev/null",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "ConnectTimeout=5",
                "-i",
            ])
            .arg(dir.join("client"))
            .args(["-p", &port.to_string(), "root@127.0.0.1", command]),
    )
}

fn pinned_known_hosts(dir: &Path, port: u16, host_pub: &str) -> PathBuf {
    let path = dir.join(format!("known_hosts_{port}"));
    let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
    std::fs::write(&path, format!("[127.0.0.1]:{port} {}\n", key.join(" "))).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_standin_pods_are_containers_reached_only_with_the_pinned_host_key() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    std::fs::create_dir(dir.join("env")).unwrap();
    let standin = Standin::with_pods(KEY, dir.join("env")).await;
    let client = RunpodClient::new(
        &standin.base(),
        SecretString::from(KEY),
        Redactor::new(),
        Duration::from_secs(120),
    )
    .unwrap();
    let host_pub = keygen(dir, "host");
    let client_pub = keygen(dir, "client");
    let encoded = tool(Command::new("base64").arg("-w0").arg(dir.join("host")));
    let host_secret = String::from_utf8(encoded.stdout).unwrap();
    let secret = client
        .create_secret(
            &host_key_secret(RUN),
            &SecretString::from(host_secret.clone()),
            None,
        )
        .await
        .unwrap();

    // The pinned pod answers with the run's host key: every tool the job needs is there.
    let pinned = client
        .create_pod(&body(RUN, &bash_args(PINNED_BOOT), &client_pub))
        .await
        .unwrap();
    let endpoint = pinned.view().ssh.expect("ssh.direct");
    assert_eq!(endpoint.host, "127.0.0.1");
    let known = pinned_known_hosts(dir, endpoint.port, &host_pub);
    let probe = "python3 -c 'print(6 * 7)' && curl --version >/dev/null && tar --version \
                 >/dev/null && sha256sum --version >/dev/null && command -v setsid bash";
    let out = poll(Duration::from_secs(60), "the pinned pod's sshd", || {
        let out = ssh(dir, &known, endpoint.port, probe);
        if out.status.success() {
            Ok(out)
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("42\n"), "{text}");
    // The API's description of the pod holds the reference, never the key.
    let described = client.get_pod(&pinned.id).await.unwrap().unwrap();
    assert_eq!(
        described.env["OVERBRAINER_HOST_KEY"],
        secret_reference(&host_key_secret(RUN))
    );

    // A pod presenting the image's own host key is refused before any command runs.
    let stray = client
        .create_pod(&body("r_other", &bash_args(IMAGE_KEYS_BOOT), &client_pub))
        .await
        .unwrap();
    let port = stray.view().ssh.expect("ssh.direct").port;
    poll(Duration::from_secs(60), "the other pod's sshd", || {
        let out = tool(Command::new("ssh-keyscan").args(["-p", &port.to_string(), "127.0.0.1"]));
        if String::from_utf8_lossy(&out.stdout).contains("ssh-") {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    });
    let known = pinned_known_hosts(dir, port, &host_pub);
    let marker = dir.join("ran");
    let out = ssh(dir, &known, port, &format!("touch {}", marker.display()));
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{error}");
    assert!(error.contains("Host key verification failed"), "{error}");

    // DELETE removes the containers; nothing is left.
    for id in [&pinned.id, &stray.id] {
        client.delete_pod(id).await.unwrap();
        assert_eq!(client.gone(id).await.unwrap(), (false, false));
    }
    client.delete_secret(&secret.id).await.unwrap();
    standin.assert_nothing_left();
    // The key went in no request; the host key only in its secret's create body.
    for (method, path, body) in &standin.state().requests {
        assert!(!body.contains(&KEY[4..20]), "{method} {path}");
        if body.contains(&host_secret[40..80]) {
            assert_eq!(path, "/v2/account/secrets", "{method}");
        }
    }
}
