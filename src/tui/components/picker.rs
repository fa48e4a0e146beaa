//! The Runpod catalog picker (TUI-21..TUI-23, TUI-27, TUI-28): GPU types and data
//! centers (several, ordered by toggling, top row `auto`), a network volume (top row
//! `none`) or a pod template (top row `default`). A pure state machine over the rows the
//! builders make from one catalog read; the views turn its [`Picked`] into a write.
//!
//! Keys: `k`/`j`, Up/Down, PgUp/PgDn, Home/End move; Space toggles; `J`/`K` move the
//! toggled entry under the cursor later/earlier; `o` cycles the sort (toggled entries stay
//! on top, in their order); `/` filters (Enter keeps, Esc clears); Enter keeps; `t` types
//! the value instead (where offered); Esc cancels.

use std::fmt::Write as _;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::super::theme::Theme;
use crate::config::ListOrAuto;
use crate::runpod::catalog::listing::{by_price, price_text};
use crate::runpod::catalog::preview::Fit;
use crate::runpod::catalog::wire::{CatalogGpu, DataCenter, NetworkVolume, Template};

/// One entry as a builder makes it: its value, its cells, why it cannot be chosen.
type RowSpec = (String, Vec<String>, Option<String>);

/// Rows a page key moves.
const PAGE: usize = 10;

/// What the picker chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `gpu_types`: several, or `auto`.
    GpuTypes,
    /// `data_center_ids`: several, or `auto`.
    DataCenters,
    /// `network_volume_id`: one, or `none`.
    Volume,
    /// `image`: one template's image, or `default`.
    Template,
}

impl Kind {
    fn several(self) -> bool {
        matches!(self, Self::GpuTypes | Self::DataCenters)
    }

    /// The top row's word.
    fn top(self) -> &'static str {
        match self {
            Self::GpuTypes | Self::DataCenters => "auto",
            Self::Volume => "none",
            Self::Template => "default",
        }
    }
}

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What is written: the ID (a template's image).
    pub value: String,
    /// The cells shown after the marker.
    pub cells: Vec<String>,
    /// Its place in each sort order.
    rank: Vec<usize>,
    /// Cannot be toggled on or picked (a `small` GPU type, a template without image).
    pub disabled: Option<String>,
}

/// What Enter chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Picked {
    /// The top row of GPU types or data centers: `"auto"`.
    Auto,
    /// The toggled entries, in their order.
    List(Vec<String>),
    /// One entry's value (volume, template image).
    One(String),
    /// The top row of a volume or template: unset the key.
    Unset,
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The picker stays.
    Pending,
    /// Esc: nothing changes.
    Cancel,
    /// Enter: this.
    Done(Picked),
    /// `t`: type the value in the field's form instead.
    Type,
}

/// The picker's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    /// What it picks.
    pub kind: Kind,
    /// The dotted key it writes.
    pub key: String,
    /// The title's words before the sort.
    title: String,
    header: Vec<String>,
    entries: Vec<Entry>,
    sorts: Vec<&'static str>,
    sort: usize,
    /// Toggled values, in their order.
    toggled: Vec<String>,
    /// The row under the cursor (0: the top row).
    cursor: usize,
    filter: String,
    filtering: bool,
    typing: bool,
    /// Why the last key did nothing (a `small` type toggled on).
    pub note: Option<String>,
}

/// Ranks of `entries` for an ordering of their indices.
fn ranks(count: usize, orders: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut ranks = vec![vec![0; orders.len()]; count];
    for (sort, order) in orders.iter().enumerate() {
        for (place, index) in order.iter().enumerate() {
            ranks[*index][sort] = place;
        }
    }
    ranks
}

/// The indices `0..count` sorted by `compare`.
fn order_by(count: usize, compare: impl Fn(usize, usize) -> std::cmp::Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|a, b| compare(*a, *b));
    order
}

