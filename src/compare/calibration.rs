//! Calibration before the questions (issue 35): before the child is asked, the judge
//! answers a few control pairs made from the project's own data, in both orders: the
//! parent's answer to an eval question against a clearly worse one (the parent's
//! answer to another question, or the answer cut to its first [`CUT_WORDS`] words). A
//! judge that does not prefer the parent's answer in both orders of most controls is
//! refused before any child question is judged; `--skip-calibration` passes knowingly
//! (the gate then refuses the compare). [`controls`] is pure.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::judge::{Judge, JudgeError, strip_reasoning};
use super::order::{Order, Outcome, Verdict};
use super::setup::Question;

/// The calibration's file in the compare directory.
pub const CALIBRATION_JSON: &str = "calibration.json";

/// Control pairs, at most.
pub const CONTROLS: usize = 4;

/// Words a cut answer keeps.
pub const CUT_WORDS: usize = 5;

/// A cut answer is made only of a parent's answer at least this many times longer.
const CUT_FACTOR: usize = 3;

/// The clearly worse answer of a control pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Worse {
    /// The parent's answer to another question.
    OtherAnswer {
        /// That question's ID.
        of: String,
    },
    /// The parent's own answer cut to its first words.
    Cut {
        /// Words kept.
        words: usize,
    },
}

/// One control pair and what the judge said of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// The eval question.
    pub question: String,
    /// The worse answer.
    pub worse: Worse,
    /// The judge's verdicts with the parent's answer as A, then as B (`None`:
    /// unparsed).
    pub verdicts: (Option<Verdict>, Option<Verdict>),
    /// Whether it preferred the parent's answer in both orders.
    pub prefers_parent: bool,
}

impl Control {
    /// `` `q3` against the answer to `q4` ``, `` `q1` against its answer cut to 5 words ``.
    #[must_use]
    pub fn name(&self) -> String {
        match &self.worse {
            Worse::OtherAnswer { of } => {
                format!("`{}` against the answer to `{of}`", self.question)
            }
            Worse::Cut { words } => {
                format!(
                    "`{}` against its answer cut to {words} words",
                    self.question
                )
            }
        }
    }
}

/// `calibration.json`: the controls of one judge, or that they were skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibration {
    /// The judge's verdicts key (provider, model and prompt), whose verdicts it
    /// calibrates.
    pub judge_key: String,
    /// `<provider>/<model>`.
    pub judge: String,
    /// `--skip-calibration`: no control was asked.
    pub skipped: bool,
    /// The controls asked.
    pub controls: Vec<Control>,
}

impl Calibration {
    /// Controls whose parent's answer the judge preferred in both orders.
    #[must_use]
    pub fn passed(&self) -> usize {
        self.controls.iter().filter(|c| c.prefers_parent).count()
    }

    /// Whether the judge is calibrated: asked, and preferring the parent's answer in
    /// more than half of the controls.
    #[must_use]
    pub fn calibrated(&self) -> bool {
        !self.skipped && !self.controls.is_empty() && 2 * self.passed() > self.controls.len()
    }

    /// The names of the controls it failed.
    #[must_use]
    pub fn failed(&self) -> Vec<String> {
        self.controls
            .iter()
            .filter(|c| !c.prefers_parent)
            .map(Control::name)
            .collect()
    }

    /// One line for the report and the output.
    #[must_use]
    pub fn text(&self) -> String {
        if self.skipped {
            return "not checked (`--skip-calibration`)".to_owned();
        }
        format!(
            "preferred the parent's answer over a clearly worse one, in both orders, in {} of {} control pairs{}",
            self.passed(),
            self.controls.len(),
            if self.calibrated() {
                ""
            } else {
                ": not calibrated"
            }
        )
    }

    /// Reads the calibration of the compare in `dir`, if it has one.
    #[must_use]
    pub fn load(dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(dir.join(CALIBRATION_JSON)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes it into the compare directory `dir`.
    ///
    /// # Errors
    ///
    /// The write's error, naming the file.
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())? + "\n";
        let path = dir.join(CALIBRATION_JSON);
        crate::runs::record::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("`{}`: {e}", path.display()))
    }
}

/// The first `words` words of `text`, and whether it has at least [`CUT_FACTOR`]
/// times as many.
fn cut(text: &str, words: usize) -> Option<String> {
    let all: Vec<&str> = text.split_whitespace().collect();
    (all.len() >= words * CUT_FACTOR).then(|| all[..words].join(" "))
}

