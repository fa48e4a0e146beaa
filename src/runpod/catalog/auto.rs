//! `gpu_types = "auto"` and `data_center_ids = "auto"` (POD-12..POD-16): the order in
//! which a run tries GPU types, from one catalog read scoped to the target's
//! `gpu_count`, and each type's data center list. Pure: the driver reads the catalog
//! before the first create call and again after each type that cannot be placed
//! (POD-15), and feeds each read to [`Walk::order`].

use std::collections::HashSet;

use super::listing::by_price;
use super::wire::CatalogGpu;

/// Where pods may be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Anywhere: no data center list.
    Any,
    /// These data centers (listed, or a network volume's): they always bind.
    Listed(Vec<String>),
    /// `data_center_ids = "auto"` (POD-14).
    Auto,
}

/// The VRAM floor per GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Floor {
    /// No floor (no `min_vram_gb`, no estimate).
    None,
    /// `min_vram_gb`.
    Set(u32),
    /// The VRAM estimate in GB (POD-18), rounded up to a whole GB as the floor.
    Estimate(f64),
}

impl Floor {
    /// The floor in whole GB.
    #[must_use]
    pub fn gb(self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::Set(gb) => Some(gb),
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "an estimate in GB, positive and far below u32::MAX"
            )]
            Self::Estimate(gb) => Some(gb.max(0.0).ceil() as u32),
        }
    }

    /// How the floor reads in a message: `min_vram_gb = 24`, `the VRAM estimate of
    /// 23.4 GB (floor 24 GB)`.
    #[must_use]
    pub fn describe(self) -> Option<String> {
        match self {
            Self::None => None,
            Self::Set(gb) => Some(format!("min_vram_gb = {gb}")),
            Self::Estimate(gb) => Some(format!(
                "the VRAM estimate of {gb:.1} GB (floor {} GB)",
                self.gb().unwrap_or(0)
            )),
        }
    }
}

/// What `"auto"` must meet.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// GPUs per pod.
    pub gpu_count: u32,
    /// Least VRAM per GPU.
    pub floor: Floor,
    /// Highest Secure Cloud price of one GPU, USD per hour.
    pub max_price: Option<f64>,
    /// Where.
    pub placement: Placement,
}

impl Request {
    /// The request as POD-16 names it.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut parts = vec![
            "`gpu_types = \"auto\"`".to_owned(),
            format!("gpu_count = {}", self.gpu_count),
        ];
        parts.extend(self.floor.describe());
        if let Some(price) = self.max_price {
            parts.push(format!("max_price_per_hour = {price}"));
        }
        if let Placement::Listed(ids) = &self.placement {
            parts.push(format!("data_center_ids = [{}]", ids.join(", ")));
        }
        parts.join(", ")
    }
}

/// One GPU type to try, with the data centers its create call names.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// GPU type ID.
    pub gpu_type: String,
    /// `dataCenterIds` of its create call; empty: the scheduler picks.
    pub data_centers: Vec<String>,
    /// Secure Cloud price, USD per GPU-hour.
    pub price: Option<f64>,
    /// VRAM per GPU, GB.
    pub vram: u32,
    /// Reported in stock (POD-13 tries up to 3 that are not).
    pub in_stock: bool,
}

/// Why `"auto"` found nothing to create (POD-16).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AutoError {
    /// No type in stock meets the request.
    #[error("no Secure Cloud GPU type in stock matches {0}")]
    NothingInStock(String),
    /// Types were chosen, but no data center has one in stock.
    #[error(
        "GPU types {types} meet the request, but no data center has one in stock for gpu_count = {gpu_count} (`data_center_ids = \"auto\"`)"
    )]
    NoDataCenter {
        /// The chosen types, comma-separated.
        types: String,
        /// GPUs per pod.
        gpu_count: u32,
    },
}

/// Out-of-stock types cheaper than the cheapest in-stock choice tried first, over the
/// whole walk (POD-13).
pub const OUT_OF_STOCK_TRIES: usize = 3;

/// One run's walk over `"auto"` types: what was tried, and how many out-of-stock types.
#[derive(Debug, Clone, PartialEq)]
pub struct Walk {
    request: Request,
    tried: HashSet<String>,
    out_of_stock_tried: usize,
}

