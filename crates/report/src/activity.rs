//! `irqlab measure irqs`: hard IRQs, softirqs and tasklets as tables.

use crate::table::{group, opt, Table};
use irqlab_stats::activity::IrqActivityReport;

fn pct(v: f64) -> String {
    format!("{v:.2}%")
}

fn per_s(v: f64) -> String {
    if v >= 100.0 {
        group(v.round() as u64)
    } else {
        format!("{v:.1}")
    }
}

/// The measurement for a terminal.
pub fn irq_activity_text(r: &IrqActivityReport) -> String {
    let lost: u64 = r.lost_events.iter().sum();
    let mut out = format!(
        "Interrupt activity on {} over {:.1} s{}: {} trace events{}\n\n",
        r.kernel.as_deref().unwrap_or("this host"),
        r.duration_s,
        r.stopped_by
            .as_ref()
            .map_or(String::new(), |s| format!(" (stopped early by {s})")),
        group(r.events),
        if lost > 0 {
            format!(
                ", {} LOST (counts are low; rerun with a larger --buffer-kb)",
                group(lost)
            )
        } else {
            ", none lost".into()
        }
    );
    out.push_str("Hard IRQ handlers (entry to exit)\n");
    let mut t = Table::new(&[
        "IRQ", "CPU", "name", "count", "rate/s", "CPU time", "min (ns)", "mean", "p50", "p99",
        "max (ns)",
    ]);
    for i in &r.irqs {
        let s = &i.handler;
        t.row(vec![
            i.irq.clone(),
            i.cpu.to_string(),
            i.name.clone(),
            group(i.count),
            per_s(i.rate_per_s),
            pct(i.cpu_percent),
            opt(s.min_ns),
            s.mean_ns.map_or("-".into(), |m| group(m.round() as u64)),
            opt(s.p50_ns),
            opt(s.p99_ns),
            opt(s.max_ns),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "(none)\n".into()
    } else {
        t.render()
    });
    out.push_str("\nSoftirqs (delay: first raise to entry; run: entry to exit)\n");
    let mut t = Table::new(&[
        "vector",
        "CPU",
        "count",
        "rate/s",
        "CPU time",
        "delay p50 (ns)",
        "delay p99",
        "delay max",
        "run p50 (ns)",
        "run p99",
        "run max",
    ]);
    for s in &r.softirqs {
        t.row(vec![
            format!("{} {}", s.vector, s.name),
            s.cpu.to_string(),
            group(s.count),
            per_s(s.rate_per_s),
            pct(s.cpu_percent),
            opt(s.raise_to_entry.p50_ns),
            opt(s.raise_to_entry.p99_ns),
            opt(s.raise_to_entry.max_ns),
            opt(s.runtime.p50_ns),
            opt(s.runtime.p99_ns),
            opt(s.runtime.max_ns),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "(none)\n".into()
    } else {
        t.render()
    });
    if !r.tasklets.is_empty() {
        out.push_str("\nTasklets (run time)\n");
        let mut t = Table::new(&["function", "CPU", "count", "p50 (ns)", "p99", "max (ns)"]);
        for k in &r.tasklets {
            t.row(vec![
                k.function.clone(),
                k.cpu.to_string(),
                group(k.count),
                opt(k.runtime.p50_ns),
                opt(k.runtime.p99_ns),
                opt(k.runtime.max_ns),
            ]);
        }
        out.push_str(&t.render());
    }
    if r.unmatched > 0 {
        out.push_str(&format!(
            "\n{} exit events had no entry (entered before the start, or lost)\n",
            group(r.unmatched)
        ));
    }
    out
}
