//! The account of a late timer wake-up (`irqlab measure timer`): the wake-up that stopped a run
//! above `--break-us`, or the worst of a traced run. IRQ latency against thread latency, where
//! the latency went (as `rtla timerlat --auto` analyses it) with its largest cause, and what ran
//! on that CPU between the timer's expiry and the measuring thread running.

use crate::table::{group, Table};
use irqlab_stats::results::{LatencyCause, Spike, SpikeKind, WakeupAnalysis};

/// Signed microseconds with one decimal: `-12.3`, `+0.8`.
fn us(ns: i64) -> String {
    format!("{:+.1}", ns as f64 / 1000.0)
}

/// How a cause reads in the table.
pub fn cause_label(c: LatencyCause) -> &'static str {
    match c {
        LatencyCause::IrqDelivery => "IRQ delivery",
        LatencyCause::TimerInterrupt => "timer interrupt",
        LatencyCause::HardIrq => "hard IRQ",
        LatencyCause::Softirq => "softirq",
        LatencyCause::Task => "another task",
        LatencyCause::IdleExit => "idle exit",
        LatencyCause::Switch => "switch",
        LatencyCause::Unattributed => "unattributed",
    }
}

fn share(part_ns: u64, total_ns: u64) -> String {
    if total_ns == 0 {
        return "-".into();
    }
    format!("{:.1}%", part_ns as f64 * 100.0 / total_ns as f64)
}

/// The account of a late wake-up.
pub fn spike_text(sp: &Spike) -> String {
    let mut out = match sp.kind {
        SpikeKind::Break => format!(
            "\nStopped: wake-up {} on CPU {} was {} ns late",
            group(sp.loop_index),
            sp.cpu,
            group(sp.latency_ns)
        ),
        SpikeKind::Worst => format!(
            "\nWorst wake-up: wake-up {} on CPU {} was {} ns late",
            group(sp.loop_index),
            sp.cpu,
            group(sp.latency_ns)
        ),
    };
    match sp.irq_latency_ns {
        Some(irq) => out.push_str(&format!(
            " ({} ns until the timer interrupt ran its callback, {} ns from there to the thread)\n",
            group(irq),
            group(sp.latency_ns.saturating_sub(irq))
        )),
        None => out.push_str(" (the timer callback is not in the trace)\n"),
    }
    if let Some(a) = &sp.analysis {
        out.push_str(&analysis_text(a, sp.latency_ns));
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

/// Where a wake-up's latency went, stretch by stretch, and its largest cause.
fn analysis_text(a: &WakeupAnalysis, latency_ns: u64) -> String {
    let idle = match a.from_idle {
        Some(true) => " (the CPU was idle)",
        Some(false) => " (the CPU was busy)",
        None => "",
    };
    let mut out = format!("Where its latency went, in us from the timer's expiry{idle}:\n");
    let mut t = Table::new(&["from (us)", "for (us)", "share", "cause", "what"]);
    for p in &a.parts {
        t.row(vec![
            us(p.offset_ns as i64),
            format!("{:.1}", p.duration_ns as f64 / 1000.0),
            share(p.duration_ns, latency_ns),
            cause_label(p.cause).into(),
            p.what.clone(),
        ]);
    }
    out.push_str(&t.render());
    if let Some(c) = &a.largest {
        out.push_str(&format!(
            "Largest cause: {}, {} ({:.1} us, {} of {:.1} us)\n",
            cause_label(c.cause),
            c.what,
            c.duration_ns as f64 / 1000.0,
            share(c.duration_ns, latency_ns),
            latency_ns as f64 / 1000.0
        ));
    }
    for n in &a.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_stats::results::{CauseTotal, LatencyPart, SpikeEvent};

    fn part(offset_ns: u64, duration_ns: u64, cause: LatencyCause, what: &str) -> LatencyPart {
        LatencyPart {
            offset_ns,
            duration_ns,
            cause,
            what: what.into(),
        }
    }

    #[test]
    fn the_worst_wakeup_reads_with_its_analysis_and_its_events() {
        let sp = Spike {
            kind: SpikeKind::Worst,
            cpu: 1,
            loop_index: 4321,
            latency_ns: 24_000,
            irq_latency_ns: Some(11_000),
            events: vec![
                SpikeEvent {
                    offset_ns: 11_000,
                    event: "timer callback wakes the measuring thread".into(),
                    duration_ns: None,
                },
                SpikeEvent {
                    offset_ns: 16_000,
                    event: "unattributed: 8.0 us (idle exit)".into(),
                    duration_ns: Some(8_000),
                },
            ],
            analysis: Some(WakeupAnalysis {
                expiry_mono_ns: 1_000_000,
                from_idle: Some(true),
                parts: vec![
                    part(0, 11_000, LatencyCause::IrqDelivery, "delivery"),
                    part(
                        11_000,
                        5_000,
                        LatencyCause::TimerInterrupt,
                        "after the callback",
                    ),
                    part(16_000, 8_000, LatencyCause::Unattributed, "idle exit"),
                ],
                largest: Some(CauseTotal {
                    cause: LatencyCause::IrqDelivery,
                    what: "delivery".into(),
                    duration_ns: 11_000,
                }),
                notes: vec!["a note".into()],
            }),
        };
        let text = spike_text(&sp);
        assert!(
            text.contains("Worst wake-up: wake-up 4,321 on CPU 1 was 24,000 ns late (11,000 ns"),
            "{text}"
        );
        assert!(text.contains("(the CPU was idle)"), "{text}");
        assert!(text.contains("unattributed     idle exit"), "{text}");
        assert!(text.contains("33.3%"), "{text}");
        assert!(
            text.contains("Largest cause: IRQ delivery, delivery (11.0 us, 45.8% of 24.0 us)"),
            "{text}"
        );
        assert!(text.contains("note: a note"), "{text}");
        assert!(text.contains("What ran on that CPU"), "{text}");
        assert!(text.contains("unattributed: 8.0 us (idle exit)"), "{text}");
    }

    #[test]
    fn a_break_without_trace_says_so() {
        let sp = Spike {
            kind: SpikeKind::Break,
            cpu: 0,
            loop_index: 0,
            latency_ns: 5_000,
            irq_latency_ns: None,
            events: vec![],
            analysis: None,
        };
        let text = spike_text(&sp);
        assert!(text.contains("Stopped: wake-up 0 on CPU 0 was 5,000 ns late"));
        assert!(text.contains("(the timer callback is not in the trace)"));
        assert!(text.contains("No trace of what ran before it"));
        assert!(!text.contains("Where its latency went"));
    }
}
