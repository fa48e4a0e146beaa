//! The app's Runpod pickers and start confirmation (TUI-21..TUI-23, TUI-25, TUI-27,
//! TUI-28, TUI-43, TUI-44): which read a key asks for, what a read opens, what a pick
//! writes, and the confirmation's `y` (save the picks, then start).

use crossterm::event::KeyEvent;

use super::{App, Work};
use crate::config::edit::Change;
use crate::config::{ListOrAuto, Source};
use crate::runpod::catalog::wire::NetworkVolume;
use crate::runs::pod::preview::{Listing, Read};
use crate::tui::action::{Action, Dialog};
use crate::tui::components::picker::{Outcome, Picked, Picker};
use crate::tui::start_confirm::{ConfirmKey, StartConfirm};

/// A Runpod read the app asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunpodAsk {
    /// What to read.
    pub listing: Listing,
    /// What the read is for.
    pub purpose: Purpose,
    /// Its number: a read answered after a newer one of its kind was asked is dropped.
    pub seq: u64,
}

/// What a Runpod read is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// The Project view's picker of this key (TUI-21..TUI-23).
    Picker(String),
    /// The start confirmation's preview (TUI-43).
    Preview,
    /// The start confirmation's picker of this key (no typing, TUI-27, TUI-44).
    ConfirmPicker(String),
    /// The hint of a Runpod target's `gpu_count` or `max_hours` (TUI-24), for the
    /// configuration of this generation.
    Hint(u64),
}

/// The fields of a Runpod target that open a picker, and what each reads.
fn listing_of(target: &str, field: &str) -> Option<Listing> {
    Some(match field {
        "gpu_types" => Listing::Gpus(target.to_owned()),
        "data_center_ids" => Listing::DataCenters,
        "network_volume_id" => Listing::Volumes,
        "image" => Listing::Templates,
        _ => return None,
    })
}

fn list_value(ids: &[String]) -> toml_edit::Value {
    toml_edit::Value::Array(ids.iter().map(String::as_str).collect())
}

impl App {
    /// `training.target`, when it is a Runpod target.
    pub(super) fn runpod_training_target(&self) -> Option<String> {
        let target = self.project.value("training.target")?;
        (self
            .project
            .value(&format!("targets.{target}.kind"))
            .as_deref()
            == Some("runpod"))
        .then_some(target)
    }

    /// Enter on a Runpod field with a picker: read what it lists (TUI-21..TUI-23).
    pub(super) fn open_picker(&mut self, key: String) -> Vec<Work> {
        let Some(listing) = self
            .project
            .runpod_pick(&key)
            .and_then(|(target, field)| listing_of(&target, &field))
        else {
            return Vec::new();
        };
        if let Some(why) = self.write_refused(std::iter::once(key.as_str())) {
            self.say(false, why);
            return Vec::new();
        }
        if self.pick_awaited.is_some() {
            self.say(
                false,
                "the Runpod catalog is being read; the picker opens then".to_owned(),
            );
            return Vec::new();
        }
        self.say(true, "reading the Runpod catalog…".to_owned());
        let ask = self.runpod_ask(listing, Purpose::Picker(key));
        self.pick_awaited = Some(ask.seq);
        vec![Work::ReadRunpod(ask)]
    }

    /// Whether a Runpod read the user waits for runs: a picker's, or the confirmation's
    /// preview (the footer's spinner, TUI-61).
    #[must_use]
    pub fn reading_runpod(&self) -> bool {
        self.pick_awaited.is_some() || self.confirm.as_ref().is_some_and(|c| c.read.is_none())
    }

    /// A numbered read.
    fn runpod_ask(&mut self, listing: Listing, purpose: Purpose) -> RunpodAsk {
        self.runpod_reads += 1;
        RunpodAsk {
            listing,
            purpose,
            seq: self.runpod_reads,
        }
    }

