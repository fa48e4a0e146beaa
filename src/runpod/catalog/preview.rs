//! What a Runpod run would get, read before it starts (TUI-43, POD-17, POD-20, POD-23):
//! the VRAM estimate and the floor it gives `"auto"`, each GPU type with its pod price,
//! VRAM, stock and fit, what `"auto"` would pick now, the highest cost at `max_hours`,
//! and what `max_cost_usd` lets the run spend. Pure: the catalog and the estimate are
//! read by the caller (`runs::pod::preview`).

use super::auto::{Candidate, Floor, Placement, Request, Walk, describe};
use super::listing::price_text;
use super::wire::{CatalogGpu, Stock};
use crate::config::{ListOrAuto, RunpodTarget};

/// How many of `"auto"`'s candidates the preview lists (the rest are counted).
pub const AUTO_SHOWN: usize = 5;

/// Share of `max_cost_usd` at which the pod is snapshotted (POD-41).
pub const SNAPSHOT_SHARE: f64 = 0.95;

/// How long before the cap is reached the snapshot is asked at the latest (POD-41: 15
/// minutes), in hours.
pub const SNAPSHOT_LEAD_HOURS: f64 = 0.25;

/// How well a GPU type's memory fits the VRAM estimate (POD-20).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// At least 10% of the memory spare.
    Ok,
    /// Enough, but less than 10% of the memory spare.
    Tight,
    /// Less memory than the estimate.
    Small,
    /// No estimate.
    Unknown,
}

impl Fit {
    /// The fit of `vram` GB per GPU against `estimate` GB.
    #[must_use]
    pub fn of(vram: u32, estimate: Option<f64>) -> Self {
        let Some(needed) = estimate.filter(|e| e.is_finite() && *e > 0.0) else {
            return Self::Unknown;
        };
        let vram = f64::from(vram);
        if vram < needed {
            Self::Small
        } else if vram - needed < vram * 0.1 {
            Self::Tight
        } else {
            Self::Ok
        }
    }

    /// The FIT column's word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Tight => "tight",
            Self::Small => "small",
            Self::Unknown => "?",
        }
    }
}

/// One GPU type of the preview.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRow {
    /// GPU type ID.
    pub id: String,
    /// Whether the catalog lists it (a listed type may have left it).
    pub listed: bool,
    /// VRAM per GPU, GB.
    pub vram: u32,
    /// Price of the pod (Secure Cloud price × `gpu_count`), USD per hour.
    pub pod_price: Option<f64>,
    /// Overall stock for `gpu_count`.
    pub stock: Stock,
    /// Fit against the estimate.
    pub fit: Fit,
}

/// What `"auto"` would pick now.
#[derive(Debug, Clone, PartialEq)]
pub enum AutoPick {
    /// The GPU types are listed: nothing to pick.
    NotAuto,
    /// The order it would try, first first.
    Order(Vec<Candidate>),
    /// Nothing fits (the run would fail before any pod, POD-16).
    Nothing(String),
}

/// The preview of a start on a Runpod target.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    /// GPUs per pod.
    pub gpu_count: u32,
    /// The VRAM estimate in GB, or why there is none.
    pub estimate: Result<f64, String>,
    /// The floor `"auto"` uses (`min_vram_gb`, else the estimate).
    pub floor: Floor,
    /// The types the run may get: the listed ones, or `"auto"`'s first ones.
    pub types: Vec<TypeRow>,
    /// `"auto"`'s pick.
    pub auto: AutoPick,
    /// `"auto"` candidates not listed in `types`.
    pub more: usize,
    /// The highest pod price among the types the run may get, USD per hour.
    pub highest_rate: Option<f64>,
    /// Whether some of those types have no listed price.
    pub unknown_prices: bool,
    /// `max_hours`.
    pub max_hours: f64,
    /// `max_cost_usd`.
    pub cap: Option<f64>,
    /// `data_center_ids = "auto"` with listed types: the data centers it would pick, or
    /// why there are none (POD-14, POD-16).
    pub centers: Option<Result<Vec<String>, String>>,
}

