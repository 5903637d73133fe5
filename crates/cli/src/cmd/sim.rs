//! `irqlab sim`: one scenario, simulated.

use super::{emit_run, flags_tag};
use crate::args::SimArgs;
use crate::made::Invocation;
use crate::ui::Progress;
use anyhow::{Context as _, Result};
use irqlab_sim::scenario::Scenario;
use irqlab_stats::results::RunReport;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The settings of a simulation, as its JSON records them: what reproduces it bit for bit.
#[derive(Serialize)]
struct Settings<'a> {
    /// The scenario as given on the command line.
    scenario: String,
    /// The file it was read from (`<shipped>/...` for a shipped scenario).
    scenario_file: String,
    /// Every `--set`, in order.
    overrides: &'a [String],
    /// The seed the run used (the scenario's unless `--seed`).
    seed: u64,
    /// Samples simulated (the scenario's unless `--samples`).
    samples: u64,
    replications: u32,
    trace_packets: usize,
}

/// The scenario to load: the file on disk if there is one, else the shipped scenario of that
/// name.
pub(crate) fn resolve(scenario: &Path) -> Result<PathBuf> {
    if scenario.exists() {
        return Ok(scenario.to_path_buf());
    }
    if let Some(p) = scenario.to_str().and_then(irqlab_sim::shipped::scenario) {
        return Ok(p);
    }
    let names: Vec<String> = irqlab_sim::shipped::scenarios()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    anyhow::bail!(
        "{}: no such file, and no shipped scenario of that name; give a scenario file, or one of \
         the shipped scenarios: {} (irqlab list)",
        scenario.display(),
        names.join(", ")
    )
}

/// The flags that change a simulation's result, as typed, for the figures' tag.
fn result_flags(a: &SimArgs) -> Vec<String> {
    let mut flags = Vec::new();
    for s in &a.set {
        flags.extend(["--set".to_string(), s.clone()]);
    }
    let optional = [
        ("--seed", a.seed.map(|v| v.to_string())),
        ("--samples", a.samples.map(|v| v.to_string())),
        (
            "--replications",
            (a.replications != 1).then(|| a.replications.to_string()),
        ),
    ];
    for (flag, v) in optional {
        if let Some(v) = v {
            flags.extend([flag.to_string(), v]);
        }
    }
    flags
}

pub fn run(a: SimArgs, inv: &Invocation) -> Result<()> {
    super::check_outputs(a.json.as_deref(), a.plot.as_deref())?;
    if let Some(p) = &a.histogram_out {
        super::check_output("--histogram-out", p)?;
    }
    let file = resolve(&a.scenario)?;
    if let Some(draws) = a.uncertainty {
        return whatif(&a, &file, draws, inv);
    }
    let counter = Arc::new(AtomicU64::new(0));
    let sim = Scenario::load(&file, &a.set)?;
    if a.trace > 0 && !sim.has_analyzer() {
        anyhow::bail!(
            "--trace shows the packets on the measured device's link; {} has no device on a \
             link to watch (a run of cyclictest alone)",
            a.scenario.display()
        );
    }
    if sim.counts_frames() {
        // A forwarding run has counters and a rate, no distribution to draw or packets to list.
        let refused = [
            ("--plot", a.plot.is_some()),
            ("--histogram-out", a.histogram_out.is_some()),
        ];
        if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
            anyhow::bail!(
                "{flag} needs a latency distribution, and {} is a run of fixed length \
                 (duration_ms) that counts frames: it has none; drop {flag}",
                a.scenario.display()
            );
        }
    }
    let seed = a.seed.unwrap_or(sim.seed());
    let samples = a.samples.unwrap_or(sim.samples());
    let bar = Progress::start(sim.interrupts(samples), &counter);
    let result = sim.simulate(seed, samples, a.trace, a.replications, Some(counter));
    bar.finish();
    let result = result?;
    // cyclictest's histogram, checked before anything is printed or written.
    let cyclictest = match &a.histogram_out {
        Some(path) => {
            let Some(h) = result.metric(CYCLICTEST_METRIC) else {
                let names: Vec<&str> = result.metrics.iter().map(|m| m.name.as_str()).collect();
                anyhow::bail!(
                    "--histogram-out writes cyclictest's latencies, and {} runs no cyclictest \
                     (its metrics: {}); use a scenario with a [cyclictest], such as seed003/idle",
                    a.scenario.display(),
                    names.join(", ")
                );
            };
            Some((path, h))
        }
        None => None,
    };
    let mut rep = irqlab_sim::report::run_report(&sim, seed, &result);
    let kind = sim.variant();
    list_overrides(&mut rep, &a.set);
    let made = inv.made(
        &Settings {
            scenario: a.scenario.display().to_string(),
            scenario_file: file.display().to_string(),
            overrides: &a.set,
            seed,
            samples,
            replications: a.replications,
            trace_packets: a.trace,
        },
        None,
    );
    // Figures are named after the scenario, the delivery (or model) and a tag of the flags that
    // change the result: runs with other flags never overwrite them.
    let stem = a
        .scenario
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned());
    let name = match flags_tag(&result_flags(&a)) {
        Some(t) => format!("{stem}-{kind}-{t}"),
        None => format!("{stem}-{kind}"),
    };
    emit_run(
        &rep,
        &made,
        a.json.as_deref(),
        a.plot.as_deref().map(|d| (d, name.as_str())),
    )?;
    if let Some((path, h)) = cyclictest {
        let text = irqlab_report::cyclictest::cyclictest_histogram(&[h], a.histogram_max_us);
        irqlab_report::write_atomic(path, text.as_bytes()).with_context(|| "--histogram-out")?;
        crate::ui::wrote(std::slice::from_ref(path));
    }
    Ok(())
}

