//! Turning a run's raw outcome into the shared result model ([`irqlab_stats::results`]).

use crate::hw::pcie::{Dir, TlpKind};
use crate::probes::analyzer::TraceRecord;
use crate::result::{Measured, RunResult, Shown};
use crate::scenario::Scenario;
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

/// The range of box widths (bus-clock quanta) the report looks for in a counting instrument's histogram: 40 to
/// 400 ns, from a 25 MHz to a 2.5 MHz bus clock (ISA's 8.33 MHz SYSCLK among them).
const STEPS_SEARCH_NS: (f64, f64) = (40.0, 400.0);

/// The header's name for the run's random seed: "seed" alone would read as a source's number
/// under a title such as "Source 002, ..." (`seed: 2`).
pub const SEED_KEY: &str = "random seed";

/// The report of one run of `sim` with `seed`: its header names the scenario's file first, so a
/// copy edited by hand (`irqlab show NAME > my.toml`) is told from the shipped scenario.
pub fn run_report(sim: &Scenario, seed: u64, result: &RunResult) -> RunReport {
    let mut config = vec![("scenario".to_string(), sim.path().display().to_string())];
    config.extend(sim.describe());
    config.push((SEED_KEY.into(), seed.to_string()));
    if let Some(c) = &result.counts {
        let (lo, hi) = STEPS_SEARCH_NS;
        let quantum = irqlab_stats::boxwidth::box_width(&c.values, c.count_ns, lo, hi);
        config.push((
            "histogram box width".into(),
            quantum.map_or("none found".into(), |f| {
                format!(
                    "{:.1} ns ({:.2} MHz; {} edges, {:.1} noise sigmas deep)",
                    f.width_ns,
                    1e3 / f.width_ns,
                    f.edges,
                    f.depth_sigmas
                )
            }),
        ));
    }
    RunReport {
        source: sim.path().display().to_string(),
        title: sim.title().to_string(),
        config,
        metrics: shown(result)
            .map(|m| Metric {
                phase: m.phase.clone(),
                ..Metric::new(&m.name, &m.description, m.histogram.summary())
            })
            .collect(),
        counters: result
            .counters
            .iter()
            .filter(|c| c.shown == Shown::Always || c.value > 0)
            .map(|c| Counter::new(&c.name, c.value))
            .collect(),
        trace: trace_rows(&result.trace),
        spike: None,
        histograms: histograms(result, None),
        series: result
            .series
            .iter()
            .map(|(metric, s)| NamedSeries {
                metric: metric.clone(),
                run: None,
                series: s.clone(),
            })
            .collect(),
        warnings: sim.warnings(),
    }
}

/// The metrics a report shows: all but a workload phase in which no sample fell.
fn shown(result: &RunResult) -> impl Iterator<Item = &Measured> {
    result
        .metrics
        .iter()
        .filter(|m| m.phase.is_none() || !m.histogram.is_empty())
}

/// The run's distributions, labelled with `run` (a run id in a validation report).
pub fn histograms(result: &RunResult, run: Option<&str>) -> Vec<HistogramData> {
    shown(result)
        .map(|m| HistogramData {
            run: run.map(str::to_string),
            phase: m.phase.clone(),
            quantum_ns: m.quantum_ns,
            ..HistogramData::of(&m.name, &m.histogram)
        })
        .collect()
}
