//! The disk of a followed Runpod run (spec/runpod.md §9, POD-45..POD-47) as a pure state
//! machine: samples of the disk holding the run directory come in as [`DiskEvent`]s,
//! warnings, a grow of the network volume and the `disk` snapshot go out as
//! [`DiskEffect`]s. No I/O and no clock: the follow feeds it (the 10-second `df`
//! sample of the container disk; on a network volume the minute's `du` and the size the
//! API reports) and performs its effects.
//!
//! - Usable space: the container disk's total; on a network volume 94% of the size the
//!   API reports ([`USABLE_SHARE`]), since Runpod refuses writes slightly before it.
//! - Warnings at 85, 90, 95 and 100% used, each once (POD-46); a sample past several
//!   gives the highest of them, the lower ones then count as given.
//! - The full-disk condition: 92% used, or free space below 1.5 × the newest
//!   `checkpoint-*` (POD-47). On a network volume with `max_volume_gb` above its size
//!   and no grow refused: grow to max(size × 1.5, size + 50 GB), capped at
//!   `max_volume_gb`. Otherwise a snapshot with reason `disk`, once (the driver keeps a
//!   request already placed, with its reason).
//! - A grow not reported within [`GROW_TIMEOUT`] (on the run's time scale) stops the job
//!   with a snapshot; a refused grow or a volume at `max_volume_gb` lets the next
//!   full-disk condition do so.
//! - Every size newly known (the first read, a grow, a volume grown elsewhere) is to be
//!   written to `.pod/volume_gb` for the watchdog's backstop (POD-48).

use std::time::Duration;

use crate::env::TimeScale;

/// Warning levels in percent used (POD-46).
pub const WARN_AT: [u8; 4] = [85, 90, 95, 100];

/// The percent used at which the disk acts (POD-47).
pub const ACT_AT: f64 = 92.0;

/// Free space must stay above this many times the newest checkpoint (POD-47).
pub const CHECKPOINT_FACTOR: f64 = 1.5;

/// The share of a network volume's API size that counts as usable (POD-45).
pub const USABLE_SHARE: f64 = 0.94;

/// How long a grow may take to show in the API before the job stops (POD-47), in rule
/// time.
pub const GROW_TIMEOUT: Duration = Duration::from_secs(120);

/// Bytes in a GB of a Runpod volume size (decimal: the smaller reading of "GB", so the
/// usable space is never overstated).
pub const GB: u64 = 1_000_000_000;

/// The fixed bounds of the disk rules of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskRules {
    /// The run directory is on a network volume (else the container disk).
    pub network: bool,
    /// `max_volume_gb` of the target: the largest size a grow may reach.
    pub max_volume_gb: Option<u32>,
    /// [`GROW_TIMEOUT`] on the run's time scale.
    pub grow_timeout: Duration,
}

impl DiskRules {
    /// The rules of a run whose directory is on a network volume (`network`) with
    /// `max_volume_gb`, on time scale `scale`.
    #[must_use]
    pub fn new(network: bool, max_volume_gb: Option<u32>, scale: TimeScale) -> Self {
        Self {
            network,
            max_volume_gb,
            grow_timeout: scale.scale(GROW_TIMEOUT),
        }
    }
}

/// What the follow learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskEvent {
    /// The 10-second `df` of the container disk holding the run directory.
    Container {
        /// Bytes used.
        used: u64,
        /// Bytes in all.
        total: u64,
    },
    /// The minute's `du` of the network volume.
    VolumeUsed {
        /// Bytes used.
        used: u64,
    },
    /// The size of the network volume the API reports.
    VolumeSize {
        /// GB.
        gb: u32,
    },
    /// The size in bytes of the newest `checkpoint-*`.
    Checkpoint {
        /// Bytes.
        bytes: u64,
    },
    /// The API answered the grow with the volume's new size.
    GrowAnswered {
        /// GB.
        gb: u32,
    },
    /// The API refused the grow (the follow logs its reason).
    GrowRefused,
    /// Time passed (the grow's 2 minutes).
    Tick,
}

