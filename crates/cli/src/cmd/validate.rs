//! `irqlab validate`: every published experiment, published beside simulated.

use crate::args::ValidateArgs;
use crate::made::{write_json, Invocation};
use crate::ui::{print, Progress};
use anyhow::{Context, Result};
use irqlab_report as report;
use irqlab_report::json::Kind;
use irqlab_sim::experiment::{planned_samples, validate_dir, ValidateOptions};
use irqlab_sim::uncertainty::Draws;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The settings of a validation, as its JSON records them.
#[derive(serde::Serialize)]
struct Settings<'a> {
    experiments: String,
    only: Option<&'a str>,
    /// `--samples`: every run's sample count, instead of the experiments' own.
    samples: Option<u64>,
    full: bool,
    /// `--uncertainty`: the draws and their seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    uncertainty: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    draw_seed: Option<u64>,
}

/// Returns whether every row passed.
pub fn run(a: ValidateArgs, inv: &Invocation) -> Result<bool> {
    let ValidateArgs {
        experiments,
        only,
        samples,
        full,
        json,
        plot,
        wide,
        uncertainty,
        draw_seed,
    } = a;
    super::check_outputs(json.as_deref(), plot.as_deref())?;
    let experiments = match experiments {
        Some(dir) if !dir.is_dir() => anyhow::bail!(
            "--experiments {}: no such directory; pass a directory of experiment files, or leave \
             --experiments out to run the shipped experiments",
            dir.display()
        ),
        Some(dir) => dir,
        None => irqlab_sim::shipped::experiments_dir(),
    };
    let counter = Arc::new(AtomicU64::new(0));
    let opts = ValidateOptions {
        only,
        samples,
        full,
        draw: false,
        progress: Some(counter.clone()),
    };
    let bar = Progress::start(planned_samples(&experiments, &opts)?, &counter);
    let v = validate_dir(&experiments, &opts);
    bar.finish();
    let mut v = v?;
    if let Some(draws) = uncertainty {
        let counter = Arc::new(AtomicU64::new(0));
        let opts = ValidateOptions {
            progress: Some(counter.clone()),
            ..opts.clone()
        };
        let d = Draws::prepare(&experiments, opts.only.as_deref(), draws, draw_seed)?;
        let bar = Progress::start(d.planned_samples(&opts)?, &counter);
        let u = d.run(&opts, &v);
        bar.finish();
        v.uncertainty = Some(u?);
    }
    if v.rows.is_empty() {
        anyhow::bail!(
            "no validation row matches --only {}; give an experiment's id exactly (seed002) or a \
             pattern of row ids (a substring such as ws, or with *, such as msi-ws-*; irqlab list \
             shows them all)",
            opts.only.as_deref().unwrap_or("")
        );
    }
    if let Some(path) = &json {
        let made = inv.made(
            &Settings {
                experiments: experiments.display().to_string(),
                only: opts.only.as_deref(),
                samples,
                full,
                uncertainty,
                draw_seed: uncertainty.map(|_| draw_seed),
            },
            None,
        );
        write_json(path, Kind::Validate, &made, &v).with_context(|| "--json")?;
    }
    print(&report::validation_text(&v, wide))?;
    if let Some(u) = &v.uncertainty {
        print(&report::uncertainty_text(u))?;
    }
    for n in &v.notes {
        crate::ui::note(n);
    }
    if let Some(dir) = &plot {
        // Figures of a validation with other flags (fewer rows, other sample counts) get a tag
        // of them in their names, so they never overwrite the default's.
        let mut flags = Vec::new();
        if let Some(p) = &opts.only {
            flags.extend(["--only".to_string(), p.clone()]);
        }
        if let Some(n) = samples {
            flags.extend(["--samples".to_string(), n.to_string()]);
        }
        if full {
            flags.push("--full".to_string());
        }
        if let Some(n) = uncertainty {
            flags.extend(["--uncertainty".to_string(), n.to_string()]);
        }
        let tag = super::flags_tag(&flags);
        super::wrote_validation_plots(
            &report::plot::plot_validation(&v, dir, tag.as_deref()).with_context(|| "--plot")?,
        );
    }
    Ok(v.all_pass())
}