/// The floor of `"auto"`: `min_vram_gb` when set, else the estimate (POD-19).
#[must_use]
pub fn floor(target: &RunpodTarget, estimate: &Result<f64, String>) -> Floor {
    match (target.min_vram_gb, estimate) {
        (Some(gb), _) => Floor::Set(gb),
        (None, Ok(gb)) => Floor::Estimate(*gb),
        (None, Err(_)) => Floor::None,
    }
}

/// The stock of `gpu` where the target may place it: the best of its listed data
/// centers, else overall (POD-7).
fn stock(target: &RunpodTarget, gpu: &CatalogGpu) -> Stock {
    match &target.data_center_ids {
        Some(ListOrAuto::List(ids)) => ids
            .iter()
            .map(|id| gpu.stock_in(id))
            .max()
            .unwrap_or(Stock::None),
        _ => gpu.availability,
    }
}

/// With listed types and `data_center_ids = "auto"`: the data centers it would pick, or
/// POD-16's error.
fn listed_auto_centers(
    target: &RunpodTarget,
    gpus: &[CatalogGpu],
) -> Option<Result<Vec<String>, String>> {
    let (ListOrAuto::List(ids), Some(ListOrAuto::Auto(_))) =
        (&target.gpu_types, &target.data_center_ids)
    else {
        return None;
    };
    let types: Vec<&str> = ids.iter().map(String::as_str).collect();
    let centers = super::auto::auto_data_centers(gpus, &types);
    Some(if centers.is_empty() {
        Err(super::auto::AutoError::NoDataCenter {
            types: types.join(", "),
            gpu_count: target.gpu_count,
        }
        .to_string())
    } else {
        Ok(centers)
    })
}

/// The pod's price of one type: its Secure Cloud price times `gpu_count`.
fn pod_price(gpu: Option<&CatalogGpu>, gpu_count: u32) -> Option<f64> {
    gpu.and_then(CatalogGpu::secure_price)
        .map(|p| p * f64::from(gpu_count))
}

impl Preview {
    /// The preview of `target` from one catalog read (`gpus`, scoped to its `gpu_count`)
    /// and the estimate.
    #[must_use]
    pub fn build(
        target: &RunpodTarget,
        gpus: &[CatalogGpu],
        estimate: Result<f64, String>,
    ) -> Self {
        let count = target.gpu_count;
        let fit_of = |vram: u32| Fit::of(vram, estimate.as_ref().ok().copied());
        let find = |id: &str| gpus.iter().find(|g| g.secure && g.id == id);
        let floor = floor(target, &estimate);
        let stock_of = |g: &CatalogGpu| stock(target, g);
        let (types, auto, all): (Vec<TypeRow>, AutoPick, Vec<Option<f64>>) = match &target.gpu_types
        {
            ListOrAuto::List(ids) => {
                let rows: Vec<TypeRow> = ids
                    .iter()
                    .map(|id| {
                        let gpu = find(id);
                        TypeRow {
                            id: id.clone(),
                            listed: gpu.is_some(),
                            vram: gpu.map_or(0, |g| g.memory),
                            pod_price: pod_price(gpu, count),
                            stock: gpu.map_or(Stock::None, stock_of),
                            fit: gpu.map_or(Fit::Unknown, |g| fit_of(g.memory)),
                        }
                    })
                    .collect();
                let prices = rows.iter().map(|r| r.pod_price).collect();
                (rows, AutoPick::NotAuto, prices)
            }
            ListOrAuto::Auto(_) => {
                let placement = match &target.data_center_ids {
                    None => Placement::Any,
                    Some(ListOrAuto::List(ids)) => Placement::Listed(ids.clone()),
                    Some(ListOrAuto::Auto(_)) => Placement::Auto,
                };
                let walk = Walk::new(Request {
                    gpu_count: count,
                    floor,
                    max_price: target.max_price_per_hour,
                    placement,
                });
                match walk.first(gpus) {
                    Ok(order) => {
                        let prices = order
                            .iter()
                            .map(|c| c.price.map(|p| p * f64::from(count)))
                            .collect();
                        let rows = order
                            .iter()
                            .take(AUTO_SHOWN)
                            .map(|c| {
                                let gpu = find(&c.gpu_type);
                                TypeRow {
                                    id: c.gpu_type.clone(),
                                    listed: true,
                                    vram: c.vram,
                                    pod_price: c.price.map(|p| p * f64::from(count)),
                                    stock: gpu.map_or(Stock::None, stock_of),
                                    fit: fit_of(c.vram),
                                }
                            })
                            .collect();
                        (rows, AutoPick::Order(order), prices)
                    }
                    Err(error) => (Vec::new(), AutoPick::Nothing(error.to_string()), Vec::new()),
                }
            }
        };
        let more = match &auto {
            AutoPick::Order(order) => order.len().saturating_sub(types.len()),
            _ => 0,
        };
        Self {
            gpu_count: count,
            estimate,
            floor,
            types,
            auto,
            more,
            highest_rate: all.iter().flatten().copied().reduce(f64::max),
            unknown_prices: all.iter().any(Option::is_none),
            max_hours: target.max_hours,
            cap: target.max_cost_usd,
            centers: listed_auto_centers(target, gpus),
        }
    }

