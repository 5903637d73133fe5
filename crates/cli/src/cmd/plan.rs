//! `irqlab plan`: what seed 001's rules say to set, worked out on a platform's model.
//! `plan swizzle`: INTXSWZCTRL values for the populated root ports of an Intel 5000 platform,
//! and the IRQ table without and with them (seed 001 Tables 2 and 3).

use crate::args::{PlanAffinityArgs, PlanSwizzleArgs};
use crate::ui::print;
use anyhow::{Context, Result};
use irqlab_report::table::Table;
use irqlab_report::text::wrap;
use irqlab_sim::plan::affinity::{self, AffinityPlan, Cpu, Flow};
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

pub fn swizzle(a: PlanSwizzleArgs) -> Result<()> {
    let path = platform_path(&a.platform);
    let population = Population::load(&path, &a.card)?;
    let plan = population
        .plan()
        .with_context(|| format!("planning INTXSWZCTRL for {}", path.display()))?;
    print(&render(&plan, &path))
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
        "Platform {} ({}): {} functions signal INTx.\n\n",
        plan.platform,
        path.display(),
        plan.functions.len()
    );
    if plan.registers.is_empty() {
        out.push_str(
            "No populated port has INTXSWZCTRL (a part of kind \"bridge\" with `intx_swizzle`): \
             nothing to plan; the table below is the platform's as it is.\n\n",
        );
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
    for (label, m) in [("now", &plan.table_before), ("planned", &plan.table_after)] {
        let mut row = vec![label.to_string()];
        row.extend(irqs.iter().map(|&i| irq_cell(m, i)));
        t.row(row);
    }
    out.push_str(&t.render());
    out.push_str(&format!(
        "\nThe busiest IRQ carries {} functions now, {} planned.\n\n",
        plan.busiest_before, plan.busiest_after
    ));
    out.push_str(
        "The firmware's interrupt routing table (names in bus order, as Linux gives them):\n",
    );
    let mut t = Table::new(&["name", "port", "bdf", "pin", "now", "planned"]).left_aligned();
    let line = |pirq: char, irq: Option<u8>| match irq {
        Some(i) => format!("PIRQ{pirq} IRQ{i}"),
        None => format!("PIRQ{pirq} (not wired)"),
    };
    for f in &plan.functions {
        t.row(vec![
            f.name.clone(),
            f.port.clone(),
            format!("{:02x}:{:02x}.{}", f.bdf.bus, f.bdf.dev, f.bdf.func),
            format!("INT{}", f.pin),
            line(f.pirq_before, f.irq_before),
            line(f.pirq_after, f.irq_after),
        ]);
    }
    out.push_str(&t.render());
    let changed: Vec<String> = plan
        .registers
        .iter()
        .filter(|r| r.after != r.before)
        .map(|r| format!("setpci -s 00:{:02x}.0 0x4f.b=0x{:02x}", r.device, r.after))
        .collect();
    out.push('\n');
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
    let path = platform_path(&a.platform);
    let population = Population::load(&path, &a.card)?;
    let swizzle = population
        .plan()
        .with_context(|| format!("reading the IRQ table of {}", path.display()))?;
    let cpus = population.cpus();
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
    print(&render_affinity(
        &swizzle.platform,
        &path,
        which,
        &cpus,
        &a.flow,
        irqs,
        &plan,
        &default,
    ))
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
            format!("{:x}", 1u64 << cpu),
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
            "No even spread is possible: NICs of these flows share IRQs, and a shared line \
             interrupts one CPU. Spread the INTx first (plan swizzle, or --swizzle here).",
            "",
            "",
        ));
    }
    out.push_str("\nOn Linux (as root; stop irqbalance first, or it moves them again):\n");
    for (&irq, &cpu) in &plan.irq_cpu {
        out.push_str(&format!(
            "  echo {:x} > /proc/irq/{irq}/smp_affinity\n",
            1u64 << cpu
        ));
    }
    out
}
