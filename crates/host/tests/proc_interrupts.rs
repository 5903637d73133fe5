//! The `/proc/interrupts` parser on captures from real kernels, 2.6.5 to 6.18
//! (`tests/fixtures/interrupts/`, provenance in its SOURCES.md).

use irqlab_host::interrupts::{Row, Table};
use irqlab_stats::inventory::{Delivery, Trigger};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/interrupts")
}

fn load(name: &str) -> Table {
    Table::read(&dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn irq<'a>(t: &'a Table, id: &str) -> &'a Row {
    t.rows
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

#[test]
fn every_fixture_parses_with_one_count_per_cpu() {
    let mut n = 0;
    for e in std::fs::read_dir(dir()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("txt") {
            continue;
        }
        let t = Table::read(&path).unwrap_or_else(|e| panic!("{e}"));
        n += 1;
        for r in &t.rows {
            if r.is_numbered() {
                assert_eq!(
                    r.counts.len(),
                    t.cpus.len(),
                    "{}: IRQ {}",
                    path.display(),
                    r.id
                );
                assert!(
                    r.chip.is_some(),
                    "{}: IRQ {} has no chip",
                    path.display(),
                    r.id
                );
            } else {
                assert!(
                    r.counts.len() == t.cpus.len() || r.counts.len() == 1,
                    "{}: {}",
                    path.display(),
                    r.id
                );
            }
        }
    }
    assert!(n >= 8, "only {n} fixtures");
}

#[test]
fn linux_2_6_5_up_mixes_xtpic_and_io_apic_types() {
    let t = load("2.6.5-ioapic-edge-level-up.txt");
    assert_eq!(t.cpus, [0]);
    assert_eq!(irq(&t, "0").delivery(), Delivery::XtPic);
    let r = irq(&t, "16");
    assert_eq!(r.delivery(), Delivery::IoApic);
    assert_eq!(r.trigger(), Some(Trigger::Level));
    assert_eq!(r.actions, ["aic7xxx", "ehci_hcd"]);
    assert_eq!(irq(&t, "19").actions, ["eth0", "radeon@PCI:3:0:0"]);
    assert_eq!(irq(&t, "ERR").counts, [0]);
    assert_eq!(irq(&t, "MIS").counts, [6]);
}

#[test]
fn linux_2_6_12_xtpic_only_with_a_shared_usb_line() {
    let t = load("2.6.12-xtpic-up.txt");
    let xt = t
        .rows
        .iter()
        .filter(|r| r.is_numbered())
        .all(|r| r.delivery() == Delivery::XtPic);
    assert!(xt);
    assert!(t
        .rows
        .iter()
        .any(|r| r.actions.len() >= 2 && r.actions.iter().any(|a| a.starts_with("ehci_hcd"))));
}

#[test]
fn linux_2_6_18_local_apic_timer_is_per_cpu() {
    let t = load("2.6.18-ioapic-level-smp.txt");
    let r = irq(&t, "0");
    assert_eq!(r.chip.as_deref(), Some("local-APIC"));
    assert_eq!(r.delivery(), Delivery::PerCpu);
    assert_eq!(irq(&t, "1").delivery(), Delivery::IoApic);
}

#[test]
fn linux_2_6_32_fasteoi_and_msi_edge() {
    let t = load("2.6.32-ioapic-fasteoi-smp.txt");
    let fasteoi = t
        .rows
        .iter()
        .find(|r| r.flow.as_deref() == Some("fasteoi"))
        .unwrap();
    assert_eq!(fasteoi.delivery(), Delivery::IoApic);
    assert_eq!(fasteoi.trigger(), Some(Trigger::Level));
    let msi = t
        .rows
        .iter()
        .find(|r| r.chip.as_deref() == Some("PCI-MSI"))
        .unwrap();
    assert_eq!(msi.flow.as_deref(), Some("edge"));
    assert!(t.rows.iter().any(|r| r.id == "PND"));
}

#[test]
fn linux_3_10_interrupt_remapping_joined_names() {
    let t = load("3.10-ir-io-apic-fasteoi-smp.txt");
    let r = irq(&t, "0");
    assert_eq!(
        (r.chip.as_deref(), r.flow.as_deref()),
        (Some("IR-IO-APIC"), Some("edge"))
    );
    assert!(r.remapped());
    let dmar = t.rows.iter().find(|r| r.actions == ["dmar0"]).unwrap();
    assert_eq!(dmar.delivery(), Delivery::PlatformMsi);
    assert!(t
        .rows
        .iter()
        .any(|r| r.chip.as_deref() == Some("IR-PCI-MSI") && r.delivery() == Delivery::Msi));
}

#[test]
fn linux_4_x_chip_hwirq_flow() {
    let t = load("4.9-ioapic-pci-msi-hwirq.txt");
    let r = irq(&t, "0");
    assert_eq!(r.chip.as_deref(), Some("IO-APIC"));
    assert_eq!(r.hwirq.as_deref(), Some("2"));
    assert_eq!(r.actions, ["timer"]);
    assert!(t.rows.iter().any(|r| r.hwirq.as_deref() == Some("524288")));

    let t = load("4.16-ir-pci-msi.txt");
    let ahci = t
        .rows
        .iter()
        .find(|r| r.actions.iter().any(|a| a.starts_with("ahci")))
        .unwrap();
    assert_eq!(ahci.chip.as_deref(), Some("IR-PCI-MSI"));
    assert_eq!(ahci.hwirq.as_deref(), Some("512000"));
    assert_eq!(ahci.actions, ["ahci[0000:00:1f.2]"]);
}

#[test]
fn linux_6_per_device_msi_domains() {
    let t = load("6.18-x86_64-firecracker-pci-msix.txt");
    let r = irq(&t, "36");
    assert_eq!(r.chip.as_deref(), Some("PCI-MSIX-0000:00:02.0"));
    assert_eq!(r.delivery(), Delivery::MsiX);
    assert_eq!(r.counts, [0, 54536]);

    let t = load("6.x-ir-pci-msix-domain-laptop.txt");
    assert_eq!(t.cpus.len(), 14);
    let nvme = t
        .rows
        .iter()
        .find(|r| r.actions == ["nvme0q10"])
        .expect("nvme0q10");
    assert!(nvme.remapped());
    assert_eq!(nvme.delivery(), Delivery::MsiX);
    // A GPIO line: chip and hwirq, no flow.
    let gpio = irq(&t, "151");
    assert_eq!(gpio.chip.as_deref(), Some("intel-gpio"));
    assert_eq!(gpio.hwirq.as_deref(), Some("139"));
    assert_eq!(gpio.flow, None);
    assert_eq!(gpio.actions, ["ELAN06DA:00"]);
}

#[test]
fn arm64_gic_prints_the_trigger() {
    let t = load("arm64-gicv3-its-qemu.txt");
    let r = t.rows.iter().find(|r| r.actions == ["arch_timer"]).unwrap();
    assert_eq!(r.chip.as_deref(), Some("GICv3"));
    assert_eq!(r.trigger(), Some(Trigger::Level));
    let its = t
        .rows
        .iter()
        .find(|r| r.actions == ["virtio1-config"])
        .unwrap();
    assert_eq!(its.delivery(), Delivery::Msi);
    assert_eq!(its.trigger(), Some(Trigger::Edge));
    assert_eq!(its.hwirq.as_deref(), Some("16384"));
}
