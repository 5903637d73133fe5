//! What `irqlab plan affinity --host` knows of a host (its CPUs, caches, NICs and their IRQs'
//! masks) and what `--apply` and `--restore` did. Pure data, as [`crate::inventory`] is: the
//! `host` crate reads and writes `/proc` and `/sys` to fill it in (`irqlab_host::affinity`, whose
//! module docs say how), and the renderers read it.

#![allow(missing_docs)] // field names carry their meaning; the structs are documented

use crate::cpus::CpuList;
use serde::Serialize;
use std::path::PathBuf;

/// One cache of a CPU (`cpuN/cache/indexM/`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cache {
    /// 1, 2, 3.
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// As sysfs prints it (`32768K`).
    pub size: String,
    /// The CPUs that share it, itself included (one allocation for every CPU that names the
    /// same list).
    pub shared_cpus: CpuList,
}

impl Cache {
    /// `L1d`, `L1i`, `L2`, `L3`.
    pub fn label(&self) -> String {
        match self.kind.as_str() {
            "Data" => format!("L{}d", self.level),
            "Instruction" => format!("L{}i", self.level),
            _ => format!("L{}", self.level),
        }
    }
}

/// An online CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostCpu {
    pub cpu: u32,
    /// `physical_package_id`: the socket of seed 001's rules 1 and 3 (0 where the firmware says
    /// -1).
    pub socket: u32,
    pub core_id: u32,
    /// The CPUs of its core: itself and its SMT siblings.
    pub core_cpus: CpuList,
    pub caches: Vec<Cache>,
}

impl HostCpu {
    /// Its unified cache of `level`, if it has one.
    pub fn unified(&self, level: u32) -> Option<&Cache> {
        self.caches
            .iter()
            .find(|c| c.level == level && c.kind == "Unified")
    }

    /// Its last-level cache: the unified cache of the highest level.
    pub fn last_level_cache(&self) -> Option<&Cache> {
        self.caches
            .iter()
            .filter(|c| c.kind == "Unified")
            .max_by_key(|c| c.level)
    }
}

/// What an IRQ of a NIC serves, from its name (`irqlab_host::affinity::queue_role`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", content = "queue", rename_all = "snake_case")]
pub enum QueueRole {
    /// Receive queue N (`eth0-rx-0`, `virtio2-input.0`).
    Rx(u32),
    /// Transmit queue N (`eth0-tx-0`, `virtio2-output.0`).
    Tx(u32),
    /// Queue pair N, both directions (`eth0-TxRx-0`, `mlx5_comp0@...`), or the one IRQ of a
    /// single-vector NIC.
    RxTx(u32),
    /// Configuration, link and other events (`virtio2-config`, ixgbe's `eth0`).
    Other,
}

impl QueueRole {
    pub fn queue(self) -> Option<u32> {
        match self {
            QueueRole::Rx(q) | QueueRole::Tx(q) | QueueRole::RxTx(q) => Some(q),
            QueueRole::Other => None,
        }
    }

    /// `rx 0`, `tx 0`, `rx+tx 0`, `-`.
    pub fn label(self) -> String {
        match self {
            QueueRole::Rx(q) => format!("rx {q}"),
            QueueRole::Tx(q) => format!("tx {q}"),
            QueueRole::RxTx(q) => format!("rx+tx {q}"),
            QueueRole::Other => "-".into(),
        }
    }
}

/// An IRQ's masks as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqMask {
    /// `smp_affinity` as the kernel printed it (trimmed); none if it cannot be read.
    pub mask: Option<String>,
    /// The CPUs in it.
    pub cpus: Vec<u32>,
    /// The CPUs the interrupt is delivered to (`effective_affinity_list`, 4.15+): on x86 one
    /// CPU of the mask.
    pub effective_cpus: Option<Vec<u32>>,
    /// Whether `smp_affinity` is writable: from 6.12 the kernel makes it read-only for IRQs it
    /// manages (`irqlab_host::affinity`'s module docs).
    pub writable: bool,
}

/// One IRQ of a NIC.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NicIrq {
    pub irq: u32,
    /// Its `/proc/interrupts` action(s); empty if it has no handler now.
    pub name: String,
    pub role: QueueRole,
    pub affinity: IrqMask,
}

/// Where a NIC's IRQs were found.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqSource {
    /// The PCI function's `msi_irqs/`.
    MsiIrqs,
    /// The legacy `irq` file (INTx).
    LegacyIrq,
    /// `/proc/interrupts` rows named after the interface or its virtio device.
    ProcInterrupts,
}

