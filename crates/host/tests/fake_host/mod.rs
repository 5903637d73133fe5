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

/// A multi-queue NIC of [`FakeHost::large`]: its interface name, queue count, and how its
/// driver names the queues' IRQs.
#[derive(Clone, Copy, Debug)]
pub struct LargeNic {
    pub name: &'static str,
    pub queues: u32,
    pub naming: QueueNaming,
}

/// How a driver names its queue IRQs.
#[derive(Clone, Copy, Debug)]
pub enum QueueNaming {
    /// ixgbe: a link IRQ `eth0`, then `eth0-rx-N` and `eth0-tx-N`, an IRQ each.
    RxTx,
    /// i40e: `i40e-eth1-TxRx-N`, one IRQ per queue pair.
    TxRx,
    /// mlx5: `mlx5_compN@pci:ADDR`, one IRQ per queue pair.
    Comp,
}

/// The shape of [`FakeHost::large`]'s machine.
#[derive(Clone, Debug)]
pub struct LargeHost {
    pub cpus: u32,
    /// CPUs are numbered socket by socket; `cpus` must be a multiple of `sockets * smt`.
    pub sockets: u32,
    /// Threads per physical core (1 or 2), numbered side by side.
    pub smt: u32,
    pub nics: Vec<LargeNic>,
}

impl LargeHost {
    /// `cpus` CPUs in `sockets` sockets, two threads a core, with three multi-queue NICs:
    /// eth0 (ixgbe-like, 64 queues of an rx and a tx IRQ), eth1 (i40e-like, 128 TxRx queues),
    /// eth2 (mlx5-like, 256 completion queues).
    pub fn with_three_nics(cpus: u32, sockets: u32) -> LargeHost {
        LargeHost {
            cpus,
            sockets,
            smt: 2,
            nics: vec![
                LargeNic {
                    name: "eth0",
                    queues: 64,
                    naming: QueueNaming::RxTx,
                },
                LargeNic {
                    name: "eth1",
                    queues: 128,
                    naming: QueueNaming::TxRx,
                },
                LargeNic {
                    name: "eth2",
                    queues: 256,
                    naming: QueueNaming::Comp,
                },
            ],
        }
    }
}

impl FakeHost {
    /// A machine of any size, laid out as the kernel does (the benchmark's and the planner's
    /// size tests): per CPU its socket, core and SMT siblings, an L2 per core and an L3 per
    /// socket; per NIC a PCI function with its MSI-X IRQs from 1000 up (numbered NIC after
    /// NIC), each IRQ's mask all CPUs; a `/proc/interrupts` with a count column per CPU, as
    /// the kernel prints it (`%10u ` each).
    pub fn large(shape: &LargeHost) -> FakeHost {
        let h = FakeHost::empty();
        let n = shape.cpus;
        assert!(
            n > 0 && n.is_multiple_of(shape.sockets * shape.smt),
            "{shape:?}"
        );
        let per_socket = n / shape.sockets;
        h.file("sys/devices/system/cpu/online", &format!("0-{}\n", n - 1));
        for cpu in 0..n {
            let socket = cpu / per_socket;
            let first = cpu - cpu % shape.smt;
            let siblings = if shape.smt == 1 {
                format!("{cpu}\n")
            } else {
                format!("{first}-{}\n", first + shape.smt - 1)
            };
            let d = format!("sys/devices/system/cpu/cpu{cpu}");
            h.file(
                &format!("{d}/topology/physical_package_id"),
                &format!("{socket}\n"),
            );
            h.file(
                &format!("{d}/topology/core_id"),
                &format!("{}\n", (cpu % per_socket) / shape.smt),
            );
            h.file(&format!("{d}/topology/core_cpus_list"), &siblings);
            let socket_cpus = format!(
                "{}-{}\n",
                socket * per_socket,
                (socket + 1) * per_socket - 1
            );
            for (i, (level, size, shared)) in
                [(2, "2048K", siblings.clone()), (3, "107520K", socket_cpus)]
                    .into_iter()
                    .enumerate()
            {
                let c = format!("{d}/cache/index{i}");
                h.file(&format!("{c}/level"), &format!("{level}\n"));
                h.file(&format!("{c}/type"), "Unified\n");
                h.file(&format!("{c}/size"), &format!("{size}\n"));
                h.file(&format!("{c}/shared_cpu_list"), &shared);
            }
        }
        let all = all_cpus_mask(n);
        let mut rows: Vec<(u32, String, String)> = Vec::new();
        let mut next = 1000u32;
        for (k, nic) in shape.nics.iter().enumerate() {
            let addr = format!("0000:{:02x}:00.0", 0x3b + k);
            let mut names: Vec<String> = Vec::new();
            match nic.naming {
                QueueNaming::RxTx => {
                    names.push(nic.name.to_string());
                    for q in 0..nic.queues {
                        names.push(format!("{}-rx-{q}", nic.name));
                        names.push(format!("{}-tx-{q}", nic.name));
                    }
                }
                QueueNaming::TxRx => {
                    names.extend((0..nic.queues).map(|q| format!("i40e-{}-TxRx-{q}", nic.name)))
                }
                QueueNaming::Comp => {
                    names.extend((0..nic.queues).map(|q| format!("mlx5_comp{q}@pci:{addr}")))
                }
            }
            let irqs: Vec<u32> = (next..next + names.len() as u32).collect();
            next += names.len() as u32;
            for (irq, name) in irqs.iter().zip(names) {
                let d = format!("proc/irq/{irq}");
                h.file(&format!("{d}/smp_affinity"), &format!("{all}\n"));
                h.file(&format!("{d}/smp_affinity_list"), &format!("0-{}\n", n - 1));
                h.file(&format!("{d}/effective_affinity_list"), "0\n");
                rows.push((*irq, name, addr.clone()));
            }
            let bus = format!("pci0000:{:02x}", 0x3a + k);
            h.pci(&bus, &addr, &irqs);
            let driver = match nic.naming {
                QueueNaming::RxTx => "ixgbe",
                QueueNaming::TxRx => "i40e",
                QueueNaming::Comp => "mlx5_core",
            };
            h.nic(nic.name, &format!("{bus}/{addr}"), driver);
        }
        let mut text = String::from("      ");
        for cpu in 0..n {
            text.push_str(&format!("{:<11}", format!("CPU{cpu}")));
        }
        text.push('\n');
        for (i, (irq, name, addr)) in rows.iter().enumerate() {
            text.push_str(&format!("{irq:>5}:"));
            for _ in 0..n {
                text.push_str("          0 ");
            }
            text.push_str(&format!(" PCI-MSIX-{addr}   {i}-edge      {name}\n"));
        }
        h.file("proc/interrupts", &text);
        h.file("sys/class/net/lo/address", "00:00:00:00:00:00\n");
        h.process(1, "init");
        h
    }
}

/// Every CPU of `n` as `smp_affinity` prints it: 32-bit groups, most significant first.
fn all_cpus_mask(n: u32) -> String {
    let groups = n.div_ceil(32);
    (0..groups)
        .rev()
        .map(|g| {
            let bits = (n - g * 32).min(32);
            let v: u64 = (1u64 << bits) - 1;
            if g == groups - 1 {
                format!("{v:x}")
            } else {
                format!("{v:08x}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}
