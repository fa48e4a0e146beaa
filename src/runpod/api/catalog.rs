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

    /// The size in GB of network volume `id` from the account's list; `None` when it is
    /// not listed.
    ///
    /// # Errors
    /// Any failure.
    pub async fn network_volume_gb(&self, id: &str) -> Result<Option<u64>, ApiError> {
        Ok(self
            .network_volumes()
            .await?
            .into_iter()
            .find(|volume| volume.id == id)
            .map(|volume| volume.size))
    }

    /// `PATCH /v2/network-volumes/{id}` with `{"size": gb}`: grows network volume `id`
    /// to `gb` GB (v1 `PATCH /networkvolumes/{id}`, path map of wire-facts A.2); the
    /// answer is the volume with its size. A grow is permanent: a volume never shrinks
    /// (POD-49). Not repeated on failure: a refusal is the caller's to handle.
    ///
    /// # Errors
    /// Any failure, a refusal of the size included.
    pub async fn grow_network_volume(&self, id: &str, gb: u64) -> Result<NetworkVolume, ApiError> {
        let path = format!("/network-volumes/{}", super::path_id(id)?);
        let what = format!("PATCH {path}");
        let body = serde_json::json!({ "size": gb });
        let answer = self
            .send(&what, self.request(Method::PATCH, &path).json(&body), &[])
            .await?;
        self.decode(&what, &answer.body)
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
