//! A pod's logs (spec/runpod.md section 11, issue 13): what is kept of Runpod's log
//! stream on this machine. [`redact`] (POD-59) cleans every line; [`copy`] keeps the
//! copy in `.pod/pod.log` with its cursor, the 20 MiB cut, the refusal of links and the
//! watchdog and bootstrap logs copied at the end (POD-54, POD-56, POD-58); [`read`]
//! reads the stream (`GET /v2/pods/{id}/logs`, [`crate::runpod::api::logs`]) into the
//! copy while a run is followed, and what is left before each deletion (POD-55,
//! POD-57); [`show`] is `runs logs RUN_ID --pod` (POD-60). The TUI does not follow the
//! stream yet.

pub mod copy;
pub mod read;
pub mod redact;
pub mod show;
