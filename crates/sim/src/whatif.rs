//! `irqlab sim SCENARIO --uncertainty N`: a what-if with its uncertainty (DESIGN.md, "How a row
//! is judged", applied to one scenario instead of the rows).
//!
//! The parameters are the ranges the scenario's three files (scenario, platform, kernel)
//! declare beside their estimates ([`crate::scenario::ranges`]), less those the user's `--set`
//! pins. The draws are the Latin hypercube of `validate --uncertainty`
//! ([`crate::uncertainty::latin_hypercube`]); draw `i` runs the scenario with its values as `--set`
//! overrides (the user's own after them) and the seed `replication_seed(point_seed(draw_seed,
//! i), seed)`, from the draw's index alone, so a draw runs the same on any thread or shard. The
//! plain run (the files' own values and the run's seed) is the nominal.
//!
//! The quantities: for each latency metric the plain run shows (`irqlab sim`'s table), its
//! mean, median (p50), p99 and maximum; then every counter the run shows, except the
//! simulator's bookkeeping ([`BOOKKEEPING`]), whose value changes in some draw (the others are
//! listed as unchanged). Each gets the draws' 5-95% band and the three parameters that drive it
//! most (Spearman's rank correlation over the draws).
//!
//! The validation context ([`rows_on`]): the rows of the experiments whose runs use the same
//! scenario file, with the verdicts `irqlab validate` gives them (the files as shipped; the
//! what-if's `--set` does not enter), so a what-if on a scenario whose rows fail says so.

use crate::experiment::{Experiment, ValidateOptions};
use crate::result::RunResult;
use crate::scenario::ranges::Spread;
use crate::scenario::Scenario;
use crate::scenario::{replication_seed, ScenarioError};
use crate::uncertainty::{latin_hypercube, point_seed, Parameter};
use irqlab_stats::results::{
    Driver, FixedEstimate, RunReport, WhatIfQuantity, WhatIfReport, WhatIfRow,
};
use irqlab_stats::uncertainty::{spearman, Band};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Counters that count the simulator's own work, not the modelled machine's: no what-if asks
/// for them.
pub const BOOKKEEPING: &[&str] = &[
    "events_simulated",
    "simulated_time_us",
    "warmup_samples_not_recorded",
];

/// The statistics of a latency metric a what-if reports, as `Summary` names them.
pub const STATISTICS: &[&str] = &["mean", "p50", "p99", "max"];

/// How many drivers each quantity lists.
const DRIVERS: usize = 3;

/// A scenario, its drawn parameters and the draws over them.
pub struct WhatIf {
    /// The scenario as given, and the file it was read from.
    pub scenario: String,
    pub file: PathBuf,
    /// The user's `--set`.
    pub set: Vec<String>,
    pub seed: u64,
    pub samples: u64,
    pub replications: u32,
    pub parameters: Vec<Parameter>,
    /// Declared parameters the user's `--set` pins.
    pub pinned: Vec<String>,
    pub fixed: Vec<FixedEstimate>,
    /// Draw-major: `points[d][p]` is parameter p's value in draw d.
    pub points: Vec<Vec<f64>>,
    pub draw_seed: u64,
    /// The baseline's overrides (`--against`), after `set`: each run is run again with them,
    /// the same drawn values and seed, and the report gives each quantity's difference.
    pub against: Vec<String>,
    /// The plain run's simulation.
    sim: Scenario,
}

