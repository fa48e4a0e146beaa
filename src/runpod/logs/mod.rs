//! A pod's logs (spec/runpod.md section 11, issue 13): what is kept of Runpod's log
//! stream on this machine. Built so far: [`redact`] (POD-59) and [`copy`] (the copy in
//! `.pod/pod.log` with its cursor, the 20 MiB cut and the refusal of links, POD-54,
//! POD-55, POD-58). Not yet: reading the stream (`GET /v2/pods/{id}/logs`, server-sent
//! events) while following, the copies of the watchdog and bootstrap logs, and `runs
//! logs RUN_ID --pod`. [`read`] reads the stream into the copy.

pub mod copy;
pub mod read;
pub mod redact;
pub mod show;
