//! Project settings: the typed sections of `overbrainer.toml`, layered with `.env`
//! and the process environment (spec/config.md).

mod types;

pub use types::*;
