//! The disks of a followed Runpod run (spec/runpod.md §9, POD-45..POD-48): the rules of
//! [`crate::runpod::disk`] fed and performed beside the run's follower. The container
//! disk holding the run directory comes from the follower's 10-second system sample
//! (`df`); a network volume from a `du` of its mount once a minute, weighed against
//! its size that the API reports, read again every minute. The minute's reads (the
//! `du`s, bounded on the pod, and the API) run in the background of this watch, so a
//! slow mount delays nothing else: not the follower, not the samples, not the grow's
//! 2 minutes. Warnings go to the front end as [`RunWarning::Disk`]; a grow goes through
//! the API; the snapshot is the `snapshot.request` the follower honours, with reason
//! `disk`, placed only when no request is there (one already placed keeps its reason);
//! the volume size known is written to `.pod/volume_gb` for the watchdog (POD-48).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::env::TimeScale;
use crate::exec::{AnyExecutor, Executor as _};
use crate::runpod::api::RunpodClient;
use crate::runpod::body::VOLUME_PATH;
use crate::runpod::disk::{DiskEffect, DiskEvent, DiskRules, DiskState, Full, GB, handle};
use crate::runpod::driver::VOLUME_GB_FILE;
use crate::runs::start::error_chain;
use crate::runs::{Events, RunEvent, RunWarning, emit};
use crate::train::plugin::SNAPSHOT_REQUEST;

/// How often the volume and the newest checkpoint are measured and the volume's size
/// read from the API (POD-45), in rule time.
const MINUTE: Duration = Duration::from_secs(60);

/// How often time passes for the grow's 2 minutes, in rule time.
const TICK: Duration = Duration::from_secs(10);

/// Minutes within which the watchdog's last `du` of the volume stands for this
/// watch's own (the watchdog measures once a minute).
const SHARED_DU_MINUTES: u32 = 2;

/// Seconds one `du` may take on the pod before it is abandoned.
const DU_SECONDS: u32 = 50;

/// What the disk watch of a run needs besides the pod.
pub(super) struct Plan<'a> {
    pub(super) client: &'a RunpodClient,
    /// The run's network volume and `max_volume_gb`, when its target has one.
    pub(super) volume: Option<(String, Option<u32>)>,
    pub(super) scale: TimeScale,
}

/// Which disk a rule speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Container,
    Volume,
}

/// What one minute's reads found.
#[derive(Debug)]
struct Reading {
    volume_used: Option<u64>,
    checkpoint: Option<u64>,
    volume_gb: Result<Option<u64>, String>,
}

struct Watch<'a> {
    plan: &'a Plan<'a>,
    executor: &'a AnyExecutor,
    run_id: &'a str,
    run_dir: &'a str,
    events: &'a Events,
    start: tokio::time::Instant,
    container: DiskState,
    volume: Option<DiskState>,
    /// A failed read of the volume's size was reported (once until one succeeds).
    size_failed: bool,
}

/// Watches the disks of run `run_id` (its directory `run_dir` on the pod) until `stop`
/// or the end of `samples` (the container disk's used and total bytes from each
/// system sample).
pub(super) async fn watch(
    plan: &Plan<'_>,
    executor: &AnyExecutor,
    (run_id, run_dir): (&str, &str),
    mut samples: UnboundedReceiver<(u64, u64)>,
    events: &Events,
    stop: &CancellationToken,
) {
    let mut watch = Watch {
        plan,
        executor,
        run_id,
        run_dir,
        events,
        start: tokio::time::Instant::now(),
        container: DiskState::new(DiskRules::new(false, None, plan.scale)),
        volume: plan
            .volume
            .as_ref()
            .map(|(_, max)| DiskState::new(DiskRules::new(true, *max, plan.scale))),
        size_failed: false,
    };
    let minute = plan.scale.poll(MINUTE);
    let mut ticks = tokio::time::interval(plan.scale.poll(TICK));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_minute = tokio::time::Instant::now();
    let mut reading: Option<Pin<Box<dyn Future<Output = Reading> + Send + '_>>> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            sample = samples.recv() => {
                let Some((used, total)) = sample else { return };
                watch.apply(Which::Container, DiskEvent::Container { used, total }).await;
            }
            done = async {
                match reading.as_mut() {
                    Some(read) => read.await,
                    None => std::future::pending().await,
                }
            }, if reading.is_some() => {
                reading = None;
                watch.read(done).await;
            }
            _ = ticks.tick() => {
                if reading.is_none() && tokio::time::Instant::now() >= next_minute {
                    next_minute = tokio::time::Instant::now() + minute;
                    reading = Some(Box::pin(read_minute(plan, executor, run_dir)));
                }
                watch.apply(Which::Container, DiskEvent::Tick).await;
                watch.apply(Which::Volume, DiskEvent::Tick).await;
            }
        }
    }
}

