//! The catalog and account listings of Runpod REST v2 (wire-facts A.2): GPU types with
//! prices and stock, data centers, network volumes, pod templates. Reads, so a 429 is
//! waited out ([`super::RunpodClient::send_again`]); bodies decode into
//! [`crate::runpod::catalog::wire`], sanitized on read (POD-11).

use reqwest::Method;

use super::{ApiError, RunpodClient};
use crate::runpod::catalog::wire::{
    CatalogGpu, DataCenter, DataCenterList, GpuList, NetworkVolume, Template, TemplateList,
    VolumeList,
};

impl RunpodClient {
    async fn read<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, ApiError> {
        let what = format!("GET {}", path.split('?').next().unwrap_or(path));
        let answer = self
            .send_again(&what, || self.request(Method::GET, path), &[])
            .await?;
        self.decode(&what, &answer.body)
    }

    /// `GET /v2/catalog/gpus?include=AVAILABILITY&product=POD&cloud=SECURE&count=N`: the
    /// GPU types with their Secure Cloud prices and stock for `count` GPUs per pod.
    ///
    /// # Errors
    /// Any failure.
    pub async fn gpu_catalog(&self, count: u32) -> Result<Vec<CatalogGpu>, ApiError> {
        let path =
            format!("/catalog/gpus?include=AVAILABILITY&product=POD&cloud=SECURE&count={count}");
        let list: GpuList = self.read(&path).await?;
        Ok(list.gpus)
    }

    /// `GET /v2/catalog/datacenters?include=GPU_AVAILABILITY`: every data center with the
    /// stock of its GPU types.
    ///
    /// # Errors
    /// Any failure.
    pub async fn data_centers(&self) -> Result<Vec<DataCenter>, ApiError> {
        let list: DataCenterList = self
            .read("/catalog/datacenters?include=GPU_AVAILABILITY")
            .await?;
        Ok(list.data_centers)
    }

    /// `GET /v2/network-volumes`: the account's network volumes.
    ///
    /// # Errors
    /// Any failure.
    pub async fn network_volumes(&self) -> Result<Vec<NetworkVolume>, ApiError> {
        let list: VolumeList = self.read("/network-volumes").await?;
        Ok(list.network_volumes)
    }

    /// `GET /v2/templates`: the account's own templates (pod and serverless).
    ///
    /// # Errors
    /// Any failure.
    pub async fn templates(&self) -> Result<Vec<Template>, ApiError> {
        let list: TemplateList = self.read("/templates").await?;
        Ok(list.templates)
    }
}
