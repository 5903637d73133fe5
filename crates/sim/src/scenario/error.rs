//! What can be wrong with a scenario, and where the bad value came from.

use std::path::PathBuf;

/// Where a bad value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    /// A `--set` flag.
    Flag(String),
    /// Another command-line argument, as typed (`--card port9=2`).
    Arg(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { path, line, column } => {
                write!(f, "{}:{line}:{column}", path.display())
            }
            Origin::Flag(s) => write!(f, "--set {s}"),
            Origin::Arg(s) => write!(f, "{s}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A file could not be read. `named_by` says which file and key pointed at it.
    #[error("cannot read {}{}: {cause}", path.display(), named_by.as_deref().map(|n| format!(" (named by {n})")).unwrap_or_default())]
    Io {
        path: PathBuf,
        named_by: Option<String>,
        cause: std::io::Error,
    },
    #[error("{origin}: {message}")]
    Syntax { origin: Origin, message: String },
    /// An experiments directory without experiment files.
    #[error(
        "{}: no experiment files (*.toml) in this directory; pass --experiments with a directory \
         of experiment files, or leave it out to run the shipped experiments",
        dir.display()
    )]
    NoExperiments { dir: PathBuf },
    #[error("--set {flag}: {message}")]
    Override { flag: String, message: String },
    /// The run did not settle: the event limit was reached before the samples completed.
    #[error(
        "{}: the run stopped after {events} events with {completed} of {requested} samples: the \
         system never settles (an interrupt storm, or a line that stays asserted?)",
        path.display()
    )]
    Runaway {
        path: PathBuf,
        events: u64,
        completed: u64,
        requested: u64,
    },
    /// A configuration that hardware or the kernel cannot have.
    #[error("{origin}: {key}: {message}")]
    Invalid {
        origin: Origin,
        key: String,
        message: String,
    },
}
