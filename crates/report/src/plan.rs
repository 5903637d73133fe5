//! `irqlab plan`: the model's plans (`plan swizzle`, `plan affinity PLATFORM`, `--simulate`), and
//! with `--host` the host as read, its plan, and what `--apply` and `--restore` did. They read
//! the result model ([`irqlab_stats::plan`], [`irqlab_stats::affinity`]); the planners in the
//! sim and host crates fill it in.

use crate::table::Table;
use crate::text::{count, wrap};
use irqlab_stats::affinity::{Applied, ApplyEnd, HostAffinity, HostCpu, IrqRestored, IrqSource};
use irqlab_stats::cpus::{cpumask, format_cpu_list, parse_mask, CpuList};
use irqlab_stats::plan::{
    AffinityPlan, Cpu, Flow, HostFlow, HostPlan, LeftOutCpu, PlannedIrq, SwizzlePlan, Throughput,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The simulated throughput of each placement, as a table.
pub fn simulated_text(
    scenario: &Path,
    flows: &[Flow],
    how: &str,
    rows: &[(&str, Throughput)],
) -> String {
    let names: Vec<String> = flows.iter().map(|f| format!("{}<->{}", f.a, f.b)).collect();
    let mut out = wrap(
        &format!(
            "Simulated on {} ({how}): {} at line rate both ways; frames forwarded per second:",
            scenario.display(),
            names.join(", ")
        ),
        "",
        "",
    );
    out.push('\n');
    let mut t = Table::new(&["placement", "busy CPUs", "forwarded"]).left_aligned();
    for (name, r) in rows {
        t.row(vec![
            name.to_string(),
            r.busy_cpus.to_string(),
            format!("{} pps", irqlab_stats::thousands(r.pps.round() as u64)),
        ]);
    }
    out.push_str(&t.render());
    out
}

fn hex(v: u8) -> String {
    format!("{v:02X}h")
}

fn irq_cell(routes: &BTreeMap<u8, Vec<String>>, irq: u8) -> String {
    routes.get(&irq).map(|v| v.join(" ")).unwrap_or_default()
}

/// The plan as text: the registers, the IRQ table in seed 001 Table 3's form, every function's
/// route, and how the values are applied.
pub fn swizzle_text(plan: &SwizzlePlan, path: &Path) -> String {
    let mut out = format!(
        "Platform {} ({}): {}.\n\n",
        plan.platform,
        path.display(),
        count(
            plan.functions.len(),
            "function signals INTx",
            "functions signal INTx"
        )
    );
    if plan.registers.is_empty() {
        out.push_str(&wrap(
            "No populated port has INTXSWZCTRL (a part of kind \"bridge\" with `intx_swizzle`): \
             nothing to plan; the tables below are the platform's as it is.",
            "",
            "",
        ));
        out.push('\n');
    } else {
        out.push_str(
            "INTXSWZCTRL (config offset 4Fh, bits 1:0) of the ports with INTx below them:\n",
        );
        let mut t = Table::new(&["port", "device", "now", "planned"]).left_aligned();
        for r in &plan.registers {
            t.row(vec![
                r.port.clone(),
                format!("00:{:02x}.0", r.device),
                hex(r.before),
                hex(r.after),
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
    }
    let irqs: Vec<u8> = plan
        .table_before
        .keys()
        .chain(plan.table_after.keys())
        .copied()
        .collect::<std::collections::BTreeSet<u8>>()
        .into_iter()
        .collect();
    out.push_str("IRQ assignment (seed 001 Table 3's form):\n");
    let mut headers = vec!["swizzle".to_string()];
    headers.extend(irqs.iter().map(|i| format!("IRQ{i}")));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&headers).left_aligned();
    let rows: &[(&str, &BTreeMap<u8, Vec<String>>)] = if plan.registers.is_empty() {
        &[("now", &plan.table_before)]
    } else {
        &[("now", &plan.table_before), ("planned", &plan.table_after)]
    };
    for &(label, m) in rows {
        let mut row = vec![label.to_string()];
        row.extend(irqs.iter().map(|&i| irq_cell(m, i)));
        t.row(row);
    }
    out.push_str(&t.render());
    if plan.registers.is_empty() {
        out.push_str(&format!(
            "\nThe busiest IRQ carries {}.\n\n",
            count(plan.busiest_before, "function", "functions")
        ));
    } else {
        out.push_str(&format!(
            "\nThe busiest IRQ carries {} now, {} planned.\n\n",
            count(plan.busiest_before, "function", "functions"),
            count(plan.busiest_after, "function", "functions")
        ));
    }
    out.push_str(
        "The firmware's interrupt routing table (names in bus order, as Linux gives them):\n",
    );
    let planning = !plan.registers.is_empty();
    let headers: &[&str] = if planning {
        &["name", "port", "bdf", "pin", "now", "planned"]
    } else {
        &["name", "port", "bdf", "pin", "now"]
    };
    let mut t = Table::new(headers).left_aligned();
    let line = |pirq: char, irq: Option<u8>| match irq {
        Some(i) => format!("PIRQ{pirq} IRQ{i}"),
        None => format!("PIRQ{pirq} (not wired)"),
    };
    for f in &plan.functions {
        let mut row = vec![
            f.name.clone(),
            f.port.clone(),
            format!("{:02x}:{:02x}.{}", f.bdf.bus, f.bdf.dev, f.bdf.func),
            format!("INT{}", f.pin),
            line(f.pirq_before, f.irq_before),
        ];
        if planning {
            row.push(line(f.pirq_after, f.irq_after));
        }
        t.row(row);
    }
    out.push_str(&t.render());
    let lost = |planned: bool| -> Vec<&str> {
        plan.functions
            .iter()
            .filter(|f| if planned { f.irq_after } else { f.irq_before }.is_none())
            .map(|f| f.name.as_str())
            .collect()
    };
    // Without registers to plan, `after` is `before`: what is lost stays lost.
    let (lost_now, lost_after) = (lost(false), lost(true));
    if !lost_after.is_empty() {
        let names = lost_after.join(", ");
        let why = if planning {
            format!("No INTXSWZCTRL values of these ports reach a wired line for {names}")
        } else {
            format!("No port above {names} has INTXSWZCTRL to move")
        };
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "Warning: the interrupts of {names} are lost: their router line is not wired to \
                 the IO-APIC. {why}; wire the line (a [[wire]] in the platform file) or move the \
                 card."
            ),
            "",
            "",
        ));
    } else if !lost_now.is_empty() {
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "Now the interrupts of {} are lost (their router line is not wired to the \
                 IO-APIC); the planned values put them on wired lines, which is why the busiest \
                 IRQ may carry more.",
                lost_now.join(", ")
            ),
            "",
            "",
        ));
    }
    let changed: Vec<String> = plan
        .registers
        .iter()
        .filter(|r| r.after != r.before)
        // Bits 1:0 only: the register's other bits are reserved (seed 001 Table 1's text).
        .map(|r| {
            format!(
                "setpci -s 00:{:02x}.0 0x4f.b=0x{:02x}:0x03",
                r.device, r.after
            )
        })
        .collect();
    out.push('\n');
    if plan.registers.is_empty() {
        return out;
    }
    if changed.is_empty() {
        out.push_str(
            "Nothing to change: the ports' values already spread INTx as evenly as they can.\n",
        );
    } else {
        out.push_str(&wrap(
            "To apply: INTXSWZCTRL is the BIOS's to set, before the OS reads its interrupt routing \
             table, which must say the same (seed 001 4.2: the MP table or ACPI _PRT). Set it in \
             the BIOS where it offers the setting; for a firmware-level test, the register \
             writes are (a running OS would keep the IRQs its table gave, and lose the \
             interrupts):",
            "",
            "",
        ));
        for c in changed {
            out.push_str(&format!("  {c}\n"));
        }
    }
    out
}

