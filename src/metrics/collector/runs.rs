//! The gauges of the runs followed (MET-10, MET-11, MET-13, MET-14): their training,
//! phase, target and GPU series, removed once nothing follows a run.

use std::time::UNIX_EPOCH;

use super::{Followed, Follower, Metrics, float, set};
use crate::metrics::families::{PHASES, RunGpu, RunGpuName, RunLabel, RunMount, RunPhase};
use crate::runs::RunEvent;
use crate::system::{DiskRole, Sample};
use crate::train::phase::Phase;

impl Metrics {
    /// A new follower of runs.
    pub fn follower(&self) -> Follower {
        let mut state = self.state();
        state.next_follower += 1;
        Follower(state.next_follower)
    }

    /// Takes in one event of the run `follower` follows (MET-10, MET-11, MET-13).
    pub fn run_event(&self, follower: Follower, event: &RunEvent) {
        let _whole = self.update();
        if let RunEvent::Following { run_id, .. } = event {
            self.follow(follower, run_id);
            return;
        }
        let Some(run_id) = self.state().following.get(&follower).cloned() else {
            return;
        };
        let f = &self.families;
        let run = RunLabel {
            run_id: run_id.clone(),
        };
        match event {
            RunEvent::Phase(phase) => self.phase(&run_id, *phase),
            RunEvent::Train(line) => {
                f.train_step
                    .get_or_create(&run)
                    .set(i64::try_from(line.step).unwrap_or(i64::MAX));
                if let Some(max) = line.max_steps {
                    f.train_max_steps
                        .get_or_create(&run)
                        .set(i64::try_from(max).unwrap_or(i64::MAX));
                }
                if let Some(loss) = line.loss {
                    set(&f.train_loss, &run, loss.0);
                }
                if let Some(lr) = line.learning_rate {
                    set(&f.learning_rate, &run, lr.0);
                }
            }
            RunEvent::Eval(line) => {
                if let Some(loss) = line.eval_loss {
                    set(&f.eval_loss, &run, loss.0);
                }
            }
            RunEvent::Sample(sample) => self.sample(&run_id, sample),
            RunEvent::Following { .. }
            | RunEvent::JobLog(_)
            | RunEvent::Warning(_)
            | RunEvent::Pod(_)
            | RunEvent::Scheduler(_)
            | RunEvent::Pending(_)
            | RunEvent::Upload(_)
            | RunEvent::Started => {}
        }
    }

    fn phase(&self, run_id: &str, phase: Phase) {
        let current = match phase {
            Phase::Starting => None,
            Phase::Training => Some("training"),
            Phase::Evaluating { .. } => Some("evaluating"),
            Phase::FinalEvaluation { .. } | Phase::Saving => Some("finalizing"),
            Phase::Merging => Some("merging"),
            Phase::Exporting => Some("exporting"),
            Phase::Retrieving => Some("retrieving"),
        };
        for name in PHASES {
            self.families
                .train_phase
                .get_or_create(&RunPhase {
                    run_id: run_id.to_owned(),
                    phase: name.to_owned(),
                })
                .set(i64::from(current == Some(name)));
        }
    }

    fn follow(&self, follower: Follower, run_id: &str) {
        let previous = self.state().following.insert(follower, run_id.to_owned());
        match previous {
            Some(previous) if previous == run_id => return,
            Some(previous) => self.release(&previous),
            None => {}
        }
        self.state()
            .runs
            .entry(run_id.to_owned())
            .or_default()
            .followers += 1;
        self.phase(run_id, Phase::Starting);
    }

    /// `follower` follows nothing any more; the series of a run nothing else follows go.
    pub fn unfollow(&self, follower: Follower) {
        let _whole = self.update();
        let previous = self.state().following.remove(&follower);
        if let Some(previous) = previous {
            self.release(&previous);
        }
    }

    fn release(&self, run_id: &str) {
        let gone = {
            let mut state = self.state();
            let Some(run) = state.runs.get_mut(run_id) else {
                return;
            };
            run.followers = run.followers.saturating_sub(1);
            if run.followers > 0 {
                return;
            }
            state.runs.remove(run_id)
        };
        let f = &self.families;
        let run = RunLabel {
            run_id: run_id.to_owned(),
        };
        f.train_step.remove(&run);
        f.train_max_steps.remove(&run);
        f.train_loss.remove(&run);
        f.eval_loss.remove(&run);
        f.learning_rate.remove(&run);
        for name in PHASES {
            f.train_phase.remove(&RunPhase {
                run_id: run_id.to_owned(),
                phase: name.to_owned(),
            });
        }
        if let Some(mut gone) = gone {
            self.clear_target(run_id, &mut gone);
        }
    }

