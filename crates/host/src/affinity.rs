//! Static IRQ affinity on the host (`irqlab plan affinity --host`): what the planner needs to
//! know (CPUs with their sockets, cores and caches; NICs with their IRQs and current masks), and
//! the writes, recorded before they are made and undoable. The CLI plans (seed 001's rules);
//! this module only reads and applies, so `irqlab-host` does not depend on the simulator.
//!
//! # Reading
//!
//! Every path is under a root (`/` on the live system), so tests run on fake trees:
//! - CPUs: `sys/devices/system/cpu/online`, and per online CPU `cpuN/topology/`
//!   (`physical_package_id` is the socket of rules 1 and 3; `core_id`; `core_cpus_list`, or
//!   `thread_siblings_list` before Linux 5.7) and `cpuN/cache/index*/` (`level`, `type`, `size`,
//!   `shared_cpu_list`). `isolated` and `nohz_full` name CPUs the planner leaves out.
//! - NICs: `sys/class/net/*` with a `device` link (lo, bridges, ifb, veth have none). Their IRQs
//!   are the `msi_irqs/` entries of the device's PCI function: the device itself, or, for
//!   virtio-net, the parent of the `virtioN` device the link points to (virtio-pci owns the
//!   vectors, `vp_find_vqs_msix` in `drivers/virtio/virtio_pci_common.c`). Without MSI, the
//!   legacy `irq` line, while a handler of the NIC's (named after the interface, its virtio
//!   device or its driver) is on it: a driver that enables MSI only when the interface comes up
//!   leaves `irq` naming an INTx line that may be other devices'. Without either (virtio-mmio),
//!   the `/proc/interrupts` rows named after the interface or its virtio device.
//! - Each IRQ's name is its `/proc/interrupts` action (`virtio2-input.0`, `eth0-TxRx-3`,
//!   `i40e-eth0-TxRx-0`, `mlx5_comp2@pci:...`), which tells queue IRQs from the rest
//!   ([`queue_role`]); its masks are `proc/irq/N/smp_affinity` (hexadecimal, 32-bit groups,
//!   [`parse_mask`]) and `effective_affinity_list` where the kernel has it (4.15+).
//!
//! # Applying, and the order of its steps
//!
//! [`apply`] sets a list of masks so that a crash at any instant leaves the host either as it
//! was, or with the plan applied and its old masks saved for [`restore`]. `plan affinity --host
//! --apply` takes the state directory's lock ([`LockedDir`]) before anything else and holds it
//! to the end: it cleans up after dead irqlab processes first (a crashed apply's masks put
//! back), then reads the masks and plans, then calls [`apply_locked`], then reads every planned
//! mask back ([`masks_differing`]). Planning from masks read before the cleanup would take a
//! crashed apply's mask for "already as planned", and the cleanup would then put the old one
//! back under the new plan. The record names the tree canonically; a tree's records are kept in
//! the tree ([`StateDir::for_root`]), and each mask is written without following a symbolic link
//! anywhere in its path ([`ProcFiles`]).
//!
//! 1. Under an exclusive flock(2) of the state directory (no other irqlab applies, restores or
//!    recovers meanwhile), refuse if the applied record (`DIR/affinity-applied.json`) of this
//!    boot exists: restore first. One of an earlier boot is discarded: the kernel set every
//!    IRQ's affinity afresh at boot, so its old masks describe nothing that exists. The lock is
//!    on the directory itself, so the directory is not removed while it is held (emptied by a
//!    refused IRQ's dropped record, it would be created anew, unlocked, for the next one).
//! 2. For each IRQ: skip it if `/proc/interrupts` names another handler on its number now than
//!    the plan read (its driver freed it since, and another device took it); read its mask;
//!    record [`Change::IrqAffinity`] with the old mask in this process's state file (see
//!    [`crate::state`]: written whole, then renamed); write the new mask; read it back. A
//!    crash here leaves a record listing every IRQ written (and perhaps one recorded but not
//!    yet written, which then still has its old mask), and the next start's
//!    [`crate::recovery::clean_up_after_dead`] writes them all back: a partial apply is rolled
//!    back. An error, or a stop signal between two writes, rolls the written IRQs back in this
//!    process, last first.
//! 3. Commit: write the applied record (temporary file, then rename(2)): its owner (PID and start
//!    time), the boot ID, and per IRQ its name, old and new mask. The rename is the commit point.
//! 4. Drop the per-process records. A crash between 3 and 4 leaves both; the recovery sees that
//!    the applied record is the dead process's own and keeps those IRQs as applied
//!    (`undo_leftover`): it neither undoes a committed plan nor loses its old masks.
//!
//! After step 4 the plan outlives irqlab, which is the point of applying it. [`restore`] writes
//! the old masks back under the same lock, last first, reads each back, and removes the record
//! only once every mask is back: a crash mid-restore leaves the record, and restoring again is
//! harmless. While it writes, its own state file records [`Change::AffinityRestore`], so that
//! the next start (`host --cleanup`, a measurement, an apply) finishes a restore that was killed
//! halfway rather than finding nothing to clean up. `/run/irqlab` (root's state directory) is a tmpfs emptied at boot, as IRQ
//! affinities are reset at boot; a record in a directory that outlived a reboot is recognised by
//! its boot ID and discarded, never "restored".
//!
//! # What the kernel refuses
//!
//! `write_irq_affinity` (`kernel/irq/proc.c`) refuses an IRQ that `irq_can_set_affinity_usr`
//! (`kernel/irq/manage.c`) says user space may not move: a managed IRQ (the driver had the
//! kernel spread its queue vectors over the CPUs, `pci_alloc_irq_vectors_affinity`), a per-CPU
//! one, or one whose chip cannot move it. Up to Linux 6.11 the write fails with EIO; from 6.12
//! (commits c7718e5c76d4 and eb29369fa543) with EPERM, and the file is created read-only for
//! such IRQs. Root can still open a read-only file, so a read-only `smp_affinity` counts as the
//! refusal itself, without a write. A mask without an online CPU is refused with EINVAL
//! (`irq_select_affinity_usr`). Each refusal is reported per IRQ ([`Refusal`]); the others are
//! still set.

