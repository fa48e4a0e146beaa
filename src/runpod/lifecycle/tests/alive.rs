//! Rows of a living pod: the job's start, the lease, the deadline and cost snapshots,
//! the client guard, the graces, `--keep-pod`, retrieval and Ctrl-C.

use super::*;

fn tick(at: u64) -> Event {
    Event::Tick { at: s(at) }
}

fn kept() -> PodState {
    let rules = Rules::new(&target(2.0, None), true, TimeScale::REAL);
    running_under(&rules)
}

fn capped() -> Rules {
    Rules::new(&target(4.0, Some(1.0)), false, TimeScale::REAL)
}

/// Running, with the deadline snapshot requested at 6300 s.
fn snapshotting() -> PodState {
    after(running(), vec![tick(6300)])
}

/// Running with a lease written at 7000 s that was not renewed: the deadline snapshot
/// comes late, at 7950 s.
fn late_snapshotting() -> PodState {
    after(
        running(),
        vec![
            Event::LeaseWritten {
                at: s(7000),
                result: Ok(()),
            },
            tick(7950),
        ],
    )
}

#[test]
fn the_job_starts_and_ready_pods_keep_their_bounds() {
    let short = Rules::new(&target(0.1, None), false, TimeScale::REAL);
    check(vec![
        Row {
            name: "the job started: the lease at once",
            state: ready(),
            event: Event::JobStarted { at: s(100) },
            effects: &["record", "lease", "wait 60"],
            phase: Phase::Running,
        },
        Row {
            name: "--keep-pod: kept once the job exists (POD-61)",
            state: ready_under(&Rules::new(&target(2.0, None), true, TimeScale::REAL)),
            event: Event::JobStarted { at: s(100) },
            effects: &["record", "notice kept p1 Some(0.5)"],
            phase: Phase::Kept,
        },
        Row {
            name: "the upload or start failed: deleted",
            state: ready(),
            event: Event::StartFailed {
                at: s(90),
                cause: "upload failed".into(),
            },
            effects: &["notice deleting p1 StartFailed", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "Ctrl-C before the job exists deletes the pod (POD-53)",
            state: ready(),
            event: Event::Interrupted { at: s(90) },
            effects: &["notice deleting p1 Interrupted", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "within the boot grace nothing happens",
            state: ready(),
            event: tick(2099),
            effects: &[],
            phase: Phase::Ready,
        },
        Row {
            name: "no job past the boot grace and the guard (POD-33)",
            state: ready(),
            event: tick(2100),
            effects: &["notice deleting p1 BootGrace", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "no job past a deadline shorter than the boot grace",
            state: ready_under(&short),
            event: tick(660),
            effects: &["notice deleting p1 Deadline", "record", "delete p1"],
            phase: Phase::Deleting,
        },
    ]);
}

#[test]
#[allow(clippy::too_many_lines, reason = "one table")]
fn the_lease_postpones_the_deadline_only_while_the_job_progresses() {
    let holding = || {
        after(
            running(),
            vec![
                Event::Progress { at: s(7000) },
                Event::LeaseWritten {
                    at: s(7000),
                    result: Ok(()),
                },
            ],
        )
    };
    check(vec![
        Row {
            name: "a metric line is progress",
            state: running(),
            event: Event::Progress { at: s(200) },
            effects: &[],
            phase: Phase::Running,
        },
        Row {
            name: "a lease written is recorded for the project's other processes",
            state: running(),
            event: Event::LeaseWritten {
                at: s(101),
                result: Ok(()),
            },
            effects: &["record"],
            phase: Phase::Running,
        },
        Row {
            name: "a lease that failed to write holds nothing",
            state: running(),
            event: Event::LeaseWritten {
                at: s(101),
                result: Err("lost".into()),
            },
            effects: &[],
            phase: Phase::Running,
        },
        Row {
            name: "the lease is renewed every 5 minutes while the job progresses",
            state: running(),
            event: tick(400),
            effects: &["lease", "wait 60"],
            phase: Phase::Running,
        },
        Row {
            name: "30 minutes without a metric line: no renewal",
            state: running(),
            event: tick(1900),
            effects: &["wait 60"],
            phase: Phase::Running,
        },
        Row {
            name: "a stall the follower declared: no renewal, whatever on_stall says",
            state: after(running(), vec![Event::Stalled { at: s(300) }]),
            event: tick(400),
            effects: &["wait 60"],
            phase: Phase::Running,
        },
        Row {
            name: "progress after the stall: renewed again",
            state: after(
                running(),
                vec![
                    Event::Stalled { at: s(300) },
                    Event::Progress { at: s(390) },
                ],
            ),
            event: tick(400),
            effects: &["lease", "wait 60"],
            phase: Phase::Running,
        },
        Row {
            name: "a fresh lease past the deadline: no snapshot, no deletion",
            state: holding(),
            event: tick(7300),
            effects: &["lease", "wait 60"],
            phase: Phase::Running,
        },
        Row {
            name: "just before the snapshot lead: wait until it",
            state: running(),
            event: tick(6299),
            effects: &["wait 1"],
            phase: Phase::Running,
        },
        Row {
            name: "15 minutes before the deadline, no lease: deadline snapshot (POD-40)",
            state: running(),
            event: tick(6300),
            effects: &[
                "notice snapshot Deadline",
                "record",
                "request Deadline",
                "wait 60",
            ],
            phase: Phase::Snapshotting,
        },
        Row {
            name: "the client guard waits 5 minutes past the watchdog's deletion",
            state: snapshotting(),
            event: tick(7499),
            effects: &["wait 1"],
            phase: Phase::Snapshotting,
        },
        Row {
            name: "the client guard deletes (POD-36)",
            state: snapshotting(),
            event: tick(7500),
            effects: &["notice deleting p1 Deadline", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "a lease expired after the deadline: a late snapshot",
            state: after(
                running(),
                vec![Event::LeaseWritten {
                    at: s(7000),
                    result: Ok(()),
                }],
            ),
            event: tick(7950),
            effects: &[
                "notice snapshot Deadline",
                "record",
                "request Deadline",
                "wait 60",
            ],
            phase: Phase::Snapshotting,
        },
        Row {
            name: "a late snapshot has at most 15 minutes past the deadline",
            state: late_snapshotting(),
            event: tick(8399),
            effects: &["wait 1"],
            phase: Phase::Snapshotting,
        },
        Row {
            name: "a late snapshot's guard deletes",
            state: late_snapshotting(),
            event: tick(8400),
            effects: &["notice deleting p1 Deadline", "record", "delete p1"],
            phase: Phase::Deleting,
        },
    ]);
}

#[test]
fn the_cost_cap_snapshots_then_deletes_whatever_happens() {
    let capped_running = || running_under(&capped());
    check(vec![
        Row {
            name: "the cost snapshot at snapshot_at (POD-41)",
            state: capped_running(),
            event: tick(6300),
            effects: &["notice snapshot Cost", "record", "request Cost", "wait 60"],
            phase: Phase::Snapshotting,
        },
        Row {
            name: "the cap deletes even a held pod",
            state: after(
                capped_running(),
                vec![
                    Event::Progress { at: s(7100) },
                    Event::LeaseWritten {
                        at: s(7100),
                        result: Ok(()),
                    },
                ],
            ),
            event: tick(7200),
            effects: &["notice deleting p1 CostCap", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "the cap deletes while retrieving",
            state: after(capped_running(), vec![Event::JobEnded { at: s(7000) }]),
            event: tick(7200),
            effects: &["notice deleting p1 CostCap", "record", "delete p1"],
            phase: Phase::Deleting,
        },
    ]);
}

#[test]
#[allow(clippy::too_many_lines, reason = "one table")]
fn a_running_pod_is_watched_collected_and_left_on_ctrl_c() {
    check(vec![
        Row {
            name: "a poll updates nothing the rules need",
            state: running(),
            event: Event::Polled {
                at: s(500),
                pod: Ok(Some(view("p1", PodStatus::Running, true))),
            },
            effects: &[],
            phase: Phase::Running,
        },
        Row {
            name: "a failed poll is no news",
            state: running(),
            event: Event::Polled {
                at: s(500),
                pod: Err("timeout".into()),
            },
            effects: &[],
            phase: Phase::Running,
        },
        Row {
            name: "the pod vanished: confirm it gone",
            state: running(),
            event: Event::Polled {
                at: s(500),
                pod: Ok(None),
            },
            effects: &["check gone p1"],
            phase: Phase::ConfirmingGone,
        },
        Row {
            name: "the job ended: retrieve",
            state: running(),
            event: Event::JobEnded { at: s(1000) },
            effects: &["record"],
            phase: Phase::Retrieving,
        },
        Row {
            name: "the snapshot's job ended",
            state: snapshotting(),
            event: Event::JobEnded { at: s(6500) },
            effects: &["record"],
            phase: Phase::Retrieving,
        },
        Row {
            name: "Ctrl-C once the job runs only stops following (POD-53)",
            state: running(),
            event: Event::Interrupted { at: s(500) },
            effects: &["record", "detach"],
            phase: Phase::Detached,
        },
        Row {
            name: "retrieved and verified: marked, then deleted (POD-50)",
            state: retrieving(),
            event: Event::Retrieved {
                at: s(2000),
                result: Ok(()),
            },
            effects: &[
                "mark retrieved",
                "notice deleting p1 Retrieved",
                "record",
                "delete p1",
            ],
            phase: Phase::Deleting,
        },
        Row {
            name: "a failed retrieval keeps the pod for the retrieve grace",
            state: retrieving(),
            event: Event::Retrieved {
                at: s(2000),
                result: Err("sha256 mismatch".into()),
            },
            effects: &["notice retrieve until 4600", "record", "detach"],
            phase: Phase::Detached,
        },
        Row {
            name: "after a deadline snapshot, at most the grace past the deadline (POD-44)",
            state: after(snapshotting(), vec![Event::JobEnded { at: s(7400) }]),
            event: Event::Retrieved {
                at: s(7450),
                result: Err("checkpoint-9 lacks optimizer.pt".into()),
            },
            effects: &["notice retrieve until 10800", "record", "detach"],
            phase: Phase::Detached,
        },
        Row {
            name: "within the retrieve grace and guard: wait",
            state: retrieving(),
            event: tick(4899),
            effects: &["wait 1"],
            phase: Phase::Retrieving,
        },
        Row {
            name: "past the retrieve grace and guard: deleted",
            state: retrieving(),
            event: tick(4900),
            effects: &["notice deleting p1 RetrieveGrace", "record", "delete p1"],
            phase: Phase::Deleting,
        },
        Row {
            name: "Ctrl-C while retrieving: detach",
            state: retrieving(),
            event: Event::Interrupted { at: s(1500) },
            effects: &["record", "detach"],
            phase: Phase::Detached,
        },
    ]);
}

#[test]
fn a_kept_pod_outlives_every_rule() {
    check(vec![
        Row {
            name: "no rule removes a kept pod",
            state: kept(),
            event: tick(99_999),
            effects: &[],
            phase: Phase::Kept,
        },
        Row {
            name: "its job ends",
            state: kept(),
            event: Event::JobEnded { at: s(1000) },
            effects: &[],
            phase: Phase::Kept,
        },
        Row {
            name: "retrieved: done, the pod stays",
            state: kept(),
            event: Event::Retrieved {
                at: s(2000),
                result: Ok(()),
            },
            effects: &["record", "done"],
            phase: Phase::Kept,
        },
        Row {
            name: "Ctrl-C: detach",
            state: kept(),
            event: Event::Interrupted { at: s(2000) },
            effects: &["detach"],
            phase: Phase::Kept,
        },
    ]);
}
