//! The result data model every renderer reads (terminal tables, JSON, plots): one simulated or
//! measured run, and a validation report. Pure data, serde-serializable. What a run is (a metric,
//! its CPU, its workload phase, the run it belongs to) is in typed fields, never folded into a
//! name; the JSON envelope around a result (`irqlab-report`'s `json` module) carries the schema
//! version and how the result was made.

#![allow(missing_docs)] // field names carry units and meaning; the structs are documented

use crate::Summary;
use serde::{Deserialize, Serialize};

/// The machine a measurement ran on, as the JSON envelope records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `uname -v`: the build, with `PREEMPT_RT` or `PREEMPT_DYNAMIC` where the kernel has them.
    pub kernel_version: Option<String>,
    /// `uname -m`.
    pub machine: Option<String>,
    /// `model name` of `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    pub cpus_online: Vec<u32>,
    /// Whether the CPU says it runs under a hypervisor (x86's `hypervisor` flag); `None` where
    /// the architecture does not say.
    pub virtualized: Option<bool>,
    /// The hypervisor or platform vendor, where the firmware names it (DMI, `/sys/hypervisor`).
    pub hypervisor: Option<String>,
}

/// One latency metric of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Machine name, e.g. `isr_latency`, `thread_latency`.
    pub name: String,
    /// The CPU it was measured on, for per-CPU metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// The workload phase its samples were taken in (seed 004's `idle`, `make-world`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// What it measures, for people.
    pub description: String,
    pub summary: Summary,
}

impl Metric {
    /// A metric of the whole run.
    pub fn new(name: &str, description: &str, summary: Summary) -> Self {
        Metric {
            name: name.into(),
            cpu: None,
            phase: None,
            description: description.into(),
            summary,
        }
    }

    /// How tables and legends name it: `thread_latency[cpu0]`, `pps_latency[idle]`.
    pub fn label(&self) -> String {
        label(&self.name, self.cpu, self.phase.as_deref())
    }
}

/// `name`, then the CPU or phase in brackets.
fn label(name: &str, cpu: Option<u32>, phase: Option<&str>) -> String {
    match (cpu, phase) {
        (Some(c), Some(p)) => format!("{name}[cpu{c} {p}]"),
        (Some(c), None) => format!("{name}[cpu{c}]"),
        (None, Some(p)) => format!("{name}[{p}]"),
        (None, None) => name.to_string(),
    }
}

/// One packet seen by a bus analyzer, already in printable terms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    pub packet: u64,
    /// Time of the packet's first symbol, in ns since the first row shown.
    pub time_ns: f64,
    /// "up" (toward the root complex) or "down".
    pub direction: String,
    /// TLP type as an analyzer prints it: `MRd(32)`, `CplD`, `Msg Assert_INTA`.
    pub tlp_type: String,
    pub requester: String,
    pub tag: u8,
    pub address: Option<u64>,
    pub payload: Option<u32>,
}

/// A named counter of a run (interrupts raised, spurious interrupts, events simulated, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counter {
    pub name: String,
    /// The CPU it counts on, for per-CPU counters (`wakeups`, `overruns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    pub value: u64,
}

impl Counter {
    /// A counter of the whole run.
    pub fn new(name: &str, value: u64) -> Self {
        Counter {
            name: name.into(),
            cpu: None,
            value,
        }
    }

    /// How tables name it: `wakeups[cpu0]`.
    pub fn label(&self) -> String {
        label(&self.name, self.cpu, None)
    }
}

/// A metric's distribution for plots: the histogram's recorded values (to its resolution,
/// 0.1%) with their counts, in ascending order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramData {
    pub metric: String,
    /// The run it belongs to: a run id in a validation (`ws-msi`), a file in a comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// (value ns, count).
    pub values: Vec<(u64, u64)>,
    /// Values above the histogram's range (10 s).
    pub overflows: u64,
    /// The instrument's resolution when it is not a whole number of ns (seed 004's 90.112 MHz
    /// counter: 11.1 ns), so plots bin in whole counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum_ns: Option<f64>,
}

impl HistogramData {
    /// From a histogram.
    pub fn of(metric: &str, h: &crate::LatencyHistogram) -> Self {
        HistogramData {
            metric: metric.to_string(),
            run: None,
            cpu: None,
            phase: None,
            values: h.iter_buckets(1).collect(),
            overflows: h.overflows(),
            quantum_ns: None,
        }
    }

