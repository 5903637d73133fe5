//! Published experiments and their validation: `experiments/*.toml` name the runs (a scenario
//! and its overrides), the published values with their source, and the tolerance of each row.
//! `irqlab validate` runs them and compares.

use crate::report::trace_rows;
use crate::result::RunResult;
use crate::scenario::ranges::{Range, Spread};
use crate::scenario::{parse_file, ScenarioError};
use crate::simulation::Simulation;
use irqlab_stats::decide::{self, Decision, Interval, MeanSample, Needs};
use irqlab_stats::results::{
    ExperimentRuns, Quantity, SamplesNeeded, ValidationReport, ValidationRow, Verdict,
};
use irqlab_stats::thousands;
use irqlab_stats::uncertainty::Scale;
use irqlab_stats::LatencyHistogram;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An experiment file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub id: String,
    pub title: String,
    /// The seed document the published values come from (docs/validation.md cites each).
    pub seed_document: String,
    /// Absent in an experiment whose rows need no simulated run (seed 001's routing table).
    #[serde(default)]
    pub run: Vec<RunSpec>,
    pub check: Vec<Check>,
    /// The experiment's declared free parameter, if it has one (DESIGN.md: at most one,
    /// calibrated on a named row, the other rows held out).
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Settings of this file's runs chosen because rows pass (a number or a discrete choice:
    /// a preemption model, a wake-up path), each with its rows: those rows are calibration,
    /// not evidence (DESIGN.md, "How a row is judged", rule 4).
    #[serde(default)]
    pub inferred: Vec<Inferred>,
}

/// `[[inferred]]`: a value the runs set (`set = ["KEY=..."]`) that was chosen from published
/// rows. A number is checked against its declared range when the file loads; in the draws of
/// `validate --uncertainty` it is drawn over that range (a value read off a table cannot be
/// fitted again in a draw unless a `[calibration]` row gives a point to fit to), so the rows
/// that lean on it show what it does to them.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inferred {
    /// The `--set` key.
    pub key: String,
    /// The rows whose published values chose it.
    pub inferred_from: Vec<String>,
    /// How it was chosen, and what else was tried.
    pub basis: String,
}

/// `[calibration]`: a free parameter inferred from one row's published value. The nominal
/// value is the file's own (a scenario's `set`); every draw of `validate --uncertainty` fits
/// it again, on that draw's other values, so that the calibration row meets its target in
/// every draw and the held-out rows' bands show what the calibration does not absorb.
///
/// The search stays inside the parameter's sourced range, the `{ low, high, ..., inferred_from
/// = [row] }` its file declares beside it (DESIGN.md rule 4): a calibration file cannot give
/// bounds of its own. A fit that ends at a bound classes the row, and every row that reads
/// the parameter, "tension: fit at its bound".
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The parameter, as a `--set` path (`kernel.net.forward`).
    pub parameter: String,
    /// The row it is inferred from: a row with a published point (`throughput`, `ratio`).
    pub row: String,
    /// The fit's resolution (the row's value must move one way with the parameter).
    pub step: f64,
    /// The declared range's bounds, filled in when the file loads.
    #[serde(skip)]
    pub low: f64,
    #[serde(skip)]
    pub high: f64,
}

impl Calibration {
    /// The lowest and highest values the fit tries: the range's bounds on the step's grid.
    pub fn search_bounds(&self) -> (f64, f64) {
        let snap = |x: f64| self.low + ((x - self.low) / self.step).round() * self.step;
        (self.low, snap(self.high).min(self.high))
    }

    /// Whether a fitted value is one of the bounds the fit can reach.
    pub fn at_bound(&self, value: f64) -> bool {
        let (lo, hi) = self.search_bounds();
        value <= lo || value >= hi
    }
}

/// A run: a scenario file (relative to the experiment file) and its overrides.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub id: String,
    pub scenario: String,
    #[serde(default)]
    pub set: Vec<String>,
    /// The published run's sample count, run with `--full`; by default the scenario's shorter
    /// `samples`.
    #[serde(default)]
    pub full_samples: Option<u64>,
    /// Independent replications the samples are split over (all cores; merged histograms).
    #[serde(default = "one")]
    pub replications: u32,
    /// The samples each draw of `validate --uncertainty` runs, where fewer than the default
    /// resolve the run's rows (a median, a rate of 1e-4); absent: the default.
    #[serde(default)]
    pub draw_samples: Option<u64>,
}

impl RunSpec {
    /// The samples the run takes: `--samples`, else the published count under `--full`, else
    /// in an uncertainty draw its `draw_samples`, else the scenario's own (`default`).
    pub(crate) fn samples(&self, opts: &ValidateOptions, default: u64) -> u64 {
        opts.samples
            .unwrap_or(match (self.full_samples, self.draw_samples) {
                (Some(full), _) if opts.full => full,
                (_, Some(draw)) if opts.draw => draw,
                _ => default,
            })
    }
}

fn one() -> u32 {
    1
}

/// One expected analyzer sequence.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedTrace {
    pub run: String,
    pub expected: Vec<String>,
}

/// Which latency a row compares.
#[derive(Copy, Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LatencyMetric {
    IsrLatency,
    TaskletLatency,
    /// The card's own round-trip counter (seed 002).
    RoundTrip,
    /// Pulse to the driver's timestamp (seed 004).
    PpsLatency,
}

impl LatencyMetric {
    /// The run's distribution of this metric (empty if the run does not measure it).
    fn of(self, r: &RunResult) -> &LatencyHistogram {
        static NONE: std::sync::OnceLock<LatencyHistogram> = std::sync::OnceLock::new();
        r.metric(self.key())
            .unwrap_or_else(|| NONE.get_or_init(LatencyHistogram::new))
    }
    /// Its name in a run's result.
    fn key(self) -> &'static str {
        match self {
            LatencyMetric::IsrLatency => "isr_latency",
            LatencyMetric::TaskletLatency => "tasklet_latency",
            LatencyMetric::RoundTrip => "round_trip",
            LatencyMetric::PpsLatency => "pps_latency",
        }
    }
    fn name(self) -> &'static str {
        match self {
            LatencyMetric::IsrLatency => "ISR latency",
            LatencyMetric::TaskletLatency => "tasklet latency",
            LatencyMetric::RoundTrip => "round trip",
            LatencyMetric::PpsLatency => "PPS latency",
        }
    }
}

/// A split flow's penalty (seed 001, Table 4): per busy core, `1/pps_split - 1/pps_unsplit`
/// in nanoseconds a frame, the row's against `unsplit_run`'s, simulated and published.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitPenalty {
    /// Cores the split row's flows keep busy.
    pub busy_cores: u32,
    /// The unsplit run, its busy cores and its published rate.
    pub unsplit_run: String,
    pub unsplit_busy_cores: u32,
    pub unsplit_published_pps: f64,
    /// What the source's rows give for it, in words ("113-137 ns over Table 4's split rows").
    pub published_text: String,
}

impl SplitPenalty {
    /// Nanoseconds a frame per busy core: the split rate's against the unsplit rate's.
    pub fn ns(&self, pps: f64, unsplit_pps: f64) -> f64 {
        (f64::from(self.busy_cores) / pps - f64::from(self.unsplit_busy_cores) / unsplit_pps) * 1e9
    }
}

