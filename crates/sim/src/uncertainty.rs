//! `irqlab validate --uncertainty N`: every row judged over draws of the model's estimates
//! (DESIGN.md, "How a row is judged").
//!
//! The parameters are the ranges the experiments' files declare beside their estimates
//! ([`crate::scenario::ranges`]); a parameter is one value in one file, so a kernel file shared
//! by two platforms' runs is drawn once per draw, and the same key in two platform files is two
//! parameters. The draws are a Latin hypercube: each parameter's range is cut into N strata of
//! equal probability and each stratum is used exactly once, so N draws cover every range evenly
//! however many parameters there are. Each draw (a *point*) runs every run of every selected
//! experiment with its values as `--set` overrides and its own seed, derived from the base seed
//! and the point's index alone, so a point gives the same result whichever shard or thread runs
//! it. The rows' values over the points give each row its band, the published value's
//! percentile, the parameters that drive it (Spearman's rho) and its class.

use crate::experiment::{Experiment, Judged, ValidateOptions};
use crate::result::RunResult;
use crate::scenario::ranges::{Range, Spread};
use crate::scenario::Scenario;
use crate::scenario::{replication_seed, ScenarioError};
use irqlab_stats::results::{
    Driver, FixedEstimate, Quantity, UncertainParameter, UncertaintyReport, UncertaintyRow,
    ValidationReport, ValidationRow, Verdict,
};
use irqlab_stats::uncertainty::{
    classify_share, classify_value, percentile_of, spearman, Band, Class, Scale,
};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A parameter drawn over its range.
#[derive(Clone, Debug)]
pub struct Parameter {
    /// The `--set` key, and the file whose value it is.
    pub key: String,
    pub file: PathBuf,
    pub nominal: f64,
    /// A whole number in its file: draws are rounded.
    pub integer: bool,
    pub range: Range,
}

impl Parameter {
    /// The value at `u` (0..1), rounded for a whole-number parameter.
    pub fn at(&self, u: f64) -> f64 {
        let r = &self.range;
        let v = r.dist.at(u, r.low, r.high);
        if self.integer {
            v.round().clamp(r.low.ceil(), r.high.floor())
        } else {
            v
        }
    }

    /// As a report lists it, under `name`.
    pub fn described(&self, name: String) -> UncertainParameter {
        UncertainParameter {
            name,
            key: self.key.clone(),
            file: self.file.display().to_string(),
            nominal: self.nominal,
            low: self.range.low,
            high: self.range.high,
            dist: self.range.dist.name().into(),
            basis: self.range.basis.clone(),
            inferred_from: self.range.inferred_from.clone(),
        }
    }

    /// The `--set` flag that gives it `v`.
    pub fn flag(&self, v: f64) -> String {
        if self.integer {
            format!("{}={}", self.key, v as i64)
        } else {
            // Exponent form: always a TOML float, and exact (shortest round-trip digits).
            format!("{}={:e}", self.key, v)
        }
    }
}

/// One run of one experiment, with the parameters its files declare.
struct RunPlan {
    experiment: usize,
    run: String,
    params: Vec<usize>,
}

/// The parameters of the selected rows and the draws over them.
pub struct Plan {
    pub parameters: Vec<Parameter>,
    pub fixed: Vec<FixedEstimate>,
    runs: Vec<RunPlan>,
    /// Draw-major: `points[d][p]` is parameter p's value in draw d.
    pub points: Vec<Vec<f64>>,
    pub seed: u64,
}

impl Plan {
    /// The parameters' names: the key, with its file where two files declare the same key.
    pub fn names(&self) -> Vec<String> {
        self.parameters
            .iter()
            .map(|p| {
                if self.parameters.iter().filter(|q| q.key == p.key).count() > 1 {
                    format!("{}@{}", p.key, file_stem(&p.file))
                } else {
                    p.key.clone()
                }
            })
            .collect()
    }

    /// Whether experiment `ei` has any parameter to draw.
    pub(crate) fn draws_experiment(&self, ei: usize) -> bool {
        self.runs
            .iter()
            .any(|r| r.experiment == ei && !r.params.is_empty())
    }
}

