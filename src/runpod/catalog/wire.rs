//! The catalog and account listings of Runpod REST v2 (wire-facts A.2): `GET
//! /catalog/gpus`, `GET /catalog/datacenters`, `GET /network-volumes`, `GET /templates`,
//! read leniently (a missing field takes its default) and sanitized on read (POD-11):
//! every ID, name, region, data center and image passes through [`sanitize`].

use serde::{Deserialize, Deserializer};

use super::sanitize::sanitize;

/// A text field, sanitized as it is read.
fn clean<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = Option::<String>::deserialize(deserializer)?;
    Ok(text.map(|t| sanitize(&t)).unwrap_or_default())
}

/// A stock band as the API gives it: `NONE`, `LOW`, `MEDIUM`, `HIGH`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stock {
    /// Not in stock (also an absent or unknown band).
    #[default]
    None,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

impl Stock {
    /// Whether a create may find a machine: any band but `NONE` (a listed stock does not
    /// promise that a create succeeds).
    #[must_use]
    pub fn in_stock(self) -> bool {
        self != Self::None
    }

    /// The band as the API writes it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Low => "LOW",
            Self::Medium => "MEDIUM",
            Self::High => "HIGH",
        }
    }
}

impl<'de> Deserialize<'de> for Stock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Option::<String>::deserialize(deserializer)?.unwrap_or_default();
        Ok(match text.to_ascii_uppercase().as_str() {
            "LOW" => Self::Low,
            "MEDIUM" => Self::Medium,
            "HIGH" => Self::High,
            _ => Self::None,
        })
    }
}

/// `{"gpus": [...]}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GpuList {
    /// The GPU types.
    #[serde(default)]
    pub gpus: Vec<CatalogGpu>,
}

/// One GPU type of `GET /catalog/gpus?include=AVAILABILITY&product=POD`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogGpu {
    /// The type ID used in a create body, such as `NVIDIA H100 80GB HBM3`.
    #[serde(deserialize_with = "clean")]
    pub id: String,
    /// Display name.
    #[serde(default, deserialize_with = "clean")]
    pub name: String,
    /// VRAM per GPU, GB.
    #[serde(default)]
    pub memory: u32,
    /// Offered on Secure Cloud.
    #[serde(default)]
    pub secure: bool,
    /// Offered on Community Cloud.
    #[serde(default)]
    pub community: bool,
    /// List prices, USD per GPU-hour.
    #[serde(default)]
    pub price: GpuPrice,
    /// Most GPUs of this type in one pod.
    #[serde(default)]
    pub max_count: MaxCount,
    /// Overall stock band (for the count asked).
    #[serde(default)]
    pub availability: Stock,
    /// Where it is offered, with the stock there.
    #[serde(default)]
    pub data_centers: Vec<GpuDataCenter>,
}

impl CatalogGpu {
    /// The Secure Cloud list price when Runpod lists a positive one.
    #[must_use]
    pub fn secure_price(&self) -> Option<f64> {
        self.price.secure.filter(|p| p.is_finite() && *p > 0.0)
    }

    /// The stock band in data center `id` (`NONE` where it is not offered).
    #[must_use]
    pub fn stock_in(&self, id: &str) -> Stock {
        self.data_centers
            .iter()
            .find(|dc| dc.id == id)
            .map_or(Stock::None, |dc| dc.availability)
    }
}

/// `price` of a GPU type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct GpuPrice {
    /// Secure Cloud, USD per GPU-hour.
    #[serde(default)]
    pub secure: Option<f64>,
    /// Community Cloud, USD per GPU-hour.
    #[serde(default)]
    pub community: Option<f64>,
}

/// `maxCount` of a GPU type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct MaxCount {
    /// On Secure Cloud.
    #[serde(default)]
    pub secure: u32,
    /// On Community Cloud.
    #[serde(default)]
    pub community: u32,
}

/// One data center of a GPU type, with the type's stock there.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct GpuDataCenter {
    /// Data center ID, such as `EU-RO-1`.
    #[serde(deserialize_with = "clean")]
    pub id: String,
    /// Stock band of the type there.
    #[serde(default)]
    pub availability: Stock,
}

