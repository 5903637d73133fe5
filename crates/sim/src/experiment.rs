//! Published experiments and their validation: `experiments/*.toml` name the runs (a scenario
//! and its overrides), the published values with their source, and the tolerance of each row.
//! `irqlab validate` runs them and compares; each kind of row is a module of
//! [`crate::validate`].

use crate::result::RunResult;
use crate::scenario::ranges::{Range, Spread};
use crate::scenario::Scenario;
use crate::scenario::{parse_file, ScenarioError};
pub use crate::validate::{
    wording_interval, Check, ExpectedTrace, LatencyMetric, ShapeExpect, SplitPenalty,
    SHAPE_PASS_SHARE,
};
pub(crate) use crate::validate::{Judged, RowContext};
use irqlab_stats::results::{ExperimentRuns, ValidationReport, ValidationRow, Verdict};
use irqlab_stats::thousands;
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
    /// Settings each draw of `validate --uncertainty` adds to the run's own `set`: a faster
    /// method whose samples follow the same law (seed 004's windowed run, `probe.window_ms`,
    /// held against the whole timeline by `crates/sim/tests/seed004.rs`). Not for a model
    /// value: a draw's model is the file's, with the draw's values.
    #[serde(default)]
    pub draw_set: Vec<String>,
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

/// A `[calibration]`'s fit in one draw: the value, and whether it ended at a bound of the
/// parameter's sourced range (the row's target lies beyond what the range can give, or only
/// just inside it).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Fit {
    pub value: f64,
    pub at_bound: bool,
}

/// Runs by id: each one's result and its sample count.
pub(crate) type Ran = BTreeMap<String, (RunResult, u64)>;

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
            let sim = Scenario::load(self.scenario_path(spec), &spec.set)?;
            if !spec.draw_set.is_empty() {
                // A draw's settings are checked with the run's, now rather than in a draw.
                let set: Vec<String> = spec.set.iter().chain(&spec.draw_set).cloned().collect();
                Scenario::load(self.scenario_path(spec), &set)?;
            }
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
    ) -> Result<Ran, ScenarioError> {
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
                    if opts.draw {
                        set.extend(spec.draw_set.iter().cloned());
                    }
                    let sim = Scenario::load(self.scenario_path(spec), &set)?;
                    let n = spec.samples(opts, sim.samples());
                    let result = sim.simulate(
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
                let sim = Scenario::load(self.scenario_path(spec), &spec.set)?;
                Ok(sim.interrupts(spec.samples(opts, sim.samples())))
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
    ) -> Result<(Fit, Ran), ScenarioError> {
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
        // The row's value at `x`, and the runs that gave it (kept for the bracket's ends: the
        // fit is one of them, and its runs are the draw's own, flag for flag and seed for seed).
        let value_at = |x: f64| -> Result<(f64, Ran), ScenarioError> {
            let with = |spec: &RunSpec| {
                let mut f = before(spec);
                f.push(format!("{}={x}", cal.parameter));
                f
            };
            let ran = self.run_all(&needed, opts, &with, seed)?;
            let counts: BTreeMap<String, u64> =
                (ran.iter()).map(|(id, (_, n))| (id.clone(), *n)).collect();
            let results: BTreeMap<String, RunResult> =
                ran.into_iter().map(|(id, (r, _))| (id, r)).collect();
            let value = (check.evaluate(&self.row_context(), &results).value).unwrap_or(f64::NAN);
            let ran = (results.into_iter())
                .map(|(id, r)| {
                    let n = counts[&id];
                    (id, (r, n))
                })
                .collect();
            Ok((value, ran))
        };
        let (mut lo, mut hi) = cal.search_bounds();
        let snap = |x: f64| cal.low + ((x - cal.low) / cal.step).round() * cal.step;
        let fit = |value: f64, ran: Ran| {
            let at_bound = cal.at_bound(value);
            (Fit { value, at_bound }, ran)
        };
        let ((mut f_lo, mut ran_lo), (mut f_hi, mut ran_hi)) = (value_at(lo)?, value_at(hi)?);
        let rising = f_hi > f_lo;
        let below = |f: f64| (f < target) == rising;
        if below(f_hi) {
            return Ok(fit(hi, ran_hi));
        }
        if !below(f_lo) {
            return Ok(fit(lo, ran_lo));
        }
        loop {
            let mid = snap((lo + hi) / 2.0);
            if mid <= lo || mid >= hi {
                break;
            }
            let (f, ran) = value_at(mid)?;
            if below(f) {
                (lo, f_lo, ran_lo) = (mid, f, ran);
            } else {
                (hi, f_hi, ran_hi) = (mid, f, ran);
            }
        }
        Ok(if (f_lo - target).abs() <= (f_hi - target).abs() {
            fit(lo, ran_lo)
        } else {
            fit(hi, ran_hi)
        })
    }

    pub(crate) fn evaluate_all(
        &self,
        checks: &[&Check],
        results: &BTreeMap<String, RunResult>,
    ) -> Vec<ValidationRow> {
        let cx = self.row_context();
        checks.iter().map(|c| c.evaluate(&cx, results)).collect()
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

    /// What a row needs of this experiment to judge itself (its id, its folder).
    pub(crate) fn row_context(&self) -> RowContext<'_> {
        RowContext {
            experiment: &self.file.id,
            dir: self.path.parent().unwrap_or(Path::new(".")),
        }
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
}
