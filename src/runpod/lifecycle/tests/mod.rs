//! Table tests of the pod lifecycle: each row a state, an event, the effects it gives
//! and the phase after it. Together they cover every transition of [`super::handle`].
//! Times are whole seconds on the real scale (1 s = 1 s), so the rules read as the
//! spec writes them: readiness 900 s, boot grace 1800 s, `max_hours = 2` is 7200 s.

mod alive;
mod create;
mod delete;

use std::time::Duration;

use super::*;
use crate::config::{ListOrAuto, RunpodTarget, SshClient};
use crate::env::TimeScale;

/// `n` seconds.
pub(super) fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

pub(crate) fn target(max_hours: f64, cap: Option<f64>) -> RunpodTarget {
    RunpodTarget {
        gpu_types: ListOrAuto::List(vec!["A".into(), "B".into()]),
        min_vram_gb: None,
        max_price_per_hour: None,
        max_hours,
        max_cost_usd: cap,
        gpu_count: 1,
        image: "img".into(),
        venv: "/venv".into(),
        container_disk_gb: 20,
        boot_grace_minutes: 30,
        retrieve_grace_minutes: 60,
        data_center_ids: None,
        network_volume_id: None,
        max_volume_gb: None,
        ssh_client: SshClient::default(),
    }
}

pub(super) fn rules() -> Rules {
    Rules::new(&target(2.0, None), false, TimeScale::REAL)
}

pub(super) fn endpoint() -> PodEndpoint {
    PodEndpoint {
        host: "127.0.0.1".into(),
        port: 2222,
    }
}

/// A view of pod `id`: `status`, rate 0.5, with an SSH endpoint when `ssh`.
pub(crate) fn view(id: &str, status: PodStatus, ssh: bool) -> PodView {
    PodView {
        id: id.into(),
        status,
        cost_per_hour: Some(0.5),
        ssh: ssh.then(endpoint),
        created_at: None,
    }
}

/// `state` after each of `events` (their effects dropped).
pub(super) fn after(mut state: PodState, events: Vec<Event>) -> PodState {
    for event in events {
        let _ = handle(&mut state, event);
    }
    state
}

/// A short name of an effect, for the tables.
pub(super) fn label(effect: &Effect) -> String {
    match effect {
        Effect::Notice(notice) => format!("notice {}", notice_label(notice)),
        Effect::Record => "record".into(),
        Effect::Create(gpu) => format!("create {gpu}"),
        Effect::Search => "search".into(),
        Effect::Reorder => "reorder".into(),
        Effect::Poll => "poll".into(),
        Effect::Handshake(ep) => format!("handshake {}:{}", ep.host, ep.port),
        Effect::WriteCostFiles {
            snapshot_at,
            cost_cap_at,
        } => format!(
            "cost files {} {}",
            snapshot_at.as_secs_f64(),
            cost_cap_at.as_secs_f64()
        ),
        Effect::Ready(_) => "ready".into(),
        Effect::WriteLease => "lease".into(),
        Effect::RequestSnapshot(cause) => format!("request {cause:?}"),
        Effect::MarkRetrieved => "mark retrieved".into(),
        Effect::Delete(pod) => format!("delete {pod}"),
        Effect::CheckGone(pod) => format!("check gone {pod}"),
        Effect::DeleteSecret => "delete secret".into(),
        Effect::Wait(pause) => format!("wait {}", pause.as_secs_f64()),
        Effect::Detach => "detach".into(),
        Effect::Done(None) => "done".into(),
        Effect::Done(Some(failure)) => format!("done {failure:?}"),
    }
}

fn notice_label(notice: &Notice) -> String {
    match notice {
        Notice::Creating { gpu_type } => format!("creating {gpu_type}"),
        Notice::NextType { gpu_type, reason } => format!("next after {gpu_type}: {reason}"),
        Notice::RateLimited(wait) => format!("rate limited {}", wait.as_secs_f64()),
        Notice::Picked { request, choices } => format!("picked {request}: {}", choices.join(",")),
        Notice::Reordered(order) => format!("reordered {}", order.join(",")),
        Notice::OrderKept(why) => format!("order kept: {why}"),
        Notice::Searching(cause) => format!("searching: {cause}"),
        Notice::Created { pod, adopted } => {
            format!("{} {pod}", if *adopted { "adopted" } else { "created" })
        }
        Notice::Strays(pods) => format!("strays {}", pods.join(",")),
        Notice::Ready { pod } => format!("ready {pod}"),
        Notice::CapShort { smallest } => format!("cap short {smallest}"),
        Notice::Snapshot(cause) => format!("snapshot {cause:?}"),
        Notice::Deleting { pod, cause } => format!("deleting {pod} {cause:?}"),
        Notice::StillListed { pod } => format!("still listed {pod}"),
        Notice::Gone { pod, by } => format!("gone {pod} {by:?}"),
        Notice::Kept { pod, rate } => format!("kept {pod} {rate:?}"),
        Notice::RetrieveLater { until } => format!("retrieve until {}", until.as_secs_f64()),
    }
}

