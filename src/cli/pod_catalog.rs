//! `pod gpus`, `pod datacenters`, `pod volumes` and `pod templates` (spec/runpod.md
//! section 2, POD-5..POD-11): the Runpod catalog and the account's volumes and
//! templates as aligned tables on stdout. They need only `OVERBRAINER_RUNPOD__API_KEY`
//! (from the environment or the directory's `.env`): no project, no target, no lock.

use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use crate::config::{RUNPOD_KEY_VAR, RunpodAccount};
use crate::runpod::api::RunpodClient;
use crate::runpod::catalog::listing::{self, GpuFilter};

/// Arguments of `pod gpus`.
#[derive(Debug, clap::Args)]
pub struct GpusArgs {
    /// Only types with at least this much VRAM per GPU, in GB.
    #[arg(long, value_name = "GB")]
    pub min_vram: Option<u32>,
    /// Only types whose Secure Cloud price is at most this, USD per GPU-hour (types
    /// without a listed price are left out).
    #[arg(long, value_name = "USD", value_parser = positive_price, allow_negative_numbers = true)]
    pub max_price: Option<f64>,
    /// Only types in stock.
    #[arg(long)]
    pub in_stock: bool,
    /// Only types offered in this data center; STOCK is then the stock there.
    #[arg(long, value_name = "ID")]
    pub data_center: Option<String>,
}

/// A price: a finite number above zero.
fn positive_price(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(price) if price.is_finite() && price > 0.0 => Ok(price),
        _ => Err(format!(
            "`{text}` is not a price: give USD per hour above 0, such as 2.5"
        )),
    }
}

/// Which listing.
#[derive(Debug, Clone, Copy)]
pub enum Listing<'a> {
    /// `pod gpus`.
    Gpus(&'a GpusArgs),
    /// `pod datacenters`.
    DataCenters,
    /// `pod volumes`.
    Volumes,
    /// `pod templates`.
    Templates,
}

/// The account's client from the environment and the directory's `.env` (ENV-3), with
/// no project needed.
pub(crate) async fn client(ctx: &Context) -> anyhow::Result<RunpodClient> {
    let dotenv = crate::config::dotenv_pairs(&ctx.dir).context("reading `.env`")?;
    let env = ctx
        .env
        .with_fallbacks(dotenv.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let account = RunpodAccount::from_env(&env).map_err(anyhow::Error::msg)?;
    if account.api_key.is_none() {
        return Err(crate::runs::Refusal::NoRunpodKeyForCatalog {
            variable: RUNPOD_KEY_VAR.to_owned(),
        }
        .into());
    }
    Ok(crate::runs::pod::account_client(&account, &env).await?)
}

/// Prints one listing.
///
/// # Errors
/// No key, a malformed `.env`, or an API failure (redacted, naming the call).
pub async fn run(ctx: &Context, listing: Listing<'_>) -> anyhow::Result<ExitCode> {
    let client = client(ctx).await?;
    let text = match listing {
        Listing::Gpus(args) => {
            let filter = GpuFilter {
                min_vram: args.min_vram,
                max_price: args.max_price,
                in_stock: args.in_stock,
                data_center: args.data_center.clone(),
            };
            let gpus = client.gpu_catalog(1).await?;
            listing::gpus_text(&listing::gpu_rows(&gpus, &filter), &filter)
        }
        Listing::DataCenters => listing::datacenters_text(&client.data_centers().await?),
        Listing::Volumes => listing::volumes_text(&client.network_volumes().await?),
        Listing::Templates => listing::templates_text(&client.templates().await?),
    };
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}
