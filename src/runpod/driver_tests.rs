//! The driver's own rules: the handshake's classification, the pod files' format, no
//! create call unrecorded.

use super::*;

#[test]
fn a_changed_host_key_is_another_key_and_a_refused_connection_no_handshake() {
    let changed = ExecError::Protocol(
        "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nHost key \
         verification failed."
            .into(),
    );
    assert!(matches!(classify(&changed), Handshake::OtherKey(_)));
    let refused =
        ExecError::Protocol("connect to host 127.0.0.1 port 2: Connection refused".into());
    assert!(matches!(classify(&refused), Handshake::Failed(_)));
}

/// A run whose job must never be reached.
struct Unreached;

impl PodJob for Unreached {
    async fn start(&mut self, _: &SshExecutor) -> Result<(), String> {
        Err("unreached".into())
    }
    async fn watch(&mut self, _: &SshExecutor) -> Result<JobNews, String> {
        Err("unreached".into())
    }
    async fn retrieve(&mut self, _: &SshExecutor) -> Result<(), String> {
        Err("unreached".into())
    }
}

/// `pod.json` cannot be written.
struct Unwritable(u32);

impl PodHooks for Unwritable {
    fn notice(&mut self, _: &Notice) {}
    fn record(&mut self, _: &PodState) -> Result<(), String> {
        self.0 += 1;
        Err("disk full".into())
    }
}

#[tokio::test]
async fn no_create_call_goes_out_when_pod_json_cannot_be_written() {
    use crate::runpod::lifecycle::tests::target;
    // Port 9 (discard) on this machine: a call that went out would fail otherwise.
    let client = RunpodClient::new(
        "http://127.0.0.1:9/v2",
        secrecy::SecretString::from("rpa_CANARY1Xw5Rt8Yq2Zm6Vn3Kb9Lp4Hd7Jc0Fs"),
        crate::llm::Redactor::new(),
        Duration::from_secs(5),
    )
    .unwrap();
    let rules = super::super::lifecycle::Rules::new(&target(2.0, None), false, TimeScale::REAL);
    let plan = PodPlan {
        body: CreatePod {
            name: "overbrainer-r_1".into(),
            image: "img".into(),
            gpu: crate::runpod::api::GpuRequest {
                id: String::new(),
                count: 1,
            },
            cloud: "SECURE".into(),
            data_center_ids: Vec::new(),
            disk: 20,
            env: std::collections::BTreeMap::new(),
            ports: Vec::new(),
            mounts: None,
            args: None,
        },
        ssh_config: PathBuf::from("/nonexistent/config"),
        workdir: "/w".into(),
        run_dir: "/w/r".into(),
        host_key_secret: None,
        job_poll: Duration::from_secs(1),
        time_scale: TimeScale::REAL,
        auto: None,
        log_dir: None,
    };
    let mut hooks = Unwritable(0);
    let state = PodState::new(rules, vec!["A".into()]);
    let error = drive(
        &client,
        &plan,
        state,
        Event::Began { at: now() },
        &mut Unreached,
        &mut hooks,
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, DriveError::Record(_)), "{error}");
    assert_eq!(hooks.0, 1);
    assert!(error.to_string().contains("disk full"));
}

#[test]
fn pod_files_hold_whole_unix_seconds_on_one_line() {
    assert_eq!(
        unix_line(Duration::from_millis(1_764_600_000_900)),
        "1764600000\n"
    );
}