    /// The highest cost a run can reach at `max_hours`, at the highest listed rate.
    #[must_use]
    pub fn highest_cost(&self) -> Option<f64> {
        self.highest_rate.map(|rate| rate * self.max_hours)
    }

    /// The hint of `gpu_count` and `max_hours` (TUI-24): the most GPUs a pod can have
    /// with the chosen types (Secure Cloud overall for `"auto"`), and the highest cost a
    /// run can reach at `max_hours`.
    #[must_use]
    pub fn hint(&self, gpus: &[CatalogGpu]) -> String {
        let listed = matches!(self.auto, AutoPick::NotAuto);
        let most = gpus
            .iter()
            .filter(|g| g.secure)
            .filter(|g| !listed || self.types.iter().any(|t| t.id == g.id))
            .map(|g| g.max_count.secure)
            .max();
        let count = match (most, listed) {
            (Some(n), true) => format!("up to {n} GPUs per pod with the chosen types"),
            (Some(n), false) => format!("up to {n} GPUs per pod on Secure Cloud"),
            (None, _) => "no GPU count listed for the chosen types".to_owned(),
        };
        let hours = trim(self.max_hours);
        let cost = match (self.highest_cost(), self.unknown_prices) {
            (Some(cost), false) => format!("at most USD {cost:.2} in {hours} h"),
            (Some(cost), true) => {
                format!("at most USD {cost:.2} in {hours} h at the listed prices (some unlisted)")
            }
            (None, _) => "cost unknown: no listed price".to_owned(),
        };
        format!("{count}; {cost}")
    }

    /// Whether a listed type is `small` (the confirmation warns, POD-20).
    #[must_use]
    pub fn small(&self) -> Vec<&str> {
        self.types
            .iter()
            .filter(|r| r.fit == Fit::Small)
            .map(|r| r.id.as_str())
            .collect()
    }

    /// The smallest cap that buys 30 minutes at the highest rate, when `max_cost_usd` is
    /// below it (POD-23).
    #[must_use]
    pub fn cap_too_small(&self) -> Option<f64> {
        let smallest = self.highest_rate? * 0.5;
        self.cap.filter(|cap| *cap < smallest).map(|_| smallest)
    }

