//! Sweeps beyond one machine (DESIGN.md, "Beyond one machine"): uncertainty draws and what-if
//! grids are embarrassingly parallel, so `irqlab sweep` plans one as a manifest of points, runs
//! it in shards wherever there are cores (a Slurm job array, GNU parallel, HTCondor), and merges
//! the shards' results.
//!
//! - [`plan_draws`] and [`plan_grid`] make the [`Manifest`]. Each point carries its seed, derived
//!   from the point and never from a shard count, and its values as the exact `--set` text
//!   that runs it.
//! - [`Sweep::run_shard`]: shard I of N runs the points whose index is I modulo N (on all
//!   cores) and returns each point's index and result: a draw's row values, the nominal
//!   validation, or a grid run's histograms in HdrHistogram's V2 form with its counters. The
//!   manifest's fingerprint goes with them, so results of another sweep are never merged.
//! - [`Sweep::merge`] checks every shard's results (their digest, their points, and for a grid
//!   every histogram and metric: [`Sweep::merge`] says which), that every point is there once
//!   (else it names the shards to run again), and builds the same reports one machine would:
//!   for draws the validation with its uncertainty section that `validate --uncertainty N`
//!   prints, for a grid a [`GridReport`].
//!
//! A point's result depends only on the point, and the merge reads points in index order,
//! whatever shard or file they came from; f64 values cross the JSON exactly (shortest
//! round-trip digits, read back with serde_json's `float_roundtrip`), histograms as V2 counts
//! plus their exact sum and extremes. So the merged result of any N shards equals the unsharded
//! run bit for bit, and a merged sweep of draws equals `validate --uncertainty N`.

use crate::experiment::{validate_dir, Experiment, ValidateOptions};
use crate::result::{Count, Measured, RunResult, Shown};
use crate::scenario::Scenario;
use crate::scenario::{replication_seed, ScenarioError};
use crate::uncertainty::{self, point_seed, Plan, PointRows};
use crate::whatif::{rows_on, rows_planned_samples, WhatIf};
use irqlab_stats::results::{
    GridAxis, GridCell, GridReport, RunReport, ValidationReport, WhatIfReport, WhatIfRow,
};
use irqlab_stats::{LatencyHistogram, SerializedHistogram, SerializedHistogramError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A sweep's plan: its points and what runs each. `irqlab sweep plan` writes it (the `result`
/// of a JSON envelope of kind `sweep-plan`); every shard runs from it, and the merge checks the
/// shards' results against it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sweep", rename_all = "snake_case")]
pub enum Manifest {
    /// `validate --uncertainty N` in points: N draws and the nominal validation.
    Draws(DrawsPlan),
    /// The cartesian product of what-if values over one scenario.
    Grid(GridPlan),
    /// `sim SCENARIO --uncertainty N` in points: N draws over the scenario's ranges, the
    /// plain run, and the validation rows on the scenario.
    WhatIf(WhatIfPlan),
}

/// A what-if's draws over one scenario's ranges (`sim --uncertainty N`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhatIfPlan {
    /// The scenario as given, and the file it is read from: absolute, or under `<shipped>`.
    pub scenario: String,
    pub scenario_file: String,
    /// The user's overrides: every run takes them; a parameter they set is not drawn.
    pub set: Vec<String>,
    /// The plain run's seed, every run's samples and replications.
    pub seed: u64,
    pub samples: u64,
    pub replications: u32,
    /// The seed the draws and every draw's run seed derive from.
    pub draw_seed: u64,
    /// The experiments directory whose rows on the scenario are judged; `None`: no rows.
    pub rows: Option<String>,
    /// The parameters drawn, in the order of every draw's `set`.
    pub parameters: Vec<PlannedParameter>,
    /// The draws, index 0 to N-1, the plain run (index N), then the rows (N+1) if judged.
    pub points: Vec<WhatIfPoint>,
}

/// One point of a what-if's sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WhatIfPoint {
    /// Draw `index`: the scenario with `set`, then the user's overrides, and the run seed
    /// `seed` (`WhatIf::draw_seed_of`).
    Draw {
        index: u64,
        seed: u64,
        set: Vec<String>,
    },
    /// The plain run.
    Nominal { index: u64 },
    /// The validation rows that run the scenario file, with their nominal verdicts.
    Rows { index: u64 },
}

/// Uncertainty draws over the experiments' ranges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawsPlan {
    /// The experiments directory: absolute, or `<shipped>/experiments` (inside irqlab).
    pub experiments: String,
    /// The rows `--only` selects.
    pub only: Option<String>,
    /// Every run's sample count (`--samples`); `None`: the experiments' own (with `full`, the
    /// published counts).
    pub samples: Option<u64>,
    pub full: bool,
    /// The seed the draws (a Latin hypercube) and every point's seed derive from.
    pub draw_seed: u64,
    /// The parameters drawn, in the order of every draw's `set`.
    pub parameters: Vec<PlannedParameter>,
    /// The draws, index 0 to N-1, then the nominal validation, index N.
    pub points: Vec<DrawPoint>,
}

/// A parameter as the draws were planned over it: a run checks that the experiments' files
/// still declare the same, so that shards made from changed files are not merged into a report
/// of the old ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedParameter {
    /// As the report names it (the key, with its file's name where two files share the key).
    pub name: String,
    /// The `--set` key, and the file whose value it is.
    pub key: String,
    pub file: String,
    /// A whole number: drawn values are rounded.
    pub integer: bool,
    pub nominal: f64,
    pub low: f64,
    pub high: f64,
    /// `uniform` or `log-uniform`.
    pub dist: String,
}

/// One point of a sweep of draws.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DrawPoint {
    /// Draw `index`: every selected run with `set` before its own overrides, each run's seed
    /// derived from `seed` and its scenario's seed.
    Draw {
        index: u64,
        /// `point_seed(draw_seed, index)`.
        seed: u64,
        /// One `KEY=VALUE` per parameter, in the parameters' order; the values in shortest
        /// round-trip form, so they read back as the very numbers drawn.
        set: Vec<String>,
    },
    /// The nominal validation: the files' own values and the scenarios' seeds. The report's
    /// nominal column and the exit status come from it.
    Nominal { index: u64 },
}

/// A what-if grid over one scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridPlan {
    /// The scenario as given (a file, or a shipped scenario's name such as `seed000/ws`), and
    /// the file it is read from: absolute, or under `<shipped>`.
    pub scenario: String,
    pub scenario_file: String,
    /// Overrides every point takes before its own values.
    pub set: Vec<String>,
    /// Interrupts each point simulates.
    pub samples: u64,
    /// The seed of every cell's first point (the scenario's unless `--seed`).
    pub seed: u64,
    /// Points per cell, each with its own seed; the merge adds their histograms.
    pub repeat: u32,
    pub axes: Vec<GridAxis>,
    /// Cell by cell (the first axis varies slowest), each cell's `repeat` points together.
    pub points: Vec<GridPoint>,
}

/// One point of a grid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridPoint {
    pub index: u64,
    /// The cell it belongs to: `index / repeat`.
    pub cell: u64,
    /// [`grid_seed`]`(seed, index % repeat)`.
    pub seed: u64,
    /// The cell's values, one `KEY=VALUE` per axis.
    pub set: Vec<String>,
}

/// The seed of the `repeat`-th point of every grid cell. Every cell uses the same seeds
/// (common random numbers): a what-if grid is read as differences between cells, and with the
/// same random streams a difference is the parameter's, not seed noise. Point 0 takes the base
/// seed itself, so a cell with one point is exactly `irqlab sim` with the cell's `--set` flags;
/// later points take their seeds as a run's replications do.
pub fn grid_seed(seed: u64, repeat: u64) -> u64 {
    if repeat == 0 {
        seed
    } else {
        replication_seed(seed, repeat)
    }
}

/// One shard's results: `irqlab sweep run` writes them (the `result` of a JSON envelope of kind
/// `sweep-shard`), one file per shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardResults {
    /// [`Manifest::fingerprint`] of the manifest the points are of.
    pub manifest_fingerprint: String,
    pub shard: u32,
    pub of: u32,
    /// [`points_sha256`] of the points, with the manifest and the shard's I and N; `None` only
    /// in files of an irqlab before the digest (which the merge refuses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points_sha256: Option<String>,
    /// In index order.
    pub points: Vec<PointResult>,
}