    /// How legends name it: the run, then the metric with its CPU or phase
    /// (`ws-msi isr_latency`, `thread_latency[cpu1]`).
    pub fn label(&self) -> String {
        let m = label(&self.metric, self.cpu, self.phase.as_deref());
        match &self.run {
            Some(r) => format!("{r} {m}"),
            None => m,
        }
    }
}

/// One event in the account of a late wake-up: what ran on the CPU around it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpikeEvent {
    /// Time relative to the timer's expiry (negative: before it), in ns.
    pub offset_ns: i64,
    /// `hard IRQ 36 virtio1-req.0`, `softirq 3 NET_RX`, `switch bash:812 -> irqlab-timer0:901`,
    /// `unattributed: 9.5 us (...)` for a stretch no event explains.
    pub event: String,
    /// For handlers and softirqs, how long they ran; for an unattributed stretch, its length.
    pub duration_ns: Option<u64>,
}

/// Which late wake-up a [`Spike`] is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpikeKind {
    /// The wake-up above `--break-us` that stopped the run.
    #[default]
    Break,
    /// The latest wake-up of a traced run that ran to its end.
    Worst,
}

/// A late wake-up and what ran on its CPU before it: the one that stopped a run above
/// `--break-us`, or the worst of a traced run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spike {
    /// Files written before `kind` existed hold breaks.
    #[serde(default)]
    pub kind: SpikeKind,
    pub cpu: u32,
    /// The wake-up's index in its thread's run (from 0).
    pub loop_index: u64,
    /// Expiry to the thread running.
    pub latency_ns: u64,
    /// Expiry to the timer's callback in the interrupt, when traced.
    pub irq_latency_ns: Option<u64>,
    /// What the trace shows on that CPU, oldest first; empty without tracing.
    pub events: Vec<SpikeEvent>,
    /// Where the latency went, when the trace holds the wake-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<WakeupAnalysis>,
}

/// What a stretch of a wake-up's latency went to (the categories of `rtla timerlat`'s auto
/// analysis, `tools/tracing/rtla/src/timerlat_aa.c`, for a kernel without the timerlat tracer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyCause {
    /// Before the timer interrupt ran the thread's callback, outside any traced handler: the
    /// interrupt's delivery (an idle exit, a hypervisor) or interrupts disabled by what ran.
    IrqDelivery,
    /// The timer interrupt: other timers before the thread's callback, or its work after it.
    TimerInterrupt,
    /// Another hard interrupt's handler.
    HardIrq,
    /// A softirq.
    Softirq,
    /// Another task kept the CPU after the thread was woken (rtla's "blocking thread").
    Task,
    /// The idle task leaving idle after the thread was woken, until it switched to it.
    IdleExit,
    /// From the switch to the thread until it read the clock: the context switch and the
    /// return from `clock_nanosleep`.
    Switch,
    /// No traced event explains it; `what` says why, where it is known.
    Unattributed,
}

/// One stretch of a wake-up's latency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyPart {
    /// Start, relative to the timer's expiry, in ns.
    pub offset_ns: u64,
    pub duration_ns: u64,
    pub cause: LatencyCause,
    /// What exactly: `IRQ 36 virtio1-req.0`, `stress-ng:3213`, `softirq 9 RCU`.
    pub what: String,
}

/// The latency's largest cause: the stretches of one cause and `what` added together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CauseTotal {
    pub cause: LatencyCause,
    pub what: String,
    pub duration_ns: u64,
}

/// Where one wake-up's latency went, from the trace of its CPU: consecutive stretches from the
/// timer's expiry to the thread running, each attributed to what ran (`rtla timerlat -a`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WakeupAnalysis {
    /// The expiry in `CLOCK_MONOTONIC` ns (the trace clock), to find the wake-up in a trace.
    pub expiry_mono_ns: u64,
    /// Whether the CPU was idle when the timer expired, where the trace says.
    pub from_idle: Option<bool>,
    /// In time order; their durations add up to the thread latency.
    pub parts: Vec<LatencyPart>,
    /// The single largest cause.
    pub largest: Option<CauseTotal>,
    /// What limits the analysis (events lost in the window, a wake-up matched by estimate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One run of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Where the run came from: a scenario file, or "host" for a measurement.
    pub source: String,
    pub title: String,
    /// Free-form configuration facts shown with the result (platform, kernel, delivery, seed).
    pub config: Vec<(String, String)>,
    pub metrics: Vec<Metric>,
    pub counters: Vec<Counter>,
    pub trace: Vec<TraceRow>,
    /// A measurement's late wake-up: the one that stopped it (`--break-us`), or the worst of a
    /// traced run, with what ran before it and where its latency went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike: Option<Spike>,
    /// Distributions for plots (`--plot`), one per metric that has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<HistogramData>,
    /// What limited a measurement (no SCHED_FIFO, no tracefs, ...), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Latency against sample number, for the series plot (bounded: long runs keep each
    /// stretch's minimum, maximum and up to 16 value ranges with counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<NamedSeries>,
}

