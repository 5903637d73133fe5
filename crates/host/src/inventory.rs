//! The host's interrupt inventory: `/proc/interrupts` joined with `/proc/irq/N`,
//! `/sys/kernel/irq/N` and the PCI functions behind each line, rates from two snapshots, and the
//! findings a latency-minded engineer acts on.

use crate::error::HostError;
use crate::interrupts::{Row, Table};
use crate::pci::{self, read_trimmed, Function};
use irqlab_stats::inventory::{
    Delivery, Finding, Inventory, IrqEntry, PciFunction, Severity, Trigger,
};
use std::path::Path;
use std::time::Duration;

/// A CPU is "carrying the load" when it takes more than this share of device interrupts.
const CONCENTRATION_SHARE: f64 = 0.8;
/// ... and there is enough load to matter: device interrupts per second over the interval.
const CONCENTRATION_MIN_RATE_PER_S: f64 = 1000.0;
/// ... or, from counts since boot, at least this many.
const CONCENTRATION_MIN_COUNT: u64 = 100_000;

/// Read `/proc/interrupts` under `root` (`/` on the live system).
pub fn snapshot(root: &Path) -> Result<Table, HostError> {
    Table::read(&root.join("proc/interrupts"))
}

/// Take one snapshot, or two `interval` apart for rates, and build the inventory.
pub fn collect(root: &Path, interval: Option<Duration>) -> Result<Inventory, HostError> {
    let first = snapshot(root)?;
    match interval {
        None => build(root, &first, None),
        Some(d) => {
            let start = std::time::Instant::now();
            std::thread::sleep(d);
            let second = snapshot(root)?;
            build(root, &second, Some((&first, start.elapsed().as_secs_f64())))
        }
    }
}

/// Build the inventory from the latest snapshot and, for rates, an earlier one with the seconds
/// between them.
pub fn build(
    root: &Path,
    latest: &Table,
    earlier: Option<(&Table, f64)>,
) -> Result<Inventory, HostError> {
    if let Some((e, _)) = earlier {
        if e.cpus != latest.cpus {
            return Err(HostError::Invalid(format!(
                "the online CPUs changed between the two snapshots ({:?} then {:?}); run again",
                e.cpus, latest.cpus
            )));
        }
    }
    let functions = pci::functions(root)?;
    let mut irqs = Vec::with_capacity(latest.rows.len());
    for row in &latest.rows {
        let rate = earlier.and_then(|(e, secs)| rate_per_s(row, e, secs));
        irqs.push(entry(root, row, rate, &functions));
    }
    let findings = findings(root, &irqs, &functions, &latest.cpus, earlier.is_some());
    Ok(Inventory {
        kernel: read_trimmed(&root.join("proc/sys/kernel/osrelease")),
        cpus: latest.cpus.clone(),
        interval_s: earlier.map(|(_, s)| s),
        irqs,
        findings,
    })
}

/// Per-CPU rate of a row between an earlier snapshot and now. None for a row that was not there
/// before (registered in between) or whose counter went backwards (a line freed and reused).
fn rate_per_s(row: &Row, earlier: &Table, secs: f64) -> Option<Vec<f64>> {
    let before = earlier.rows.iter().find(|r| r.id == row.id)?;
    if before.counts.len() != row.counts.len() || secs <= 0.0 {
        return None;
    }
    row.counts
        .iter()
        .zip(&before.counts)
        .map(|(&now, &then)| now.checked_sub(then).map(|d| d as f64 / secs))
        .collect()
}

fn entry(root: &Path, row: &Row, rate: Option<Vec<f64>>, functions: &[Function]) -> IrqEntry {
    let mut delivery = row.delivery();
    let mut trigger = row.trigger();
    let mut chip = row.chip.clone();
    let mut hwirq = row.hwirq.clone();
    let (mut affinity, mut effective, mut node) = (None, None, None);
    let mut devices: Vec<PciFunction> = Vec::new();
    if let Ok(n) = row.id.parse::<u32>() {
        let proc_irq = root.join("proc/irq").join(&row.id);
        affinity = read_trimmed(&proc_irq.join("smp_affinity_list"));
        effective = read_trimmed(&proc_irq.join("effective_affinity_list"));
        node = read_trimmed(&proc_irq.join("node")).and_then(|s| s.parse().ok());
        // /sys/kernel/irq (4.17+) knows the trigger for certain.
        let sys_irq = root.join("sys/kernel/irq").join(&row.id);
        match read_trimmed(&sys_irq.join("type")).as_deref() {
            Some("edge") => trigger = Some(Trigger::Edge),
            Some("level") => trigger = Some(Trigger::Level),
            _ => {}
        }
        if chip.is_none() {
            chip = read_trimmed(&sys_irq.join("chip_name"));
        }
        if hwirq.is_none() {
            hwirq = read_trimmed(&sys_irq.join("hwirq"));
        }
        for f in functions {
            if let Some(&(_, msix)) = f.msi_irqs.iter().find(|(irq, _)| *irq == n) {
                // sysfs says which of the two the vector is; the chip name often does not.
                if matches!(delivery, Delivery::Msi | Delivery::MsiX) {
                    delivery = if msix { Delivery::MsiX } else { Delivery::Msi };
                }
                devices.push(f.summary());
            } else if f.irq == Some(n)
                && f.msi_irqs.is_empty()
                && matches!(delivery, Delivery::IoApic | Delivery::XtPic)
            {
                devices.push(f.summary());
            }
        }
    }
    IrqEntry {
        irq: row.id.clone(),
        delivery,
        remapped: row.remapped(),
        trigger,
        chip,
        hwirq,
        flow: row.flow.clone(),
        actions: row.actions.clone(),
        description: row.description.clone(),
        devices,
        counts: row.counts.clone(),
        rate_per_s: rate,
        affinity,
        effective_affinity: effective,
        node,
    }
}

