//! What a stage reports while it runs: its typed [`Event`]s and the running
//! [`Progress`], kept by a [`Tracker`] that sends every change, with a [`RequestGuard`]
//! per request in flight. Only front ends render events.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::llm::Usage;
use crate::pricing::Cost;

/// The four dataset stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// `subtopics`.
    Subtopics,
    /// `questions`.
    Questions,
    /// `answers`.
    Answers,
    /// `split`.
    Split,
}

impl Stage {
    /// The command and history name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Subtopics => "subtopics",
            Self::Questions => "questions",
            Self::Answers => "answers",
            Self::Split => "split",
        }
    }
}

/// What a stage reports while it runs. Only front ends render events.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The stage starts: `total` items to do, `skipped` already on disk.
    Started {
        /// The stage.
        stage: Stage,
        /// Items to do.
        total: u64,
        /// Items already complete.
        skipped: u64,
    },
    /// The counters changed.
    Progress {
        /// The stage.
        stage: Stage,
        /// The counters now.
        progress: Progress,
    },
    /// A warning for the user (skipped lines, hidden reasoning, …).
    Warning(String),
    /// A request waits [`SHOWN_WAIT`] or longer before its retry (shown at the default log
    /// level, so a long rate limit never looks like a hang).
    Waiting {
        /// The stage.
        stage: Stage,
        /// The item whose request waits.
        item: String,
        /// The wait, as the server or the backoff set it.
        wait: Duration,
        /// The failure that is retried.
        reason: String,
    },
    /// One request's tokens and cost, by the model that answered it (sent before the
    /// [`Event::Progress`] that counts them; the Prometheus counters count these, MET-9).
    Spent {
        /// The stage.
        stage: Stage,
        /// The model the request went to (the embedder's for embeddings).
        model: String,
        /// Input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
        /// Cost in USD; `None` when the model's price is unknown.
        cost_usd: Option<f64>,
    },
    /// An item failed after its retries; sent exactly once per item (PIPE-14).
    ItemFailed {
        /// The stage.
        stage: Stage,
        /// The item (topic, subtopic or question ID).
        item: String,
        /// Why.
        reason: String,
    },
}

/// A stage's running counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Progress {
    /// Items completed (for `answers`, excluded answers included).
    pub done: u64,
    /// Items failed.
    pub failed: u64,
    /// Answers excluded.
    pub excluded: u64,
    /// Requests awaiting a reply.
    pub in_flight: u64,
    /// Requests now between a failed attempt and their retry's outcome.
    pub retrying: u64,
    /// Retries made.
    pub retries: u64,
    /// Records added (subtopics or questions written).
    pub added: u64,
    /// Input tokens over every request.
    pub input_tokens: u64,
    /// Output tokens over every request.
    pub output_tokens: u64,
    /// Cost over every request.
    pub cost: Cost,
}

/// Shared counters that send a [`Event::Progress`] on every change.
#[derive(Debug)]
pub struct Tracker {
    stage: Stage,
    progress: Mutex<Progress>,
    events: UnboundedSender<Event>,
}

impl Tracker {
    /// New counters for `stage`.
    #[must_use]
    pub fn new(stage: Stage, events: UnboundedSender<Event>) -> Arc<Self> {
        Arc::new(Self {
            stage,
            progress: Mutex::new(Progress::default()),
            events,
        })
    }

    /// Changes the counters and reports them.
    pub fn update(&self, change: impl FnOnce(&mut Progress)) {
        let snapshot = {
            let mut progress = self
                .progress
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            change(&mut progress);
            *progress
        };
        let _ = self.events.send(Event::Progress {
            stage: self.stage,
            progress: snapshot,
        });
    }