    /// A question to ask: a start of a run on a Runpod training target (`t`, a resume's
    /// `T`, auto mode that ends in one) opens the start confirmation instead of a plain
    /// dialog (TUI-43, TUI-48, TUI-38).
    pub(super) fn ask(&mut self, dialog: Dialog) -> Vec<Work> {
        let starts = matches!(
            *dialog.yes,
            Action::Start { .. } | Action::RunChain(crate::tui::stages::Chain::Auto)
        );
        if starts && let Some(target) = self.runpod_training_target() {
            return self.open_start_confirm(dialog, target);
        }
        self.dialog = Some(dialog);
        Vec::new()
    }

    /// `t` on a Runpod training target: the confirmation with its catalog read
    /// (TUI-43), titled and answered as `dialog`.
    pub(super) fn open_start_confirm(&mut self, dialog: Dialog, target: String) -> Vec<Work> {
        let ask = self.runpod_ask(Listing::Gpus(target.clone()), Purpose::Preview);
        let mut confirm = StartConfirm::new(dialog.lines, target).asking(dialog.title, *dialog.yes);
        confirm.read_seq = ask.seq;
        self.confirm = Some(confirm);
        vec![Work::ReadRunpod(ask)]
    }

    /// A Runpod read ended: the confirmation's preview, or a picker opens.
    pub(super) fn on_runpod(&mut self, ask: RunpodAsk, read: Result<Read, String>) -> Vec<Work> {
        if let Ok(Read::Volumes(volumes)) = &read {
            self.volumes = Some(volumes.clone());
        }
        if matches!(ask.purpose, Purpose::Picker(_) | Purpose::ConfirmPicker(_)) {
            if self.pick_awaited != Some(ask.seq) {
                return Vec::new();
            }
            self.pick_awaited = None;
        }
        let key = match ask.purpose {
            Purpose::Picker(key) => key,
            Purpose::Hint(generation) => {
                if let Listing::Gpus(target) = ask.listing {
                    self.hint_read(target, generation, read);
                }
                return Vec::new();
            }
            Purpose::Preview | Purpose::ConfirmPicker(_) => {
                self.confirm_read(ask.seq, ask.purpose, read);
                return Vec::new();
            }
        };
        let read = match read {
            Ok(read) => read,
            Err(why) => {
                // The value can still be typed (TUI-27's `t`, without the listing).
                if self.tab == 0 && self.picker.is_none() && self.project.form.is_none() {
                    self.project.open_form(&key);
                }
                self.say(false, format!("{why}; type the value instead"));
                return Vec::new();
            }
        };
        // The picker opens only where the user still is: nothing else asked meanwhile.
        let free = self.picker.is_none()
            && !self.help
            && !self.quitting
            && self.project.form.is_none()
            && self.project.adding.is_none();
        if self.tab == 0
            && free
            && self.dialog.is_none()
            && self.confirm.is_none()
            && self.menu.is_none()
        {
            let current = self.project.value(&key);
            let picker = match &read {
                Read::Gpus(gpus) => Picker::gpu_types(
                    key,
                    &gpus.gpus,
                    gpus.target.gpu_count,
                    gpus.estimate.as_ref().ok().copied(),
                    &gpus.target.gpu_types,
                ),
                Read::DataCenters(centers) => {
                    let target = self.project.runpod_pick(&key).map(|(t, _)| t);
                    let configured = target.and_then(|t| self.configured_centers(&t));
                    Picker::data_centers(key, centers, configured.as_ref())
                }
                Read::Volumes(volumes) => Picker::volumes(key, volumes, current.as_deref()),
                Read::Templates(templates) => Picker::templates(key, templates, current.as_deref()),
            };
            self.picker = Some(picker.with_typing());
            self.message = None;
        }
        if matches!(read, Read::Volumes(_)) {
            return self.volume_correction();
        }
        Vec::new()
    }

