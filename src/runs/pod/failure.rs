//! What a pod's failure means for its run, as the run's message and warnings say it.

use crate::runpod::lifecycle::PodFailure;

/// Whether `failure` took the pod and the job on it with it: the run cannot be followed
/// again and fails with [`failure_text`] unless it already ended.
#[must_use]
pub fn loses_the_job(failure: &PodFailure) -> bool {
    matches!(
        failure,
        PodFailure::DeadlineReached
            | PodFailure::CostCapReached
            | PodFailure::RetrieveGrace
            | PodFailure::Vanished
    )
}

/// What a pod's failure means for the run, naming the target's key where one decides.
#[must_use]
pub fn failure_text(target: &str, failure: &PodFailure) -> String {
    match failure {
        PodFailure::NoCapacity(tried) => format!(
            "no pod could be created for any of `targets.{target}.gpu_types`: {}",
            tried
                .iter()
                .map(|(gpu, reason)| format!("{gpu}: {reason}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        PodFailure::Refused { status, detail } => format!(
            "Runpod refused the pod (HTTP {}): {detail}; check `targets.{target}.gpu_types`, `image` and the other keys of `[targets.{target}]`; no pod was created",
            status.map_or_else(|| "none".to_owned(), |s| s.to_string())
        ),
        PodFailure::RateLimited => "Runpod kept answering 429 (rate limited)".to_owned(),
        PodFailure::Ambiguous(cause) => {
            format!("the create call had no clear answer and no pod of the run was found: {cause}")
        }
        PodFailure::OtherHostKey(cause) => format!(
            "the pod presented another SSH host key than the run's pinned one; it was deleted before any command ran: {cause}"
        ),
        PodFailure::CapNotTransmitted => format!(
            "the pod's cost cap (`targets.{target}.max_cost_usd`, or what remained of `budget.max_usd`) could not be given to the pod's watchdog; the pod was deleted"
        ),
        PodFailure::Interrupted => {
            "interrupted before the job started; the pod was deleted".to_owned()
        }
        PodFailure::BootGrace => format!(
            "no job started within `targets.{target}.boot_grace_minutes`; the pod was deleted"
        ),
        PodFailure::DeadlineReached => format!(
            "`targets.{target}.max_hours` was reached before the job ended; the pod was deleted"
        ),
        PodFailure::CostCapReached => format!(
            "the pod's cost cap (`targets.{target}.max_cost_usd`, or what remained of `budget.max_usd`) was reached before the job ended; the pod was deleted"
        ),
        PodFailure::RetrieveGrace => format!(
            "the results were not retrieved within `targets.{target}.retrieve_grace_minutes`; the pod was deleted"
        ),
        PodFailure::Vanished => "the pod vanished before its results were retrieved".to_owned(),
        PodFailure::StartFailed(cause) => {
            format!("the job could not be started on the pod: {cause}")
        }
        PodFailure::StillListed { pod, rate } => format!(
            "pod {pod} was deleted but Runpod still lists it{}; it is reported until gone",
            rate.map_or_else(String::new, |r| format!(" (USD {r:.2}/h)"))
        ),
    }
}
