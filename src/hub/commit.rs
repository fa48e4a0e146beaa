//! The repo a push goes to, opened or created (HUB-6), and the push's one commit with
//! its `push.json`.

use base64::Engine as _;
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

use super::{Event, HUB_DIR, HubError, Outcome, PUSH_JSON, PlannedFile, PushRecord, client, emit};
use crate::project::Project;
use crate::runs::RunRecord;

/// The repo's head, created when missing (HUB-6): an existing public repo refuses a
/// private push before anything is read.
pub(super) async fn open_repo(
    client: &client::Client,
    repo: &str,
    private: bool,
    events: &UnboundedSender<Event>,
) -> Result<client::RepoInfo, HubError> {
    let repo = repo.to_owned();
    if let Some(info) = client.repo_info(&repo).await? {
        return existing(repo, info, private, events);
    }
    let created = client.create(&repo, private).await?;
    let info = client
        .repo_info(&repo)
        .await?
        .ok_or_else(|| HubError::Protocol(format!("{repo} is not found after its creation")))?;
    if !created {
        // Made meanwhile by someone else: as any repo that was there.
        return existing(repo, info, private, events);
    }
    emit(
        events,
        Event::RepoCreated {
            repo,
            private: info.private,
        },
    );
    Ok(info)
}

/// A repo that was there: a private push refuses a public one, else it is announced.
fn existing(
    repo: String,
    info: client::RepoInfo,
    private: bool,
    events: &UnboundedSender<Event>,
) -> Result<client::RepoInfo, HubError> {
    if private && !info.private {
        return Err(HubError::PublicRepo { repo });
    }
    emit(
        events,
        Event::RepoExists {
            repo,
            private: info.private,
        },
    );
    Ok(info)
}

/// What the uploads leave for the commit.
pub(super) struct Prepared {
    pub(super) repo: String,
    pub(super) info: client::RepoInfo,
    pub(super) files: Vec<PlannedFile>,
    pub(super) modes: Vec<client::Mode>,
    pub(super) digests: Vec<(String, Vec<u8>)>,
}

/// The one commit of `prepared` and `push.json`; not cancelled once sent.
pub(super) async fn commit(
    project: &Project,
    run: &RunRecord,
    client: &client::Client,
    prepared: Prepared,
    events: &UnboundedSender<Event>,
) -> Result<Outcome, HubError> {
    let Prepared {
        repo,
        info,
        files,
        modes,
        digests,
    } = prepared;
    let mut lines = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        match modes[i] {
            client::Mode::Ignored => {}
            client::Mode::Lfs => lines.push(json!({"key": "lfsFile", "value": {
                "path": file.path, "algo": "sha256", "oid": digests[i].0, "size": file.size,
            }})),
            client::Mode::Regular => {
                let bytes = std::fs::read(&file.local).map_err(|source| HubError::Io {
                    path: file.local.clone(),
                    source,
                })?;
                lines.push(json!({"key": "file", "value": {
                    "content": base64::engine::general_purpose::STANDARD.encode(bytes),
                    "path": file.path,
                    "encoding": "base64",
                }}));
            }
        }
    }
    emit(events, Event::Committing);
    let summary = format!("Push run {} with overbrainer", run.id);
    let committed = client.commit(&repo, &summary, &info.sha, &lines).await?;
    let record = PushRecord {
        repo,
        commit: committed.oid,
        url: committed.url,
        files: lines.len(),
        private: info.private,
        pushed: jiff::Timestamp::now(),
    };
    let path = project.run_dir(&run.id).join(HUB_DIR).join(PUSH_JSON);
    let mut text =
        serde_json::to_string_pretty(&record).map_err(|e| HubError::Protocol(e.to_string()))?;
    text.push('\n');
    crate::runs::record::write_atomic(&path, text.as_bytes())?;
    let total = files.iter().map(|f| f.size).sum();
    Ok(Outcome::Pushed { record, total })
}