/// The minute's reads: the newest checkpoint's size, and on a network volume its `du`
/// and its size from the API, side by side.
async fn read_minute(plan: &Plan<'_>, executor: &AnyExecutor, run_dir: &str) -> Reading {
    let script = du_script(run_dir, plan.volume.is_some());
    let du = executor.probe(&script);
    let size = async {
        match &plan.volume {
            Some((id, _)) => plan
                .client
                .network_volume_gb(id)
                .await
                .map_err(|e| e.to_string()),
            None => Ok(None),
        }
    };
    let (du, size) = tokio::join!(du, size);
    let mut reading = Reading {
        volume_used: None,
        checkpoint: None,
        volume_gb: size,
    };
    if let Ok(output) = du {
        for line in String::from_utf8_lossy(&output).lines() {
            let mut words = line.split_whitespace();
            let (Some(what), Some(kib)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(kib) = kib.parse::<u64>() else {
                continue;
            };
            match what {
                "checkpoint" => reading.checkpoint = Some(kib.saturating_mul(1024)),
                "volume" => reading.volume_used = Some(kib.saturating_mul(1024)),
                _ => {}
            }
        }
    }
    reading
}

/// The shell script that prints `checkpoint KIB` for the newest `checkpoint-*` of the
/// run directory and, with `volume`, `volume KIB` for the network volume; each `du`
/// bounded, neither changing anything. The volume's figure is the watchdog's last
/// `du` (`.pod/volume_du`, POD-48) when it is under [`SHARED_DU_MINUTES`] old, so a
/// volume with many files is walked once a minute, not twice; else its own `du`.
fn du_script(run_dir: &str, volume: bool) -> String {
    let run_dir = run_dir.trim_end_matches('/');
    let output = crate::exec::quote(&format!("{run_dir}/output"));
    let volume = if volume {
        format!(
            "ob_w={shared}\n\
             ob_v=\n\
             if [ -n \"$(find \"$ob_w\" -mmin -{SHARED_DU_MINUTES} 2>/dev/null)\" ]; then read -r ob_v < \"$ob_w\" || ob_v=; fi\n\
             case $ob_v in ''|*[!0-9]*) ob_v=$(timeout {DU_SECONDS} du -skx -- {path} 2>/dev/null | awk '{{print $1}}');; esac\n\
             [ -n \"$ob_v\" ] && echo \"volume $ob_v\"\n",
            shared = crate::exec::quote(&format!("{run_dir}/.pod/volume_du")),
            path = crate::exec::quote(VOLUME_PATH)
        )
    } else {
        String::new()
    };
    format!(
        "ob_c=$(ls -dv -- {output}/checkpoint-* 2>/dev/null | tail -n 1)\n\
         if [ -n \"$ob_c\" ]; then ob_k=$(timeout {DU_SECONDS} du -sk -- \"$ob_c\" 2>/dev/null | awk '{{print $1}}'); \
         [ -n \"$ob_k\" ] && echo \"checkpoint $ob_k\"; fi\n{volume}exit 0\n"
    )
}

/// `bytes` in GB with one decimal.
#[expect(clippy::cast_precision_loss, reason = "a size shown with one decimal")]
fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / GB as f64)
}