/// The seed of draw `index`: from the base seed and the index alone (never from a shard count
/// or a thread), so a point runs the same wherever it runs.
pub fn point_seed(seed: u64, index: u64) -> u64 {
    replication_seed(seed, index + 1)
}

/// `draws` rows of a Latin hypercube over `dims` unit intervals: in each column every one of
/// the `draws` strata of width 1/draws holds exactly one value, at a uniform offset inside it,
/// the strata in a random order.
pub fn latin_hypercube(draws: usize, dims: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = vec![vec![0.0; dims]; draws];
    for d in 0..dims {
        let mut strata: Vec<usize> = (0..draws).collect();
        // Fisher-Yates.
        for i in (1..draws).rev() {
            strata.swap(i, rng.gen_range(0..=i));
        }
        for (row, s) in out.iter_mut().zip(strata) {
            row[d] = (s as f64 + rng.gen::<f64>()) / draws as f64;
        }
    }
    out
}

/// The experiments' parameters (for the rows `only` selects) and `draws` points over them.
pub fn plan(
    experiments: &[Experiment],
    only: Option<&str>,
    draws: u32,
    seed: u64,
) -> Result<Plan, ScenarioError> {
    let mut plan = parameters(experiments, only, seed)?;
    let unit = latin_hypercube(draws as usize, plan.parameters.len(), seed);
    plan.points = unit
        .iter()
        .map(|u| {
            plan.parameters
                .iter()
                .zip(u)
                .map(|(p, &u)| p.at(u))
                .collect()
        })
        .collect();
    Ok(plan)
}

/// The experiments' parameters (for the rows `only` selects), with no points yet: a sweep
/// fills in the points its manifest lists.
pub fn parameters(
    experiments: &[Experiment],
    only: Option<&str>,
    seed: u64,
) -> Result<Plan, ScenarioError> {
    let mut parameters: Vec<Parameter> = Vec::new();
    let mut fixed: Vec<FixedEstimate> = Vec::new();
    let mut runs = Vec::new();
    for (ei, e) in experiments.iter().enumerate() {
        let (_, needed) = e.selected(only);
        for spec in needed {
            let sim = Scenario::load(e.scenario_path(spec), &spec.set)?;
            let mut params = Vec::new();
            for d in sim.ranges()? {
                let file = d.file.display().to_string();
                match d.spread {
                    Spread::Fixed {
                        reason,
                        inferred_from,
                    } => {
                        if !fixed.iter().any(|f| f.key == d.key && f.file == file) {
                            fixed.push(FixedEstimate {
                                key: d.key,
                                file,
                                reason,
                                inferred_from,
                            });
                        }
                    }
                    Spread::Drawn(range) => {
                        // A run that sets the parameter itself (a calibrated free parameter,
                        // a fact of its seed) keeps that value: the draw's flag would be
                        // overridden, and a value the run never sees is no driver of its rows.
                        // An `[[inferred]]` value the run sets was read off a table, and cannot
                        // be fitted again in a draw: it is drawn over its range like any other
                        // estimate, so the rows that lean on it show what it does to them.
                        let pinned = crate::experiment::sets(spec, &d.key)
                            && !e.file.inferred.iter().any(|i| i.key == d.key);
                        let i = match parameters
                            .iter()
                            .position(|p| p.key == d.key && p.file == d.file)
                        {
                            Some(i) => i,
                            None => {
                                parameters.push(Parameter {
                                    key: d.key,
                                    file: d.file,
                                    nominal: d.nominal,
                                    integer: d.integer,
                                    range,
                                });
                                parameters.len() - 1
                            }
                        };
                        if !pinned {
                            params.push(i);
                        }
                    }
                }
            }
            runs.push(RunPlan {
                experiment: ei,
                run: spec.id.clone(),
                params,
            });
        }
    }
    Ok(Plan {
        parameters,
        fixed,
        runs,
        points: Vec::new(),
        seed,
    })
}

/// What one point gave each row: its value and whether its criterion held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PointRows {
    /// Row id -> (value, holds).
    pub rows: BTreeMap<String, (Option<f64>, Option<bool>)>,
    /// Each run's sample count (the fewest, for a row's resolution).
    pub samples: BTreeMap<String, u64>,
    /// `experiment/parameter` -> the value a `[calibration]` fitted in this draw.
    pub fitted: BTreeMap<String, f64>,
}

