//! `irqlab host`: the host's interrupts; and, with `--cleanup` (and before every measurement),
//! what crashed irqlab processes left on the host.

use crate::args::HostArgs;
use crate::made::{write_json, Invocation};
use crate::ui::print;
use anyhow::{Context, Result};
use irqlab_report as report;
use irqlab_report::json::Kind;

/// The settings of an inventory, as its JSON records them.
#[derive(serde::Serialize)]
struct Settings {
    /// Seconds between the two snapshots rates come from; none for counts since boot.
    interval_s: Option<f64>,
    /// Where `/proc` and `/sys` were read: `/`, or a captured tree.
    root: String,
}

pub fn run(a: HostArgs, inv: &Invocation) -> Result<()> {
    let HostArgs {
        interval,
        json,
        root,
        cleanup,
    } = a;
    if cleanup {
        return clean_up(&root, true);
    }
    if interval.is_some() && root != std::path::Path::new("/") {
        anyhow::bail!(
            "--interval needs the live system: a captured tree (--root) does not change, so its \
             rates would all be zero"
        );
    }
    if !root.join("proc").is_dir() {
        anyhow::bail!(
            "--root {}: no proc/ in it; give the root of a tree captured with \
             crates/host/tests/fixtures/capture-host.sh, or leave --root out for this host",
            root.display()
        );
    }
    super::check_outputs(json.as_deref(), None)?;
    let inventory = irqlab_host::inventory::collect(&root, interval)?;
    if let Some(path) = &json {
        let made = inv.made(
            &Settings {
                interval_s: interval.map(|d| d.as_secs_f64()),
                root: root.display().to_string(),
            },
            Some(irqlab_host::host_info::collect(&root)),
        );
        write_json(path, Kind::Host, &made, &inventory).with_context(|| "--json")?;
    }
    print(&report::inventory_text(&inventory))?;
    Ok(())
}

/// Undo what irqlab processes that ended without cleaning up left on the host (under `root`:
/// a tree's records are kept in the tree), saying so on stderr in one line per process (and
/// "nothing to clean up" if `say_nothing` and there was nothing). Anything that could not be
/// undone is an error that says how to do it by hand.
fn clean_up(root: &std::path::Path, say_nothing: bool) -> Result<()> {
    let root = root
        .canonicalize()
        .with_context(|| format!("--root {}", root.display()))?;
    if !root.is_dir() {
        anyhow::bail!("--root {}: not a directory", root.display());
    }
    let dir = irqlab_host::state::StateDir::for_root(&root);
    let cleanups = irqlab_host::recovery::clean_up_after_dead_in(&dir)
        .context("looking for what crashed irqlab processes left")?;
    if cleanups.is_empty() && say_nothing {
        eprintln!("irqlab: nothing to clean up");
    }
    say_cleaned_up(&cleanups)
}

/// One line on stderr per cleanup; what could not be undone is an error that says how to undo
/// it by hand (`HostError::Restore`, exit status 3).
fn say_cleaned_up(cleanups: &[irqlab_host::recovery::Cleanup]) -> Result<()> {
    for line in cleanups.iter().filter_map(|c| c.summary()) {
        eprintln!("irqlab: {line}");
    }
    let failed: Vec<&str> = cleanups
        .iter()
        .flat_map(|c| c.failed.iter().map(String::as_str))
        .collect();
    if !failed.is_empty() {
        return Err(irqlab_host::HostError::Restore(failed.join("; ")))
            .context("cleaning up after crashed irqlab processes");
    }
    Ok(())
}

/// Before a measurement changes the host: undo what crashed irqlab processes left (it would
/// distort this measurement), saying what. A failure is a warning: the measurement can still run.
pub fn clean_up_before_measuring() {
    if let Err(e) = clean_up(std::path::Path::new("/"), false) {
        eprintln!("irqlab: warning: {e:#}");
    }
}

/// What a cleanup under a lock the caller holds did (`plan affinity --host --apply` and
/// `--restore`), said as [`clean_up_before_measuring`] says it: what could not be undone is a
/// warning (it stays recorded); only a state directory that cannot be read is an error.
pub fn report_cleanups(
    cleanups: Result<Vec<irqlab_host::recovery::Cleanup>, irqlab_host::HostError>,
) -> Result<()> {
    let cleanups = cleanups.context("looking for what crashed irqlab processes left")?;
    if let Err(e) = say_cleaned_up(&cleanups) {
        eprintln!("irqlab: warning: {e:#}");
    }
    Ok(())
}