impl Watch<'_> {
    fn at(&self) -> Duration {
        self.start.elapsed()
    }

    fn warn(&self, text: String) {
        emit(self.events, RunEvent::Warning(RunWarning::Disk(text)));
    }

    fn what(&self, which: Which) -> String {
        match (which, &self.plan.volume) {
            (Which::Volume, Some((id, _))) => format!("network volume `{id}`"),
            _ => "the container disk".to_owned(),
        }
    }

    async fn read(&mut self, reading: Reading) {
        if self.plan.volume.is_some() {
            self.volume_size(reading.volume_gb).await;
        }
        if let Some(used) = reading.volume_used {
            self.apply(Which::Volume, DiskEvent::VolumeUsed { used })
                .await;
        }
        if let Some(bytes) = reading.checkpoint {
            self.apply(Which::Container, DiskEvent::Checkpoint { bytes })
                .await;
            self.apply(Which::Volume, DiskEvent::Checkpoint { bytes })
                .await;
        }
    }

    /// The volume's size as the API reported it, or why not (each failure once until a
    /// read succeeds).
    async fn volume_size(&mut self, size: Result<Option<u64>, String>) {
        match size {
            Ok(Some(gb)) => {
                self.size_failed = false;
                let gb = u32::try_from(gb).unwrap_or(u32::MAX);
                self.apply(Which::Volume, DiskEvent::VolumeSize { gb })
                    .await;
            }
            Ok(None) => {
                if !self.size_failed {
                    self.size_failed = true;
                    let what = self.what(Which::Volume);
                    self.warn(format!(
                        "{what} of run `{}` is not listed by Runpod: its space is not watched",
                        self.run_id
                    ));
                }
            }
            Err(cause) => {
                if !self.size_failed {
                    self.size_failed = true;
                    let what = self.what(Which::Volume);
                    self.warn(format!("cannot read the size of {what}: {cause}"));
                }
            }
        }
    }

    /// Feeds `event` to the rules of disk `which` and performs what they say, until
    /// nothing more follows.
    async fn apply(&mut self, which: Which, event: DiskEvent) {
        let mut events = vec![event];
        while let Some(event) = events.pop() {
            let at = self.at();
            let state = match which {
                Which::Container => &mut self.container,
                Which::Volume => match &mut self.volume {
                    Some(state) => state,
                    None => return,
                },
            };
            for effect in handle(state, event, at) {
                if let Some(next) = self.perform(which, effect).await {
                    events.push(next);
                }
            }
        }
    }

    async fn perform(&self, which: Which, effect: DiskEffect) -> Option<DiskEvent> {
        let what = self.what(which);
        let run_id = self.run_id;
        match effect {
            DiskEffect::Warn {
                level,
                used,
                usable,
            } => {
                self.warn(format!(
                    "{what} of run `{run_id}` is {level}% used or more ({} of {} usable)",
                    gb(used),
                    gb(usable)
                ));
                None
            }
            DiskEffect::Grow { from_gb, to_gb } => Some(self.grow(from_gb, to_gb).await),
            DiskEffect::WriteVolumeGb(gb) => {
                let path = format!("{}/{VOLUME_GB_FILE}", self.run_dir);
                if let Err(error) = self.executor.put_file(&path, &format!("{gb}\n")).await {
                    tracing::warn!("cannot write `{VOLUME_GB_FILE}` on the pod: {error}");
                }
                None
            }
            DiskEffect::Snapshot { why, used, usable } => {
                let rule = match why {
                    Full::Percent { percent } => {
                        format!("{percent:.0}% used ({} of {} usable)", gb(used), gb(usable))
                    }
                    Full::Checkpoint { free, checkpoint } => format!(
                        "{} free, less than 1.5 × the newest checkpoint ({})",
                        gb(free),
                        gb(checkpoint)
                    ),
                    Full::GrowTimedOut { to_gb } => format!(
                        "the grow to {to_gb} GB was not reported within 2 minutes ({} of {} usable)",
                        gb(used),
                        gb(usable)
                    ),
                };
                match self.request_snapshot().await {
                    Ok(true) => self.warn(format!(
                        "{what} of run `{run_id}` is full: {rule}; stopping the job with a snapshot (reason `disk`)"
                    )),
                    Ok(false) => self.warn(format!(
                        "{what} of run `{run_id}` is full: {rule}; a snapshot is already requested"
                    )),
                    Err(cause) => self.warn(format!(
                        "{what} of run `{run_id}` is full: {rule}; cannot place the snapshot request: {cause}"
                    )),
                }
                None
            }
        }
    }

    /// Grows the network volume through the API (POD-47).
    async fn grow(&self, from_gb: u32, to_gb: u32) -> DiskEvent {
        let Some((id, _)) = &self.plan.volume else {
            return DiskEvent::GrowRefused;
        };
        self.warn(format!(
            "network volume `{id}` of run `{}` is nearly full: growing it from {from_gb} GB to {to_gb} GB; a grow is permanent (the volume cannot shrink, stays billed monthly, and every pod using it sees the new size)",
            self.run_id
        ));
        match self
            .plan
            .client
            .grow_network_volume(id, u64::from(to_gb))
            .await
        {
            Ok(volume) => DiskEvent::GrowAnswered {
                gb: u32::try_from(volume.size).unwrap_or(u32::MAX),
            },
            Err(error) => {
                self.warn(format!(
                    "Runpod did not grow network volume `{id}` to {to_gb} GB: {}; the next full disk stops the job with a snapshot",
                    error_chain(&error)
                ));
                DiskEvent::GrowRefused
            }
        }
    }

    /// Places `snapshot.request` with reason `disk` unless one is there: `true` when
    /// this placed it.
    async fn request_snapshot(&self) -> Result<bool, String> {
        let path = format!("{}/{SNAPSHOT_REQUEST}", self.run_dir);
        let placed = self
            .executor
            .read_from(&path, 0, 64)
            .await
            .map_err(|e| error_chain(&e))?;
        if !placed.is_empty() {
            return Ok(false);
        }
        self.executor
            .put_file(&path, "disk\n")
            .await
            .map_err(|e| error_chain(&e))?;
        Ok(true)
    }
}

