use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::runpod::catalog::listing::tests::gpu;
use crate::runpod::catalog::wire::Stock::{High, Low};

pub(crate) fn read(toml: &str, estimate: Result<f64, String>) -> GpuRead {
    GpuRead {
        name: "gpu".into(),
        target: toml::from_str(&format!("max_hours = 4\n{toml}")).expect("a Runpod target"),
        gpus: vec![
            gpu("A4000", 16, Some(0.17), High, &[("US-TX-3", High)]),
            gpu("L40S", 48, Some(0.79), Low, &[("EU-RO-1", High)]),
            gpu("H100", 80, Some(2.69), High, &[("US-TX-3", High)]),
        ],
        estimate,
    }
}

fn confirm(toml: &str) -> StartConfirm {
    let mut c = StartConfirm::new(vec!["target  gpu".into()], "gpu".into());
    c.read = Some(Ok(read(toml, Ok(23.4))));
    c
}

#[test]
fn before_the_read_it_says_so_and_a_failed_read_says_why() {
    let mut c = StartConfirm::new(vec!["target  gpu".into()], "gpu".into());
    assert!(
        c.lines()
            .contains(&"reading the Runpod catalog…".to_owned())
    );
    assert_eq!(c.changed_target(), None);
    c.read = Some(Err("`OVERBRAINER_RUNPOD__API_KEY` is not set".into()));
    let text = c.lines().join("\n");
    assert!(
        text.contains("Runpod catalog not read: `OVERBRAINER_RUNPOD__API_KEY` is not set"),
        "{text}"
    );
    assert!(c.changes().is_empty());
}

#[test]
fn a_gpu_list_pick_unsets_the_auto_limits_and_shows_what_changed() {
    let mut c = confirm("gpu_types = \"auto\"\nmin_vram_gb = 20\nmax_price_per_hour = 1.5");
    let before = c.lines().join("\n");
    assert!(before.contains("auto    would pick"), "{before}");
    c.picked(true, &Picked::List(vec!["H100".into(), "L40S".into()]));
    let changes = c.changes();
    assert_eq!(
        changes,
        vec![
            Change::Set(
                "targets.gpu.gpu_types".into(),
                toml_edit::Value::Array(["H100", "L40S"].into_iter().collect())
            ),
            Change::Unset("targets.gpu.min_vram_gb".into()),
            Change::Unset("targets.gpu.max_price_per_hour".into()),
        ]
    );
    let after = c.lines().join("\n");
    assert!(
        after.contains("the listed types, tried in order"),
        "{after}"
    );
    assert!(
        after.contains("H100  USD 2.69/h  80 GB  stock HIGH  fit ok"),
        "{after}"
    );
    assert!(
        after.contains("changed gpu_types = [\"H100\", \"L40S\"] (was \"auto\"), saved on `y`"),
        "{after}"
    );
    // Picking the file's value again is no change.
    c.picked(true, &Picked::Auto);
    assert!(c.changes().is_empty());
}

#[test]
fn a_data_center_pick_is_one_write_and_the_keys_answer() {
    let mut c = confirm("gpu_types = [\"H100\"]");
    c.picked(false, &Picked::List(vec!["US-TX-3".into()]));
    assert_eq!(
        c.changes(),
        vec![Change::Set(
            "targets.gpu.data_center_ids".into(),
            toml_edit::Value::Array(["US-TX-3"].into_iter().collect())
        )]
    );
    assert!(
        c.lines()
            .join("\n")
            .contains("changed data_center_ids = [\"US-TX-3\"] (was unset)")
    );
    let key = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    assert_eq!(c.handle_key(key('y')), ConfirmKey::Yes);
    assert_eq!(c.handle_key(key('g')), ConfirmKey::PickGpus);
    assert_eq!(c.handle_key(key('c')), ConfirmKey::PickCenters);
    assert_eq!(
        c.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
        ConfirmKey::No
    );
    c.saving = true;
    assert_eq!(
        c.handle_key(key('n')),
        ConfirmKey::Pending,
        "a save runs: nothing closes it"
    );
    assert!(
        c.lines()
            .contains(&"saving the choice, then starting…".to_owned())
    );
}
