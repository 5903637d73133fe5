//! `irqlab plot`: saved results drawn, alone or overlaid.

use crate::args::PlotArgs;
use anyhow::{Context, Result};
use irqlab_report as report;
use irqlab_stats::results::RunReport;

pub fn run(a: PlotArgs) -> Result<()> {
    let PlotArgs { results, out } = a;
    if report::is_stdout(&out) {
        anyhow::bail!(
            "--out -: figures are files in a directory, not standard output; give a directory"
        );
    }
    report::check_plot_dir(&out).with_context(|| "--out")?;
    let mut runs: Vec<(String, RunReport)> = Vec::new();
    for path in &results {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let (_, r): (_, RunReport) = report::json::read_run(&text)
            .with_context(|| format!("{} cannot be plotted", path.display()))?;
        if r.histograms.is_empty() {
            anyhow::bail!(
                "{} has no histograms to plot (it was written by an older irqlab)",
                path.display()
            );
        }
        let stem = path
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().into_owned());
        runs.push((stem, r));
    }
    crate::ui::wrote(&report::plot::plot_runs(&runs, &out).with_context(|| "--out")?);
    Ok(())
}