/// The digest a shard's results carry: SHA-256 (hex) of a domain tag, the SHA-256 of the whole
/// manifest (its compact JSON), the shard's I and N, and the points' compact JSON (which reads
/// back and writes again byte for byte: see the module's notes on exact numbers).
///
/// It tells a file edited or damaged after `irqlab sweep run` wrote it, and points moved to a
/// file of another shard or another manifest, since the merge computes it again from the
/// manifest it was given. It is not a signature: anyone who can write the file can run this
/// function too. Against such an edit the merge has only its checks of consistency (see
/// [`Sweep::merge`]), which an edit that keeps every histogram whole (two swapped, one
/// replaced by another run's) passes; running a shard again beside the others is the check
/// for that (a point whose results differ is refused).
pub fn points_sha256(manifest: &Manifest, shard: u32, of: u32, points: &[PointResult]) -> String {
    sealed(&manifest_sha256(manifest), shard, of, points)
}

/// SHA-256 of the manifest's compact JSON: once per merge, however many shards.
fn manifest_sha256(manifest: &Manifest) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(serde_json::to_vec(manifest).expect("a manifest always serializes")).into()
}

/// [`points_sha256`] with the manifest's SHA-256.
fn sealed(manifest_sha256: &[u8; 32], shard: u32, of: u32, points: &[PointResult]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"irqlab sweep shard points v1\0");
    h.update(manifest_sha256);
    h.update(shard.to_be_bytes());
    h.update(of.to_be_bytes());
    h.update(serde_json::to_vec(points).expect("results always serialize"));
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// What one point gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PointResult {
    /// A draw: each selected row's value and whether its criterion held, and each run's sample
    /// count (what `validate --uncertainty` aggregates).
    Draw {
        index: u64,
        rows: Vec<RowResult>,
        /// `experiment/run` -> samples.
        samples: BTreeMap<String, u64>,
        /// `experiment/parameter` -> the value an experiment's `[calibration]` fitted in
        /// this draw.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        fitted: BTreeMap<String, f64>,
    },
    /// The nominal validation, whole (rows, the runs' distributions for plots, notes).
    Nominal {
        index: u64,
        validation: ValidationReport,
    },
    /// A grid point's run: its latency distributions and counters.
    Run {
        index: u64,
        metrics: Vec<MetricResult>,
        counters: Vec<CounterResult>,
    },
    /// A what-if's run (a draw or the plain run): its header, metric summaries and counters,
    /// what the what-if's report is made of.
    Report { index: u64, run: Box<RunReport> },
    /// A what-if's validation rows.
    Rows { index: u64, rows: Vec<WhatIfRow> },
}

impl PointResult {
    pub fn index(&self) -> u64 {
        match self {
            PointResult::Draw { index, .. }
            | PointResult::Nominal { index, .. }
            | PointResult::Run { index, .. }
            | PointResult::Report { index, .. }
            | PointResult::Rows { index, .. } => *index,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            PointResult::Draw { .. } => "draw",
            PointResult::Nominal { .. } => "nominal",
            PointResult::Run { .. } => "run",
            PointResult::Report { .. } => "report",
            PointResult::Rows { .. } => "rows",
        }
    }
}

/// A row's outcome in one draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowResult {
    pub id: String,
    /// The row's value in its quantity; a value JSON has no number for (NaN, infinity) as the
    /// string `NaN`, `inf` or `-inf`.
    #[serde(with = "exact_f64")]
    pub value: Option<f64>,
    pub holds: Option<bool>,
}

/// One latency distribution of a grid point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricResult {
    pub name: String,
    pub description: String,
    /// The workload phase; `None`: the whole run.
    pub phase: Option<String>,
    /// The instrument's count period in ns, when it counts.
    pub quantum_ns: Option<f64>,
    pub histogram: SerializedHistogram,
}

/// One counter of a grid point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterResult {
    pub name: String,
    pub value: u64,
    /// Shown only when it counted something (as in `irqlab sim`).
    pub if_nonzero: bool,
}

/// A merged sweep.
#[derive(Clone, Debug, PartialEq)]
pub enum Merged {
    /// Draws: the nominal validation with its uncertainty section, as `validate
    /// --uncertainty N` makes it.
    Validation(Box<ValidationReport>),
    Grid(GridReport),
    /// A what-if: the report `sim --uncertainty N` makes.
    WhatIf(Box<WhatIfReport>),
}

/// Why a sweep cannot be planned, run or merged.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A `--grid` flag that cannot be planned.
    #[error("--grid {flag}: {message}")]
    Grid { flag: String, message: String },
    /// One cell of the grid cannot run, though each of its values can.
    #[error("--grid: the cell {cell} cannot run: {message}")]
    Cell { cell: String, message: String },
    /// `--only` selects no row.
    #[error(
        "no validation row matches --only {0}; give an experiment's id exactly (seed002) or a \
         pattern of row ids (a substring such as ws, or with *, such as msi-ws-*; irqlab list \
         shows them all)"
    )]
    NoRows(String),
    /// A manifest that contradicts itself (edited by hand?).
    #[error("the manifest is inconsistent: {0}; plan it again with irqlab sweep plan")]
    Manifest(String),
    /// The experiments' ranges are not those the manifest was planned over.
    #[error(
        "the experiments' ranges are not those the manifest was planned over: {0}. Run and merge \
         with the files the sweep was planned with, or plan it again"
    )]
    Stale(String),
    /// A shard `--shard I --of N` cannot name.
    #[error("--shard {shard} --of {of}: the shard index runs from 0 to N-1 (N at least 1)")]
    Shard { shard: u32, of: u32 },
    /// Results of another manifest.
    #[error(
        "{file}: its points belong to another sweep (manifest fingerprint {found}; this \
         manifest's is {expected}); keep each sweep's results in a directory of their own"
    )]
    OtherManifest {
        file: String,
        found: String,
        expected: String,
    },
    /// A point the manifest does not have, or of another kind.
    #[error("{file}: point {index}: {message}")]
    Point {
        file: String,
        index: u64,
        message: String,
    },
    /// The same point twice, with different results.
    #[error(
        "point {index} is in {first} and in {second} with different results; a point's result \
         depends only on the point, so one of them was made by another irqlab build or from \
         other files: delete the wrong one and run its shard again"
    )]
    Conflict {
        index: u64,
        first: String,
        second: String,
    },
    /// Points without a result. `shards` are the shards of `of` that run them (the shard count
    /// most result files were made with), to run again.
    #[error("{}", missing_message(.missing, *.total, .shards, *.of))]
    Missing {
        missing: Vec<u64>,
        total: usize,
        shards: Vec<u32>,
        of: Option<u32>,
    },
    /// A histogram that cannot be read back.
    #[error("{file}: point {index}: {source}")]
    Histogram {
        file: String,
        index: u64,
        source: SerializedHistogramError,
    },
    /// Shard results that fail the merge's checks ([`Sweep::merge`]), each with why.
    #[error("{}", rejected_message(.0))]
    Rejected(Vec<Rejected>),
}

/// A shard's results file the merge refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub file: String,
    /// The shard it says it is: I of N.
    pub shard: u32,
    pub of: u32,
    pub reason: String,
}

fn rejected_message(r: &[Rejected]) -> String {
    let lines: Vec<String> = r
        .iter()
        .map(|r| format!("  {}: {}", r.file, r.reason))
        .collect();
    format!(
        "{} shard result{} failed the merge's checks, so nothing was merged:\n{}\nEach was \
         edited or damaged after irqlab sweep run wrote it, or written by another irqlab: delete \
         it and run its shard again",
        r.len(),
        if r.len() == 1 { "" } else { "s" },
        lines.join("\n")
    )
}

fn missing_message(missing: &[u64], total: usize, shards: &[u32], of: Option<u32>) -> String {
    match of {
        None => format!("none of the {total} points has a result yet"),
        Some(of) => format!(
            "{} of {total} points have no result (point{} {}): shard{} {} of {of} did not \
             finish or did not run",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            ranges(missing.iter().copied()),
            if shards.len() == 1 { "" } else { "s" },
            ranges(shards.iter().map(|&s| u64::from(s))),
        ),
    }
}