/// The control pairs of `questions` (at most [`CONTROLS`], from the first questions in
/// order): for each, the question's index, the worse answer and its text. They
/// alternate between another question's answer and the cut answer, each falling back
/// on the other kind where it cannot be made (a single question, answers alike, a
/// short answer); a question for which neither can be made gives no control.
#[must_use]
pub fn controls(questions: &[Question]) -> Vec<(usize, Worse, String)> {
    let parents: Vec<String> = questions
        .iter()
        .map(|q| strip_reasoning(&q.parent_answer))
        .collect();
    let mut made = Vec::new();
    for (index, parent) in parents.iter().enumerate() {
        if made.len() == CONTROLS {
            break;
        }
        let other = (1..questions.len())
            .map(|step| (index + step) % questions.len())
            .find(|&j| parents[j].trim() != parent.trim() && !parents[j].trim().is_empty())
            .map(|j| {
                (
                    Worse::OtherAnswer {
                        of: questions[j].id.clone(),
                    },
                    parents[j].clone(),
                )
            });
        let cut = cut(parent, CUT_WORDS).map(|text| (Worse::Cut { words: CUT_WORDS }, text));
        let pick = if made.len() % 2 == 0 {
            other.or(cut)
        } else {
            cut.or(other)
        };
        if let Some((worse, text)) = pick {
            made.push((index, worse, text));
        }
    }
    made
}

/// Asks `judge` the controls of `questions` in both orders (their requests under its
/// budget, recorded in the ledger like every judge request).
///
/// # Errors
///
/// [`JudgeError`] of a request.
pub async fn calibrate(
    judge: &Judge,
    questions: &[Question],
    judge_key: &str,
    judge_name: &str,
) -> Result<Calibration, JudgeError> {
    let mut asked = Vec::new();
    for (index, worse, text) in controls(questions) {
        let question = &questions[index];
        // The worse answer stands where the child's would: a loss is the parent's.
        let first = judge.once(question, &text, Order::ParentA).await?;
        let second = judge.once(question, &text, Order::ChildA).await?;
        asked.push(Control {
            question: question.id.clone(),
            worse,
            verdicts: (first.verdict, second.verdict),
            prefers_parent: first.result == Outcome::Loss && second.result == Outcome::Loss,
        });
    }
    Ok(Calibration {
        judge_key: judge_key.to_owned(),
        judge: judge_name.to_owned(),
        skipped: false,
        controls: asked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(id: &str, answer: &str) -> Question {
        Question {
            id: id.into(),
            topic: "t".into(),
            subtopic: "s".into(),
            system: None,
            user: format!("question {id}?"),
            parent_answer: answer.into(),
            parent_input_tokens: 0,
            parent_output_tokens: 0,
            parent_latency_secs: None,
            parent_ttft_secs: None,
        }
    }

    const LONG: &str = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen";

    #[test]
    fn controls_alternate_other_answers_and_cut_answers_with_fallbacks() {
        let questions: Vec<Question> = (1..=6)
            .map(|i| question(&format!("q{i}"), &format!("<think>hm</think>{LONG} {i}")))
            .collect();
        let made = controls(&questions);
        let kinds: Vec<(usize, Worse)> = made.iter().map(|(i, w, _)| (*i, w.clone())).collect();
        assert_eq!(
            kinds,
            [
                (0, Worse::OtherAnswer { of: "q2".into() }),
                (1, Worse::Cut { words: 5 }),
                (2, Worse::OtherAnswer { of: "q4".into() }),
                (3, Worse::Cut { words: 5 }),
            ]
        );
        // The reasoning is stripped, as the judge sees the answers.
        assert_eq!(made[0].2, format!("{LONG} 2"));
        assert_eq!(made[1].2, "one two three four five");
        // One question: only its cut answer; a short one: nothing to make.
        let one = controls(&[question("q1", LONG)]);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].1, Worse::Cut { words: 5 });
        assert!(controls(&[question("q1", "Paris.")]).is_empty());
        // Answers alike give no "other answer"; short ones no cut.
        let alike = controls(&[question("q1", "Yes."), question("q2", "Yes.")]);
        assert!(alike.is_empty(), "{alike:?}");
    }

    #[test]
    fn a_judge_is_calibrated_by_most_controls_in_both_orders() {
        let control = |prefers_parent| Control {
            question: "q1".into(),
            worse: Worse::Cut { words: 5 },
            verdicts: (Some(Verdict::A), Some(Verdict::B)),
            prefers_parent,
        };
        let calibration = |passed: &[bool]| Calibration {
            judge_key: "k".into(),
            judge: "p/m".into(),
            skipped: false,
            controls: passed.iter().map(|&p| control(p)).collect(),
        };
        assert!(calibration(&[true, true, true, false]).calibrated());
        assert!(!calibration(&[true, true, false, false]).calibrated());
        assert!(calibration(&[true]).calibrated());
        assert!(!calibration(&[]).calibrated());
        let failed = calibration(&[false, true]);
        assert_eq!(failed.failed(), ["`q1` against its answer cut to 5 words"]);
        assert!(
            failed
                .text()
                .ends_with("in 1 of 2 control pairs: not calibrated")
        );
        let skipped = Calibration {
            skipped: true,
            ..calibration(&[true, true])
        };
        assert!(!skipped.calibrated());
    }
}