impl Picker {
    fn new(
        kind: Kind,
        key: String,
        title: String,
        header: &[&str],
        (rows, orders): (Vec<RowSpec>, Vec<Vec<usize>>),
        sorts: &[&'static str],
        current: &[String],
    ) -> Self {
        let ranks = ranks(rows.len(), &orders);
        let entries = rows
            .into_iter()
            .zip(ranks)
            .map(|((value, cells, disabled), rank)| Entry {
                value,
                cells,
                rank,
                disabled,
            })
            .collect();
        let mut picker = Self {
            kind,
            key,
            title,
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            entries,
            sorts: sorts.to_vec(),
            sort: 0,
            toggled: if kind.several() {
                current.to_vec()
            } else {
                Vec::new()
            },
            cursor: 0,
            filter: String::new(),
            filtering: false,
            typing: false,
            note: None,
        };
        // A configured list opens on its first entry, so Enter keeps it (TUI-27); `auto`
        // is the top row, one Home away.
        if kind.several() && !picker.toggled.is_empty() {
            picker.cursor = 1;
        }
        if let (false, Some(value)) = (kind.several(), current.first()) {
            picker.cursor = picker
                .rows()
                .iter()
                .position(|r| r.as_deref() == Some(value.as_str()))
                .unwrap_or(0);
        }
        picker
    }

    /// Offers `t` (type the value instead): from the Project view, not from the start
    /// confirmation (TUI-27, TUI-44).
    #[must_use]
    pub fn with_typing(mut self) -> Self {
        self.typing = true;
        self
    }

    /// The GPU type picker of `key` (TUI-21, TUI-28): Secure Cloud types with the pod's
    /// price for `gpu_count`, VRAM, stock, the data centers with stock and the fit
    /// against `estimate`; `small` types cannot be toggled on.
    #[must_use]
    pub fn gpu_types(
        key: String,
        gpus: &[CatalogGpu],
        gpu_count: u32,
        estimate: Option<f64>,
        current: &ListOrAuto,
    ) -> Self {
        let gpus: Vec<&CatalogGpu> = gpus.iter().filter(|g| g.secure).collect();
        let stocked = |g: &CatalogGpu| {
            g.data_centers
                .iter()
                .filter(|d| d.availability.in_stock())
                .count()
        };
        let rows = gpus
            .iter()
            .map(|g| {
                let fit = Fit::of(g.memory, estimate);
                let price = g
                    .secure_price()
                    .map_or_else(|| "-".to_owned(), |p| price_text(p * f64::from(gpu_count)));
                (
                    g.id.clone(),
                    vec![
                        g.id.clone(),
                        price,
                        g.memory.to_string(),
                        g.availability.as_str().to_owned(),
                        stocked(g).to_string(),
                        fit.as_str().to_owned(),
                    ],
                    if fit == Fit::Small {
                        Some("it has less VRAM than the estimate (small)".to_owned())
                    } else if g.max_count.secure < gpu_count {
                        Some(format!(
                            "a pod has at most {} of it, not gpu_count = {gpu_count}",
                            g.max_count.secure
                        ))
                    } else {
                        None
                    },
                )
            })
            .collect();
        let key_of = |i: usize| (gpus[i].secure_price(), gpus[i].memory, gpus[i].id.as_str());
        let orders = vec![
            order_by(gpus.len(), |a, b| by_price(key_of(a), key_of(b))),
            order_by(gpus.len(), |a, b| {
                gpus[b]
                    .memory
                    .cmp(&gpus[a].memory)
                    .then_with(|| by_price(key_of(a), key_of(b)))
            }),
            order_by(gpus.len(), |a, b| {
                stocked(gpus[b])
                    .cmp(&stocked(gpus[a]))
                    .then_with(|| by_price(key_of(a), key_of(b)))
            }),
        ];
        let estimate = estimate.map_or_else(
            || "no VRAM estimate".to_owned(),
            |gb| format!("estimate {gb:.1} GB per GPU"),
        );
        Self::new(
            Kind::GpuTypes,
            key,
            format!("GPU types, {gpu_count} per pod, {estimate}"),
            &["ID", "$/H", "VRAM", "STOCK", "DCS", "FIT"],
            (rows, orders),
            &["price", "VRAM", "data centers with stock"],
            &list_of(current),
        )
    }

    /// The data center picker of `key` (TUI-21).
    #[must_use]
    pub fn data_centers(key: String, centers: &[DataCenter], current: Option<&ListOrAuto>) -> Self {
        let rows = centers
            .iter()
            .map(|c| {
                let stocked = c
                    .gpu_availability
                    .iter()
                    .filter(|g| g.availability.in_stock())
                    .count();
                (
                    c.id.clone(),
                    vec![
                        c.id.clone(),
                        c.name.clone(),
                        c.region.clone(),
                        stocked.to_string(),
                    ],
                    None,
                )
            })
            .collect();
        let orders = vec![
            order_by(centers.len(), |a, b| centers[a].id.cmp(&centers[b].id)),
            order_by(centers.len(), |a, b| {
                centers[a]
                    .region
                    .cmp(&centers[b].region)
                    .then_with(|| centers[a].id.cmp(&centers[b].id))
            }),
        ];
        Self::new(
            Kind::DataCenters,
            key,
            "Data centers".to_owned(),
            &["ID", "NAME", "REGION", "GPU TYPES IN STOCK"],
            (rows, orders),
            &["ID", "region"],
            &current.map(list_of).unwrap_or_default(),
        )
    }

    /// The network volume picker of `key` (TUI-22).
    #[must_use]
    pub fn volumes(key: String, volumes: &[NetworkVolume], current: Option<&str>) -> Self {
        let rows = volumes
            .iter()
            .map(|v| {
                (
                    v.id.clone(),
                    vec![
                        v.id.clone(),
                        v.name.clone(),
                        format!("{} GB", v.size),
                        v.data_center.clone(),
                    ],
                    None,
                )
            })
            .collect();
        let orders = vec![order_by(volumes.len(), |a, b| {
            volumes[a].id.cmp(&volumes[b].id)
        })];
        Self::new(
            Kind::Volume,
            key,
            "Network volumes".to_owned(),
            &["ID", "NAME", "SIZE", "DATA CENTER"],
            (rows, orders),
            &["ID"],
            &current.map(str::to_owned).into_iter().collect::<Vec<_>>(),
        )
    }

    /// The pod template picker of `key` (TUI-23): a template without an image cannot be
    /// picked.
    #[must_use]
    pub fn templates(key: String, templates: &[Template], current: Option<&str>) -> Self {
        // One row per image: templates sharing one (the same image saved twice) are
        // one choice, their names and IDs listed together; those without an image stay
        // apart, each saying why it cannot be picked.
        let mut merged: Vec<(String, Vec<&str>, Vec<&str>)> = Vec::new();
        for t in templates.iter().filter(|t| !t.serverless) {
            let image = t.image.trim();
            match merged
                .iter_mut()
                .find(|(i, _, _)| !image.is_empty() && i == image)
            {
                Some((_, names, ids)) => {
                    names.push(&t.name);
                    ids.push(&t.id);
                }
                None => merged.push((image.to_owned(), vec![&t.name], vec![&t.id])),
            }
        }
        for (_, names, ids) in &mut merged {
            let mut pairs: Vec<(&str, &str)> =
                names.iter().copied().zip(ids.iter().copied()).collect();
            pairs.sort_unstable();
            *names = pairs.iter().map(|(n, _)| *n).collect();
            *ids = pairs.iter().map(|(_, i)| *i).collect();
        }
        let rows = merged
            .iter()
            .map(|(image, names, ids)| {
                (
                    image.clone(),
                    vec![names.join(", "), ids.join(", "), image.clone()],
                    image
                        .is_empty()
                        .then(|| "the template has no image".to_owned()),
                )
            })
            .collect();
        let orders = vec![order_by(merged.len(), |a, b| {
            merged[a]
                .1
                .cmp(&merged[b].1)
                .then_with(|| merged[a].2.cmp(&merged[b].2))
        })];
        Self::new(
            Kind::Template,
            key,
            "Pod templates".to_owned(),
            &["NAME", "ID", "IMAGE"],
            (rows, orders),
            &["name"],
            &current.map(str::to_owned).into_iter().collect::<Vec<_>>(),
        )
    }

    /// The toggled values, in their order.
    #[must_use]
    pub fn toggled(&self) -> &[String] {
        &self.toggled
    }

    /// Whether `/` is taking the filter's text.
    #[must_use]
    pub fn filtering(&self) -> bool {
        self.filtering
    }

    fn entry(&self, value: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.value == value)
    }