/// `1, 4-7, 9`: ascending numbers with runs folded.
fn ranges(xs: impl Iterator<Item = u64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    let flush = |r: (u64, u64), out: &mut Vec<String>| {
        out.push(if r.0 == r.1 {
            r.0.to_string()
        } else {
            format!("{}-{}", r.0, r.1)
        })
    };
    for x in xs {
        run = match run {
            Some((a, b)) if x == b + 1 => Some((a, x)),
            Some(r) => {
                flush(r, &mut out);
                Some((x, x))
            }
            None => Some((x, x)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut out);
    }
    out.join(", ")
}

impl Manifest {
    /// The points.
    pub fn len(&self) -> usize {
        match self {
            Manifest::Draws(d) => d.points.len(),
            Manifest::Grid(g) => g.points.len(),
            Manifest::WhatIf(w) => w.points.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A fingerprint of the whole manifest (FNV-1a, 64 bits, of its compact JSON, in hex):
    /// stable across builds and machines, and any change to a point or a setting changes it.
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_vec(self).expect("a manifest always serializes");
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in json {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}")
    }

    /// The points shard `shard` of `of` runs: those whose index is `shard` modulo `of`. The
    /// assignment depends on nothing but the two numbers, so any machine running shard I of N
    /// runs the same points, and a point's result does not depend on it.
    pub fn shard_points(&self, shard: u32, of: u32) -> Vec<usize> {
        (shard as usize..self.len())
            .step_by(of.max(1) as usize)
            .collect()
    }

    /// Whether the manifest holds together: indices in order, every seed the one its index
    /// gives, every point's keys those of the parameters or axes.
    fn check(&self) -> Result<(), SweepError> {
        let bad = |m: String| Err(SweepError::Manifest(m));
        match self {
            Manifest::Draws(d) => {
                let n = d.points.len();
                for (i, p) in d.points.iter().enumerate() {
                    match p {
                        DrawPoint::Nominal { index } if *index as usize == i && i + 1 == n => {}
                        DrawPoint::Nominal { .. } => {
                            return bad(format!(
                                "point {i}: the nominal validation is the last point, index {}",
                                n - 1
                            ))
                        }
                        DrawPoint::Draw { index, seed, set } => {
                            if *index as usize != i {
                                return bad(format!("point {i} has index {index}"));
                            }
                            if *seed != point_seed(d.draw_seed, *index) {
                                return bad(format!(
                                    "draw {index} has seed {seed}, not the seed of draw {index} \
                                     of draw seed {}",
                                    d.draw_seed
                                ));
                            }
                            if set.len() != d.parameters.len() {
                                return bad(format!(
                                    "draw {index} sets {} values for {} parameters",
                                    set.len(),
                                    d.parameters.len()
                                ));
                            }
                            for (s, p) in set.iter().zip(&d.parameters) {
                                match s.split_once('=') {
                                    Some((k, v)) if k == p.key && parse_value(v).is_some() => {}
                                    _ => {
                                        return bad(format!(
                                            "draw {index}: {s:?} is not a number for {}",
                                            p.key
                                        ))
                                    }
                                }
                            }
                        }
                    }
                }
                if n < 2 {
                    return bad("a sweep of draws has at least one draw and the nominal run".into());
                }
            }
            Manifest::WhatIf(w) => {
                let draws = w
                    .points
                    .iter()
                    .filter(|p| matches!(p, WhatIfPoint::Draw { .. }))
                    .count();
                let expected = draws + 1 + usize::from(w.rows.is_some());
                if w.points.len() != expected {
                    return bad(format!(
                        "{} points, not {draws} draws, the plain run{}",
                        w.points.len(),
                        if w.rows.is_some() {
                            " and the rows"
                        } else {
                            ""
                        }
                    ));
                }
                for (i, p) in w.points.iter().enumerate() {
                    let ok = match p {
                        WhatIfPoint::Draw { index, seed, set } => {
                            *index as usize == i
                                && i < draws
                                && *seed
                                    == replication_seed(point_seed(w.draw_seed, *index), w.seed)
                                && set.len() == w.parameters.len()
                                && set.iter().zip(&w.parameters).all(|(s, p)| {
                                    s.split_once('=').is_some_and(|(k, v)| {
                                        k == p.key && parse_value(v).is_some()
                                    })
                                })
                        }
                        WhatIfPoint::Nominal { index } => *index as usize == i && i == draws,
                        WhatIfPoint::Rows { index } => *index as usize == i && i == draws + 1,
                    };
                    if !ok {
                        return bad(format!(
                            "point {i} ({p:?}) is not the what-if's point {i}: draws (each with \
                             its seed and one value per parameter), then the plain run, then \
                             the rows"
                        ));
                    }
                }
            }
            Manifest::Grid(g) => {
                if g.repeat == 0 {
                    return bad("repeat is 0".into());
                }
                if g.points != grid_points(&g.axes, g.seed, g.repeat) {
                    return bad(
                        "the points are not the product of the axes' values with repeat and seed"
                            .into(),
                    );
                }
            }
        }
        Ok(())
    }
}

/// A drawn value as the manifest writes it (`Parameter::flag`): whole or in exponent form.
fn parse_value(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Plan `draws` uncertainty draws over the experiments in `dir` (the rows `only` selects), as
/// `validate --uncertainty` would run them, and the nominal validation.
pub fn plan_draws(
    dir: &Path,
    only: Option<&str>,
    samples: Option<u64>,
    full: bool,
    draws: u32,
    draw_seed: u64,
) -> Result<Manifest, SweepError> {
    let experiments = Experiment::load_dir(dir)?;
    if !experiments.iter().any(|e| !e.selected(only).0.is_empty()) {
        return Err(SweepError::NoRows(only.unwrap_or_default().into()));
    }
    let plan = uncertainty::plan(&experiments, only, draws, draw_seed)?;
    let mut points: Vec<DrawPoint> = plan
        .points
        .iter()
        .enumerate()
        .map(|(d, values)| DrawPoint::Draw {
            index: d as u64,
            seed: point_seed(draw_seed, d as u64),
            set: plan
                .parameters
                .iter()
                .zip(values)
                .map(|(p, &v)| p.flag(v))
                .collect(),
        })
        .collect();
    points.push(DrawPoint::Nominal {
        index: u64::from(draws),
    });
    Ok(Manifest::Draws(DrawsPlan {
        experiments: dir.display().to_string(),
        only: only.map(str::to_string),
        samples,
        full,
        draw_seed,
        parameters: planned_parameters(&plan),
        points,
    }))
}

fn planned_parameters(plan: &Plan) -> Vec<PlannedParameter> {
    plan.parameters
        .iter()
        .zip(plan.names())
        .map(|(p, name)| PlannedParameter {
            name,
            key: p.key.clone(),
            file: p.file.display().to_string(),
            integer: p.integer,
            nominal: p.nominal,
            low: p.range.low,
            high: p.range.high,
            dist: p.range.dist.name().into(),
        })
        .collect()
}

/// The most cells a grid may have: far more than a table can show, and a typo's product
/// (`--grid a=1,...,1000 --grid b=1,...,1000`) is refused before it runs.
pub const MAX_GRID_CELLS: usize = 100_000;

/// Plan a what-if grid over the scenario `file` (`scenario` as the user named it): one cell per
/// combination of the `--grid KEY=V1,V2,...` flags' values, each `repeat` points of `samples`
/// interrupts (the scenario's own count when `None`), after the overrides `set`. Every value and
/// every cell is loaded once here, so a bad key or value is refused before anything runs.
pub fn plan_grid(
    scenario: &str,
    file: &Path,
    set: &[String],
    grid: &[String],
    samples: Option<u64>,
    seed: Option<u64>,
    repeat: u32,
) -> Result<Manifest, SweepError> {
    let base = Scenario::load(file, set)?;
    let mut axes: Vec<GridAxis> = Vec::new();
    for flag in grid {
        let err = |message: String| SweepError::Grid {
            flag: flag.clone(),
            message,
        };
        let Some((key, values)) = flag.split_once('=') else {
            return Err(err(
                "expected KEY=V1,V2,..., for example delivery=msi,ioapic,xtpic".into(),
            ));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(err("the key is empty; expected KEY=V1,V2,...".into()));
        }
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(err(
                "an empty value; list the values with commas between them, as V1,V2,...".into(),
            ));
        }
        if let Some(v) = values
            .iter()
            .enumerate()
            .find_map(|(i, v)| values[..i].contains(v).then_some(v))
        {
            return Err(err(format!("{v} is listed twice; each value is one cell")));
        }
        if axes.iter().any(|a| a.key == key) {
            return Err(err(format!(
                "{key} has a --grid flag already; list all its values in one"
            )));
        }
        if set
            .iter()
            .any(|s| s.split_once('=').map(|(k, _)| k.trim()) == Some(key))
        {
            return Err(err(format!(
                "{key} is also given with --set; give it in one place"
            )));
        }
        for v in &values {
            let mut with = set.to_vec();
            with.push(format!("{key}={v}"));
            Scenario::load(file, &with).map_err(|e| match e {
                ScenarioError::Override { message, .. } => err(format!("{key}={v}: {message}")),
                other => err(format!("{key}={v}: {other}")),
            })?;
        }
        axes.push(GridAxis {
            key: key.into(),
            values,
        });
    }
    if axes.is_empty() {
        return Err(SweepError::Grid {
            flag: String::new(),
            message: "a grid needs at least one --grid KEY=V1,V2,...".into(),
        });
    }
    let cells = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|&n| n <= MAX_GRID_CELLS);
    let Some(cells) = cells else {
        return Err(SweepError::Grid {
            flag: String::new(),
            message: format!(
                "the grid has more than {MAX_GRID_CELLS} cells; split it into several sweeps"
            ),
        });
    };
    let seed = seed.unwrap_or(base.seed());
    let points = grid_points(&axes, seed, repeat);
    // Values that load alone may not load together (a delivery its platform lacks, say).
    for c in 0..cells {
        let cell = &points[c * repeat as usize].set;
        let mut with = set.to_vec();
        with.extend(cell.iter().cloned());
        Scenario::load(file, &with).map_err(|e| SweepError::Cell {
            cell: cell.join(" "),
            message: e.to_string(),
        })?;
    }
    Ok(Manifest::Grid(GridPlan {
        scenario: scenario.into(),
        scenario_file: file.display().to_string(),
        set: set.to_vec(),
        samples: samples.unwrap_or(base.samples()),
        seed,
        repeat,
        axes,
        points,
    }))
}

/// Plan `sim SCENARIO --uncertainty N` as a sweep: N draws over the ranges the scenario's
/// files declare (those `set` pins are not drawn), the plain run, and (with `rows`, an
/// experiments directory) the validation rows that run the scenario file.
#[allow(clippy::too_many_arguments)]
pub fn plan_whatif(
    scenario: &str,
    file: &Path,
    set: &[String],
    samples: Option<u64>,
    seed: Option<u64>,
    draws: u32,
    draw_seed: u64,
    rows: Option<&Path>,
) -> Result<Manifest, SweepError> {
    let w = WhatIf::prepare(scenario, file, set, seed, samples, 1, draws, draw_seed)?;
    let n = w.points.len();
    let mut points: Vec<WhatIfPoint> = (0..n)
        .map(|i| WhatIfPoint::Draw {
            index: i as u64,
            seed: w.draw_seed_of(i),
            set: w
                .parameters
                .iter()
                .zip(&w.points[i])
                .map(|(p, &v)| p.flag(v))
                .collect(),
        })
        .collect();
    points.push(WhatIfPoint::Nominal { index: n as u64 });
    if rows.is_some() {
        points.push(WhatIfPoint::Rows {
            index: n as u64 + 1,
        });
    }
    Ok(Manifest::WhatIf(WhatIfPlan {
        scenario: scenario.into(),
        scenario_file: file.display().to_string(),
        set: set.to_vec(),
        seed: w.seed,
        samples: w.samples,
        replications: w.replications,
        draw_seed,
        rows: rows.map(|d| d.display().to_string()),
        parameters: whatif_parameters(&w),
        points,
    }))
}

fn whatif_parameters(w: &WhatIf) -> Vec<PlannedParameter> {
    w.parameters
        .iter()
        .map(|p| PlannedParameter {
            name: p.key.clone(),
            key: p.key.clone(),
            file: p.file.display().to_string(),
            integer: p.integer,
            nominal: p.nominal,
            low: p.range.low,
            high: p.range.high,
            dist: p.range.dist.name().into(),
        })
        .collect()
}

/// The grid's points: cell by cell in the product's order (the first axis slowest), each
/// cell's `repeat` points together.
fn grid_points(axes: &[GridAxis], seed: u64, repeat: u32) -> Vec<GridPoint> {
    let mut cells: Vec<Vec<String>> = vec![Vec::new()];
    for a in axes {
        cells = cells
            .iter()
            .flat_map(|c| {
                a.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push(format!("{}={v}", a.key));
                    c
                })
            })
            .collect();
    }
    let repeat = u64::from(repeat);
    cells
        .into_iter()
        .enumerate()
        .flat_map(|(c, set)| {
            (0..repeat).map(move |r| GridPoint {
                index: c as u64 * repeat + r,
                cell: c as u64,
                seed: grid_seed(seed, r),
                set: set.clone(),
            })
        })
        .collect()
}

