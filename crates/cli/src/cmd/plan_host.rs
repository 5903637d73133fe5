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
    self, Applied, AppliedRecord, ApplyEnd, HostAffinity, HostCpu, MaskWrite, ProcFiles, Restored,
};
use irqlab_host::cpu_list::CpuList;
use irqlab_host::plan::{self, HostFlow, HostPlan, LeftOutCpu, PlannedIrq};
use irqlab_host::recovery;
use irqlab_host::state::{LockedDir, StateDir};
use irqlab_host::timer::format_cpu_list;
use irqlab_host::HostError;
use irqlab_report::json::Kind;
use irqlab_report::table::Table;
use irqlab_report::text::wrap;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn cpus_text(cpus: &[u32]) -> String {
    if cpus.len() == 1 {
        format!("cpu{}", cpus[0])
    } else {
        format!("cpu{}", format_cpu_list(cpus))
    }
}

/// A kind of cache (level, label) -> its size and the sets of CPUs that share one.
type CacheKinds<'a> = BTreeMap<(u32, String), (String, BTreeSet<&'a CpuList>)>;

/// Each kind of cache with its size and which CPUs share one.
fn caches_text(cpus: &[HostCpu]) -> Option<String> {
    let mut kinds = CacheKinds::new();
    for c in cpus {
        for cache in &c.caches {
            kinds
                .entry((cache.level, cache.label()))
                .or_insert_with(|| (cache.size.clone(), BTreeSet::new()))
                .1
                .insert(&cache.shared_cpus);
        }
    }
    if kinds.is_empty() {
        return None;
    }
    let cores: BTreeSet<&CpuList> = cpus.iter().map(|c| &c.core_cpus).collect();
    let parts: Vec<String> = kinds
        .into_iter()
        .map(|((_, label), (size, groups))| {
            let scope = if groups.iter().all(|g| g.len() == 1) {
                "per CPU".to_string()
            } else if groups.iter().all(|g| cores.contains(g)) {
                "per core".to_string()
            } else {
                format!(
                    "shared by {}",
                    groups
                        .iter()
                        .map(|g| cpus_text(g))
                        .collect::<Vec<_>>()
                        .join(" | ")
                )
            };
            format!("{label} {size} {scope}")
        })
        .collect();
    Some(format!("Caches: {}.", parts.join("; ")))
}

fn mask_cell(mask: Option<&str>, cpus: &[u32]) -> String {
    match mask {
        Some(m) if !cpus.is_empty() => format!("{m} ({})", cpus_text(cpus)),
        Some(m) => m.to_string(),
        None => "?".into(),
    }
}

