//! What a key asks the app to do: views return an [`Action`] from `handle_key`, the app
//! carries it out (switching views, opening dialogs, starting flows).

/// What a key press asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Quit: followed runs are detached, never cancelled (TUI-65).
    Quit,
    /// Show view `n` (0-based).
    View(usize),
    /// The next view (Tab).
    NextView,
    /// The previous view (Shift-Tab).
    PrevView,
    /// Toggle the help overlay.
    Help,
    /// Re-read the runs list from disk (`R`).
    Reload,
    /// Open a confirmation dialog.
    Ask(Dialog),
    /// Say something on the status line; `ok` picks `✓` or `✗`.
    Say {
        /// Success or failure.
        ok: bool,
        /// The message.
        text: String,
    },
    /// Start a training run (`t` confirmed), or resume a stopped one.
    Start {
        /// The stopped run to resume (`T`).
        resume_from: Option<String>,
    },
    /// Follow a run again (`a`).
    Attach(String),
    /// Stop a run with a snapshot (`s` confirmed).
    Stop(String),
    /// Cancel a run's job (`c` confirmed).
    Cancel(String),
    /// Delete a dataset item with its dependents, then split again (`d`/`D` confirmed,
    /// TUI-34, TUI-35).
    DeleteData(crate::dataset::delete::Target),
    /// Write a change to `overbrainer.toml` (TUI-13).
    EditConfig(Vec<crate::config::edit::Change>),
    /// Open the Runpod picker of this dotted key (TUI-21..TUI-23).
    Pick(String),
    /// Write back `overbrainer.toml` as it was before the TUI's last write (`u`, TUI-17).
    UndoConfig,
    /// Hand `overbrainer.toml` to `$VISUAL`/`$EDITOR` (`E`, TUI-18).
    EditFile,
    /// Edit a question's text or a subtopic's name in the user's editor (`e`, TUI-32).
    EditData(super::dataset_edit::DataEdit),
    /// Open the `r` menu: auto, each stage, run (TUI-5).
    Menu,
    /// Ask before auto mode (`A`, TUI-38).
    AskAuto,
    /// Run dataset stages (the `r` menu's pick, or auto mode confirmed).
    RunChain(super::stages::Chain),
    /// Cancel the running stage and the rest of its chain (`c` confirmed, TUI-37).
    CancelStages,
    /// Quit without asking (a quit confirmed, TUI-65).
    QuitNow,
    /// Write these log lines (oldest first) to a new `.overbrainer/logs-<time>.log`
    /// (`x` in Logs, TUI-56).
    ExportLogs(Vec<String>),
    /// Show the pod log of the run selected in the Training view (`s` in Logs, TUI-57).
    ShowPodLog,
    /// Write the pod log lines of run `run` shown to a new
    /// `.overbrainer/logs-pod-<run-id>-<time>.log` (`x` in Logs on the pod log, TUI-57).
    ExportPodLog {
        /// The run.
        run: String,
        /// The lines, oldest first.
        lines: Vec<String>,
    },
}

impl Action {
    /// A failure message for the status line.
    #[must_use]
    pub fn refuse(text: impl Into<String>) -> Self {
        Self::Say {
            ok: false,
            text: text.into(),
        }
    }
}

/// A question with the action `y` carries out (drawn and answered by
/// the dialog component).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// The title.
    pub title: String,
    /// What the user confirms, one line each.
    pub lines: Vec<String>,
    /// What `y` does.
    pub yes: Box<Action>,
}

impl Dialog {
    /// A dialog titled `title` asking about `lines`, doing `yes` on `y`.
    #[must_use]
    pub fn new(title: impl Into<String>, lines: Vec<String>, yes: Action) -> Self {
        Self {
            title: title.into(),
            lines,
            yes: Box::new(yes),
        }
    }
}