/// The experiments and the draws' plan a sweep of draws runs and merges with.
struct DrawsSetup {
    experiments: Vec<Experiment>,
    plan: Plan,
}

/// A manifest, checked and ready to run a shard of or to merge.
pub struct Sweep {
    manifest: Manifest,
    draws: Option<DrawsSetup>,
    whatif: Option<WhatIf>,
}

impl Sweep {
    /// Check `manifest` and, for draws, load the experiments and check that their files still
    /// declare the parameters the manifest was planned over.
    pub fn prepare(manifest: Manifest) -> Result<Sweep, SweepError> {
        manifest.check()?;
        let draws =
            match &manifest {
                Manifest::Draws(d) => {
                    let experiments = Experiment::load_dir(&d.experiments)?;
                    let mut plan =
                        uncertainty::parameters(&experiments, d.only.as_deref(), d.draw_seed)?;
                    let now = planned_parameters(&plan);
                    if now.len() != d.parameters.len() {
                        return Err(SweepError::Stale(format!(
                            "the files declare {} parameters, the manifest {}",
                            now.len(),
                            d.parameters.len()
                        )));
                    }
                    if let Some((n, m)) = now.iter().zip(&d.parameters).find(|(n, m)| n != m) {
                        return Err(SweepError::Stale(format!(
                        "the files declare {} in {} as {} {}..{} (nominal {}), the manifest {} \
                         in {} as {} {}..{} (nominal {})",
                        n.key, n.file, n.dist, n.low, n.high, n.nominal, m.key, m.file, m.dist,
                        m.low, m.high, m.nominal
                    )));
                    }
                    // The manifest's values, read back from their exact text.
                    plan.points = d
                        .points
                        .iter()
                        .filter_map(|p| match p {
                            DrawPoint::Draw { set, .. } => Some(
                                set.iter()
                                    .filter_map(|s| {
                                        s.split_once('=').and_then(|(_, v)| parse_value(v))
                                    })
                                    .collect(),
                            ),
                            DrawPoint::Nominal { .. } => None,
                        })
                        .collect();
                    Some(DrawsSetup { experiments, plan })
                }
                Manifest::Grid(_) | Manifest::WhatIf(_) => None,
            };
        let whatif =
            match &manifest {
                Manifest::WhatIf(m) => {
                    let draws = m
                        .points
                        .iter()
                        .filter(|p| matches!(p, WhatIfPoint::Draw { .. }))
                        .count() as u32;
                    let w = WhatIf::prepare(
                        &m.scenario,
                        Path::new(&m.scenario_file),
                        &m.set,
                        Some(m.seed),
                        Some(m.samples),
                        m.replications,
                        draws,
                        m.draw_seed,
                    )?;
                    let now = whatif_parameters(&w);
                    if now != m.parameters {
                        return Err(SweepError::Stale(format!(
                        "the scenario's files declare {} drawn parameters ({}), the manifest {} \
                         ({})",
                        now.len(),
                        now.iter().map(|p| p.key.as_str()).collect::<Vec<_>>().join(", "),
                        m.parameters.len(),
                        m.parameters
                            .iter()
                            .map(|p| p.key.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                    }
                    // The draws are the Latin hypercube of the draw seed: the manifest's values are
                    // the ones this irqlab draws, or the merge would not be sim --uncertainty's.
                    for p in &m.points {
                        if let WhatIfPoint::Draw { index, set, .. } = p {
                            let i = *index as usize;
                            let flags: Vec<String> = w
                                .parameters
                                .iter()
                                .zip(&w.points[i])
                                .map(|(p, &v)| p.flag(v))
                                .collect();
                            if &flags != set {
                                return Err(SweepError::Manifest(format!(
                                    "draw {i}'s values are not draw {i} of draw seed {}",
                                    m.draw_seed
                                )));
                            }
                        }
                    }
                    Some(w)
                }
                _ => None,
            };
        Ok(Sweep {
            manifest,
            draws,
            whatif,
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    fn options(d: &DrawsPlan, progress: Option<Arc<AtomicU64>>) -> ValidateOptions {
        ValidateOptions {
            only: d.only.clone(),
            samples: d.samples,
            full: d.full,
            draw: false,
            progress,
        }
    }

    /// How many interrupts shard `shard` of `of` simulates (for a progress bar).
    pub fn planned_samples(&self, shard: u32, of: u32) -> Result<u64, SweepError> {
        let points = self.manifest.shard_points(shard, of);
        Ok(match (&self.manifest, &self.draws) {
            (Manifest::Draws(d), Some(s)) => {
                let opts = Sweep::options(d, None);
                let drawn = ValidateOptions {
                    draw: true,
                    ..opts.clone()
                };
                let mut per_draw = 0u64;
                let mut nominal = 0u64;
                for (ei, e) in s.experiments.iter().enumerate() {
                    nominal += e.planned_samples(&opts)?;
                    if s.plan.draws_experiment(ei) {
                        per_draw += e.planned_samples(&drawn)?;
                    }
                }
                points
                    .iter()
                    .map(|&i| match d.points[i] {
                        DrawPoint::Draw { .. } => per_draw,
                        DrawPoint::Nominal { .. } => nominal,
                    })
                    .sum()
            }
            (Manifest::Grid(g), _) => {
                let sim = Scenario::load(&g.scenario_file, &g.set)?;
                sim.interrupts(g.samples)
                    .saturating_mul(points.len() as u64)
            }
            (Manifest::WhatIf(m), _) => {
                let w = self.whatif.as_ref().expect("prepare sets up a what-if");
                let per_run = w.simulation().interrupts(m.samples);
                let mut total = 0u64;
                for &i in &points {
                    total += match m.points[i] {
                        WhatIfPoint::Rows { .. } => rows_planned_samples(
                            Path::new(m.rows.as_deref().unwrap_or_default()),
                            &w.file,
                        )?,
                        _ => per_run,
                    };
                }
                total
            }
            (Manifest::Draws(_), None) => unreachable!("prepare sets up draws"),
        })
    }

    /// Run shard `shard` of `of`: its points on all cores, each exactly as it would run alone.
    pub fn run_shard(
        &self,
        shard: u32,
        of: u32,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<ShardResults, SweepError> {
        use rayon::prelude::*;
        if of == 0 || shard >= of {
            return Err(SweepError::Shard { shard, of });
        }
        let points = self.manifest.shard_points(shard, of);
        let points = points
            .par_iter()
            .map(|&i| self.run_point(i, progress.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ShardResults {
            manifest_fingerprint: self.manifest.fingerprint(),
            shard,
            of,
            points_sha256: Some(points_sha256(&self.manifest, shard, of, &points)),
            points,
        })
    }

    fn run_point(
        &self,
        i: usize,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<PointResult, SweepError> {
        Ok(match (&self.manifest, &self.draws) {
            (Manifest::Draws(d), Some(s)) => {
                let opts = Sweep::options(d, progress);
                match d.points[i] {
                    DrawPoint::Draw { index, .. } => {
                        let p = uncertainty::run_point(&s.experiments, &s.plan, i, &opts)?;
                        PointResult::Draw {
                            index,
                            rows: p
                                .rows
                                .into_iter()
                                .map(|(id, (value, holds))| RowResult { id, value, holds })
                                .collect(),
                            samples: p.samples,
                            fitted: p.fitted,
                        }
                    }
                    DrawPoint::Nominal { index } => PointResult::Nominal {
                        index,
                        validation: validate_dir(&d.experiments, &opts)?,
                    },
                }
            }
            (Manifest::Grid(g), _) => {
                let p = &g.points[i];
                let mut set = g.set.clone();
                set.extend(p.set.iter().cloned());
                let sim = Scenario::load(&g.scenario_file, &set)?;
                let r = sim.simulate(p.seed, g.samples, 0, 1, progress)?;
                let (metrics, counters) = point_parts(&r);
                PointResult::Run {
                    index: p.index,
                    metrics,
                    counters,
                }
            }
            (Manifest::WhatIf(m), _) => {
                let w = self.whatif.as_ref().expect("prepare sets up a what-if");
                match m.points[i] {
                    WhatIfPoint::Draw { index, .. } => PointResult::Report {
                        index,
                        run: Box::new(w.run_draw(i, progress)?),
                    },
                    WhatIfPoint::Nominal { index } => PointResult::Report {
                        index,
                        run: Box::new(w.run_nominal(progress)?),
                    },
                    WhatIfPoint::Rows { index } => PointResult::Rows {
                        index,
                        rows: rows_on(
                            Path::new(m.rows.as_deref().unwrap_or_default()),
                            &w.file,
                            progress,
                        )?,
                    },
                }
            }
            (Manifest::Draws(_), None) => unreachable!("prepare sets up draws"),
        })
    }

    /// Merge shards' results (each with the name of the file it came from, for messages):
    /// every point of the manifest exactly once (a point in two files with the same result is
    /// one point), then the sweep's report.
    ///
    /// Before anything is merged, every file is checked, and those that fail are all named with
    /// why ([`SweepError::Rejected`]):
    ///
    /// - its digest ([`points_sha256`], computed again with this manifest) is the one it
    ///   carries: a file without one (an older irqlab's) is refused, to be run again;
    /// - it is a shard this manifest can have (I below N), holding only that shard's points
    ///   (index I modulo N), in index order;
    /// - for a grid, each point's run holds together: every histogram's parts agree with its
    ///   counts ([`LatencyHistogram::from_serialized`]); every metric is one the cell's model
    ///   gives ([`Scenario::metric_names`]), once; unless the model counts frames, no metric
    ///   holds more samples than the point ran and the largest whole-run one holds exactly
    ///   those (the manifest's `samples`); counters are named once;
    /// - then, once every point is found, the points of a grid cell (one model, other seeds)
    ///   have the same metrics (name, phase, description, count period) and counters.
    pub fn merge(&self, shards: &[(String, ShardResults)]) -> Result<Merged, SweepError> {
        let total = self.manifest.len();
        let fingerprint = self.manifest.fingerprint();
        for (file, s) in shards {
            if s.manifest_fingerprint != fingerprint {
                return Err(SweepError::OtherManifest {
                    file: file.clone(),
                    found: s.manifest_fingerprint.clone(),
                    expected: fingerprint,
                });
            }
        }
        // Each grid cell's model, after the overrides and the cell's values.
        let cells: Vec<Scenario> = match &self.manifest {
            Manifest::Grid(g) => g
                .points
                .chunks(g.repeat as usize)
                .map(|points| {
                    let mut all = g.set.clone();
                    all.extend(points[0].set.iter().cloned());
                    Scenario::load(&g.scenario_file, &all)
                })
                .collect::<Result<_, _>>()?,
            Manifest::Draws(_) | Manifest::WhatIf(_) => Vec::new(),
        };
        let manifest = manifest_sha256(&self.manifest);
        let rejected: Vec<Rejected> = shards
            .iter()
            .filter_map(|(file, s)| {
                let reasons = self.check_shard(s, &manifest, &cells);
                (!reasons.is_empty()).then(|| Rejected {
                    file: file.clone(),
                    shard: s.shard,
                    of: s.of,
                    reason: reasons.join("; "),
                })
            })
            .collect();
        if !rejected.is_empty() {
            return Err(SweepError::Rejected(rejected));
        }
        let mut found: Vec<Option<(&str, &PointResult)>> = vec![None; total];
        let mut from: Vec<Option<&ShardResults>> = vec![None; total];
        for (file, s) in shards {
            for p in &s.points {
                let index = p.index();
                let point_err = |message: String| SweepError::Point {
                    file: file.clone(),
                    index,
                    message,
                };
                let Some(slot) = found.get_mut(index as usize) else {
                    return Err(point_err(format!(
                        "the manifest has points 0 to {}",
                        total.saturating_sub(1)
                    )));
                };
                let expected = self.kind_of(index as usize);
                if p.kind() != expected {
                    return Err(point_err(format!(
                        "a {} result, but the manifest's point is a {expected}",
                        p.kind()
                    )));
                }
                match slot {
                    // Compared as written: a row value of NaN is the same result twice.
                    Some((first, q)) if !same(q, p) => {
                        return Err(SweepError::Conflict {
                            index,
                            first: first.to_string(),
                            second: file.clone(),
                        })
                    }
                    Some(_) => {}
                    None => {
                        *slot = Some((file, p));
                        from[index as usize] = Some(s);
                    }
                }
            }
        }
        let missing: Vec<u64> = (0..total as u64)
            .filter(|&i| found[i as usize].is_none())
            .collect();
        if !missing.is_empty() {
            let of = usual_shard_count(shards);
            let mut again: Vec<u32> = of
                .map(|of| {
                    missing
                        .iter()
                        .map(|&i| (i % u64::from(of)) as u32)
                        .collect()
                })
                .unwrap_or_default();
            again.sort_unstable();
            again.dedup();
            return Err(SweepError::Missing {
                missing,
                total,
                shards: again,
                of,
            });
        }
        let found: Vec<(&str, &PointResult)> = found.into_iter().flatten().collect();
        if let Manifest::Grid(g) = &self.manifest {
            let from: Vec<&ShardResults> = from.into_iter().flatten().collect();
            let rejected = unlike_points_of_a_cell(g, &found, &from);
            if !rejected.is_empty() {
                return Err(SweepError::Rejected(rejected));
            }
        }
        match (&self.manifest, &self.draws) {
            (Manifest::Draws(d), Some(s)) => {
                Ok(Merged::Validation(Box::new(merge_draws(d, s, &found))))
            }
            (Manifest::Grid(g), _) => merge_grid(g, &cells, &found).map(Merged::Grid),
            (Manifest::WhatIf(_), _) => {
                let w = self.whatif.as_ref().expect("prepare sets up a what-if");
                let mut draws = Vec::new();
                let mut rows = None;
                for (_, p) in &found {
                    match p {
                        PointResult::Report { run, .. } => draws.push((**run).clone()),
                        PointResult::Rows { rows: r, .. } => rows = Some(r.clone()),
                        _ => unreachable!("kinds are checked against the manifest"),
                    }
                }
                // The plain run is the point after the draws.
                let nominal = draws.remove(w.points.len());
                Ok(Merged::WhatIf(Box::new(w.aggregate(nominal, &draws, rows))))
            }
            (Manifest::Draws(_), None) => unreachable!("prepare sets up draws"),
        }
    }

    /// Why the merge refuses a shard's results (nothing: it takes them); `manifest_sha256`:
    /// [`manifest_sha256`] of this sweep's; `cells`: a grid's models, cell by cell. The first few reasons: one is enough to run the shard again.
    fn check_shard(
        &self,
        s: &ShardResults,
        manifest_sha256: &[u8; 32],
        cells: &[Scenario],
    ) -> Vec<String> {
        const SHOWN: usize = 3;
        let mut reasons = Vec::new();
        let digest = sealed(manifest_sha256, s.shard, s.of, &s.points);
        match &s.points_sha256 {
            None => {
                return vec![format!(
                    "it has no points_sha256, so an irqlab older than this merge's wrote it \
                     (shards of one sweep are run by one irqlab); run shard {} of {} again",
                    s.shard, s.of
                )]
            }
            Some(d) if *d != digest => reasons.push(format!(
                "its points are not those irqlab sweep run wrote (their SHA-256 is {}..., the \
                 file's points_sha256 {}...)",
                &digest[..12],
                d.get(..12).unwrap_or(d)
            )),
            Some(_) => {}
        }
        if s.of == 0 || s.shard >= s.of {
            reasons.push(format!(
                "it says it is shard {} of {}, which no sweep has",
                s.shard, s.of
            ));
            return reasons;
        }
        let mut last = None;
        for p in &s.points {
            let i = p.index();
            if i % u64::from(s.of) != u64::from(s.shard) {
                reasons.push(format!(
                    "point {i} is not one of shard {} of {}'s (theirs are the indices {} modulo {})",
                    s.shard, s.of, s.shard, s.of
                ));
            } else if last.is_some_and(|l| l >= i) {
                reasons.push(format!("point {i} is out of index order"));
            }
            last = Some(i);
            if let (
                PointResult::Run {
                    metrics, counters, ..
                },
                Manifest::Grid(g),
            ) = (p, &self.manifest)
            {
                let cell = usize::try_from(i / u64::from(g.repeat)).ok();
                if let Some(sim) = cell.and_then(|c| cells.get(c)) {
                    if let Some(why) = check_run(metrics, counters, sim, g.samples) {
                        reasons.push(format!("point {i}: {why}"));
                    }
                }
            }
            if reasons.len() > SHOWN {
                break;
            }
        }
        if reasons.len() > SHOWN {
            reasons.truncate(SHOWN);
            reasons.push("and more".into());
        }
        reasons
    }

    fn kind_of(&self, i: usize) -> &'static str {
        match &self.manifest {
            Manifest::Draws(d) => match d.points[i] {
                DrawPoint::Draw { .. } => "draw",
                DrawPoint::Nominal { .. } => "nominal",
            },
            Manifest::Grid(_) => "run",
            Manifest::WhatIf(w) => match w.points[i] {
                WhatIfPoint::Rows { .. } => "rows",
                _ => "report",
            },
        }
    }
}

/// Whether two results of one point are the same, as their files hold them.
fn same(a: &PointResult, b: &PointResult) -> bool {
    serde_json::to_string(a).ok() == serde_json::to_string(b).ok()
}

/// The shard count most result files were made with (the larger on a tie): the one to name
/// shards to run again by. Any count would do, since a point run twice merges as one.
fn usual_shard_count(shards: &[(String, ShardResults)]) -> Option<u32> {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for (_, s) in shards {
        *counts.entry(s.of).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(of, n)| (n, of))
        .map(|(of, _)| of)
}

/// The draws aggregated beside the nominal validation, as `validate --uncertainty` does.
fn merge_draws(d: &DrawsPlan, s: &DrawsSetup, found: &[(&str, &PointResult)]) -> ValidationReport {
    let mut points = Vec::new();
    let mut nominal = None;
    for (_, p) in found {
        match p {
            PointResult::Draw {
                rows,
                samples,
                fitted,
                ..
            } => points.push(PointRows {
                rows: rows
                    .iter()
                    .map(|r| (r.id.clone(), (r.value, r.holds)))
                    .collect(),
                samples: samples.clone(),
                fitted: fitted.clone(),
            }),
            PointResult::Nominal { validation, .. } => nominal = Some(validation.clone()),
            _ => unreachable!("kinds are checked against the manifest"),
        }
    }
    let mut v = nominal.expect("the manifest's last point is the nominal validation");
    v.uncertainty = Some(uncertainty::aggregate(
        &s.experiments,
        &s.plan,
        &points,
        &v,
        d.only.as_deref(),
    ));
    v
}

/// Why a grid point's run does not hold together (see [`Sweep::merge`]); `sim`: its cell's
/// model, `samples`: what the manifest ran it for.
fn check_run(
    metrics: &[MetricResult],
    counters: &[CounterResult],
    sim: &Scenario,
    samples: u64,
) -> Option<String> {
    let known = sim.metric_names();
    let planned = sim.interrupts(samples);
    let mut whole = 0;
    for (k, m) in metrics.iter().enumerate() {
        let what = match &m.phase {
            None => m.name.clone(),
            Some(p) => format!("{} (phase {p})", m.name),
        };
        if !known.contains(&m.name.as_str()) {
            return Some(format!(
                "{what} is no metric of this model's (those are {})",
                known.join(", ")
            ));
        }
        if metrics[..k]
            .iter()
            .any(|x| x.name == m.name && x.phase == m.phase)
        {
            return Some(format!("{what} is there twice"));
        }
        let h = match LatencyHistogram::from_serialized(&m.histogram) {
            Ok(h) => h,
            Err(e) => return Some(format!("{what}: {e}")),
        };
        if !sim.counts_frames() && h.count() > planned {
            return Some(format!(
                "{what} holds {} samples, more than the {planned} the point ran",
                h.count()
            ));
        }
        if m.phase.is_none() {
            whole = whole.max(h.count());
        }
    }
    // A run of samples stops when the last of its measures has them all (the tasklet's, say,
    // when the ISR's may drop some), so the largest whole-run count is the samples run.
    if !sim.counts_frames() && whole != planned {
        return Some(format!(
            "its metrics hold at most {whole} samples, but the point ran {planned}"
        ));
    }
    if let Some(c) = (counters.iter().enumerate())
        .find(|(k, c)| counters[..*k].iter().any(|x| x.name == c.name))
        .map(|(_, c)| c)
    {
        return Some(format!("the counter {} is there twice", c.name));
    }
    None
}

/// Cells whose points do not have the same metrics and counters: each point of a cell runs
/// the same model with another seed. `from`: each point's shard.
fn unlike_points_of_a_cell(
    g: &GridPlan,
    found: &[(&str, &PointResult)],
    from: &[&ShardResults],
) -> Vec<Rejected> {
    type Shape<'a> = (
        Vec<(&'a str, Option<&'a str>, &'a str, Option<u64>)>,
        Vec<(&'a str, bool)>,
    );
    fn shape(p: &PointResult) -> Shape<'_> {
        let PointResult::Run {
            metrics, counters, ..
        } = p
        else {
            unreachable!("kinds are checked against the manifest")
        };
        (
            (metrics.iter())
                .map(|m| {
                    let q = m.quantum_ns.map(f64::to_bits);
                    (
                        m.name.as_str(),
                        m.phase.as_deref(),
                        m.description.as_str(),
                        q,
                    )
                })
                .collect(),
            (counters.iter())
                .map(|c| (c.name.as_str(), c.if_nonzero))
                .collect(),
        )
    }
    let names = |s: &Shape| -> String {
        let m: Vec<String> = (s.0.iter())
            .map(|(n, p, _, _)| p.map_or(n.to_string(), |p| format!("{n} (phase {p})")))
            .collect();
        m.join(", ")
    };
    let mut rejected = Vec::new();
    for (c, cell) in found.chunks(g.repeat as usize).enumerate() {
        let first = shape(cell[0].1);
        for (k, (file, p)) in cell.iter().enumerate().skip(1) {
            let this = shape(p);
            if this == first {
                continue;
            }
            let what = if this.0 == first.0 {
                "counters".to_string()
            } else {
                format!(
                    "metrics {}; point {} has {}",
                    names(&this),
                    cell[0].1.index(),
                    names(&first)
                )
            };
            let at = c * g.repeat as usize + k;
            rejected.push(Rejected {
                file: file.to_string(),
                shard: from[at].shard,
                of: from[at].of,
                reason: format!(
                    "point {} of cell {} ({}) has other {what} (in {}); a cell's points run one \
                     model, so this file or that one was edited",
                    p.index(),
                    c,
                    g.points[at].set.join(" "),
                    cell[0].0
                ),
            });
        }
    }
    rejected
}

/// Each cell's points added (histograms merged, counters summed by name) into one run; `cells`:
/// each cell's model.
fn merge_grid(
    g: &GridPlan,
    cells: &[Scenario],
    found: &[(&str, &PointResult)],
) -> Result<GridReport, SweepError> {
    let title = Scenario::load(&g.scenario_file, &g.set)?
        .title()
        .to_string();
    let mut report = Vec::new();
    for (points, sim) in g.points.chunks(g.repeat as usize).zip(cells) {
        let first = points[0].index as usize;
        let mut merged = RunResult::default();
        for (file, p) in &found[first..first + points.len()] {
            let PointResult::Run {
                index,
                metrics,
                counters,
            } = p
            else {
                unreachable!("kinds are checked against the manifest")
            };
            for m in metrics {
                let h = LatencyHistogram::from_serialized(&m.histogram).map_err(|source| {
                    SweepError::Histogram {
                        file: file.to_string(),
                        index: *index,
                        source,
                    }
                })?;
                match merged
                    .metrics
                    .iter_mut()
                    .find(|x| x.name == m.name && x.phase == m.phase)
                {
                    Some(x) => x.histogram.merge(&h),
                    None => merged.metrics.push(Measured {
                        name: m.name.clone(),
                        description: m.description.clone(),
                        phase: m.phase.clone(),
                        histogram: h,
                        quantum_ns: m.quantum_ns,
                    }),
                }
            }
            for c in counters {
                match merged.counters.iter_mut().find(|x| x.name == c.name) {
                    Some(x) => x.value = x.value.saturating_add(c.value),
                    None => merged.counters.push(if c.if_nonzero {
                        Count::if_nonzero(c.name.clone(), c.value)
                    } else {
                        Count::always(c.name.clone(), c.value)
                    }),
                }
            }
        }
        let set = points[0].set.clone();
        let mut all = g.set.clone();
        all.extend(set.iter().cloned());
        let seeds: Vec<u64> = points.iter().map(|p| p.seed).collect();
        let mut run = crate::report::run_report(sim, seeds[0], &merged);
        // The header says what `irqlab sim` would: every seed, then the overrides.
        let at = (run.config.iter()).position(|(k, _)| k == crate::report::SEED_KEY);
        if let Some(at) = at {
            if seeds.len() > 1 {
                let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
                run.config[at] = (format!("{}s", crate::report::SEED_KEY), list.join(", "));
            }
            run.config.insert(
                at + 1,
                ("overrides".into(), format!("--set {}", all.join(" --set "))),
            );
        }
        report.push(GridCell { set, seeds, run });
    }
    Ok(GridReport {
        scenario: g.scenario.clone(),
        title,
        set: g.set.clone(),
        samples: g.samples,
        repeat: g.repeat,
        axes: g.axes.clone(),
        cells: report,
    })
}

/// An `Option<f64>` that crosses JSON exactly: a finite number as a JSON number (shortest
/// round-trip digits), NaN and the infinities, which JSON has no number for, as strings.
mod exact_f64 {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Number(f64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            None => s.serialize_none(),
            Some(x) if x.is_finite() => Repr::Number(*x).serialize(s),
            Some(x) => Repr::Text(
                if x.is_nan() {
                    "NaN"
                } else if *x > 0.0 {
                    "inf"
                } else {
                    "-inf"
                }
                .into(),
            )
            .serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(match Option::<Repr>::deserialize(d)? {
            None => None,
            Some(Repr::Number(x)) => Some(x),
            Some(Repr::Text(t)) => Some(match t.as_str() {
                "NaN" => f64::NAN,
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                other => {
                    return Err(serde::de::Error::custom(format!(
                        "{other:?} is not a number (NaN, inf or -inf, or a JSON number)"
                    )))
                }
            }),
        })
    }
}

/// A grid point's run as a shard stores it: each metric with its histogram serialized, each
/// counter with whether it is shown only when not zero.
fn point_parts(r: &RunResult) -> (Vec<MetricResult>, Vec<CounterResult>) {
    let metrics = r
        .metrics
        .iter()
        .map(|m| MetricResult {
            name: m.name.clone(),
            description: m.description.clone(),
            phase: m.phase.clone(),
            quantum_ns: m.quantum_ns,
            histogram: m.histogram.to_serialized(),
        })
        .collect();
    let counters = r
        .counters
        .iter()
        .map(|c| CounterResult {
            name: c.name.clone(),
            value: c.value,
            if_nonzero: c.shown == Shown::IfNonzero,
        })
        .collect();
    (metrics, counters)
}

impl DrawsPlan {
    /// The draws planned, without the nominal validation.
    pub fn draws(&self) -> usize {
        self.points
            .iter()
            .filter(|p| matches!(p, DrawPoint::Draw { .. }))
            .count()
    }
}

impl WhatIfPlan {
    /// The draws planned, without the plain run.
    pub fn draws(&self) -> usize {
        self.points
            .iter()
            .filter(|p| matches!(p, WhatIfPoint::Draw { .. }))
            .count()
    }
}

impl SweepError {
    /// The shards whose results [`SweepError::Rejected`] refuses, `(I, N)` as each file
    /// says, ascending and each once: those to run again. A file that names no shard (I not
    /// below N) adds none; any other error has none.
    pub fn rejected_shards(&self) -> Vec<(u32, u32)> {
        let SweepError::Rejected(files) = self else {
            return Vec::new();
        };
        let mut again: Vec<(u32, u32)> = files
            .iter()
            .filter(|f| f.shard < f.of)
            .map(|f| (f.shard, f.of))
            .collect();
        again.sort_unstable();
        again.dedup();
        again
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(axes: &[(&str, &[&str])], repeat: u32) -> Vec<GridPoint> {
        let axes: Vec<GridAxis> = axes
            .iter()
            .map(|(k, vs)| GridAxis {
                key: k.to_string(),
                values: vs.iter().map(|v| v.to_string()).collect(),
            })
            .collect();
        grid_points(&axes, 7, repeat)
    }

    #[test]
    fn a_grid_is_the_product_with_the_first_axis_slowest() {
        let p = grid(&[("a", &["1", "2"]), ("b", &["x", "y", "z"])], 2);
        assert_eq!(p.len(), 12);
        let cells: Vec<String> = p.iter().step_by(2).map(|p| p.set.join(" ")).collect();
        assert_eq!(
            cells,
            ["a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"]
        );
        for (i, q) in p.iter().enumerate() {
            assert_eq!(q.index, i as u64);
            assert_eq!(q.cell, i as u64 / 2);
        }
        // Common random numbers: every cell's k-th point has the same seed; the first is the
        // base seed itself, as `irqlab sim` would use.
        assert!(p.iter().step_by(2).all(|q| q.seed == 7));
        assert!(p
            .iter()
            .skip(1)
            .step_by(2)
            .all(|q| q.seed == replication_seed(7, 1)));
    }

    #[test]
    fn shards_take_every_nth_point_whatever_the_count() {
        let m = Manifest::Grid(GridPlan {
            scenario: "s".into(),
            scenario_file: "s.toml".into(),
            set: vec![],
            samples: 1,
            seed: 1,
            repeat: 1,
            axes: vec![],
            points: grid(&[("a", &["1", "2", "3", "4", "5", "6", "7"])], 1),
        });
        for of in 1..10u32 {
            let mut all: Vec<usize> = (0..of).flat_map(|s| m.shard_points(s, of)).collect();
            all.sort_unstable();
            assert_eq!(all, (0..7).collect::<Vec<_>>(), "{of} shards");
        }
        assert_eq!(m.shard_points(1, 3), [1, 4]);
        assert_eq!(m.shard_points(5, 9), [5]);
        assert!(m.shard_points(8, 9).is_empty());
    }

    #[test]
    fn the_fingerprint_changes_with_any_point() {
        let points = grid(&[("a", &["1", "2"])], 1);
        let mut g = GridPlan {
            scenario: "s".into(),
            scenario_file: "s.toml".into(),
            set: vec![],
            samples: 1,
            seed: 1,
            repeat: 1,
            axes: vec![],
            points,
        };
        let a = Manifest::Grid(g.clone()).fingerprint();
        assert_eq!(a.len(), 16);
        assert_eq!(a, Manifest::Grid(g.clone()).fingerprint());
        g.points[1].seed += 1;
        assert_ne!(a, Manifest::Grid(g).fingerprint());
    }

    #[test]
    fn missing_points_are_named_with_their_shards() {
        assert_eq!(ranges([0, 1, 2, 4, 6, 7].into_iter()), "0-2, 4, 6-7");
        assert_eq!(ranges(std::iter::empty()), "");
        let e = SweepError::Missing {
            missing: vec![1, 4, 7],
            total: 9,
            shards: vec![1],
            of: Some(3),
        };
        assert_eq!(
            e.to_string(),
            "3 of 9 points have no result (points 1, 4, 7): shard 1 of 3 did not finish or did \
             not run"
        );
    }

    #[test]
    fn a_manifest_edited_or_planned_over_other_ranges_is_refused() {
        let plan = || {
            plan_draws(
                &crate::shipped::experiments_dir(),
                Some("msi-ws-*"),
                Some(100),
                false,
                3,
                1,
            )
            .unwrap()
        };
        let Manifest::Draws(d) = plan() else {
            unreachable!()
        };
        assert_eq!(d.points.len(), 4);
        assert!(matches!(d.points[3], DrawPoint::Nominal { index: 3 }));
        assert!(Sweep::prepare(plan()).is_ok());
        // The files' range is not the one planned over.
        let mut stale = d.clone();
        stale.parameters[0].high *= 2.0;
        let e = Sweep::prepare(Manifest::Draws(stale)).err().unwrap();
        assert!(matches!(e, SweepError::Stale(_)), "{e}");
        // A seed or a key edited by hand.
        let mut edited = d.clone();
        if let DrawPoint::Draw { seed, .. } = &mut edited.points[1] {
            *seed += 1;
        }
        let e = Sweep::prepare(Manifest::Draws(edited)).err().unwrap();
        assert!(e.to_string().contains("draw 1 has seed"), "{e}");
        let mut edited = d;
        if let DrawPoint::Draw { set, .. } = &mut edited.points[0] {
            set[0] = "no.such.key=1".into();
        }
        let e = Sweep::prepare(Manifest::Draws(edited)).err().unwrap();
        assert!(matches!(e, SweepError::Manifest(_)), "{e}");
    }

    /// What the merge's checks of a grid point take as given: every metric a shipped
    /// scenario's run gives is one of its model's `metric_names`, and unless it counts frames
    /// the largest whole-run count is the samples run, so a point whose results pass
    /// `check_run` as written.
    #[test]
    fn every_shipped_scenario_passes_the_merge_checks_of_a_run() {
        for (name, path) in crate::shipped::scenarios() {
            let sim = Scenario::load(&path, &[]).unwrap();
            let r = sim.simulate(sim.seed(), 40, 0, 1, None).unwrap();
            let (metrics, counters) = point_parts(&r);
            assert_eq!(check_run(&metrics, &counters, &sim, 40), None, "{name}");
        }
    }

    #[test]
    fn a_digest_binds_the_points_to_their_shard_and_manifest() {
        let g = GridPlan {
            scenario: "s".into(),
            scenario_file: "s.toml".into(),
            set: vec![],
            samples: 1,
            seed: 1,
            repeat: 1,
            axes: vec![],
            points: grid(&[("a", &["1", "2"])], 1),
        };
        let points = vec![PointResult::Run {
            index: 0,
            metrics: vec![],
            counters: vec![],
        }];
        let m = Manifest::Grid(g.clone());
        let d = points_sha256(&m, 0, 2, &points);
        assert_eq!(d.len(), 64);
        assert_eq!(d, points_sha256(&m, 0, 2, &points));
        assert_ne!(d, points_sha256(&m, 0, 1, &points));
        assert_ne!(d, points_sha256(&m, 1, 2, &points));
        assert_ne!(d, points_sha256(&m, 0, 2, &[]));
        let mut other = g;
        other.samples = 2;
        assert_ne!(d, points_sha256(&Manifest::Grid(other), 0, 2, &points));
    }

    #[test]
    fn row_values_cross_json_exactly() {
        for v in [
            Some(0.1 + 0.2),
            Some(2.761_234_567_890_123e-9),
            Some(f64::MIN_POSITIVE),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
            None,
        ] {
            let r = RowResult {
                id: "r".into(),
                value: v,
                holds: None,
            };
            let back: RowResult =
                serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
            assert_eq!(back.value.map(f64::to_bits), v.map(f64::to_bits));
        }
        let nan = RowResult {
            id: "r".into(),
            value: Some(f64::NAN),
            holds: Some(true),
        };
        let text = serde_json::to_string(&nan).unwrap();
        assert!(text.contains("\"NaN\""), "{text}");
        let back: RowResult = serde_json::from_str(&text).unwrap();
        assert!(back.value.unwrap().is_nan());
        assert!(
            serde_json::from_str::<RowResult>(r#"{"id":"r","value":"x","holds":null}"#).is_err()
        );
    }
}