/// One validation row.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// mean(metric of numerator) / mean(metric of denominator) against a published ratio.
    Ratio {
        id: String,
        metric: LatencyMetric,
        numerator: String,
        denominator: String,
        published: f64,
        published_text: String,
        tolerance_rel: f64,
        source: String,
    },
    /// For each group (baseline first): every run's tasklet latency exceeds its ISR latency, and
    /// each run's tasklet ratio to the baseline is within `tolerance_rel` of its ISR ratio.
    TaskletProportional {
        id: String,
        groups: Vec<Vec<String>>,
        tolerance_rel: f64,
        published_text: String,
        source: String,
    },
    /// For each sequence: the analyzer's packets for one interrupt of `run`, from the interrupt
    /// packet on, match `expected` ("TYPE" or "TYPE ADDRESS", an address ending in `*` matching
    /// a prefix).
    TraceSequence {
        id: String,
        sequences: Vec<ExpectedTrace>,
        source: String,
    },
    /// A quantile of one run's distribution lies in a published range.
    QuantileRange {
        id: String,
        run: String,
        metric: LatencyMetric,
        quantile: f64,
        low_ns: u64,
        high_ns: u64,
        /// The published statistic's sample count. Required for a minimum or maximum
        /// (`quantile` 0 or 1): an extreme of fewer samples is not comparable with it.
        #[serde(default)]
        published_samples: Option<u64>,
        published_text: String,
        source: String,
    },
    /// The share of one run's samples above `threshold_ns` (or at or above it, `inclusive`)
    /// lies between `low` and `high`; or, where the seed gives a count of rare samples
    /// (`published_count` in `published_samples`), the rate lies inside that count's Poisson
    /// 95% interval.
    Exceedance {
        id: String,
        run: String,
        metric: LatencyMetric,
        threshold_ns: u64,
        #[serde(default)]
        inclusive: bool,
        #[serde(default)]
        low: f64,
        #[serde(default)]
        high: Option<f64>,
        #[serde(default)]
        published_count: Option<u64>,
        #[serde(default)]
        published_samples: Option<u64>,
        published_text: String,
        source: String,
    },
    /// The bus-clock quantum of one run's sample histogram (the width of its flat-topped
    /// boxes between "fence posts", seed 004) against a published bus clock; searched between
    /// `search_min_ns` and `search_max_ns` ([`irqlab_stats::boxwidth`]).
    StepPeriod {
        id: String,
        run: String,
        published_ns: f64,
        tolerance_rel: f64,
        search_min_ns: f64,
        search_max_ns: f64,
        /// `validate --uncertainty`: the share of draws (each its own seed) that must fall
        /// within the tolerance. Absent: 0.9, as every shape row.
        #[serde(default)]
        pass_share: Option<f64>,
        published_text: String,
        source: String,
    },
    /// Seed 003's cyclictest columns over a table's runs, matched by shape: every run starved
    /// (the lag of 2009's cyclictest grows for the whole run: its maximum at least half the
    /// run's loops times the interval, its average 0.45-0.55 of its maximum), or every run
    /// served with its average and maximum inside the bounds given.
    CyclictestShape {
        id: String,
        runs: Vec<String>,
        expect: ShapeExpect,
        /// cyclictest's interval (`-i`), for the length of a run's loops.
        interval_us: f64,
        #[serde(default)]
        min_low_us: Option<f64>,
        #[serde(default)]
        min_high_us: Option<f64>,
        #[serde(default)]
        avg_low_us: Option<f64>,
        #[serde(default)]
        avg_high_us: Option<f64>,
        #[serde(default)]
        max_low_us: Option<f64>,
        #[serde(default)]
        max_high_us: Option<f64>,
        /// A served table's own averages and maxima, one per run, where the table's series
        /// moves (DESIGN.md rule 5): each run's within `factor` of its own published value,
        /// so that a constant cannot pass a rising series.
        #[serde(default)]
        published_avg_us: Vec<f64>,
        #[serde(default)]
        published_max_us: Vec<f64>,
        #[serde(default)]
        factor: Option<f64>,
        published_text: String,
        source: String,
    },
    /// Seed 003's "Lost Frames (%)" over a table's runs (every NIC together): none where the
    /// table has 0.00, within a factor of two of the table's share elsewhere.
    FramesLost {
        id: String,
        runs: Vec<String>,
        published_percent: Vec<f64>,
        published_text: String,
        source: String,
    },
    /// Seed 003's "IRQs" columns, compared step by step: over runs in the order of a rising
    /// packet rate, each NIC's interrupt rate from one run to the next (its ratio) within
    /// `step_factor` of the published count's ratio in that NIC's column (DESIGN.md rule 5: a
    /// flat step where the table falls is a fail). The published counts are one run each of
    /// the same length, so their ratio is a ratio of rates; the model's are rates over its runs.
    InterruptsFall {
        id: String,
        runs: Vec<String>,
        /// NIC name -> its published count in each run, in `runs`' order.
        published: BTreeMap<String, Vec<f64>>,
        step_factor: f64,
        published_text: String,
        source: String,
    },
    /// Seed 001's Table 4: the frames a forwarding run of fixed length (`duration_ms`) put on
    /// the wire in its time, every port together, per second, within `tolerance_rel` of the
    /// published rate. `calibration`: the row a free parameter was inferred from (not
    /// evidence; its class is reported, and says so).
    Throughput {
        id: String,
        run: String,
        published_pps: f64,
        tolerance_rel: f64,
        /// A split flow's row (RX on one core, TX on another): its penalty per frame and busy
        /// core against an unsplit row, beside the published one.
        #[serde(default)]
        split: Option<SplitPenalty>,
        published_text: String,
        source: String,
    },
    /// Seed 001's IRQ assignment (Table 3): the IRQ of every INTx function of `platform` with
    /// `cards` in its ports (`PORT=FUNCTIONS`, as `irqlab plan swizzle --card`), named in bus
    /// order, with the ports' INTXSWZCTRL as the platform file has them (`unswizzled`) and with
    /// the values `irqlab plan swizzle` chooses from the population and the platform
    /// (`swizzled`); each IRQ's functions exactly as published (in any order).
    IrqTable {
        id: String,
        platform: String,
        cards: Vec<String>,
        unswizzled: BTreeMap<String, Vec<String>>,
        swizzled: BTreeMap<String, Vec<String>>,
        published_text: String,
        source: String,
    },
    /// Seed 001's words on Table 4's 8-port case: whether `flows` over `platform` with `cards`
    /// (as `irq_table`) can be spread evenly over the CPUs by static IRQ affinity (the seed's
    /// rules, `irqlab plan affinity`), with INTXSWZCTRL at reset and at the planned values.
    AffinitySpread {
        id: String,
        platform: String,
        cards: Vec<String>,
        flows: Vec<String>,
        unswizzled_even: bool,
        swizzled_even: bool,
        published_text: String,
        source: String,
    },
    /// A quantile of one workload phase exceeds the same quantile of another (seed 004).
    PhaseOrder {
        id: String,
        run: String,
        quantile: f64,
        heavier: String,
        lighter: String,
        published_text: String,
        source: String,
    },
}

impl Check {
    pub fn id(&self) -> &str {
        match self {
            Check::Ratio { id, .. }
            | Check::TaskletProportional { id, .. }
            | Check::TraceSequence { id, .. }
            | Check::QuantileRange { id, .. }
            | Check::Exceedance { id, .. }
            | Check::StepPeriod { id, .. }
            | Check::PhaseOrder { id, .. }
            | Check::CyclictestShape { id, .. }
            | Check::FramesLost { id, .. }
            | Check::InterruptsFall { id, .. }
            | Check::IrqTable { id, .. }
            | Check::AffinitySpread { id, .. }
            | Check::Throughput { id, .. } => id,
        }
    }
    /// What makes this row unusable as written, if anything.
    fn problem(&self) -> Option<&'static str> {
        match self {
            Check::Exceedance {
                high,
                published_count,
                published_samples,
                ..
            } if published_count.is_some() != published_samples.is_some()
                || high.is_some() == published_count.is_some() =>
            {
                Some(
                    "an exceedance row takes either `high` (and `low`), or `published_count` \
                     with `published_samples`",
                )
            }
            Check::QuantileRange {
                quantile,
                published_samples: None,
                ..
            } if *quantile == 0.0 || *quantile == 1.0 => Some(
                "a minimum or maximum needs `published_samples`, the published sample count it \
                 was taken over: an extreme of fewer samples is not comparable with it",
            ),
            Check::QuantileRange { quantile, .. } if !(0.0..=1.0).contains(quantile) => {
                Some("`quantile` is a fraction from 0 (the minimum) to 1 (the maximum)")
            }
            Check::FramesLost {
                runs,
                published_percent,
                ..
            } if runs.len() != published_percent.len() => {
                Some("a frames_lost row gives one `published_percent` per run")
            }
            Check::InterruptsFall {
                runs,
                published,
                step_factor,
                ..
            } if published.is_empty()
                || runs.len() < 2
                || published
                    .values()
                    .any(|v| v.len() != runs.len() || v.iter().any(|&x| x <= 0.0))
                || step_factor.partial_cmp(&1.0) != Some(std::cmp::Ordering::Greater) =>
            {
                Some(
                    "an interrupts_fall row gives two or more runs, one published count (> 0) per \
                     run for each NIC (`published = { eth0 = [...] }`) and a step_factor > 1",
                )
            }
            Check::CyclictestShape {
                runs,
                published_avg_us,
                published_max_us,
                factor,
                expect,
                ..
            } if (!published_avg_us.is_empty() && published_avg_us.len() != runs.len())
                || (!published_max_us.is_empty() && published_max_us.len() != runs.len())
                || ((!published_avg_us.is_empty() || !published_max_us.is_empty())
                    && (*expect != ShapeExpect::Served || !factor.is_some_and(|f| f > 1.0))) =>
            {
                Some(
                    "a served cyclictest_shape row's published_avg_us and published_max_us give \
                     one value per run, with a factor > 1",
                )
            }
            Check::IrqTable { cards, .. } | Check::AffinitySpread { cards, .. }
                if cards
                    .iter()
                    .any(|c| c.parse::<crate::plan::swizzle::Card>().is_err()) =>
            {
                Some("a row's `cards` are PORT=FUNCTIONS (\"port6=2\")")
            }
            Check::IrqTable {
                unswizzled,
                swizzled,
                ..
            } if unswizzled
                .keys()
                .chain(swizzled.keys())
                .any(|k| k.parse::<u8>().is_err()) =>
            {
                Some("an irq_table row's tables are keyed by IRQ number (16 = [\"eth0\"])")
            }
            Check::AffinitySpread { flows, .. }
                if flows
                    .iter()
                    .any(|f| f.parse::<crate::plan::affinity::Flow>().is_err()) =>
            {
                Some("an affinity_spread row's `flows` are NIC:NIC (\"eth2:eth4\")")
            }
            Check::PhaseOrder { quantile, .. } if !(*quantile > 0.0 && *quantile < 1.0) => Some(
                "a phase_order row's `quantile` is strictly between 0 and 1 (two extremes have \
                 no interval to compare by)",
            ),
            _ => None,
        }
    }

    pub(crate) fn runs(&self) -> Vec<&str> {
        match self {
            Check::Ratio {
                numerator,
                denominator,
                ..
            } => vec![numerator, denominator],
            Check::TaskletProportional { groups, .. } => {
                groups.iter().flatten().map(String::as_str).collect()
            }
            Check::TraceSequence { sequences, .. } => {
                sequences.iter().map(|s| s.run.as_str()).collect()
            }
            Check::QuantileRange { run, .. }
            | Check::Exceedance { run, .. }
            | Check::StepPeriod { run, .. }
            | Check::PhaseOrder { run, .. } => vec![run],
            Check::Throughput { run, split, .. } => {
                let mut runs = vec![run.as_str()];
                runs.extend(split.as_ref().map(|s| s.unsplit_run.as_str()));
                runs
            }
            Check::CyclictestShape { runs, .. }
            | Check::FramesLost { runs, .. }
            | Check::InterruptsFall { runs, .. } => runs.iter().map(String::as_str).collect(),
            // Routing is worked out on the platform's topology: no run.
            Check::IrqTable { .. } | Check::AffinitySpread { .. } => Vec::new(),
        }
    }
}

/// How `validate --uncertainty` judges a row over its draws.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Judged {
    /// A value with a published interval: its class comes from the draws' band.
    Value {
        /// The published value as an interval, and as a point where the seed gives one.
        published: (f64, f64),
        point: Option<f64>,
        /// The width of the row's tolerance window on `scale`.
        window: f64,
        scale: Scale,
        quantity: Quantity,
    },
    /// A criterion that holds or not: its class comes from the share of draws in which it
    /// holds.
    Share { pass_share: f64 },
}

