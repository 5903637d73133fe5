//! `irqlab plan affinity --host`: seed 001's three rules on this host's CPUs and NICs, queue by
//! queue; `--apply` sets the masks and `--restore` puts the old ones back, both through
//! `irqlab_host::affinity` (which records every change first: see its module docs).
//!
//! The planner is [`irqlab_host::plan`] (its module docs give the rules); the plan is the result
//! model's ([`irqlab_stats::plan`]). This module parses the flags, calls, and prints.

use crate::args::PlanAffinityArgs;
use crate::made::{write_json, Invocation};
use crate::ui::{print, warning};
use anyhow::{bail, Context, Result};
use irqlab_host::affinity::{
    self, Applied, AppliedRecord, ApplyEnd, HostAffinity, MaskWrite, ProcFiles, Restored,
};
use irqlab_host::plan::{self, HostFlow, HostPlan};
use irqlab_host::recovery;
use irqlab_host::state::{LockedDir, StateDir};
use irqlab_host::HostError;
use irqlab_report::json::Kind;
use irqlab_report::plan as plan_text;
use irqlab_report::text::{self, wrap};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The settings of a host plan, as its JSON records them.
#[derive(Serialize)]
struct Settings {
    /// Where `/proc` and `/sys` were read (and, with --apply, written): `/`, or a tree.
    root: String,
    /// `--flow`, as `A:B`.
    flows: Vec<String>,
    /// `--nic`.
    nics: Vec<String>,
    apply: bool,
}

/// What `--json` writes: the host as read, the plan, and what `--apply` did.
#[derive(Serialize)]
struct HostPlanResult<'a> {
    host: &'a HostAffinity,
    plan: &'a HostPlan,
    /// An applied plan in force when this one was made (its old masks saved for --restore).
    in_force: Option<&'a AppliedRecord>,
    /// What --apply set; none without --apply, or when every IRQ already had its mask.
    applied: Option<&'a Applied>,
}

