//! Opening a pipeline session, for any front end: the project, its configuration, the
//! project lock (LCK-1) and the stage [`Context`] with its key resolver, prices, redactor,
//! event channel and cancellation token. The front end renders the events and cancels the
//! token on its interrupt (Ctrl-C on the command line, PIPE-16).

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::{Context, Event};
use crate::config::{ConfigError, EnvSnapshot, Loaded};
use crate::pricing::PriceBook;
use crate::project::{LockError, Project, ProjectError, ProjectLock};
use crate::secrets::Resolver;

/// Why a session cannot open.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No project in the directory (LAY-1).
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// The configuration is invalid (every problem listed).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Another process holds the project (LCK-2).
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// An open project ready to run stages: it holds the project lock until dropped.
pub struct Session {
    /// The project.
    pub project: Project,
    /// The configuration as last loaded (its `warnings` are the front end's to show).
    pub loaded: Loaded,
    /// What every stage runs with; its `cancel` token stops the stage in progress.
    pub context: Context,
    /// The environment the configuration was loaded from (a reload layers `.env` over it).
    pub env: EnvSnapshot,
    /// The configuration files as last read, to see whether they changed (RLD-3).
    stamp: Stamp,
    _lock: ProjectLock,
}

/// The modification time and size of `overbrainer.toml` and `.env`, each when present.
type Stamp = Vec<Option<(SystemTime, u64)>>;

fn stamp(root: &Path) -> Stamp {
    [crate::config::FILE_NAME, crate::config::DOTENV_NAME]
        .iter()
        .map(|name| {
            let meta = std::fs::metadata(root.join(name)).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect()
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("root", &self.project.root())
            .finish_non_exhaustive()
    }
}

/// Opens the project in `dir`: loads the configuration, takes the project lock (LCK-1)
/// and builds the stage context. Returns the session and the receiver of its stage events.
///
/// # Errors
///
/// [`SessionError`] when there is no project, the configuration is invalid or another
/// process holds the lock; nothing is written then.
pub fn open(
    dir: &Path,
    env: &EnvSnapshot,
) -> Result<(Session, UnboundedReceiver<Event>), SessionError> {
    let project = Project::open(dir)?;
    let read = stamp(project.root());
    let loaded = crate::check::load(project.root(), env)?;
    let lock = project.lock()?;
    let (tx, events) = unbounded_channel();
    let backoff_base = crate::env::TimeScale::from_env(env).second();
    let context = Context {
        settings: Arc::new(loaded.settings.clone()),
        root: project.root().to_path_buf(),
        secrets: Arc::new(Resolver::new(&loaded.env)),
        prices: PriceBook::new(),
        events: tx,
        cancel: CancellationToken::new(),
        backoff_base,
        redactor: crate::llm::Redactor::new(),
        over_budget: false,
    };
    let session = Session {
        project,
        loaded,
        context,
        env: env.clone(),
        stamp: read,
        _lock: lock,
    };
    Ok((session, events))
}

impl Session {
    /// Re-reads the configuration; the next stage runs with it (RLD-3). The key resolver,
    /// prices and redactor stay: keys resolved so far stay redacted.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when the new configuration is invalid; the session keeps the old
    /// one then.
    pub fn reload(&mut self) -> Result<(), ConfigError> {
        let read = stamp(self.project.root());
        let loaded = crate::check::load(self.project.root(), &self.env)?;
        self.context.settings = Arc::new(loaded.settings.clone());
        self.loaded = loaded;
        self.stamp = read;
        Ok(())
    }

    /// Re-reads the configuration when `overbrainer.toml` or `.env` changed since it was
    /// last read (RLD-3); returns whether it did.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when the changed configuration is invalid.
    pub fn reload_if_changed(&mut self) -> Result<bool, ConfigError> {
        if stamp(self.project.root()) == self.stamp {
            return Ok(false);
        }
        self.reload()?;
        Ok(true)
    }
}
