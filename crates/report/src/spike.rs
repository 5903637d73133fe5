//! The account of a late timer wake-up: what ran on its CPU between the timer's expiry and the
//! measuring thread running (`irqlab measure timer --break-us`).

use crate::table::Table;
use crate::text::group;
use irqlab_stats::results::Spike;

/// Signed microseconds with one decimal: `-12.3`, `+0.8`.
fn us(ns: i64) -> String {
    format!("{:+.1}", ns as f64 / 1000.0)
}

/// The account of a latency spike.
pub fn spike_text(sp: &Spike) -> String {
    let mut out = format!(
        "\nStopped: wake-up {} on CPU {} was {} ns late",
        group(sp.loop_index),
        sp.cpu,
        group(sp.latency_ns)
    );
    match sp.irq_latency_ns {
        Some(irq) => out.push_str(&format!(
            " ({} ns until the timer interrupt ran its callback, {} ns from there to the thread)\n",
            group(irq),
            group(sp.latency_ns.saturating_sub(irq))
        )),
        None => out.push_str(" (the timer callback is not in the trace)\n"),
    }
    if sp.events.is_empty() {
        out.push_str("No trace of what ran before it (tracing was off or unavailable).\n");
        return out;
    }
    out.push_str("What ran on that CPU, in us from the timer's expiry:\n");
    let mut t = Table::new(&["time (us)", "event", "ran for (us)"]);
    for e in &sp.events {
        t.row(vec![
            us(e.offset_ns),
            e.event.clone(),
            e.duration_ns
                .map_or(String::new(), |d| format!("{:.1}", d as f64 / 1000.0)),
        ]);
    }
    out.push_str(&t.render());
    out
}
