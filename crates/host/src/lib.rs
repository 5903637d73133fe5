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
mod error;
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

pub use error::HostError;
pub use sys::retain_freed_memory;

/// Whether this process runs as root (its effective UID is 0), which writing `/proc` and tracefs
/// takes: commands check it first, to say so before anything is read or set.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}
