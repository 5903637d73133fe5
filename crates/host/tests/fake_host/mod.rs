//! A fake `/sys` and `/proc` in a temporary directory, shaped as the kernel lays them out, for
//! `plan affinity --host` (the host crate's tests and the CLI's, which include this file).
//!
//! [`FakeHost::standard`] is two sockets of two cores (cpu0-1 and cpu2-3; an L2 per core, an
//! L3 per socket) with:
//! - eth0, an ixgbe-like PCI NIC (0000:3b:00.0) with separate rx and tx vectors: IRQ 60
//!   `eth0` (link), 61 `eth0-rx-0`, 62 `eth0-tx-0`, 63 `eth0-rx-1`, 64 `eth0-tx-1`;
//! - eth1, an i40e-like PCI NIC (0000:3b:00.1): 70 `i40e-eth1-TxRx-0`, 71 `i40e-eth1-TxRx-1`,
//!   whose `smp_affinity` is read-only as Linux 6.12+ makes a managed IRQ's;
//! - eth2, virtio-net behind virtio2 on the PCI function 0000:00:03.0: 37 `virtio2-config`, 38
//!   `virtio2-input.0`, 39 `virtio2-output.0`;
//! - lo, a virtual interface without a device.
//!
//! Every IRQ's mask starts as `f` (all four CPUs), with a newline, as the kernel prints it.

#![allow(dead_code)] // each test file uses its own part

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub struct FakeHost {
    pub dir: tempfile::TempDir,
    /// A state directory for irqlab, outside the tree (so snapshots see only the tree).
    pub state: tempfile::TempDir,
}

/// The standard tree's IRQs: number, `/proc/interrupts` name, PCI function.
pub const IRQS: &[(u32, &str, &str)] = &[
    (37, "virtio2-config", "0000:00:03.0"),
    (38, "virtio2-input.0", "0000:00:03.0"),
    (39, "virtio2-output.0", "0000:00:03.0"),
    (60, "eth0", "0000:3b:00.0"),
    (61, "eth0-rx-0", "0000:3b:00.0"),
    (62, "eth0-tx-0", "0000:3b:00.0"),
    (63, "eth0-rx-1", "0000:3b:00.0"),
    (64, "eth0-tx-1", "0000:3b:00.0"),
    (70, "i40e-eth1-TxRx-0", "0000:3b:00.1"),
    (71, "i40e-eth1-TxRx-1", "0000:3b:00.1"),
];

/// The standard tree's managed IRQ (read-only `smp_affinity`).
pub const MANAGED_IRQ: u32 = 71;

