//! `push RUN_ID`: a run's model to the Hugging Face Hub in one commit with a generated
//! model card (spec/export-compare-push.md section 3, HUB-1..HUB-13). A flow: it sends
//! typed [`Event`]s and returns an [`Outcome`], never prints.
//!
//! Order (HUB-6, HUB-11, HUB-12): the run's eligibility and its files (names and sizes
//! only); `--dry-run` stops there with the card written locally and nothing sent. A real
//! push resolves the token, asks `whoami`, checks write access to the namespace, reads the
//! repo (a private push to an existing public repo is refused before any file is read),
//! creates it when missing, decides the card, hashes and preuploads the files, uploads the
//! LFS objects the Hub does not hold yet (streamed from disk), and makes one commit. A
//! cancel before the commit commits nothing; uploaded objects stay on the Hub, so the next
//! push sends only the missing ones. The repo's opening and the commit itself are
//! `commit.rs`'s.

pub mod after;
pub mod card;
pub mod client;
mod commit;
mod error;
pub mod files;
pub mod recorded;
pub mod retry;
pub mod svg;

use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::config::{EnvSnapshot, Settings};
use crate::env::TimeScale;
use crate::project::Project;
use crate::runs::{RunRecord, State};
use crate::train::metrics::{METRICS_FILE, MetricLine};
use commit::{Prepared, commit, open_repo};
pub use error::HubError;
pub use files::PlannedFile;

/// The variable holding the token (HUB-12).
pub const TOKEN_VAR: &str = "OVERBRAINER_HF_TOKEN";
/// The record of a push, under `runs/<run-id>/hub/` (HUB-10).
pub const PUSH_JSON: &str = "push.json";
/// The directory of a run's push files (card, curve, record).
pub const HUB_DIR: &str = "hub";
/// Files per preupload call (wire-facts B.2).
const PREUPLOAD_CHUNK: usize = 256;
/// Objects per LFS batch call.
const BATCH_CHUNK: usize = 100;

