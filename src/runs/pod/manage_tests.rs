//! Tests of `runs::pod::manage`.

use super::*;

#[tokio::test]
async fn pod_ls_and_rm_without_the_key_say_it_is_needed_to_list_and_delete_pods() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(crate::config::FILE_NAME), "").unwrap();
    let project = Project::open(dir.path()).unwrap();
    let settings = Settings::default();
    let env = EnvSnapshot::from_pairs(Vec::<(String, String)>::new());
    let expected = "`OVERBRAINER_RUNPOD__API_KEY` is not set: listing and deleting pods needs the Runpod account's API key (set it in `.env` or the environment); nothing was deleted";
    let removed = remove(&project, &settings, &env, "demo_20260922-143005_2", true)
        .await
        .unwrap_err();
    assert_eq!(removed.to_string(), expected);
    let listed = list(&project, &settings, &env).await.unwrap_err();
    assert_eq!(listed.to_string(), expected);
    assert!(!expected.contains("created"));
}

#[tokio::test]
async fn a_failed_pod_listing_names_no_run_but_the_target_when_there_is_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A stand-in for the Runpod API that refuses every request.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0_u8; 4096];
            let _ = stream.read(&mut buf).await;
            let _ = stream
                .write_all(
                    b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
        }
    });
    let client = RunpodClient::new(
        &base,
        secrecy::SecretString::from("rpa_unit_Wq4Zt8Lm2Xv6Kp9Rb3Nd"),
        crate::llm::Redactor::new(),
        Duration::from_secs(30),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(crate::config::FILE_NAME), "").unwrap();
    let project = Project::open(dir.path()).unwrap();
    let error = check(
        &client,
        TimeScale::with_second(Duration::from_secs(1)),
        &project,
    )
    .await
    .unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("cannot list the Runpod account's pods: "),
        "{text}"
    );
    assert!(!text.contains("run `"), "{text}");
    let RunError::PodList { reason, .. } = error else {
        panic!("{error:?}");
    };
    let named = RunError::PodList {
        target: Some("gpu".to_owned()),
        reason,
    };
    assert!(
        named
            .to_string()
            .starts_with("target `gpu`: cannot list the Runpod account's pods: "),
        "{named}"
    );
}

#[test]
fn reconciliation_reads_this_projects_lease_and_cost_cap_and_leaves_other_projects_pods() {
    // Real durations: snapshot window 15 min, client guard 5 min, lease fresh 15 min.
    let rules = deletion_rules(TimeScale::REAL);
    let min = |m: u64| Duration::from_secs(60 * m);
    let deadline = min(600);
    let lease = |at: u64| Known {
        lease_at: Some(min(at)),
        cost_cap_at: None,
    };
    let cap = |at: u64| Known {
        lease_at: Some(min(700)),
        cost_cap_at: Some(min(at)),
    };
    let cases = [
        // (now, known, deleted, why)
        (
            min(620),
            Some(Known::default()),
            false,
            "within deadline + window + guard",
        ),
        (
            min(621),
            Some(Known::default()),
            true,
            "past deadline + 20 min, no lease",
        ),
        (
            min(621),
            Some(lease(500)),
            true,
            "a lease that expired before the deadline",
        ),
        (
            min(621),
            Some(lease(606)),
            false,
            "a lease fresh after the deadline holds it",
        ),
        (
            min(641),
            Some(lease(606)),
            false,
            "within the lease's expiry + 20 min",
        ),
        (
            min(642),
            Some(lease(606)),
            true,
            "past the lease's expiry + 20 min",
        ),
        (
            min(606),
            Some(cap(600)),
            true,
            "past the cost cap + guard, whatever the lease",
        ),
        (
            min(605),
            Some(cap(600)),
            false,
            "within the cost cap's guard",
        ),
        (
            min(10_000),
            None,
            false,
            "another project's pod: its lease is not readable",
        ),
    ];
    for (now, known, deleted, why) in cases {
        assert_eq!(past_bound(now, deadline, known, &rules), deleted, "{why}");
    }
}
