//! `irqlab host`: the host's interrupts.

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
    } = a;
    if interval.is_some() && root != std::path::Path::new("/") {
        anyhow::bail!(
            "--interval needs the live system: a captured tree (--root) does not change, so its \
             rates would all be zero"
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
