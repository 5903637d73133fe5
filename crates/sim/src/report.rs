//! Turning a run's raw outcome into the shared result model ([`irqlab_stats::results`]).

use crate::hw::pcie::{Dir, TlpKind};
use crate::pps::{PpsResult, PpsScenario};
use crate::probes::analyzer::TraceRecord;
use crate::scenario::{RunResult, Scenario};
use irqlab_stats::results::{Counter, HistogramData, Metric, NamedSeries, RunReport, TraceRow};

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
    if !tick && scenario.kernel.idle.is_some() {
        w.push(
            "kernel.tick.hz is 0 with a cpuidle kernel: with no timer at all the idle governor \
             expects endless idle periods, and after any irregular one it picks the deepest state"
                .to_string(),
        );
    }
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
    let has_tasklet = result.has_tasklet;
    let mut counters = vec![
        ("interrupts_raised", c.interrupts_generated),
        (
            "samples_completed",
            result
                .tasklet
                .count()
                .max(result.round_trip.count())
                .max(if has_tasklet { 0 } else { result.isr.count() }),
        ),
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
    if scenario.file.warmup_samples > 0 {
        counters.insert(
            1,
            ("warmup_samples_not_recorded", scenario.file.warmup_samples),
        );
    }
    if !has_tasklet {
        counters.retain(|(n, _)| *n != "samples_overlapped_dropped");
    }
    if c.smis > 0 {
        counters.push(("smis", c.smis));
    }
    let idle: Vec<(String, u64)> = c
        .idle_entries
        .iter()
        .map(|(name, n)| (format!("idle_entries_{}", name.to_lowercase()), *n))
        .collect();
    let link_replays = c.link_replays;
    let dma = c.dma_requests;
    RunReport {
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
        metrics: metrics(result, has_tasklet),
        counters: counters
            .iter()
            .map(|(n, v)| ((*n).to_string(), *v))
            .chain(idle.into_iter().filter(|(_, n)| *n > 0))
            .chain((link_replays > 0).then(|| ("link_replays".to_string(), link_replays)))
            .chain((dma > 0).then(|| ("dma_requests".to_string(), dma)))
            .map(|(name, value)| Counter::new(&name, value))
            .collect(),
        trace: trace_rows(&result.trace),
        spike: None,
        histograms: histograms(result, has_tasklet, None),
        series: result
            .series
            .iter()
            .map(|(metric, s)| NamedSeries {
                metric: metric.to_string(),
                run: None,
                series: s.clone(),
            })
            .collect(),
        warnings: warnings(scenario),
    }
}

/// The latencies a run measured: the card's own round-trip counter if it has one, the
/// analyzer's ISR latency, and the tasklet latency for a driver with a tasklet.
/// A measured latency: its name, what it spans, and its distribution.
type Measured<'a> = (
    &'static str,
    &'static str,
    &'a irqlab_stats::LatencyHistogram,
);

fn measured(result: &RunResult, has_tasklet: bool) -> Vec<Measured<'_>> {
    let mut m = Vec::new();
    if !result.round_trip.is_empty() {
        m.push((
            "round_trip",
            "the card's counter: MSI raised to the ISR's write reaching its register (4 ns \
             counts at 250 MHz, the register access included)",
            &result.round_trip,
        ));
    }
    m.push((
        "isr_latency",
        "interrupt TLP on the device's link to the ISR's write on it",
        &result.isr,
    ));
    if has_tasklet {
        m.push((
            "tasklet_latency",
            "interrupt TLP to the tasklet's signature write",
            &result.tasklet,
        ));
    }
    m
}

fn metrics(result: &RunResult, has_tasklet: bool) -> Vec<Metric> {
    measured(result, has_tasklet)
        .into_iter()
        .map(|(name, description, h)| Metric::new(name, description, h.summary()))
        .collect()
}

/// The run's distributions, labelled with `run` (a run id in a validation report).
pub fn histograms(result: &RunResult, has_tasklet: bool, run: Option<&str>) -> Vec<HistogramData> {
    if let Some(p) = &result.pps {
        return pps_histograms(p, run);
    }
    measured(result, has_tasklet)
        .into_iter()
        .map(|(name, _, h)| HistogramData {
            run: run.map(str::to_string),
            ..HistogramData::of(name, h)
        })
        .collect()
}

/// A seed-004 run's distributions: all samples, then each workload phase, in counter counts.
fn pps_histograms(p: &PpsResult, run: Option<&str>) -> Vec<HistogramData> {
    std::iter::once((None, &p.latency))
        .chain(p.phases.iter().map(|(n, h)| (Some(n.clone()), h)))
        .filter(|(_, h)| !h.is_empty())
        .map(|(phase, h)| HistogramData {
            run: run.map(str::to_string),
            phase,
            quantum_ns: Some(p.count_ns),
            ..HistogramData::of("pps_latency", h)
        })
        .collect()
}

/// The report of a seed-004 run.
pub fn pps_run_report(s: &PpsScenario, seed: u64, p: &PpsResult) -> RunReport {
    let fence = irqlab_stats::fence::step_period(&p.counts, p.count_ns, 40.0, 400.0);
    let mut metrics = vec![Metric::new(
        "pps_latency",
        "pulse edge (the card's latch) to the driver's timestamp read reaching the card, in \
         90.112 MHz counts",
        p.latency.summary(),
    )];
    for (name, h) in &p.phases {
        if !h.is_empty() {
            metrics.push(Metric {
                phase: Some(name.clone()),
                ..Metric::new(
                    "pps_latency",
                    &format!("the samples taken during the '{name}' workload"),
                    h.summary(),
                )
            });
        }
    }
    RunReport {
        source: s.path.display().to_string(),
        title: s.file.title.clone(),
        config: vec![
            (
                "platform".into(),
                format!("{} ({})", s.platform.name, s.platform_path.display()),
            ),
            ("kernel".into(), s.kernel.name.clone()),
            ("seed".into(), seed.to_string()),
            (
                "histogram steps".into(),
                fence.map_or("none found".into(), |f| {
                    format!(
                        "every {:.1} ns ({:.2} MHz; {} edges, agreement {:.2})",
                        f.period_ns,
                        1e3 / f.period_ns,
                        f.edges,
                        f.kappa
                    )
                }),
            ),
        ],
        metrics,
        counters: p
            .counters
            .iter()
            .map(|(name, value)| Counter::new(name, *value))
            .collect(),
        trace: Vec::new(),
        spike: None,
        histograms: pps_histograms(p, None),
        warnings: Vec::new(),
        series: vec![NamedSeries {
            metric: "pps_latency".into(),
            run: None,
            series: p.series.clone(),
        }],
    }
}