/// An exceedance row's window of rates: `low..high` as written, or, where the seed gives a
/// count of rare samples (`published_count` in `published_samples`), that count's Poisson 95%
/// interval as a rate, with the count, the samples and the interval in counts.
fn rate_window(
    low: f64,
    high: Option<f64>,
    published_count: Option<u64>,
    published_samples: Option<u64>,
) -> (f64, f64, Option<(u64, u64, Interval)>) {
    match (published_count, published_samples, high) {
        (Some(k), Some(of), _) => {
            let i = decide::poisson_interval(k as f64);
            (i.lo / of as f64, i.hi / of as f64, Some((k, of, i)))
        }
        (_, _, Some(high)) => (low, high, None),
        _ => unreachable!("checked when the experiment loads"),
    }
}

/// The share of draws a shape or sequence row must hold in to pass (DESIGN.md).
pub const SHAPE_PASS_SHARE: f64 = 0.9;

/// A published ratio's wording as an interval, once for all seeds (DESIGN.md): "about N" =
/// N ±10%, "almost N" and "nearly N" = [0.9N, N], "just over N" = [N, 1.1N]. `None` for other
/// wordings.
pub fn wording_interval(text: &str) -> Option<(f64, f64)> {
    let t = text.trim().to_ascii_lowercase();
    let number =
        |rest: &str| -> Option<f64> { rest.trim().trim_end_matches('x').trim().parse().ok() };
    if let Some(n) = t.strip_prefix("about ").and_then(number) {
        Some((0.9 * n, 1.1 * n))
    } else if let Some(n) = t
        .strip_prefix("almost ")
        .or_else(|| t.strip_prefix("nearly "))
        .and_then(number)
    {
        Some((0.9 * n, n))
    } else {
        t.strip_prefix("just over ")
            .and_then(number)
            .map(|n| (n, 1.1 * n))
    }
}

impl Check {
    /// How the row is judged over draws.
    pub(crate) fn judged(&self) -> Judged {
        match self {
            Check::Ratio {
                published,
                published_text,
                tolerance_rel,
                ..
            } => Judged::Value {
                // The published value is a point unless its words give an interval (DESIGN.md:
                // "published value (or interval, from the seed's wording) inside the 5-95%
                // band"); the tolerance sets the width test's window, not the value.
                published: wording_interval(published_text).unwrap_or((*published, *published)),
                point: Some(*published),
                window: 2.0 * tolerance_rel * published,
                scale: Scale::Linear,
                quantity: Quantity::Ratio,
            },
            Check::QuantileRange {
                low_ns, high_ns, ..
            } => Judged::Value {
                published: (*low_ns as f64, *high_ns as f64),
                point: None,
                window: (*high_ns - *low_ns) as f64,
                scale: Scale::Linear,
                quantity: Quantity::Nanoseconds,
            },
            Check::Exceedance {
                low,
                high,
                published_count,
                published_samples,
                ..
            } => {
                let (lo, hi, counted) =
                    rate_window(*low, *high, *published_count, *published_samples);
                Judged::Value {
                    published: (lo, hi),
                    point: counted.map(|(k, of, _)| k as f64 / of as f64),
                    window: Scale::Log.width(lo, hi),
                    scale: Scale::Log,
                    quantity: Quantity::Probability,
                }
            }
            Check::Throughput {
                published_pps,
                tolerance_rel,
                ..
            } => Judged::Value {
                // Table 4's figures are exact counts: the band must hold the figure itself.
                published: (*published_pps, *published_pps),
                point: Some(*published_pps),
                window: 2.0 * tolerance_rel * published_pps,
                scale: Scale::Linear,
                quantity: Quantity::PacketsPerSecond,
            },
            Check::StepPeriod { pass_share, .. } => Judged::Share {
                pass_share: pass_share.unwrap_or(SHAPE_PASS_SHARE),
            },
            Check::TaskletProportional { .. }
            | Check::TraceSequence { .. }
            | Check::PhaseOrder { .. }
            | Check::CyclictestShape { .. }
            | Check::FramesLost { .. }
            | Check::InterruptsFall { .. }
            | Check::IrqTable { .. }
            | Check::AffinitySpread { .. } => Judged::Share {
                pass_share: SHAPE_PASS_SHARE,
            },
        }
    }
}

/// A `[calibration]`'s fit in one draw: the value, and whether it ended at a bound of the
/// parameter's sourced range (the row's target lies beyond what the range can give, or only
/// just inside it).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Fit {
    pub value: f64,
    pub at_bound: bool,
}

/// Does the run set `key` itself (`set = ["KEY=..."]`)?
pub(crate) fn sets(spec: &RunSpec, key: &str) -> bool {
    spec.set
        .iter()
        .any(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == key))
}

/// Does `pattern` name the experiment `id`? Only the id itself does: a part of it (`seed`) or a
/// pattern with `*` stays a row pattern, as it was before experiments could be named (`s*` is
/// the swizzle rows, not every experiment whose id starts with an s).
fn names_experiment(id: &str, pattern: &str) -> bool {
    id == pattern
}

/// Does `id` match `pattern` (`*` matches any run of characters; no `*` means substring)?
pub fn matches_pattern(id: &str, pattern: &str) -> bool {
    if !pattern.contains('*') {
        return id.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = id;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(p) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            match rest.find(p) {
                Some(k) => rest = &rest[k + p.len()..],
                None => return false,
            }
        }
    }
    true
}

/// A loaded experiment.
pub struct Experiment {
    pub path: PathBuf,
    pub file: ExperimentFile,
    /// Row id -> the values chosen from its published target (calibration, not evidence).
    pub calibrations: BTreeMap<String, Vec<String>>,
    /// The `[calibration]` parameter's value as the runs have it, where it lies at a bound of
    /// its sourced range (the shipped fit ended there).
    pub nominal_at_bound: Option<f64>,
    /// Rows whose runs read the `[calibration]` parameter (its row among them).
    pub calibration_readers: std::collections::BTreeSet<String>,
}

/// How to run the experiments.
#[derive(Clone, Debug, Default)]
pub struct ValidateOptions {
    /// Only rows whose id matches.
    pub only: Option<String>,
    /// Override every scenario's sample count.
    pub samples: Option<u64>,
    /// Run the published sample counts (`full_samples`) instead of the shorter defaults.
    pub full: bool,
    /// These runs are draws of `validate --uncertainty`: runs with `draw_samples` take those.
    pub draw: bool,
    /// Interrupts raised so far across all runs, for a progress display.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

const TRACE_PACKETS: usize = 64;

impl Experiment {
    pub fn load(path: impl AsRef<Path>) -> Result<Experiment, ScenarioError> {
        // A thin generic shell over a non-generic body: the body (file parsing, deserialization)
        // is compiled once, in this crate, rather than again in every crate that calls it.
        Experiment::load_path(path.as_ref())
    }

    fn load_path(path: &Path) -> Result<Experiment, ScenarioError> {
        let path = path.to_owned();
        let text = crate::shipped::read(&path).map_err(|cause| ScenarioError::Io {
            path: path.clone(),
            named_by: None,
            cause,
        })?;
        let file: ExperimentFile = parse_file(&path, &text)?;
        let invalid = |id: &str, message: String| ScenarioError::Invalid {
            origin: crate::scenario::Origin::File {
                path: path.clone(),
                line: 1,
                column: 1,
            },
            key: format!("check {id}"),
            message,
        };
        if let Some(cal) = &file.calibration {
            let problem = match file.check.iter().find(|c| c.id() == cal.row) {
                None => Some(format!("row '{}' is not a [[check]] of this file", cal.row)),
                Some(c) if !matches!(c.judged(), Judged::Value { point: Some(_), .. }) => {
                    Some(format!(
                        "row '{}' has no published point to fit to (use a throughput or ratio \
                         row)",
                        cal.row
                    ))
                }
                Some(_) if cal.step.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) => {
                    Some("give a step > 0".into())
                }
                Some(_) => file
                    .run
                    .iter()
                    .find(|r| {
                        r.set.iter().any(|s| {
                            s.split_once('=')
                                .is_some_and(|(k, _)| k.trim() == cal.parameter)
                        })
                    })
                    .map(|r| {
                        format!(
                            "run '{}' sets {} itself: a calibrated parameter comes from its \
                             scenario (or kernel, platform) file, so that a draw can fit it",
                            r.id, cal.parameter
                        )
                    }),
            };
            if let Some(message) = problem {
                return Err(ScenarioError::Invalid {
                    origin: crate::scenario::Origin::File {
                        path: path.clone(),
                        line: 1,
                        column: 1,
                    },
                    key: "calibration".into(),
                    message,
                });
            }
        }
        for c in &file.check {
            if let Some(problem) = c.problem() {
                return Err(invalid(c.id(), problem.into()));
            }
            for r in c.runs() {
                if !file.run.iter().any(|s| s.id == r) {
                    return Err(invalid(
                        c.id(),
                        format!("names run '{r}', which no [[run]] defines"),
                    ));
                }
            }
        }
        let mut e = Experiment {
            path,
            file,
            calibrations: BTreeMap::new(),
            nominal_at_bound: None,
            calibration_readers: Default::default(),
        };
        e.inspect_values()?;
        Ok(e)
    }

