//! `irqlab sweep`: plan a sweep as a manifest of points, run one shard of it, merge the shards.
//! The work and the checks are `irqlab_sim::sweep`'s, the text [`irqlab_report::sweep`]'s; this
//! parses, reads and writes the files, calls and prints.

use crate::args::{Sweep, SweepMergeArgs, SweepPlanArgs, SweepRunArgs};
use crate::made::{write_json, Invocation};
use crate::ui::{note, print, Progress};
use anyhow::{anyhow, bail, Context, Result};
use irqlab_report as report;
use irqlab_report::json::{read_result, Kind, ReadError};
use irqlab_report::sweep as sweep_text;
use irqlab_report::{read_listed, Listed};
use irqlab_sim::sweep::{self, Manifest, Merged, ShardResults, SweepError};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Returns whether the command succeeded in full: false when a merged validation has a row
/// that does not pass (exit status 1, as `validate`).
pub fn run(a: Sweep, inv: &Invocation) -> Result<bool> {
    match a {
        Sweep::Plan(a) => plan(a, inv).map(|()| true),
        Sweep::Run(a) => run_shard(a, inv).map(|()| true),
        Sweep::Merge(a) => merge(a, inv),
    }
}

/// `sweep plan --draws`'s settings, as its JSON records them.
#[derive(Serialize)]
struct DrawsSettings<'a> {
    experiments: String,
    only: Option<&'a str>,
    samples: Option<u64>,
    full: bool,
    draws: u32,
    draw_seed: u64,
}

/// `sweep plan --scenario --draws`'s settings.
#[derive(Serialize)]
struct WhatIfPlanSettings<'a> {
    scenario: String,
    scenario_file: String,
    overrides: &'a [String],
    samples: Option<u64>,
    seed: Option<u64>,
    draws: u32,
    draw_seed: u64,
    rows: bool,
}

/// `sweep plan --scenario --grid`'s settings.
#[derive(Serialize)]
struct GridSettings<'a> {
    scenario: String,
    scenario_file: String,
    overrides: &'a [String],
    grid: &'a [String],
    samples: Option<u64>,
    seed: Option<u64>,
    repeat: u32,
}

fn plan(a: SweepPlanArgs, inv: &Invocation) -> Result<()> {
    if report::is_stdout(&a.out) {
        bail!(
            "--out -: the manifest is a file that sweep run and sweep merge read; give a file name"
        );
    }
    report::check_writable(&a.out).with_context(|| "--out")?;
    let (manifest, made) = match a.draws {
        Some(draws) if a.scenario.is_some() => {
            let scenario = a.scenario.as_deref().expect("matched");
            let file = scenario_file(scenario)?;
            let rows = (!a.no_rows).then(irqlab_sim::shipped::experiments_dir);
            let m = sweep::plan_whatif(
                &scenario.display().to_string(),
                &file,
                &a.set,
                a.samples,
                a.seed,
                draws,
                a.draw_seed,
                rows.as_deref(),
            )?;
            let made = inv.made(
                &WhatIfPlanSettings {
                    scenario: scenario.display().to_string(),
                    scenario_file: file.display().to_string(),
                    overrides: &a.set,
                    samples: a.samples,
                    seed: a.seed,
                    draws,
                    draw_seed: a.draw_seed,
                    rows: !a.no_rows,
                },
                None,
            );
            (m, made)
        }
        Some(draws) => {
            let dir = match &a.experiments {
                Some(dir) if !dir.is_dir() => bail!(
                    "--experiments {}: no such directory; pass a directory of experiment files, \
                     or leave --experiments out to plan over the shipped experiments",
                    dir.display()
                ),
                // Absolute: the shards may run in another directory (or on another machine
                // that mounts the same file system there).
                Some(dir) => std::fs::canonicalize(dir)
                    .with_context(|| format!("--experiments {}", dir.display()))?,
                None => irqlab_sim::shipped::experiments_dir(),
            };
            let m = sweep::plan_draws(
                &dir,
                a.only.as_deref(),
                a.samples,
                a.full,
                draws,
                a.draw_seed,
            )?;
            let made = inv.made(
                &DrawsSettings {
                    experiments: dir.display().to_string(),
                    only: a.only.as_deref(),
                    samples: a.samples,
                    full: a.full,
                    draws,
                    draw_seed: a.draw_seed,
                },
                None,
            );
            (m, made)
        }
        None => {
            let scenario = a
                .scenario
                .as_deref()
                .expect("clap requires --scenario without --draws");
            let file = scenario_file(scenario)?;
            let m = sweep::plan_grid(
                &scenario.display().to_string(),
                &file,
                &a.set,
                &a.grid,
                a.samples,
                a.seed,
                a.repeat,
            )?;
            let made = inv.made(
                &GridSettings {
                    scenario: scenario.display().to_string(),
                    scenario_file: file.display().to_string(),
                    overrides: &a.set,
                    grid: &a.grid,
                    samples: a.samples,
                    seed: a.seed,
                    repeat: a.repeat,
                },
                None,
            );
            (m, made)
        }
    };
    write_json(&a.out, Kind::SweepPlan, &made, &manifest).with_context(|| "--out")?;
    let what = match &manifest {
        Manifest::Draws(d) => sweep_text::planned_draws(d.points.len() - 1, d.parameters.len()),
        Manifest::Grid(g) => sweep_text::planned_grid(
            g.points.len() / g.repeat as usize,
            g.repeat as usize,
            g.samples,
        ),
        Manifest::WhatIf(w) => {
            sweep_text::planned_whatif(w.draws(), w.parameters.len(), &w.scenario, w.rows.is_some())
        }
    };
    print(&sweep_text::planned_text(
        manifest.len(),
        &what,
        &a.out.display().to_string(),
    ))
}

