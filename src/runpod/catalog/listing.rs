//! The tables of `pod gpus`, `pod datacenters`, `pod volumes` and `pod templates`
//! (POD-5..POD-10): pure, from the sanitized catalog ([`super::wire`]) to aligned text.

use std::cmp::Ordering;
use std::collections::HashSet;

use super::wire::{CatalogGpu, DataCenter, NetworkVolume, Stock, Template};

/// The filters of `pod gpus` (POD-7).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuFilter {
    /// VRAM at least this many GB.
    pub min_vram: Option<u32>,
    /// Secure Cloud price at most this, USD per hour (unpriced types excluded).
    pub max_price: Option<f64>,
    /// In stock only.
    pub in_stock: bool,
    /// Offered in this data center only; the stock shown is the stock there.
    pub data_center: Option<String>,
}

/// One row of `pod gpus`.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuRow {
    /// GPU type ID.
    pub id: String,
    /// VRAM per GPU, GB.
    pub vram: u32,
    /// Secure Cloud price, USD per hour, when positive.
    pub price: Option<f64>,
    /// Most GPUs of the type in one pod.
    pub max_count: u32,
    /// Overall stock, or the stock in the filter's data center.
    pub stock: Stock,
}

/// Cheapest first (unpriced after every priced one), ties by more VRAM, then by ID
/// (POD-6, POD-12).
#[must_use]
pub fn by_price(a: (Option<f64>, u32, &str), b: (Option<f64>, u32, &str)) -> Ordering {
    let price = match (a.0, b.0) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    price.then(b.1.cmp(&a.1)).then_with(|| a.2.cmp(b.2))
}

/// The Secure Cloud types of `gpus` that pass `filter`, sorted (POD-6, POD-7).
#[must_use]
pub fn gpu_rows(gpus: &[CatalogGpu], filter: &GpuFilter) -> Vec<GpuRow> {
    let mut rows: Vec<GpuRow> = gpus
        .iter()
        .filter(|g| g.secure)
        .filter(|g| {
            filter
                .data_center
                .as_ref()
                .is_none_or(|dc| g.data_centers.iter().any(|d| &d.id == dc))
        })
        .map(|g| GpuRow {
            id: g.id.clone(),
            vram: g.memory,
            price: g.secure_price(),
            max_count: g.max_count.secure,
            stock: filter
                .data_center
                .as_ref()
                .map_or(g.availability, |dc| g.stock_in(dc)),
        })
        .filter(|r| filter.min_vram.is_none_or(|v| r.vram >= v))
        .filter(|r| {
            filter
                .max_price
                .is_none_or(|cap| r.price.is_some_and(|p| p <= cap))
        })
        .filter(|r| !filter.in_stock || r.stock.in_stock())
        .collect();
    rows.sort_by(|a, b| by_price((a.price, a.vram, &a.id), (b.price, b.vram, &b.id)));
    rows
}

/// A price in USD per hour: two decimals, three when the third is not zero.
#[must_use]
pub fn price_text(price: f64) -> String {
    let three = format!("{price:.3}");
    match three.strip_suffix('0') {
        Some(two) => two.to_owned(),
        None => three,
    }
}

/// `pod gpus`'s output: the table, or the line saying that nothing matches (POD-10).
#[must_use]
pub fn gpus_text(rows: &[GpuRow], filter: &GpuFilter) -> String {
    if rows.is_empty() {
        let mut filters = Vec::new();
        if let Some(v) = filter.min_vram {
            filters.push(format!("--min-vram {v}"));
        }
        if let Some(p) = filter.max_price {
            filters.push(format!("--max-price {p}"));
        }
        if filter.in_stock {
            filters.push("--in-stock".to_owned());
        }
        if let Some(dc) = &filter.data_center {
            filters.push(format!("--data-center {dc}"));
        }
        let with = if filters.is_empty() {
            String::new()
        } else {
            format!(" with {}", filters.join(" "))
        };
        return format!("No Secure Cloud GPU type matches{with}.\n");
    }
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.vram.to_string(),
                r.price.map_or_else(|| "-".to_owned(), price_text),
                r.max_count.to_string(),
                r.stock.as_str().to_owned(),
            ]
        })
        .collect();
    table(
        &["ID", "VRAM GB", "$/H", "MAX COUNT", "STOCK"],
        &[false, true, true, true, false],
        &body,
    )
}

/// `pod datacenters`'s output, sorted by ID (POD-8).
#[must_use]
pub fn datacenters_text(centers: &[DataCenter]) -> String {
    if centers.is_empty() {
        return "No data center was found.\n".to_owned();
    }
    let mut sorted: Vec<&DataCenter> = centers.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    let body: Vec<Vec<String>> = sorted
        .iter()
        .map(|dc| {
            let in_stock = dc
                .gpu_availability
                .iter()
                .filter(|g| g.availability.in_stock())
                .map(|g| g.id.as_str())
                .collect::<HashSet<_>>()
                .len();
            vec![
                dc.id.clone(),
                dc.name.clone(),
                dc.region.clone(),
                in_stock.to_string(),
            ]
        })
        .collect();
    table(
        &["ID", "NAME", "REGION", "GPU TYPES IN STOCK"],
        &[false, false, false, true],
        &body,
    )
}

/// `pod volumes`'s output, sorted by name (POD-9).
#[must_use]
pub fn volumes_text(volumes: &[NetworkVolume]) -> String {
    if volumes.is_empty() {
        return "The account has no network volume.\n".to_owned();
    }
    let mut sorted: Vec<&NetworkVolume> = volumes.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
    let body: Vec<Vec<String>> = sorted
        .iter()
        .map(|v| {
            vec![
                v.id.clone(),
                v.name.clone(),
                v.size.to_string(),
                v.data_center.clone(),
            ]
        })
        .collect();
    table(
        &["ID", "NAME", "SIZE GB", "DATA CENTER"],
        &[false, false, true, false],
        &body,
    )
}

/// `pod templates`'s output: pod templates only, an ID listed twice shown once (its
/// first occurrence), sorted by name (POD-9).
#[must_use]
pub fn templates_text(templates: &[Template]) -> String {
    let mut seen = HashSet::new();
    let mut kept: Vec<&Template> = templates
        .iter()
        .filter(|t| seen.insert(t.id.as_str()))
        .filter(|t| !t.serverless)
        .collect();
    if kept.is_empty() {
        return "The account has no pod template.\n".to_owned();
    }
    kept.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
    let body: Vec<Vec<String>> = kept
        .iter()
        .map(|t| vec![t.id.clone(), t.name.clone(), t.image.clone()])
        .collect();
    table(&["ID", "NAME", "IMAGE"], &[false, false, false], &body)
}

/// Aligned columns two spaces apart, numbers (`right`) aligned right, no trailing space.
#[must_use]
pub fn table(header: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            let pad = widths[i].saturating_sub(cell.chars().count());
            if right[i] {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            }
        }
        let mut out = out.trim_end().to_owned();
        out.push('\n');
        out
    };
    let mut text = line(header.to_vec());
    for row in rows {
        text.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    text
}

#[cfg(test)]
#[path = "listing_tests.rs"]
pub(crate) mod tests;
