//! Rows of deletion: "gone means gone" (a 204 is not proof), retries with backoff,
//! lingering pods, the next type after a pod that could not become ready, and what each
//! deletion means for the run.

use super::*;

fn answered(at: u64, ok: bool) -> Event {
    Event::DeleteAnswered {
        at: s(at),
        result: if ok { Ok(()) } else { Err("502".into()) },
    }
}

fn seen(at: u64, listed: bool, found: bool) -> Event {
    Event::GoneChecked {
        at: s(at),
        seen: Ok((listed, found)),
    }
}

/// `state` through a delete answered and a check that finds it gone.
fn gone_from(state: PodState, at: u64) -> PodState {
    after(state, vec![answered(at, true)])
}

const STILL_LISTED: &str = "done StillListed { pod: \"p1\", rate: Some(0.5) }";

#[test]
#[allow(clippy::too_many_lines, reason = "one table")]
fn gone_means_not_listed_and_404() {
    let vanished = || {
        after(
            running(),
            vec![Event::Polled {
                at: s(500),
                pod: Ok(None),
            }],
        )
    };
    check(vec![
        Row {
            name: "204 is not proof: check",
            state: deleting(),
            event: answered(2001, true),
            effects: &["check gone p1"],
            phase: Phase::ConfirmingGone,
        },
        Row {
            name: "a failed delete waits its backoff",
            state: deleting(),
            event: answered(2001, false),
            effects: &["wait 1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "the backoff is over: delete again",
            state: after(deleting(), vec![answered(2001, false)]),
            event: Event::Tick { at: s(2002) },
            effects: &["delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "not listed and 404: gone, the secret with it (POD-31)",
            state: confirming(),
            event: seen(2003, false, false),
            effects: &["notice gone p1 Client", "record", "delete secret", "done"],
            phase: Phase::Gone,
        },
        Row {
            name: "still listed before the next delete: check again",
            state: confirming(),
            event: seen(2001, true, false),
            effects: &["wait 1"],
            phase: Phase::ConfirmingGone,
        },
        Row {
            name: "GET still finds it: check again",
            state: confirming(),
            event: seen(2001, false, true),
            effects: &["wait 1"],
            phase: Phase::ConfirmingGone,
        },
        Row {
            name: "a failed check: check again",
            state: confirming(),
            event: Event::GoneChecked {
                at: s(2001),
                seen: Err("timeout".into()),
            },
            effects: &["wait 1"],
            phase: Phase::ConfirmingGone,
        },
        Row {
            name: "the pause is over: check",
            state: confirming(),
            event: Event::Tick { at: s(2002) },
            effects: &["check gone p1"],
            phase: Phase::ConfirmingGone,
        },
        Row {
            name: "still listed at the backoff: the delete is sent again",
            state: confirming(),
            event: seen(2002, true, true),
            effects: &["notice still listed p1", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "still listed past the patience: lingering, reported",
            state: confirming(),
            event: seen(2600, true, true),
            effects: &["notice still listed p1", "record", STILL_LISTED],
            phase: Phase::Lingering,
        },
        Row {
            name: "deletes failing past the patience: lingering",
            state: deleting(),
            event: answered(2600, false),
            effects: &["record", STILL_LISTED],
            phase: Phase::Lingering,
        },
        Row {
            name: "a pod its watchdog deleted is confirmed gone",
            state: vanished(),
            event: seen(501, false, false),
            effects: &[
                "notice gone p1 Watchdog",
                "record",
                "delete secret",
                "done Vanished",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "a vanished pod still listed: deleted by us too",
            state: vanished(),
            event: seen(501, true, false),
            effects: &["delete p1"],
            phase: Phase::Deleting,
        },
    ]);
}

#[test]
fn a_pod_its_watchdog_deleted_under_a_rule_fails_its_run_naming_the_rule() {
    let vanished_at = |state: PodState, at: u64| {
        after(
            state,
            vec![Event::Polled {
                at: s(at),
                pod: Ok(None),
            }],
        )
    };
    let held = after(
        running(),
        vec![
            Event::Progress { at: s(8900) },
            Event::LeaseWritten {
                at: s(8900),
                result: Ok(()),
            },
        ],
    );
    check(vec![
        Row {
            name: "gone past max_hours with no fresh lease: the deadline (POD-37)",
            state: vanished_at(running(), 9000),
            event: seen(9001, false, false),
            effects: &[
                "notice gone p1 Watchdog",
                "record",
                "delete secret",
                "done DeadlineReached",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "gone past max_hours while the lease held: no rule, it vanished",
            state: vanished_at(held, 9000),
            event: seen(9001, false, false),
            effects: &[
                "notice gone p1 Watchdog",
                "record",
                "delete secret",
                "done Vanished",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "gone past the cost cap: the cap (POD-41)",
            state: vanished_at(
                running_under(&Rules::new(&target(4.0, Some(1.0)), false, TimeScale::REAL)),
                7300,
            ),
            event: seen(7301, false, false),
            effects: &[
                "notice gone p1 Watchdog",
                "record",
                "delete secret",
                "done CostCapReached",
            ],
            phase: Phase::Gone,
        },
    ]);
}

#[test]
fn a_pod_that_cannot_become_ready_gives_way_to_the_next_type() {
    let not_ready = after(booting(), vec![Event::Tick { at: s(900) }]);
    let died_last = after(
        creating_last(),
        vec![
            Event::Created {
                at: s(2),
                pod: view("p1", PodStatus::Starting, false),
            },
            Event::Polled {
                at: s(10),
                pod: Ok(Some(view("p1", PodStatus::Error, false))),
            },
        ],
    );
    let interrupted = after(booting(), vec![Event::Interrupted { at: s(20) }]);
    check(vec![
        Row {
            name: "gone after the readiness bound: the next type, the secret kept",
            state: gone_from(not_ready, 901),
            event: seen(902, false, false),
            effects: &[
                "notice gone p1 Client",
                "record",
                "notice creating B",
                "record",
                "create B",
            ],
            phase: Phase::Creating,
        },
        Row {
            name: "gone after dying on the last type: every reason",
            state: gone_from(died_last, 11),
            event: seen(12, false, false),
            effects: &[
                "notice gone p1 Client",
                "record",
                "record",
                "delete secret",
                "done NoCapacity([(\"A\", \"no longer any instances available\"), (\"B\", \"it was Error while booting\")])",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "gone after Ctrl-C while booting: interrupted",
            state: gone_from(interrupted, 21),
            event: seen(22, false, false),
            effects: &[
                "notice gone p1 Client",
                "record",
                "delete secret",
                "done Interrupted",
            ],
            phase: Phase::Gone,
        },
    ]);
}

#[test]
fn each_deletion_cause_gives_its_run_outcome() {
    let cases = [
        (DeleteCause::Retrieved, "done"),
        (DeleteCause::Interrupted, "done Interrupted"),
        (DeleteCause::OtherHostKey, "done OtherHostKey(\"the key\")"),
        (DeleteCause::CapNotTransmitted, "done CapNotTransmitted"),
        (DeleteCause::Deadline, "done DeadlineReached"),
        (DeleteCause::CostCap, "done CostCapReached"),
        (DeleteCause::BootGrace, "done BootGrace"),
        (DeleteCause::RetrieveGrace, "done RetrieveGrace"),
        (DeleteCause::StartFailed, "done StartFailed(\"the key\")"),
        (
            DeleteCause::ImageUnfit,
            "done ImageUnfit { image: \"img\", missing: [\"sshd\"] }",
        ),
    ];
    for (cause, want) in cases {
        let mut state = running();
        state.why = "the key".into();
        state.unfit = Some(("img".into(), vec!["sshd".into()]));
        let mut fx = Vec::new();
        super::super::delete::start(&mut state, s(500), cause, &mut fx);
        let state = gone_from(state, 501);
        let mut state = state;
        let effects: Vec<String> = handle(&mut state, seen(502, false, false))
            .iter()
            .map(label)
            .collect();
        assert_eq!(effects.last().map(String::as_str), Some(want), "{cause:?}");
        assert!(effects.contains(&"delete secret".to_owned()), "{cause:?}");
        assert_eq!(state.facts.deleted, Some((s(502), Deleter::Client)));
    }
}

#[test]
fn an_image_that_lacks_what_pod_74_requires_ends_the_run_without_another_type() {
    use super::create::unfit;
    const UNFIT: &str =
        "done ImageUnfit { image: \"img\", missing: [\"sshd\", \"axolotl in /venv\"] }";
    const UNFIT_GONE: &[&str] = &["notice gone p1 Client", "record", "delete secret", UNFIT];
    let not_ready = after(booting(), vec![Event::Tick { at: s(900) }]);
    let died = after(
        booting(),
        vec![Event::Polled {
            at: s(10),
            pod: Ok(Some(view("p1", PodStatus::Exited, false))),
        }],
    );
    let interrupted = after(booting(), vec![Event::Interrupted { at: s(20) }]);
    check(vec![
        Row {
            name: "deleted for the image: gone ends the run, the secret deleted",
            state: gone_from(after(booting(), vec![unfit(30)]), 31),
            event: seen(32, false, false),
            effects: UNFIT_GONE,
            phase: Phase::Gone,
        },
        Row {
            name: "told while a pod not ready is deleted: no other type",
            state: not_ready.clone(),
            event: unfit(901),
            effects: &[],
            phase: Phase::Deleting,
        },
        Row {
            name: "... and once it is gone, the run ends naming what the image lacks",
            state: gone_from(after(not_ready, vec![unfit(901)]), 902),
            event: seen(903, false, false),
            effects: UNFIT_GONE,
            phase: Phase::Gone,
        },
        Row {
            name: "told while a dead pod is confirmed gone: no other type",
            state: gone_from(after(died, vec![]), 11),
            event: unfit(12),
            effects: &[],
            phase: Phase::ConfirmingGone,
        },
        Row {
            name: "told while an interrupted pod is deleted: still interrupted",
            state: gone_from(after(interrupted, vec![unfit(21)]), 22),
            event: seen(23, false, false),
            effects: &[
                "notice gone p1 Client",
                "record",
                "delete secret",
                "done Interrupted",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "told once the job runs: too late, nothing",
            state: running(),
            event: unfit(200),
            effects: &[],
            phase: Phase::Running,
        },
    ]);
    let dead_then_unfit = after(
        gone_from(
            after(
                booting(),
                vec![Event::Polled {
                    at: s(10),
                    pod: Ok(None),
                }],
            ),
            11,
        ),
        vec![unfit(12)],
    );
    let mut state = dead_then_unfit;
    let effects: Vec<String> = handle(&mut state, seen(13, false, false))
        .iter()
        .map(label)
        .collect();
    assert_eq!(
        effects.last().map(String::as_str),
        Some(UNFIT),
        "{effects:?}"
    );
    assert!(
        !effects.iter().any(|e| e.starts_with("create")),
        "{effects:?}"
    );
}