/// The file of `--scenario`: a shipped one by its `<shipped>` path, one on disk absolute (the
/// shards may run in another directory).
fn scenario_file(scenario: &Path) -> Result<PathBuf> {
    let mut file = super::sim::resolve(scenario)?;
    if !irqlab_sim::shipped::is_shipped(&file) {
        file = std::fs::canonicalize(&file)
            .with_context(|| format!("--scenario {}", scenario.display()))?;
    }
    Ok(file)
}

/// Read the manifest `sweep plan` wrote.
fn read_manifest(path: &Path) -> Result<Manifest> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the manifest {}", path.display()))?;
    let (_, m) = read_result(
        &text,
        Kind::SweepPlan,
        "give the manifest irqlab sweep plan wrote",
    )
    .with_context(|| format!("{}", path.display()))?;
    Ok(m)
}

/// A whole number from the environment, `None` when unset.
fn from_env(name: &str) -> Result<Option<u32>> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| anyhow!("{name}={v:?} is not a whole number")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => bail!("{name}: {e}"),
    }
}

/// `sweep run`'s settings.
#[derive(Serialize)]
struct RunSettings {
    manifest: String,
    shard: u32,
    of: u32,
    out: String,
}

fn run_shard(a: SweepRunArgs, inv: &Invocation) -> Result<()> {
    // A Slurm job array task knows its index; its count only if the array starts at 0 and
    // runs whole, so a job script that may run one task again gives --of itself.
    let shard = match a.shard {
        Some(s) => s,
        None => from_env("SLURM_ARRAY_TASK_ID")?.ok_or_else(|| {
            anyhow!(
                "--shard: not given, and SLURM_ARRAY_TASK_ID is not set; pass --shard I (0 to N-1)"
            )
        })?,
    };
    let of = match a.of {
        Some(n) => n,
        None => from_env("SLURM_ARRAY_TASK_COUNT")?.ok_or_else(|| {
            anyhow!("--of: not given, and SLURM_ARRAY_TASK_COUNT is not set; pass --of N, the number of shards")
        })?,
    };
    if of == 0 || shard >= of {
        let from_slurm = if a.shard.is_none() || a.of.is_none() {
            " (from Slurm's SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT: an array that does \
             not start at 0, or a task run again alone, needs --of N in the job script)"
        } else {
            ""
        };
        bail!("--shard {shard} --of {of}: the shard index runs from 0 to N-1{from_slurm}");
    }
    let manifest = read_manifest(&a.manifest)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("--out {}", a.out.display()))?;
    let file = a.out.join(format!("shard-{shard}-of-{of}.json"));
    report::check_writable(&file).with_context(|| "--out")?;
    let sweep = sweep::Sweep::prepare(manifest)?;
    let counter = Arc::new(AtomicU64::new(0));
    let bar = Progress::start(sweep.planned_samples(shard, of)?, &counter);
    let results = sweep.run_shard(shard, of, Some(counter));
    bar.finish();
    let results = results?;
    let made = inv.made(
        &RunSettings {
            manifest: a.manifest.display().to_string(),
            shard,
            of,
            out: a.out.display().to_string(),
        },
        None,
    );
    write_json(&file, Kind::SweepShard, &made, &results).with_context(|| "--out")?;
    print(&sweep_text::shard_text(
        shard,
        of,
        results.points.len(),
        sweep.manifest().len(),
    ))
}