    /// The configuration was read again: an open confirmation (not saving) reads its
    /// preview again, for the target now configured (TUI-20).
    pub(super) fn refresh_confirm(&mut self) -> Vec<Work> {
        if self.confirm.as_ref().is_none_or(|c| c.saving) {
            return Vec::new();
        }
        let Some(target) = self.runpod_training_target() else {
            self.confirm = None;
            self.say(
                false,
                "the start was not confirmed: `training.target` is no longer a Runpod target"
                    .to_owned(),
            );
            return Vec::new();
        };
        let ask = self.runpod_ask(Listing::Gpus(target.clone()), Purpose::Preview);
        if let Some(confirm) = self.confirm.as_mut() {
            // A plain start's lines are the start's as configured now; a resume's and
            // auto mode's say more and are kept.
            let base = match (&confirm.then, &self.training.start) {
                (Action::Start { resume_from: None }, Ok(start)) => start.clone(),
                _ => confirm.base().to_vec(),
            };
            let mut fresh = StartConfirm::new(base, target)
                .asking(confirm.title().to_owned(), confirm.then.clone());
            fresh.read_seq = ask.seq;
            *confirm = fresh;
        }
        vec![Work::ReadRunpod(ask)]
    }

    /// A read for the start confirmation ended: its preview, or the data center picker.
    fn confirm_read(&mut self, seq: u64, purpose: Purpose, read: Result<Read, String>) {
        let Some(confirm) = self.confirm.as_mut() else {
            return;
        };
        match (purpose, read) {
            // Only the read this confirmation asked for, of its target.
            (Purpose::Preview, _) if seq != confirm.read_seq => {}
            (Purpose::Preview, read) => {
                confirm.read = Some(read.and_then(|r| match r {
                    Read::Gpus(gpus) if gpus.name == confirm.target => Ok(*gpus),
                    _ => Err("the GPU catalog was not read".to_owned()),
                }));
            }
            (_, Err(why)) => self.say(false, why),
            (Purpose::ConfirmPicker(key), Ok(Read::DataCenters(centers))) => {
                let current = confirm.changed_target().and_then(|t| t.data_center_ids);
                if self.picker.is_none() {
                    self.picker = Some(Picker::data_centers(key, &centers, current.as_ref()));
                }
                confirm.centers = Some(centers);
            }
            (_, Ok(_)) => {}
        }
    }

    /// TUI-24: when the selected field is a Runpod target's `gpu_count` or `max_hours`,
    /// its hint, read once for each configuration.
    pub(super) fn hint_work(&mut self) -> Vec<Work> {
        let Some(key) = self.project.selected_entry().map(|e| e.key.clone()) else {
            return Vec::new();
        };
        let Some((target, field)) = key
            .strip_prefix("targets.")
            .and_then(|k| k.split_once('.'))
            .map(|(t, f)| (t.to_owned(), f))
        else {
            return Vec::new();
        };
        let runpod = self
            .project
            .value(&format!("targets.{target}.kind"))
            .as_deref()
            == Some("runpod");
        if !runpod || !matches!(field, "gpu_count" | "max_hours") || self.tab != 0 {
            return Vec::new();
        }
        let generation = self.config.generation;
        if self
            .hints
            .get(&target)
            .is_some_and(|(read_for, _)| *read_for == generation)
        {
            return Vec::new();
        }
        self.hints.insert(target.clone(), (generation, None));
        vec![Work::ReadRunpod(self.runpod_ask(
            Listing::Gpus(target),
            Purpose::Hint(generation),
        ))]
    }

    /// A hint's read ended.
    fn hint_read(&mut self, target: String, generation: u64, read: Result<Read, String>) {
        let text = match read {
            Ok(Read::Gpus(gpus)) => gpus.preview(None).hint(&gpus.gpus),
            Ok(_) => return,
            Err(why) => format!("no hint: {why}"),
        };
        if self
            .hints
            .get(&target)
            .is_some_and(|(g, _)| *g == generation)
        {
            self.hints.insert(target, (generation, Some(text)));
        }
    }

    /// The hint shown under the selected field, once read (TUI-24).
    #[must_use]
    pub fn hint(&self) -> Option<&str> {
        let key = &self.project.selected_entry()?.key;
        let (target, field) = key.strip_prefix("targets.")?.split_once('.')?;
        // POD-49: a grow of the network volume is permanent.
        if field == "max_volume_gb" {
            return Some(crate::config::MAX_VOLUME_GB_NOTE);
        }
        if !matches!(field, "gpu_count" | "max_hours") {
            return None;
        }
        match self.hints.get(target)? {
            (generation, Some(text)) if *generation == self.config.generation => Some(text),
            (_, None) => Some("reading the Runpod catalog for a hint…"),
            _ => None,
        }
    }