    /// Removes the target and GPU series of `run_id`.
    fn clear_target(&self, run_id: &str, run: &mut Followed) {
        let f = &self.families;
        let label = RunLabel {
            run_id: run_id.to_owned(),
        };
        for family in [
            &f.cpu_usage,
            &f.cpu_load1,
            &f.cpus,
            &f.memory_used,
            &f.memory_limit,
            &f.sample_timestamp,
        ] {
            family.remove(&label);
        }
        for mount in std::mem::take(&mut run.mounts) {
            let labels = RunMount {
                run_id: run_id.to_owned(),
                mount,
            };
            f.disk_used.remove(&labels);
            f.disk_size.remove(&labels);
        }
        for (gpu, name) in std::mem::take(&mut run.gpus) {
            let labels = RunGpu {
                run_id: run_id.to_owned(),
                gpu: gpu.clone(),
            };
            for family in [
                &f.gpu_utilization,
                &f.gpu_memory_used,
                &f.gpu_memory_total,
                &f.gpu_temperature,
                &f.gpu_power,
                &f.gpu_power_limit,
            ] {
                family.remove(&labels);
            }
            f.gpu_info.remove(&RunGpuName {
                run_id: run_id.to_owned(),
                gpu,
                name,
            });
        }
    }

    /// A system sample (SYS-1): the run's target and GPU series become exactly what it
    /// reports (MET-14): a figure it lacks has no series, a network file system none, `/`
    /// only when it is not the run directory's file system.
    fn sample(&self, run_id: &str, sample: &Sample) {
        let mut before = {
            let mut state = self.state();
            let Some(run) = state.runs.get_mut(run_id) else {
                return;
            };
            Followed {
                followers: 0,
                mounts: std::mem::take(&mut run.mounts),
                gpus: std::mem::take(&mut run.gpus),
            }
        };
        self.clear_target(run_id, &mut before);
        let mut run = Followed::default();
        let f = &self.families;
        let label = RunLabel {
            run_id: run_id.to_owned(),
        };
        if let Ok(at) = sample.at.duration_since(UNIX_EPOCH) {
            set(&f.sample_timestamp, &label, at.as_secs_f64());
        }
        if let Some(cpu) = &sample.cpu {
            for (family, value) in [
                (&f.cpu_usage, cpu.usage),
                (&f.cpu_load1, cpu.load1),
                (&f.cpus, cpu.cpus),
            ] {
                if let Some(value) = value {
                    set(family, &label, value);
                }
            }
        }
        if let Some(memory) = &sample.memory {
            set(&f.memory_used, &label, float(memory.used_bytes));
            set(&f.memory_limit, &label, float(memory.limit_bytes));
        }
        let run_mount = sample.run_disk().map(|disk| disk.mount.clone());
        for disk in &sample.disks {
            let same_as_run =
                disk.role == DiskRole::Root && run_mount.as_ref() == Some(&disk.mount);
            if disk.shared || same_as_run {
                continue;
            }
            let labels = RunMount {
                run_id: run_id.to_owned(),
                mount: disk.mount.clone(),
            };
            set(&f.disk_used, &labels, float(disk.used_bytes));
            set(&f.disk_size, &labels, float(disk.size_bytes));
            run.mounts.insert(disk.mount.clone());
        }
        for gpu in &sample.gpus {
            let index = gpu.index.to_string();
            let labels = RunGpu {
                run_id: run_id.to_owned(),
                gpu: index.clone(),
            };
            for (family, value) in [
                (&f.gpu_utilization, gpu.utilization),
                (&f.gpu_memory_used, gpu.memory_used_bytes.map(float)),
                (&f.gpu_memory_total, gpu.memory_total_bytes.map(float)),
                (&f.gpu_temperature, gpu.temperature_celsius),
                (&f.gpu_power, gpu.power_watts),
                (&f.gpu_power_limit, gpu.power_limit_watts),
            ] {
                if let Some(value) = value {
                    set(family, &labels, value);
                }
            }
            f.gpu_info
                .get_or_create(&RunGpuName {
                    run_id: run_id.to_owned(),
                    gpu: index.clone(),
                    name: gpu.name.clone(),
                })
                .set(1);
            run.gpus.insert((index, gpu.name.clone()));
        }
        let mut state = self.state();
        if let Some(slot) = state.runs.get_mut(run_id) {
            slot.mounts = run.mounts;
            slot.gpus = run.gpus;
        }
    }
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