/// The metric a simulated cyclictest records (`scenario::Outcome::into_result`).
const CYCLICTEST_METRIC: &str = "cyclictest_latency";

/// The run's header lists every `--set`, after the seed.
fn list_overrides(rep: &mut RunReport, set: &[String]) {
    if set.is_empty() {
        return;
    }
    let at = rep
        .config
        .iter()
        .position(|(k, _)| k == irqlab_sim::report::SEED_KEY)
        .map_or(rep.config.len(), |i| i + 1);
    rep.config.insert(
        at,
        ("overrides".into(), format!("--set {}", set.join(" --set "))),
    );
}

/// The settings of a what-if, as its JSON records them.
#[derive(Serialize)]
struct WhatIfSettings<'a> {
    scenario: String,
    scenario_file: String,
    overrides: &'a [String],
    seed: u64,
    samples: u64,
    replications: u32,
    /// `--uncertainty`: the draws and their seed.
    uncertainty: u32,
    draw_seed: u64,
    /// Whether the validation rows on the scenario were judged (not `--no-rows`).
    rows: bool,
    /// `--against`: the baseline's overrides.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    against: &'a [String],
}

/// `irqlab sim SCENARIO --uncertainty N`: the plain run and N draws over the ranges the
/// scenario's files declare, with the validation rows that run the same scenario file.
fn whatif(a: &SimArgs, file: &Path, draws: u32, inv: &Invocation) -> Result<()> {
    use irqlab_sim::whatif::{rows_planned_samples, WhatIf};
    let label = a.scenario.display().to_string();
    let w = WhatIf::prepare_against(
        &label,
        file,
        &a.set,
        a.seed,
        a.samples,
        a.replications,
        draws,
        a.draw_seed,
        &a.against,
    )?;
    let experiments = irqlab_sim::shipped::experiments_dir();
    let counter = Arc::new(AtomicU64::new(0));
    let planned = w.planned_samples()
        + if a.no_rows {
            0
        } else {
            rows_planned_samples(&experiments, file)?
        };
    let bar = Progress::start(planned, &counter);
    let report = w.run_with_rows(
        (!a.no_rows).then_some(experiments.as_path()),
        Some(counter.clone()),
    );
    bar.finish();
    let report = report?;
    if let Some(path) = &a.json {
        let made = inv.made(
            &WhatIfSettings {
                scenario: label.clone(),
                scenario_file: file.display().to_string(),
                overrides: &a.set,
                seed: w.seed,
                samples: w.samples,
                replications: a.replications,
                uncertainty: draws,
                draw_seed: a.draw_seed,
                rows: !a.no_rows,
                against: &a.against,
            },
            None,
        );
        crate::made::write_json(
            path,
            irqlab_report::json::Kind::SimUncertainty,
            &made,
            &report,
        )
        .with_context(|| "--json")?;
    }
    crate::ui::print(&irqlab_report::whatif_text(&report))?;
    super::warn_all(&report.nominal.warnings);
    Ok(())
}