use crate::cpu_list::{CpuList, CpuLists};
use crate::error::HostError;
use crate::interrupts::{Row, Table};
use crate::pci::read_trimmed;
use crate::state::{self, Change, LockedDir, ProcessId, StateDir};
use crate::timer::parse_cpu_list;
pub use irqlab_stats::cpus::{mask_words, parse_mask};
// What `plan affinity --host` reads of the host and what `--apply` and `--restore` did are the
// result model's (`irqlab_stats::affinity`), which the renderers read; the readers and writers
// that fill them in are here.
pub use irqlab_stats::affinity::{
    Applied, ApplyEnd, Cache, HostAffinity, HostCpu, IrqMask, IrqNotSet, IrqRestored, IrqSet,
    IrqSource, Nic, NicIrq, QueueRole, Refusal, Restored,
};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The applied record's file name in the state directory.
pub const APPLIED_FILE: &str = "affinity-applied.json";

/// Version of the applied record's layout; a later one is left to the irqlab that wrote it.
const APPLIED_FORMAT: u32 = 1;

/// What an IRQ's action name says it serves. Names follow each driver's `request_irq` call;
/// those recognised: `-rx-N`, `-tx-N`, `-TxRx-N`, `-rxtx-N`, `-Tx-Rx-N` (Intel, Broadcom,
/// vmxnet3, ENA), `-input.N` and `-output.N` (virtio-net), `-virtqueues` (virtio's one shared
/// vector), `_compN` (mlx5), and `IFACE-N` (sfc, tg3). Anything else is [`QueueRole::Other`].
pub fn queue_role(name: &str, nic: &str) -> QueueRole {
    // A shared line lists its actions joined by ", "; the first is as good as any.
    let name = name.split(", ").next().unwrap_or_default();
    // mlx5_comp3@pci:0000:3b:00.0: the device after '@' is not part of the role.
    let lower = name
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if lower.ends_with("virtqueues") {
        return QueueRole::RxTx(0);
    }
    let digits = lower.len() - lower.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let Ok(queue) = lower[lower.len() - digits..].parse::<u32>() else {
        return QueueRole::Other;
    };
    let stem = lower[..lower.len() - digits].trim_end_matches(['-', '.', '_']);
    if stem == nic.to_ascii_lowercase() {
        return QueueRole::RxTx(queue);
    }
    // Both directions first: "txrx" ends with "rx".
    if ["txrx", "rxtx", "tx-rx", "rx-tx", "comp"]
        .iter()
        .any(|s| stem.ends_with(s))
    {
        QueueRole::RxTx(queue)
    } else if stem.ends_with("rx") || stem.ends_with("input") {
        QueueRole::Rx(queue)
    } else if stem.ends_with("tx") || stem.ends_with("output") {
        QueueRole::Tx(queue)
    } else {
        QueueRole::Other
    }
}

/// Read the host under `root` (see the module docs).
pub fn read(root: &Path) -> Result<HostAffinity, HostError> {
    let cpu_dir = root.join("sys/devices/system/cpu");
    let online_path = cpu_dir.join("online");
    let text = std::fs::read_to_string(&online_path).map_err(|e| HostError::io(&online_path, e))?;
    let online = parse_cpu_list(&text).map_err(|message| HostError::Parse {
        path: online_path.clone(),
        line: 1,
        message,
    })?;
    // `nohz_full` prints "(null)" when there are none on some kernels: not a list, so empty.
    let list = |name: &str| {
        read_trimmed(&cpu_dir.join(name))
            .and_then(|t| parse_cpu_list(&t).ok())
            .unwrap_or_default()
    };
    let table = Table::read(&root.join("proc/interrupts"))?;
    // Every CPU of a socket names the same L3 (`0-8191`): parsed once, shared by all.
    let mut lists = CpuLists::default();
    Ok(HostAffinity {
        root: root.to_path_buf(),
        cpus: online
            .iter()
            .map(|&c| read_cpu(&cpu_dir, c, &mut lists))
            .collect(),
        isolated: list("isolated"),
        nohz_full: list("nohz_full"),
        nics: read_nics(root, &table)?,
        irqbalance_pid: crate::inventory::find_process(root, "irqbalance"),
    })
}

fn read_cpu(cpu_dir: &Path, cpu: u32, lists: &mut CpuLists) -> HostCpu {
    let dir = cpu_dir.join(format!("cpu{cpu}"));
    let topology = dir.join("topology");
    let number = |f: &str| {
        read_trimmed(&topology.join(f))
            .and_then(|s| s.parse::<i64>().ok())
            .and_then(|n| u32::try_from(n).ok())
    };
    let core_cpus = ["core_cpus_list", "thread_siblings_list"]
        .iter()
        .find_map(|f| read_trimmed(&topology.join(f)).and_then(|t| lists.parse(&t).ok()))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| CpuList::new([cpu]));
    let mut caches = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir.join("cache")) {
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("index"))
            })
            .collect();
        dirs.sort();
        for d in dirs {
            let field = |f: &str| read_trimmed(&d.join(f));
            let (Some(level), Some(kind), Some(shared)) = (
                field("level").and_then(|l| l.parse().ok()),
                field("type"),
                field("shared_cpu_list").and_then(|l| lists.parse(&l).ok()),
            ) else {
                continue;
            };
            caches.push(Cache {
                level,
                kind,
                size: field("size").unwrap_or_default(),
                shared_cpus: shared,
            });
        }
    }
    HostCpu {
        cpu,
        socket: number("physical_package_id").unwrap_or(0),
        core_id: number("core_id").unwrap_or(cpu),
        core_cpus,
        caches,
    }
}

/// `eth2` before `eth10`.
fn natural(name: &str) -> (&str, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, n) = name.split_at(name.len() - digits);
    (stem, n.parse().unwrap_or(0))
}