    /// Check every run's values against the ranges its files declare, and work out which rows
    /// are calibration and which read the calibrated parameter (DESIGN.md rule 4):
    /// - a number a run has (from its files, its scenario's `set` or its own) that has a sourced
    ///   range lies inside it: a shipped value outside its range is refused here;
    /// - a row named by an `inferred_from` (in a file's range table, or an `[[inferred]]`) or
    ///   by `[calibration]` is calibration, not evidence;
    /// - the `[calibration]` parameter has a drawn range naming its row, whose bounds are the
    ///   fit's; a nominal value at a bound is a fit that ended there.
    fn inspect_values(&mut self) -> Result<(), ScenarioError> {
        let at = |key: String, message: String| ScenarioError::Invalid {
            origin: crate::scenario::Origin::File {
                path: self.path.clone(),
                line: 1,
                column: 1,
            },
            key,
            message,
        };
        let rows: Vec<String> = self.file.check.iter().map(|c| c.id().to_string()).collect();
        let mut calibrations: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut add = |row: &str, key: &str| {
            if rows.iter().any(|r| r == row) {
                let keys = calibrations.entry(row.to_string()).or_default();
                if !keys.iter().any(|k| k == key) {
                    keys.push(key.to_string());
                }
            }
        };
        for inf in &self.file.inferred {
            if inf.basis.trim().is_empty() {
                return Err(at(
                    format!("inferred {}", inf.key),
                    "the basis is empty: say how the value was chosen".into(),
                ));
            }
            if inf.inferred_from.is_empty() {
                return Err(at(
                    format!("inferred {}", inf.key),
                    "name the rows the value was chosen from (inferred_from)".into(),
                ));
            }
            for r in &inf.inferred_from {
                if !rows.iter().any(|x| x == r) {
                    return Err(at(
                        format!("inferred {}", inf.key),
                        format!("names row '{r}', which is not a [[check]] of this file"),
                    ));
                }
                add(r, &inf.key);
            }
            if !self.file.run.iter().any(|spec| sets(spec, &inf.key)) {
                return Err(at(
                    format!("inferred {}", inf.key),
                    "no [[run]] sets it: an [[inferred]] value is one the runs set".into(),
                ));
            }
        }
        if let Some(cal) = &self.file.calibration {
            add(&cal.row.clone(), &cal.parameter.clone());
        }
        let mut cal_range: Option<(f64, f64)> = None;
        let mut nominal_at_bound = None;
        let mut readers = std::collections::BTreeSet::new();
        for spec in &self.file.run {
            let sim = Simulation::load(self.scenario_path(spec), &spec.set)?;
            let declared = sim.ranges()?;
            let settings = sim.settings()?;
            for d in &declared {
                let (Spread::Drawn(Range { inferred_from, .. })
                | Spread::Fixed { inferred_from, .. }) = &d.spread;
                for r in inferred_from {
                    add(r, &d.key);
                }
            }
            if let Some((key, v, range, file)) = sim.outside_ranges()?.into_iter().next() {
                return Err(at(
                    format!("run {}", spec.id),
                    format!(
                        "{key} is {v} in this run (its scenario's or its own `set`), outside the \
                         range {}..{} that {} declares for it: a shipped value stays inside its \
                         sourced range (widen the range, with a basis, or correct the value)",
                        range.low,
                        range.high,
                        file.display()
                    ),
                ));
            }
            let Some(cal) = &self.file.calibration else {
                continue;
            };
            let Some(d) = declared.iter().find(|d| d.key == cal.parameter) else {
                continue;
            };
            for c in &self.file.check {
                if c.runs().contains(&spec.id.as_str()) {
                    readers.insert(c.id().to_string());
                }
            }
            let range = match &d.spread {
                Spread::Drawn(r) if r.inferred_from.contains(&cal.row) => r,
                _ => {
                    return Err(at(
                        "calibration".into(),
                        format!(
                            "{} needs a drawn range in {} with inferred_from = [\"{}\"]: the fit \
                             searches only inside the parameter's sourced range",
                            cal.parameter,
                            d.file.display(),
                            cal.row
                        ),
                    ))
                }
            };
            cal_range = Some((range.low, range.high));
            let nominal = settings
                .iter()
                .find(|(k, _)| k == &cal.parameter)
                .and_then(|(_, v)| v.as_float().or(v.as_integer().map(|i| i as f64)));
            if let Some(v) = nominal {
                if v <= range.low || v >= range.high {
                    nominal_at_bound = Some(v);
                }
            }
        }
        if let Some(cal) = &mut self.file.calibration {
            let Some((low, high)) = cal_range else {
                return Err(at(
                    "calibration".into(),
                    format!(
                        "no run of row '{}' reads {}: nothing to calibrate",
                        cal.row, cal.parameter
                    ),
                ));
            };
            (cal.low, cal.high) = (low, high);
        }
        self.calibrations = calibrations;
        self.nominal_at_bound = nominal_at_bound;
        self.calibration_readers = readers;
        Ok(())
    }

    /// The rows as judged, with what calibration says of them: the values chosen from each
    /// row, and a fit that ended at its bound (`at_bound`: the parameter, for its row and the
    /// rows that read it; such a row is never a pass).
    pub(crate) fn mark(&self, rows: &mut [ValidationRow], at_bound: bool) {
        for row in rows {
            if let Some(keys) = self.calibrations.get(&row.id) {
                row.calibration = keys.clone();
            }
            if let Some(cal) = &self.file.calibration {
                if at_bound && self.calibration_readers.contains(&row.id) {
                    row.fit_at_bound = Some(cal.parameter.clone());
                    if row.verdict == Verdict::Pass {
                        row.verdict = Verdict::Fail;
                    }
                }
            }
        }
    }