/// Run point `index` of `plan`: every selected run of every experiment with the point's values.
pub fn run_point(
    experiments: &[Experiment],
    plan: &Plan,
    index: usize,
    opts: &ValidateOptions,
) -> Result<PointRows, ScenarioError> {
    // A draw's runs take their `draw_samples`.
    let opts = &ValidateOptions {
        draw: true,
        ..opts.clone()
    };
    let values = &plan.points[index];
    let pseed = point_seed(plan.seed, index as u64);
    let mut out = PointRows::default();
    for (ei, e) in experiments.iter().enumerate() {
        let (checks, needed) = e.selected(opts.only.as_deref());
        // An experiment whose files declare no ranges has nothing to draw: its rows are
        // undecided (aggregate), and running it would only measure seed noise.
        if checks.is_empty() || !plan.draws_experiment(ei) {
            continue;
        }
        let flags = |spec: &crate::experiment::RunSpec| -> Vec<String> {
            plan.runs
                .iter()
                .find(|r| r.experiment == ei && r.run == spec.id)
                .map(|r| {
                    r.params
                        .iter()
                        .map(|&p| plan.parameters[p].flag(values[p]))
                        .collect()
                })
                .unwrap_or_default()
        };
        // The declared free parameter, fitted again on this draw's values. The fit's own runs at
        // the value it chose are the draw's runs of them (the same flags and seeds), so they are
        // not run twice.
        let mut fit_runs = crate::experiment::Ran::new();
        let fitted = match &e.file.calibration {
            Some(cal) if !needed.is_empty() => {
                let (fit, ran) = e
                    .refit(cal, opts, &flags, &|s| replication_seed(pseed, s))
                    .map_err(|err| in_draw(err, index, &flags, &needed))?;
                fit_runs = ran;
                Some((cal, fit.value))
            }
            _ => None,
        };
        let flags = |spec: &crate::experiment::RunSpec| -> Vec<String> {
            let mut f = flags(spec);
            if let Some((cal, x)) = fitted {
                f.push(format!("{}={x}", cal.parameter));
            }
            f
        };
        if let Some((cal, x)) = fitted {
            out.fitted
                .insert(format!("{}/{}", e.file.id, cal.parameter), x);
        }
        let rest: Vec<&crate::experiment::RunSpec> = (needed.iter().copied())
            .filter(|spec| !fit_runs.contains_key(&spec.id))
            .collect();
        let mut ran = e
            .run_all(&rest, opts, &flags, &|s| replication_seed(pseed, s))
            .map_err(|err| in_draw(err, index, &flags, &needed))?;
        ran.extend(
            fit_runs
                .into_iter()
                .filter(|(id, _)| needed.iter().any(|s| &s.id == id)),
        );
        for (id, (_, n)) in &ran {
            out.samples.insert(format!("{}/{id}", e.file.id), *n);
        }
        let results: BTreeMap<String, RunResult> =
            ran.into_iter().map(|(id, (r, _))| (id, r)).collect();
        for row in e.evaluate_all(&checks, &results) {
            let holds = holds(&row);
            out.rows.insert(row.id, (row.value, holds));
        }
    }
    Ok(out)
}

/// Whether a draw's row held: its own yes or no, or else its decided verdict. A row that gives
/// no yes or no but fails (a `step_period` row whose estimator finds no box width: "no box
/// width is a fail", docs/validation.md) does not hold in that draw; left out, it would count
/// only the draws in which the estimator found something, and its share would read high.
fn holds(row: &ValidationRow) -> Option<bool> {
    row.holds.or(match row.verdict {
        Verdict::Pass => Some(true),
        Verdict::Fail => Some(false),
        Verdict::Undecided => None,
    })
}

/// An error inside a draw, with the draw's values, so it can be repeated with `--set`.
fn in_draw(
    err: ScenarioError,
    index: usize,
    flags: &dyn Fn(&crate::experiment::RunSpec) -> Vec<String>,
    needed: &[&crate::experiment::RunSpec],
) -> ScenarioError {
    let set: Vec<String> = needed.iter().flat_map(|s| flags(s)).collect();
    ScenarioError::Override {
        flag: format!("(draw {index}) {}", set.join(" ")),
        message: format!(
            "a draw inside the declared ranges failed: {err}. A range that the model cannot \
             run is a range to correct"
        ),
    }
}