/// The host, its NICs and the plan, with the commands that set it.
pub fn render_plan(
    host: &HostAffinity,
    plan: &HostPlan,
    applying: bool,
    applied_note: Option<&str>,
) -> String {
    let mut sockets: BTreeMap<u32, Vec<&HostCpu>> = BTreeMap::new();
    for c in &host.cpus {
        sockets.entry(c.socket).or_default().push(c);
    }
    let mut out = format!(
        "Host{}: {} online in {}; irqbalance {}.\n",
        if host.root == Path::new("/") {
            String::new()
        } else {
            format!(" (read from {})", host.root.display())
        },
        count(host.cpus.len(), "CPU", "CPUs"),
        count(sockets.len(), "socket", "sockets"),
        match host.irqbalance_pid {
            Some(pid) => format!("runs (pid {pid})"),
            None => "is not running".into(),
        }
    );
    for (s, cpus) in &sockets {
        let numbers: Vec<u32> = cpus.iter().map(|c| c.cpu).collect();
        let cores: BTreeSet<&CpuList> = cpus.iter().map(|c| &c.core_cpus).collect();
        let smt = if cores.len() < cpus.len() {
            format!(
                " (SMT: {})",
                cores
                    .iter()
                    .map(|c| c
                        .iter()
                        .map(|n| format!("cpu{n}"))
                        .collect::<Vec<_>>()
                        .join("+"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  socket {s}: {}, {}{smt}\n",
            cpus_text(&numbers),
            count(cores.len(), "core", "cores")
        ));
    }
    if let Some(c) = caches_text(&host.cpus) {
        out.push_str(&wrap(&c, "", "  "));
    }
    for LeftOutCpu { cpu, why } in &plan.cpus_left_out {
        out.push_str(&format!("cpu{cpu} is {why}: left out.\n"));
    }
    out.push('\n');
    if host.nics.is_empty() {
        out.push_str(
            "No NIC with a device here (lo, bridges, veth and other virtual interfaces have no \
             IRQs): nothing to plan.\n",
        );
        return out;
    }
    out.push_str("NICs and their IRQs:\n");
    for n in &host.nics {
        let mut what = vec![n.driver.clone().unwrap_or_else(|| "no driver".into())];
        match &n.virtio {
            Some(v) => what.push(format!("{v} on {}", n.device)),
            None => what.push(n.device.clone()),
        }
        what.push(
            match n.source {
                affinity::IrqSource::MsiIrqs => "IRQs from msi_irqs",
                affinity::IrqSource::LegacyIrq => "legacy INTx IRQ",
                affinity::IrqSource::ProcInterrupts => "IRQs by name in /proc/interrupts",
            }
            .into(),
        );
        out.push_str(&format!("{}: {}\n", n.name, what.join(", ")));
        if n.irqs.is_empty() {
            out.push_str(
                "  no IRQs (is it up? many drivers request their queue IRQs when the interface \
                 comes up)\n",
            );
            continue;
        }
        let mut t =
            Table::new(&["IRQ", "name", "queue", "smp_affinity", "effective"]).left_aligned();
        for i in &n.irqs {
            let mut mask = mask_cell(i.affinity.mask.as_deref(), &i.affinity.cpus);
            if !i.affinity.writable && i.affinity.mask.is_some() {
                mask.push_str(" read-only");
            }
            t.row(vec![
                i.irq.to_string(),
                if i.name.is_empty() {
                    "(no handler)".into()
                } else {
                    i.name.clone()
                },
                i.role.label(),
                mask,
                i.affinity
                    .effective_cpus
                    .as_deref()
                    .map_or("-".into(), cpus_text),
            ]);
        }
        out.push_str(&t.render());
    }
    out.push('\n');
    let flows: Vec<String> = plan.flows.iter().map(HostFlow::label).collect();
    if plan.flows.is_empty() {
        out.push_str("No NIC has a queue IRQ that can be moved: nothing to plan.\n");
    } else if plan.flows_given {
        out.push_str(&format!("Flows: {}.\n", flows.join(", ")));
    } else {
        out.push_str(&wrap(
            &format!(
                "Flows: {} (each NIC receives and transmits on itself: no --flow or --nic \
                 given).",
                flows.join(", ")
            ),
            "",
            "",
        ));
    }
    let sides: usize = plan.units.iter().map(|u| u.sides.len()).sum();
    if !plan.irqs.is_empty() {
        out.push_str(&wrap(
            &format!(
                "Plan (seed 001's rules, queue by queue): {} on {}, so rule {}.",
                count(sides, "NIC queue", "NIC queues"),
                count(plan.cpus.len(), "CPU", "CPUs"),
                if plan.rule == 1 {
                    "1: a CPU each, a flow's queue pair in one socket"
                } else {
                    "2: a flow's queue pair on one CPU, the pairs spread"
                }
            ),
            "",
            "",
        ));
        let mut t =
            Table::new(&["IRQ", "NIC", "queue", "CPU", "smp_affinity", "now"]).left_aligned();
        for p in &plan.irqs {
            t.row(vec![
                p.irq.to_string(),
                p.nic.clone(),
                p.role.label(),
                format!("cpu{}", p.cpu),
                p.mask.clone(),
                match &p.now {
                    Some(now) if p.unchanged() => format!("{now} (as planned)"),
                    Some(now) => now.clone(),
                    None => "?".into(),
                },
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
        let mut t = Table::new(&["queues", "CPU", "placement"]).left_aligned();
        for u in &plan.units {
            t.row(vec![
                u.sides
                    .iter()
                    .map(|s| format!("{} q{}", s.nic, s.queue))
                    .collect::<Vec<_>>()
                    .join(" <-> "),
                u.sides
                    .iter()
                    .map(|s| format!("cpu{}", s.cpu))
                    .collect::<Vec<_>>()
                    .join(" "),
                u.placement.clone(),
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
        out.push_str(&format!(
            "The busiest CPU takes {}; an even spread takes at most {}.\n",
            count(plan.busiest, "NIC queue", "NIC queues"),
            plan.even
        ));
    }
    if !plan.left_alone.is_empty() {
        out.push_str("Left alone:\n");
        for l in &plan.left_alone {
            let name = if l.name.is_empty() {
                "no handler"
            } else {
                &l.name
            };
            out.push_str(&wrap(
                &format!("IRQ {} of {} ({name}): {}", l.irq, l.nic, l.why),
                "  ",
                "    ",
            ));
        }
    }
    if let Some(pid) = host.irqbalance_pid {
        out.push('\n');
        out.push_str(&wrap(&irqbalance_advice(pid, plan), "", ""));
    }
    if let Some(note) = applied_note {
        out.push('\n');
        out.push_str(&wrap(note, "", ""));
    }
    let changes: Vec<&PlannedIrq> = plan.irqs.iter().filter(|p| !p.unchanged()).collect();
    if plan.irqs.is_empty() {
        return out;
    }
    out.push('\n');
    if changes.is_empty() {
        out.push_str("Nothing to change: every IRQ already has its planned mask.\n");
        return out;
    }
    if applying {
        out.push_str("Applying (the old masks are saved first):\n");
    } else {
        out.push_str(&wrap(
            "To apply: irqlab plan affinity --host --apply (as root, with the same flows; it \
             saves the old masks for --restore), or by hand:",
            "",
            "",
        ));
    }
    for p in &changes {
        out.push_str(&format!(
            "  echo {} > {}\n",
            p.mask,
            Path::new("/proc/irq")
                .join(p.irq.to_string())
                .join("smp_affinity")
                .display()
        ));
    }
    if !applying {
        out.push_str("Nothing was changed.\n");
    }
    out
}

/// What to do about irqbalance, which would move the planned IRQs again.
fn irqbalance_advice(pid: u32, plan: &HostPlan) -> String {
    let ban: Vec<String> = plan
        .irqs
        .iter()
        .map(|p| format!("--banirq={}", p.irq))
        .collect();
    format!(
        "irqbalance is running (pid {pid}): it moves IRQs every 10 s and would undo this plan. \
         Keep it off these IRQs: IRQBALANCE_ARGS=\"{}\" in /etc/default/irqbalance (Debian, \
         Ubuntu) or /etc/sysconfig/irqbalance (RHEL, SUSE), then systemctl restart irqbalance \
         (or keep it off CPUs you dedicate with IRQBALANCE_BANNED_CPULIST); or stop it: \
         systemctl stop irqbalance. irqlab does not stop it.",
        ban.join(" ")
    )
}

/// The result of an apply.
fn render_applied(a: &Applied) -> String {
    let mut out = String::new();
    if let Some(note) = &a.discarded {
        out.push_str(&wrap(note, "", ""));
    }
    if !a.set.is_empty() {
        let mut t = Table::new(&["IRQ", "name", "was", "now", "effective"]).left_aligned();
        let mut pending = false;
        for s in &a.set {
            let cpus = affinity::parse_mask(&s.mask).unwrap_or_default();
            let effective = match &s.effective_cpus {
                None => "-".to_string(),
                Some(e) if e.iter().all(|c| cpus.contains(c)) => cpus_text(e),
                Some(e) => {
                    pending = true;
                    format!("{} (moves at its next interrupt)", cpus_text(e))
                }
            };
            t.row(vec![
                s.irq.to_string(),
                s.name.clone(),
                s.old_mask.clone(),
                s.mask.clone(),
                effective,
            ]);
        }
        out.push_str(&t.render());
        if pending {
            out.push_str(&wrap(
                "An effective CPU outside the new mask is a move the kernel makes when the IRQ \
                 next fires (kernel/irq/migration.c, irq_move_masked_irq).",
                "",
                "",
            ));
        }
    }
    for n in &a.not_set {
        out.push_str(&wrap(
            &format!("Not set: IRQ {} ({}): {}.", n.irq, n.name, n.reason),
            "",
            "  ",
        ));
    }
    match &a.end {
        ApplyEnd::Committed { record } => out.push_str(&wrap(
            &format!(
                "Applied: {} set{}. The old masks are saved in {}; irqlab plan affinity --host \
                 --restore puts them back. The plan lasts until then, or until a reboot.",
                count(a.set.len(), "IRQ", "IRQs"),
                if a.not_set.is_empty() {
                    String::new()
                } else {
                    format!(", {} not", a.not_set.len())
                },
                record.display()
            ),
            "",
            "",
        )),
        ApplyEnd::NothingSet => out.push_str("Nothing was set: no IRQ of the plan could be.\n"),
        ApplyEnd::Stopped { .. } => {}
    }
    out
}

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
        return print(&render_plan(&host, &plan, a.apply, note.as_deref()));
    };
    print(&render_plan(&host, &plan, a.apply, note.as_deref()))?;
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
            print(&render_applied(&applied))?;
            bail!(
                "stopped by {} before the plan was complete: {} put back, nothing changed",
                irqlab_host::signals::received().unwrap_or("a signal"),
                count(rolled_back.len(), "IRQ set was", "IRQs set were")
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
        print(&render_applied(applied))?;
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
        Restored::Done { record, irqs, .. } => {
            let mut out = format!(
                "Restored the masks saved in {} (last set, first restored):\n",
                record.display()
            );
            let mut t =
                Table::new(&["IRQ", "name", "applied", "found", "restored", "note"]).left_aligned();
            for i in &irqs {
                t.row(vec![
                    i.irq.to_string(),
                    i.name.clone(),
                    i.applied_mask.clone(),
                    i.found_mask.clone().unwrap_or_else(|| "-".into()),
                    i.restored_mask.clone().unwrap_or_else(|| "-".into()),
                    i.note.clone().unwrap_or_default(),
                ]);
            }
            out.push_str(&t.render());
            print(&out)
        }
    }
}