    /// All `*.toml` directly in `dir`, sorted by name.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Vec<Experiment>, ScenarioError> {
        Experiment::load_dir_path(dir.as_ref())
    }

    fn load_dir_path(dir: &Path) -> Result<Vec<Experiment>, ScenarioError> {
        let io = |cause| ScenarioError::Io {
            path: dir.to_owned(),
            named_by: Some("--experiments".into()),
            cause,
        };
        let paths = crate::shipped::toml_files(dir).map_err(io)?;
        if paths.is_empty() {
            return Err(ScenarioError::NoExperiments {
                dir: dir.to_owned(),
            });
        }
        paths.into_iter().map(Experiment::load).collect()
    }

    /// The rows `only` selects, and the runs they need (in the file's order, each once). The
    /// experiment's id (`seed002`, as `irqlab list` names it) selects all of its rows; anything
    /// else is matched against each row's id.
    pub(crate) fn selected(&self, only: Option<&str>) -> (Vec<&Check>, Vec<&RunSpec>) {
        let whole = only.is_some_and(|p| names_experiment(&self.file.id, p));
        let checks: Vec<&Check> = self
            .file
            .check
            .iter()
            .filter(|c| whole || only.is_none_or(|p| matches_pattern(c.id(), p)))
            .collect();
        let needed = self
            .file
            .run
            .iter()
            .filter(|spec| checks.iter().any(|c| c.runs().contains(&spec.id.as_str())))
            .collect();
        (checks, needed)
    }

    /// The scenario file a run names.
    pub(crate) fn scenario_path(&self, spec: &RunSpec) -> PathBuf {
        crate::shipped::resolve(self.path.parent().unwrap_or(Path::new(".")), &spec.scenario)
    }

    /// Run `needed`, each with `before(spec)` applied before its own `set` and with the seed
    /// `seed(scenario's seed)`: each run's result and the samples it ran.
    pub(crate) fn run_all(
        &self,
        needed: &[&RunSpec],
        opts: &ValidateOptions,
        before: &(dyn Fn(&RunSpec) -> Vec<String> + Sync),
        seed: &(dyn Fn(u64) -> u64 + Sync),
    ) -> Result<BTreeMap<String, (RunResult, u64)>, ScenarioError> {
        // Independent runs: on all cores, each exactly as it would run alone.
        use rayon::prelude::*;
        needed
            .par_iter()
            .map(
                |spec| -> Result<(String, (RunResult, u64)), ScenarioError> {
                    let mut set = before(spec);
                    // A key `before` gives (a draw's value of an `[[inferred]]` setting the run
                    // also sets) is the draw's: the run's own value would hide it.
                    let given: Vec<String> = set
                        .iter()
                        .filter_map(|f| f.split_once('=').map(|(k, _)| k.trim().to_string()))
                        .collect();
                    set.extend(
                        spec.set
                            .iter()
                            .filter(|f| {
                                !f.split_once('=')
                                    .is_some_and(|(k, _)| given.iter().any(|g| g == k.trim()))
                            })
                            .cloned(),
                    );
                    let sim = Simulation::load(self.scenario_path(spec), &set)?;
                    let n = spec.samples(opts, sim.samples());
                    let result = sim.run(
                        seed(sim.seed()),
                        n,
                        TRACE_PACKETS,
                        spec.replications,
                        opts.progress.clone(),
                    )?;
                    Ok((spec.id.clone(), (result, n)))
                },
            )
            .collect()
    }

    /// How many interrupts the runs of the rows `opts` selects will simulate.
    pub(crate) fn planned_samples(&self, opts: &ValidateOptions) -> Result<u64, ScenarioError> {
        let (_, needed) = self.selected(opts.only.as_deref());
        needed
            .iter()
            .map(|spec| {
                let sim = Simulation::load(self.scenario_path(spec), &spec.set)?;
                Ok(sim.interrupts(spec.samples(opts, sim.samples()), spec.replications))
            })
            .sum()
    }

    /// Judge `checks` on the runs' results.
    /// Fit the `[calibration]` parameter so that its row meets its published point, with
    /// `before`'s flags (a draw's values) on every run: bisection over `low..high` to `step`,
    /// the value whose row lies nearest the point (a bound when the point lies beyond it).
    pub(crate) fn refit(
        &self,
        cal: &Calibration,
        opts: &ValidateOptions,
        before: &(dyn Fn(&RunSpec) -> Vec<String> + Sync),
        seed: &(dyn Fn(u64) -> u64 + Sync),
    ) -> Result<Fit, ScenarioError> {
        let check = (self.file.check.iter())
            .find(|c| c.id() == cal.row)
            .expect("checked when loaded");
        let Judged::Value {
            point: Some(target),
            ..
        } = check.judged()
        else {
            unreachable!("checked when loaded")
        };
        let needed: Vec<&RunSpec> = (self.file.run.iter())
            .filter(|r| check.runs().contains(&r.id.as_str()))
            .collect();
        let value_at = |x: f64| -> Result<f64, ScenarioError> {
            let with = |spec: &RunSpec| {
                let mut f = before(spec);
                f.push(format!("{}={x}", cal.parameter));
                f
            };
            let ran = self.run_all(&needed, opts, &with, seed)?;
            let results: BTreeMap<String, RunResult> =
                ran.into_iter().map(|(id, (r, _))| (id, r)).collect();
            Ok(self.evaluate(check, &results).value.unwrap_or(f64::NAN))
        };
        let (mut lo, mut hi) = cal.search_bounds();
        let snap = |x: f64| cal.low + ((x - cal.low) / cal.step).round() * cal.step;
        let fit = |value: f64| Fit {
            value,
            at_bound: cal.at_bound(value),
        };
        let (mut f_lo, mut f_hi) = (value_at(lo)?, value_at(hi)?);
        let rising = f_hi > f_lo;
        let below = |f: f64| (f < target) == rising;
        if below(f_hi) {
            return Ok(fit(hi));
        }
        if !below(f_lo) {
            return Ok(fit(lo));
        }
        loop {
            let mid = snap((lo + hi) / 2.0);
            if mid <= lo || mid >= hi {
                break;
            }
            let f = value_at(mid)?;
            if below(f) {
                (lo, f_lo) = (mid, f);
            } else {
                (hi, f_hi) = (mid, f);
            }
        }
        Ok(fit(if (f_lo - target).abs() <= (f_hi - target).abs() {
            lo
        } else {
            hi
        }))
    }

    pub(crate) fn evaluate_all(
        &self,
        checks: &[&Check],
        results: &BTreeMap<String, RunResult>,
    ) -> Vec<ValidationRow> {
        checks.iter().map(|c| self.evaluate(c, results)).collect()
    }

    /// Run what the selected rows need and compare.
    /// Returns the rows and the runs' distributions.
    pub fn validate(
        &self,
        opts: &ValidateOptions,
    ) -> Result<(Vec<ValidationRow>, ExperimentRuns, Vec<String>), ScenarioError> {
        let (checks, needed) = self.selected(opts.only.as_deref());
        let mut notes = Vec::new();
        let ran = self.run_all(&needed, opts, &|_| Vec::new(), &|seed| seed)?;
        for spec in &needed {
            let Some(full) = spec.full_samples else {
                continue;
            };
            let ran = ran[&spec.id].1;
            notes.push(if ran == full {
                format!(
                    "{} ran the published {} samples ({} replications)",
                    spec.id,
                    thousands(full),
                    spec.replications
                )
            } else {
                format!(
                    "{} ran {} of the published {} samples; `irqlab validate --full` runs them all",
                    spec.id,
                    thousands(ran),
                    thousands(full)
                )
            });
        }
        let results: BTreeMap<String, RunResult> =
            ran.into_iter().map(|(id, (r, _))| (id, r)).collect();
        let mut rows = self.evaluate_all(&checks, &results);
        self.mark(&mut rows, self.nominal_at_bound.is_some());
        let mut histograms = Vec::new();
        for spec in &needed {
            let r = &results[&spec.id];
            histograms.extend(crate::report::histograms(r, Some(&spec.id)));
        }
        Ok((
            rows,
            ExperimentRuns {
                experiment: self.file.id.clone(),
                title: self.file.title.clone(),
                histograms,
            },
            notes,
        ))
    }

    fn row(&self, id: &str, metric: String, source: &str) -> ValidationRow {
        ValidationRow {
            id: id.to_string(),
            experiment: self.file.id.clone(),
            metric,
            published: String::new(),
            published_text: String::new(),
            simulated: String::new(),
            value: None,
            holds: None,
            interval: None,
            tolerance: String::new(),
            verdict: Verdict::Fail,
            samples: None,
            needs: None,
            source: source.to_string(),
            detail: String::new(),
            calibration: Vec::new(),
            fit_at_bound: None,
        }
    }

    /// A seed-001 row's platform (named from this file) with its cards (checked when loaded).
    fn population(
        &self,
        platform: &str,
        cards: &[String],
    ) -> Result<crate::plan::swizzle::Population, ScenarioError> {
        let path = crate::shipped::resolve(self.path.parent().unwrap_or(Path::new(".")), platform);
        let cards: Vec<crate::plan::swizzle::Card> =
            cards.iter().filter_map(|c| c.parse().ok()).collect();
        crate::plan::swizzle::Population::load(&path, &cards)
    }

    fn evaluate(&self, check: &Check, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let mean = |r: &str, m: LatencyMetric| m.of(&runs[r]).mean_ns().unwrap_or(f64::NAN);
        match check {
            Check::Ratio {
                id,
                metric,
                numerator,
                denominator,
                published,
                published_text,
                tolerance_rel,
                source,
            } => {
                let (hn, hd) = (metric.of(&runs[numerator]), metric.of(&runs[denominator]));
                let (n, d) = (mean(numerator, *metric), mean(denominator, *metric));
                let ratio = n / d;
                let err = ratio / published - 1.0;
                let name = metric.name();
                let mut row = self.row(id, format!("{name} {numerator} / {denominator}"), source);
                // One published window everywhere (DESIGN.md): the seed's words where they give
                // an interval ("almost 3x" = 2.7-3.0), as the uncertainty run judges it, else
                // the point with the row's tolerance.
                let (low, high) = match wording_interval(published_text) {
                    Some(w) => {
                        row.published = format!("{:.2}x-{:.2}x", w.0, w.1);
                        row.tolerance = "as worded".into();
                        w
                    }
                    None => {
                        row.published = format!("{published:.1}x");
                        row.tolerance = format!("±{:.0}%", tolerance_rel * 100.0);
                        (
                            published * (1.0 - tolerance_rel),
                            published * (1.0 + tolerance_rel),
                        )
                    }
                };
                row.published_text = published_text.clone();
                row.simulated = format!("{ratio:.2}x");
                row.value = Some(ratio);
                row.samples = Some(hn.count().min(hd.count()));
                let (interval, decision) =
                    decide::decide_ratio(mean_sample(hn), mean_sample(hd), low, high);
                row.interval = interval.map(|i| format!("{:.2}x..{:.2}x", i.lo, i.hi));
                judge(&mut row, decision);
                row.detail = format!(
                    "mean {name}: {numerator} {n:.0} ns, {denominator} {d:.0} ns; ratio {ratio:.3} \
                     is {:+.1}% from the published {published}",
                    err * 100.0
                );
                row
            }
            Check::TaskletProportional {
                id,
                groups,
                tolerance_rel,
                published_text,
                source,
            } => {
                let mut ok = true;
                let mut notes = Vec::new();
                for g in groups {
                    let base = &g[0];
                    for r in g {
                        let (i, t) = (
                            mean(r, LatencyMetric::IsrLatency),
                            mean(r, LatencyMetric::TaskletLatency),
                        );
                        if t.partial_cmp(&i) != Some(std::cmp::Ordering::Greater) {
                            ok = false;
                            notes
                                .push(format!("{r}: tasklet {t:.0} ns is not above ISR {i:.0} ns"));
                        }
                        if r != base {
                            let ri = i / mean(base, LatencyMetric::IsrLatency);
                            let rt = t / mean(base, LatencyMetric::TaskletLatency);
                            let dev = rt / ri - 1.0;
                            if dev.abs() > *tolerance_rel {
                                ok = false;
                            }
                            notes.push(format!(
                                "{r}/{base}: ISR {ri:.2}x, tasklet {rt:.2}x ({:+.0}%)",
                                dev * 100.0
                            ));
                        }
                    }
                }
                let mut row = self.row(
                    id,
                    "tasklet latency > ISR latency; tasklet ratios track ISR ratios".into(),
                    source,
                );
                row.published = "holds".into();
                row.published_text = published_text.clone();
                row.simulated = if ok { "holds" } else { "does not hold" }.into();
                row.holds = Some(ok);
                row.tolerance = format!("ratios ±{:.0}%", tolerance_rel * 100.0);
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                row.detail = notes.join("; ");
                row
            }
            Check::TraceSequence {
                id,
                sequences,
                source,
            } => {
                let mut ok = true;
                let mut notes = Vec::new();
                for seq in sequences {
                    let got = interrupt_sequence(&runs[&seq.run], seq.expected.len());
                    let same = got.len() == seq.expected.len()
                        && got
                            .iter()
                            .zip(&seq.expected)
                            .all(|(g, e)| packet_matches(g, e));
                    ok &= same;
                    notes.push(format!(
                        "{}: expected [{}], simulated [{}]",
                        seq.run,
                        seq.expected.join(", "),
                        got.join(", ")
                    ));
                }
                let runs: Vec<&str> = sequences.iter().map(|s| s.run.as_str()).collect();
                let mut row = self.row(
                    id,
                    format!("analyzer packets of one interrupt: {}", runs.join(", ")),
                    source,
                );
                let lens: Vec<String> = sequences
                    .iter()
                    .map(|s| s.expected.len().to_string())
                    .collect();
                row.published = format!("{} in order", lens.join(" and "));
                row.published_text = "packets of Figure 7".into();
                row.simulated = if ok { "same order" } else { "different order" }.into();
                row.holds = Some(ok);
                row.tolerance = "exact".into();
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                row.detail = notes.join("; ");
                row
            }
            Check::QuantileRange {
                id,
                run,
                metric,
                quantile,
                low_ns,
                high_ns,
                published_samples,
                published_text,
                source,
            } => {
                let h = metric.of(&runs[run]);
                let q = h.quantile_ns(*quantile).ok().flatten();
                let label = quantile_label(*quantile);
                let mut row = self.row(id, format!("{label} {} of {run}", metric.name()), source);
                row.published = us_range(*low_ns, *high_ns);
                row.published_text = published_text.clone();
                row.simulated =
                    q.map_or("no samples".into(), |v| format!("{:.2} us", v as f64 / 1e3));
                row.value = q.map(|v| v as f64);
                row.tolerance = "range".into();
                row.samples = Some(h.count());
                let (low, high) = (*low_ns as f64, *high_ns as f64);
                let (interval, decision) = match (q, published_samples) {
                    (None, _) => (None, Decision::Undecided(Needs::AtLeast(1))),
                    // An extreme: comparable over at least the published sample count.
                    (Some(v), Some(need)) if *quantile == 0.0 || *quantile == 1.0 => {
                        if h.count() < *need {
                            (None, Decision::Undecided(Needs::AtLeast(*need)))
                        } else {
                            let i = Interval {
                                lo: v as f64,
                                hi: v as f64,
                            };
                            (Some(i), decided(decide::against(i, low, high)))
                        }
                    }
                    (Some(v), _) => quantile_decision(h, *quantile, v, low, high),
                };
                row.interval = interval.map(|i| us_interval(i.lo, i.hi));
                judge(&mut row, decision);
                row.detail = format!(
                    "{label} of {} samples: {} ns; published range {low_ns}..{high_ns} ns",
                    h.count(),
                    q.map_or("-".into(), |v| v.to_string())
                );
                row
            }
            Check::Exceedance {
                id,
                run,
                metric,
                threshold_ns,
                inclusive,
                low,
                high,
                published_count,
                published_samples,
                published_text,
                source,
            } => {
                let h = metric.of(&runs[run]);
                let n = h.count();
                let (low, high, counted) =
                    rate_window(*low, *high, *published_count, *published_samples);
                let (low, high) = (&low, &high);
                let above: u64 = h
                    .iter_buckets(1)
                    .filter(|&(v, _)| {
                        if *inclusive {
                            v >= *threshold_ns
                        } else {
                            v > *threshold_ns
                        }
                    })
                    .map(|(_, c)| c)
                    .sum::<u64>()
                    // Samples beyond the histogram's 10 s range exceed any threshold it has.
                    + h.overflows();
                let p = above as f64 / n.max(1) as f64;
                let op = if *inclusive { ">=" } else { ">" };
                let t_us = *threshold_ns as f64 / 1e3;
                let mut row = self.row(
                    id,
                    format!("P({} {op} {t_us} us) of {run}", metric.name()),
                    source,
                );
                row.published = published_text.clone();
                row.simulated = format!("{} of {}", thousands(above), thousands(n));
                row.value = (n > 0).then_some(p);
                row.tolerance = match counted {
                    Some((_, of, i)) => format!("{:.2}-{:.1}/{}M", i.lo, i.hi, of as f64 / 1e6),
                    None if *low > 0.0 => format!("{low:.0e}..{high:.0e}"),
                    None => format!("<= {high:.0e}"),
                };
                row.samples = Some(n);
                let (i, decision) = decide::decide_rate(above, n, *low, *high);
                row.interval = Some(format!("{:.1e}..{:.1e}", i.lo, i.hi));
                judge(&mut row, decision);
                row.detail = format!(
                    "{above} of {n} samples {op} {threshold_ns} ns: {p:.3e}, expected {low:.3e} .. \
                     {high:.3e}{}",
                    counted.map_or(String::new(), |(k, of, i)| format!(
                        " (the Poisson 95% interval of {k} in {of}: {:.3}..{:.3} counts)",
                        i.lo, i.hi
                    ))
                );
                row
            }
            Check::StepPeriod {
                id,
                run,
                published_ns,
                tolerance_rel,
                search_min_ns,
                search_max_ns,
                published_text,
                source,
                ..
            } => {
                let mut row = self.row(
                    id,
                    format!("histogram box width (bus-clock quantum) of {run}"),
                    source,
                );
                row.published = format!("{published_ns:.0} ns = {:.2} MHz", 1e3 / published_ns);
                row.published_text = published_text.clone();
                let counts = runs[run].counts.as_ref();
                row.samples = counts.and_then(|c| runs[run].metric(&c.metric).map(|h| h.count()));
                row.tolerance = format!("±{:.0}%", tolerance_rel * 100.0);
                // The box-width estimator (irqlab_stats::boxwidth), chosen on synthetic data and
                // committed before it judged seed 004 (DESIGN.md, "How a row is judged", 4).
                let found = counts.and_then(|c| {
                    irqlab_stats::boxwidth::box_width(
                        &c.values,
                        c.count_ns,
                        *search_min_ns,
                        *search_max_ns,
                    )
                });
                match found {
                    Some(f) => {
                        let err = f.width_ns / published_ns - 1.0;
                        row.simulated =
                            format!("{:.0} ns = {:.2} MHz", f.width_ns, 1e3 / f.width_ns);
                        let within = err.abs() <= *tolerance_rel;
                        row.value = Some(f.width_ns);
                        row.holds = Some(within);
                        row.verdict = if within { Verdict::Pass } else { Verdict::Fail };
                        row.detail = format!(
                            "{} significant step edges; box width {:.1} ns ({:+.1}% from \
                             {published_ns} ns), a minimum {:.1} noise sigmas deep (relative \
                             depth {:.2}){}",
                            f.edges,
                            f.width_ns,
                            err * 100.0,
                            f.depth_sigmas,
                            f.depth,
                            f.runner_up.map_or(String::new(), |r| format!(
                                "; runner-up {:.1} ns, relative depth {:.2}",
                                r.width_ns, r.depth
                            ))
                        );
                    }
                    None => {
                        row.simulated = "no box width".into();
                        row.detail = "the histogram has no autocorrelation minimum of its edges \
                                      that stands out of its counting noise"
                            .into();
                    }
                }
                row
            }
            Check::CyclictestShape {
                id,
                runs: names,
                expect,
                interval_us,
                min_low_us,
                min_high_us,
                avg_low_us,
                avg_high_us,
                max_low_us,
                max_high_us,
                published_avg_us,
                published_max_us,
                factor,
                published_text,
                source,
            } => {
                let mut row = self.row(id, format!("cyclictest of {}", names.join(", ")), source);
                let f = factor.unwrap_or(1.0);
                let near = |v: f64, published: &[f64], k: usize| {
                    published.get(k).is_none_or(|&p| v >= p / f && v <= p * f)
                };
                row.published_text = published_text.clone();
                row.tolerance = "shape".into();
                let mut ok = true;
                let mut seen = Vec::new();
                for (k, name) in names.iter().enumerate() {
                    let Some(h) = runs[name].metric(CYCLICTEST).filter(|h| !h.is_empty()) else {
                        ok = false;
                        seen.push(format!("{name}: no samples"));
                        continue;
                    };
                    let min = h.min_ns().unwrap_or(0) as f64 / 1e3;
                    let avg = h.mean_ns().unwrap_or(0.0) / 1e3;
                    let max = h.max_ns().unwrap_or(0) as f64 / 1e3;
                    let run_us = h.count() as f64 * interval_us;
                    let starved = max >= 0.5 * run_us && (0.45..=0.55).contains(&(avg / max));
                    let holds = match expect {
                        ShapeExpect::Starved => starved,
                        ShapeExpect::Served => {
                            let inside = |v: f64, lo: &Option<f64>, hi: &Option<f64>| {
                                lo.is_none_or(|l| v >= l) && hi.is_none_or(|h| v <= h)
                            };
                            !starved
                                && inside(min, min_low_us, min_high_us)
                                && inside(avg, avg_low_us, avg_high_us)
                                && inside(max, max_low_us, max_high_us)
                                && near(avg, published_avg_us, k)
                                && near(max, published_max_us, k)
                        }
                    };
                    ok &= holds;
                    seen.push(format!(
                        "{name}: min {min:.0} avg {avg:.0} max {max:.0} us{}",
                        if starved { " (starved)" } else { "" }
                    ));
                }
                row.published = match expect {
                    ShapeExpect::Starved => "starved".into(),
                    ShapeExpect::Served => {
                        let b = |lo: &Option<f64>, hi: &Option<f64>| match (lo, hi) {
                            (Some(l), Some(h)) => format!("{l}-{h}"),
                            (None, Some(h)) => format!("<= {h}"),
                            (Some(l), None) => format!(">= {l}"),
                            (None, None) => "any".into(),
                        };
                        let min = match (min_low_us, min_high_us) {
                            (None, None) => String::new(),
                            _ => format!("min {} us, ", b(min_low_us, min_high_us)),
                        };
                        let each = |v: &[f64], window: String| {
                            if v.is_empty() {
                                window
                            } else {
                                let list: Vec<String> =
                                    v.iter().map(|x| thousands(x.round() as u64)).collect();
                                format!("{} (each x{f})", list.join(", "))
                            }
                        };
                        format!(
                            "{min}avg {} us, max {} us",
                            each(published_avg_us, b(avg_low_us, avg_high_us)),
                            each(published_max_us, b(max_low_us, max_high_us))
                        )
                    }
                };
                row.simulated = if ok { "holds" } else { "does not hold" }.into();
                row.holds = Some(ok);
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                row.detail = seen.join("; ");
                row
            }
            Check::Throughput {
                id,
                run,
                published_pps,
                tolerance_rel,
                split,
                published_text,
                source,
            } => {
                let r = &runs[run];
                let count = |name: &str| {
                    r.counters
                        .iter()
                        .find(|c| c.name == name)
                        .map_or(0, |c| c.value)
                };
                let frames = nic_sum(r, "_frames_transmitted_in_run");
                let length_us = count("run_length_us");
                let mut row = self.row(id, format!("frames forwarded per second, {run}"), source);
                row.published_text = published_text.clone();
                row.published = format!("{} pps", thousands(published_pps.round() as u64));
                row.tolerance = format!("±{:.0}%", tolerance_rel * 100.0);
                if length_us == 0 {
                    row.simulated = "no rate".into();
                    row.verdict = Verdict::Fail;
                    row.detail =
                        format!("run {run} has no fixed length (duration_ms): a rate needs one");
                    return row;
                }
                let pps = frames as f64 / (length_us as f64 * 1e-6);
                let err = pps / published_pps - 1.0;
                let ok = err.abs() <= *tolerance_rel;
                row.simulated = format!("{} pps", thousands(pps.round() as u64));
                row.value = Some(pps);
                row.holds = Some(ok);
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                // Whether it is a calibration row is the experiment's to say (`mark`).
                row.detail = format!(
                    "{} frames on the wire in {:.1} ms, {:+.1}% from the published rate",
                    thousands(frames),
                    length_us as f64 / 1e3,
                    err * 100.0,
                );
                if let Some(s) = split {
                    let u = &runs[&s.unsplit_run];
                    let u_us = u
                        .counters
                        .iter()
                        .find(|c| c.name == "run_length_us")
                        .map_or(0, |c| c.value);
                    let u_pps = nic_sum(u, "_frames_transmitted_in_run") as f64
                        / (u_us.max(1) as f64 * 1e-6);
                    row.detail += &format!(
                        "; split penalty {:.0} ns a frame per busy core against {} (published \
                         {:.0} ns; {})",
                        s.ns(pps, u_pps),
                        s.unsplit_run,
                        s.ns(*published_pps, s.unsplit_published_pps),
                        s.published_text
                    );
                }
                row
            }
            Check::FramesLost {
                id,
                runs: names,
                published_percent,
                published_text,
                source,
            } => {
                let mut row = self.row(id, format!("lost frames of {}", names.join(", ")), source);
                row.published_text = published_text.clone();
                row.published = published_percent
                    .iter()
                    .map(|p| format!("{p:.2}%"))
                    .collect::<Vec<_>>()
                    .join(" ");
                row.tolerance = "0 where 0, else x2".into();
                let mut ok = true;
                let mut seen = Vec::new();
                for (name, &published) in names.iter().zip(published_percent) {
                    let (frames, lost) = (
                        nic_sum(&runs[name], "_frames"),
                        // What the generator would miss: frames dropped on arrival, and
                        // frames routed to a port whose transmit ring was full.
                        nic_sum(&runs[name], "_frames_lost")
                            + nic_sum(&runs[name], "_frames_tx_dropped"),
                    );
                    let got = 100.0 * lost as f64 / frames.max(1) as f64;
                    ok &= if published == 0.0 {
                        lost == 0
                    } else {
                        got >= published / 2.0 && got <= published * 2.0
                    };
                    seen.push(format!("{got:.2}%"));
                }
                row.simulated = seen.join(" ");
                row.holds = Some(ok);
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                row.detail = format!("runs {}", names.join(", "));
                row
            }
            Check::InterruptsFall {
                id,
                runs: names,
                published,
                step_factor,
                published_text,
                source,
            } => {
                let mut row = self.row(
                    id,
                    format!("interrupts per NIC over {}", names.join(", ")),
                    source,
                );
                row.published_text = published_text.clone();
                row.tolerance = format!("each step's ratio within x{step_factor}");
                let ratios =
                    |v: &[f64]| -> Vec<f64> { v.windows(2).map(|w| w[1] / w[0]).collect() };
                let show = |v: &[f64]| -> String {
                    v.iter()
                        .map(|r| format!("{r:.2}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let mut ok = true;
                let (mut sim_text, mut pub_text, mut detail) = (vec![], vec![], vec![]);
                for (nic, counts) in published {
                    // The model's rates (interrupts per simulated second), so that runs of
                    // different lengths compare.
                    let rates: Vec<f64> = names
                        .iter()
                        .map(|n| {
                            let r = &runs[n];
                            let get = |name: &str| {
                                r.counters
                                    .iter()
                                    .find(|c| c.name == name)
                                    .map_or(0, |c| c.value)
                            };
                            let us = get("simulated_time_us").max(1) as f64;
                            get(&format!("{nic}_interrupts")) as f64 / (us * 1e-6)
                        })
                        .collect();
                    let (sim, publ) = (ratios(&rates), ratios(counts));
                    let mut off = Vec::new();
                    for (k, (s, p)) in sim.iter().zip(&publ).enumerate() {
                        let inside =
                            s.is_finite() && *s >= p / step_factor && *s <= p * step_factor;
                        if !inside {
                            ok = false;
                            off.push(format!(
                                "{} -> {}: {s:.2} against {p:.2}",
                                names[k],
                                names[k + 1]
                            ));
                        }
                    }
                    sim_text.push(format!("{nic} {}", show(&sim)));
                    pub_text.push(format!("{nic} {}", show(&publ)));
                    detail.push(format!(
                        "{nic}: interrupts/s {} (steps {}; published counts {}, steps {}){}",
                        rates
                            .iter()
                            .map(|r| thousands(r.round() as u64))
                            .collect::<Vec<_>>()
                            .join(", "),
                        show(&sim),
                        counts
                            .iter()
                            .map(|c| thousands(c.round() as u64))
                            .collect::<Vec<_>>()
                            .join(", "),
                        show(&publ),
                        if off.is_empty() {
                            String::new()
                        } else {
                            format!("; outside x{step_factor}: {}", off.join(", "))
                        }
                    ));
                }
                row.simulated = format!("steps {}", sim_text.join("; "));
                row.published = format!("steps {}", pub_text.join("; "));
                row.holds = Some(ok);
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                row.detail = detail.join("; ");
                row
            }
            Check::IrqTable {
                id,
                platform,
                cards,
                unswizzled,
                swizzled,
                published_text,
                source,
            } => {
                let mut row = self.row(id, "IRQ of each INTx function".into(), source);
                row.published_text = published_text.clone();
                row.tolerance = "exact".into();
                let show = |m: &BTreeMap<u8, Vec<String>>| {
                    m.iter()
                        .map(|(irq, names)| format!("IRQ{irq}: {}", names.join(" ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                let published = |m: &BTreeMap<String, Vec<String>>| {
                    irq_sets(
                        m.iter()
                            .map(|(irq, names)| (irq.parse().expect("checked when loaded"), names)),
                    )
                };
                let (pub_before, pub_after) = (published(unswizzled), published(swizzled));
                row.published = format!(
                    "none: {} | swizzled: {}",
                    show(&pub_before),
                    show(&pub_after)
                );
                let plan = self.population(platform, cards).and_then(|p| p.plan());
                match plan {
                    Err(e) => {
                        row.simulated = "cannot be worked out".into();
                        row.holds = Some(false);
                        row.detail = e.to_string();
                    }
                    Ok(plan) => {
                        let sorted = |m: &BTreeMap<u8, Vec<String>>| {
                            irq_sets(m.iter().map(|(&irq, names)| (irq, names)))
                        };
                        let (before, after) =
                            (sorted(&plan.table_before), sorted(&plan.table_after));
                        row.simulated =
                            format!("none: {} | swizzled: {}", show(&before), show(&after));
                        let ok = before == pub_before && after == pub_after;
                        row.holds = Some(ok);
                        row.detail = format!(
                            "INTXSWZCTRL planned: {}",
                            plan.registers
                                .iter()
                                .map(|r| format!("{} {:02X}h", r.port, r.after))
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                    }
                }
                row.verdict = if row.holds == Some(true) {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                row
            }
            Check::AffinitySpread {
                id,
                platform,
                cards,
                flows,
                unswizzled_even,
                swizzled_even,
                published_text,
                source,
            } => {
                use crate::plan::affinity;
                let mut row = self.row(id, "static IRQ affinity of NIC flows".into(), source);
                row.published_text = published_text.clone();
                row.tolerance = "exact".into();
                let word = |even: bool| if even { "even" } else { "not even" };
                row.published = format!(
                    "none: {} | swizzled: {}",
                    word(*unswizzled_even),
                    word(*swizzled_even)
                );
                let flows: Vec<affinity::Flow> =
                    flows.iter().filter_map(|f| f.parse().ok()).collect();
                let planned = self
                    .population(platform, cards)
                    .and_then(|p| Ok((p.plan()?, p.cpus())))
                    .map_err(|e| e.to_string())
                    .and_then(|(swz, cpus)| {
                        let plan = |t| {
                            affinity::plan(&affinity::irq_map(t), &flows, &cpus)
                                .map_err(|e| e.to_string())
                        };
                        Ok((plan(&swz.table_before)?, plan(&swz.table_after)?))
                    });
                match planned {
                    Err(e) => {
                        row.simulated = "cannot be worked out".into();
                        row.holds = Some(false);
                        row.detail = e;
                    }
                    Ok((before, after)) => {
                        let show = |p: &affinity::AffinityPlan| {
                            format!(
                                "{} (busiest CPU {} NICs, even {})",
                                word(p.is_even()),
                                p.busiest,
                                p.even
                            )
                        };
                        row.simulated =
                            format!("none: {} | swizzled: {}", show(&before), show(&after));
                        row.holds = Some(
                            before.is_even() == *unswizzled_even
                                && after.is_even() == *swizzled_even,
                        );
                        let cpus = |p: &affinity::AffinityPlan| {
                            p.cpu_nics
                                .iter()
                                .map(|(c, n)| format!("cpu{c} {}", n.join(" ")))
                                .collect::<Vec<_>>()
                                .join("; ")
                        };
                        row.detail = format!(
                            "planned none: {} | swizzled: {}",
                            cpus(&before),
                            cpus(&after)
                        );
                    }
                }
                row.verdict = if row.holds == Some(true) {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                row
            }
            Check::PhaseOrder {
                id,
                run,
                quantile,
                heavier,
                lighter,
                published_text,
                source,
            } => {
                let label = quantile_label(*quantile);
                let mut row = self.row(
                    id,
                    format!("{label} of phase {heavier} > {label} of phase {lighter} ({run})"),
                    source,
                );
                row.published = "holds".into();
                row.published_text = published_text.clone();
                row.tolerance = "exact".into();
                // The phases of the run's headline metric.
                let r = &runs[run];
                let headline = r.metrics.first().map_or("", |m| m.name.as_str());
                let phase = |name: &str| r.phase(headline, Some(name)).filter(|h| !h.is_empty());
                match (phase(heavier), phase(lighter)) {
                    (Some(hh), Some(hl)) => {
                        let q = |h: &LatencyHistogram| {
                            h.quantile_ns(*quantile).ok().flatten().unwrap_or(0)
                        };
                        let (h, l) = (q(hh), q(hl));
                        row.simulated = format!(
                            "{} ({:.2} vs {:.2} us)",
                            if h > l { "holds" } else { "does not hold" },
                            h as f64 / 1e3,
                            l as f64 / 1e3
                        );
                        row.samples = Some(hh.count().min(hl.count()));
                        row.holds = Some(h > l);
                        let decision = match (
                            quantile_interval(hh, *quantile),
                            quantile_interval(hl, *quantile),
                        ) {
                            (Some(ih), Some(il)) => {
                                row.interval = Some(format!(
                                    "{} vs {}",
                                    us_interval(ih.lo, ih.hi),
                                    us_interval(il.lo, il.hi)
                                ));
                                if ih.lo > il.hi {
                                    Decision::Pass
                                } else if ih.hi < il.lo {
                                    Decision::Fail
                                } else {
                                    let half = ((ih.hi - ih.lo) + (il.hi - il.lo)) / 2.0;
                                    Decision::Undecided(decide::extrapolate(
                                        hh.count().min(hl.count()),
                                        half,
                                        (h as f64 - l as f64).abs(),
                                    ))
                                }
                            }
                            _ => Decision::Undecided(decide::quantile_min_samples(*quantile)),
                        };
                        judge(&mut row, decision);
                        row.detail = format!(
                            "{label}: {heavier} {h} ns ({} samples), {lighter} {l} ns ({} samples)",
                            hh.count(),
                            hl.count()
                        );
                    }
                    _ => {
                        row.simulated = "no samples".into();
                        row.detail = format!(
                            "run {run} has no samples in phase '{heavier}' or '{lighter}' (or \
                             no workload phases)"
                        );
                    }
                }
                row
            }
        }
    }
}

/// A mean, its spread and count, for a ratio's interval.
fn mean_sample(h: &LatencyHistogram) -> MeanSample {
    MeanSample {
        n: h.count(),
        mean: h.mean_ns().unwrap_or(f64::NAN),
        sd: h.stdev_ns().unwrap_or(f64::NAN),
    }
}

/// The 95% order-statistic interval of quantile `q` (strictly between 0 and 1) in ns, `None`
/// when the samples are too few for one.
fn quantile_interval(h: &LatencyHistogram, q: f64) -> Option<Interval> {
    let (l, u) = decide::quantile_ranks(h.count(), q)?;
    Some(Interval {
        lo: h.value_at_rank_ns(l)? as f64,
        hi: h.value_at_rank_ns(u)? as f64,
    })
}

/// A quantile's interval and decision against `[low, high]` ns, with `value` its point value.
fn quantile_decision(
    h: &LatencyHistogram,
    q: f64,
    value: u64,
    low: f64,
    high: f64,
) -> (Option<Interval>, Decision) {
    match quantile_interval(h, q) {
        None => (None, Decision::Undecided(decide::quantile_min_samples(q))),
        Some(i) => {
            let d = match decide::against(i, low, high) {
                Some(inside) => decided(Some(inside)),
                None => Decision::Undecided(decide::extrapolate(
                    h.count(),
                    (i.hi - i.lo) / 2.0,
                    decide::distance(value as f64, low, high),
                )),
            };
            (Some(i), d)
        }
    }
}

/// An IRQ table with each IRQ's names sorted: tables that list the same functions under each
/// IRQ, in any order, compare equal.
fn irq_sets<'a>(rows: impl Iterator<Item = (u8, &'a Vec<String>)>) -> BTreeMap<u8, Vec<String>> {
    rows.map(|(irq, names)| {
        let mut names = names.clone();
        names.sort();
        (irq, names)
    })
    .collect()
}

/// Pass inside, fail outside; `None` (across a boundary) cannot happen for a point.
fn decided(inside: Option<bool>) -> Decision {
    match inside {
        Some(true) => Decision::Pass,
        Some(false) => Decision::Fail,
        None => Decision::Undecided(Needs::Never),
    }
}

/// Set a row's verdict (and what would decide it) from a decision.
/// The simulated cyclictest's metric.
const CYCLICTEST: &str = "cyclictest_latency";

/// What a seed-003 table says of cyclictest in a set of runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeExpect {
    Starved,
    Served,
}

/// A run's network controllers together: the sum of the counters named `NIC{suffix}` over
/// every NIC (a controller is a `NIC_frames_lost` counter's prefix).
fn nic_sum(r: &RunResult, suffix: &str) -> u64 {
    let get = |name: &str| {
        r.counters
            .iter()
            .find(|c| c.name == name)
            .map_or(0, |c| c.value)
    };
    r.counters
        .iter()
        .filter_map(|c| c.name.strip_suffix("_frames_lost"))
        .map(|nic| get(&format!("{nic}{suffix}")))
        .sum()
}

fn judge(row: &mut ValidationRow, d: Decision) {
    (row.verdict, row.needs) = match d {
        Decision::Pass => (Verdict::Pass, None),
        Decision::Fail => (Verdict::Fail, None),
        Decision::Undecided(n) => (Verdict::Undecided, Some(SamplesNeeded::from(n))),
    };
}

fn us_interval(lo_ns: f64, hi_ns: f64) -> String {
    format!("{:.2}..{:.2} us", lo_ns / 1e3, hi_ns / 1e3)
}

/// "median", "p99", "p99.9" for a quantile.
fn quantile_label(q: f64) -> String {
    if q == 0.0 {
        return "minimum".into();
    }
    if q == 1.0 {
        return "maximum".into();
    }
    if q == 0.5 {
        return "median".into();
    }
    let p = q * 100.0;
    if p.fract() == 0.0 {
        format!("p{p:.0}")
    } else {
        format!("p{p}")
    }
}

fn us_range(low_ns: u64, high_ns: u64) -> String {
    format!("{:.1}-{:.1} us", low_ns as f64 / 1e3, high_ns as f64 / 1e3)
}

/// "TYPE ADDRESS" strings of the packets from the first interrupt packet on.
fn interrupt_sequence(r: &RunResult, n: usize) -> Vec<String> {
    let rows = trace_rows(&r.trace);
    let start = rows.iter().position(|row| {
        row.direction == "up"
            && (row.tlp_type.starts_with("Msg Assert")
                || (row.tlp_type.starts_with("MWr")
                    && row.address.is_some_and(|a| a >> 20 == 0xFEE)))
    });
    let Some(start) = start else { return vec![] };
    rows[start..]
        .iter()
        .take(n)
        .map(|row| match row.address {
            Some(a) => format!("{} {a:08X}", row.tlp_type),
            None => row.tlp_type.clone(),
        })
        .collect()
}

fn packet_matches(got: &str, expected: &str) -> bool {
    match expected.strip_suffix('*') {
        Some(prefix) => got.starts_with(prefix),
        None => got == expected,
    }
}

/// How many interrupts `validate_dir` will simulate with these options (for a progress bar).
pub fn planned_samples(
    dir: impl AsRef<Path>,
    opts: &ValidateOptions,
) -> Result<u64, ScenarioError> {
    Experiment::load_dir(dir)?
        .iter()
        .map(|e| e.planned_samples(opts))
        .sum()
}

/// Validate every experiment in `dir`.
pub fn validate_dir(
    dir: impl AsRef<Path>,
    opts: &ValidateOptions,
) -> Result<ValidationReport, ScenarioError> {
    // A generic shell over a body compiled once, here (as `Experiment::load`).
    validate_path(dir.as_ref(), opts)
}

fn validate_path(dir: &Path, opts: &ValidateOptions) -> Result<ValidationReport, ScenarioError> {
    let mut rows = Vec::new();
    let mut experiments = Vec::new();
    let mut notes = Vec::new();
    // The experiments side by side as well as their runs (seed 004's one long run would hold
    // one core while the other waited); their results are taken in the directory's order.
    use rayon::prelude::*;
    let validated = Experiment::load_dir(dir)?
        .par_iter()
        .map(|e| e.validate(opts))
        .collect::<Result<Vec<_>, _>>()?;
    for (r, runs, n) in validated {
        if !r.is_empty() {
            rows.extend(r);
            experiments.push(runs);
            notes.extend(n);
        }
    }
    Ok(ValidationReport {
        rows,
        experiments,
        notes,
        uncertainty: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches_pattern("msi-ws-ioapic", "ws"));
        assert!(matches_pattern("msi-ws-ioapic", "msi-ws-*"));
        assert!(matches_pattern("msi-ws-ioapic", "*ioapic"));
        assert!(!matches_pattern("msi-soc-ioapic", "msi-ws-*"));
        assert!(matches_pattern("msi-soc-xtpic", "msi-*-xtpic"));
    }

    #[test]
    fn an_experiment_is_named_by_its_whole_id() {
        assert!(names_experiment("seed002", "seed002"));
        // A part of the id, or a pattern, is a row pattern, as before: `seed` must not select
        // every row, nor `s*` every experiment rather than the swizzle rows.
        assert!(!names_experiment("seed002", "seed00*"));
        assert!(!names_experiment("seed001", "s*"));
        assert!(!names_experiment("seed002", "seed"));
        assert!(!names_experiment("seed002", "002"));
        assert!(!names_experiment("seed002", "fpga"));
    }

    #[test]
    fn rows_that_cannot_be_judged_are_refused_when_loaded() {
        let check = |extra: &str| -> Check {
            toml::from_str(&format!(
                "kind = \"exceedance\"\nid = \"x\"\nrun = \"r\"\nmetric = \"round_trip\"\n\
                 threshold_ns = 1\npublished_text = \"t\"\nsource = \"s\"\n{extra}"
            ))
            .unwrap()
        };
        assert_eq!(check("high = 1e-7").problem(), None);
        assert_eq!(
            check("published_count = 2\npublished_samples = 9").problem(),
            None
        );
        assert!(check("").problem().is_some(), "neither form");
        assert!(
            check("published_count = 2").problem().is_some(),
            "half a count"
        );
        assert!(
            check("high = 1e-7\npublished_count = 2\npublished_samples = 9")
                .problem()
                .is_some(),
            "both forms"
        );
        let min: Check = toml::from_str(
            "kind = \"quantile_range\"\nid = \"m\"\nrun = \"r\"\nmetric = \"pps_latency\"\n\
             quantile = 0.0\nlow_ns = 1\nhigh_ns = 2\npublished_text = \"t\"\nsource = \"s\"",
        )
        .unwrap();
        assert!(min.problem().unwrap().contains("published_samples"));
        let quantile = |kind: &str, q: f64| -> Check {
            let fields = if kind == "phase_order" {
                "heavier = \"a\"\nlighter = \"b\""
            } else {
                "metric = \"pps_latency\"\nlow_ns = 1\nhigh_ns = 2\npublished_samples = 10"
            };
            toml::from_str(&format!(
                "kind = \"{kind}\"\nid = \"m\"\nrun = \"r\"\nquantile = {q:?}\n{fields}\n\
                 published_text = \"t\"\nsource = \"s\""
            ))
            .unwrap()
        };
        assert!(quantile("quantile_range", 1.5).problem().is_some());
        assert!(quantile("quantile_range", 1.0).problem().is_none());
        // Two maxima have no order-statistic interval at any count: refused, not looped on.
        assert!(quantile("phase_order", 1.0).problem().is_some());
        assert!(quantile("phase_order", 0.0).problem().is_some());
        assert!(quantile("phase_order", 0.99).problem().is_none());
    }

    #[test]
    fn packet_patterns() {
        assert!(packet_matches("MWr(32) FEE00000", "MWr(32) FEE*"));
        assert!(!packet_matches("MWr(32) F9000040", "MWr(32) FEE*"));
        assert!(packet_matches("CplD", "CplD"));
    }
}