/// Judge every selected row over the points' results (in point order), beside the nominal
/// validation's rows.
pub fn aggregate(
    experiments: &[Experiment],
    plan: &Plan,
    points: &[PointRows],
    nominal: &ValidationReport,
    only: Option<&str>,
) -> UncertaintyReport {
    let names = plan.names();
    let mut rows = Vec::new();
    for (ei, e) in experiments.iter().enumerate() {
        let (checks, _) = e.selected(only);
        for c in checks {
            let id = c.id().to_string();
            let runs = c.runs();
            // The parameters of the runs the row compares.
            let mut params: Vec<usize> = plan
                .runs
                .iter()
                .filter(|r| r.experiment == ei && runs.contains(&r.run.as_str()))
                .flat_map(|r| r.params.iter().copied())
                .collect();
            params.sort_unstable();
            params.dedup();
            let values: Vec<f64> = points
                .iter()
                .map(|p| p.rows.get(&id).and_then(|r| r.0).unwrap_or(f64::NAN))
                .collect();
            let holds: Vec<Option<bool>> = points
                .iter()
                .map(|p| p.rows.get(&id).and_then(|r| r.1))
                .collect();
            let samples = points
                .iter()
                .flat_map(|p| {
                    runs.iter()
                        .filter_map(|r| p.samples.get(&format!("{}/{r}", e.file.id)))
                })
                .min()
                .copied()
                .unwrap_or(0);
            let nominal_row = nominal.rows.iter().find(|r| r.id == id);
            let judged = c.judged();
            // What the drivers are ranked against: the value, or else whether it held.
            let outcome: Vec<f64> = match judged {
                Judged::Value { .. } => values.clone(),
                Judged::Share { .. } if values.iter().any(|v| !v.is_nan()) => values.clone(),
                Judged::Share { .. } => holds
                    .iter()
                    .map(|h| h.map_or(f64::NAN, |h| f64::from(u8::from(h))))
                    .collect(),
            };
            let mut drivers: Vec<Driver> = params
                .iter()
                .map(|&p| {
                    let x: Vec<f64> = plan.points.iter().map(|v| v[p]).collect();
                    Driver {
                        parameter: names[p].clone(),
                        rho: spearman(&x, &outcome),
                    }
                })
                // A rank correlation below 2/sqrt(N) is what N draws of an unrelated parameter
                // give about one time in twenty: not shown as a driver.
                .filter(|d| d.rho.abs() >= 2.0 / (plan.points.len() as f64).sqrt())
                .collect();
            drivers.sort_by(|a, b| b.rho.abs().total_cmp(&a.rho.abs()));
            drivers.truncate(3);
            // Drawn or fixed: a value read off this row's target is not evidence the row gives.
            let mut inferred: Vec<String> = plan
                .parameters
                .iter()
                .enumerate()
                .filter(|(_, p)| p.range.inferred_from.contains(&id))
                .map(|(i, _)| names[i].clone())
                .chain(
                    plan.fixed
                        .iter()
                        .filter(|f| f.inferred_from.contains(&id))
                        .map(|f| f.key.clone()),
                )
                .collect();
            for k in e.calibrations.get(&id).into_iter().flatten() {
                if !inferred
                    .iter()
                    .any(|i| i == k || i.starts_with(&format!("{k}@")))
                {
                    inferred.push(k.clone());
                }
            }
            // A fit that ended at a bound of its sourced range in more than one draw in ten:
            // the range cannot give the calibration row its target there, so the row and every
            // row that reads the parameter are in tension, whatever their values (DESIGN.md
            // rule 4).
            let at_bound = e.file.calibration.as_ref().and_then(|cal| {
                if !e.calibration_readers.contains(&id) {
                    return None;
                }
                let name = format!("{}/{}", e.file.id, cal.parameter);
                let fits: Vec<f64> = points
                    .iter()
                    .filter_map(|p| p.fitted.get(&name).copied())
                    .collect();
                let n = fits.iter().filter(|&&v| cal.at_bound(v)).count();
                (!fits.is_empty() && n as f64 > 0.1 * fits.len() as f64).then(|| {
                    (
                        cal.parameter.clone(),
                        format!(
                            "tension: fit at its bound: {} ended at a bound of its sourced range \
                             {}..{} in {n} of {} draws",
                            cal.parameter,
                            cal.low,
                            cal.high,
                            fits.len()
                        ),
                    )
                })
            });
            let band = Band::of(&values);
            let mut row = UncertaintyRow {
                id: id.clone(),
                experiment: e.file.id.clone(),
                class: Class::Undecided,
                nominal: nominal_row.map_or(String::new(), |r| r.simulated.clone()),
                nominal_verdict: nominal_row
                    .map_or(irqlab_stats::results::Verdict::Undecided, |r| r.verdict),
                nominal_value: nominal_row.and_then(|r| r.value),
                published: nominal_row.map_or(String::new(), |r| r.published.clone()),
                published_interval: None,
                quantity: None,
                scale: None,
                band,
                percentile: None,
                holds_share: None,
                pass_share: None,
                draws: 0,
                drivers,
                inferred,
                fit_at_bound: None,
                detail: String::new(),
            };
            if runs.is_empty() {
                // Worked out on a platform's topology (seed 001's routing table): no run, so no
                // drawn parameter enters it and every draw gives the nominal result.
                row.class = match row.nominal_verdict {
                    irqlab_stats::results::Verdict::Pass => Class::Pass,
                    irqlab_stats::results::Verdict::Fail => Class::Inconsistent,
                    _ => Class::Undecided,
                };
                row.detail = "worked out on the platform's topology, with no simulated run: no \
                              drawn parameter enters it, so every draw gives the nominal result"
                    .into();
                rows.push(row);
                continue;
            }
            if params.is_empty() {
                row.detail = "the files of its runs declare no ranges yet: over no range the \
                              draws would show seed noise alone"
                    .into();
                rows.push(row);
                continue;
            }
            match judged {
                Judged::Value {
                    published,
                    point,
                    window,
                    scale,
                    quantity,
                } => {
                    let drawn: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
                    row.draws = drawn.len() as u32;
                    row.published_interval = Some([published.0, published.1]);
                    row.quantity = Some(quantity);
                    row.scale = Some(scale);
                    row.percentile = Some(match point {
                        Some(x) => [percentile_of(&drawn, x); 2],
                        None => [
                            percentile_of(&drawn, published.0),
                            percentile_of(&drawn, published.1),
                        ],
                    });
                    // A rate whose published window is below what a draw's samples can show
                    // (fewer than 3 expected at its top) cannot be judged from these draws.
                    let resolvable = scale != Scale::Log || samples as f64 * published.1 >= 3.0;
                    match band {
                        Some(b) if resolvable => {
                            row.class = classify_value(&b, published, window, scale);
                            row.detail =
                                value_detail(row.class, &b, published, window, scale, quantity);
                        }
                        _ if !resolvable => {
                            row.detail = format!(
                                "{samples} samples per draw cannot resolve a rate of {:.1e} \
                                 (fewer than 3 expected); run the published sample count \
                                 (--full) or more",
                                published.1
                            );
                        }
                        _ => row.detail = "no draw gave the row a value".into(),
                    }
                }
                Judged::Share { pass_share } => {
                    let decided: Vec<bool> = holds.iter().flatten().copied().collect();
                    row.draws = decided.len() as u32;
                    row.pass_share = Some(pass_share);
                    if !decided.is_empty() {
                        let share =
                            decided.iter().filter(|&&h| h).count() as f64 / decided.len() as f64;
                        row.holds_share = Some(share);
                        row.class = classify_share(share, pass_share);
                        row.detail = format!(
                            "holds in {:.0}% of {} draws (pass: at least {:.0}%)",
                            share * 100.0,
                            decided.len(),
                            pass_share * 100.0
                        );
                    } else {
                        row.detail = "no draw could judge the row".into();
                    }
                }
            }
            if let Some((parameter, why)) = at_bound {
                row.class = Class::Tension;
                row.fit_at_bound = Some(parameter);
                row.detail = format!("{why}; {}", row.detail);
            }
            rows.push(row);
        }
    }
    UncertaintyReport {
        draws: plan.points.len() as u32,
        seed: plan.seed,
        parameters: plan
            .parameters
            .iter()
            .zip(&names)
            .map(|(p, name)| p.described(name.clone()))
            .collect(),
        fixed: plan.fixed.clone(),
        fitted: fitted(experiments, points),
        rows,
    }
}