/// A metric's sample series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedSeries {
    pub metric: String,
    /// The run it belongs to, as in [`HistogramData::run`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub series: crate::series::SampleSeries,
}

/// The verdict of a validation row.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// The samples cannot decide the row (the statistic's 95% interval reaches across a
    /// boundary of the published window). Counts as not passing.
    Undecided,
}

/// How many samples would decide an undecided row ([`crate::decide::Needs`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SamplesNeeded {
    /// Fewer cannot decide it (derived exactly from the statistic).
    AtLeast { samples: u64 },
    /// Extrapolated from the present interval, which narrows as 1/sqrt(n).
    About { samples: u64 },
    /// The statistic sits on a boundary: no sample count decides it.
    Never,
}

impl From<crate::decide::Needs> for SamplesNeeded {
    fn from(n: crate::decide::Needs) -> Self {
        match n {
            crate::decide::Needs::AtLeast(samples) => SamplesNeeded::AtLeast { samples },
            crate::decide::Needs::About(samples) => SamplesNeeded::About { samples },
            crate::decide::Needs::Never => SamplesNeeded::Never,
        }
    }
}

/// One row of `irqlab validate`: a published value beside the simulated one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidationRow {
    /// Row id, e.g. `msi-ws-ioapic`.
    pub id: String,
    pub experiment: String,
    pub metric: String,
    /// The published value, short: `2.9x`, `2.0-2.5 us`, `holds`.
    pub published: String,
    /// The seed's own words for it (`almost 3x`), empty where the value says it all.
    pub published_text: String,
    pub simulated: String,
    /// The simulated statistic as a number in the row's quantity (a ratio, nanoseconds, a
    /// probability), for rows with a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Whether the criterion holds, for shape and sequence rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<bool>,
    /// The 95% confidence interval of the simulated statistic, where the row has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    pub tolerance: String,
    pub verdict: Verdict,
    /// Samples behind the statistic (the fewest of the runs it compares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// For an undecided row, the samples that would decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<SamplesNeeded>,
    /// Where the published value comes from (seed, figure, page).
    pub source: String,
    /// What was compared, in more detail (shown under a row that does not pass, and in JSON).
    pub detail: String,
    /// The model's values chosen from this row's published target (`inferred_from` in their
    /// files, an experiment's `[[inferred]]` or `[calibration]`): the row is calibration, not
    /// evidence, whatever its verdict (DESIGN.md, "How a row is judged", rule 4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibration: Vec<String>,
    /// The calibrated parameter whose fit ended at a bound of its sourced range, where this
    /// row is its calibration row or reads it: the row is in tension, never a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_at_bound: Option<String>,
}

/// The whole validation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidationReport {
    pub rows: Vec<ValidationRow>,
    /// The distributions of each experiment's runs, for plots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub experiments: Vec<ExperimentRuns>,
    /// How the runs were made where it matters for reading them (a shortened run, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `validate --uncertainty N`: every row judged over draws of the model's estimates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<UncertaintyReport>,
}

/// What a row's value is, for printing it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// A ratio of two means (`2.76x`).
    Ratio,
    /// A latency in nanoseconds.
    Nanoseconds,
    /// A probability (the share of samples beyond a threshold).
    Probability,
    /// A rate of frames, per second.
    PacketsPerSecond,
}

impl Quantity {
    /// `v` as the tables print it: `2.76x`, `1.96 us`, `3.5e-8` (a probability of 0 as `0`).
    pub fn show(self, v: f64) -> String {
        match self {
            Quantity::Ratio => format!("{v:.2}x"),
            Quantity::Nanoseconds => format!("{:.2} us", v / 1e3),
            Quantity::Probability if v == 0.0 => "0".into(),
            Quantity::Probability => format!("{v:.1e}"),
            Quantity::PacketsPerSecond => format!("{} pps", crate::thousands(v.round() as u64)),
        }
    }
}

/// One parameter that drives a row: Spearman's rank correlation of the row's value with the
/// parameter's draws.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Driver {
    /// The parameter, as [`UncertainParameter::name`].
    pub parameter: String,
    pub rho: f64,
}

