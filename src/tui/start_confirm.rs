//! The start confirmation of a run on a Runpod target (TUI-43, TUI-44), of a resume
//! there (TUI-48) and of auto mode that ends in such a start (TUI-38): the target,
//! model and data, then what one catalog read says the run would get (the VRAM estimate
//! and `"auto"`'s floor, each GPU type's pod price, VRAM, stock and fit, what `"auto"`
//! picks now, the highest cost at `max_hours`, what `max_cost_usd` lets it spend). `g`
//! and `c` pick GPU types and data centers (picking only); `y` saves the picks first and
//! starts only once the save succeeded. Pure: the app reads and writes.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::action::Action;
use super::components::picker::Picked;
use super::theme::Theme;
use crate::config::edit::Change;
use crate::config::{ListOrAuto, RunpodTarget};
use crate::runpod::catalog::wire::DataCenter;
use crate::runs::pod::preview::GpuRead;

/// The confirmation's keys, for the `?` overlay (TUI-44).
pub const KEYS: &[(&str, &str)] = &[
    ("y", "save the picks, then go on"),
    ("g", "pick the GPU types"),
    ("c", "pick the data centers"),
    ("n Esc Enter", "close: nothing is saved or started"),
];

/// What a key asks of the confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmKey {
    /// `y`: save the picks, then start.
    Yes,
    /// `n`, Esc, Enter: close; nothing is saved or started.
    No,
    /// `g`: the GPU type picker.
    PickGpus,
    /// `c`: the data center picker.
    PickCenters,
    /// Nothing.
    Pending,
}

/// The confirmation's state.
#[derive(Debug, Clone, PartialEq)]
pub struct StartConfirm {
    /// The dialog's title.
    title: String,
    /// What `y` does once the picks are saved: the start, a resume or auto mode.
    pub then: Action,
    /// The target, model and data lines.
    base: Vec<String>,
    /// The Runpod target's name.
    pub target: String,
    /// The catalog read: `None` while it runs.
    pub read: Option<Result<GpuRead, String>>,
    /// The data centers, once read for `c`.
    pub centers: Option<Vec<DataCenter>>,
    /// `gpu_types` as picked here.
    gpu_types: Option<ListOrAuto>,
    /// `data_center_ids` as picked here.
    data_center_ids: Option<ListOrAuto>,
    /// `y` was pressed: the picks are being saved, the start follows.
    pub saving: bool,
    /// The number of the catalog read it waits for.
    pub read_seq: u64,
}

fn to_list_or_auto(picked: &Picked) -> Option<ListOrAuto> {
    match picked {
        Picked::Auto => Some(ListOrAuto::Auto("auto".to_owned())),
        Picked::List(ids) => Some(ListOrAuto::List(ids.clone())),
        Picked::One(_) | Picked::Unset => None,
    }
}

fn value_of(value: &ListOrAuto) -> toml_edit::Value {
    match value {
        ListOrAuto::Auto(_) => toml_edit::Value::from("auto"),
        ListOrAuto::List(ids) => toml_edit::Value::Array(ids.iter().map(String::as_str).collect()),
    }
}