    fn matches(&self, entry: &Entry) -> bool {
        let filter = self.filter.to_lowercase();
        filter.is_empty()
            || entry
                .cells
                .iter()
                .any(|c| c.to_lowercase().contains(&filter))
    }

    /// The rows shown: `None` for the top row, then the toggled entries in their order,
    /// then the others that match the filter, in the sort.
    #[must_use]
    pub fn rows(&self) -> Vec<Option<String>> {
        let mut rest: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| !self.toggled.contains(&e.value) && self.matches(e))
            .collect();
        rest.sort_by_key(|e| e.rank[self.sort]);
        std::iter::once(None)
            .chain(self.toggled.iter().cloned().map(Some))
            .chain(rest.into_iter().map(|e| Some(e.value.clone())))
            .collect()
    }

    /// The value under the cursor (`None` on the top row).
    #[must_use]
    pub fn current(&self) -> Option<String> {
        self.rows().get(self.cursor).cloned().flatten()
    }

    fn move_to(&mut self, row: usize) {
        let last = self.rows().len().saturating_sub(1);
        self.cursor = row.min(last);
    }

    fn toggle(&mut self) {
        let Some(value) = self.current() else { return };
        if let Some(at) = self.toggled.iter().position(|v| *v == value) {
            self.toggled.remove(at);
            return;
        }
        if let Some(why) = self.entry(&value).and_then(|e| e.disabled.clone()) {
            self.note = Some(format!("`{value}` cannot be chosen: {why}"));
            return;
        }
        self.toggled.push(value);
        // The cursor follows the entry, now last of the toggled ones.
        self.cursor = self.toggled.len();
    }

    /// Moves the toggled entry under the cursor `delta` places in the order.
    fn shift(&mut self, delta: isize) {
        let Some(value) = self.current() else { return };
        let Some(at) = self.toggled.iter().position(|v| *v == value) else {
            self.note = Some("only a toggled entry moves in the order (Space toggles)".to_owned());
            return;
        };
        let Some(to) = at
            .checked_add_signed(delta)
            .filter(|t| *t < self.toggled.len())
        else {
            return;
        };
        self.toggled.swap(at, to);
        self.cursor = to + 1;
    }

    fn enter(&self) -> Outcome {
        let current = self.current();
        if self.kind.several() {
            return match current {
                None => Outcome::Done(Picked::Auto),
                Some(_) if !self.toggled.is_empty() => {
                    Outcome::Done(Picked::List(self.toggled.clone()))
                }
                Some(value) if self.entry(&value).is_some_and(|e| e.disabled.is_some()) => {
                    Outcome::Pending
                }
                Some(value) => Outcome::Done(Picked::List(vec![value])),
            };
        }
        match current {
            None => Outcome::Done(Picked::Unset),
            Some(value) if self.entry(&value).is_some_and(|e| e.disabled.is_some()) => {
                Outcome::Pending
            }
            Some(value) => Outcome::Done(Picked::One(value)),
        }
    }

    /// What `key` does.
    pub fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        self.note = None;
        if self.filtering {
            match key.code {
                KeyCode::Enter => self.filtering = false,
                KeyCode::Esc => {
                    self.filtering = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    self.filter.push(c);
                }
                _ => {}
            }
            self.move_to(self.cursor);
            return Outcome::Pending;
        }
        match key.code {
            // Esc clears a kept filter first, then cancels.
            KeyCode::Esc if !self.filter.is_empty() => {
                self.filter.clear();
                self.move_to(self.cursor);
            }
            KeyCode::Esc => return Outcome::Cancel,
            KeyCode::Enter => {
                let outcome = self.enter();
                if outcome == Outcome::Pending {
                    self.note = Some("that entry cannot be chosen".to_owned());
                }
                return outcome;
            }
            KeyCode::Up | KeyCode::Char('k') => self.move_to(self.cursor.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => self.move_to(self.cursor + 1),
            KeyCode::PageUp => self.move_to(self.cursor.saturating_sub(PAGE)),
            KeyCode::PageDown => self.move_to(self.cursor + PAGE),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.move_to(usize::MAX),
            KeyCode::Char(' ') if self.kind.several() => self.toggle(),
            KeyCode::Char('J') if self.kind.several() => self.shift(1),
            KeyCode::Char('K') if self.kind.several() => self.shift(-1),
            KeyCode::Char('o') => {
                self.sort = (self.sort + 1) % self.sorts.len();
                self.move_to(self.cursor);
            }
            KeyCode::Char('/') => self.filtering = true,
            KeyCode::Char('t') if self.typing => return Outcome::Type,
            _ => {}
        }
        Outcome::Pending
    }

    /// Its keys, for the `?` overlay (TUI-27): toggling and ordering only where several
    /// entries are kept, `t` only where typing is offered.
    #[must_use]
    pub fn keys(&self) -> Vec<(&'static str, &'static str)> {
        let mut keys = vec![("k/j PgUp/PgDn", "move (Home/End: first, last)")];
        if self.kind.several() {
            keys.push(("Space", "toggle the entry (kept in toggling order)"));
            keys.push(("J / K", "move the toggled entry later / earlier"));
            keys.push(("Enter", "keep the toggled entries"));
        } else {
            keys.push(("Enter", "pick the entry"));
        }
        keys.push(("o", "cycle the sort (toggled ones stay on top)"));
        keys.push(("/", "filter (Enter keeps it, Esc clears it)"));
        if self.typing {
            keys.push(("t", "type the value instead"));
        }
        keys.push(("Esc", "cancel: nothing changes"));
        keys
    }

    /// The title: what, the sort, the filter.
    #[must_use]
    pub fn title(&self) -> String {
        let mut title = format!("{}, by {}", self.title, self.sorts[self.sort]);
        if !self.filter.is_empty() || self.filtering {
            let _ = write!(title, ", filter `{}`", self.filter);
        }
        title
    }

    fn keys_line(&self) -> String {
        let mut keys = Vec::new();
        if self.kind.several() {
            keys.extend(["Space toggle", "J/K order"]);
        }
        if self.sorts.len() > 1 {
            keys.push("o sort");
        }
        keys.extend(["/ filter", "Enter keep"]);
        if self.typing {
            keys.push("t type");
        }
        keys.push("Esc cancel");
        keys.join("  ")
    }

    /// The rows as text: a marker (`[1]` the first toggled, `[ ]`), then the cells
    /// aligned under the header, in `room` columns at most: the first column (names and
    /// IDs, the longest) is cut with `…` so that the others (price, stock, fit) show.
    fn lines(&self, room: usize) -> Vec<(String, bool)> {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for entry in &self.entries {
            for (i, cell) in entry.cells.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        let total = 5 + widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        if let Some(first) = widths.first_mut()
            && total > room
        {
            let floor = self.header.first().map_or(0, |h| h.chars().count()).max(8);
            *first = first.saturating_sub(total - room).max(floor);
        }
        let cut = |cell: &str, width: usize| {
            if cell.chars().count() <= width {
                return cell.to_owned();
            }
            let mut short: String = cell.chars().take(width.saturating_sub(1)).collect();
            short.push('…');
            short
        };
        let align = |cells: &[String]| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{:<w$}", cut(c, *w)))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        };
        let mut lines = vec![(format!("     {}", align(&self.header)), false)];
        for row in self.rows() {
            let Some(value) = row else {
                lines.push((format!("     {}", self.kind.top()), false));
                continue;
            };
            let Some(entry) = self.entry(&value) else {
                // A chosen value the catalog does not list (kept, never dropped).
                let at = self.toggled.iter().position(|v| *v == value).unwrap_or(0);
                lines.push((
                    format!("[{}]  {value}  (not in the listing)", at + 1),
                    false,
                ));
                continue;
            };
            let marker = match self.toggled.iter().position(|v| *v == value) {
                Some(at) => format!("[{}]", at + 1),
                None if self.kind.several() => "[ ]".to_owned(),
                None => "   ".to_owned(),
            };
            lines.push((
                format!("{marker:<4} {}", align(&entry.cells)),
                entry.disabled.is_some(),
            ));
        }
        lines
    }

    /// Draws the picker centred in `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: Theme) {
        let lines = self.lines(usize::from(area.width.saturating_sub(4)));
        let keys = self.keys_line();
        let width = lines
            .iter()
            .map(|(l, _)| l.chars().count())
            .chain([keys.chars().count(), self.title().chars().count() + 4])
            .max()
            .unwrap_or(40);
        let width = u16::try_from(width + 2)
            .unwrap_or(u16::MAX)
            .min(area.width.saturating_sub(2));
        // Borders, the header and the keys around the rows.
        let height = u16::try_from(lines.len() + 3)
            .unwrap_or(u16::MAX)
            .min(area.height.saturating_sub(2));
        let rect = super::centered(area, width, height);
        Clear.render(rect, buf);
        buf.set_style(rect, theme.base());
        // Rows inside: the header, the list, a note or the keys.
        let list_height = usize::from(rect.height.saturating_sub(4)).max(1);
        let first = self.cursor.saturating_sub(list_height - 1);
        let mut text = vec![Line::styled(lines[0].0.clone(), theme.title())];
        for (row, (line, disabled)) in lines
            .iter()
            .skip(1)
            .enumerate()
            .skip(first)
            .take(list_height)
        {
            let style = if row == self.cursor {
                theme.selected()
            } else if *disabled {
                theme.dim()
            } else {
                theme.text()
            };
            text.push(Line::styled(line.clone(), style));
        }
        let bottom = self.note.clone().unwrap_or(keys);
        text.push(Line::styled(bottom, theme.dim()));
        Paragraph::new(text)
            .block(
                Block::new()
                    .borders(Borders::ALL)
                    .title(Span::styled(format!(" {} ", self.title()), theme.title())),
            )
            .render(rect, buf);
    }
}

/// The IDs of a configured `ListOrAuto` (none for `"auto"`).
fn list_of(value: &ListOrAuto) -> Vec<String> {
    match value {
        ListOrAuto::List(ids) => ids.clone(),
        ListOrAuto::Auto(_) => Vec::new(),
    }
}

#[cfg(test)]
#[path = "picker_tests.rs"]
mod tests;