impl Walk {
    /// A walk for `request`, nothing tried yet.
    #[must_use]
    pub fn new(request: Request) -> Self {
        Self {
            request,
            tried: HashSet::new(),
            out_of_stock_tried: 0,
        }
    }

    /// The request.
    #[must_use]
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// `candidate` is being tried: it is never offered again (POD-15).
    pub fn tried(&mut self, candidate: &Candidate) {
        if self.tried.insert(candidate.gpu_type.clone()) && !candidate.in_stock {
            self.out_of_stock_tried += 1;
        }
    }

    /// Whether `gpu` meets the request apart from stock and data centers.
    fn fits(&self, gpu: &CatalogGpu) -> bool {
        let r = &self.request;
        gpu.secure
            && !self.tried.contains(&gpu.id)
            && (gpu.max_count.secure == 0 || gpu.max_count.secure >= r.gpu_count)
            && r.floor.gb().is_none_or(|floor| gpu.memory >= floor)
            && r.max_price
                .is_none_or(|cap| gpu.secure_price().is_some_and(|p| p <= cap))
    }

    /// Whether `gpu` is in stock where the request may place it.
    fn in_stock(&self, gpu: &CatalogGpu) -> bool {
        match &self.request.placement {
            Placement::Listed(ids) => ids.iter().any(|id| gpu.stock_in(id).in_stock()),
            Placement::Any | Placement::Auto => gpu.availability.in_stock(),
        }
    }

    /// The untried types of one catalog read, in the order to try them (POD-12, POD-13),
    /// each with its data centers (POD-14). Empty when nothing untried is in stock.
    ///
    /// # Errors
    /// [`AutoError::NoDataCenter`] when types are in stock but, under
    /// `data_center_ids = "auto"`, no data center has one.
    pub fn order(&self, gpus: &[CatalogGpu]) -> Result<Vec<Candidate>, AutoError> {
        let mut stocked: Vec<&CatalogGpu> = gpus
            .iter()
            .filter(|g| self.fits(g) && self.in_stock(g))
            .collect();
        stocked.sort_by(|a, b| cheaper(a, b));
        let Some(cheapest) = stocked.first().map(|g| g.secure_price()) else {
            return Ok(Vec::new());
        };
        let mut lagging: Vec<&CatalogGpu> = gpus
            .iter()
            .filter(|g| self.fits(g) && !self.in_stock(g))
            .filter(|g| match &self.request.placement {
                // A type naming none of the listed data centers is excluded; one naming
                // no data center at all is kept (POD-13).
                Placement::Listed(ids) => {
                    g.data_centers.is_empty() || g.data_centers.iter().any(|d| ids.contains(&d.id))
                }
                Placement::Any | Placement::Auto => true,
            })
            // Strictly cheaper: a priced type is cheaper than an unpriced one.
            .filter(|g| match (g.secure_price(), cheapest) {
                (Some(price), Some(least)) => price < least,
                (Some(_), None) => true,
                (None, _) => false,
            })
            .collect();
        lagging.sort_by(|a, b| cheaper(a, b));
        lagging.truncate(OUT_OF_STOCK_TRIES.saturating_sub(self.out_of_stock_tried));
        let auto_centers = match &self.request.placement {
            Placement::Auto => {
                let chosen: Vec<&str> = stocked.iter().map(|g| g.id.as_str()).collect();
                let centers = auto_data_centers(gpus, &chosen);
                if centers.is_empty() {
                    return Err(AutoError::NoDataCenter {
                        types: chosen.join(", "),
                        gpu_count: self.request.gpu_count,
                    });
                }
                centers
            }
            Placement::Any | Placement::Listed(_) => Vec::new(),
        };
        let candidate = |g: &CatalogGpu, in_stock: bool| Candidate {
            gpu_type: g.id.clone(),
            data_centers: match &self.request.placement {
                Placement::Listed(ids) => ids.clone(),
                Placement::Auto if in_stock => auto_centers.clone(),
                // A type out of stock everywhere is created with no list (POD-14).
                Placement::Any | Placement::Auto => Vec::new(),
            },
            price: g.secure_price(),
            vram: g.memory,
            in_stock,
        };
        Ok(lagging
            .into_iter()
            .map(|g| candidate(g, false))
            .chain(stocked.into_iter().map(|g| candidate(g, true)))
            .collect())
    }

