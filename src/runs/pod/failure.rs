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
        PodFailure::ImageUnfit { image, missing } => format!(
            "the image `{image}` of `targets.{target}.image` lacks {}: a pod's image must keep \
             an entrypoint ending with `exec \"$@\"` and provide `bash`, `sshd` (started via \
             `service ssh`), `ssh-keygen`, `base64`, `curl`, `setsid`, `nohup`, `tar`, `find`, \
             `sha256sum`, and Axolotl in `targets.{target}.venv` (`bin/axolotl`); the pod was \
             deleted and no other GPU type was tried",
            missing
                .iter()
                .map(|item| match item.strip_prefix("axolotl in ") {
                    Some(venv) => format!("Axolotl in `{venv}`"),
                    None => format!("`{item}`"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        PodFailure::StillListed { pod, rate } => format!(
            "pod {pod} was deleted but Runpod still lists it{}; it is reported until gone",
            rate.map_or_else(String::new, |r| format!(" (USD {r:.2}/h)"))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unfit_image_is_named_with_what_it_lacks_and_what_pod_74_requires() {
        let text = failure_text(
            "pod",
            &PodFailure::ImageUnfit {
                image: "me/custom:1".into(),
                missing: vec!["sshd".into(), "axolotl in /opt/venv".into()],
            },
        );
        for part in [
            "the image `me/custom:1` of `targets.pod.image` lacks `sshd`, Axolotl in `/opt/venv`:",
            "exec \"$@\"",
            "`sha256sum`",
            "`targets.pod.venv`",
            "the pod was deleted and no other GPU type was tried",
        ] {
            assert!(text.contains(part), "{part} not in: {text}");
        }
    }
}
