//! The content-addressed blob cache on a target (issue 21): files kept once under
//! `<workdir>/.cache/blobs/sha256/<digest>` and hard-linked into each run directory,
//! so that a file the target already holds is linked, not sent again.
//!
//! Files of this module: `local.rs` (the local side: a tree's SHA-256 digests, with a
//! cache keyed by path, size and modification time so an unchanged tree is not
//! rehashed, and the summary of what an upload sends), `remote.rs` (the target side:
//! the POSIX shell scripts that tell which blobs are there and intact, and that prune
//! blobs no run directory links to, with their parsers), `place.rs` (the target side of
//! an upload: verifying arrived blobs, renaming them into the cache, linking the run), `upload.rs`
//! (the whole upload over an executor).
//!
//! `runs::start` uploads a run's local base model through [`upload_tree`] when
//! `training.upload_base_model` is set, with the project's digest cache in
//! `.overbrainer/digests.json`.

mod local;
mod place;
mod remote;
mod upload;

pub use local::{DigestCache, LocalBlob, UploadSummary, digest_tree};
pub use place::{COPIED, place_script};
pub use remote::{
    BLOBS_DIR, BlobState, INCOMING_DIR, INCOMING_STALE_MINUTES, PruneReport, check_script,
    parse_check, parse_prune, prune_script,
};
pub use upload::{ChangingScripts, Uploaded, prune_cache, upload_tree};
