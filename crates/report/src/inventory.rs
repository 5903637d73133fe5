//! `irqlab host`: the inventory as a table and its findings.

use crate::table::{group, Table};
use irqlab_stats::inventory::{Delivery, Inventory, IrqEntry, Severity, Trigger};

fn rate(v: f64) -> String {
    if v >= 100.0 || v == 0.0 {
        group(v.round() as u64)
    } else {
        format!("{v:.1}")
    }
}

fn chip_cell(e: &IrqEntry) -> String {
    let chip = e.chip.clone().unwrap_or_default();
    match (&e.hwirq, &e.flow) {
        (Some(h), Some(f)) => format!("{chip} {h}-{f}"),
        (Some(h), None) => format!("{chip} {h}"),
        (None, Some(f)) => format!("{chip}-{f}"),
        (None, None) => chip,
    }
}

fn device_cell(e: &IrqEntry) -> String {
    e.devices
        .iter()
        .map(|d| match &d.driver {
            Some(drv) => format!("{} ({drv})", d.address),
            None => d.address.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The inventory for a terminal.
pub fn inventory_text(inv: &Inventory) -> String {
    let mut out = String::new();
    let rates = inv.interval_s.is_some();
    out.push_str(&format!(
        "Interrupts on {}, CPUs {}: {}\n\n",
        inv.kernel.as_deref().unwrap_or("this host"),
        irqlab_stats::cpus::format_cpu_list(&inv.cpus),
        match inv.interval_s {
            Some(s) => format!("rates per second over {s:.1} s"),
            None => "counts since boot (use --interval 2s for rates)".into(),
        }
    ));
    let unit = if rates { "/s" } else { "" };
    let cpu_heads: Vec<String> = inv.cpus.iter().map(|c| format!("CPU{c}{unit}")).collect();
    let mut heads: Vec<&str> = vec!["IRQ", "delivery", "trigger", "chip", "device (driver)"];
    heads.extend(cpu_heads.iter().map(String::as_str));
    heads.extend(["affinity", "effective", "actions"]);
    let mut t = Table::new(&heads);
    let mut hidden = 0;
    for e in &inv.irqs {
        let values: Vec<String> = match (&e.rate_per_s, rates) {
            (Some(r), true) => r.iter().map(|&v| rate(v)).collect(),
            (None, true) => e.counts.iter().map(|_| "-".to_string()).collect(),
            _ => e.counts.iter().map(|&c| group(c)).collect(),
        };
        if e.delivery == Delivery::PerCpu && e.counts.iter().all(|&c| c == 0) {
            hidden += 1;
            continue;
        }
        let mut cells = vec![
            e.irq.clone(),
            format!(
                "{}{}",
                e.delivery.label(),
                if e.remapped { " (IR)" } else { "" }
            ),
            match e.trigger {
                Some(Trigger::Edge) => "edge".into(),
                Some(Trigger::Level) => "level".into(),
                None => String::new(),
            },
            chip_cell(e),
            device_cell(e),
        ];
        // A single total (ERR, MIS) goes in the first CPU column.
        for i in 0..inv.cpus.len() {
            cells.push(values.get(i).cloned().unwrap_or_default());
        }
        cells.push(e.affinity.clone().unwrap_or_default());
        cells.push(e.effective_affinity.clone().unwrap_or_default());
        cells.push(if e.actions.is_empty() {
            e.description.clone().unwrap_or_default()
        } else {
            e.actions.join(", ")
        });
        t.row(cells);
    }
    out.push_str(&t.render());
    if hidden > 0 {
        out.push_str(&format!(
            "({hidden} per-CPU classes with no interrupts not shown; --json has every row)\n"
        ));
    }
    out.push('\n');
    if inv.findings.is_empty() {
        out.push_str("findings: none\n");
    } else {
        out.push_str("findings:\n");
        for f in &inv.findings {
            let sev = match f.severity {
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            out.push_str(&format!("  {sev}: [{}] {}\n", f.kind, f.message));
        }
    }
    out
}
