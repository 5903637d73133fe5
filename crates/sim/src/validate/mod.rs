//! Validation rows, one module per kind: each kind of `[[check]]` in `experiments/*.toml` is a
//! struct that says which runs it reads, judges one draw of them (`RowKind::evaluate`) and
//! says how `validate --uncertainty` judges its band over many draws (`RowKind::judged`; the
//! band itself is worked out in [`crate::uncertainty`], the same way for every kind).
//! `experiment.rs` loads the files and runs the scenarios; it knows no kind.
//!
//! Adding a kind: a file here with its struct and its `impl RowKind`, and one line in
//! `kinds!` below (the `kind = "..."` name is the variant's, in snake case).

use crate::result::RunResult;
use crate::scenario::ScenarioError;
use irqlab_stats::decide::{self, Decision, Interval, MeanSample, Needs};
use irqlab_stats::results::{Quantity, SamplesNeeded, ValidationRow, Verdict};
use irqlab_stats::uncertainty::Scale;
use irqlab_stats::LatencyHistogram;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// What every kind's file uses: the shared helpers and types of this module, and the crates'.
pub(crate) mod prelude {
    pub(crate) use super::{
        bad_cards, decided, judge, mean_sample, nic_sum, quantile_decision, quantile_interval,
        quantile_label, set_holds, us_interval, us_range, wording_interval, Judged, LatencyMetric,
        RowContext, RowKind, BAD_CARDS, SHAPE_PASS_SHARE,
    };
    pub(crate) use crate::result::RunResult;
    pub(crate) use irqlab_stats::decide::{self, Decision, Interval, Needs};
    pub(crate) use irqlab_stats::results::{Quantity, ValidationRow, Verdict};
    pub(crate) use irqlab_stats::thousands;
    pub(crate) use irqlab_stats::uncertainty::Scale;
    pub(crate) use irqlab_stats::LatencyHistogram;
    pub(crate) use serde::Deserialize;
    pub(crate) use std::collections::BTreeMap;
}

/// One kind of validation row.
pub(crate) trait RowKind {
    /// The row's id, unique over every experiment.
    fn id(&self) -> &str;
    /// What makes this row unusable as written, if anything (refused when the experiment
    /// loads, naming the row).
    fn problem(&self) -> Option<&'static str> {
        None
    }
    /// The runs (`[[run]]` ids) the row reads; none for a row worked out on a platform's
    /// topology.
    fn runs(&self) -> Vec<&str>;
    /// How `validate --uncertainty` judges the row over its draws: a value against a published
    /// interval, or a criterion that must hold in a share of the draws.
    fn judged(&self) -> Judged;
    /// The row, judged on one draw: the runs' results (every id of [`RowKind::runs`] is
    /// present).
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow;
}

/// What a row needs of its experiment: the file's id (every row names it) and its folder (a
/// row worked out on a platform names the platform's file from there). The experiment hands it
/// over (`Experiment::row_context`): the rows know nothing of how experiments load and run.
pub(crate) struct RowContext<'a> {
    pub experiment: &'a str,
    pub dir: &'a Path,
}

impl RowContext<'_> {
    /// A row of the experiment, not yet judged (every kind's `evaluate` starts from it).
    pub(crate) fn row(&self, id: &str, metric: String, source: &str) -> ValidationRow {
        ValidationRow {
            id: id.to_string(),
            experiment: self.experiment.to_string(),
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

    /// A seed-001 row's platform (named from the experiment's folder) with its cards (checked
    /// when loaded).
    pub(crate) fn population(
        &self,
        platform: &str,
        cards: &[String],
    ) -> Result<crate::plan::swizzle::Population, ScenarioError> {
        let path = crate::shipped::resolve(self.dir, platform);
        let cards: Vec<crate::plan::swizzle::Card> =
            cards.iter().filter_map(|c| c.parse().ok()).collect();
        crate::plan::swizzle::Population::load(&path, &cards)
    }
}

/// The kinds: `Variant(module::Type)`, the variant named as the files' `kind` (snake case).
macro_rules! kinds {
    ($($variant:ident($module:ident)),* $(,)?) => {
        $(mod $module;)*
        $(pub use $module::$variant;)*

        /// One validation row (`[[check]]`), by its `kind`.
        #[derive(Clone, Debug, Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum Check {
            $(
                #[doc = concat!("[`", stringify!($variant), "`]")]
                $variant($variant),
            )*
        }

        impl Check {
            fn kind(&self) -> &dyn RowKind {
                match self {
                    $(Check::$variant(k) => k,)*
                }
            }
        }
    };
}

kinds! {
    Ratio(ratio),
    TaskletProportional(tasklet_proportional),
    TraceSequence(trace_sequence),
    QuantileRange(quantile_range),
    Exceedance(exceedance),
    StepPeriod(step_period),
    CyclictestShape(cyclictest_shape),
    FramesLost(frames_lost),
    InterruptsFall(interrupts_fall),
    Throughput(throughput),
    IrqTable(irq_table),
    AffinitySpread(affinity_spread),
    PhaseOrder(phase_order),
}