/// The most bytes a shard's file may have, so that a planted file cannot take the merging
/// machine's memory (a sparse file of any size costs its writer nothing).
const MAX_SHARD_BYTES: u64 = MAX_SHARD_MIB << 20;
/// Measured on irqlab's own shards (2026-11-30): a draw of `validate --uncertainty` is ~5 kB of
/// the file, the nominal validation ~3 MB (`sweep plan --draws 2`, one shard: 3.9 MB for the
/// three points), so 256 MiB holds some 50,000 draws in one shard; a sweep larger than that
/// runs in more shards anyway.
const MAX_SHARD_MIB: u64 = 256;

/// The shard results in `dir`: every `*.json` file that is one, by name. Other files are
/// skipped with a note (a merged result written beside them, say), and so is one that is not
/// UTF-8 text (irqlab writes JSON in UTF-8). The directory may be shared with other users and
/// the merge run as root, so each entry is read as itself ([`read_listed`]): a symbolic link or
/// a file with other names (hard links) is skipped with a note, not followed; what is not a
/// regular file (a directory, a named pipe) is passed over; a file over [`MAX_SHARD_BYTES`] is
/// an error. A name is shown with its odd bytes and control characters escaped.
fn read_shards(dir: &Path) -> Result<Vec<(String, ShardResults)>> {
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!(
            "{}: cannot read the results directory (the --out DIR of irqlab sweep run)",
            dir.display()
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}", dir.display()))?;
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files.sort();
    let mut shards = Vec::new();
    for path in files {
        let name = shown(&path);
        let listed = read_listed(&path, MAX_SHARD_BYTES);
        let bytes = match listed.with_context(|| format!("cannot read {name}"))? {
            Listed::Bytes(b) => b,
            Listed::Link => {
                note(&format!(
                    "skipped {name}: a symbolic link; irqlab reads the shards' own files, never \
                     through a link"
                ));
                continue;
            }
            Listed::OtherNames => {
                note(&format!(
                    "skipped {name}: the file has other names (hard links), so it may be \
                     another's file linked in; copy a shard in rather than linking it"
                ));
                continue;
            }
            Listed::TooLarge { bytes } => bail!(
                "{name}: {bytes} bytes, more than the {MAX_SHARD_MIB} MiB a shard's result may \
                 have; irqlab writes none that large (a sweep that large runs in more shards, \
                 --of), so it is not one of irqlab's shards"
            ),
            // A directory named *.json, say.
            Listed::NotRegular => continue,
        };
        let Ok(text) = String::from_utf8(bytes) else {
            note(&format!(
                "skipped {name}: not UTF-8 text, so not a shard's result"
            ));
            continue;
        };
        match read_result::<ShardResults>(&text, Kind::SweepShard, "not a shard's result") {
            Ok((_, s)) => shards.push((name, s)),
            Err(e @ (ReadError::OtherKind { .. } | ReadError::NotIrqlabFile(_))) => {
                note(&format!("skipped {name}: {e}"));
            }
            Err(e) => return Err(e).with_context(|| name),
        }
    }
    Ok(shards)
}

/// A path as messages show it: as given where it is UTF-8 text, each other byte and each
/// control character as `\xNN` (a name chosen to move the terminal's cursor or to start a
/// line of its own is shown, not obeyed).
fn shown(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str()
        .as_bytes()
        .utf8_chunks()
        .map(|c| {
            let odd: String = c.invalid().iter().map(|b| format!("\\x{b:02X}")).collect();
            format!("{}{odd}", crate::ui::escape_controls(c.valid()))
        })
        .collect()
}

/// `sweep merge` of draws: validate's settings (the same file a validation writes), and where
/// the points came from.
#[derive(Serialize)]
struct MergedDrawsSettings<'a> {
    experiments: &'a str,
    only: Option<&'a str>,
    samples: Option<u64>,
    full: bool,
    uncertainty: u32,
    draw_seed: u64,
    manifest: String,
    results: String,
}

/// `sweep merge` of a what-if: `sim --uncertainty`'s settings, and where the points came
/// from.
#[derive(Serialize)]
struct MergedWhatIfSettings<'a> {
    scenario: &'a str,
    scenario_file: &'a str,
    overrides: &'a [String],
    seed: u64,
    samples: u64,
    replications: u32,
    uncertainty: u32,
    draw_seed: u64,
    rows: bool,
    manifest: String,
    results: String,
}

/// `sweep merge` of a grid.
#[derive(Serialize)]
struct MergedGridSettings {
    manifest: String,
    results: String,
}