/// A row judged by the model's uncertainty (DESIGN.md, "How a row is judged").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UncertaintyRow {
    pub id: String,
    pub experiment: String,
    pub class: crate::uncertainty::Class,
    /// The nominal run's simulated value and verdict (the regression test's).
    pub nominal: String,
    pub nominal_verdict: Verdict,
    /// The nominal run's value in the row's quantity, for rows with a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominal_value: Option<f64>,
    /// The published value as printed, and as an interval in the row's quantity (from the
    /// seed's wording, DESIGN.md: "almost N" = [0.9N, N]).
    pub published: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_interval: Option<[f64; 2]>,
    /// The quantity of the band and the published interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<crate::uncertainty::Scale>,
    /// The draws' 1-99% quantiles of the row's value (rows with a value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<crate::uncertainty::Band>,
    /// The published value's percentile among the draws (a published interval: its two ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<[f64; 2]>,
    /// Shape and sequence rows: the share of draws in which the criterion holds, and the share
    /// that passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_share: Option<f64>,
    /// Draws that gave the row a value or a yes/no.
    pub draws: u32,
    /// The three parameters with the largest |rho|.
    pub drivers: Vec<Driver>,
    /// Parameters whose values were inferred from this row's published target: the row is not
    /// independent evidence for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inferred: Vec<String>,
    /// The calibrated parameter whose fit ended at a bound of its sourced range in more than
    /// one draw in ten, where this row is its calibration row or reads it: classed tension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_at_bound: Option<String>,
    /// Why the class is what it is, in a sentence.
    pub detail: String,
}

/// A parameter drawn over its range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UncertainParameter {
    /// Short and unique: the `--set` key, with the file's name where two files share the key
    /// (`platform.cpu.halt_exit_ns@ws-2008-core2-ich9`).
    pub name: String,
    /// The `--set` key and the file it belongs to.
    pub key: String,
    pub file: String,
    pub nominal: f64,
    pub low: f64,
    pub high: f64,
    /// `uniform` or `log-uniform`.
    pub dist: String,
    /// The source of each bound, or the physical argument.
    pub basis: String,
    /// Rows whose published target the value was inferred from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inferred_from: Vec<String>,
}

/// An estimate that is not drawn, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FixedEstimate {
    pub key: String,
    pub file: String,
    pub reason: String,
    /// Rows whose published target the value was read from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inferred_from: Vec<String>,
}

/// `validate --uncertainty N`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UncertaintyReport {
    /// Latin-hypercube draws, and the seed they and every run's seed derive from.
    pub draws: u32,
    pub seed: u64,
    pub parameters: Vec<UncertainParameter>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<FixedEstimate>,
    /// Free parameters fitted again in every draw (an experiment's `[calibration]`), with the
    /// spread of their fitted values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fitted: Vec<FittedParameter>,
    pub rows: Vec<UncertaintyRow>,
}

/// A free parameter fitted on its calibration row in each draw: where its values fell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FittedParameter {
    pub experiment: String,
    pub key: String,
    /// The row it is fitted to.
    pub row: String,
    pub p5: f64,
    pub median: f64,
    pub p95: f64,
}

/// One experiment's simulated runs: their latency distributions, labelled `RUN metric`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRuns {
    pub experiment: String,
    pub title: String,
    pub histograms: Vec<HistogramData>,
}

impl ValidationReport {
    fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }
    pub fn passed(&self) -> usize {
        self.count(Verdict::Pass)
    }
    pub fn failed(&self) -> usize {
        self.count(Verdict::Fail)
    }
    pub fn undecided(&self) -> usize {
        self.count(Verdict::Undecided)
    }
    /// Rows that pass and are calibration, not evidence (a value was chosen from them).
    pub fn passed_calibration(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Pass && !r.calibration.is_empty())
            .count()
    }
    /// Every row passes (an undecided row does not).
    pub fn all_pass(&self) -> bool {
        self.passed() == self.rows.len()
    }
}

/// One axis of a what-if grid (`irqlab sweep plan --grid KEY=V1,V2,...`): a `--set` key and
/// its values, as `irqlab sim --set` takes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridAxis {
    pub key: String,
    pub values: Vec<String>,
}

/// One cell of a what-if grid: one value of every axis, and its run, the histograms of the
/// cell's points (one per `--repeat`) added.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridCell {
    /// The cell's values as `--set` flags (`KEY=VALUE`), one per axis in the axes' order.
    pub set: Vec<String>,
    /// The seeds of its points, in point order.
    pub seeds: Vec<u64>,
    /// Metrics, counters and histograms of its points together (no trace, no series).
    pub run: RunReport,
}