    /// Counts the tokens and cost of a request to `model`.
    pub fn spend(&self, model: &str, usage: Usage, price: Option<crate::pricing::Price>) {
        let _ = self.events.send(Event::Spent {
            stage: self.stage,
            model: model.to_owned(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: price.map(|price| price.cost(usage)),
        });
        self.update(|p| {
            p.input_tokens += usage.input_tokens;
            p.output_tokens += usage.output_tokens;
            p.cost.add(price, usage);
        });
    }

    /// Counts a request in flight for `item` until the guard is dropped (also when the
    /// request is abandoned); the guard's [`RequestGuard::on_retry`] counts its retries and
    /// reports its long waits.
    #[must_use]
    pub fn request(&self, item: &str) -> RequestGuard<'_> {
        self.update(|p| p.in_flight += 1);
        RequestGuard {
            tracker: self,
            item: item.to_owned(),
            retrying: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The counters now.
    #[must_use]
    pub fn snapshot(&self) -> Progress {
        *self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The shortest retry wait that is shown as [`Event::Waiting`]; shorter ones show only in
/// the progress counters.
pub const SHOWN_WAIT: Duration = Duration::from_secs(5);

/// One request in flight, counted by its [`Tracker`].
#[derive(Debug)]
pub struct RequestGuard<'a> {
    tracker: &'a Tracker,
    item: String,
    retrying: std::sync::atomic::AtomicBool,
}

impl RequestGuard<'_> {
    /// Counts a retry of this request and reports a wait of [`SHOWN_WAIT`] or more (pass
    /// as the client's `on_retry`).
    pub fn on_retry(&self, error: &crate::llm::Error, wait: Duration) {
        if wait >= SHOWN_WAIT {
            let _ = self.tracker.events.send(Event::Waiting {
                stage: self.tracker.stage,
                item: self.item.clone(),
                wait,
                reason: error.to_string(),
            });
        }
        let first = !self
            .retrying
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        self.tracker.update(|p| {
            p.retries += 1;
            if first {
                p.retrying += 1;
            }
        });
    }
}

impl Drop for RequestGuard<'_> {
    fn drop(&mut self) {
        let retrying = u64::from(*self.retrying.get_mut());
        self.tracker.update(|p| {
            p.in_flight -= 1;
            p.retrying -= retrying;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_lists_its_stages_in_pipeline_order() {
        let stages = [
            Stage::Subtopics,
            Stage::Questions,
            Stage::Answers,
            Stage::Split,
        ];
        assert_eq!(crate::history::STAGES, stages.map(Stage::name));
    }

    #[test]
    fn request_guards_count_in_flight_and_retrying_until_dropped() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tracker = Tracker::new(Stage::Answers, tx);
        let guard = tracker.request("question `q`");
        let error = crate::llm::Error::Timeout(Duration::from_secs(1));
        guard.on_retry(&error, Duration::from_millis(10));
        guard.on_retry(&error, Duration::from_millis(10));
        let p = tracker.snapshot();
        assert_eq!((p.in_flight, p.retrying, p.retries), (1, 1, 2));
        drop(guard);
        let p = tracker.snapshot();
        assert_eq!((p.in_flight, p.retrying, p.retries), (0, 0, 2));
        let mut events = 0;
        while let Ok(Event::Progress { .. }) = rx.try_recv() {
            events += 1;
        }
        assert_eq!(events, 4);
    }

    #[test]
    fn waits_of_a_few_seconds_or_more_are_reported_with_their_item() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tracker = Tracker::new(Stage::Answers, tx);
        let guard = tracker.request("question `q7`");
        let error = crate::llm::Error::RateLimited { retry_after: None };
        guard.on_retry(&error, Duration::from_millis(4999));
        guard.on_retry(&error, Duration::from_secs(45));
        drop(guard);
        let waits: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok())
            .filter(|e| matches!(e, Event::Waiting { .. }))
            .collect();
        assert_eq!(
            waits,
            vec![Event::Waiting {
                stage: Stage::Answers,
                item: "question `q7`".to_owned(),
                wait: Duration::from_secs(45),
                reason: "rate limited (HTTP 429)".to_owned(),
            }]
        );
    }
}
