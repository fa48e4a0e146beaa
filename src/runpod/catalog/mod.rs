//! The Runpod catalog and account listings (spec/runpod.md sections 2 and 3, issue 13):
//! what `pod gpus`, `pod datacenters`, `pod volumes` and `pod templates` print, and how
//! `gpu_types = "auto"` and `data_center_ids = "auto"` choose. Pure; the calls are
//! [`crate::runpod::api::RunpodClient`]'s.
//!
//! - [`sanitize`]: POD-11, catalog text made safe to print.
//! - [`wire`]: the listings' bodies, read leniently and sanitized.
//! - [`listing`]: the four tables, their sort orders, filters and empty-result lines.
//! - [`auto`]: the order of GPU types to try and their data centers, and POD-16's errors.
//! - [`vram`]: the GPU memory a run needs per GPU (POD-18, POD-19); [`shape`] reads the
//!   base model's shape from a local directory or the Hub.
//! - [`preview`]: what a start would get (TUI-43): fit, prices, `"auto"`'s pick, cost bounds.

pub mod auto;
pub mod listing;
pub mod preview;
pub mod sanitize;
pub mod shape;
pub mod vram;
pub mod wire;