/// `{"dataCenters": [...]}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataCenterList {
    /// The data centers.
    #[serde(default)]
    pub data_centers: Vec<DataCenter>,
}

/// One data center of `GET /catalog/datacenters?include=GPU_AVAILABILITY`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataCenter {
    /// ID, such as `EU-RO-1`.
    #[serde(deserialize_with = "clean")]
    pub id: String,
    /// Name.
    #[serde(default, deserialize_with = "clean")]
    pub name: String,
    /// Region, such as `EUROPE`.
    #[serde(default, deserialize_with = "clean")]
    pub region: String,
    /// GPU types there with their stock.
    #[serde(default)]
    pub gpu_availability: Vec<DataCenterGpu>,
}

/// One GPU type of a data center.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct DataCenterGpu {
    /// GPU type ID.
    #[serde(default, deserialize_with = "clean")]
    pub id: String,
    /// Stock band there.
    #[serde(default)]
    pub availability: Stock,
}

/// `{"networkVolumes": [...]}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeList {
    /// The account's network volumes.
    #[serde(default)]
    pub network_volumes: Vec<NetworkVolume>,
}

/// A network volume (v2: `dataCenter`, v1's `dataCenterId` also read).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkVolume {
    /// ID.
    #[serde(deserialize_with = "clean")]
    pub id: String,
    /// Name.
    #[serde(default, deserialize_with = "clean")]
    pub name: String,
    /// Size, GB.
    #[serde(default)]
    pub size: u64,
    /// Its data center.
    #[serde(default, alias = "dataCenterId", deserialize_with = "clean")]
    pub data_center: String,
}

/// `{"templates": [...]}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TemplateList {
    /// The account's templates.
    #[serde(default)]
    pub templates: Vec<Template>,
}

/// A template (v2: `image` and `serverless`; v1's `imageName` and `isServerless` also
/// read).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    /// ID.
    #[serde(deserialize_with = "clean")]
    pub id: String,
    /// Name.
    #[serde(default, deserialize_with = "clean")]
    pub name: String,
    /// Image reference.
    #[serde(default, alias = "imageName", deserialize_with = "clean")]
    pub image: String,
    /// A serverless template (omitted from `pod templates`).
    #[serde(default, alias = "isServerless")]
    pub serverless: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_answer_reads_leniently_and_sanitized() {
        let body = r#"{"gpus":[{"id":"NVIDIA \u001b[31mH100","name":"H100\nSXM","memory":80,
            "secure":true,"community":false,"price":{"secure":2.69,"community":null,"serverless":4.18},
            "maxCount":{"secure":8,"community":0},"availability":"HIGH",
            "dataCenters":[{"id":"EU-RO-1","name":"Romania","availability":"LOW"}],"pool":"H100"},
            {"id":"bare"}]}"#;
        let list: GpuList = serde_json::from_str(body).unwrap();
        let h100 = &list.gpus[0];
        assert_eq!(h100.id, "NVIDIA H100");
        assert_eq!(h100.name, "H100 SXM");
        assert_eq!(h100.secure_price(), Some(2.69));
        assert_eq!(h100.max_count.secure, 8);
        assert_eq!(h100.availability, Stock::High);
        assert_eq!(h100.stock_in("EU-RO-1"), Stock::Low);
        assert_eq!(h100.stock_in("US-TX-3"), Stock::None);
        let bare = &list.gpus[1];
        assert_eq!(
            (bare.memory, bare.secure, bare.secure_price()),
            (0, false, None)
        );
        assert_eq!(bare.availability, Stock::None);
        let volumes: VolumeList = serde_json::from_str(
            r#"{"networkVolumes":[{"id":"v1","name":"data","size":100,"dataCenterId":"EU-RO-1"}]}"#,
        )
        .unwrap();
        assert_eq!(volumes.network_volumes[0].data_center, "EU-RO-1");
        let templates: TemplateList = serde_json::from_str(
            r#"{"templates":[{"id":"t1","name":"a","imageName":"img:1","isServerless":true}]}"#,
        )
        .unwrap();
        assert!(templates.templates[0].serverless);
        assert_eq!(templates.templates[0].image, "img:1");
    }
}