fn read_nics(root: &Path, table: &Table) -> Result<Vec<Nic>, HostError> {
    let class = root.join("sys/class/net");
    let entries = match std::fs::read_dir(&class) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HostError::io(&class, e)),
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by(|a, b| natural(a).cmp(&natural(b)));
    // The rows by IRQ number, as `Table::irq` finds them (the first of a number), without a
    // scan of the table per IRQ: a host of many queues has thousands of each.
    let mut by_id: std::collections::HashMap<&str, &Row> = std::collections::HashMap::new();
    for r in &table.rows {
        by_id.entry(r.id.as_str()).or_insert(r);
    }
    let row = |irq: u32| by_id.get(irq.to_string().as_str()).copied();
    let mut nics = Vec::new();
    for name in names {
        // Virtual interfaces (lo, bridges, ifb, veth, tun) have no device, and no IRQs.
        let Ok(dev) = std::fs::canonicalize(class.join(&name).join("device")) else {
            continue;
        };
        let dev_name = file_name(&dev);
        let driver = std::fs::read_link(dev.join("driver"))
            .ok()
            .map(|l| file_name(&l));
        let virtio = dev_name.starts_with("virtio").then(|| dev_name.clone());
        // virtio-net's device is the virtio device; its parent owns the vectors.
        let mut owners = vec![dev.clone()];
        if virtio.is_some() {
            owners.extend(dev.parent().map(Path::to_path_buf));
        }
        // A handler of this NIC's: named after the interface or its virtio device (as drivers
        // name their vectors), or after its driver (an INTx handler some drivers name so).
        let named = |a: &String| {
            [Some(&name), virtio.as_ref()]
                .into_iter()
                .flatten()
                .any(|n| {
                    a == n || a.starts_with(&format!("{n}-")) || a.starts_with(&format!("{n}@"))
                })
                || driver.as_ref().is_some_and(|d| a == d)
        };
        let (source, owner, numbers) = owners
            .iter()
            .find_map(|o| {
                let msi = msi_irqs(o);
                (!msi.is_empty()).then(|| (IrqSource::MsiIrqs, o.clone(), msi))
            })
            .or_else(|| {
                // The legacy line is the NIC's only while its handler is on it: a driver that
                // enables MSI when the interface comes up (tg3, bnx2) leaves `irq` naming its
                // INTx line while it is down, a line other devices (USB, SATA) may be using.
                owners.iter().find_map(|o| {
                    read_trimmed(&o.join("irq"))
                        .and_then(|s| s.parse::<u32>().ok())
                        .filter(|&n| n != 0)
                        .filter(|&n| row(n).is_some_and(|r| r.actions.iter().any(named)))
                        .map(|n| (IrqSource::LegacyIrq, o.clone(), vec![n]))
                })
            })
            .unwrap_or_else(|| {
                let numbers = table
                    .rows
                    .iter()
                    .filter(|r| r.actions.iter().any(named))
                    .filter_map(|r| r.id.parse().ok())
                    .collect();
                (
                    IrqSource::ProcInterrupts,
                    owners[owners.len() - 1].clone(),
                    numbers,
                )
            });
        let mut irqs: Vec<NicIrq> = numbers
            .into_iter()
            .map(|irq| {
                let action = row(irq).map(|r| r.actions.join(", ")).unwrap_or_default();
                NicIrq {
                    irq,
                    role: queue_role(&action, &name),
                    name: action,
                    affinity: read_mask(root, irq),
                }
            })
            .collect();
        // A NIC with one IRQ and no queue names (e1000 on INTx, a single MSI, virtio-mmio's one
        // line) takes all its queues' interrupts on that IRQ: seed 001's one IRQ per NIC.
        if irqs.len() == 1 && irqs[0].role == QueueRole::Other {
            irqs[0].role = QueueRole::RxTx(0);
        }
        nics.push(Nic {
            name,
            device: file_name(&owner),
            virtio,
            driver,
            source,
            irqs,
        });
    }
    Ok(nics)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The IRQ numbers in a PCI function's `msi_irqs/` (entries are files on 5.x+, directories