/// One row: a name, the state before, the event, the effects' labels, the phase after.
pub(super) struct Row {
    pub name: &'static str,
    pub state: PodState,
    pub event: Event,
    pub effects: &'static [&'static str],
    pub phase: Phase,
}

/// Runs the rows, reporting every row that differs at once.
pub(super) fn check(rows: Vec<Row>) {
    let mut failures = Vec::new();
    for row in rows {
        let mut state = row.state;
        let effects: Vec<String> = handle(&mut state, row.event).iter().map(label).collect();
        let want: Vec<String> = row.effects.iter().map(|e| (*e).to_owned()).collect();
        if effects != want || state.phase != row.phase {
            failures.push(format!(
                "{}:\n  effects {effects:?}\n     want {want:?}\n  phase {:?}, want {:?}",
                row.name, state.phase, row.phase
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// The states the rows start from, each reached through the machine itself.

pub(super) fn idle() -> PodState {
    PodState::new(rules(), vec!["A".into(), "B".into()])
}

pub(super) fn creating() -> PodState {
    after(idle(), vec![Event::Began { at: s(0) }])
}

/// Creating `A` of a `gpu_types = "auto"` walk.
pub(super) fn auto() -> PodState {
    after(
        PodState::new(rules(), vec!["A".into(), "B".into()]).with_reorder(),
        vec![Event::Began { at: s(0) }],
    )
}

/// Creating the last type, `B`, after `A` answered the capacity 400.
pub(super) fn creating_last() -> PodState {
    after(
        creating(),
        vec![Event::CreateFailed {
            at: s(1),
            refusal: Refusal::Capacity("no longer any instances available".into()),
        }],
    )
}

pub(super) fn adopting() -> PodState {
    after(
        creating(),
        vec![Event::CreateFailed {
            at: s(1),
            refusal: Refusal::Ambiguous("500 Internal Server Error".into()),
        }],
    )
}

/// Pod `p1` of type `A`, created at 0 s with no SSH endpoint yet.
pub(super) fn booting_with(state: PodState) -> PodState {
    after(
        state,
        vec![
            Event::Began { at: s(0) },
            Event::Created {
                at: s(0),
                pod: view("p1", PodStatus::Starting, false),
            },
        ],
    )
}

pub(super) fn booting() -> PodState {
    booting_with(idle())
}

/// Booting with `rules`.
pub(super) fn booting_under(rules: &Rules) -> PodState {
    booting_with(PodState::new(*rules, vec!["A".into(), "B".into()]))
}

/// Ready at 60 s under `rules` (its endpoint seen and the pinned key presented).
pub(super) fn ready_under(rules: &Rules) -> PodState {
    after(
        booting_under(rules),
        vec![
            Event::Polled {
                at: s(50),
                pod: Ok(Some(view("p1", PodStatus::Running, true))),
            },
            Event::Handshook {
                at: s(60),
                result: Handshake::Pinned,
            },
            Event::CostFilesWritten {
                at: s(61),
                result: Ok(()),
            },
        ],
    )
}

pub(super) fn ready() -> PodState {
    ready_under(&rules())
}

/// The job started at 100 s under `rules`.
pub(super) fn running_under(rules: &Rules) -> PodState {
    after(ready_under(rules), vec![Event::JobStarted { at: s(100) }])
}

pub(super) fn running() -> PodState {
    running_under(&rules())
}

/// The job ended at 1000 s.
pub(super) fn retrieving() -> PodState {
    after(running(), vec![Event::JobEnded { at: s(1000) }])
}

/// Deleting `p1` for `cause`, the delete sent at 2000 s from a running pod.
pub(super) fn deleting() -> PodState {
    after(
        retrieving(),
        vec![Event::Retrieved {
            at: s(2000),
            result: Ok(()),
        }],
    )
}

/// The delete of the retrieved pod answered 204 at 2001 s.
pub(super) fn confirming() -> PodState {
    after(
        deleting(),
        vec![Event::DeleteAnswered {
            at: s(2001),
            result: Ok(()),
        }],
    )
}

#[test]
fn rules_scale_with_the_test_only_factor() {
    let fast = Rules::new(
        &target(0.5, Some(2.0)),
        false,
        TimeScale::with_second(Duration::from_millis(10)),
    );
    assert_eq!(fast.tick, Duration::from_millis(600));
    assert_eq!(fast.hour, Duration::from_secs(36));
    assert_eq!(fast.deadline, Duration::from_secs(18));
    assert_eq!(fast.ready_timeout, Duration::from_secs(9));
    assert_eq!(fast.boot_grace, Duration::from_secs(18));
    assert_eq!(fast.lease_fresh, Duration::from_secs(9));
    assert_eq!(fast.client_guard, Duration::from_secs(3));
    assert_eq!(fast.delete_backoff, Duration::from_millis(20));
    // Polls keep their floor on a fast scale (`TimeScale::poll`).
    assert_eq!(fast.handshake_retry, crate::env::MIN_SCALED_POLL);
    assert_eq!(fast.poll_interval, crate::env::MIN_SCALED_POLL);
    // At 1 USD/h a 2 USD cap lasts two scaled hours.
    assert_eq!(fast.cap_lasts(2.0, 1.0), Duration::from_secs(72));
    // `--keep-pod` ignores `max_cost_usd` (POD-1).
    let kept = Rules::new(&target(0.5, Some(2.0)), true, TimeScale::REAL);
    assert_eq!(kept.cost_cap_usd, None);
}

#[test]
fn delete_backoff_doubles_up_to_its_bound() {
    let r = rules();
    let waits: Vec<u64> = (1..=7).map(|a| r.backoff(a).as_secs()).collect();
    assert_eq!(waits, [2, 4, 8, 16, 32, 60, 60]);
}

#[test]
fn cost_times_follow_pod_41() {
    let r = Rules::new(&target(2.0, Some(1.0)), false, TimeScale::REAL);
    // 1 USD at 0.5 USD/h lasts 2 h: snapshot at min(0.95 x 7200, 7200 - 900).
    assert_eq!(rules::cost_times(&r, s(10), 0.5), Some((s(6310), s(7210))));
    // 1 USD at 10 USD/h lasts 6 min: 0.95 x 360 s is later than 360 s - 15 min.
    let short = rules::cost_times(&r, s(0), 10.0);
    assert_eq!(short, Some((s(0), s(360))));
    assert_eq!(rules::cost_times(&r, s(0), 0.0), None);
    assert_eq!(rules::cost_times(&r, s(0), f64::NAN), None);
    assert_eq!(rules::cost_times(&rules(), s(0), 0.5), None);
}

#[test]
fn attached_pods_resume_where_pod_json_left_them() {
    let facts = |started: bool| PodFacts {
        pod: Some("p1".into()),
        gpu_type: Some("A".into()),
        rate: Some(0.5),
        created_at: Some(s(10)),
        job_started_at: started.then(|| s(100)),
        ..PodFacts::default()
    };
    let phase =
        |r: Rules, started, ended| PodState::attached(r, facts(started), ended, s(5000)).phase;
    assert_eq!(phase(rules(), true, None), Phase::Running);
    assert_eq!(phase(rules(), true, Some(s(4000))), Phase::Retrieving);
    assert_eq!(phase(rules(), false, None), Phase::Booting);
    let kept = Rules::new(&target(2.0, None), true, TimeScale::REAL);
    assert_eq!(phase(kept, true, None), Phase::Kept);
    // The cost times come back from the recorded rate.
    let capped = Rules::new(&target(2.0, Some(1.0)), false, TimeScale::REAL);
    let state = PodState::attached(capped, facts(true), None, s(5000));
    assert_eq!(state.cost_times(), Some((s(6310), s(7210))));
    assert_eq!(state.deadline(), Some(s(7210)));
    // Without a recorded creation, the attach counts as the creation.
    let unknown = PodFacts {
        created_at: None,
        ..facts(true)
    };
    assert_eq!(
        PodState::attached(rules(), unknown, None, s(5000)).deadline(),
        Some(s(12200))
    );
}

#[test]
fn events_out_of_turn_do_nothing() {
    check(vec![
        Row {
            name: "a tick after the end",
            state: after(
                creating(),
                vec![Event::CreateFailed {
                    at: s(1),
                    refusal: Refusal::NoCredit("no".into()),
                }],
            ),
            event: Event::Tick { at: s(2) },
            effects: &[],
            phase: Phase::Gone,
        },
        Row {
            name: "a create answer while booting",
            state: booting(),
            event: Event::Created {
                at: s(3),
                pod: view("p9", PodStatus::Running, true),
            },
            effects: &[],
            phase: Phase::Booting,
        },
        Row {
            name: "a job end before the job exists",
            state: ready(),
            event: Event::JobEnded { at: s(70) },
            effects: &[],
            phase: Phase::Ready,
        },
        Row {
            name: "a detached pod takes nothing",
            state: after(running(), vec![Event::Interrupted { at: s(200) }]),
            event: Event::Tick { at: s(99_999) },
            effects: &[],
            phase: Phase::Detached,
        },
    ]);
}