/// A network interface with a device behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Nic {
    /// `eth0`.
    pub name: String,
    /// The device that owns its IRQs: a PCI address (`0000:00:03.0`) or a platform device.
    pub device: String,
    /// Its virtio device (`virtio2`), for virtio-net.
    pub virtio: Option<String>,
    /// The interface's driver (`virtio_net`, `ixgbe`).
    pub driver: Option<String>,
    pub source: IrqSource,
    pub irqs: Vec<NicIrq>,
}

/// What `plan affinity --host` needs to know about the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostAffinity {
    /// Where `/proc` and `/sys` were read.
    pub root: PathBuf,
    /// The online CPUs, in number order.
    pub cpus: Vec<HostCpu>,
    /// CPUs isolated from the scheduler (`isolcpus=`, `sys/devices/system/cpu/isolated`) and
    /// without the tick (`nohz_full=`): kept free of device interrupts by whoever set them so.
    pub isolated: Vec<u32>,
    pub nohz_full: Vec<u32>,
    pub nics: Vec<Nic>,
    /// irqbalance's PID, if it runs: it moves IRQs every 10 s and would undo a plan.
    pub irqbalance_pid: Option<u32>,
}

/// Why an IRQ's mask was not set (or not put back).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// User space may not move it (`irqlab_host::affinity`'s module docs): `how` is `EIO`, `EPERM`, or `read-only
    /// smp_affinity`.
    Managed { how: String },
    /// EINVAL: the mask has no online CPU.
    NoOnlineCpu,
    /// The IRQ no longer exists (its driver freed it).
    Gone,
    /// Its number is another handler's now (`now`, from `/proc/interrupts`) than the one
    /// planned for: the driver freed it and another device took it.
    Reassigned { now: String },
    /// The kernel took the write, but reading back gives another mask.
    NotAsWritten { read_back: String },
    /// Any other error, as the system put it.
    Other { error: String },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Managed { how } => write!(
                f,
                "managed by the kernel ({how}): the driver spreads these queues itself"
            ),
            Refusal::NoOnlineCpu => write!(f, "the mask has no online CPU (EINVAL)"),
            Refusal::Gone => write!(
                f,
                "the IRQ is gone (its driver freed it: is the interface down?)"
            ),
            Refusal::Reassigned { now } => {
                write!(f, "now '{now}', another device's: left as it is")
            }
            Refusal::NotAsWritten { read_back } => {
                write!(f, "the kernel kept another mask ({read_back} read back)")
            }
            Refusal::Other { error } => f.write_str(error),
        }
    }
}

/// An IRQ whose mask was set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqSet {
    pub irq: u32,
    pub name: String,
    pub old_mask: String,
    /// The mask as read back.
    pub mask: String,
    /// Read after the write: on x86 one CPU of the mask; the old CPU until the IRQ next fires
    /// where the move waits for it (`irq_move_masked_irq`, `kernel/irq/migration.c`).
    pub effective_cpus: Option<Vec<u32>>,
}

/// An IRQ whose mask was not set, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqNotSet {
    pub irq: u32,
    pub name: String,
    pub reason: Refusal,
}

/// How an apply ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApplyEnd {
    /// The applied record is at `record`; the masks stay after irqlab exits.
    Committed { record: PathBuf },
    /// No mask could be set: nothing changed, nothing recorded.
    NothingSet,
    /// A stop signal came before the commit; these IRQs were put back, last first.
    Stopped { rolled_back: Vec<u32> },
}

/// What `irqlab_host::affinity::apply` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Applied {
    pub set: Vec<IrqSet>,
    pub not_set: Vec<IrqNotSet>,
    pub end: ApplyEnd,
    /// A note on an applied record of an earlier boot, discarded.
    pub discarded: Option<String>,
}

/// One IRQ of a restored plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqRestored {
    pub irq: u32,
    pub name: String,
    /// The mask the plan set.
    pub applied_mask: String,
    /// The mask found before restoring (none if the IRQ is gone).
    pub found_mask: Option<String>,
    /// The old mask as read back after writing it (none if the IRQ is gone or was left).
    pub restored_mask: Option<String>,
    /// Why it was left as it is, or what was unusual.
    pub note: Option<String>,
}

/// What `irqlab_host::affinity::restore` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Restored {
    /// No applied record: nothing to put back.
    Nothing,
    /// The record was of an earlier boot, and is discarded (`note` says so).
    EarlierBoot { note: String },
    /// Every IRQ of the record, last first; the record is removed.
    Done {
        record: PathBuf,
        root: PathBuf,
        irqs: Vec<IrqRestored>,
    },
}
