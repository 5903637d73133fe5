//! The host's interrupt inventory (`irqlab host`): one row per interrupt line or per-CPU
//! interrupt class, what delivers it, who handles it, how often it fires and where, plus the
//! findings drawn from them. Pure data: the `host` crate fills it in, the renderers read it.

#![allow(missing_docs)] // field names carry units and meaning; the structs are documented

use serde::{Deserialize, Serialize};

/// How an interrupt reaches the CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// The 8259A pair (`XT-PIC`).
    XtPic,
    /// A pin of an IO-APIC (legacy INTx or ISA line).
    IoApic,
    /// PCI MSI (or an MSI the kernel does not tell apart from MSI-X).
    Msi,
    /// PCI MSI-X.
    MsiX,
    /// A non-PCI message-signalled source: HPET or DMAR MSI, platform MSI.
    PlatformMsi,
    /// Raised inside the CPU for that CPU alone: local timer, IPIs, NMI (the named rows).
    PerCpu,
    /// An ARM GIC line (SPI/PPI) or another controller irqlab does not classify.
    Other,
}

impl Delivery {
    /// The name shown in tables.
    pub fn label(self) -> &'static str {
        match self {
            Delivery::XtPic => "XT-PIC",
            Delivery::IoApic => "IO-APIC",
            Delivery::Msi => "MSI",
            Delivery::MsiX => "MSI-X",
            Delivery::PlatformMsi => "platform MSI",
            Delivery::PerCpu => "per-CPU",
            Delivery::Other => "other",
        }
    }
}

/// Edge or level triggered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Edge,
    Level,
}

/// A PCI function that raises an interrupt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciFunction {
    /// `0000:00:1f.2`.
    pub address: String,
    /// The bound driver, if any.
    pub driver: Option<String>,
    /// The function has an MSI capability in its configuration space.
    pub msi_capable: bool,
    /// The function has an MSI-X capability; its table size (vectors).
    pub msix_table_size: Option<u16>,
    /// The legacy pin it would use (`INTA`..`INTD`), if any.
    pub intx_pin: Option<String>,
}

/// One row of the inventory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IrqEntry {
    /// The IRQ number, or the name of a per-CPU class (`LOC`, `NMI`, `RES`, ...).
    pub irq: String,
    pub delivery: Delivery,
    /// Interrupt remapping (`IR-` prefix) is in force for this line.
    pub remapped: bool,
    pub trigger: Option<Trigger>,
    /// The chip as the kernel names it (`IO-APIC`, `PCI-MSIX-0000:00:02.0`, `XT-PIC`).
    pub chip: Option<String>,
    /// The chip's own number for the line (IO-APIC pin, MSI hwirq), when the kernel shows it.
    pub hwirq: Option<String>,
    /// The flow handler (`edge`, `fasteoi`, `level`).
    pub flow: Option<String>,
    /// Handler names on the line, in registration order; more than one means a shared line.
    pub actions: Vec<String>,
    /// For per-CPU rows, the kernel's description (`Local timer interrupts`).
    pub description: Option<String>,
    /// The PCI function(s) behind the line.
    pub devices: Vec<PciFunction>,
    /// Count per CPU column of `/proc/interrupts` since boot (or since the first snapshot).
    pub counts: Vec<u64>,
    /// Rate per CPU over the measured interval, in interrupts per second (absent for a single
    /// snapshot).
    pub rate_per_s: Option<Vec<f64>>,
    /// `smp_affinity_list` and `effective_affinity_list` (`0-3`, `2`).
    pub affinity: Option<String>,
    pub effective_affinity: Option<String>,
    /// NUMA node of the line (`/proc/irq/N/node`).
    pub node: Option<i32>,
}

/// How much a finding matters.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
}

/// Something in the inventory a latency-minded engineer should know, with what to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Machine name: `legacy-intx-on-msi-capable`, `shared-line`, `load-on-one-cpu`,
    /// `irqbalance-running`.
    pub kind: String,
    pub severity: Severity,
    pub message: String,
    /// IRQs the finding is about.
    pub irqs: Vec<String>,
}

/// The host's interrupts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inventory {
    /// `uname -r`-style kernel release, if readable.
    pub kernel: Option<String>,
    /// The CPU numbers of the `/proc/interrupts` columns, in order.
    pub cpus: Vec<u32>,
    /// Seconds between the two snapshots rates come from; absent for one snapshot.
    pub interval_s: Option<f64>,
    pub irqs: Vec<IrqEntry>,
    pub findings: Vec<Finding>,
}
