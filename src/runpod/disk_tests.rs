//! Table tests of the disk rules (POD-45..POD-47).

use super::*;

const S: Duration = Duration::from_secs(1);

fn container() -> DiskState {
    DiskState::new(DiskRules::new(false, None, TimeScale::REAL))
}

fn volume(max: Option<u32>) -> DiskState {
    DiskState::new(DiskRules::new(true, max, TimeScale::REAL))
}

/// Bytes for `percent`% of `total`.
fn pct(total: u64, percent: u64) -> u64 {
    total / 100 * percent
}

const DISK: u64 = 100 * GB;

fn sample(state: &mut DiskState, percent: u64, at: u64) -> Vec<DiskEffect> {
    handle(
        state,
        DiskEvent::Container {
            used: pct(DISK, percent),
            total: DISK,
        },
        Duration::from_secs(at),
    )
}

fn levels(fx: &[DiskEffect]) -> Vec<u8> {
    fx.iter()
        .filter_map(|e| match e {
            DiskEffect::Warn { level, .. } => Some(*level),
            _ => None,
        })
        .collect()
}

fn snapshots(fx: &[DiskEffect]) -> Vec<Full> {
    fx.iter()
        .filter_map(|e| match e {
            DiskEffect::Snapshot { why, .. } => Some(why.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn warnings_come_at_85_90_95_and_100_percent_each_once() {
    // (percent used, the warning levels of that sample)
    let table: [(u64, &[u8]); 9] = [
        (50, &[]),
        (85, &[85]),
        (86, &[]),
        (85, &[]),
        (90, &[90]),
        (91, &[]),
        (95, &[95]),
        (100, &[100]),
        (100, &[]),
    ];
    let mut state = container();
    for (at, (percent, want)) in table.iter().enumerate() {
        let fx = sample(&mut state, *percent, at as u64);
        assert_eq!(levels(&fx), *want, "at {percent}%");
    }
}

#[test]
fn a_jump_past_several_levels_warns_the_highest_once() {
    let mut state = container();
    assert_eq!(levels(&sample(&mut state, 96, 0)), [95]);
    assert_eq!(levels(&sample(&mut state, 90, 1)), Vec::<u8>::new());
    assert_eq!(levels(&sample(&mut state, 100, 2)), [100]);
}

#[test]
fn the_container_disk_snapshots_at_92_percent_once() {
    let mut state = container();
    assert_eq!(snapshots(&sample(&mut state, 91, 0)), []);
    let fx = sample(&mut state, 92, 1);
    assert!(
        matches!(snapshots(&fx)[..], [Full::Percent { percent }] if percent >= 92.0),
        "{fx:?}"
    );
    assert!(state.snapshot_requested());
    assert_eq!(snapshots(&sample(&mut state, 97, 2)), []);
    assert!(
        !fx.iter().any(|e| matches!(e, DiskEffect::Grow { .. })),
        "a container disk never grows"
    );
}

#[test]
fn free_space_below_one_and_a_half_checkpoints_snapshots() {
    // (free GB, checkpoint GB, a snapshot)
    let table = [
        (20, 10, false),
        (15, 10, false),
        (14, 10, true),
        (30, 21, true),
    ];
    for (free, checkpoint, want) in table {
        let mut state = container();
        let _ = handle(
            &mut state,
            DiskEvent::Checkpoint {
                bytes: checkpoint * GB,
            },
            Duration::ZERO,
        );
        let fx = sample(&mut state, 100 - free, 1);
        let got = snapshots(&fx);
        assert_eq!(
            !got.is_empty(),
            want,
            "free {free} GB, checkpoint {checkpoint} GB"
        );
        if want {
            assert_eq!(
                got,
                [Full::Checkpoint {
                    free: free * GB,
                    checkpoint: checkpoint * GB
                }]
            );
        }
    }
}

#[test]
fn a_grow_asks_for_half_again_or_50_gb_more_capped_at_the_maximum() {
    // (size, max_volume_gb, the size asked for)
    let table = [
        (100, 1000, 150),
        (50, 1000, 100),
        (10, 1000, 60),
        (101, 1000, 152),
        (200, 250, 250),
        (100, 120, 120),
    ];
    for (gb, max, want) in table {
        assert_eq!(DiskState::grown(gb, max), want, "{gb} GB up to {max}");
    }
}

fn volume_event(state: &mut DiskState, event: DiskEvent, at: u64) -> Vec<DiskEffect> {
    handle(state, event, Duration::from_secs(at))
}

/// `percent`% of the usable 94% of a `gb` volume.
fn du(gb: u32, percent: u64) -> DiskEvent {
    DiskEvent::VolumeUsed {
        used: pct(volume_usable(gb), percent),
    }
}

#[test]
fn a_network_volume_counts_94_percent_of_its_size_and_ignores_the_container() {
    let mut state = volume(None);
    assert_eq!(
        volume_event(&mut state, DiskEvent::VolumeSize { gb: 100 }, 0),
        [DiskEffect::WriteVolumeGb(100)]
    );
    assert_eq!(state.usable(), Some(94 * GB));
    // The container disk does not hold the run directory.
    assert_eq!(sample(&mut state, 99, 1), []);
    // 85 GB of 100 GB is 90.4% of the usable 94 GB.
    let fx = volume_event(&mut state, DiskEvent::VolumeUsed { used: 85 * GB }, 2);
    assert_eq!(levels(&fx), [90]);
    assert_eq!(snapshots(&fx), []);
    // 87 GB is 92.6%: no `max_volume_gb`, so a snapshot.
    let fx = volume_event(&mut state, DiskEvent::VolumeUsed { used: 87 * GB }, 3);
    assert_eq!(snapshots(&fx).len(), 1, "{fx:?}");
}

#[test]
fn a_full_network_volume_grows_and_the_new_size_is_written() {
    let mut state = volume(Some(400));
    let _ = volume_event(&mut state, DiskEvent::VolumeSize { gb: 100 }, 0);
    let fx = volume_event(&mut state, du(100, 93), 60);
    assert_eq!(levels(&fx), [90]);
    assert_eq!(
        fx.last(),
        Some(&DiskEffect::Grow {
            from_gb: 100,
            to_gb: 150
        })
    );
    // While the grow is in flight nothing more is asked.
    let fx = volume_event(&mut state, du(100, 96), 61);
    assert_eq!(levels(&fx), [95]);
    assert!(!fx.iter().any(|e| matches!(e, DiskEffect::Grow { .. })));
    assert_eq!(snapshots(&fx), []);
    assert_eq!(
        volume_event(&mut state, DiskEvent::GrowAnswered { gb: 150 }, 62),
        [DiskEffect::WriteVolumeGb(150)]
    );
    assert_eq!(state.volume_gb(), Some(150));
    // The same bytes are now 64% of the grown volume.
    let used = pct(volume_usable(100), 96);
    let fx = volume_event(&mut state, DiskEvent::VolumeUsed { used }, 120);
    assert_eq!(fx, []);
    assert!(!state.snapshot_requested());
}

#[test]
fn a_volume_size_read_reports_the_grow_and_a_volume_grown_elsewhere() {
    let mut state = volume(Some(400));
    let _ = volume_event(&mut state, DiskEvent::VolumeSize { gb: 100 }, 0);
    let _ = volume_event(&mut state, du(100, 93), 1);
    // The minute's read of the size reports the grow before its answer.
    assert_eq!(
        volume_event(&mut state, DiskEvent::VolumeSize { gb: 150 }, 30),
        [DiskEffect::WriteVolumeGb(150)]
    );
    // Long past the 2 minutes: the grow was reported, no snapshot.
    assert_eq!(
        snapshots(&volume_event(&mut state, DiskEvent::Tick, 500)),
        []
    );
    // Grown elsewhere: written too; the same size again is not.
    assert_eq!(
        volume_event(&mut state, DiskEvent::VolumeSize { gb: 300 }, 560),
        [DiskEffect::WriteVolumeGb(300)]
    );
    assert_eq!(
        volume_event(&mut state, DiskEvent::VolumeSize { gb: 300 }, 620),
        []
    );
}

#[test]
fn a_grow_not_reported_within_2_minutes_snapshots() {
    let mut state = volume(Some(400));
    let _ = volume_event(&mut state, DiskEvent::VolumeSize { gb: 100 }, 0);
    let _ = volume_event(&mut state, du(100, 93), 10);
    // The old size again, within the 2 minutes: still waiting.
    assert_eq!(
        snapshots(&volume_event(
            &mut state,
            DiskEvent::VolumeSize { gb: 100 },
            70
        )),
        []
    );
    assert_eq!(
        snapshots(&volume_event(&mut state, DiskEvent::Tick, 129)),
        []
    );
    assert_eq!(
        snapshots(&volume_event(&mut state, DiskEvent::Tick, 130)),
        [Full::GrowTimedOut { to_gb: 150 }]
    );
    assert_eq!(snapshots(&volume_event(&mut state, du(100, 99), 140)), []);
}

#[test]
fn the_grow_timeout_follows_the_time_scale() {
    let rules = DiskRules::new(
        true,
        Some(400),
        TimeScale::with_second(Duration::from_millis(10)),
    );
    assert_eq!(rules.grow_timeout, Duration::from_millis(1200));
    let mut state = DiskState::new(rules);
    let _ = handle(
        &mut state,
        DiskEvent::VolumeSize { gb: 100 },
        Duration::ZERO,
    );
    let _ = handle(&mut state, du(100, 93), Duration::ZERO);
    assert_eq!(snapshots(&handle(&mut state, DiskEvent::Tick, S)), []);
    assert_eq!(
        snapshots(&handle(&mut state, DiskEvent::Tick, 2 * S)).len(),
        1
    );
}

#[test]
fn a_refused_grow_lets_the_next_full_disk_condition_snapshot() {
    let mut state = volume(Some(400));
    let _ = volume_event(&mut state, DiskEvent::VolumeSize { gb: 100 }, 0);
    let _ = volume_event(&mut state, du(100, 93), 1);
    assert_eq!(volume_event(&mut state, DiskEvent::GrowRefused, 2), []);
    let fx = volume_event(&mut state, du(100, 93), 60);
    assert!(
        matches!(snapshots(&fx)[..], [Full::Percent { .. }]),
        "{fx:?}"
    );
    assert!(!fx.iter().any(|e| matches!(e, DiskEffect::Grow { .. })));
}

#[test]
fn a_volume_at_its_maximum_snapshots_instead_of_growing() {
    let mut state = volume(Some(150));
    let _ = volume_event(&mut state, DiskEvent::VolumeSize { gb: 100 }, 0);
    let fx = volume_event(&mut state, du(100, 93), 1);
    assert_eq!(
        fx.last(),
        Some(&DiskEffect::Grow {
            from_gb: 100,
            to_gb: 150
        })
    );
    let _ = volume_event(&mut state, DiskEvent::GrowAnswered { gb: 150 }, 2);
    // Filling the grown volume: at `max_volume_gb`, so the snapshot.
    let fx = volume_event(&mut state, du(150, 92), 60);
    assert!(
        matches!(snapshots(&fx)[..], [Full::Percent { .. }]),
        "{fx:?}"
    );
    assert!(!fx.iter().any(|e| matches!(e, DiskEffect::Grow { .. })));
}

#[test]
fn nothing_acts_before_the_disk_is_known() {
    let mut state = volume(Some(400));
    // A `du` without the size from the API yet.
    assert_eq!(volume_event(&mut state, du(100, 99), 0), []);
    assert_eq!(volume_event(&mut state, DiskEvent::Tick, 1000), []);
    let mut state = container();
    let checkpoint = DiskEvent::Checkpoint { bytes: 50 * GB };
    assert_eq!(handle(&mut state, checkpoint, Duration::ZERO), []);
}

#[test]
fn an_empty_disk_counts_as_full() {
    let mut state = container();
    let fx = handle(
        &mut state,
        DiskEvent::Container { used: 0, total: 0 },
        Duration::ZERO,
    );
    assert_eq!(levels(&fx), [100]);
    assert_eq!(snapshots(&fx).len(), 1);
}