/// The spread of each `[calibration]` parameter's values over the draws.
fn fitted(
    experiments: &[Experiment],
    points: &[PointRows],
) -> Vec<irqlab_stats::results::FittedParameter> {
    let mut out = Vec::new();
    for e in experiments {
        let Some(cal) = &e.file.calibration else {
            continue;
        };
        let name = format!("{}/{}", e.file.id, cal.parameter);
        let mut v: Vec<f64> = points
            .iter()
            .filter_map(|p| p.fitted.get(&name).copied())
            .collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        out.push(irqlab_stats::results::FittedParameter {
            experiment: e.file.id.clone(),
            key: cal.parameter.clone(),
            row: cal.row.clone(),
            p5: at(0.05),
            median: at(0.5),
            p95: at(0.95),
        });
    }
    out
}

/// The class of a value row in a sentence.
fn value_detail(
    class: Class,
    b: &Band,
    published: (f64, f64),
    window: f64,
    scale: Scale,
    quantity: Quantity,
) -> String {
    let v = |x: f64| quantity.show(x);
    let widths = |w: f64| match scale {
        Scale::Linear => v(w),
        Scale::Log => format!("{w:.1} decades"),
    };
    let band = format!("{}..{}", v(b.p5), v(b.p95));
    // A published point lies inside a band; a published interval (the seed's words, or a
    // published range) overlaps it (`classify_value`).
    let (published, meets) = if published.0 == published.1 {
        (v(published.0), "is inside")
    } else {
        (
            format!(
                "the published interval {}..{}",
                v(published.0),
                v(published.1)
            ),
            "overlaps",
        )
    };
    match class {
        Class::Pass => format!(
            "{published} {meets} the 5-95% band {band}, which is no wider than twice the \
             tolerance window ({})",
            widths(window)
        ),
        Class::ConsistentButUninformative => format!(
            "{published} {meets} the 5-95% band {band}, but the band ({}) is wider than twice \
             the tolerance window ({}): source the top drivers",
            widths(scale.width(b.p5, b.p95)),
            widths(window)
        ),
        Class::Tension => format!(
            "{published} is outside the 5-95% band {band} but {} 1-99% ({}..{})",
            if meets == "overlaps" {
                "overlaps"
            } else {
                "inside"
            },
            v(b.p1),
            v(b.p99)
        ),
        Class::Inconsistent => format!(
            "{published} is outside the 1-99% band ({}..{}): a mechanism or a fact is missing",
            v(b.p1),
            v(b.p99)
        ),
        Class::Undecided => String::new(),
    }
}