    /// The preview as the start confirmation shows it, one line each.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        lines.push(match &self.estimate {
            Ok(gb) => format!("VRAM    {gb:.1} GB per GPU (estimate)"),
            Err(why) => format!("VRAM    no estimate: {why}"),
        });
        if matches!(self.auto, AutoPick::Order(_) | AutoPick::Nothing(_)) {
            lines.push(match self.floor.describe() {
                Some(floor) => format!("        auto's floor: {floor}"),
                None => "        auto has no VRAM floor".to_owned(),
            });
        }
        match &self.auto {
            AutoPick::NotAuto => lines.push(format!(
                "GPUs    the listed types, tried in order, {} per pod:",
                self.gpu_count
            )),
            AutoPick::Order(order) => {
                let first = order.first().map_or_else(String::new, |c| {
                    // The pod's price, as the rows below show it (TUI-43).
                    describe(&Candidate {
                        price: c.price.map(|p| p * f64::from(self.gpu_count)),
                        ..c.clone()
                    })
                });
                let centers = order
                    .first()
                    .filter(|c| !c.data_centers.is_empty())
                    .map(|c| format!(" in {}", c.data_centers.join(", ")))
                    .unwrap_or_default();
                lines.push(format!(
                    "auto    would pick {first}{centers} now; in order, {} per pod:",
                    self.gpu_count
                ));
            }
            AutoPick::Nothing(why) => lines.push(format!("auto    would find nothing: {why}")),
        }
        for row in &self.types {
            lines.push(type_line(row));
        }
        match &self.centers {
            Some(Ok(ids)) => lines.push(format!("        data centers (auto): {}", ids.join(", "))),
            Some(Err(why)) => {
                lines.push(format!("warning {why}: the run would fail before any pod"));
            }
            None => {}
        }
        if self.more > 0 {
            lines.push(format!("        … and {} more", self.more));
        }
        for id in self.small() {
            lines.push(format!(
                "warning `{id}` has less VRAM than the estimate: training may run out of memory"
            ));
        }
        let hours = trim(self.max_hours);
        lines.push(match (self.highest_cost(), self.unknown_prices) {
            (Some(cost), false) => format!(
                "cost    at most USD {cost:.2} in max_hours = {hours} at the highest rate"
            ),
            (Some(cost), true) => format!(
                "cost    at most USD {cost:.2} in max_hours = {hours} at the highest listed rate; some types have no listed price (higher possible)"
            ),
            (None, _) => format!("cost    unknown: no listed price (max_hours = {hours})"),
        });
        if let Some(cap) = self.cap {
            // POD-41: the snapshot at 95% of the cap, or 15 minutes before it when that
            // is earlier (at the highest rate).
            let snapshot = self.highest_rate.map_or(cap * SNAPSHOT_SHARE, |rate| {
                (cap * SNAPSHOT_SHARE).min((cap - rate * SNAPSHOT_LEAD_HOURS).max(0.0))
            });
            lines.push(format!(
                "cap     max_cost_usd = {}: snapshot at USD {snapshot:.2} (95%, or 15 min before the cap), pod deleted at USD {cap:.2}",
                trim(cap),
            ));
            if let Some(smallest) = self.cap_too_small() {
                lines.push(format!(
                    "warning max_cost_usd buys less than 30 minutes at the highest rate; the smallest cap that does is USD {smallest:.2}"
                ));
            }
        }
        lines
    }
}

/// A number without trailing zeros: `4`, `0.5`.
fn trim(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// One type's line: ID, pod price, VRAM, stock, fit.
fn type_line(row: &TypeRow) -> String {
    if !row.listed {
        return format!("        {}  not in the Runpod catalog", row.id);
    }
    let price = row.pod_price.map_or_else(
        || "no listed price".to_owned(),
        |p| format!("USD {}/h", price_text(p)),
    );
    format!(
        "        {}  {price}  {} GB  stock {}  fit {}",
        row.id,
        row.vram,
        row.stock.as_str(),
        row.fit.as_str()
    )
}

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;