/// What a push asks for.
#[derive(Debug, Clone, Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent command-line flags"
)]
pub struct Request {
    /// The run.
    pub run_id: String,
    /// `--repo`.
    pub repo: Option<String>,
    /// `--public`.
    pub public: bool,
    /// `--overwrite-card`.
    pub overwrite_card: bool,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--no-gate`: push whatever the newest compare says (`[compare] min_win_or_tie`).
    pub no_gate: bool,
}

/// What a push reports while it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The repo existed; it keeps its visibility.
    RepoExists {
        /// The repo.
        repo: String,
        /// Its visibility.
        private: bool,
    },
    /// The repo was created.
    RepoCreated {
        /// The repo.
        repo: String,
        /// Its visibility.
        private: bool,
    },
    /// The repo's own README (no marker) is kept (HUB-7).
    CardKept,
    /// A file's upload starts.
    Uploading {
        /// Repo path.
        path: String,
        /// Bytes.
        size: u64,
    },
    /// A file's object is on the Hub already: not sent.
    AlreadyUploaded {
        /// Repo path.
        path: String,
    },
    /// A call is tried again after a wait.
    Retrying {
        /// Which call.
        what: String,
        /// What it met: `answered 429`, `did not answer`.
        why: String,
        /// How long it waits.
        wait: Duration,
    },
    /// The commit is being made.
    Committing,
}

/// What a dry run would push (HUB-9).
#[derive(Debug, Clone)]
pub struct Plan {
    /// The repo; the account is `<you>` when unknown.
    pub repo: String,
    /// The visibility it would be created with.
    pub private: bool,
    /// The files, the card and curve among them.
    pub files: Vec<PlannedFile>,
    /// Where the card was written.
    pub card: PathBuf,
}

impl Plan {
    /// Bytes in all.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// `push.json` (HUB-10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushRecord {
    /// The repo.
    pub repo: String,
    /// The commit ID.
    pub commit: String,
    /// The commit URL.
    pub url: String,
    /// Files in the commit.
    pub files: usize,
    /// The repo's visibility.
    pub private: bool,
    /// When (UTC).
    pub pushed: jiff::Timestamp,
}

/// How a push ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// `--dry-run`: nothing sent.
    DryRun(Plan),
    /// Committed.
    Pushed {
        /// The record written.
        record: PushRecord,
        /// Bytes in all.
        total: u64,
    },
}

fn emit(events: &UnboundedSender<Event>, event: Event) {
    let _ = events.send(event);
}

/// HUB-2: the run may be pushed.
fn eligible(project: &Project, run: &RunRecord) -> Result<PathBuf, HubError> {
    let refuse = |reason: String| HubError::NotEligible {
        run: run.id.clone(),
        reason,
    };
    let output = project
        .run_dir(&run.id)
        .join(crate::train::axolotl::OUTPUT_DIR);
    match run.state {
        State::Succeeded | State::Stopped if !run.retrieved || !output.is_dir() => {
            Err(refuse(format!(
                "its results are not here; retrieve them with `overbrainer train attach {}`",
                run.id
            )))
        }
        State::Succeeded => Ok(output),
        State::Stopped => {
            let model = files::select(&output)?
                .iter()
                .any(|f| has_extension(&f.path, "safetensors") || has_extension(&f.path, "bin"));
            if model {
                Ok(output)
            } else {
                Err(refuse(format!(
                    "it stopped with only a checkpoint; export it or resume it (`overbrainer train --resume {}`) first",
                    run.id
                )))
            }
        }
        other => Err(refuse(format!("it is {}", other.name()))),
    }
}

/// Whether a repo path ends in `.<extension>`, any case.
fn has_extension(path: &str, extension: &str) -> bool {
    Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(extension))
}

/// `(step, value)` points of a curve.
type Points = Vec<(u64, f64)>;

/// The `(step, loss)` and `(step, eval_loss)` points of a run's `metrics.jsonl`.
fn losses(path: &Path) -> (Points, Points) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Vec::new(), Vec::new());
    };
    let (mut train, mut eval) = (Vec::new(), Vec::new());
    for line in text.lines() {
        match serde_json::from_str::<MetricLine>(line) {
            Ok(MetricLine::Train(t)) => {
                if let Some(loss) = t.loss {
                    train.push((t.step, loss.0));
                }
            }
            Ok(MetricLine::Eval(e)) => {
                if let Some(loss) = e.eval_loss {
                    eval.push((e.step, loss.0));
                }
            }
            _ => {}
        }
    }
    (train, eval)
}

/// The account shown where none has been asked for (a dry run, a cancel).
const YOU: &str = "<you>";

/// The repo named by `--repo`, `[hub] repo`, or `<account>/<project name with - for _>`
/// (HUB-5), refused by the Hub's rules ([`crate::config::repo_problem`]) naming where
/// it came from.
fn repo_name(request: &Request, settings: &Settings, account: &str) -> Result<String, HubError> {
    let (repo, source_of) = match (&request.repo, &settings.hub.repo) {
        (Some(repo), _) => (repo.clone(), "--repo"),
        (None, Some(repo)) => (repo.clone(), "hub.repo"),
        (None, None) => (
            format!("{account}/{}", settings.project.name.replace('_', "-")),
            "the default `<account>/<project name>`; pass --repo or set hub.repo",
        ),
    };
    // The placeholder account of a dry run or a cancel stands for a valid namespace.
    let probe = match (source_of, repo.strip_prefix(YOU)) {
        (_, None) | ("--repo" | "hub.repo", _) => repo.clone(),
        (_, Some(rest)) => format!("you{rest}"),
    };
    match crate::config::repo_problem(&probe) {
        None => Ok(repo),
        Some(problem) => Err(HubError::BadRepo {
            repo,
            source_of: source_of.to_owned(),
            problem,
        }),
    }
}

/// Writes the card (and the loss curve) under `runs/<id>/hub/` and gives the files to
/// push with them appended.
fn write_card(
    project: &Project,
    settings: &Settings,
    run: &RunRecord,
    repo: &str,
    mut files: Vec<PlannedFile>,
    with_card: bool,
) -> Result<(Vec<PlannedFile>, PathBuf), HubError> {
    let dir = project.run_dir(&run.id).join(HUB_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| HubError::Io {
        path: dir.clone(),
        source,
    })?;
    let (train, eval) = losses(&project.run_dir(&run.id).join(METRICS_FILE));
    let curve = svg::loss_curve(&train, &eval);
    let write = |name: &str, text: &str| -> Result<PlannedFile, HubError> {
        let path = dir.join(name);
        crate::runs::record::write_atomic(&path, text.as_bytes())?;
        Ok(PlannedFile {
            local: path,
            path: name.to_owned(),
            size: text.len() as u64,
        })
    };
    let ggufs = files
        .iter()
        .filter(|f| !f.path.contains('/') && has_extension(&f.path, "gguf"))
        .map(|f| f.path.clone())
        .collect();
    let merged = files.iter().any(|f| f.path.starts_with("merged/"));
    if let Some(curve) = &curve {
        files.push(write(card::LOSS_SVG, curve)?);
    }
    let text = card::render(&card::CardInput {
        settings,
        run,
        repo,
        ggufs,
        loss_curve: curve.is_some(),
        merged,
        recorded: recorded::Recorded::read(&project.run_dir(&run.id)).as_ref(),
    });
    let card = write("README.md", &text)?;
    let card_path = card.local.clone();
    if with_card {
        files.push(card);
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((files, card_path))
}

/// Runs `push` (HUB-1..HUB-13). The caller holds the project lock.
///
/// # Errors
///
/// A [`HubError`]; after a cancel, [`HubError::Cancelled`] with nothing committed.
pub async fn push(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    request: &Request,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Result<Outcome, HubError> {
    let run = RunRecord::load(&project.runs_dir(), &request.run_id)?;
    let output = eligible(project, &run)?;
    if !request.no_gate {
        crate::compare::gate::check(
            &run.id,
            &project.run_dir(&run.id),
            settings.compare.min_win_or_tie,
        )?;
    }
    let model_files = files::select(&output)?;
    let private = !request.public && settings.hub.private;
    if request.dry_run {
        let repo = repo_name(request, settings, YOU)?;
        let (files, card) = write_card(project, settings, &run, &repo, model_files, true)?;
        return Ok(Outcome::DryRun(Plan {
            repo,
            private,
            files,
            card,
        }));
    }
    let token: SecretString = match &settings.hf_token {
        None => return Err(HubError::NoToken),
        Some(reference) => crate::secrets::Resolver::new(env)
            .resolve(TOKEN_VAR, reference)
            .await
            .map_err(|e| HubError::Secret(Box::new(e)))?,
    };
    let (waits_tx, mut waits_rx) = tokio::sync::mpsc::unbounded_channel();
    let client = client::Client::new(
        settings.hub.endpoint(),
        token,
        TimeScale::from_env(env),
        waits_tx,
    )?;
    let forward = {
        let events = events.clone();
        tokio::spawn(async move {
            while let Some(client::Wait { what, why, wait }) = waits_rx.recv().await {
                emit(&events, Event::Retrying { what, why, wait });
            }
        })
    };
    let prepared = tokio::select! {
        result = prepare(project, settings, request, &run, model_files, private, &client, events) => result,
        () = cancel.cancelled() => Err(HubError::Cancelled {
            repo: repo_name(request, settings, YOU)?,
            run: run.id.clone(),
        }),
    };
    // Checked again: a cancel that came with the last upload still commits nothing.
    let result = match prepared {
        Ok(_) if cancel.is_cancelled() => Err(HubError::Cancelled {
            repo: repo_name(request, settings, YOU)?,
            run: run.id.clone(),
        }),
        Ok(prepared) => commit(project, &run, &client, prepared, events).await,
        Err(error) => Err(error),
    };
    drop(client);
    let _ = forward.await;
    result
}

#[allow(clippy::too_many_arguments, reason = "one flow's state, passed once")]
async fn prepare(
    project: &Project,
    settings: &Settings,
    request: &Request,
    run: &RunRecord,
    model_files: Vec<PlannedFile>,
    private: bool,
    client: &client::Client,
    events: &UnboundedSender<Event>,
) -> Result<Prepared, HubError> {
    let account = client.whoami().await?;
    let repo = repo_name(request, settings, &account.name)?;
    let namespace = repo.split('/').next().unwrap_or_default().to_owned();
    if !account.may_write(&namespace) {
        return Err(HubError::NoWriteAccess { namespace });
    }
    let info = open_repo(client, &repo, private, events).await?;
    let existing = if info.files.iter().any(|f| f == "README.md") {
        client.download_small(&repo, &info.sha, "README.md").await?
    } else {
        None
    };
    let decision = card::decide(existing.as_deref(), request.overwrite_card);
    if decision == card::Decision::Keep {
        emit(events, Event::CardKept);
    }
    let (files, _) = write_card(
        project,
        settings,
        run,
        &repo,
        model_files,
        decision == card::Decision::Write,
    )?;
    // Hash and sample every file, streamed.
    let mut digests = Vec::with_capacity(files.len());
    for file in &files {
        digests.push(client::digest(&file.local).await?);
    }
    let mut modes = Vec::with_capacity(files.len());
    for (chunk, digest_chunk) in files
        .chunks(PREUPLOAD_CHUNK)
        .zip(digests.chunks(PREUPLOAD_CHUNK))
    {
        let probes: Vec<client::Probe> = chunk
            .iter()
            .zip(digest_chunk)
            .map(|(f, (_, sample))| client::Probe {
                path: f.path.clone(),
                size: f.size,
                sample: sample.clone(),
            })
            .collect();
        modes.extend(client.preupload(&repo, &probes).await?);
    }
    let lfs: Vec<usize> = (0..files.len())
        .filter(|i| modes[*i] == client::Mode::Lfs)
        .collect();
    for batch in lfs.chunks(BATCH_CHUNK) {
        let objects: Vec<(String, u64)> = batch
            .iter()
            .map(|i| (digests[*i].0.clone(), files[*i].size))
            .collect();
        let actions = client.lfs_batch(&repo, &objects).await?;
        for (i, action) in batch.iter().zip(actions) {
            let file = &files[*i];
            if action == client::Action::Stored {
                emit(
                    events,
                    Event::AlreadyUploaded {
                        path: file.path.clone(),
                    },
                );
                continue;
            }
            emit(
                events,
                Event::Uploading {
                    path: file.path.clone(),
                    size: file.size,
                },
            );
            client
                .upload(&file.local, &digests[*i].0, file.size, &action)
                .await?;
        }
    }
    Ok(Prepared {
        repo,
        info,
        files,
        modes,
        digests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(repo: Option<&str>) -> Request {
        Request {
            run_id: "demo_20260922-143005_2".to_owned(),
            repo: repo.map(str::to_owned),
            public: false,
            overwrite_card: false,
            dry_run: true,
            no_gate: false,
        }
    }

    #[test]
    fn push_repo_refuses_a_git_suffix_and_over_96_characters_naming_the_flag_and_the_rule() {
        let mut settings = Settings::default();
        settings.project.name = "demo_child".to_owned();
        let long = format!("me/{}", "a".repeat(97));
        for (repo, rule) in [("me/demo.git", "`.git`"), (long.as_str(), "at most 96")] {
            let error = repo_name(&request(Some(repo)), &settings, "me").unwrap_err();
            let text = error.to_string();
            assert!(text.contains("(--repo)") && text.contains(rule), "{text}");
        }
        assert_eq!(
            repo_name(&request(Some("me/demo")), &settings, "me").unwrap(),
            "me/demo"
        );
        // The default under the placeholder account of a dry run stays usable.
        assert_eq!(
            repo_name(&request(None), &settings, YOU).unwrap(),
            "<you>/demo-child"
        );
        settings.hub.repo = Some("me/x--y".to_owned());
        let text = repo_name(&request(None), &settings, YOU)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("(hub.repo)") && text.contains("`--`"),
            "{text}"
        );
    }
}