fn findings(
    root: &Path,
    irqs: &[IrqEntry],
    functions: &[Function],
    cpus: &[u32],
    have_rates: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    // Devices on legacy INTx that could use MSI.
    for e in irqs {
        if !matches!(e.delivery, Delivery::IoApic | Delivery::XtPic) || e.actions.is_empty() {
            continue;
        }
        for d in &e.devices {
            let f = functions.iter().find(|f| f.address == d.address);
            let capable = d.msi_capable || d.msix_table_size.is_some();
            if d.driver.is_none() || !capable || f.is_some_and(|f| !f.msi_irqs.is_empty()) {
                continue;
            }
            let what = match (d.msi_capable, d.msix_table_size) {
                (true, Some(n)) => format!("MSI and MSI-X ({n} vectors)"),
                (true, None) => "MSI".to_string(),
                (false, Some(n)) => format!("MSI-X ({n} vectors)"),
                (false, None) => unreachable!("capable"),
            };
            out.push(Finding {
                kind: "legacy-intx-on-msi-capable".into(),
                severity: Severity::Warning,
                message: format!(
                    "{} ({}) interrupts through {} IRQ {} by legacy INTx, but it has {what}. \
                     Each INTx interrupt takes a detour through the interrupt controller and, \
                     on a shared line, a status read per handler; MSI goes straight to the \
                     CPU (seed 000 measured 3x lower latency). Check the driver enables MSI and \
                     that the kernel is not booted with pci=nomsi.",
                    d.address,
                    d.driver.as_deref().unwrap_or("?"),
                    e.delivery.label(),
                    e.irq,
                ),
                irqs: vec![e.irq.clone()],
            });
        }
    }
    // Shared lines.
    for e in irqs {
        if e.delivery != Delivery::PerCpu && e.actions.len() > 1 {
            out.push(Finding {
                kind: "shared-line".into(),
                severity: Severity::Warning,
                message: format!(
                    "IRQ {} is shared by {}: every interrupt on it runs each handler in turn, \
                     and each reads its own device's status over the bus before the one that \
                     raised it is served.",
                    e.irq,
                    e.actions.join(", ")
                ),
                irqs: vec![e.irq.clone()],
            });
        }
    }
    if let Some(f) = concentration(irqs, cpus, have_rates) {
        out.push(f);
    }
    if let Some(pid) = find_process(root, "irqbalance") {
        out.push(Finding {
            kind: "irqbalance-running".into(),
            severity: Severity::Info,
            message: format!(
                "irqbalance is running (pid {pid}): it moves IRQ affinities periodically, so \
                 affinities set by hand can be undone. Stop it, or exclude the IRQs and CPUs \
                 you pin (--banirq, IRQBALANCE_BANNED_CPULIST)."
            ),
            irqs: Vec::new(),
        });
    }
    out
}

/// Device interrupt load concentrated on one CPU.
fn concentration(irqs: &[IrqEntry], cpus: &[u32], have_rates: bool) -> Option<Finding> {
    if cpus.len() < 2 {
        return None;
    }
    let mut per_cpu = vec![0.0f64; cpus.len()];
    let mut by_irq: Vec<(f64, &str, usize)> = Vec::new();
    for e in irqs.iter().filter(|e| e.delivery != Delivery::PerCpu) {
        let values: Vec<f64> = match (&e.rate_per_s, have_rates) {
            (Some(r), true) => r.clone(),
            (None, true) => continue,
            _ => e.counts.iter().map(|&c| c as f64).collect(),
        };
        if values.len() != cpus.len() {
            continue;
        }
        for (i, v) in values.iter().enumerate() {
            per_cpu[i] += v;
            if *v > 0.0 {
                by_irq.push((*v, &e.irq, i));
            }
        }
    }
    let total: f64 = per_cpu.iter().sum();
    let (busiest, load) = per_cpu
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let enough = if have_rates {
        total >= CONCENTRATION_MIN_RATE_PER_S
    } else {
        total >= CONCENTRATION_MIN_COUNT as f64
    };
    if !enough || load / total <= CONCENTRATION_SHARE {
        return None;
    }
    by_irq.retain(|(_, _, cpu)| *cpu == busiest);
    by_irq.sort_by(|a, b| b.0.total_cmp(&a.0));
    let top: Vec<String> = by_irq
        .iter()
        .take(3)
        .map(|(_, irq, _)| irq.to_string())
        .collect();
    let (unit, severity) = if have_rates {
        (
            format!("{} device interrupts/s", thousands(total)),
            Severity::Warning,
        )
    } else {
        (
            format!("{} device interrupts since boot", thousands(total)),
            Severity::Info,
        )
    };
    Some(Finding {
        kind: "load-on-one-cpu".into(),
        severity,
        message: format!(
            "CPU{} takes {:.0}% of {unit} (most from IRQ {}): its tasks see every one of them \
             as interference. Spread the busiest lines over other CPUs with smp_affinity, or \
             keep latency-critical work off CPU{}.",
            cpus[busiest],
            100.0 * load / total,
            top.join(", "),
            cpus[busiest]
        ),
        irqs: top,
    })
}

/// `112110.4` -> `112,110`.
fn thousands(v: f64) -> String {
    irqlab_stats::thousands(v.max(0.0).round() as u64)
}

/// The pid of a running process by its `comm`, scanning `root/proc`.
pub(crate) fn find_process(root: &Path, comm: &str) -> Option<u32> {
    let dir = std::fs::read_dir(root.join("proc")).ok()?;
    dir.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_string_lossy().parse().ok()?;
        (read_trimmed(&e.path().join("comm"))? == comm).then_some(pid)
    })
}
