//! Terminal renderings of runs and validations.

use crate::table::Table;
use irqlab_stats::results::{RunReport, ValidationReport, Verdict};

/// Thousands separators for ns figures.
pub fn group(n: u64) -> String {
    irqlab_stats::thousands(n)
}

pub fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), group)
}

/// A run: configuration, latency summary (ns), counters, and the analyzer trace if any.
pub fn run_text(r: &RunReport) -> String {
    let mut out = format!("{}\n", r.title);
    for (k, v) in &r.config {
        out.push_str(&format!("  {k}: {v}\n"));
    }
    out.push('\n');
    let mut t = Table::new(&[
        "metric", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "max", "(ns)",
    ]);
    for m in &r.metrics {
        let s = &m.summary;
        t.row(vec![
            m.label(),
            group(s.count),
            opt(s.min_ns),
            s.mean_ns.map_or("-".into(), |m| group(m.round() as u64)),
            opt(s.p50_ns),
            opt(s.p90_ns),
            opt(s.p99_ns),
            opt(s.p999_ns),
            opt(s.max_ns),
            String::new(),
        ]);
    }
    out.push_str(&t.render());
    if !r.counters.is_empty() {
        out.push('\n');
        let mut c = Table::new(&["counter", "value"]);
        for k in &r.counters {
            c.row(vec![k.label(), group(k.value)]);
        }
        out.push_str(&c.render());
    }
    if !r.trace.is_empty() {
        out.push_str(&format!(
            "\nAnalyzer trace on the device's link (first {} packets; time of the first symbol):\n",
            r.trace.len()
        ));
        out.push_str(&trace_text(r));
    }
    if let Some(sp) = &r.spike {
        out.push_str(&crate::spike::spike_text(sp));
    }
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// The trace in the columns of seed 000's Figure 7.
pub fn trace_text(r: &RunReport) -> String {
    let mut t = Table::new(&[
        "packet",
        "time (ns)",
        "dir",
        "TLP",
        "requester",
        "tag",
        "address",
        "payload",
    ]);
    for row in &r.trace {
        t.row(vec![
            row.packet.to_string(),
            format!("{:.1}", row.time_ns),
            row.direction.clone(),
            row.tlp_type.clone(),
            row.requester.clone(),
            row.tag.to_string(),
            row.address.map_or("-".into(), |a| format!("{a:08X}")),
            row.payload.map_or("-".into(), |p| format!("0x{p:08X}")),
        ]);
    }
    t.render()
}

/// The validation table; failing rows are followed by what was compared.
pub fn validation_text(v: &ValidationReport) -> String {
    let mut t = Table::new(&[
        "experiment",
        "row",
        "metric",
        "published",
        "simulated",
        "tolerance",
        "verdict",
    ]);
    for r in &v.rows {
        t.row(vec![
            r.experiment.clone(),
            r.id.clone(),
            r.metric.clone(),
            r.published.clone(),
            r.simulated.clone(),
            r.tolerance.clone(),
            match r.verdict {
                Verdict::Pass => "pass".into(),
                Verdict::Fail => "FAIL".into(),
            },
        ]);
    }
    let mut out = t.render();
    for r in v.rows.iter().filter(|r| r.verdict == Verdict::Fail) {
        out.push_str(&format!(
            "\n{} failed: {}\n  source: {}\n",
            r.id, r.detail, r.source
        ));
    }
    for n in &v.notes {
        out.push_str(&format!("\nnote: {n}\n"));
    }
    out.push_str(&format!("\n{} of {} rows pass\n", v.passed(), v.rows.len()));
    out
}
