//! The crate's error: what went wrong on the host, each with what to do about it.

use std::path::{Path, PathBuf};

/// Errors of host measurements. Each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The cause is in the message (not a `source`, which would print it twice).
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("not root: {0}")]
    NotRoot(String),
    #[error("tracefs is not available: {reason}")]
    NoTracefs { reason: String },
    #[error("this kernel has no trace event {event} (its system offers: {available})")]
    MissingEvent { event: String, available: String },
    /// irqlab cannot keep its record of host changes, so it makes none. `env`: the variable
    /// that names another directory (`state::STATE_DIR_ENV`).
    #[error(
        "cannot keep irqlab's record of host changes in {path}: {cause}; fix that directory, or \
         point {env} at a directory only this user can write to"
    )]
    StateDir {
        path: PathBuf,
        cause: String,
        env: &'static str,
    },
    /// A host setting could not be put back; the message says how to do it by hand.
    #[error("restoring the host: {0}")]
    Restore(String),
    /// Masks read back after an apply are not the plan's: what irqlab would report as in force
    /// is not.
    #[error("the plan is not in force: {0}")]
    NotAsPlanned(String),
}

impl HostError {
    pub(crate) fn io(path: &Path, cause: std::io::Error) -> Self {
        HostError::Io {
            path: path.to_path_buf(),
            cause,
        }
    }
}