fn file_stem(p: &Path) -> String {
    p.file_stem()
        .map_or_else(|| p.display().to_string(), |s| s.to_string_lossy().into())
}

/// `validate --uncertainty`: the experiments in a directory and the draws over their ranges,
/// planned, then run.
pub struct Draws {
    experiments: Vec<Experiment>,
    plan: Plan,
}

impl Draws {
    /// Plan `draws` points over the experiments in `dir` (the rows `only` selects).
    pub fn prepare(
        dir: impl AsRef<Path>,
        only: Option<&str>,
        draws: u32,
        seed: u64,
    ) -> Result<Draws, ScenarioError> {
        Draws::prepare_path(dir.as_ref(), only, draws, seed)
    }

    fn prepare_path(
        dir: &Path,
        only: Option<&str>,
        draws: u32,
        seed: u64,
    ) -> Result<Draws, ScenarioError> {
        let experiments = Experiment::load_dir(dir)?;
        let plan = plan(&experiments, only, draws, seed)?;
        Ok(Draws { experiments, plan })
    }

    /// How many interrupts the draws will simulate (for a progress bar): the runs of the
    /// experiments with something to draw, once per draw.
    pub fn planned_samples(&self, opts: &ValidateOptions) -> Result<u64, ScenarioError> {
        let opts = &ValidateOptions {
            draw: true,
            ..opts.clone()
        };
        let mut total = 0u64;
        for (ei, e) in self.experiments.iter().enumerate() {
            if self.plan.draws_experiment(ei) {
                total += e.planned_samples(opts)?;
            }
        }
        Ok(total.saturating_mul(self.plan.points.len() as u64))
    }

