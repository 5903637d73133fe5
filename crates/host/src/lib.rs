//! Measurements on the Linux host irqlab runs on.
//!
//! - [`inventory`]: the host's interrupts from `/proc/interrupts`, `/proc/irq`,
//!   `/sys/kernel/irq` and `/sys/bus/pci` (`irqlab host`).
//!
//! Every reader takes a root directory, so tests run on captured fixture trees and on the live
//! system alike. Results are the `irqlab-stats` data model, rendered by `irqlab-report`.

#![deny(unsafe_code)]

pub mod interrupts;
pub mod inventory;
pub mod pci;

use std::path::{Path, PathBuf};

/// Errors of host measurements. Each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        #[source]
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
}

impl HostError {
    pub(crate) fn io(path: &Path, cause: std::io::Error) -> Self {
        HostError::Io {
            path: path.to_path_buf(),
            cause,
        }
    }
}