    /// `data_center_ids` of target `target` as configured.
    fn configured_centers(&self, target: &str) -> Option<ListOrAuto> {
        let shown = self
            .project
            .shown(&format!("targets.{target}.data_center_ids"))?;
        let value: toml::Value = toml::from_str(&format!("v = {shown}")).ok()?;
        match value.get("v")? {
            toml::Value::String(s) => Some(ListOrAuto::Auto(s.clone())),
            toml::Value::Array(items) => Some(ListOrAuto::List(
                items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_owned))
                    .collect(),
            )),
            _ => None,
        }
    }

    /// The configured volume of a Runpod target that the latest listing holds: its ID
    /// and data center (TUI-22).
    fn listed_volume(&self, target: &str) -> Option<&NetworkVolume> {
        let id = self
            .project
            .value(&format!("targets.{target}.network_volume_id"))?;
        self.volumes.as_ref()?.iter().find(|v| v.id == id)
    }

    /// TUI-22: the configured volume lives in another data center than configured:
    /// correct `data_center_ids` in a write of its own, said on the status line.
    fn volume_correction(&mut self) -> Vec<Work> {
        let targets: Vec<String> = self
            .project
            .keys()
            .filter_map(|k| {
                k.strip_prefix("targets.")?
                    .strip_suffix(".network_volume_id")
                    .map(str::to_owned)
            })
            .collect();
        for target in targets {
            let Some(volume) = self.listed_volume(&target) else {
                continue;
            };
            let volume_centers = vec![volume.data_center.clone()];
            if volume.data_center.is_empty()
                || self.configured_centers(&target)
                    == Some(ListOrAuto::List(volume_centers.clone()))
            {
                continue;
            }
            let key = format!("targets.{target}.data_center_ids");
            let from_env = |key: &str| {
                matches!(
                    self.project.source(key),
                    Some(Source::DotEnv { .. } | Source::Env { .. })
                )
            };
            // The environment's value is not the file's to correct.
            if from_env(&key) || from_env(&format!("targets.{target}.network_volume_id")) {
                continue;
            }
            let (id, center) = (volume.id.clone(), volume.data_center.clone());
            let work =
                self.edit_config(vec![Change::Set(key.clone(), list_value(&volume_centers))]);
            if !work.is_empty() {
                self.say(
                    true,
                    format!("volume `{id}` lives in {center}: `{key}` corrected to [\"{center}\"]"),
                );
            }
            return work;
        }
        Vec::new()
    }

    /// TUI-22: a volume chosen by its ID (picked or typed) that the latest listing holds
    /// brings its data center into the same write, unless the write sets that too.
    pub(super) fn with_volume_center(&self, mut changes: Vec<Change>) -> Vec<Change> {
        let mut extra = Vec::new();
        for change in &changes {
            let Change::Set(key, value) = change else {
                continue;
            };
            let Some(prefix) = key.strip_suffix(".network_volume_id") else {
                continue;
            };
            let centers = format!("{prefix}.data_center_ids");
            if changes.iter().any(|c| c.key() == centers) {
                continue;
            }
            if let Some(volume) = self
                .volumes
                .iter()
                .flatten()
                .find(|v| Some(v.id.as_str()) == value.as_str() && !v.data_center.is_empty())
            {
                extra.push(Change::Set(
                    centers,
                    list_value(std::slice::from_ref(&volume.data_center)),
                ));
            }
        }
        changes.extend(extra);
        changes
    }

    /// TUI-22: while a listed volume is configured, `data_center_ids` may only be its
    /// data center.
    pub(super) fn volume_refusal(&self, changes: &[Change]) -> Option<String> {
        changes.iter().find_map(|change| {
            let key = change.key();
            let target = key
                .strip_prefix("targets.")?
                .strip_suffix(".data_center_ids")?;
            let volume = self.listed_volume(target)?;
            // The volume itself changing in the same write is the volume's pick.
            let volume_key = format!("targets.{target}.network_volume_id");
            if changes.iter().any(|c| c.key() == volume_key) {
                return None;
            }
            let fits = matches!(change, Change::Set(_, toml_edit::Value::Array(ids))
                if ids.len() == 1 && ids.get(0).and_then(toml_edit::Value::as_str) == Some(volume.data_center.as_str()));
            (!fits).then(|| {
                format!(
                    "volume `{}` lives in {}: `{key}` must be [\"{}\"]; choose a different volume to use another data center",
                    volume.id, volume.data_center, volume.data_center
                )
            })
        })
    }

    /// A key while a picker is open.
    pub(super) fn picker_key(&mut self, key: KeyEvent) -> Vec<Work> {
        let Some(picker) = self.picker.as_mut() else {
            return Vec::new();
        };
        // `q` leaves the picker and quits as anywhere (TUI-5); in the filter it is text.
        if key.code == crossterm::event::KeyCode::Char('?') && !picker.filtering() {
            self.help = true;
            return Vec::new();
        }
        if key.code == crossterm::event::KeyCode::Char('q') && !picker.filtering() {
            self.picker = None;
            if !self.confirm.as_ref().is_some_and(|c| c.saving) {
                self.confirm = None;
            }
            return self.apply(Action::Quit);
        }
        match picker.handle_key(key) {
            Outcome::Pending => Vec::new(),
            Outcome::Cancel => {
                self.picker = None;
                Vec::new()
            }
            Outcome::Type => {
                let key = picker.key.clone();
                self.picker = None;
                self.project.open_form(&key);
                Vec::new()
            }
            Outcome::Done(choice) => {
                let field = picker.key.clone();
                self.picker = None;
                if let Some(confirm) = self.confirm.as_mut() {
                    confirm.picked(field.ends_with(".gpu_types"), &choice);
                    return Vec::new();
                }
                let changes = self.picked_changes(&field, choice);
                self.edit_config(changes)
            }
        }
    }

    /// What a pick in the Project view writes.
    fn picked_changes(&self, key: &str, picked: Picked) -> Vec<Change> {
        let prefix = key.rsplit_once('.').map_or("", |(p, _)| p);
        match picked {
            Picked::Auto => vec![Change::Set(key.to_owned(), toml_edit::Value::from("auto"))],
            Picked::List(ids) => {
                let mut changes = vec![Change::Set(key.to_owned(), list_value(&ids))];
                // TUI-25: a list of GPU types unsets the `"auto"`-only limits beside it.
                if key.ends_with(".gpu_types") {
                    changes.extend(
                        ["min_vram_gb", "max_price_per_hour"]
                            .iter()
                            .map(|limit| format!("{prefix}.{limit}"))
                            .filter(|k| self.project.value(k).is_some())
                            .map(Change::Unset),
                    );
                }
                changes
            }
            // TUI-22: a volume brings its data center (`edit_config`).
            Picked::One(value) => vec![Change::Set(
                key.to_owned(),
                toml_edit::Value::from(value.as_str()),
            )],
            Picked::Unset => vec![Change::Unset(key.to_owned())],
        }
    }

    /// A key while the start confirmation is open (TUI-44).
    pub(super) fn confirm_key(&mut self, key: KeyEvent) -> Vec<Work> {
        let Some(confirm) = self.confirm.as_ref() else {
            return Vec::new();
        };
        let target = confirm.target.clone();
        if key.code == crossterm::event::KeyCode::Char('?') {
            self.help = true;
            return Vec::new();
        }
        if key.code == crossterm::event::KeyCode::Char('q') {
            if !confirm.saving {
                self.confirm = None;
            }
            return self.apply(Action::Quit);
        }
        match confirm.handle_key(key) {
            ConfirmKey::Pending => Vec::new(),
            ConfirmKey::No => {
                self.confirm = None;
                Vec::new()
            }
            ConfirmKey::Yes => {
                let changes = confirm.changes();
                if changes.is_empty() {
                    let (then, estimate) = (confirm.then.clone(), confirm.estimate());
                    self.confirm = None;
                    return self.proceed(then, estimate);
                }
                let work = self.edit_config(changes);
                match self.confirm.as_mut() {
                    Some(confirm) if !work.is_empty() => confirm.saving = true,
                    // Refused at once (a write runs, a key is used): nothing starts.
                    _ => {
                        self.confirm = None;
                        let why = self
                            .message
                            .as_ref()
                            .map(|m| m.text.clone())
                            .unwrap_or_default();
                        self.say(
                            false,
                            format!("not started: the choice was not saved ({why})"),
                        );
                    }
                }
                work
            }
            pick @ (ConfirmKey::PickGpus | ConfirmKey::PickCenters) => {
                let gpus = pick == ConfirmKey::PickGpus;
                let field = if gpus { "gpu_types" } else { "data_center_ids" };
                let field_key = format!("targets.{target}.{field}");
                if let Some(why) = self.pick_refused(&field_key) {
                    self.say(false, why);
                    return Vec::new();
                }
                let read = match &confirm.read {
                    Some(Ok(read)) => read,
                    Some(Err(why)) => {
                        let text = format!("nothing to pick from: {why}");
                        self.say(false, text);
                        return Vec::new();
                    }
                    None => {
                        self.say(false, "the Runpod catalog is being read".to_owned());
                        return Vec::new();
                    }
                };
                let changed = confirm
                    .changed_target()
                    .unwrap_or_else(|| read.target.clone());
                if gpus {
                    self.picker = Some(Picker::gpu_types(
                        field_key,
                        &read.gpus,
                        changed.gpu_count,
                        read.estimate.as_ref().ok().copied(),
                        &changed.gpu_types,
                    ));
                    return Vec::new();
                }
                if let Some(centers) = &confirm.centers {
                    self.picker = Some(Picker::data_centers(
                        field_key,
                        centers,
                        changed.data_center_ids.as_ref(),
                    ));
                    return Vec::new();
                }
                let ask = self.runpod_ask(Listing::DataCenters, Purpose::ConfirmPicker(field_key));
                self.pick_awaited = Some(ask.seq);
                vec![Work::ReadRunpod(ask)]
            }
        }
    }

    /// Does what the confirmation asked for (`then`); a start or a resume gets the VRAM
    /// estimate it showed (POD-19); auto mode's start computes it again once the data
    /// is made.
    fn proceed(&mut self, then: Action, estimate: Option<f64>) -> Vec<Work> {
        let mut work = self.apply(then);
        for w in &mut work {
            if let Work::Task { vram_estimate, .. } = w {
                *vram_estimate = estimate;
            }
        }
        work
    }

    /// Why `g`/`c` may not pick `key`: a write runs, the environment sets it, a task
    /// holds it (TUI-44).
    fn pick_refused(&self, key: &str) -> Option<String> {
        if let Some(why) = self.write_refused(std::iter::once(key)) {
            return Some(why);
        }
        match self.project.source(key) {
            Some(Source::DotEnv { var } | Source::Env { var }) => {
                Some(format!("`{key}` is set by `{var}`; change it in `.env`"))
            }
            _ => None,
        }
    }

    /// The confirmation's save ended: start when it was written, else close it and say
    /// why nothing started (TUI-44).
    pub(super) fn confirm_saved(&mut self, written: bool, why: Option<&str>) -> Vec<Work> {
        if !self.confirm.as_ref().is_some_and(|c| c.saving) {
            return Vec::new();
        }
        let Some(confirm) = self.confirm.take() else {
            return Vec::new();
        };
        if written {
            let estimate = confirm.estimate();
            return self.proceed(confirm.then, estimate);
        }
        self.say(
            false,
            format!(
                "not started: the choice was not saved ({})",
                why.unwrap_or("refused")
            ),
        );
        Vec::new()
    }
}

#[cfg(test)]
#[path = "runpod_tests.rs"]
mod tests;