/// Why the disk stops the job.
#[derive(Debug, Clone, PartialEq)]
pub enum Full {
    /// At least 92% used.
    Percent {
        /// Percent used.
        percent: f64,
    },
    /// Free space below 1.5 × the newest checkpoint.
    Checkpoint {
        /// Bytes free.
        free: u64,
        /// Bytes of the newest checkpoint.
        checkpoint: u64,
    },
    /// A grow was not reported within its 2 minutes.
    GrowTimedOut {
        /// GB asked for.
        to_gb: u32,
    },
}

/// What the follow does.
#[derive(Debug, Clone, PartialEq)]
pub enum DiskEffect {
    /// Warn: the disk is `level`% used or more (POD-46).
    Warn {
        /// 85, 90, 95 or 100.
        level: u8,
        /// Bytes used.
        used: u64,
        /// Bytes usable.
        usable: u64,
    },
    /// Grow the network volume through the API; then [`DiskEvent::GrowAnswered`] or
    /// [`DiskEvent::GrowRefused`].
    Grow {
        /// GB now.
        from_gb: u32,
        /// GB asked for.
        to_gb: u32,
    },
    /// Write the volume size to `.pod/volume_gb` (POD-48).
    WriteVolumeGb(u32),
    /// Request a snapshot with reason `disk` (one already requested keeps its reason).
    Snapshot {
        /// Which rule applied, with its amounts.
        why: Full,
        /// Bytes used.
        used: u64,
        /// Bytes usable.
        usable: u64,
    },
}

/// The disk's state while a run is followed.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskState {
    rules: DiskRules,
    used: Option<u64>,
    total: Option<u64>,
    volume_gb: Option<u32>,
    checkpoint: Option<u64>,
    warned: Option<u8>,
    /// A grow in flight: the GB asked for and when it was sent.
    growing: Option<(u32, Duration)>,
    /// Runpod refused a grow: the next full-disk condition stops the job.
    refused: bool,
    snapshot: bool,
}

impl DiskState {
    /// Nothing known yet.
    #[must_use]
    pub fn new(rules: DiskRules) -> Self {
        Self {
            rules,
            used: None,
            total: None,
            volume_gb: None,
            checkpoint: None,
            warned: None,
            growing: None,
            refused: false,
            snapshot: false,
        }
    }

    /// The volume size known (GB).
    #[must_use]
    pub fn volume_gb(&self) -> Option<u32> {
        self.volume_gb
    }

    /// Whether the disk requested its snapshot.
    #[must_use]
    pub fn snapshot_requested(&self) -> bool {
        self.snapshot
    }

    /// Bytes usable on the disk: the container disk's total, or 94% of the volume.
    #[must_use]
    pub fn usable(&self) -> Option<u64> {
        if self.rules.network {
            self.volume_gb.map(volume_usable)
        } else {
            self.total
        }
    }

    /// The size a grow of a `gb` volume asks for: max(gb × 1.5, gb + 50), capped at
    /// `max` (POD-47).
    #[must_use]
    pub fn grown(gb: u32, max: u32) -> u32 {
        let half_again = gb.saturating_add(gb.div_ceil(2));
        half_again.max(gb.saturating_add(50)).min(max)
    }
}

