//! Turning a run's raw outcome into the shared result model ([`irqlab_stats::results`]).

use crate::hw::pcie::{Dir, TlpKind};
use crate::probes::analyzer::TraceRecord;
use crate::scenario::{RunResult, Scenario};
use irqlab_stats::results::{Counter, HistogramData, Metric, RunReport, TraceRow, SCHEMA_VERSION};

/// Printable rows for analyzer records, with time relative to the first.
pub fn trace_rows(records: &[TraceRecord]) -> Vec<TraceRow> {
    let t0 = records.first().map_or(0, |r| r.time_ps);
    records
        .iter()
        .map(|r| {
            let t = &r.tlp;
            let has_addr = matches!(
                t.kind,
                TlpKind::MemRead | TlpKind::MemWrite | TlpKind::IoRead | TlpKind::IoWrite
            );
            TraceRow {
                packet: r.packet,
                time_ns: (r.time_ps - t0) as f64 / 1000.0,
                direction: match r.dir {
                    Dir::Up => "up".into(),
                    Dir::Down => "down".into(),
                },
                tlp_type: t.type_name(),
                requester: match t.kind {
                    TlpKind::Cpl | TlpKind::CplD => t.completer.to_string(),
                    _ => t.requester.to_string(),
                },
                tag: t.tag,
                address: has_addr.then_some(t.addr),
                payload: (t.payload_bytes() > 0).then_some(t.data),
            }
        })
        .collect()
}

/// The report of one run of `scenario`.
/// Settings the run could not honour.
fn warnings(scenario: &Scenario) -> Vec<String> {
    let mut w = Vec::new();
    let tick = scenario.kernel.tick.as_ref().is_some_and(|t| t.hz > 0);
    if tick && scenario.file.delivery == crate::kernel::Delivery::Xtpic {
        w.push(
            "kernel.tick.hz is not modelled in XT-PIC mode (the tick comes from the PIT on IRQ 0 \
             there): this run has no tick"
                .to_string(),
        );
    }
    w
}

pub fn run_report(scenario: &Scenario, seed: u64, result: &RunResult) -> RunReport {
    let c = &result.counters;
    let mut counters = vec![
        ("interrupts_raised", c.interrupts_generated),
        ("samples_completed", result.tasklet.count()),
        ("samples_overlapped_dropped", c.overlapped_samples),
        ("triggers_held_for_previous", c.held_triggers),
        ("unhandled_interrupts", c.unhandled_interrupts),
        ("spurious_8259_interrupts", c.spurious_interrupts),
        ("cpu_port_ios", c.port_ios),
        ("cpu_interrupt_acknowledges", c.interrupt_acknowledges),
        ("cpu_mmio_reads", c.mmio_reads),
        ("tlps_on_device_link", c.packets_on_link),
        ("events_simulated", c.events),
        ("simulated_time_us", c.simulated_ps / 1_000_000),
    ];
    if c.ticks > 0 {
        counters.insert(9, ("local_timer_ticks", c.ticks));
    }
    RunReport {
        schema_version: SCHEMA_VERSION,
        source: scenario.path.display().to_string(),
        title: scenario.file.title.clone(),
        config: vec![
            (
                "platform".into(),
                format!(
                    "{} ({})",
                    scenario.platform.name,
                    scenario.platform_path.display()
                ),
            ),
            ("kernel".into(), scenario.kernel.name.clone()),
            (
                "delivery".into(),
                format!("{:?}", scenario.file.delivery).to_lowercase(),
            ),
            ("seed".into(), seed.to_string()),
        ],
        metrics: vec![
            Metric {
                name: "isr_latency".into(),
                description:
                    "interrupt TLP on the device's link to the ISR's signature write on it".into(),
                summary: result.isr.summary(),
            },
            Metric {
                name: "tasklet_latency".into(),
                description: "interrupt TLP to the tasklet's signature write".into(),
                summary: result.tasklet.summary(),
            },
        ],
        counters: counters
            .iter()
            .map(|(n, v)| Counter {
                name: (*n).into(),
                value: *v,
            })
            .collect(),
        trace: trace_rows(&result.trace),
        spike: None,
        histograms: vec![
            HistogramData::of("isr_latency", &result.isr),
            HistogramData::of("tasklet_latency", &result.tasklet),
        ],
        warnings: warnings(scenario),
    }
}
