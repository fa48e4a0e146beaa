//! Running a flow while handling the events it sends: the loop that the `run` sequence
//! (forwarding its stages' events) and the command line (rendering stage and run events)
//! share.

use std::future::Future;

use tokio::sync::mpsc::UnboundedReceiver;

/// Runs `flow` while handing every event that arrives on `events` to `handle`; every event
/// sent before `flow` ended is handled before this returns its output.
pub async fn pump<E, T>(
    events: &mut UnboundedReceiver<E>,
    flow: impl Future<Output = T>,
    mut handle: impl FnMut(E),
) -> T {
    tokio::pin!(flow);
    let output = loop {
        tokio::select! {
            output = &mut flow => break output,
            Some(event) = events.recv() => handle(event),
        }
    };
    while let Ok(event) = events.try_recv() {
        handle(event);
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_event_sent_before_the_flow_ended_is_handled_in_order() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut seen = Vec::new();
        let output = pump(
            &mut rx,
            async {
                for n in 0..100 {
                    tx.send(n).unwrap();
                }
                "done"
            },
            |n| seen.push(n),
        )
        .await;
        assert_eq!(output, "done");
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }
}