/// `irqlab sweep merge` of a what-if grid: every cell of the cartesian product of the axes'
/// values over one scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridReport {
    /// The scenario as given to `sweep plan`, and its title.
    pub scenario: String,
    pub title: String,
    /// Overrides every cell takes before its own values.
    pub set: Vec<String>,
    /// Samples of each point, and points per cell.
    pub samples: u64,
    pub repeat: u32,
    pub axes: Vec<GridAxis>,
    /// In the product's order: the first axis varies slowest.
    pub cells: Vec<GridCell>,
}

/// One quantity of a what-if (`irqlab sim --uncertainty N`): a statistic of a latency metric or
/// a counter, its value in the plain run, its band over the draws and what drives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfQuantity {
    /// `cyclictest_latency mean`, `eth0_interrupts`.
    pub name: String,
    /// The metric's label (`thread_latency[cpu1]`), or the counter's.
    pub of: String,
    /// `mean`, `p50`, `p99` or `max` of a metric; `value` of a counter.
    pub statistic: String,
    /// `ns` for a metric's statistic, `count` for a counter (a rate counter's name says
    /// `per_s`).
    pub unit: String,
    /// The plain run's value (the files' nominal estimates, the run's seed); `None` where the
    /// plain run has no samples of the metric.
    pub nominal: Option<f64>,
    /// The draws' 1/5/50/95/99% quantiles; `None` when no draw gave a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<crate::uncertainty::Band>,
    /// Draws that gave a value.
    pub draws: u32,
    /// The (up to) three parameters with the largest |rho| (Spearman's rank correlation of the
    /// quantity with the parameter's draws); none where the quantity does not vary.
    pub drivers: Vec<Driver>,
}

/// A validation row whose runs use the what-if's scenario file, and its nominal verdict (as
/// `irqlab validate` gives it, on the files as shipped: the what-if's `--set` does not enter).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfRow {
    pub id: String,
    pub experiment: String,
    pub verdict: Verdict,
    /// As validate prints them.
    pub simulated: String,
    pub published: String,
    /// What was compared, in more detail (a shape row's runs, say), as validate's row detail.
    pub detail: String,
    /// The row's runs on this scenario.
    pub runs: Vec<String>,
    /// The `--set` flags every one of those runs takes (the experiment's, before the run's
    /// own): what the validated configuration sets beyond the scenario file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    /// As [`ValidationRow::calibration`]: values chosen from this row's target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibration: Vec<String>,
    /// As [`ValidationRow::fit_at_bound`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_at_bound: Option<String>,
}

/// `irqlab sim SCENARIO --uncertainty N`: the scenario's summary quantities over N
/// Latin-hypercube draws of the ranges its files declare, beside the plain run, with the
/// validation rows that run on the same scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfReport {
    /// The scenario as given, and its title.
    pub scenario: String,
    pub title: String,
    /// The user's `--set`, in order: every run takes them; a declared parameter they set is
    /// pinned, not drawn.
    pub set: Vec<String>,
    /// The plain run's seed, the samples of every run, and replications per run.
    pub seed: u64,
    pub samples: u64,
    pub replications: u32,
    /// Latin-hypercube draws, and the seed they and each draw's run seed derive from.
    pub draws: u32,
    pub draw_seed: u64,
    /// The |rho| that chance alone reaches, with these draws, for the largest of the drawn
    /// parameters in 5% of what-ifs (Bonferroni over the parameters, rho's normal
    /// approximation): a driver below it may be noise. `None` with fewer than 4 draws.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chance_rho: Option<f64>,
    pub parameters: Vec<UncertainParameter>,
    /// Declared parameters the `--set` pins (not drawn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<FixedEstimate>,
    /// Each shown metric's mean, p50, p99 and max, then every counter that changes in some
    /// draw; empty when nothing is drawn.
    pub quantities: Vec<WhatIfQuantity>,
    /// Counters with the same value in the plain run and every draw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<String>,
    /// `--against`: the baseline's overrides (after `set`), and each quantity's difference, the
    /// what-if's run less the baseline's with the same drawn values and seed (every metric's
    /// statistics; the counters that differ somewhere).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub against: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<WhatIfQuantity>,
    /// The validation rows on this scenario file; `None` when skipped (`--no-rows`).
    pub rows: Option<Vec<WhatIfRow>>,
    /// The plain run: its header, metrics and counters (no histograms, series or trace).
    pub nominal: RunReport,
}
