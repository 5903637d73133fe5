//! `irqlab plan`: what seed 001's rules say to set, worked out on a platform's model.
//! `plan swizzle`: INTXSWZCTRL values for the populated root ports of an Intel 5000 platform,
//! and the IRQ table without and with them (seed 001 Tables 2 and 3). `plan affinity`: the
//! static IRQ affinity of NIC flows by the seed's three rules; with `--host`, on this host's
//! CPUs and NIC queues, and applied or restored (`plan_host.rs`). The planners are
//! [`irqlab_sim::plan`]'s, the renderers [`irqlab_report::plan`]'s; this module parses, calls
//! and prints.

use crate::args::{PlanAffinityArgs, PlanSwizzleArgs};
use crate::ui::print;
use anyhow::{Context, Result};
use irqlab_report::plan as plan_text;
use irqlab_sim::plan::affinity;
use irqlab_sim::plan::simulate;
use irqlab_sim::plan::swizzle::Population;
use irqlab_sim::shipped;
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
    let mut out = plan_text::swizzle_text(&plan, &path);
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
        out.push_str(&plan_text::simulated_text(
            scenario,
            &a.flow,
            "with plan affinity's placement for each",
            &rows,
        ));
    }
    print(&out)
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
    let mut out = plan_text::affinity_text(
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
        out.push_str(&plan_text::simulated_text(
            scenario,
            &a.flow,
            "the round robin deals the flows' IRQs to the CPUs in IRQ order",
            &rows,
        ));
    }
    print(&out)
}
