//! Measurements on the Linux host irqlab runs on.
//!
//! - [`inventory`]: the host's interrupts from `/proc/interrupts`, `/proc/irq`,
//!   `/sys/kernel/irq` and `/sys/bus/pci` (`irqlab host`).
//! - [`tracefs`] and [`ringbuf`]: the kernel's trace events in a private tracing instance,
//!   read from the binary per-CPU ring buffers; [`irqs`]: per-IRQ handler time and softirq
//!   delay from them (`irqlab measure irqs`).
//! - [`timer`]: timer wake-up latency the way cyclictest measures it (`irqlab measure timer`).
//! - [`state`]: what irqlab sets up on the host, recorded before it is set up; [`recovery`]: the
//!   next start undoes from that record what a crashed irqlab left (`irqlab host --cleanup`).
//! - [`affinity`]: the CPUs, caches and NICs `irqlab plan affinity --host` plans for, and the
//!   IRQ masks it applies (recorded first, kept after exit, put back by `--restore`); [`plan`]:
//!   the plan, by seed 001's rules.
//!
//! Every reader takes a root directory, so tests run on captured fixture trees and on the live
//! system alike. Results are the `irqlab-stats` data model, rendered by `irqlab-report`.

#![deny(unsafe_code)]

pub mod affinity;
pub mod cpu_list;
pub mod host_info;
pub mod interrupts;
pub mod inventory;
pub mod irqs;
pub mod load;
pub mod pci;
pub mod plan;
pub mod readers;
pub mod recovery;
pub mod ringbuf;
pub mod signals;
pub mod state;
mod sys;
pub mod timer;
pub mod timer_report;
pub mod timer_trace;
pub mod tracefs;

use std::path::{Path, PathBuf};

/// Whether this process runs as root (its effective UID is 0), which writing `/proc` and tracefs
/// takes: commands check it first, to say so before anything is read or set.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

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
    /// irqlab cannot keep its record of host changes, so it makes none.
    #[error(
        "cannot keep irqlab's record of host changes in {path}: {cause}; fix that directory, or \
         point {env} at a directory only this user can write to",
        env = state::STATE_DIR_ENV
    )]
    StateDir { path: PathBuf, cause: String },
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