/// `irqlab plan affinity --host ...`.
pub fn run(a: PlanAffinityArgs) -> Result<()> {
    let inv = Invocation::now();
    let given = a.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    // Canonical: the applied record names the tree, and a --restore from another directory, or
    // through another path to it, must find the same one.
    let root = given
        .canonicalize()
        .with_context(|| format!("--root {}", given.display()))?;
    if !root.is_dir() {
        bail!("--root {}: not a directory", given.display());
    }
    // The live system needs root to write; a tree of files (tests) does not.
    let live = root == Path::new("/");
    if (a.apply || a.restore) && live && !irqlab_host::is_root() {
        return Err(HostError::NotRoot(format!(
            "irqlab plan affinity --host {} writes /proc/irq/N/smp_affinity, which needs root: \
             run it with sudo (the plan alone needs no root)",
            if a.apply { "--apply" } else { "--restore" }
        ))
        .into());
    }
    let dir = StateDir::for_root(&root);
    if a.restore {
        return restore(&dir, &root);
    }
    // Before anything is read or set: a file that cannot be written must not be found out
    // after the masks are.
    super::check_outputs(a.json.as_deref(), None)?;
    // An apply holds the state directory's lock from before it reads the masks until it has
    // committed: what a crashed irqlab left is put back first, under the lock, so that the plan
    // is made from the masks it then writes over, and no other irqlab cleans up, applies or
    // restores in between.
    let locked = if a.apply {
        let locked = LockedDir::acquire(&dir).context("locking irqlab's state directory")?;
        super::host::report_cleanups(recovery::clean_up_locked(&locked))?;
        Some(locked)
    } else {
        None
    };
    let host = affinity::read(&root)
        .with_context(|| format!("reading the host's CPUs and NICs under {}", root.display()))?;
    let flow: Vec<HostFlow> = a
        .flow
        .iter()
        .map(|f| HostFlow {
            a: f.a.clone(),
            b: f.b.clone(),
        })
        .collect();
    let (flows, given) = plan::flows_of(&flow, &a.nic, &host)?;
    let plan = plan::plan(&host, flows, given)?;
    let in_force = affinity::applied(&dir)
        .ok()
        .flatten()
        .filter(|r| r.is_this_boot());
    if a.apply {
        if let Some(r) = &in_force {
            bail!(
                "an applied affinity plan of {} is in force, its old masks saved in {}: put them \
                 back first (irqlab plan affinity --host --restore), then apply",
                r.describe(),
                dir.path().join(affinity::APPLIED_FILE).display()
            );
        }
    }
    let note = in_force.as_ref().map(|r| {
        format!(
            "An applied plan of {} is in force (its old masks saved in {}): irqlab plan affinity \
             --host --restore puts them back.",
            r.describe(),
            dir.path().join(affinity::APPLIED_FILE).display()
        )
    });
    let write = |applied: Option<&Applied>| -> Result<()> {
        let Some(path) = &a.json else {
            return Ok(());
        };
        let made = inv.made(
            &Settings {
                root: root.display().to_string(),
                flows: a.flow.iter().map(|f| format!("{}:{}", f.a, f.b)).collect(),
                nics: a.nic.clone(),
                apply: a.apply,
            },
            Some(irqlab_host::host_info::collect(&root)),
        );
        let result = HostPlanResult {
            host: &host,
            plan: &plan,
            in_force: in_force.as_ref(),
            applied,
        };
        write_json(path, Kind::PlanAffinityHost, &made, &result).context("--json")
    };
    let Some(locked) = locked else {
        write(None)?;
        return print(&plan_text::host_plan_text(
            &host,
            &plan,
            a.apply,
            note.as_deref(),
        ));
    };
    print(&plan_text::host_plan_text(
        &host,
        &plan,
        a.apply,
        note.as_deref(),
    ))?;
    if let Some(pid) = host.irqbalance_pid {
        warning(&format!(
            "irqbalance is running (pid {pid}) and will move these IRQs again: see above"
        ));
    }
    let writes: Vec<MaskWrite> = plan
        .irqs
        .iter()
        .filter(|p| !p.unchanged())
        .map(|p| MaskWrite {
            irq: p.irq,
            name: p.name.clone(),
            mask: p.mask.clone(),
        })
        .collect();
    let applied = if writes.is_empty() {
        None
    } else {
        let stop = irqlab_host::signals::stop_flag().context("installing signal handlers")?;
        let applied = affinity::apply_locked(&root, &locked, &writes, &stop, &mut ProcFiles)
            .context("applying the plan")?;
        if let ApplyEnd::Stopped { rolled_back } = &applied.end {
            write(Some(&applied))?;
            print(&plan_text::applied_text(&applied))?;
            bail!(
                "stopped by {} before the plan was complete: {} put back, nothing changed",
                irqlab_host::signals::received().unwrap_or("a signal"),
                text::count(rolled_back.len(), "IRQ set was", "IRQs set were")
            );
        }
        Some(applied)
    };
    // Read every planned mask back, the ones that needed no write too: what is reported as in
    // force must be what the kernel has now.
    let refused: BTreeSet<u32> = applied
        .iter()
        .flat_map(|a| a.not_set.iter().map(|n| n.irq))
        .collect();
    let differ = affinity::masks_differing(
        &root,
        plan.irqs
            .iter()
            .filter(|p| !refused.contains(&p.irq))
            .map(|p| (p.irq, p.mask.as_str())),
    );
    drop(locked);
    write(applied.as_ref())?;
    if let Some(applied) = &applied {
        print(&plan_text::applied_text(applied))?;
    }
    if !differ.is_empty() {
        return Err(HostError::NotAsPlanned(
            differ
                .iter()
                .map(|d| {
                    format!(
                        "IRQ {} has {} where the plan set {}",
                        d.irq,
                        d.found.as_deref().unwrap_or("no mask (gone)"),
                        d.planned
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        )
        .into());
    }
    Ok(())
}

/// `--restore`: put back what the last `--apply` saved.
fn restore(dir: &StateDir, root: &Path) -> Result<()> {
    let Some(locked) = LockedDir::if_exists(dir).context("locking irqlab's state directory")?
    else {
        return print(&format!(
            "Nothing to restore: no applied plan is saved in {}.\n",
            dir.path().display()
        ));
    };
    // A restore killed halfway, or an apply, is finished or undone first.
    super::host::report_cleanups(recovery::clean_up_locked(&locked))?;
    if let Some(r) = affinity::applied(dir).context("reading the applied plan")? {
        if r.is_this_boot() && r.root != root && dir.tree().is_some() {
            // A tree's own directory: the record came with a copy of another tree.
            bail!(
                "{} is the applied plan of the tree {}, not of {}: it was copied with the \
                 tree; restore it there (--root {}), or if that tree is gone, remove the file",
                dir.path().join(affinity::APPLIED_FILE).display(),
                r.root.display(),
                root.display(),
                r.root.display()
            );
        }
        if r.is_this_boot() && r.root != root {
            bail!(
                "the applied plan of {} was made on the tree {}, not {}: give --root {}",
                r.describe(),
                r.root.display(),
                root.display(),
                r.root.display()
            );
        }
    }
    match affinity::restore_locked(&locked, &mut ProcFiles).context("restoring the IRQ masks")? {
        Restored::Nothing => print(&format!(
            "Nothing to restore: no applied plan is saved in {}.\n",
            dir.path().display()
        )),
        Restored::EarlierBoot { note } => {
            print(&wrap(&format!("Nothing to restore: {note}."), "", ""))
        }
        Restored::Done { record, irqs, .. } => print(&plan_text::restored_text(&record, &irqs)),
    }
}
