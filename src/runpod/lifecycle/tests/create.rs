//! Rows of creating, adopting, booting and readiness.

use super::*;

/// The bootstrap's word at `at` s that the image lacks sshd and Axolotl (POD-74).
pub(super) fn unfit(at: u64) -> Event {
    Event::ImageUnfit {
        at: s(at),
        image: "img".into(),
        missing: vec!["sshd".into(), "axolotl in /venv".into()],
    }
}

fn refused(refusal: Refusal) -> Event {
    Event::CreateFailed { at: s(1), refusal }
}

fn failed_with(state: PodState, refusal: &Refusal, times: u32) -> PodState {
    after(
        state,
        (0..times).map(|_| refused(refusal.clone())).collect(),
    )
}

#[test]
#[allow(clippy::too_many_lines, reason = "one table")]
fn the_create_retry_table() {
    const NO_CAPACITY: &str = "done NoCapacity([(\"A\", \"no longer any instances available\"), (\"B\", \"access denied\")])";
    check(vec![
        Row {
            name: "the first type is created first, recorded before the call (POD-24)",
            state: idle(),
            event: Event::Began { at: s(0) },
            effects: &["notice creating A", "record", "create A"],
            phase: Phase::Creating,
        },
        Row {
            name: "no type at all",
            state: PodState::new(rules(), Vec::new()),
            event: Event::Began { at: s(0) },
            effects: &["record", "delete secret", "done NoCapacity([])"],
            phase: Phase::Gone,
        },
        Row {
            name: "capacity 400 moves to the next type",
            state: creating(),
            event: refused(Refusal::Capacity(
                "no longer any instances available".into(),
            )),
            effects: &[
                "notice next after A: no longer any instances available",
                "notice creating B",
                "record",
                "create B",
            ],
            phase: Phase::Creating,
        },
        Row {
            name: "auto: a refused type is followed by a fresh catalog read (POD-15)",
            state: auto(),
            event: refused(Refusal::Capacity(
                "no longer any instances available".into(),
            )),
            effects: &[
                "notice next after A: no longer any instances available",
                "reorder",
            ],
            phase: Phase::Creating,
        },
        Row {
            name: "auto: the new order is tried, a type already tried left out",
            state: after(
                auto(),
                vec![refused(Refusal::Capacity(
                    "no longer any instances available".into(),
                ))],
            ),
            event: Event::Reordered {
                at: s(2),
                order: Ok(vec!["C".into(), "A".into(), "B".into()]),
            },
            effects: &[
                "notice reordered C,B",
                "notice creating C",
                "record",
                "create C",
            ],
            phase: Phase::Creating,
        },
        Row {
            name: "auto: a failed re-read keeps the remaining order",
            state: after(
                auto(),
                vec![refused(Refusal::Forbidden("access denied".into()))],
            ),
            event: Event::Reordered {
                at: s(2),
                order: Err("nothing left in stock".into()),
            },
            effects: &[
                "notice order kept: nothing left in stock",
                "notice creating B",
                "record",
                "create B",
            ],
            phase: Phase::Creating,
        },
        Row {
            name: "auto: the last type refused ends without a re-read",
            state: after(
                auto(),
                vec![
                    refused(Refusal::Capacity(
                        "no longer any instances available".into(),
                    )),
                    Event::Reordered {
                        at: s(2),
                        order: Ok(vec!["B".into()]),
                    },
                ],
            ),
            event: refused(Refusal::Forbidden("access denied".into())),
            effects: &["record", "delete secret", NO_CAPACITY],
            phase: Phase::Gone,
        },
        Row {
            name: "403 on the last type ends with every reason",
            state: creating_last(),
            event: refused(Refusal::Forbidden("access denied".into())),
            effects: &["record", "delete secret", NO_CAPACITY],
            phase: Phase::Gone,
        },
        Row {
            name: "another 400 stops at once, no pod",
            state: creating(),
            event: refused(Refusal::Rejected {
                status: Some(400),
                reason: "disk too small".into(),
            }),
            effects: &[
                "record",
                "delete secret",
                "done Refused { status: Some(400), detail: \"disk too small\" }",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "422 is never retried",
            state: creating(),
            event: refused(Refusal::Invalid("additional properties 'bogus'".into())),
            effects: &[
                "record",
                "delete secret",
                "done Refused { status: Some(422), detail: \"additional properties 'bogus'\" }",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "402 stops",
            state: creating_last(),
            event: refused(Refusal::NoCredit("insufficient balance".into())),
            effects: &[
                "record",
                "delete secret",
                "done Refused { status: Some(402), detail: \"insufficient balance\" }",
            ],
            phase: Phase::Gone,
        },
        Row {
            name: "429 waits out Retry-After",
            state: creating(),
            event: refused(Refusal::RateLimited(Some(s(7)))),
            effects: &["notice rate limited 7", "record", "wait 7"],
            phase: Phase::Creating,
        },
        Row {
            name: "429 without Retry-After waits the default",
            state: creating(),
            event: refused(Refusal::RateLimited(None)),
            effects: &["notice rate limited 10", "record", "wait 10"],
            phase: Phase::Creating,
        },
        Row {
            name: "after the wait the same type is sent again",
            state: failed_with(creating(), &Refusal::RateLimited(None), 1),
            event: Event::Tick { at: s(11) },
            effects: &["notice creating A", "record", "create A"],
            phase: Phase::Creating,
        },
        Row {
            name: "429 past the limit stops",
            state: failed_with(creating(), &Refusal::RateLimited(None), 10),
            event: refused(Refusal::RateLimited(None)),
            effects: &["record", "delete secret", "done RateLimited"],
            phase: Phase::Gone,
        },
        Row {
            name: "Ctrl-C while waiting out a 429: no pod exists",
            state: failed_with(creating(), &Refusal::RateLimited(None), 1),
            event: Event::Interrupted { at: s(3) },
            effects: &["record", "delete secret", "done Interrupted"],
            phase: Phase::Gone,
        },
        Row {
            name: "5xx or timeout: search before any new create",
            state: creating(),
            event: refused(Refusal::Ambiguous("timed out".into())),
            effects: &["notice searching: timed out", "record", "search"],
            phase: Phase::Adopting,
        },
        Row {
            name: "201 without an SSH endpoint yet",
            state: creating(),
            event: Event::Created {
                at: s(2),
                pod: view("p1", PodStatus::Provisioning, false),
            },
            effects: &["record", "notice created p1", "wait 5"],
            phase: Phase::Booting,
        },
        Row {
            name: "201 with its SSH endpoint: the handshake at once",
            state: creating(),
            event: Event::Created {
                at: s(2),
                pod: view("p1", PodStatus::Running, true),
            },
            effects: &["record", "notice created p1", "handshake 127.0.0.1:2222"],
            phase: Phase::Booting,
        },
    ]);
}

#[test]
#[allow(clippy::too_many_lines, reason = "one table")]
fn an_ambiguous_create_adopts_and_never_makes_a_second_pod() {
    let interrupted = || after(adopting(), vec![Event::Interrupted { at: s(2) }]);
    let no_pod = |at| Event::Searched {
        at: s(at),
        found: Ok(Vec::new()),
    };
    let search_failed = || Event::Searched {
        at: s(3),
        found: Err("connection refused".into()),
    };
    check(vec![
        Row {
            name: "none found: the same create may go again",
            state: adopting(),
            event: no_pod(2),
            effects: &["notice creating A", "record", "create A"],
            phase: Phase::Creating,
        },
        Row {
            name: "found: the oldest is adopted, the others reported",
            state: adopting(),
            event: Event::Searched {
                at: s(2),
                found: Ok(vec![
                    view("p1", PodStatus::Running, false),
                    view("p2", PodStatus::Running, false),
                ]),
            },
            effects: &["notice strays p2", "record", "notice adopted p1", "wait 5"],
            phase: Phase::Booting,
        },
        Row {
            name: "a failed search waits and searches again",
            state: adopting(),
            event: search_failed(),
            effects: &["wait 5"],
            phase: Phase::Adopting,
        },
        Row {
            name: "the pause after a failed search is over",
            state: after(adopting(), vec![search_failed()]),
            event: Event::Tick { at: s(8) },
            effects: &["search"],
            phase: Phase::Adopting,
        },
        Row {
            name: "searches failing past the limit stop; the secret stays for the sweep",
            state: after(adopting(), vec![search_failed(), search_failed()]),
            event: search_failed(),
            effects: &["record", "done Ambiguous(\"connection refused\")"],
            phase: Phase::Gone,
        },
        Row {
            name: "ambiguous outcomes past the limit with nothing found stop",
            state: after(
                adopting(),
                vec![
                    no_pod(2),
                    refused(Refusal::Ambiguous("502".into())),
                    no_pod(3),
                    refused(Refusal::Ambiguous("503".into())),
                ],
            ),
            event: no_pod(4),
            effects: &["record", "done Ambiguous(\"503\")"],
            phase: Phase::Gone,
        },
        Row {
            name: "Ctrl-C during the search: nothing found ends it",
            state: interrupted(),
            event: no_pod(3),
            effects: &["record", "done Interrupted"],
            phase: Phase::Gone,
        },
        Row {
            name: "Ctrl-C during the search: a pod found is deleted",
            state: interrupted(),
            event: Event::Searched {
                at: s(3),
                found: Ok(vec![view("p1", PodStatus::Running, true)]),
            },
            effects: &[
                "record",
                "notice adopted p1",
                "notice deleting p1 Interrupted",
                "record",
                "delete p1",
            ],
            phase: Phase::Deleting,
        },
    ]);
}

#[test]
#[allow(clippy::too_many_lines, reason = "one table")]
fn readiness_needs_the_endpoint_and_the_pinned_host_key() {
    let capped = |cap| Rules::new(&target(2.0, Some(cap)), false, TimeScale::REAL);
    let short = Rules::new(&target(0.1, None), false, TimeScale::REAL);
    let refused = |at: u64| Event::Handshook {
        at: s(at),
        result: Handshake::Failed("connection refused".into()),
    };
    let seen = after(
        booting(),
        vec![Event::Polled {
            at: s(50),
            pod: Ok(Some(view("p1", PodStatus::Running, true))),
        }],
    );
    let seen_under = |rules: Rules| {
        after(
            booting_under(&rules),
            vec![Event::Polled {
                at: s(50),
                pod: Ok(Some(view("p1", PodStatus::Running, true))),
            }],
        )
    };
    let unrated = || {
        let mut state = booting_under(&capped(1.0));
        let mut pod = view("p1", PodStatus::Running, true);
        pod.cost_per_hour = None;
        state.facts.rate = None;
        after(
            state,
            vec![Event::Polled {
                at: s(50),
                pod: Ok(Some(pod)),
            }],
        )
    };
    let pinned = Event::Handshook {
        at: s(60),
        result: Handshake::Pinned,
    };
    let transmitting = || after(seen_under(capped(1.0)), vec![pinned.clone()]);
    check(vec![
        Row {
            name: "RUNNING without ssh.direct is not ready",
            state: booting(),
            event: Event::Polled {
                at: s(10),
                pod: Ok(Some(view("p1", PodStatus::Running, false))),
            },
            effects: &["wait 5"],
            phase: Phase::Booting,
        },
        Row {
            name: "the endpoint appears: handshake",
            state: booting(),
            event: Event::Polled {
                at: s(50),
                pod: Ok(Some(view("p1", PodStatus::Running, true))),
            },
            effects: &["handshake 127.0.0.1:2222"],
            phase: Phase::Booting,
        },
        Row {
            name: "a pod in ERROR is deleted, then the next type",
            state: booting(),
            event: Event::Polled {
                at: s(10),
                pod: Ok(Some(view("p1", PodStatus::Error, false))),
            },
            effects: &["notice deleting p1 Died", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "a pod that vanished while booting",
            state: booting(),
            event: Event::Polled {
                at: s(10),
                pod: Ok(None),
            },
            effects: &["notice deleting p1 Died", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "the bootstrap says the image lacks what POD-74 requires: deleted, no next type",
            state: booting(),
            event: unfit(30),
            effects: &["notice deleting p1 ImageUnfit", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "the same word once the endpoint is known and the handshake fails",
            state: after(seen.clone(), vec![refused(51)]),
            event: unfit(52),
            effects: &["notice deleting p1 ImageUnfit", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "a failed poll waits",
            state: booting(),
            event: Event::Polled {
                at: s(10),
                pod: Err("503".into()),
            },
            effects: &["wait 5"],
            phase: Phase::Booting,
        },
        Row {
            name: "the pause is over: poll",
            state: booting(),
            event: Event::Tick { at: s(899) },
            effects: &["poll"],
            phase: Phase::Booting,
        },
        Row {
            name: "not ready 15 minutes after creation (POD-28)",
            state: booting(),
            event: Event::Tick { at: s(900) },
            effects: &["notice deleting p1 NotReady", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "a deadline shorter than readiness: the client guard",
            state: booting_under(&short),
            event: Event::Tick { at: s(660) },
            effects: &["notice deleting p1 Deadline", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "the pinned host key: ready",
            state: seen.clone(),
            event: pinned.clone(),
            effects: &["notice ready p1", "record", "ready"],
            phase: Phase::Ready,
        },
        Row {
            name: "another host key is refused and the pod deleted",
            state: seen.clone(),
            event: Event::Handshook {
                at: s(60),
                result: Handshake::OtherKey("SHA256:other".into()),
            },
            effects: &["notice deleting p1 OtherHostKey", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "after a failed handshake the next one comes without a poll",
            state: after(seen.clone(), vec![refused(51)]),
            event: Event::Tick { at: s(52) },
            effects: &["handshake 127.0.0.1:2222"],
            phase: Phase::Booting,
        },
        Row {
            name: "the API is polled again once the poll interval passed",
            state: after(seen.clone(), vec![refused(51)]),
            event: Event::Tick { at: s(55) },
            effects: &["poll"],
            phase: Phase::Booting,
        },
        Row {
            name: "no handshake yet: try again within a second",
            state: seen,
            event: Event::Handshook {
                at: s(60),
                result: Handshake::Failed("connection refused".into()),
            },
            effects: &["wait 0.25"],
            phase: Phase::Booting,
        },
        Row {
            name: "with a cap the cost files go first (POD-41)",
            state: seen_under(capped(1.0)),
            event: pinned.clone(),
            effects: &["notice ready p1", "cost files 6300 7200"],
            phase: Phase::Transmitting,
        },
        Row {
            name: "a cap that buys less than 30 minutes warns (POD-23)",
            state: seen_under(capped(0.2)),
            event: pinned.clone(),
            effects: &[
                "notice ready p1",
                "notice cap short 0.25",
                "cost files 540 1440",
            ],
            phase: Phase::Transmitting,
        },
        Row {
            name: "a cap and no rate: deleted (POD-42)",
            state: unrated(),
            event: pinned.clone(),
            effects: &[
                "notice ready p1",
                "notice deleting p1 CapNotTransmitted",
                "record",
                "delete p1",
            ],
            phase: Phase::Deleting,
        },
        Row {
            name: "cost files written: ready",
            state: transmitting(),
            event: Event::CostFilesWritten {
                at: s(62),
                result: Ok(()),
            },
            effects: &["record", "ready"],
            phase: Phase::Ready,
        },
        Row {
            name: "cost files not written: deleted (POD-42)",
            state: transmitting(),
            event: Event::CostFilesWritten {
                at: s(62),
                result: Err("disk full".into()),
            },
            effects: &[
                "notice deleting p1 CapNotTransmitted",
                "record",
                "delete p1",
            ],
            phase: Phase::Deleting,
        },
        Row {
            name: "Ctrl-C while transmitting deletes the pod",
            state: transmitting(),
            event: Event::Interrupted { at: s(62) },
            effects: &["notice deleting p1 Interrupted", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "Ctrl-C while booting deletes the pod (POD-53)",
            state: booting(),
            event: Event::Interrupted { at: s(20) },
            effects: &["notice deleting p1 Interrupted", "record", "delete p1"],
            phase: Phase::Deleting,
        },
    ]);
}