/// with a `mode` file on 3.x-4.x; the name is the IRQ either way).
fn msi_irqs(dev: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(dev.join("msi_irqs"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// `proc/irq/N/smp_affinity` under `root`.
pub fn smp_affinity_file(root: &Path, irq: u32) -> PathBuf {
    root.join("proc/irq")
        .join(irq.to_string())
        .join("smp_affinity")
}

/// An IRQ's masks under `root`.
pub fn read_mask(root: &Path, irq: u32) -> IrqMask {
    let dir = root.join("proc/irq").join(irq.to_string());
    let file = dir.join("smp_affinity");
    let mask = read_trimmed(&file);
    let cpus = mask
        .as_deref()
        .and_then(|m| parse_mask(m).ok())
        .or_else(|| {
            read_trimmed(&dir.join("smp_affinity_list")).and_then(|l| parse_cpu_list(&l).ok())
        })
        .unwrap_or_default();
    let effective_cpus = read_trimmed(&dir.join("effective_affinity_list"))
        .and_then(|l| parse_cpu_list(&l).ok())
        .or_else(|| {
            read_trimmed(&dir.join("effective_affinity")).and_then(|m| parse_mask(&m).ok())
        });
    IrqMask {
        mask,
        cpus,
        effective_cpus,
        writable: is_writable(&file),
    }
}

fn is_writable(file: &Path) -> bool {
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o222 != 0)
}

/// Whether two masks name the same CPUs (as text if either does not parse).
fn same_cpus(a: &str, b: &str) -> bool {
    match (parse_mask(a), parse_mask(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.trim() == b.trim(),
    }
}

/// The kernel's answer to a write of `smp_affinity` (module docs). A function, not a method of
/// [`Refusal`]: the type is the result model's (`irqlab_stats::affinity`), the errno is the host's.
fn refusal_of(e: &std::io::Error) -> Refusal {
    match e.raw_os_error() {
        Some(libc::EIO) => Refusal::Managed { how: "EIO".into() },
        Some(libc::EPERM) => Refusal::Managed {
            how: "EPERM".into(),
        },
        Some(libc::EINVAL) => Refusal::NoOnlineCpu,
        Some(libc::ENOENT) => Refusal::Gone,
        // x86's vector allocator (`irq_matrix_alloc`) found no free vector on that CPU.
        Some(libc::ENOSPC) => Refusal::Other {
            error: "no free interrupt vector on that CPU (ENOSPC)".into(),
        },
        _ => Refusal::Other {
            error: e.to_string(),
        },
    }
}

/// A step of [`apply`], reported to [`MaskWriter::reached`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ApplyStep {
    /// The IRQ's old mask is in this process's state file; its new mask is not written yet.
    Recorded { irq: u32 },
    /// Its new mask is written, not yet read back.
    Written { irq: u32 },
    /// The applied record is in place; the per-process records are not dropped yet.
    Committed,
}

/// How masks reach the kernel: [`ProcFiles`] writes the files. Tests substitute a writer that
/// fails for chosen IRQs as the kernel does, or stops the process at a chosen step (a crash
/// mid-apply), as hyperfine's tests substitute its executor.
pub trait MaskWriter {
    /// Write `mask` to `file` (`proc/irq/N/smp_affinity`), as `echo MASK > FILE` does.
    fn write(&mut self, file: &Path, mask: &str) -> std::io::Result<()>;
    /// Called after each step of [`apply`].
    fn reached(&mut self, _step: ApplyStep) {}
}

/// The real writer.
pub struct ProcFiles;

impl MaskWriter for ProcFiles {
    fn write(&mut self, file: &Path, mask: &str) -> std::io::Result<()> {
        use std::io::Write;
        // Not created if missing: a missing file is an IRQ that is gone. One write(2), which
        // the kernel parses whole (`write_irq_affinity`).
        let mut f = open_no_symlinks(file)?;
        f.write_all(format!("{mask}\n").as_bytes())
    }
}

/// Open `file` (absolute) to write, refusing a symbolic link anywhere in its path: a record or
/// a plan for `--root TREE` names files inside a tree that whoever wrote it could have made
/// links to the host's `/proc/irq` or to any file, and irqlab, as root, would write through
/// them. `/proc/irq/N/smp_affinity` itself has none. openat2(2) with `RESOLVE_NO_SYMLINKS`
/// (Linux 5.6+) checks every component in the kernel; before 5.6, each component is looked
/// at with lstat(2) and the last is opened with `O_NOFOLLOW`.
fn open_no_symlinks(file: &Path) -> std::io::Result<std::fs::File> {
    use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
    let how = OpenHow::new()
        .flags(OFlag::O_WRONLY | OFlag::O_TRUNC | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    let refused = |what: &Path| {
        std::io::Error::other(format!(
            "{} is a symbolic link: irqlab does not write through links",
            what.display()
        ))
    };
    match openat2(libc::AT_FDCWD, file, how) {
        Ok(fd) => Ok(crate::sys::owned_file(fd)),
        Err(nix::errno::Errno::ELOOP) => {
            let link = file
                .ancestors()
                .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink()));
            Err(refused(link.unwrap_or(file)))
        }
        // No openat2 (before 5.6, or a seccomp filter that does not know it).
        Err(nix::errno::Errno::ENOSYS) => {
            use std::os::unix::fs::OpenOptionsExt;
            if let Some(link) = file
                .ancestors()
                .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink()))
            {
                return Err(refused(link));
            }
            std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(file)
        }
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// Write `mask` unless the file says the kernel would refuse it, and read it back: the mask as
/// the kernel now prints it.
fn write_and_read_back(w: &mut dyn MaskWriter, file: &Path, mask: &str) -> Result<String, Refusal> {
    match std::fs::metadata(file) {
        Err(e) => return Err(refusal_of(&e)),
        Ok(m) if m.permissions().mode() & 0o222 == 0 => {
            return Err(Refusal::Managed {
                how: "read-only smp_affinity".into(),
            })
        }
        Ok(_) => {}
    }
    w.write(file, mask).map_err(|e| refusal_of(&e))?;
    let back = read_trimmed(file).ok_or(Refusal::Gone)?;
    if same_cpus(&back, mask) {
        Ok(back)
    } else {
        Err(Refusal::NotAsWritten { read_back: back })
    }
}

/// Put `old` back; an IRQ that is gone has nothing to put back.
fn put_back(w: &mut dyn MaskWriter, file: &Path, old: &str) -> Result<Option<String>, Refusal> {
    if read_trimmed(file).is_some_and(|now| same_cpus(&now, old)) {
        return Ok(Some(old.to_string()));
    }
    match write_and_read_back(w, file, old) {
        Ok(back) => Ok(Some(back)),
        Err(Refusal::Gone) => Ok(None),
        Err(e) => Err(e),
    }
}

/// One mask to set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskWrite {
    pub irq: u32,
    /// Its `/proc/interrupts` name, kept with the old mask: [`restore`] leaves an IRQ alone
    /// whose number another device has taken since.
    pub name: String,
    /// The mask to write, in `smp_affinity`'s form.
    pub mask: String,
}

/// The record of an applied plan, `DIR/affinity-applied.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedRecord {
    pub format: u32,
    /// The irqlab that applied it.
    pub owner: ProcessId,
    pub boot_id: String,
    /// Its command line, for messages.
    pub command: String,
    /// When it was committed, seconds since the Unix epoch.
    pub applied_unix_s: u64,
    /// The tree written (`/` but in tests).
    pub root: PathBuf,
    /// In the order set.
    pub irqs: Vec<AppliedIrq>,
}

/// One IRQ of an applied plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedIrq {
    pub irq: u32,
    pub name: String,
    pub old_mask: String,
    pub new_mask: String,
}

impl AppliedRecord {
    /// Written in this boot (a record without a boot ID counts as this boot's).
    pub fn is_this_boot(&self) -> bool {
        self.boot_id.is_empty() || self.boot_id == state::boot_id()
    }

