//! The create body: the target's fields, the secret only by reference, `"auto"` refused
//! naming its key.

use secrecy::{ExposeSecret as _, SecretString};

use super::*;
use crate::env::TimeScale;
use crate::runpod::lifecycle::tests::target;

fn keys() -> RunKeys {
    RunKeys {
        dir: "/p/runs/r_1/ssh".into(),
        config: "/p/runs/r_1/ssh/config".into(),
        client_public: "ssh-ed25519 AAAAC3client overbrainer r_1".into(),
        host_public: "ssh-ed25519 AAAAC3host overbrainer pod r_1".into(),
        host_secret: SecretString::from("SECRET-CANARY-7Hq2Wz9Lm4Tx6Vb1Nk3Rs8Pd5Jc0Fg"),
    }
}

fn body_of(target: &RunpodTarget) -> Result<(CreatePod, Vec<String>), BodyError> {
    let keys = keys();
    let rules = Rules::new(target, false, TimeScale::REAL);
    create_body(&PodSpec {
        chosen: None,
        target,
        run_id: "r_1",
        run_dir: "/workspace/runs/r_1",
        api_base: "https://api.runpod.io/v2",
        keys: &keys,
        rules: &rules,
        now: Duration::from_secs(1_796_130_000),
        volume_gb: Some(100),
    })
}

#[test]
fn the_create_body_carries_the_target_the_bounds_and_the_secret_by_reference_only() {
    let mut target = target(2.0, None);
    target.network_volume_id = Some("vol1".into());
    target.data_center_ids = Some(ListOrAuto::List(vec!["EU-RO-1".into()]));
    let (body, types) = body_of(&target).unwrap();
    assert_eq!(types, ["A", "B"]);
    assert_eq!(body.name, "overbrainer-r_1");
    assert_eq!(
        (body.image.as_str(), body.gpu.count, body.disk),
        ("img", 1, 20)
    );
    assert_eq!(body.cloud, "SECURE");
    assert_eq!(body.data_center_ids, ["EU-RO-1"]);
    let mounts = body.mounts.as_ref().unwrap();
    assert_eq!(
        (
            mounts.network[0].volume_id.as_str(),
            mounts.network[0].path.as_str()
        ),
        ("vol1", VOLUME_PATH)
    );
    assert_eq!(body.env[RUN_ID_VAR], "r_1");
    assert_eq!(
        body.env[HOST_KEY_VAR],
        "{{ RUNPOD_SECRET_overbrainer_host_key_r_1 }}"
    );
    assert_eq!(body.env[AUTHORIZED_KEY_VAR], keys().client_public);
    assert_eq!(
        body.env["OVERBRAINER_DEADLINE_AT"],
        (1_796_130_000 + 7200).to_string()
    );
    assert_eq!(body.env["OVERBRAINER_RUN_DIR"], "/workspace/runs/r_1");
    assert_eq!(
        body.args.as_deref(),
        Some(bootstrap::args("/workspace/runs/r_1", "r_1", "/venv").as_str())
    );
    let json = serde_json::to_string(&body).unwrap();
    assert!(
        !json.contains(&keys().host_secret.expose_secret()[7..30]),
        "{json}"
    );
}

#[test]
fn auto_unresolved_is_refused_naming_its_key() {
    let mut gpus = target(2.0, None);
    gpus.gpu_types = ListOrAuto::Auto("auto".into());
    let error = body_of(&gpus).unwrap_err().to_string();
    assert!(
        error.contains("`gpu_types = \"auto\"` was not resolved"),
        "{error}"
    );
    let mut centers = target(2.0, None);
    centers.data_center_ids = Some(ListOrAuto::Auto("auto".into()));
    let error = body_of(&centers).unwrap_err().to_string();
    assert!(error.contains("`data_center_ids = \"auto\"`"), "{error}");
}

#[test]
fn no_volume_no_mount() {
    let (body, _) = body_of(&target(2.0, None)).unwrap();
    assert_eq!(body.mounts, None);
    assert!(body.data_center_ids.is_empty());
}