pub use cyclictest_shape::ShapeExpect;
pub use throughput::SplitPenalty;
pub use trace_sequence::ExpectedTrace;

impl Check {
    pub fn id(&self) -> &str {
        self.kind().id()
    }
    /// What makes this row unusable as written, if anything.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        self.kind().problem()
    }
    pub(crate) fn runs(&self) -> Vec<&str> {
        self.kind().runs()
    }
    /// How the row is judged over draws.
    pub(crate) fn judged(&self) -> Judged {
        self.kind().judged()
    }
    pub(crate) fn evaluate(
        &self,
        exp: &RowContext<'_>,
        runs: &BTreeMap<String, RunResult>,
    ) -> ValidationRow {
        self.kind().evaluate(exp, runs)
    }
}

/// A criterion's outcome on the row: whether it holds, and the verdict that follows.
pub(crate) fn set_holds(row: &mut ValidationRow, ok: bool) {
    row.holds = Some(ok);
    row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
}

/// Does a row's `cards` list hold one that is not PORT=FUNCTIONS?
pub(crate) fn bad_cards(cards: &[String]) -> bool {
    cards
        .iter()
        .any(|c| c.parse::<crate::plan::swizzle::Card>().is_err())
}

/// What [`bad_cards`] refuses.
pub(crate) const BAD_CARDS: &str = "a row's `cards` are PORT=FUNCTIONS (\"port6=2\")";

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
    pub(crate) fn of(self, r: &RunResult) -> &LatencyHistogram {
        static NONE: std::sync::OnceLock<LatencyHistogram> = std::sync::OnceLock::new();
        r.metric(self.key())
            .unwrap_or_else(|| NONE.get_or_init(LatencyHistogram::new))
    }
    /// Its name in a run's result.
    pub(crate) fn key(self) -> &'static str {
        match self {
            LatencyMetric::IsrLatency => "isr_latency",
            LatencyMetric::TaskletLatency => "tasklet_latency",
            LatencyMetric::RoundTrip => "round_trip",
            LatencyMetric::PpsLatency => "pps_latency",
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            LatencyMetric::IsrLatency => "ISR latency",
            LatencyMetric::TaskletLatency => "tasklet latency",
            LatencyMetric::RoundTrip => "round trip",
            LatencyMetric::PpsLatency => "PPS latency",
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

/// A mean, its spread and count, for a ratio's interval.
pub(crate) fn mean_sample(h: &LatencyHistogram) -> MeanSample {
    MeanSample {
        n: h.count(),
        mean: h.mean_ns().unwrap_or(f64::NAN),
        sd: h.stdev_ns().unwrap_or(f64::NAN),
    }
}

/// The 95% order-statistic interval of quantile `q` (strictly between 0 and 1) in ns, `None`
/// when the samples are too few for one.
pub(crate) fn quantile_interval(h: &LatencyHistogram, q: f64) -> Option<Interval> {
    let (l, u) = decide::quantile_ranks(h.count(), q)?;
    Some(Interval {
        lo: h.value_at_rank_ns(l)? as f64,
        hi: h.value_at_rank_ns(u)? as f64,
    })
}

/// A quantile's interval and decision against `[low, high]` ns, with `value` its point value.
pub(crate) fn quantile_decision(
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

/// Pass inside, fail outside; `None` (across a boundary) cannot happen for a point.
pub(crate) fn decided(inside: Option<bool>) -> Decision {
    match inside {
        Some(true) => Decision::Pass,
        Some(false) => Decision::Fail,
        None => Decision::Undecided(Needs::Never),
    }
}

/// A run's network controllers together: the sum of the counters named `NIC{suffix}` over
/// every NIC (a controller is a `NIC_frames_lost` counter's prefix).
pub(crate) fn nic_sum(r: &RunResult, suffix: &str) -> u64 {
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

/// Set a row's verdict (and what would decide it) from a decision.
pub(crate) fn judge(row: &mut ValidationRow, d: Decision) {
    (row.verdict, row.needs) = match d {
        Decision::Pass => (Verdict::Pass, None),
        Decision::Fail => (Verdict::Fail, None),
        Decision::Undecided(n) => (Verdict::Undecided, Some(SamplesNeeded::from(n))),
    };
}

pub(crate) fn us_interval(lo_ns: f64, hi_ns: f64) -> String {
    format!("{:.2}..{:.2} us", lo_ns / 1e3, hi_ns / 1e3)
}

/// "median", "p99", "p99.9" for a quantile.
pub(crate) fn quantile_label(q: f64) -> String {
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

pub(crate) fn us_range(low_ns: u64, high_ns: u64) -> String {
    format!("{:.1}-{:.1} us", low_ns as f64 / 1e3, high_ns as f64 / 1e3)
}