impl WhatIf {
    /// Load `file` with `set` and plan `draws` draws over the ranges its files declare.
    /// `seed` and `samples` default to the scenario's.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare(
        scenario: &str,
        file: &Path,
        set: &[String],
        seed: Option<u64>,
        samples: Option<u64>,
        replications: u32,
        draws: u32,
        draw_seed: u64,
    ) -> Result<WhatIf, ScenarioError> {
        WhatIf::prepare_against(
            scenario,
            file,
            set,
            seed,
            samples,
            replications,
            draws,
            draw_seed,
            &[],
        )
    }

    /// [`WhatIf::prepare`] with a baseline: `against` after `set` (a parameter either sets is
    /// not drawn).
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_against(
        scenario: &str,
        file: &Path,
        set: &[String],
        seed: Option<u64>,
        samples: Option<u64>,
        replications: u32,
        draws: u32,
        draw_seed: u64,
        against: &[String],
    ) -> Result<WhatIf, ScenarioError> {
        let sim = Scenario::load(file, set)?;
        if !against.is_empty() {
            // Refused now, not after the draws.
            let mut both = set.to_vec();
            both.extend(against.iter().cloned());
            Scenario::load(file, &both)?;
        }
        let mut parameters = Vec::new();
        let mut pinned = Vec::new();
        let mut fixed = Vec::new();
        for d in sim.ranges()? {
            match d.spread {
                Spread::Fixed {
                    reason,
                    inferred_from,
                } => fixed.push(FixedEstimate {
                    key: d.key,
                    file: d.file.display().to_string(),
                    reason,
                    inferred_from,
                }),
                Spread::Drawn(range) => {
                    // A value the user sets is the what-if's question, not an uncertainty: the
                    // draw's flag would be overridden anyway, and it drives nothing.
                    if set
                        .iter()
                        .chain(against)
                        .any(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == d.key))
                    {
                        pinned.push(d.key);
                    } else {
                        parameters.push(Parameter {
                            key: d.key,
                            file: d.file,
                            nominal: d.nominal,
                            integer: d.integer,
                            range,
                        });
                    }
                }
            }
        }
        let points = if parameters.is_empty() {
            Vec::new()
        } else {
            latin_hypercube(draws as usize, parameters.len(), draw_seed)
                .iter()
                .map(|u| parameters.iter().zip(u).map(|(p, &u)| p.at(u)).collect())
                .collect()
        };
        Ok(WhatIf {
            scenario: scenario.to_string(),
            file: file.to_path_buf(),
            set: set.to_vec(),
            seed: seed.unwrap_or(sim.seed()),
            samples: samples.unwrap_or(sim.samples()),
            replications,
            parameters,
            pinned,
            fixed,
            points,
            draw_seed,
            against: against.to_vec(),
            sim,
        })
    }

    /// The plain run's simulation.
    pub fn simulation(&self) -> &Scenario {
        &self.sim
    }

    /// Interrupts the plain run and every draw simulate (twice with a baseline), for a progress
    /// bar.
    pub fn planned_samples(&self) -> u64 {
        let runs = (self.points.len() as u64 + 1) * if self.against.is_empty() { 1 } else { 2 };
        self.sim.interrupts(self.samples).saturating_mul(runs)
    }

    /// Draw `index`'s `--set` flags: its values, then the user's own.
    pub fn draw_flags(&self, index: usize) -> Vec<String> {
        self.parameters
            .iter()
            .zip(&self.points[index])
            .map(|(p, &v)| p.flag(v))
            .chain(self.set.iter().cloned())
            .collect()
    }

    /// Draw `index`'s run seed: from the draw seed and the index alone, and the run's seed.
    pub fn draw_seed_of(&self, index: usize) -> u64 {
        replication_seed(point_seed(self.draw_seed, index as u64), self.seed)
    }

    /// The plain run.
    pub fn run_nominal(
        &self,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<RunReport, ScenarioError> {
        let r = self
            .sim
            .simulate(self.seed, self.samples, 0, self.replications, progress)?;
        Ok(summary_report(&self.sim, self.seed, &r))
    }

    /// Draw `index`'s run.
    pub fn run_draw(
        &self,
        index: usize,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<RunReport, ScenarioError> {
        let flags = self.draw_flags(index);
        let in_draw = |err: ScenarioError| ScenarioError::Override {
            flag: format!("(draw {index}) {}", flags.join(" ")),
            message: format!(
                "a draw inside the declared ranges failed: {err}. A range that the model cannot \
                 run is a range to correct"
            ),
        };
        let sim = Scenario::load(&self.file, &flags).map_err(in_draw)?;
        let seed = self.draw_seed_of(index);
        let r = sim
            .simulate(seed, self.samples, 0, self.replications, progress)
            .map_err(in_draw)?;
        Ok(summary_report(&sim, seed, &r))
    }

    /// The baseline's plain run: the plain run with `against` after `set`, the same seed.
    pub fn run_baseline_nominal(
        &self,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<RunReport, ScenarioError> {
        let mut flags = self.set.clone();
        flags.extend(self.against.iter().cloned());
        let sim = Scenario::load(&self.file, &flags)?;
        let r = sim.simulate(self.seed, self.samples, 0, self.replications, progress)?;
        Ok(summary_report(&sim, self.seed, &r))
    }

    /// Draw `index`'s baseline run: its values, `set`, then `against`; the draw's seed.
    pub fn run_baseline_draw(
        &self,
        index: usize,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<RunReport, ScenarioError> {
        let mut flags = self.draw_flags(index);
        flags.extend(self.against.iter().cloned());
        let in_draw = |err: ScenarioError| ScenarioError::Override {
            flag: format!("(draw {index}, --against) {}", flags.join(" ")),
            message: format!(
                "a draw inside the declared ranges failed: {err}. A range that the model cannot \
                 run is a range to correct"
            ),
        };
        let sim = Scenario::load(&self.file, &flags).map_err(in_draw)?;
        let seed = self.draw_seed_of(index);
        let r = sim
            .simulate(seed, self.samples, 0, self.replications, progress)
            .map_err(in_draw)?;
        Ok(summary_report(&sim, seed, &r))
    }

    /// The plain run and every draw, on all cores, and the report (`rows` as [`rows_on`] gives
    /// them, or `None` when skipped).
    pub fn run(
        &self,
        progress: Option<Arc<AtomicU64>>,
        rows: Option<Vec<WhatIfRow>>,
    ) -> Result<WhatIfReport, ScenarioError> {
        use rayon::prelude::*;
        let (nominal, draws) = rayon::join(
            || self.run_nominal(progress.clone()),
            || {
                (0..self.points.len())
                    .into_par_iter()
                    .map(|i| self.run_draw(i, progress.clone()))
                    .collect::<Result<Vec<_>, _>>()
            },
        );
        let baseline = if self.against.is_empty() {
            None
        } else {
            let (n, d) = rayon::join(
                || self.run_baseline_nominal(progress.clone()),
                || {
                    (0..self.points.len())
                        .into_par_iter()
                        .map(|i| self.run_baseline_draw(i, progress.clone()))
                        .collect::<Result<Vec<_>, _>>()
                },
            );
            Some((n?, d?))
        };
        let (nominal, draws) = (nominal?, draws?);
        let differences = baseline.map(|(n, d)| self.differences(&nominal, &draws, &n, &d));
        let mut report = self.aggregate(nominal, &draws, rows);
        if let Some(differences) = differences {
            report.against = self.against.clone();
            report.differences = differences;
        }
        Ok(report)
    }

    /// [`WhatIf::run`] with the validation rows of the experiments in `rows` (a directory) that
    /// run the same scenario file ([`rows_on`]), their runs beside the draws; `None`: no rows.
    pub fn run_with_rows(
        &self,
        rows: Option<&Path>,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<WhatIfReport, ScenarioError> {
        let (judged, report) = rayon::join(
            || {
                rows.map(|dir| rows_on(dir, &self.file, progress.clone()))
                    .transpose()
            },
            || self.run(progress.clone(), None),
        );
        let mut report = report?;
        report.rows = judged?;
        Ok(report)
    }

    /// The report of the plain run `nominal` and the draws' runs, in draw order.
    pub fn aggregate(
        &self,
        mut nominal: RunReport,
        draws: &[RunReport],
        rows: Option<Vec<WhatIfRow>>,
    ) -> WhatIfReport {
        // The header lists every `--set` after the seed, as `irqlab sim`'s does.
        if !self.set.is_empty() {
            let at = nominal
                .config
                .iter()
                .position(|(k, _)| k == crate::report::SEED_KEY)
                .map_or(nominal.config.len(), |i| i + 1);
            nominal.config.insert(
                at,
                (
                    "overrides".into(),
                    format!("--set {}", self.set.join(" --set ")),
                ),
            );
        }
        let names: Vec<String> = self.parameters.iter().map(|p| p.key.clone()).collect();
        let mut quantities = Vec::new();
        let mut unchanged = Vec::new();
        if !self.points.is_empty() {
            // Metrics: the plain run's, in its order, then any only a draw shows.
            let mut metrics: Vec<String> = Vec::new();
            for r in std::iter::once(&nominal).chain(draws) {
                for m in &r.metrics {
                    if !metrics.contains(&m.label()) {
                        metrics.push(m.label());
                    }
                }
            }
            for label in &metrics {
                for &stat in STATISTICS {
                    let value = |r: &RunReport| metric_value(r, label, stat);
                    quantities.push(self.quantity(
                        format!("{label} {stat}"),
                        label,
                        stat,
                        "ns",
                        value(&nominal),
                        draws.iter().map(&value),
                        &names,
                    ));
                }
            }
            // Counters: a counter a run does not show is zero in it (`Shown::IfNonZero`).
            let mut counters: Vec<String> = Vec::new();
            for r in std::iter::once(&nominal).chain(draws) {
                for c in &r.counters {
                    let l = c.label();
                    if !counters.contains(&l) && !BOOKKEEPING.contains(&c.name.as_str()) {
                        counters.push(l);
                    }
                }
            }
            for label in &counters {
                let value = |r: &RunReport| Some(counter_value(r, label));
                let nominal_value = value(&nominal);
                if draws.iter().all(|r| value(r) == nominal_value) {
                    unchanged.push(label.clone());
                    continue;
                }
                quantities.push(self.quantity(
                    label.clone(),
                    label,
                    "value",
                    "count",
                    nominal_value,
                    draws.iter().map(&value),
                    &names,
                ));
            }
        }
        WhatIfReport {
            scenario: self.scenario.clone(),
            title: nominal.title.clone(),
            set: self.set.clone(),
            seed: self.seed,
            samples: self.samples,
            replications: self.replications,
            draws: self.points.len() as u32,
            draw_seed: self.draw_seed,
            chance_rho: chance_rho(self.points.len(), self.parameters.len()),
            parameters: self
                .parameters
                .iter()
                .map(|p| p.described(p.key.clone()))
                .collect(),
            pinned: self.pinned.clone(),
            fixed: self.fixed.clone(),
            quantities,
            unchanged,
            against: Vec::new(),
            differences: Vec::new(),
            rows,
            nominal,
        }
    }

    /// Each quantity's difference, the what-if's run less the baseline's (`--against`), in the
    /// plain run and in every draw (the same values and seed on both sides): every metric's
    /// statistics, and the counters that differ somewhere.
    pub fn differences(
        &self,
        nominal: &RunReport,
        draws: &[RunReport],
        base_nominal: &RunReport,
        base_draws: &[RunReport],
    ) -> Vec<WhatIfQuantity> {
        let names: Vec<String> = self.parameters.iter().map(|p| p.key.clone()).collect();
        let all = || {
            std::iter::once(nominal)
                .chain(draws)
                .chain(std::iter::once(base_nominal))
                .chain(base_draws)
        };
        let mut metrics: Vec<String> = Vec::new();
        let mut counters: Vec<String> = Vec::new();
        for r in all() {
            for m in &r.metrics {
                if !metrics.contains(&m.label()) {
                    metrics.push(m.label());
                }
            }
            for c in &r.counters {
                let l = c.label();
                if !counters.contains(&l) && !BOOKKEEPING.contains(&c.name.as_str()) {
                    counters.push(l);
                }
            }
        }
        let mut out = Vec::new();
        let pair = |f: &dyn Fn(&RunReport) -> Option<f64>, a: &RunReport, b: &RunReport| {
            Some(f(a)? - f(b)?)
        };
        for label in &metrics {
            for &stat in STATISTICS {
                let f = |r: &RunReport| metric_value(r, label, stat);
                out.push(self.quantity(
                    format!("{label} {stat}"),
                    label,
                    stat,
                    "ns",
                    pair(&f, nominal, base_nominal),
                    draws.iter().zip(base_draws).map(|(a, b)| pair(&f, a, b)),
                    &names,
                ));
            }
        }
        for label in &counters {
            let f = |r: &RunReport| Some(counter_value(r, label));
            let n = pair(&f, nominal, base_nominal);
            let d: Vec<Option<f64>> = draws
                .iter()
                .zip(base_draws)
                .map(|(a, b)| pair(&f, a, b))
                .collect();
            if n == Some(0.0) && d.iter().all(|v| *v == Some(0.0)) {
                continue;
            }
            out.push(self.quantity(
                label.clone(),
                label,
                "value",
                "count",
                n,
                d.into_iter(),
                &names,
            ));
        }
        out
    }

    /// One quantity: its band over the draws and its drivers.
    #[allow(clippy::too_many_arguments)]
    fn quantity(
        &self,
        name: String,
        of: &str,
        statistic: &str,
        unit: &str,
        nominal: Option<f64>,
        draws: impl Iterator<Item = Option<f64>>,
        names: &[String],
    ) -> WhatIfQuantity {
        let values: Vec<f64> = draws.map(|v| v.unwrap_or(f64::NAN)).collect();
        let mut drivers: Vec<Driver> = (0..self.parameters.len())
            .map(|p| {
                let x: Vec<f64> = self.points.iter().map(|d| d[p]).collect();
                Driver {
                    parameter: names[p].clone(),
                    rho: spearman(&x, &values),
                }
            })
            .filter(|d| d.rho.is_finite())
            .collect();
        // Largest |rho| first; ties in the parameters' order (a stable sort).
        drivers.sort_by(|a, b| b.rho.abs().total_cmp(&a.rho.abs()));
        drivers.truncate(DRIVERS);
        WhatIfQuantity {
            name,
            of: of.to_string(),
            statistic: statistic.to_string(),
            unit: unit.to_string(),
            nominal,
            band: Band::of(&values),
            draws: values.iter().filter(|v| !v.is_nan()).count() as u32,
            drivers,
        }
    }
}

/// A metric's statistic (`mean`, `p50`, `p99`, `max`) in a run, by the metric's label.
fn metric_value(r: &RunReport, label: &str, stat: &str) -> Option<f64> {
    let s = &r.metrics.iter().find(|m| m.label() == label)?.summary;
    match stat {
        "mean" => s.mean_ns,
        "p50" => s.p50_ns.map(|v| v as f64),
        "p99" => s.p99_ns.map(|v| v as f64),
        _ => s.max_ns.map(|v| v as f64),
    }
}

/// A counter's value in a run, by its label: zero where the run does not show it
/// (`Shown::IfNonZero`).
fn counter_value(r: &RunReport, label: &str) -> f64 {
    r.counters
        .iter()
        .find(|c| c.label() == label)
        .map_or(0.0, |c| c.value as f64)
}

/// A run's report as a what-if keeps it: header, metrics and counters.
pub fn summary_report(sim: &Scenario, seed: u64, r: &RunResult) -> RunReport {
    let mut rep = crate::report::run_report(sim, seed, r);
    rep.histograms.clear();
    rep.series.clear();
    rep.trace.clear();
    rep
}

/// `path` as a comparable key: a shipped path in its shortest form, a file on disk by its
/// canonical path where it has one.
fn same_file_key(path: &Path) -> PathBuf {
    if crate::shipped::is_shipped(path) {
        crate::shipped::normalize(path)
    } else {
        std::fs::canonicalize(path).unwrap_or_else(|_| crate::shipped::normalize(path))
    }
}

/// The validation rows of the experiments in `dir` whose runs use the scenario `file`, with
/// their nominal verdicts (each experiment runs only what those rows need, as `validate --only`
/// would).
pub fn rows_on(
    dir: &Path,
    file: &Path,
    progress: Option<Arc<AtomicU64>>,
) -> Result<Vec<WhatIfRow>, ScenarioError> {
    let (experiments, selected) = rows_selected(dir, file)?;
    let opts = ValidateOptions {
        progress,
        ..ValidateOptions::default()
    };
    use rayon::prelude::*;
    let judged = experiments
        .par_iter()
        .zip(&selected)
        .map(|(e, (ids, on))| -> Result<Vec<WhatIfRow>, ScenarioError> {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let (all, _) = e.selected(None);
            let checks: Vec<_> = all
                .into_iter()
                .filter(|c| ids.iter().any(|i| i == c.id()))
                .collect();
            let needed: Vec<_> = e
                .file
                .run
                .iter()
                .filter(|spec| checks.iter().any(|c| c.runs().contains(&spec.id.as_str())))
                .collect();
            let ran = e.run_all(&needed, &opts, &|_| Vec::new(), &|seed| seed)?;
            let results: BTreeMap<String, RunResult> =
                ran.into_iter().map(|(id, (r, _))| (id, r)).collect();
            let mut rows = e.evaluate_all(&checks, &results);
            // As validate judges them: calibration rows and a fit at its bound said so.
            e.mark(&mut rows, e.nominal_at_bound.is_some());
            Ok(rows
                .into_iter()
                .zip(&checks)
                .map(|(row, c)| {
                    let runs: Vec<String> = c
                        .runs()
                        .into_iter()
                        .filter(|r| on.iter().any(|o| o.as_str() == *r))
                        .map(str::to_string)
                        .collect();
                    let specs: Vec<&crate::experiment::RunSpec> =
                        e.file.run.iter().filter(|s| runs.contains(&s.id)).collect();
                    // The flags every run of the row takes, in the first run's order.
                    let set: Vec<String> = specs
                        .first()
                        .map(|f| {
                            f.set
                                .iter()
                                .filter(|flag| specs.iter().all(|s| s.set.contains(flag)))
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default();
                    (row, runs, set)
                })
                .map(|(row, runs, set)| WhatIfRow {
                    runs,
                    set,
                    id: row.id,
                    experiment: row.experiment,
                    verdict: row.verdict,
                    simulated: row.simulated,
                    published: row.published,
                    detail: row.detail,
                    calibration: row.calibration,
                    fit_at_bound: row.fit_at_bound,
                })
                .collect())
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(judged.into_iter().flatten().collect())
}

/// Each experiment in `dir`, with the ids of its rows that compare a run of `file` and the ids
/// of its runs of `file`.
#[allow(clippy::type_complexity)]
fn rows_selected(
    dir: &Path,
    file: &Path,
) -> Result<(Vec<Experiment>, Vec<(Vec<String>, Vec<String>)>), ScenarioError> {
    let experiments = Experiment::load_dir(dir)?;
    let key = same_file_key(file);
    let selected = experiments
        .iter()
        .map(|e| {
            let on: Vec<String> = e
                .file
                .run
                .iter()
                .filter(|spec| same_file_key(&e.scenario_path(spec)) == key)
                .map(|spec| spec.id.clone())
                .collect();
            let ids: Vec<String> = e
                .file
                .check
                .iter()
                .filter(|c| c.runs().iter().any(|r| on.iter().any(|o| o == r)))
                .map(|c| c.id().to_string())
                .collect();
            (ids, on)
        })
        .collect();
    Ok((experiments, selected))
}

/// Interrupts [`rows_on`] will simulate, for a progress bar.
pub fn rows_planned_samples(dir: &Path, file: &Path) -> Result<u64, ScenarioError> {
    let (experiments, selected) = rows_selected(dir, file)?;
    let mut total = 0;
    for (e, (ids, _)) in experiments.iter().zip(&selected) {
        for spec in e.file.run.iter().filter(|spec| {
            e.file
                .check
                .iter()
                .any(|c| ids.iter().any(|i| i == c.id()) && c.runs().contains(&spec.id.as_str()))
        }) {
            let sim = Scenario::load(e.scenario_path(spec), &spec.set)?;
            let opts = ValidateOptions::default();
            total += sim.interrupts(spec.samples(&opts, sim.samples()));
        }
    }
    Ok(total)
}

/// The |rho| the largest of `params` chance correlations over `draws` draws exceeds in 5% of
/// cases: the two-sided 5%/params normal quantile over sqrt(draws - 1) (rho's standard error
/// for independent draws). `None` with fewer than 4 draws or no parameter.
pub fn chance_rho(draws: usize, params: usize) -> Option<f64> {
    if draws < 4 || params == 0 {
        return None;
    }
    let tail = 0.05 / params as f64 / 2.0;
    // The upper-tail normal quantile by bisection on erfc (Abramowitz and Stegun 7.1.26,
    // |error| < 1.5e-7).
    let upper = |z: f64| {
        let x = z / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * x);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        0.5 * poly * (-x * x).exp()
    };
    let (mut lo, mut hi) = (0.0f64, 10.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if upper(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo / ((draws - 1) as f64).sqrt()).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_correlations_shrink_with_draws_and_grow_with_parameters() {
        // One parameter, 5% two-sided: z = 1.96.
        let one = chance_rho(101, 1).unwrap();
        assert!((one - 0.196).abs() < 1e-3, "{one}");
        assert!(chance_rho(20, 70).unwrap() > chance_rho(20, 5).unwrap());
        assert!(chance_rho(200, 70).unwrap() < chance_rho(20, 70).unwrap());
        assert_eq!(chance_rho(3, 5), None);
        assert_eq!(chance_rho(20, 0), None);
    }
}