    /// `irqlab PID (IRQs 38, 39)`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "irqlab {} (IRQ{} {})",
            self.owner.pid,
            if self.irqs.len() == 1 { "" } else { "s" },
            self.irqs
                .iter()
                .map(|i| i.irq.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The applied record in `dir`, if there is one (not locked: for messages).
pub fn applied(dir: &StateDir) -> Result<Option<AppliedRecord>, HostError> {
    read_applied_at(dir.path()).map_err(|e| dir.error(e))
}

fn read_applied_at(dir: &Path) -> Result<Option<AppliedRecord>, String> {
    let path = dir.join(APPLIED_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    // The same checks as a state file's: a record read is a record acted on, as root.
    let text = state::read_own_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let record: AppliedRecord =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if record.format > APPLIED_FORMAT {
        return Err(format!(
            "{}: written by a newer irqlab (format {}); restore with that version",
            path.display(),
            record.format
        ));
    }
    Ok(Some(record))
}

/// An IRQ written and not yet committed or rolled back.
struct Held {
    irq: u32,
    name: String,
    old_mask: String,
    new_mask: String,
    file: PathBuf,
    recorded: state::Recorded,
}

/// Set each of `writes` under `root`, recording in `dir` first (module docs: the steps and what
/// a crash at each leaves). A refused IRQ is listed with the kernel's reason and the others are
/// still set. `stop` (a signal) is looked at before each write and before the commit: set, it
/// rolls back what was written. Errors: an applied record of this boot exists, the state
/// directory cannot be written (whatever was written is rolled back first), or a rollback
/// failed ([`HostError::Restore`], with what to do by hand; it stays recorded for the next
/// start).
pub fn apply(
    root: &Path,
    dir: &StateDir,
    writes: &[MaskWrite],
    stop: &AtomicBool,
    w: &mut dyn MaskWriter,
) -> Result<Applied, HostError> {
    apply_locked(root, &LockedDir::acquire(dir)?, writes, stop, w)
}

/// [`apply`] under a lock the caller holds for longer: `plan affinity --host --apply` locks the
/// directory, cleans up after dead irqlab processes, reads the masks and plans, all before this,
/// so that what it plans from is what it writes over.
pub fn apply_locked(
    root: &Path,
    locked: &LockedDir,
    writes: &[MaskWrite],
    stop: &AtomicBool,
    w: &mut dyn MaskWriter,
) -> Result<Applied, HostError> {
    let dir = locked.dir();
    // The record names the tree as it is, whatever directory a later --restore runs in.
    let root = &root.canonicalize().map_err(|e| HostError::io(root, e))?;
    // Known before the first write: an error after it would leave masks set and not committed.
    let owner = ProcessId::current()?;
    // The handlers now: an IRQ freed since it was planned and taken by another device is not
    // the one planned for (as `restore` checks too).
    let table = Table::read(&root.join("proc/interrupts")).ok();
    let mut discarded = None;
    if let Some(rec) = read_applied_at(dir.path()).map_err(|e| dir.error(e))? {
        if rec.is_this_boot() {
            return Err(HostError::Invalid(format!(
                "an applied affinity plan of {} is in force, its old masks saved in {}: put them \
                 back first (irqlab plan affinity --host --restore), then apply",
                rec.describe(),
                dir.path().join(APPLIED_FILE).display()
            )));
        }
        discard(dir)?;
        discarded = Some(stale_note(&rec, dir));
    }
    let mut held: Vec<Held> = Vec::new();
    let mut set = Vec::new();
    let mut not_set = Vec::new();
    for wr in writes {
        if stop.load(Ordering::Relaxed) {
            let rolled_back = roll_back(held, w)?;
            return Ok(Applied {
                set,
                not_set,
                end: ApplyEnd::Stopped { rolled_back },
                discarded,
            });
        }
        let file = smp_affinity_file(root, wr.irq);
        let refuse = |reason| IrqNotSet {
            irq: wr.irq,
            name: wr.name.clone(),
            reason,
        };
        let now = table
            .as_ref()
            .and_then(|t| t.irq(wr.irq))
            .map(|row| row.actions.join(", "))
            .filter(|n| !n.is_empty());
        if let Some(now) = now.filter(|n| !wr.name.is_empty() && *n != wr.name) {
            not_set.push(refuse(Refusal::Reassigned { now }));
            continue;
        }
        let Some(old_mask) = read_trimmed(&file) else {
            not_set.push(refuse(Refusal::Gone));
            continue;
        };
        if !is_writable(&file) {
            // Refused without a write, so nothing to record.
            not_set.push(refuse(Refusal::Managed {
                how: "read-only smp_affinity".into(),
            }));
            continue;
        }
        let recorded = match state::record_in(
            dir,
            Change::IrqAffinity {
                irq: wr.irq,
                old_mask: old_mask.clone(),
                root: root.to_path_buf(),
            },
        ) {
            Ok(r) => r,
            Err(e) => {
                roll_back(held, w)?;
                return Err(e);
            }
        };
        w.reached(ApplyStep::Recorded { irq: wr.irq });
        let written = w.write(&file, &wr.mask);
        if written.is_ok() {
            w.reached(ApplyStep::Written { irq: wr.irq });
        }
        let back = read_trimmed(&file);
        let result = match written {
            Err(e) => Err(refusal_of(&e)),
            Ok(()) => match &back {
                None => Err(Refusal::Gone),
                Some(b) if same_cpus(b, &wr.mask) => Ok(b.clone()),
                Some(b) => Err(Refusal::NotAsWritten {
                    read_back: b.clone(),
                }),
            },
        };
        let h = Held {
            irq: wr.irq,
            name: wr.name.clone(),
            old_mask,
            new_mask: back.clone().unwrap_or_default(),
            file,
            recorded,
        };
        match result {
            Ok(mask) => {
                set.push(IrqSet {
                    irq: h.irq,
                    name: h.name.clone(),
                    old_mask: h.old_mask.clone(),
                    mask,
                    effective_cpus: read_mask(root, h.irq).effective_cpus,
                });
                held.push(h);
            }
            Err(reason) => {
                not_set.push(refuse(reason));
                // A refused write changes nothing; anything else is put back now.
                match put_back(w, &h.file, &h.old_mask) {
                    Ok(_) => h.recorded.undone(),
                    // Left for the rollback, or the commit's record, to deal with.
                    Err(_) => held.push(h),
                }
            }
        }
    }
    if stop.load(Ordering::Relaxed) {
        let rolled_back = roll_back(held, w)?;
        return Ok(Applied {
            set,
            not_set,
            end: ApplyEnd::Stopped { rolled_back },
            discarded,
        });
    }
    if held.is_empty() {
        return Ok(Applied {
            set,
            not_set,
            end: ApplyEnd::NothingSet,
            discarded,
        });
    }
    let record = AppliedRecord {
        format: APPLIED_FORMAT,
        owner,
        boot_id: state::boot_id(),
        command: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" "),
        applied_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        root: root.to_path_buf(),
        irqs: held
            .iter()
            .map(|h| AppliedIrq {
                irq: h.irq,
                name: h.name.clone(),
                old_mask: h.old_mask.clone(),
                new_mask: h.new_mask.clone(),
            })
            .collect(),
    };
    let path = dir.path().join(APPLIED_FILE);
    let bytes = serde_json::to_vec_pretty(&record).expect("a record serializes");
    if let Err(e) = state::write_atomic(&path, &bytes) {
        roll_back(held, w)?;
        return Err(dir.error(format!("writing {}: {e}", path.display())));
    }
    w.reached(ApplyStep::Committed);
    for h in held {
        h.recorded.undone();
    }
    Ok(Applied {
        set,
        not_set,
        end: ApplyEnd::Committed { record: path },
        discarded,
    })
}

/// Put the held IRQs back, last first: the IRQs put back. Any that cannot be stay recorded for
/// the next start, and are an error that says how to put them back by hand.
fn roll_back(held: Vec<Held>, w: &mut dyn MaskWriter) -> Result<Vec<u32>, HostError> {
    let mut rolled_back = Vec::new();
    let mut failed = Vec::new();
    for h in held.into_iter().rev() {
        match put_back(w, &h.file, &h.old_mask) {
            Ok(_) => {
                h.recorded.undone();
                rolled_back.push(h.irq);
            }
            Err(reason) => {
                failed.push(by_hand(h.irq, &h.old_mask, &h.file, &reason));
                h.recorded.keep();
            }
        }
    }
    if failed.is_empty() {
        Ok(rolled_back)
    } else {
        Err(HostError::Restore(format!(
            "{} (still recorded: the next irqlab start tries again)",
            failed.join("; ")
        )))
    }
}

fn by_hand(irq: u32, mask: &str, file: &Path, reason: &Refusal) -> String {
    format!(
        "IRQ {irq}: could not put back {mask} ({reason}); as root: echo {mask} > {}",
        file.display()
    )
}

fn discard(dir: &StateDir) -> Result<(), HostError> {
    std::fs::remove_file(dir.path().join(APPLIED_FILE)).map_err(|e| dir.error(e))
}

fn stale_note(rec: &AppliedRecord, dir: &StateDir) -> String {
    format!(
        "discarded {}: the plan of {} was applied before the last reboot, and the kernel set \
         every IRQ's affinity afresh at boot, so there is nothing of it to put back",
        dir.path().join(APPLIED_FILE).display(),
        rec.describe()
    )
}

/// Put back the masks the applied record in `dir` saved, last first, each read back; then
/// remove the record (module docs). IRQs that cannot be put back stay in the record and are an
/// error ([`HostError::Restore`]) that says how to by hand.
pub fn restore(dir: &StateDir, w: &mut dyn MaskWriter) -> Result<Restored, HostError> {
    match LockedDir::if_exists(dir)? {
        Some(locked) => restore_locked(&locked, w),
        None => Ok(Restored::Nothing),
    }
}

/// [`restore`] under a lock the caller holds. While it writes, this process's state file
/// records [`Change::AffinityRestore`]: killed halfway, it leaves some masks put back and the
/// record whole, and the next start ([`crate::recovery`]) finishes the restore instead of
/// finding "nothing to clean up".
pub fn restore_locked(locked: &LockedDir, w: &mut dyn MaskWriter) -> Result<Restored, HostError> {
    let dir = locked.dir();
    let Some(record) = read_applied_at(dir.path()).map_err(|e| dir.error(e))? else {
        return Ok(Restored::Nothing);
    };
    if !record.is_this_boot() {
        discard(dir)?;
        return Ok(Restored::EarlierBoot {
            note: stale_note(&record, dir),
        });
    }
    let under_way = state::record_in(
        dir,
        Change::AffinityRestore {
            root: record.root.clone(),
        },
    )?;
    let restored = put_back_record(dir, record, w);
    under_way.undone();
    restored
}

/// Put back every IRQ of `record`, the applied record of `dir` (this boot's), under its lock.
fn put_back_record(
    dir: &StateDir,
    mut record: AppliedRecord,
    w: &mut dyn MaskWriter,
) -> Result<Restored, HostError> {
    // A tree's directory holds only what irqlab did to that tree (`StateDir::for_root`).
    if let Some(tree) = dir.tree().filter(|t| *t != record.root) {
        return Err(dir.error(format!(
            "its applied record names the tree {}, not {}, whose directory it is in: left as is",
            record.root.display(),
            tree.display()
        )));
    }
    let path = dir.path().join(APPLIED_FILE);
    let table = Table::read(&record.root.join("proc/interrupts")).ok();
    let mut irqs = Vec::new();
    let mut failed = Vec::new();
    let mut remaining = Vec::new();
    for a in record.irqs.iter().rev() {
        let file = smp_affinity_file(&record.root, a.irq);
        if let Err(e) = record_is_sane(&record.root, &a.old_mask) {
            failed.push(format!("IRQ {}: {e}", a.irq));
            remaining.push(a.clone());
            continue;
        }
        let found_mask = read_trimmed(&file);
        let mut r = IrqRestored {
            irq: a.irq,
            name: a.name.clone(),
            applied_mask: a.new_mask.clone(),
            found_mask: found_mask.clone(),
            restored_mask: None,
            note: None,
        };
        // A driver reloaded since may have freed the IRQ and another device taken its number:
        // that one is not ours to change. (No name now is not another device: an interface
        // that is down may have freed its handler and keep its mask.)
        let now = table
            .as_ref()
            .and_then(|t| t.irq(a.irq))
            .map(|row| row.actions.join(", "))
            .filter(|n| !n.is_empty());
        if let Some(now) = now.filter(|n| !a.name.is_empty() && *n != a.name) {
            r.note = Some(format!(
                "now '{now}', not '{}': another device's, left as it is",
                a.name
            ));
            irqs.push(r);
            continue;
        }
        if let Some(found) = &found_mask {
            if !a.new_mask.is_empty() && !same_cpus(found, &a.new_mask) {
                r.note = Some(format!(
                    "changed since the plan set {} (irqbalance?)",
                    a.new_mask
                ));
            }
        }
        match put_back(w, &file, &a.old_mask) {
            Ok(Some(back)) => r.restored_mask = Some(back),
            Ok(None) => r.note = Some("the IRQ is gone: nothing to put back".into()),
            Err(reason) => {
                failed.push(by_hand(a.irq, &a.old_mask, &file, &reason));
                remaining.push(a.clone());
            }
        }
        irqs.push(r);
    }
    if failed.is_empty() {
        std::fs::remove_file(&path).map_err(|e| dir.error(e))?;
        return Ok(Restored::Done {
            record: path,
            root: record.root,
            irqs,
        });
    }
    remaining.reverse();
    record.irqs = remaining;
    let kept = state::write_atomic(
        &path,
        &serde_json::to_vec_pretty(&record).expect("a record serializes"),
    );
    Err(HostError::Restore(format!(
        "{}{}",
        failed.join("; "),
        match kept {
            Ok(()) => format!(" (still in {}: --restore tries again)", path.display()),
            Err(e) => format!(" (and {} could not be updated: {e})", path.display()),
        }
    )))
}

/// What a record asks to write, checked before it is written as root: a mask the kernel prints,
/// under an absolute root (a record is this user's, but one that names anything else was not
/// written by irqlab).
fn record_is_sane(root: &Path, mask: &str) -> Result<(), String> {
    if !root.is_absolute() {
        return Err(format!(
            "the tree {} in the record is not an absolute path: left as is",
            root.display()
        ));
    }
    parse_mask(mask)
        .map(drop)
        .map_err(|e| format!("the mask in the record is not one ({e}): left as is"))
}

/// Undo a dead irqlab's recorded IRQ affinity change (see [`crate::state`]): kept if the dead
/// process committed it to the applied record in `dir`; else the old mask is written back and
/// read back.
pub(crate) fn undo_leftover(
    dir: &Path,
    owner: ProcessId,
    irq: u32,
    old_mask: &str,
    root: &Path,
) -> Result<String, String> {
    let what = format!("IRQ {irq}'s smp_affinity");
    record_is_sane(root, old_mask)?;
    if let Ok(Some(rec)) = read_applied_at(dir) {
        if rec.owner == owner && rec.irqs.iter().any(|i| i.irq == irq) {
            return Ok(format!(
                "{what} (applied by irqlab {}: kept for --restore)",
                owner.pid
            ));
        }
    }
    let file = smp_affinity_file(root, irq);
    match put_back(&mut ProcFiles, &file, old_mask) {
        Ok(Some(_)) => Ok(format!("{what} put back to {old_mask}")),
        Ok(None) => Ok(format!("{what} (the IRQ is gone)")),
        Err(reason) => Err(by_hand(irq, old_mask, &file, &reason)),
    }
}

/// An IRQ whose mask, read back, is not the one planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskDiff {
    pub irq: u32,
    pub planned: String,
    /// As read now; none if the IRQ is gone.
    pub found: Option<String>,
}

/// The IRQs of `planned` (IRQ, mask) whose `smp_affinity` under `root` names other CPUs now:
/// after an apply, what it reports as in force must be what the kernel has (a crashed apply's
/// masks put back under the plan, irqbalance moving one, a write the kernel changed).
pub fn masks_differing<'a>(
    root: &Path,
    planned: impl IntoIterator<Item = (u32, &'a str)>,
) -> Vec<MaskDiff> {
    planned
        .into_iter()
        .filter_map(|(irq, mask)| {
            let found = read_trimmed(&smp_affinity_file(root, irq));
            (!found.as_deref().is_some_and(|f| same_cpus(f, mask))).then(|| MaskDiff {
                irq,
                planned: mask.to_string(),
                found,
            })
        })
        .collect()
}

/// Finish the restore a dead irqlab (`owner`) began ([`Change::AffinityRestore`]): put back
/// what the applied record still lists, under the recovery's lock.
pub(crate) fn finish_restore(locked: &LockedDir, owner: ProcessId) -> Result<String, String> {
    let dir = locked.dir();
    let began = format!("the --restore irqlab {} began", owner.pid);
    match read_applied_at(dir.path())? {
        None => Ok(format!("{began} (it had finished)")),
        Some(record) if !record.is_this_boot() => Ok(format!("{began} (gone with the reboot)")),
        Some(record) => match put_back_record(dir, record, &mut ProcFiles) {
            Ok(Restored::Done { irqs, .. }) => {
                let list = |pick: fn(&IrqRestored) -> bool| {
                    irqs.iter()
                        .filter(|i| pick(i))
                        .map(|i| i.irq.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let put_back = list(|i| i.restored_mask.is_some());
                let left = list(|i| i.restored_mask.is_none());
                Ok(format!(
                    "{began}, finished: IRQs {put_back} put back{}",
                    if left.is_empty() {
                        String::new()
                    } else {
                        format!(" (IRQs {left} gone or another device's: left)")
                    }
                ))
            }
            Ok(_) => Ok(format!("{began} (nothing left to put back)")),
            Err(e) => Err(format!("finishing {began}: {e}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_parse_as_the_kernel_prints_them() {
        assert_eq!(parse_mask("3\n"), Ok(vec![0, 1]));
        assert_eq!(parse_mask("00000000,00000100"), Ok(vec![8]));
        assert_eq!(parse_mask("100,00000000"), Ok(vec![40]));
        assert_eq!(parse_mask("ffffffff,ffffffff").unwrap().len(), 64);
        assert_eq!(parse_mask("0"), Ok(vec![]));
        assert!(parse_mask("").is_err());
        assert!(parse_mask("1,,2").is_err());
        assert!(parse_mask("x").unwrap_err().contains("'x'"));
        assert!(parse_mask("123456789").is_err());
        assert!(same_cpus("2", "00000002"));
        assert!(!same_cpus("2", "3"));
    }

    #[test]
    fn queue_names_of_the_common_drivers() {
        use QueueRole::*;
        for (name, nic, role) in [
            ("virtio2-input.0", "eth0", Rx(0)),
            ("virtio2-output.3", "eth0", Tx(3)),
            ("virtio2-config", "eth0", Other),
            ("virtio0-virtqueues", "eth0", RxTx(0)),
            ("eth0-rx-0", "eth0", Rx(0)),
            ("eth0-tx-1", "eth0", Tx(1)),
            ("eth0-TxRx-3", "eth0", RxTx(3)),
            ("i40e-eth0-TxRx-0", "eth0", RxTx(0)),
            ("ice-ens1f0-TxRx-12", "ens1f0", RxTx(12)),
            ("ens5-Tx-Rx-2", "ens5", RxTx(2)),
            ("eth0-rxtx-1", "eth0", RxTx(1)),
            ("eth0-event-4", "eth0", Other),
            ("mlx5_comp7@pci:0000:3b:00.0", "ens1f0np0", RxTx(7)),
            ("mlx5_async0@pci:0000:3b:00.0", "ens1f0np0", Other),
            ("eth0-2", "eth0", RxTx(2)),
            ("eth0", "eth0", Other),
            ("", "eth0", Other),
        ] {
            assert_eq!(queue_role(name, nic), role, "{name}");
        }
    }

    #[test]
    fn a_record_that_names_no_mask_is_not_acted_on() {
        let owner = ProcessId::current().unwrap();
        let dir = Path::new("/nonexistent");
        for (root, mask) in [("/", "3 > /etc/passwd"), ("relative", "3"), ("/", "")] {
            let e = undo_leftover(dir, owner, 38, mask, Path::new(root)).unwrap_err();
            assert!(e.contains("left as is"), "{e}");
        }
    }

    /// A default state directory is removed when its last file goes; during an apply that must
    /// wait for the lock's release. Here IRQ 61 is refused (EIO, as before Linux 6.12), which
    /// drops its record and empties the directory: were it removed, IRQ 62 would be recorded in
    /// a directory created anew, unlocked, and another irqlab could apply beside this one.
    #[test]
    fn the_state_directory_stays_locked_through_an_apply() {
        use nix::fcntl::{Flock, FlockArg};
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        for irq in [61, 62] {
            let d = root.join(format!("proc/irq/{irq}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("smp_affinity"), "f\n").unwrap();
        }
        let dir = StateDir::removable(t.path().join("state"));
        struct Eio {
            dir: PathBuf,
            /// Whether another open of the directory could take its lock, at IRQ 62's record.
            lockable_at_62: Option<bool>,
        }
        impl MaskWriter for Eio {
            fn write(&mut self, file: &Path, mask: &str) -> std::io::Result<()> {
                if file.to_string_lossy().contains("/61/") {
                    return Err(std::io::Error::from_raw_os_error(libc::EIO));
                }
                ProcFiles.write(file, mask)
            }
            fn reached(&mut self, step: ApplyStep) {
                if step == (ApplyStep::Recorded { irq: 62 }) {
                    let f = std::fs::File::open(&self.dir).unwrap();
                    self.lockable_at_62 =
                        Some(Flock::lock(f, FlockArg::LockExclusiveNonblock).is_ok());
                }
            }
        }
        let mut w = Eio {
            dir: dir.path().to_path_buf(),
            lockable_at_62: None,
        };
        let writes: Vec<MaskWrite> = [61, 62]
            .iter()
            .map(|&irq| MaskWrite {
                irq,
                name: String::new(),
                mask: "1".into(),
            })
            .collect();
        let a = apply(&root, &dir, &writes, &AtomicBool::new(false), &mut w).unwrap();
        assert_eq!(w.lockable_at_62, Some(false), "the lock was lost mid-apply");
        assert_eq!(a.set.len(), 1);
        assert!(matches!(a.end, ApplyEnd::Committed { .. }), "{a:?}");
        // Restored, the directory is empty again, and goes once unlocked.
        restore(&dir, &mut ProcFiles).unwrap();
        assert!(!dir.path().exists());
        // An apply that sets nothing leaves no directory behind either.
        let mut w = Eio {
            dir: dir.path().to_path_buf(),
            lockable_at_62: None,
        };
        let a = apply(&root, &dir, &writes[..1], &AtomicBool::new(false), &mut w).unwrap();
        assert_eq!(a.end, ApplyEnd::NothingSet);
        assert!(!dir.path().exists());
    }

    #[test]
    fn the_kernels_refusals_are_named() {
        let e = |n| refusal_of(&std::io::Error::from_raw_os_error(n));
        assert_eq!(
            e(libc::EIO).to_string(),
            "managed by the kernel (EIO): the driver spreads these queues itself"
        );
        assert!(matches!(e(libc::EPERM), Refusal::Managed { .. }));
        assert_eq!(e(libc::EINVAL), Refusal::NoOnlineCpu);
        assert_eq!(e(libc::ENOENT), Refusal::Gone);
        assert!(e(libc::ENOSPC).to_string().contains("ENOSPC"));
    }
}