impl FakeHost {
    /// An empty tree.
    pub fn empty() -> FakeHost {
        FakeHost {
            dir: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Write `rel` (its directories created).
    pub fn file(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }

    /// A relative symbolic link at `rel` to `target`, as sysfs has them.
    pub fn link(&self, rel: &str, target: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &p).unwrap();
    }

    /// Two sockets x two cores, as [`FakeHost::standard`] describes.
    pub fn cpus_2x2(&self) {
        self.file("sys/devices/system/cpu/online", "0-3\n");
        for cpu in 0..4u32 {
            let socket = cpu / 2;
            let d = format!("sys/devices/system/cpu/cpu{cpu}");
            self.file(
                &format!("{d}/topology/physical_package_id"),
                &format!("{socket}\n"),
            );
            self.file(&format!("{d}/topology/core_id"), &format!("{}\n", cpu % 2));
            self.file(&format!("{d}/topology/core_cpus_list"), &format!("{cpu}\n"));
            self.file(
                &format!("{d}/topology/thread_siblings_list"),
                &format!("{cpu}\n"),
            );
            let socket_cpus = format!("{}-{}\n", 2 * socket, 2 * socket + 1);
            for (i, (level, kind, size, shared)) in [
                (1, "Data", "48K", format!("{cpu}\n")),
                (1, "Instruction", "32K", format!("{cpu}\n")),
                (2, "Unified", "1024K", format!("{cpu}\n")),
                (3, "Unified", "32768K", socket_cpus),
            ]
            .into_iter()
            .enumerate()
            {
                let c = format!("{d}/cache/index{i}");
                self.file(&format!("{c}/level"), &format!("{level}\n"));
                self.file(&format!("{c}/type"), &format!("{kind}\n"));
                self.file(&format!("{c}/size"), &format!("{size}\n"));
                self.file(&format!("{c}/shared_cpu_list"), &shared);
            }
        }
    }

    /// `/proc/interrupts` with these rows (four CPUs), as 6.x prints MSI-X rows.
    pub fn interrupts(&self, rows: &[(u32, &str, &str)]) {
        let mut text = String::from("            CPU0       CPU1       CPU2       CPU3       \n");
        for (i, (irq, name, dev)) in rows.iter().enumerate() {
            text.push_str(&format!(
                "{irq:>4}:          0          0          0          0 PCI-MSIX-{dev}   {i}-edge      {name}\n"
            ));
        }
        text.push_str(
            " NMI:          0          0          0          0   Non-maskable interrupts\n",
        );
        self.file("proc/interrupts", &text);
    }

    /// `/proc/irq/N/` with `smp_affinity` `mask`, its list, and the effective CPU.
    pub fn irq(&self, irq: u32, mask: &str, list: &str, effective: &str) {
        let d = format!("proc/irq/{irq}");
        self.file(&format!("{d}/smp_affinity"), &format!("{mask}\n"));
        self.file(&format!("{d}/smp_affinity_list"), &format!("{list}\n"));
        self.file(
            &format!("{d}/effective_affinity_list"),
            &format!("{effective}\n"),
        );
    }

    /// Make IRQ `irq`'s `smp_affinity` read-only, as Linux 6.12+ creates a managed IRQ's.
    pub fn make_managed(&self, irq: u32) {
        let p = self.path(&format!("proc/irq/{irq}/smp_affinity"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    }

    /// A PCI function with these MSI-X IRQs.
    pub fn pci(&self, bus: &str, addr: &str, irqs: &[u32]) {
        let d = format!("sys/devices/{bus}/{addr}");
        for irq in irqs {
            self.file(&format!("{d}/msi_irqs/{irq}"), "msix\n");
        }
        self.file(
            &format!("{d}/irq"),
            &format!("{}\n", irqs.first().unwrap_or(&0)),
        );
    }

    /// Interface `name` whose `device` is `sys/devices/{device}`, bound to `driver`.
    pub fn nic(&self, name: &str, device: &str, driver: &str) {
        self.link(
            &format!("sys/class/net/{name}/device"),
            &format!("../../../devices/{device}"),
        );
        self.link(
            &format!("sys/devices/{device}/driver"),
            &format!("../../../../bus/pci/drivers/{driver}"),
        );
    }

    /// irqbalance running as process `pid` (its `comm`), or another process there.
    pub fn process(&self, pid: u32, comm: &str) {
        self.file(&format!("proc/{pid}/comm"), &format!("{comm}\n"));
    }

    /// The tree [`FakeHost`]'s module doc describes.
    pub fn standard() -> FakeHost {
        let h = FakeHost::empty();
        h.cpus_2x2();
        h.interrupts(IRQS);
        for (irq, _, _) in IRQS {
            h.irq(*irq, "f", "0-3", "0");
        }
        h.make_managed(MANAGED_IRQ);
        h.pci("pci0000:3a", "0000:3b:00.0", &[60, 61, 62, 63, 64]);
        h.pci("pci0000:3a", "0000:3b:00.1", &[70, 71]);
        h.pci("pci0000:00", "0000:00:03.0", &[37, 38, 39]);
        h.nic("eth0", "pci0000:3a/0000:3b:00.0", "ixgbe");
        h.nic("eth1", "pci0000:3a/0000:3b:00.1", "i40e");
        // virtio-net: the interface's device is virtio2, below the PCI function.
        h.nic("eth2", "pci0000:00/0000:00:03.0/virtio2", "virtio_net");
        h.file("sys/class/net/lo/address", "00:00:00:00:00:00\n");
        h.process(1, "init");
        h
    }

    /// Irqlab's state directory for this tree (`IRQLAB_STATE_DIR`).
    pub fn state_dir(&self) -> PathBuf {
        self.state.path().join("irqlab")
    }

    /// Every file of the tree (symbolic links as `-> target`), its bytes as text (the tree
    /// holds only text), for comparing before and after byte for byte.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                let rel = p.strip_prefix(base).unwrap().to_path_buf();
                let m = std::fs::symlink_metadata(&p).unwrap();
                if m.is_symlink() {
                    let t = std::fs::read_link(&p).unwrap();
                    out.insert(rel, format!("-> {}", t.display()));
                } else if m.is_dir() {
                    walk(&p, base, out);
                } else {
                    let bytes = std::fs::read(&p).unwrap();
                    out.insert(rel, String::from_utf8(bytes).expect("text"));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self.root(), self.root(), &mut out);
        out
    }

    /// IRQ `irq`'s `smp_affinity`, as stored.
    pub fn mask(&self, irq: u32) -> String {
        std::fs::read_to_string(self.path(&format!("proc/irq/{irq}/smp_affinity"))).unwrap()
    }
}
