//! What interrupts did on a host over a measured interval (`irqlab measure irqs`): per IRQ and
//! CPU the handler time, per softirq vector and CPU the delay from raise to run and the run
//! time, from the kernel's trace events. Pure data; histograms as [`Summary`]s.

#![allow(missing_docs)] // field names carry units and meaning; the structs are documented

use crate::Summary;
use serde::{Deserialize, Serialize};

/// One hard IRQ line (or the local timer, `LOC`) on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IrqActivity {
    /// IRQ number, or `LOC` for the local APIC timer.
    pub irq: String,
    /// The handler names the kernel reported (`irq_handler_entry`'s `name`).
    pub name: String,
    pub cpu: u32,
    pub count: u64,
    pub rate_per_s: f64,
    /// Share of the CPU's time spent in this line's handlers, in percent.
    pub cpu_percent: f64,
    /// Handler time, entry to exit.
    pub handler: Summary,
}

/// One softirq vector on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftirqActivity {
    /// 0..=9 (`include/linux/interrupt.h`).
    pub vector: u32,
    /// `HI`, `TIMER`, `NET_TX`, `NET_RX`, `BLOCK`, `IRQ_POLL`, `TASKLET`, `SCHED`, `HRTIMER`,
    /// `RCU`.
    pub name: String,
    pub cpu: u32,
    pub count: u64,
    pub rate_per_s: f64,
    pub cpu_percent: f64,
    /// From the first `softirq_raise` to the `softirq_entry` that serves it.
    pub raise_to_entry: Summary,
    /// `softirq_entry` to `softirq_exit`.
    pub runtime: Summary,
}

/// One tasklet function on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskletActivity {
    /// The function's symbol, or its address when `/proc/kallsyms` does not name it.
    pub function: String,
    pub cpu: u32,
    pub count: u64,
    pub runtime: Summary,
}

/// A whole measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IrqActivityReport {
    pub kernel: Option<String>,
    /// The time the trace recorded, which rates and CPU shares are over.
    pub duration_s: f64,
    /// The signal that ended the measurement before its `--duration`, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    pub cpus: Vec<u32>,
    pub irqs: Vec<IrqActivity>,
    pub softirqs: Vec<SoftirqActivity>,
    pub tasklets: Vec<TaskletActivity>,
    /// Trace events read and used.
    pub events: u64,
    /// Events the ring buffer lost, per CPU of `cpus` (overrun and dropped); non-zero means the
    /// counts above are low and the buffer should be larger (`--buffer-kb`).
    pub lost_events: Vec<u64>,
    /// Exits without a matching entry (the entry was before the start or was lost).
    pub unmatched: u64,
}
