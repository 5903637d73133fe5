//! `irqlab plan`: what seed 001's rules say to set, worked out on a platform's model.
//! `plan swizzle`: INTXSWZCTRL values for the populated root ports of an Intel 5000 platform,
//! and the IRQ table without and with them (seed 001 Tables 2 and 3). `plan affinity`: the
//! static IRQ affinity of NIC flows by the seed's three rules; with `--host`, on this host's
//! CPUs and NIC queues, and applied or restored (`plan_host.rs`).

use crate::args::{PlanAffinityArgs, PlanSwizzleArgs};
use crate::ui::print;
use anyhow::{Context, Result};
use irqlab_report::table::Table;
use irqlab_report::text::wrap;
use irqlab_sim::plan::affinity::{self, AffinityPlan, Cpu, Flow};
use irqlab_sim::plan::simulate;
use irqlab_sim::plan::swizzle::{Population, SwizzlePlan};
use irqlab_sim::shipped;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A platform file on disk, or a shipped one by its file name (`server-2006-bensley-5000p`, with
/// or without `.toml` and `platforms/`).
fn platform_path(arg: &Path) -> PathBuf {
    if arg.exists() {
        return arg.to_path_buf();
    }
    let s = arg.to_string_lossy();
    let s = s.strip_prefix("platforms/").unwrap_or(&s);
    let name = if s.ends_with(".toml") {
        s.to_string()
    } else {
        format!("{s}.toml")
    };
    let shipped = Path::new(shipped::ROOT).join("platforms").join(name);
    if shipped::get(&shipped).is_some() {
        shipped
    } else {
        arg.to_path_buf()
    }
}

/// The platform with the cards in it; a name that is neither a file nor a shipped platform says
/// which are shipped.
fn population(
    arg: &Path,
    cards: &[irqlab_sim::plan::swizzle::Card],
) -> Result<(PathBuf, Population)> {
    let path = platform_path(arg);
    if !shipped::is_shipped(&path) && !path.exists() {
        let names: Vec<String> = shipped::FILES
            .iter()
            .filter_map(|(p, _)| {
                p.strip_prefix("platforms/")?
                    .strip_suffix(".toml")
                    .map(str::to_string)
            })
            .collect();
        anyhow::bail!(
            "{}: no such platform file, and irqlab ships no platform of that name; shipped: {}",
            arg.display(),
            names.join(", ")
        );
    }
    let population = Population::load(&path, cards)?;
    Ok((path, population))
}

pub fn swizzle(a: PlanSwizzleArgs) -> Result<()> {
    let (path, population) = population(&a.platform, &a.card)?;
    let plan = population
        .plan_for(&a.flow)
        .with_context(|| format!("planning INTXSWZCTRL for {}", path.display()))?;
    let mut out = render(&plan, &path);
    if let Some(scenario) = &a.simulate {
        let file = super::sim::resolve(scenario).context("--simulate")?;
        // Each table with its own best placement: what the registers change, not the affinity.
        let cpus = population.cpus();
        let mut rows = Vec::new();
        for (name, table, registers) in [
            ("registers now", &plan.table_before, None),
            (
                "registers planned",
                &plan.table_after,
                Some(plan.registers.as_slice()),
            ),
        ] {
            let irq_of = affinity::irq_map(table);
            let placement = affinity::plan(&irq_of, &a.flow, &cpus).context("--flow")?;
            rows.push((
                name,
                simulate::run(
                    &file,
                    &a.set,
                    &plan,
                    &irq_of,
                    &a.flow,
                    &placement.irq_cpu,
                    registers,
                )
                .with_context(|| format!("simulating on {}", scenario.display()))?,
            ));
        }
        out.push('\n');
        out.push_str(&render_simulated(
            scenario,
            &a.flow,
            "with plan affinity's placement for each",
            &rows,
        ));
    }
    print(&out)
}

/// The simulated throughput of each placement, as a table.
fn render_simulated(
    scenario: &Path,
    flows: &[Flow],
    how: &str,
    rows: &[(&str, simulate::Throughput)],
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

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn hex(v: u8) -> String {
    format!("{v:02X}h")
}

fn irq_cell(routes: &BTreeMap<u8, Vec<String>>, irq: u8) -> String {
    routes.get(&irq).map(|v| v.join(" ")).unwrap_or_default()
}

/// The plan as text: the registers, the IRQ table in seed 001 Table 3's form, every function's
/// route, and how the values are applied.
pub fn render(plan: &SwizzlePlan, path: &Path) -> String {
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

pub fn affinity(a: PlanAffinityArgs) -> Result<()> {
    if a.host {
        return super::plan_host::run(a);
    }
    // clap requires PLATFORM without --host.
    let platform = a.platform.as_deref().context("PLATFORM")?;
    let (path, population) = population(platform, &a.card)?;
    let swizzle = population
        .plan_for(&a.flow)
        .with_context(|| format!("reading the IRQ table of {}", path.display()))?;
    let cpus = population.cpus();
    if a.swizzle && swizzle.registers.is_empty() {
        anyhow::bail!(
            "--swizzle: no populated port of {} has INTXSWZCTRL (a part of kind \"bridge\" \
             with `intx_swizzle`), so there is nothing to swizzle: drop --swizzle",
            path.display()
        );
    }
    let (irqs, which) = if a.swizzle {
        (
            &swizzle.table_after,
            "with the INTXSWZCTRL values plan swizzle chooses",
        )
    } else {
        (
            &swizzle.table_before,
            "with INTXSWZCTRL as the platform file sets it",
        )
    };
    let irq_of = affinity::irq_map(irqs);
    let plan = affinity::plan(&irq_of, &a.flow, &cpus).context("--flow")?;
    let default = affinity::all_on(&irq_of, &a.flow, &cpus, 0);
    let mut out = render_affinity(
        &swizzle.platform,
        &path,
        which,
        a.swizzle,
        &cpus,
        &a.flow,
        irqs,
        &plan,
        &default,
    );
    if let Some(scenario) = &a.simulate {
        let file = super::sim::resolve(scenario).context("--simulate")?;
        let registers = a.swizzle.then_some(swizzle.registers.as_slice());
        let robin = affinity::round_robin(&irq_of, &a.flow, &cpus);
        let mut rows = Vec::new();
        for (name, p) in [
            ("plan (seed 001's rules)", &plan),
            ("round robin (irqbalance-like)", &robin),
            ("default (every IRQ on cpu0)", &default),
        ] {
            let r = simulate::run(
                &file, &a.set, &swizzle, &irq_of, &a.flow, &p.irq_cpu, registers,
            )
            .with_context(|| format!("simulating on {}", scenario.display()))?;
            rows.push((name, r));
        }
        out.push('\n');
        out.push_str(&render_simulated(
            scenario,
            &a.flow,
            "the round robin deals the flows' IRQs to the CPUs in IRQ order",
            &rows,
        ));
    }
    print(&out)
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
pub fn render_affinity(
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
            affinity::cpumask(cpu),
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
            affinity::cpumask(cpu)
        ));
    }
    out
}