fn merge(a: SweepMergeArgs, inv: &Invocation) -> Result<bool> {
    super::check_outputs(a.json.as_deref(), a.plot.as_deref())?;
    if !a.results.is_dir() {
        bail!(
            "{}: no such directory; give the directory the shards wrote their results to (the \
             --out DIR of irqlab sweep run)",
            a.results.display()
        );
    }
    let sweep = sweep::Sweep::prepare(read_manifest(&a.manifest)?)?;
    let shards = read_shards(&a.results)?;
    let merged = sweep
        .merge(&shards)
        .map_err(|e| rerun_hint(e, &a.manifest, &a.results))?;
    let (manifest, results) = (
        a.manifest.display().to_string(),
        a.results.display().to_string(),
    );
    match (merged, sweep.manifest()) {
        (Merged::Validation(v), Manifest::Draws(d)) => {
            let draws = d.draws() as u32;
            if let Some(path) = &a.json {
                let made = inv.made(
                    &MergedDrawsSettings {
                        experiments: &d.experiments,
                        only: d.only.as_deref(),
                        samples: d.samples,
                        full: d.full,
                        uncertainty: draws,
                        draw_seed: d.draw_seed,
                        manifest,
                        results,
                    },
                    None,
                );
                write_json(path, Kind::Validate, &made, &*v).with_context(|| "--json")?;
            }
            print(&report::validation_text(&v, false))?;
            if let Some(u) = &v.uncertainty {
                print(&report::uncertainty_text(u))?;
            }
            for n in &v.notes {
                note(n);
            }
            if let Some(dir) = &a.plot {
                // The figures' names carry the flags' tag `validate --uncertainty` gives them.
                let mut flags = Vec::new();
                if let Some(p) = &d.only {
                    flags.extend(["--only".to_string(), p.clone()]);
                }
                if let Some(n) = d.samples {
                    flags.extend(["--samples".to_string(), n.to_string()]);
                }
                if d.full {
                    flags.push("--full".to_string());
                }
                flags.extend(["--uncertainty".to_string(), draws.to_string()]);
                let tag = super::flags_tag(&flags);
                super::wrote_validation_plots(
                    &report::plot::plot_validation(&v, dir, tag.as_deref())
                        .with_context(|| "--plot")?,
                );
            }
            Ok(v.all_pass())
        }
        (Merged::Grid(g), _) => {
            if let Some(path) = &a.json {
                let made = inv.made(&MergedGridSettings { manifest, results }, None);
                write_json(path, Kind::Sweep, &made, &g).with_context(|| "--json")?;
            }
            print(&report::grid_text(&g))?;
            if let Some(dir) = &a.plot {
                let runs = sweep_text::grid_plot_runs(&g);
                crate::ui::wrote(&report::plot::plot_runs(&runs, dir).with_context(|| "--plot")?);
            }
            Ok(true)
        }
        (Merged::WhatIf(w), Manifest::WhatIf(m)) => {
            // The file `sim --uncertainty N --json` writes, with where the points came from.
            if let Some(path) = &a.json {
                let made = inv.made(
                    &MergedWhatIfSettings {
                        scenario: &m.scenario,
                        scenario_file: &m.scenario_file,
                        overrides: &m.set,
                        seed: m.seed,
                        samples: m.samples,
                        replications: m.replications,
                        uncertainty: w.draws,
                        draw_seed: m.draw_seed,
                        rows: m.rows.is_some(),
                        manifest,
                        results,
                    },
                    None,
                );
                write_json(path, Kind::SimUncertainty, &made, &*w).with_context(|| "--json")?;
            }
            if a.plot.is_some() {
                note("--plot: a what-if has no figures yet; nothing drawn");
            }
            print(&report::whatif_text(&w))?;
            super::warn_all(&w.nominal.warnings);
            Ok(true)
        }
        (merged, _) => {
            unreachable!(
                "a sweep merges into its manifest's kind of report ({})",
                match merged {
                    Merged::Validation(_) => "validation",
                    Merged::Grid(_) => "grid",
                    Merged::WhatIf(_) => "what-if",
                }
            )
        }
    }
}

/// Missing points, or rejected shards: the message, then the commands that run their shards
/// again.
fn rerun_hint(e: SweepError, manifest: &Path, results: &Path) -> anyhow::Error {
    let (m, r) = (
        manifest.display().to_string(),
        results.display().to_string(),
    );
    let hint = match &e {
        SweepError::Rejected(_) => {
            sweep_text::rejected_hint(&e.to_string(), &e.rejected_shards(), &m, &r)
        }
        SweepError::Missing { shards, of, .. } => {
            sweep_text::missing_hint(&e.to_string(), shards, *of, &m, &r)
        }
        _ => return e.into(),
    };
    anyhow::Error::msg(hint)
}
