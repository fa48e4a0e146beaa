//! The lines of a run's `metrics.jsonl` (spec/training.md, MPL-2, MPL-3) and a tolerant
//! reader for them.
//!
//! The plugin (`metrics_plugin.py`) writes `train`, `eval`, `eval_progress`, `end` and
//! `snapshot` lines; the job script writes `stage` lines ([`super::job::Stages`]). Every
//! line has `kind` and `ts` (UTC seconds since the epoch). Non-finite numbers arrive as
//! the strings `"nan"`, `"inf"` and `"-inf"` (JSON has no literal for them) and are
//! kept as such. Another writer's bare `NaN`, `Infinity` and `-Infinity` (what Python's
//! `json.dumps` writes, which is not JSON) are read the same way and flagged: the first
//! line holding each comes back as [`Parsed::Flagged`] with a warning naming the line. A
//! UTF-8 byte-order mark at the start of a line is skipped. A line of an unknown kind is
//! skipped with one warning per kind; a line that is not JSON is skipped with a warning
//! (a torn last line is never handed to the reader while the file grows, since the tail
//! only returns complete lines).

use std::borrow::Cow;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize};

/// File name of the metric lines, in the run directory.
pub const METRICS_FILE: &str = "metrics.jsonl";

/// A metric value: a finite float, or NaN and the infinities written as strings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Value(pub f64);

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(Self(n)),
            Raw::Text(text) => match text.to_ascii_lowercase().as_str() {
                "nan" => Ok(Self(f64::NAN)),
                "inf" | "infinity" | "+inf" => Ok(Self(f64::INFINITY)),
                "-inf" | "-infinity" => Ok(Self(f64::NEG_INFINITY)),
                _ => Err(serde::de::Error::custom(format!(
                    "expected a number, `nan` or `inf`, found `{text}`"
                ))),
            },
        }
    }
}

/// A stage of the job script (MPL-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// `axolotl train`.
    Train,
    /// `axolotl merge-lora`.
    Merge,
    /// The GGUF export.
    Export,
}

impl Stage {
    /// The stage's name in a `stage` line (`"stage":"<name>"`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Train => "train",
            Self::Merge => "merge",
            Self::Export => "export",
        }
    }
}

/// One training step (`kind: train`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainLine {
    /// UTC seconds.
    pub ts: f64,
    /// Optimizer step.
    pub step: u64,
    /// Steps in all.
    #[serde(default)]
    pub max_steps: Option<u64>,
    /// Epoch, fractional.
    #[serde(default)]
    pub epoch: Option<Value>,
    /// Training loss.
    #[serde(default)]
    pub loss: Option<Value>,
    /// Learning rate.
    #[serde(default)]
    pub learning_rate: Option<Value>,
    /// Gradient norm.
    #[serde(default)]
    pub grad_norm: Option<Value>,
}

/// One completed evaluation (`kind: eval`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalLine {
    /// UTC seconds.
    pub ts: f64,
    /// Optimizer step the evaluation ran at.
    pub step: u64,
    /// Eval loss.
    #[serde(default)]
    pub eval_loss: Option<Value>,
    /// Every other `eval_*` value that is a number.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// One line of `metrics.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MetricLine {
    /// The job script started a stage.
    Stage {
        /// UTC seconds.
        ts: f64,
        /// Which stage.
        stage: Stage,
    },
    /// A training step.
    Train(TrainLine),
    /// A completed evaluation.
    Eval(EvalLine),
    /// Progress of an evaluation.
    EvalProgress {
        /// UTC seconds.
        ts: f64,
        /// Batches done.
        step: u64,
        /// Batches in all, when known.
        #[serde(default)]
        total: Option<u64>,
    },
    /// The training loop is over.
    End {
        /// UTC seconds.
        ts: f64,
        /// Last optimizer step.
        step: u64,
    },
    /// A snapshot checkpoint was saved.
    Snapshot {
        /// UTC seconds.
        ts: f64,
        /// Step of the checkpoint.
        step: u64,
        /// Directory name, `checkpoint-N`.
        checkpoint: String,
        /// Why: the first word of the request the job honoured (`requested`,
        /// `deadline`, `cost`, `disk`); absent from plugins before it was written.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl MetricLine {
    /// Whether the plugin wrote this line (every kind but `stage`).
    #[must_use]
    pub fn from_plugin(&self) -> bool {
        !matches!(self, Self::Stage { .. })
    }
}

/// Kinds [`MetricLine`] knows.
const KNOWN_KINDS: [&str; 6] = ["stage", "train", "eval", "eval_progress", "end", "snapshot"];

/// What [`MetricReader::parse`] made of one line.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A known line.
    Line(MetricLine),
    /// A known line read with a warning to show: it held a bare `NaN`, `Infinity` or
    /// `-Infinity`, read as a non-finite value (once per token and reader).
    Flagged(MetricLine, String),
    /// Skipped, with a warning to show (`None` when this kind was already warned about,
    /// or the line was blank).
    Skipped(Option<String>),
}

/// Reads metric lines one at a time, warning once per unknown kind (MPL-3).
#[derive(Debug, Default)]
pub struct MetricReader {
    line_number: u64,
    warned_kinds: BTreeSet<String>,
    warned_tokens: BTreeSet<&'static str>,
}

impl Parsed {
    /// The line, flagged or not.
    #[must_use]
    pub fn into_line(self) -> Option<MetricLine> {
        match self {
            Self::Line(line) | Self::Flagged(line, _) => Some(line),
            Self::Skipped(_) => None,
        }
    }
}

