//! One module per command: each turns its parsed flags into work in the library crates and
//! renders the result.

pub mod host;
pub mod measure;
pub mod plot;
pub mod sim;
pub mod validate;

use crate::made::write_json;
use crate::ui::print;
use anyhow::{Context, Result};
use irqlab_report as report;
use irqlab_report::json::Kind;
use std::path::Path;

/// Each of a result's warnings on stderr, one line each.
pub fn warn_all(warnings: &[String]) {
    for w in warnings {
        crate::ui::warning(w);
    }
}

/// Write a simulated run's JSON, print it, and draw its figures (named after the scenario and
/// `kind`).
pub fn emit_run(
    rep: &irqlab_stats::results::RunReport,
    made: &irqlab_report::json::Made,
    json: Option<&Path>,
    plot: Option<&Path>,
    scenario: &Path,
    kind: &str,
) -> Result<()> {
    if let Some(path) = json {
        write_json(path, Kind::Sim, made, rep).with_context(|| "--json")?;
    }
    print(&report::run_text(rep))?;
    warn_all(&rep.warnings);
    if let Some(dir) = plot {
        let name = scenario
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().into_owned());
        for f in
            report::plot::plot_run(rep, dir, &format!("{name}-{kind}")).with_context(|| "--plot")?
        {
            print(&format!("wrote {}\n", f.display()))?;
        }
    }
    Ok(())
}
