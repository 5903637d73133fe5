//! `irqlab plan affinity --host`: the host as read, the plan, and what `--apply` and `--restore`
//! did. They read the result model ([`irqlab_stats::affinity`], [`irqlab_stats::plan`]); the
//! host crate fills it in.

use crate::table::Table;
use crate::text::{count, wrap};
use irqlab_stats::affinity::{Applied, ApplyEnd, HostAffinity, HostCpu, IrqRestored, IrqSource};
use irqlab_stats::cpus::{format_cpu_list, parse_mask, CpuList};
use irqlab_stats::plan::{HostFlow, HostPlan, LeftOutCpu, PlannedIrq};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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

/// The host, its NICs and the plan, with the commands that set it (`applying`: as `--apply`
/// sets it; `applied_note`: a note on a plan already in force).
pub fn host_plan_text(
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
                IrqSource::MsiIrqs => "IRQs from msi_irqs",
                IrqSource::LegacyIrq => "legacy INTx IRQ",
                IrqSource::ProcInterrupts => "IRQs by name in /proc/interrupts",
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
pub fn applied_text(a: &Applied) -> String {
    let mut out = String::new();
    if let Some(note) = &a.discarded {
        out.push_str(&wrap(note, "", ""));
    }
    if !a.set.is_empty() {
        let mut t = Table::new(&["IRQ", "name", "was", "now", "effective"]).left_aligned();
        let mut pending = false;
        for s in &a.set {
            let cpus = parse_mask(&s.mask).unwrap_or_default();
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

/// The masks `--restore` put back, last set first.
pub fn restored_text(record: &Path, irqs: &[IrqRestored]) -> String {
    let mut out = format!(
        "Restored the masks saved in {} (last set, first restored):\n",
        record.display()
    );
    let mut t = Table::new(&["IRQ", "name", "applied", "found", "restored", "note"]).left_aligned();
    for i in irqs {
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
    out
}