/// Bare tokens some writers use for non-finite numbers, with the string this reader
/// reads them as (see [`Value`]).
const NON_STANDARD: [(&str, &str); 3] = [
    ("-Infinity", "\"-inf\""),
    ("Infinity", "\"inf\""),
    ("NaN", "\"nan\""),
];

/// `line` with every bare `NaN`, `Infinity` and `-Infinity` outside strings replaced by
/// the strings `"nan"`, `"inf"` and `"-inf"`, and the tokens found, in order of first
/// appearance. Outside strings JSON has no other capital letters, so the tokens cannot
/// be part of anything else.
fn standardize_numbers(line: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    if !line.contains("NaN") && !line.contains("Infinity") {
        return (Cow::Borrowed(line), Vec::new());
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut found = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some((token, replacement)) = NON_STANDARD
            .iter()
            .find(|(token, _)| rest.starts_with(token))
        {
            out.push_str(replacement);
            if !found.contains(token) {
                found.push(*token);
            }
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    (Cow::Owned(out), found)
}

impl MetricReader {
    /// A reader at line 1.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the next complete line of the file.
    pub fn parse(&mut self, line: &str) -> Parsed {
        self.line_number += 1;
        let line = line.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            return Parsed::Skipped(None);
        }
        let (line, tokens) = standardize_numbers(line);
        let value: serde_json::Value = match serde_json::from_str(&line) {
            Ok(value) => value,
            Err(error) => {
                return Parsed::Skipped(Some(format!(
                    "{METRICS_FILE} line {}: not JSON, skipped ({error})",
                    self.line_number
                )));
            }
        };
        let kind = value
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !KNOWN_KINDS.contains(&kind.as_str()) {
            if self.warned_kinds.insert(kind.clone()) {
                return Parsed::Skipped(Some(format!(
                    "{METRICS_FILE} line {}: unknown kind `{kind}`, such lines are skipped",
                    self.line_number
                )));
            }
            return Parsed::Skipped(None);
        }
        match serde_json::from_value(value) {
            Ok(line) => {
                let new: Vec<&str> = tokens
                    .into_iter()
                    .filter(|token| self.warned_tokens.insert(token))
                    .collect();
                if new.is_empty() {
                    return Parsed::Line(line);
                }
                let names: Vec<String> = new.iter().map(|t| format!("`{t}`")).collect();
                Parsed::Flagged(
                    line,
                    format!(
                        "{METRICS_FILE} line {}: bare {} (not JSON) read as a non-finite value; later ones are read the same way",
                        self.line_number,
                        names.join(", ")
                    ),
                )
            }
            Err(error) => Parsed::Skipped(Some(format!(
                "{METRICS_FILE} line {}: bad `{kind}` line, skipped ({error})",
                self.line_number
            ))),
        }
    }

    /// Parses the bytes left after the last line break once the file is complete: a
    /// valid JSON line that lost its line break is kept, a torn one is skipped with a
    /// warning (LAY-3).
    pub fn parse_last(&mut self, rest: &[u8]) -> Parsed {
        let text = String::from_utf8_lossy(rest);
        if text.trim().is_empty() {
            return Parsed::Skipped(None);
        }
        match self.parse(&text) {
            Parsed::Skipped(Some(_))
                if serde_json::from_str::<serde_json::Value>(
                    &standardize_numbers(text.trim_start_matches('\u{feff}').trim()).0,
                )
                .is_err() =>
            {
                Parsed::Skipped(Some(format!(
                    "{METRICS_FILE} line {}: torn last line, skipped",
                    self.line_number
                )))
            }
            other => other,
        }
    }
}

/// What the metric lines say so far about a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Whether the plugin wrote any line (MPL-1).
    pub plugin_seen: bool,
    /// Steps in all.
    pub max_steps: Option<u64>,
    /// Last step seen.
    pub last_step: Option<u64>,
    /// Last epoch seen.
    pub epoch: Option<f64>,
    /// Last training loss.
    pub last_loss: Option<f64>,
    /// Last eval loss.
    pub last_eval_loss: Option<f64>,
    /// Snapshot step and checkpoint, when one was saved.
    pub snapshot: Option<(u64, String)>,
    /// The snapshot's reason as its line gave it.
    #[serde(default)]
    pub snapshot_reason: Option<String>,
    /// The last stage the job script started (MPL-2): a job that failed in `merge`
    /// finished its training.
    #[serde(default)]
    pub last_stage: Option<Stage>,
}

impl Summary {
    /// Takes `line` into account.
    pub fn observe(&mut self, line: &MetricLine) {
        if line.from_plugin() {
            self.plugin_seen = true;
        }
        match line {
            MetricLine::Train(train) => {
                self.last_step = Some(train.step);
                if train.max_steps.is_some() {
                    self.max_steps = train.max_steps;
                }
                if let Some(epoch) = train.epoch {
                    self.epoch = Some(epoch.0);
                }
                if let Some(loss) = train.loss {
                    self.last_loss = Some(loss.0);
                }
            }
            MetricLine::Eval(eval) => {
                if let Some(loss) = eval.eval_loss {
                    self.last_eval_loss = Some(loss.0);
                }
            }
            MetricLine::End { step, .. } => self.last_step = Some(*step),
            MetricLine::Snapshot {
                step,
                checkpoint,
                reason,
                ..
            } => {
                self.snapshot = Some((*step, checkpoint.clone()));
                self.snapshot_reason.clone_from(reason);
            }
            MetricLine::Stage { stage, .. } => self.last_stage = Some(*stage),
            MetricLine::EvalProgress { .. } => {}
        }
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
