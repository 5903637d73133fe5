//! The inventory on captured fixture trees (`tests/fixtures/hosts/*`, made with
//! `tests/fixtures/capture-host.sh`) and on the live host.

use irqlab_host::inventory::{build, collect, snapshot};
use irqlab_stats::inventory::{Delivery, Trigger};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hosts")
        .join(name)
}

#[test]
fn firecracker_vm_joins_msix_vectors_to_their_functions() {
    let root = fixture("firecracker-6.18");
    let inv = collect(&root, None).expect("inventory");
    assert_eq!(inv.kernel.as_deref(), Some("6.18.44-fc-v669"));
    assert_eq!(inv.cpus, [0, 1]);
    let numbered: Vec<_> = inv
        .irqs
        .iter()
        .filter(|e| e.delivery != Delivery::PerCpu)
        .collect();
    assert_eq!(numbered.len(), 19);

    let blk = inv.irqs.iter().find(|e| e.irq == "36").expect("IRQ 36");
    assert_eq!(blk.delivery, Delivery::MsiX);
    assert_eq!(blk.trigger, Some(Trigger::Edge));
    assert_eq!(blk.actions, ["virtio1-req.0"]);
    assert_eq!(blk.devices.len(), 1);
    let dev = &blk.devices[0];
    assert_eq!(dev.address, "0000:00:02.0");
    assert_eq!(dev.driver.as_deref(), Some("virtio-pci"));
    assert_eq!(
        dev.msix_table_size,
        Some(2),
        "virtio-blk: config + one request queue"
    );
    assert!(!dev.msi_capable);
    assert_eq!(blk.affinity.as_deref(), Some("0-1"));

    let serial = inv.irqs.iter().find(|e| e.irq == "26").expect("IRQ 26");
    assert_eq!(serial.delivery, Delivery::IoApic);
    assert_eq!(serial.hwirq.as_deref(), Some("4"));
    assert!(serial.devices.is_empty(), "the UART is not a PCI function");

    let loc = inv.irqs.iter().find(|e| e.irq == "LOC").expect("LOC");
    assert_eq!(loc.delivery, Delivery::PerCpu);
    assert_eq!(loc.description.as_deref(), Some("Local timer interrupts"));
    // Nothing shared, nothing legacy on an MSI-capable function.
    assert!(inv.findings.iter().all(|f| f.kind != "shared-line"));
    assert!(inv
        .findings
        .iter()
        .all(|f| f.kind != "legacy-intx-on-msi-capable"));
}

#[test]
fn rates_come_from_the_difference_of_two_snapshots() {
    let root = fixture("firecracker-6.18");
    let first = snapshot(&root).unwrap();
    let mut second = first.clone();
    for r in &mut second.rows {
        if r.id == "36" {
            r.counts[1] += 5_000; // 2,500/s on CPU1 over 2 s
        }
    }
    let inv = build(&root, &second, Some((&first, 2.0))).unwrap();
    let blk = inv.irqs.iter().find(|e| e.irq == "36").unwrap();
    assert_eq!(blk.rate_per_s.as_deref(), Some(&[0.0, 2_500.0][..]));
    assert_eq!(inv.interval_s, Some(2.0));
    let f = inv
        .findings
        .iter()
        .find(|f| f.kind == "load-on-one-cpu")
        .expect("all of the device load is on CPU1");
    assert!(f.message.starts_with("CPU1 takes 100%"), "{}", f.message);
    assert_eq!(f.irqs, ["36"]);
}

#[test]
fn live_host_inventory() {
    if !Path::new("/proc/interrupts").exists() {
        eprintln!("skipped: no /proc/interrupts (not Linux)");
        return;
    }
    let inv = collect(Path::new("/"), Some(std::time::Duration::from_millis(200))).unwrap();
    assert!(!inv.cpus.is_empty());
    assert!(inv.irqs.iter().any(|e| e.irq == "LOC" || e.irq == "NMI"));
    // Every rate is non-negative and every row has one count per CPU column or a total.
    for e in &inv.irqs {
        assert!(
            e.counts.len() == inv.cpus.len() || e.counts.len() == 1,
            "{e:?}"
        );
        if let Some(r) = &e.rate_per_s {
            assert!(r.iter().all(|v| *v >= 0.0));
        }
    }
}

/// A tree built around a real 2.6.32 `/proc/interrupts` (its IRQ 20 is shared by
/// `ehci_hcd:usb1, HDA Intel`), with sysfs written by the test: the EHCI function is on INTx
/// line 20 although its configuration space has an MSI capability, and irqbalance runs.
#[test]
fn findings_on_a_legacy_shared_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let put = |rel: &str, data: &[u8]| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    };
    put(
        "proc/interrupts",
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/interrupts/2.6.32-ioapic-fasteoi-smp.txt"),
        )
        .unwrap(),
    );
    put("proc/irq/20/smp_affinity_list", b"0-1\n");
    put("proc/4242/comm", b"irqbalance\n");
    put("proc/1/comm", b"init\n");
    // EHCI at 00:1d.7: INTA, capability list at 0x50 -> power management -> MSI.
    let mut config = vec![0u8; 256];
    config[0x06] = 0x10;
    config[0x34] = 0x50;
    config[0x3D] = 1;
    config[0x50..0x52].copy_from_slice(&[0x01, 0x58]);
    config[0x58..0x5C].copy_from_slice(&[0x05, 0x00, 0x80, 0x00]);
    let dev = "sys/bus/pci/devices/0000:00:1d.7";
    put(&format!("{dev}/irq"), b"20\n");
    put(&format!("{dev}/config"), &config);
    std::os::unix::fs::symlink(
        "../../../bus/pci/drivers/ehci_hcd",
        root.join(dev).join("driver"),
    )
    .unwrap();

    let inv = collect(root, None).unwrap();
    let line = inv.irqs.iter().find(|e| e.irq == "20").unwrap();
    assert_eq!(line.delivery, Delivery::IoApic);
    assert_eq!(line.trigger, Some(Trigger::Level));
    assert_eq!(line.actions, ["ehci_hcd:usb1", "HDA Intel"]);
    assert_eq!(line.devices.len(), 1);
    assert!(line.devices[0].msi_capable);
    assert_eq!(line.devices[0].intx_pin.as_deref(), Some("INTA"));

    let kinds: Vec<&str> = inv.findings.iter().map(|f| f.kind.as_str()).collect();
    assert!(kinds.contains(&"legacy-intx-on-msi-capable"), "{kinds:?}");
    assert!(kinds.contains(&"shared-line"), "{kinds:?}");
    assert!(kinds.contains(&"irqbalance-running"), "{kinds:?}");
    let legacy = inv
        .findings
        .iter()
        .find(|f| f.kind == "legacy-intx-on-msi-capable")
        .unwrap();
    assert!(
        legacy
            .message
            .starts_with("0000:00:1d.7 (ehci_hcd) interrupts through IO-APIC IRQ 20"),
        "{}",
        legacy.message
    );
    let irqbalance = inv
        .findings
        .iter()
        .find(|f| f.kind == "irqbalance-running")
        .unwrap();
    assert!(irqbalance.message.contains("pid 4242"));
}