fn text_of(value: Option<&ListOrAuto>) -> String {
    match value {
        None => "unset".to_owned(),
        Some(ListOrAuto::Auto(_)) => "\"auto\"".to_owned(),
        Some(ListOrAuto::List(ids)) => format!(
            "[{}]",
            ids.iter()
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl StartConfirm {
    /// A confirmation of a start on Runpod target `target`, showing `base` first; its
    /// catalog read is to be started.
    #[must_use]
    pub fn new(base: Vec<String>, target: String) -> Self {
        Self {
            title: "Start a training run".to_owned(),
            then: Action::Start { resume_from: None },
            base,
            target,
            read: None,
            centers: None,
            gpu_types: None,
            data_center_ids: None,
            saving: false,
            read_seq: 0,
        }
    }

    /// The confirmation titled `title`, doing `then` on `y` (a resume, auto mode).
    #[must_use]
    pub fn asking(mut self, title: impl Into<String>, then: Action) -> Self {
        self.title = title.into();
        self.then = then;
        self
    }

    /// The dialog's title.
    #[must_use]
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The target, model and data lines.
    #[must_use]
    pub fn base(&self) -> &[String] {
        &self.base
    }

    /// The VRAM estimate shown, once read.
    #[must_use]
    pub fn estimate(&self) -> Option<f64> {
        match &self.read {
            Some(Ok(read)) => read.estimate.as_ref().ok().copied(),
            _ => None,
        }
    }

    /// The target with the picks made here, once read.
    #[must_use]
    pub fn changed_target(&self) -> Option<RunpodTarget> {
        let Some(Ok(read)) = &self.read else {
            return None;
        };
        let mut target = read.target.clone();
        if let Some(types) = &self.gpu_types {
            target.gpu_types = types.clone();
            if matches!(types, ListOrAuto::List(_)) {
                target.min_vram_gb = None;
                target.max_price_per_hour = None;
            }
        }
        if let Some(centers) = &self.data_center_ids {
            target.data_center_ids = Some(centers.clone());
        }
        Some(target)
    }

    /// Takes a pick of `gpu_types` (`gpus`) or `data_center_ids`.
    pub fn picked(&mut self, gpus: bool, picked: &Picked) {
        let value = to_list_or_auto(picked);
        if gpus {
            self.gpu_types = value;
        } else {
            self.data_center_ids = value;
        }
        // A pick equal to the file's value is no change.
        if let Some(Ok(read)) = &self.read {
            if self.gpu_types.as_ref() == Some(&read.target.gpu_types) {
                self.gpu_types = None;
            }
            if self.data_center_ids.is_some()
                && self.data_center_ids.as_ref() == read.target.data_center_ids.as_ref()
            {
                self.data_center_ids = None;
            }
        }
    }

    /// The writes `y` makes first: each pick, and with a list of GPU types the
    /// `"auto"`-only limits set beside it unset (TUI-25).
    #[must_use]
    pub fn changes(&self) -> Vec<Change> {
        let key = |name: &str| format!("targets.{}.{name}", self.target);
        let mut changes = Vec::new();
        if let Some(types) = &self.gpu_types {
            changes.push(Change::Set(key("gpu_types"), value_of(types)));
            if let (ListOrAuto::List(_), Some(Ok(read))) = (types, &self.read) {
                if read.target.min_vram_gb.is_some() {
                    changes.push(Change::Unset(key("min_vram_gb")));
                }
                if read.target.max_price_per_hour.is_some() {
                    changes.push(Change::Unset(key("max_price_per_hour")));
                }
            }
        }
        if let Some(centers) = &self.data_center_ids {
            changes.push(Change::Set(key("data_center_ids"), value_of(centers)));
        }
        changes
    }

    /// The lines shown: the base, the preview (or that it is read, or why it failed),
    /// then what the picks change.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut lines = self.base.clone();
        match &self.read {
            None => lines.push("reading the Runpod catalog…".to_owned()),
            Some(Err(why)) => lines.push(format!("Runpod catalog not read: {why}")),
            Some(Ok(read)) => {
                let changed = self.changed_target();
                lines.extend(read.preview(changed.as_ref()).lines());
                if let Some(types) = &self.gpu_types {
                    lines.push(format!(
                        "changed gpu_types = {} (was {}), saved on `y`",
                        text_of(Some(types)),
                        text_of(Some(&read.target.gpu_types))
                    ));
                }
                if let Some(centers) = &self.data_center_ids {
                    lines.push(format!(
                        "changed data_center_ids = {} (was {}), saved on `y`",
                        text_of(Some(centers)),
                        text_of(read.target.data_center_ids.as_ref())
                    ));
                }
            }
        }
        lines.push(String::new());
        lines.push(if self.saving {
            "saving the choice, then starting…".to_owned()
        } else {
            "g GPU types   c data centers".to_owned()
        });
        lines
    }

    /// What `key` asks.
    #[must_use]
    pub fn handle_key(&self, key: KeyEvent) -> ConfirmKey {
        if self.saving {
            return ConfirmKey::Pending;
        }
        match key.code {
            KeyCode::Char('y') => ConfirmKey::Yes,
            KeyCode::Char('n') | KeyCode::Esc | KeyCode::Enter => ConfirmKey::No,
            KeyCode::Char('g') => ConfirmKey::PickGpus,
            KeyCode::Char('c') => ConfirmKey::PickCenters,
            _ => ConfirmKey::Pending,
        }
    }

    /// Draws it as the start dialog.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: Theme) {
        super::components::dialog::render(&self.title, &self.lines(), area, buf, theme);
    }
}

#[cfg(test)]
#[path = "start_confirm_tests.rs"]
pub(crate) mod tests;
