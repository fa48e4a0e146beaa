//! The blob cache over the real SSH server (issue 21): a second upload of the same
//! model sends under 1% of the first's bytes, a changed file is sent and verified,
//! and a prune frees exactly the blobs no run links to.

use std::path::Path;

use overbrainer::exec::SshExecutor;
use overbrainer::exec::blobs::{BLOBS_DIR, DigestCache, prune_cache, upload_tree};

use crate::sshd::Sshd;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn model(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("model.safetensors"), vec![3u8; 2_000_000]).unwrap();
    std::fs::write(
        dir.join("sub/config.json"),
        "{\"canary\":\"q7Yh3LmZx9Wc2Rt8Vb4Ns6Pd\"}",
    )
    .unwrap();
}

fn same_file(a: &Path, b: &Path) {
    assert_eq!(
        std::fs::read(a).unwrap(),
        std::fs::read(b).unwrap(),
        "{}",
        b.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_upload_over_ssh_sends_under_one_percent_and_a_change_is_sent() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    let work = root.path().join("ssh-work");
    let executor = SshExecutor::connect(sshd.destination(), work.to_str().unwrap())
        .await
        .unwrap_or_else(|error| panic!("connect: {error:?}\n{}", sshd.log()));
    let local = root.path().join("model");
    model(&local);
    let mut cache = DigestCache::default();
    let run = |name: &str| work.join("runs").join(name).join("base_model");

    let first = upload_tree(
        &executor,
        &local,
        run("r1").to_str().unwrap(),
        &mut cache,
        |_| {},
    )
    .await?;
    let second = upload_tree(
        &executor,
        &local,
        run("r2").to_str().unwrap(),
        &mut cache,
        |_| {},
    )
    .await?;
    assert!(first.staged_bytes >= 2_000_000);
    assert!(second.staged_bytes * 100 < first.staged_bytes, "{second:?}");
    for name in ["r1", "r2"] {
        same_file(
            &local.join("model.safetensors"),
            &run(name).join("model.safetensors"),
        );
        same_file(
            &local.join("sub/config.json"),
            &run(name).join("sub/config.json"),
        );
    }

    std::fs::write(
        local.join("sub/config.json"),
        "{\"canary\":\"changed-Jk2Lp9Qr5Ts1Uv7Wx3\"}",
    )?;
    let third = upload_tree(
        &executor,
        &local,
        run("r3").to_str().unwrap(),
        &mut cache,
        |_| {},
    )
    .await?;
    assert_eq!(
        third.staged_bytes,
        std::fs::metadata(local.join("sub/config.json"))?.len()
    );
    same_file(
        &local.join("sub/config.json"),
        &run("r3").join("sub/config.json"),
    );

    // Removing r3 leaves the changed config's blob unlinked: the prune frees it alone.
    std::fs::remove_dir_all(work.join("runs/r3"))?;
    let report = prune_cache(&executor).await?;
    assert_eq!(report.blobs, 1, "{report:?}");
    assert_eq!(report.bytes, third.staged_bytes);
    assert_eq!(
        std::fs::read_dir(work.join(BLOBS_DIR).join("sha256"))?.count(),
        2
    );
    same_file(
        &local.join("model.safetensors"),
        &run("r1").join("model.safetensors"),
    );
    Ok(())
}

fn project_with_local_target() -> crate::util::TestProject {
    let project = crate::util::TestProject::init();
    let config = project.read("overbrainer.toml")
        + "\n[training]\ntarget = \"here\"\nbase_model = \"b\"\nadapter = \"lora\"\n\n[targets.here]\nkind = \"local\"\n";
    project.write("overbrainer.toml", &config);
    project
}

#[test]
fn target_prune_refuses_an_unknown_target_naming_it() {
    let project = project_with_local_target();
    let output = project
        .cmd()
        .args(["target", "prune", "ghost-x4Tq9"])
        .output()
        .unwrap();
    let text = crate::util::output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("ghost-x4Tq9"), "{text}");
}

#[test]
fn target_prune_of_a_local_target_says_there_is_nothing_to_prune() {
    let project = project_with_local_target();
    let output = project
        .cmd()
        .args(["target", "prune", "here"])
        .output()
        .unwrap();
    let text = crate::util::output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("target `here` is local: no blob cache to prune"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_uploads_over_ssh_at_once_and_a_corrupted_blob_leave_correct_runs() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    let work = root.path().join("ssh-work");
    let executor = SshExecutor::connect(sshd.destination(), work.to_str().unwrap())
        .await
        .unwrap_or_else(|error| panic!("connect: {error:?}\n{}", sshd.log()));
    let local = root.path().join("model");
    model(&local);
    let run = |name: &str| work.join("runs").join(name);
    let (r1, r2) = (run("r1"), run("r2"));
    let (mut c1, mut c2) = (DigestCache::default(), DigestCache::default());
    let (a, b) = tokio::join!(
        upload_tree(&executor, &local, r1.to_str().unwrap(), &mut c1, |_| {}),
        upload_tree(&executor, &local, r2.to_str().unwrap(), &mut c2, |_| {}),
    );
    a?;
    b?;
    for dir in [&r1, &r2] {
        same_file(
            &local.join("model.safetensors"),
            &dir.join("model.safetensors"),
        );
        same_file(&local.join("sub/config.json"), &dir.join("sub/config.json"));
    }
    // Corrupt every cached blob through a fresh inode (runs r1 and r2 keep theirs):
    // the next upload sends them again and links only verified content.
    let blobs = work.join(BLOBS_DIR).join("sha256");
    for entry in std::fs::read_dir(&blobs)? {
        let path = entry?.path();
        std::fs::remove_file(&path)?;
        std::fs::write(&path, "corrupt-Hq8Zt2Lm5Xw9")?;
    }
    let third = upload_tree(
        &executor,
        &local,
        run("r3").to_str().unwrap(),
        &mut c1,
        |_| {},
    )
    .await?;
    assert_eq!(third.summary.present, 0, "{third:?}");
    same_file(
        &local.join("model.safetensors"),
        &run("r3").join("model.safetensors"),
    );
    same_file(
        &local.join("sub/config.json"),
        &run("r3").join("sub/config.json"),
    );
    Ok(())
}