#[cfg(test)]
#[path = "disk_volume_tests.rs"]
mod volume_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_du_script_measures_the_newest_checkpoint_and_the_volume_when_there_is_one() {
        let container = du_script("/workspace/runs/r1", false);
        assert!(
            container.contains("/workspace/runs/r1/output"),
            "{container}"
        );
        assert!(container.contains("checkpoint-*"));
        assert!(container.contains("timeout 50 du -sk"));
        assert!(!container.contains(VOLUME_PATH));
        let volume = du_script("/workspace/runs/r1", true);
        assert!(volume.contains("du -skx -- '/workspace/data'"), "{volume}");
    }

    /// Watches a container disk in `dir` through the samples `fill` (percent used),
    /// then stops; the warnings given.
    async fn watch_container(dir: &std::path::Path, fill: &[u64]) -> Vec<String> {
        let client = RunpodClient::new(
            "http://127.0.0.1:9/v2",
            secrecy::SecretString::from("rpa_unit_Wq4Zt8Lm2Xv6Kp9Rb3Nd"),
            crate::llm::Redactor::new(),
            Duration::from_secs(5),
        )
        .unwrap();
        let plan = Plan {
            client: &client,
            volume: None,
            scale: TimeScale::REAL,
        };
        let executor = AnyExecutor::Local(crate::exec::LocalExecutor::new(dir).unwrap());
        let (events, mut warnings) = tokio::sync::mpsc::unbounded_channel();
        let (samples, rx) = tokio::sync::mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let run_dir = dir.to_string_lossy().into_owned();
        for percent in fill {
            samples.send((percent * GB, 100 * GB)).unwrap();
        }
        drop(samples);
        watch(&plan, &executor, ("r1", &run_dir), rx, &events, &stop).await;
        drop(events);
        let mut texts = Vec::new();
        while let Some(event) = warnings.recv().await {
            if let RunEvent::Warning(RunWarning::Disk(text)) = event {
                texts.push(text);
            }
        }
        texts
    }

    #[tokio::test]
    async fn a_full_container_disk_warns_and_requests_the_disk_snapshot_once() {
        let dir = tempfile::tempdir().unwrap();
        let texts = watch_container(dir.path(), &[50, 86, 93, 96]).await;
        let request = std::fs::read_to_string(dir.path().join(SNAPSHOT_REQUEST)).unwrap();
        assert_eq!(request, "disk\n");
        assert!(
            texts[0].contains(
                "the container disk of run `r1` is 85% used or more (86.0 GB of 100.0 GB usable)"
            ),
            "{texts:?}"
        );
        assert!(texts[1].contains("90% used or more"), "{texts:?}");
        assert!(
            texts[2].contains("is full: 93% used")
                && texts[2].contains("stopping the job with a snapshot (reason `disk`)"),
            "{texts:?}"
        );
        assert!(texts[3].contains("95% used or more"), "{texts:?}");
        assert_eq!(texts.len(), 4, "{texts:?}");
    }

    #[tokio::test]
    async fn a_snapshot_already_requested_keeps_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SNAPSHOT_REQUEST), "cost\n").unwrap();
        let texts = watch_container(dir.path(), &[99]).await;
        let request = std::fs::read_to_string(dir.path().join(SNAPSHOT_REQUEST)).unwrap();
        assert_eq!(request, "cost\n");
        assert!(
            texts
                .iter()
                .any(|t| t.contains("a snapshot is already requested")),
            "{texts:?}"
        );
    }

    #[tokio::test]
    #[allow(
        clippy::disallowed_methods,
        reason = "test code runs the script in a shell"
    )]
    async fn the_du_script_runs_in_a_shell() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let checkpoint = dir.path().join("output/checkpoint-10");
        std::fs::create_dir_all(&checkpoint)?;
        std::fs::create_dir_all(dir.path().join("output/checkpoint-9"))?;
        std::fs::write(checkpoint.join("model.bin"), vec![0_u8; 64 * 1024])?;
        let script = du_script(&dir.path().to_string_lossy(), false);
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()?;
        let text = String::from_utf8(output.stdout)?;
        let kib: u64 = text
            .strip_prefix("checkpoint ")
            .ok_or(text.clone())?
            .trim()
            .parse()?;
        assert!(kib >= 64, "{text}");
        Ok(())
    }

    // Issue 13: the watch reads the watchdog's `du` of the volume while it is fresh,
    // and measures itself when it is stale or unreadable (here the volume's path does
    // not exist, so its own `du` answers nothing).
    #[tokio::test]
    #[allow(
        clippy::disallowed_methods,
        reason = "test code runs the script in a shell"
    )]
    async fn the_watch_reads_the_watchdogs_fresh_volume_du()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join(".pod"))?;
        let shared = dir.path().join(".pod/volume_du");
        let script = du_script(&dir.path().to_string_lossy(), true);
        let run = || -> Result<String, Box<dyn std::error::Error>> {
            let output = std::process::Command::new("sh")
                .arg("-c")
                .arg(&script)
                .output()?;
            Ok(String::from_utf8(output.stdout)?)
        };
        std::fs::write(&shared, "734003\n")?;
        assert_eq!(run()?, "volume 734003\n");
        let stale = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        std::fs::File::options()
            .write(true)
            .open(&shared)?
            .set_modified(stale)?;
        assert_eq!(run()?, "");
        std::fs::write(&shared, "not a number\n")?;
        assert_eq!(run()?, "");
        Ok(())
    }
}
