//! Project settings: the typed sections of `overbrainer.toml`, layered with `.env`
//! and the process environment (spec/config.md).
//!
//! - `types`: one struct per section, every default in one place.
//! - [`env`]: the process environment, read once ([`EnvSnapshot`]).
//! - `layers`: the file, `.env` and variables as one tree, with the source of each value.
//! - `load`: [`load`] turns the tree into [`Settings`], listing every problem at once.
//! - `validate`: the semantic rules; `show`: the lines of `config check`.
//! - `exposure`: whether `.env` holds a secret that other users can read.

mod env;
mod error;
mod exposure;
mod layers;
mod load;
mod show;
mod types;
mod validate;

pub use env::{EnvSnapshot, PREFIX};
pub use error::{ConfigError, Problem};
pub use exposure::{DotenvExposed, dotenv_exposed, is_secret_variable};
pub use layers::{Provenance, Source, extra_value, var_name};
pub use load::{DOTENV_NAME, FILE_NAME, Loaded, dotenv_pairs, load};
pub use show::{Entry, entries};
pub use types::*;
pub use validate::{
    AXOLOTL_MANAGED_KEYS, AXOLOTL_TYPED_KEYS, axolotl_truthy, safe_path, valid_name,
};