fn cpu_list(cpus: &[Cpu]) -> String {
    let sockets = cpus.iter().map(|c| c.socket).max().map_or(0, |s| s + 1);
    (0..sockets)
        .map(|s| {
            cpus.iter()
                .filter(|c| c.socket == s)
                .map(|c| format!("cpu{}", c.cpu))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The affinity plan as text: where each IRQ goes, what each CPU takes, each flow's placement,
/// against the default, and the commands that set it on Linux.
#[allow(clippy::too_many_arguments)]
pub fn affinity_text(
    platform: &str,
    path: &Path,
    which: &str,
    swizzled: bool,
    cpus: &[Cpu],
    flows: &[Flow],
    irqs: &BTreeMap<u8, Vec<String>>,
    plan: &AffinityPlan,
    default: &AffinityPlan,
) -> String {
    let sockets = cpus.iter().map(|c| c.socket).max().map_or(0, |s| s + 1);
    let mut out = format!(
        "Platform {platform} ({}): {} CPUs in {sockets} socket{} ({}); IRQs {which}.\n\n",
        path.display(),
        cpus.len(),
        if sockets == 1 { "" } else { "s" },
        cpu_list(cpus),
    );
    let in_flows: Vec<&str> = flows
        .iter()
        .flat_map(|f| [f.a.as_str(), f.b.as_str()])
        .collect();
    out.push_str("Plan (seed 001's rules):\n");
    let mut t = Table::new(&[
        "IRQ",
        "flow NICs",
        "also on the line",
        "CPU",
        "smp_affinity",
    ])
    .left_aligned();
    for (&irq, &cpu) in &plan.irq_cpu {
        let on = irqs.get(&(irq as u8)).cloned().unwrap_or_default();
        let (ours, others): (Vec<String>, Vec<String>) =
            on.into_iter().partition(|n| in_flows.contains(&n.as_str()));
        t.row(vec![
            format!("IRQ{irq}"),
            ours.join(" "),
            others.join(" "),
            format!("cpu{cpu}"),
            cpumask(cpu),
        ]);
    }
    out.push_str(&t.render());
    out.push('\n');
    let mut t = Table::new(&["flow", "placement"]).left_aligned();
    for (f, how) in &plan.flows {
        t.row(vec![format!("{}<->{}", f.a, f.b), how.to_string()]);
    }
    out.push_str(&t.render());
    out.push('\n');
    let load = |p: &AffinityPlan| {
        p.cpu_nics
            .iter()
            .map(|(cpu, nics)| format!("cpu{cpu} {}", nics.join(" ")))
            .collect::<Vec<_>>()
            .join("; ")
    };
    out.push_str(&format!("Planned: {}.\n", load(plan)));
    out.push_str(&format!(
        "Default (every IRQ on cpu0): {}.\n",
        load(default)
    ));
    out.push_str(&format!(
        "The busiest CPU takes {} flow NICs' interrupts planned, {} by default; an even spread \
         takes at most {}.\n",
        plan.busiest, default.busiest, plan.even
    ));
    if !plan.is_even() {
        out.push_str(&wrap(
            &format!(
                "No even spread is possible: NICs of these flows share IRQs, and a shared line \
                 interrupts one CPU. {}",
                if swizzled {
                    "No INTXSWZCTRL values of the populated ports give these flows' NICs more \
                     lines: move a card to another port, or plan fewer flows."
                } else {
                    "Spread the INTx first (plan swizzle, or --swizzle here)."
                }
            ),
            "",
            "",
        ));
    }
    let rule2 = 2 * flows.len() > cpus.len();
    let apart: Vec<String> = plan
        .flows
        .iter()
        .filter(|(_, how)| *how != "same CPU")
        .map(|(f, _)| format!("{}<->{}", f.a, f.b))
        .collect();
    if rule2 && !apart.is_empty() {
        out.push_str(&wrap(
            &format!(
                "Rule 2 (with more NICs than CPUs, a flow's two NICs on one CPU) is not met for {}: \
                 keeping them together would load a CPU with more than the busiest carries here, \
                 or leave a CPU idle.",
                apart.join(", ")
            ),
            "",
            "",
        ));
    }
    out.push('\n');
    out.push_str(&wrap(
        "CPU numbers assume Linux numbers the cores in APIC ID order with each socket's cores \
         together; check `physical id` in /proc/cpuinfo before using the masks.",
        "",
        "",
    ));
    out.push_str("\nOn Linux (as root; stop irqbalance first, or it moves them again):\n");
    for (&irq, &cpu) in &plan.irq_cpu {
        out.push_str(&format!(
            "  echo {} > /proc/irq/{irq}/smp_affinity\n",
            cpumask(cpu)
        ));
    }
    out
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