    /// The first order of a run (POD-16: nothing in stock fails before any pod).
    ///
    /// # Errors
    /// [`AutoError::NothingInStock`] naming the request, or [`AutoError::NoDataCenter`].
    pub fn first(&self, gpus: &[CatalogGpu]) -> Result<Vec<Candidate>, AutoError> {
        let order = self.order(gpus)?;
        if order.is_empty() {
            return Err(AutoError::NothingInStock(self.request.describe()));
        }
        Ok(order)
    }
}

/// A run's walk with the candidates of its latest order (the driver's part of
/// `"auto"`: each create call takes its type's data centers from here, and each re-read
/// replaces the order, POD-15).
#[derive(Debug, Clone, PartialEq)]
pub struct AutoState {
    walk: Walk,
    candidates: Vec<Candidate>,
}

impl AutoState {
    /// The walk with its first order.
    #[must_use]
    pub fn new(walk: Walk, first: Vec<Candidate>) -> Self {
        Self {
            walk,
            candidates: first,
        }
    }

    /// The GPU types of the current order.
    #[must_use]
    pub fn order(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.gpu_type.clone()).collect()
    }

    /// The candidates of the current order.
    #[must_use]
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// GPUs per pod.
    #[must_use]
    pub fn gpu_count(&self) -> u32 {
        self.walk.request().gpu_count
    }

    /// The candidate of type `gpu_type`, now tried (never offered again).
    pub fn take(&mut self, gpu_type: &str) -> Option<Candidate> {
        let candidate = self
            .candidates
            .iter()
            .find(|c| c.gpu_type == gpu_type)?
            .clone();
        self.walk.tried(&candidate);
        Some(candidate)
    }

    /// The order after a fresh catalog read (`read`), or why the remaining order is kept
    /// (the read failed, or nothing untried is in stock: POD-15).
    ///
    /// # Errors
    /// The reason the order is kept.
    pub fn reorder(
        &mut self,
        read: Result<Vec<CatalogGpu>, String>,
    ) -> Result<Vec<String>, String> {
        let gpus = read.map_err(|why| format!("the GPU catalog could not be read again: {why}"))?;
        match self.walk.order(&gpus) {
            Ok(order) if order.is_empty() => {
                Err("the GPU catalog shows no untried type in stock".to_owned())
            }
            Ok(order) => {
                self.candidates = order;
                Ok(self.order())
            }
            Err(error) => Err(error.to_string()),
        }
    }
}

/// One candidate as a person reads it: `NVIDIA A40 (48 GB, USD 0.40/h)`, with `reported
/// out of stock` for a lagging type.
#[must_use]
pub fn describe(candidate: &Candidate) -> String {
    let price = candidate.price.map_or_else(
        || "no listed price".to_owned(),
        |p| format!("USD {}/h", super::listing::price_text(p)),
    );
    let stock = if candidate.in_stock {
        ""
    } else {
        ", reported out of stock"
    };
    format!(
        "{} ({} GB, {price}{stock})",
        candidate.gpu_type, candidate.vram
    )
}

/// Cheapest first, ties by more VRAM, then by ID ([`by_price`]).
fn cheaper(a: &CatalogGpu, b: &CatalogGpu) -> std::cmp::Ordering {
    by_price(
        (a.secure_price(), a.memory, &a.id),
        (b.secure_price(), b.memory, &b.id),
    )
}

/// `data_center_ids = "auto"` for the `chosen` types (POD-14): every data center where
/// one of them is in stock, ordered by the cheapest such type it has, then by ID.
#[must_use]
pub fn auto_data_centers(gpus: &[CatalogGpu], chosen: &[&str]) -> Vec<String> {
    let mut best: Vec<(&str, &CatalogGpu)> = Vec::new();
    for gpu in gpus.iter().filter(|g| chosen.contains(&g.id.as_str())) {
        for dc in gpu
            .data_centers
            .iter()
            .filter(|d| d.availability.in_stock())
        {
            match best.iter_mut().find(|(id, _)| *id == dc.id) {
                Some((_, held)) => {
                    if cheaper(gpu, held).is_lt() {
                        *held = gpu;
                    }
                }
                None => best.push((&dc.id, gpu)),
            }
        }
    }
    best.sort_by(|(a, ga), (b, gb)| cheaper(ga, gb).then_with(|| a.cmp(b)));
    best.into_iter().map(|(id, _)| id.to_owned()).collect()
}

#[cfg(test)]
#[path = "auto_tests.rs"]
mod tests;