/// Applies `event` at `at` (the run's clock) and returns the effects to perform.
#[must_use]
pub fn handle(state: &mut DiskState, event: DiskEvent, at: Duration) -> Vec<DiskEffect> {
    let mut fx = Vec::new();
    match event {
        DiskEvent::Container { used, total } => {
            if state.rules.network {
                return fx;
            }
            state.used = Some(used);
            state.total = Some(total);
        }
        DiskEvent::VolumeUsed { used } => {
            if !state.rules.network {
                return fx;
            }
            state.used = Some(used);
        }
        DiskEvent::VolumeSize { gb } => {
            if !state.rules.network {
                return fx;
            }
            learn_size(state, gb, &mut fx);
            if state.growing.is_some_and(|(to, _)| gb >= to) {
                state.growing = None;
            }
        }
        DiskEvent::Checkpoint { bytes } => state.checkpoint = Some(bytes),
        DiskEvent::GrowAnswered { gb } => {
            if let Some((to, _)) = state.growing {
                learn_size(state, gb, &mut fx);
                if gb >= to {
                    state.growing = None;
                }
            }
            return fx;
        }
        DiskEvent::GrowRefused => {
            state.growing = None;
            state.refused = true;
            return fx;
        }
        DiskEvent::Tick => {}
    }
    let known = state.used.zip(state.usable());
    if let Some((used, usable)) = known {
        warn(state, used, usable, &mut fx);
    }
    if let Some((to_gb, sent)) = state.growing {
        if at >= sent + state.rules.grow_timeout {
            state.growing = None;
            snapshot(state, Full::GrowTimedOut { to_gb }, &mut fx);
        }
        return fx;
    }
    let Some((used, usable)) = known else {
        return fx;
    };
    let Some(full) = full(state, used, usable) else {
        return fx;
    };
    if state.snapshot {
        return fx;
    }
    let grow = state
        .volume_gb
        .zip(state.rules.max_volume_gb)
        .filter(|&(gb, max)| state.rules.network && !state.refused && gb < max);
    match grow {
        Some((gb, max)) => {
            let to_gb = DiskState::grown(gb, max);
            state.growing = Some((to_gb, at));
            fx.push(DiskEffect::Grow { from_gb: gb, to_gb });
        }
        None => snapshot(state, full, &mut fx),
    }
    fx
}

/// 94% of a `gb` volume, in bytes.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "a volume of at most u32::MAX GB fits a u64 of bytes"
)]
fn volume_usable(gb: u32) -> u64 {
    (f64::from(gb) * GB as f64 * USABLE_SHARE) as u64
}

fn learn_size(state: &mut DiskState, gb: u32, fx: &mut Vec<DiskEffect>) {
    if state.volume_gb != Some(gb) {
        state.volume_gb = Some(gb);
        fx.push(DiskEffect::WriteVolumeGb(gb));
    }
}

#[expect(
    clippy::cast_precision_loss,
    reason = "a percentage of bytes needs no more than f64's precision"
)]
fn percent(used: u64, usable: u64) -> f64 {
    if usable == 0 {
        return 100.0;
    }
    used as f64 * 100.0 / usable as f64
}

fn warn(state: &mut DiskState, used: u64, usable: u64, fx: &mut Vec<DiskEffect>) {
    let percent = percent(used, usable);
    let reached = WARN_AT
        .iter()
        .copied()
        .filter(|&level| percent >= f64::from(level))
        .max();
    if let Some(level) = reached.filter(|&l| state.warned.is_none_or(|w| l > w)) {
        state.warned = Some(level);
        fx.push(DiskEffect::Warn {
            level,
            used,
            usable,
        });
    }
}

#[expect(
    clippy::cast_precision_loss,
    reason = "a checkpoint's size needs no more than f64's precision"
)]
fn full(state: &DiskState, used: u64, usable: u64) -> Option<Full> {
    let percent = percent(used, usable);
    if percent >= ACT_AT {
        return Some(Full::Percent { percent });
    }
    let free = usable.saturating_sub(used);
    let checkpoint = state.checkpoint?;
    ((free as f64) < checkpoint as f64 * CHECKPOINT_FACTOR)
        .then_some(Full::Checkpoint { free, checkpoint })
}

fn snapshot(state: &mut DiskState, why: Full, fx: &mut Vec<DiskEffect>) {
    if state.snapshot {
        return;
    }
    state.snapshot = true;
    let used = state.used.unwrap_or(0);
    let usable = state.usable().unwrap_or(0);
    fx.push(DiskEffect::Snapshot { why, used, usable });
}

#[cfg(test)]
#[path = "disk_tests.rs"]
mod tests;