    /// Run every point on all cores and judge every selected row beside `nominal`.
    pub fn run(
        &self,
        opts: &ValidateOptions,
        nominal: &ValidationReport,
    ) -> Result<UncertaintyReport, ScenarioError> {
        use rayon::prelude::*;
        let points = (0..self.plan.points.len())
            .into_par_iter()
            .map(|i| run_point(&self.experiments, &self.plan, i, opts))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(aggregate(
            &self.experiments,
            &self.plan,
            &points,
            nominal,
            opts.only.as_deref(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_a_run_sets_itself_is_not_drawn_for_that_run() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let e = Experiment::load(root.join("experiments/seed003.toml")).unwrap();
        // `rt-van-max` needs run vanilla-5, which sets the clock and the per-frame work.
        let plan = parameters(std::slice::from_ref(&e), Some("rt-van-max"), 1).unwrap();
        let names = plan.names();
        let run = &plan.runs[0];
        let drawn: Vec<&str> = run.params.iter().map(|&p| names[p].as_str()).collect();
        // The clock is the seed's own fact: pinned.
        let pinned = "platform.cpu.clock_hz";
        assert!(plan.parameters.iter().any(|p| p.key == pinned));
        assert!(!drawn.contains(&pinned), "{pinned} drawn: {drawn:?}");
        // The per-frame work is set by the run too, but as an `[[inferred]]` value read off a
        // row that gives no point to fit it to again: drawn over its sourced range.
        assert!(drawn.contains(&"kernel.net.rx_packet"), "{drawn:?}");
        assert!(
            drawn.contains(&"platform.cpu.cycles_per_instruction"),
            "{drawn:?}"
        );
    }

    #[test]
    fn a_latin_hypercube_fills_every_stratum_once() {
        let h = latin_hypercube(50, 7, 3);
        for d in 0..7 {
            let mut strata: Vec<usize> = h.iter().map(|r| (r[d] * 50.0) as usize).collect();
            strata.sort_unstable();
            assert_eq!(strata, (0..50).collect::<Vec<_>>());
        }
        assert_eq!(h, latin_hypercube(50, 7, 3));
        assert_ne!(h, latin_hypercube(50, 7, 4));
    }

    #[test]
    fn a_failed_row_without_a_yes_or_no_does_not_hold() {
        let row = |holds, verdict| ValidationRow {
            id: "r".into(),
            experiment: "e".into(),
            metric: String::new(),
            published: String::new(),
            published_text: String::new(),
            simulated: "no box width".into(),
            value: None,
            holds,
            interval: None,
            tolerance: String::new(),
            verdict,
            samples: None,
            needs: None,
            source: String::new(),
            detail: String::new(),
            calibration: Vec::new(),
            fit_at_bound: None,
        };
        assert_eq!(holds(&row(None, Verdict::Fail)), Some(false));
        assert_eq!(holds(&row(None, Verdict::Pass)), Some(true));
        assert_eq!(holds(&row(None, Verdict::Undecided)), None);
        // A row's own answer stands (a phase order that holds on its points while its
        // intervals leave the verdict undecided).
        assert_eq!(holds(&row(Some(true), Verdict::Undecided)), Some(true));
    }

    #[test]
    fn whole_numbers_are_drawn_whole_and_inside_their_range() {
        let p = Parameter {
            key: "platform.ich.legacy_io_clocks".into(),
            file: "x".into(),
            nominal: 12.0,
            integer: true,
            range: Range {
                low: 4.0,
                high: 50.0,
                dist: crate::scenario::ranges::Dist::Uniform,
                basis: String::new(),
                inferred_from: vec![],
            },
        };
        for k in 0..=100 {
            let v = p.at(f64::from(k) / 100.0);
            assert_eq!(v, v.round());
            assert!((4.0..=50.0).contains(&v));
        }
        assert_eq!(p.flag(12.0), "platform.ich.legacy_io_clocks=12");
        let f = Parameter {
            integer: false,
            ..p
        };
        assert_eq!(f.flag(1.25e-7), "platform.ich.legacy_io_clocks=1.25e-7");
    }
}
