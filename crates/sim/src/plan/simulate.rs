//! A plan's difference, simulated: the flows forwarded on a scenario of the planned platform
//! (seed 001's `experiments/seed001/forward.toml`, or any scenario whose network devices are
//! named as the planner names the platform's interfaces), with the IRQ affinity of a
//! placement and, swizzled, the INTXSWZCTRL values of the plan. Each flow's two ports are
//! offered line rate both ways (Table 4's setup); what the run forwards before its traffic
//! ends, per second, is the placement's throughput.

use crate::plan::affinity::Flow;
use crate::plan::swizzle::{Function, Register, SwizzlePlan};
use crate::scenario::{Origin, Scenario, ScenarioError};
use std::collections::BTreeMap;
use std::path::Path;

// The result model's, which the renderers read (`irqlab_stats::plan`).
pub use irqlab_stats::plan::Throughput;

/// The `--set`s that put `flows` on `scenario`'s devices with `irq_cpu` (IRQ -> CPU; every
/// other line on CPU 0, Linux's default) and, when given, the swizzle `registers`' planned
/// values. A port outside the flows that the scenario offers traffic (seed 001's shipped flow)
/// is given none: the run is of the flows alone.
pub fn sets(
    scenario: &Scenario,
    irq_of: &BTreeMap<String, u32>,
    flows: &[Flow],
    irq_cpu: &BTreeMap<u32, usize>,
    registers: Option<&[Register]>,
) -> Result<Vec<String>, ScenarioError> {
    let devices = scenario.pcie_devices();
    let index = |name: &str| -> Result<usize, ScenarioError> {
        devices.iter().position(|d| d.name == name).ok_or_else(|| {
            let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
            ScenarioError::Invalid {
                origin: Origin::Arg("plan".into()),
                key: "--simulate".into(),
                message: format!(
                    "the scenario {} has no device '{name}' for the flows (its devices: {}): \
                     name them as plan swizzle names the platform's interfaces",
                    scenario.path.display(),
                    names.join(", ")
                ),
            }
        })
    };
    let mut out = Vec::new();
    if let Some(registers) = registers {
        for r in registers {
            out.push(format!("platform.part.{}.intx_swizzle={}", r.port, r.after));
        }
    }
    for f in flows {
        for (from, to) in [(&f.a, &f.b), (&f.b, &f.a)] {
            let i = index(from)?;
            index(to)?;
            let nic = devices[i]
                .nic
                .as_ref()
                .ok_or_else(|| ScenarioError::Invalid {
                    origin: Origin::Arg("plan".into()),
                    key: "--simulate".into(),
                    message: format!(
                        "device '{from}' of {} has no network controller ([device.nic])",
                        scenario.path.display()
                    ),
                })?;
            // Line rate: the frame, its 8-byte preamble and 12-byte gap at 8 ns a byte.
            let gap_us = f64::from(nic.frame_bytes + 20) * 8.0 / 1e3;
            out.push(format!("device.{i}.nic.gap_us={gap_us}"));
            out.push(format!("device.{i}.nic.forward_to={to}"));
        }
    }
    for (i, d) in devices.iter().enumerate() {
        let in_flows = flows.iter().any(|f| f.a == d.name || f.b == d.name);
        if !in_flows && d.nic.as_ref().is_some_and(|n| n.gap_us > 0.0) {
            out.push(format!("device.{i}.nic.gap_us=0"));
        }
    }
    for (i, d) in devices.iter().enumerate() {
        if let Some(irq) = irq_of.get(&d.name) {
            let cpu = irq_cpu.get(irq).copied().unwrap_or(0);
            out.push(format!("device.{i}.irq_cpu={cpu}"));
        }
    }
    Ok(out)
}

/// Is `scenario` the board `plan` was made for: the same platform, and every flow NIC a device
/// in the port, at the bus:device.function and on the pin the planner gave that interface?
fn same_board(
    scenario: &Scenario,
    plan: &SwizzlePlan,
    flows: &[Flow],
) -> Result<(), ScenarioError> {
    let refuse = |message: String| ScenarioError::Invalid {
        origin: Origin::Arg("plan".into()),
        key: "--simulate".into(),
        message,
    };
    if scenario.platform.name != plan.platform {
        return Err(refuse(format!(
            "the scenario {} runs the platform '{}', the plan is for '{}'",
            scenario.path.display(),
            scenario.platform.name,
            plan.platform
        )));
    }
    for nic in flows.iter().flat_map(|f| [&f.a, &f.b]) {
        let Some(f) = plan.functions.iter().find(|f: &&Function| &f.name == nic) else {
            continue;
        };
        let d = scenario.pcie_devices().into_iter().find(|d| &d.name == nic);
        let matches =
            d.is_some_and(|d| d.port == f.port && d.bdf == f.bdf && d.intx_pin.letter() == f.pin);
        if !matches {
            return Err(refuse(format!(
                "the plan's {nic} is {} INT{} below {}; the scenario {} has {}: give it the \
                 same cards in the same ports (--card)",
                f.bdf,
                f.pin,
                f.port,
                scenario.path.display(),
                d.map_or("no such device".to_string(), |d| format!(
                    "{} INT{} below {}",
                    d.bdf,
                    d.intx_pin.letter(),
                    d.port
                ))
            )));
        }
    }
    Ok(())
}

/// Run `scenario_path` (with `overrides`, then the placement's sets) and measure it; the
/// scenario must be the board `plan` was made for.
#[allow(clippy::too_many_arguments)]
pub fn run(
    scenario_path: &Path,
    overrides: &[String],
    plan: &SwizzlePlan,
    irq_of: &BTreeMap<String, u32>,
    flows: &[Flow],
    irq_cpu: &BTreeMap<u32, usize>,
    registers: Option<&[Register]>,
) -> Result<Throughput, ScenarioError> {
    let base = Scenario::load(scenario_path, overrides)?;
    let placed = sets(&base, irq_of, flows, irq_cpu, registers)?;
    same_board(&base, plan, flows)?;
    // What the placement sets is the plan's: an override of it would be silently undone, and
    // a swizzle register set here would simulate another IRQ table than the one planned.
    let key = |set: &str| {
        set.split_once('=')
            .map_or(set, |(k, _)| k)
            .trim()
            .to_string()
    };
    let planned: std::collections::BTreeSet<String> = placed.iter().map(|p| key(p)).collect();
    if let Some(o) = overrides
        .iter()
        .find(|o| planned.contains(&key(o)) || key(o).ends_with(".intx_swizzle"))
    {
        return Err(ScenarioError::Invalid {
            origin: Origin::Arg("plan".into()),
            key: "--set".into(),
            message: format!(
                "{o}: under --simulate the plan sets the flows' traffic (gap_us, forward_to), \
                 the IRQs' CPUs (irq_cpu) and the swizzle registers (intx_swizzle); change the \
                 flows, --swizzle or --card instead, or run `irqlab sim` with your own --set"
            ),
        });
    }
    if base.file.duration_ms <= 0.0 {
        return Err(ScenarioError::Invalid {
            origin: Origin::Arg("plan".into()),
            key: "--simulate".into(),
            message: format!(
                "{} counts samples: a throughput needs a run of fixed length (duration_ms, as \
                 experiments/seed001/forward.toml has)",
                scenario_path.display()
            ),
        });
    }
    let mut all = overrides.to_vec();
    all.extend(placed);
    let s = Scenario::load(scenario_path, &all)?;
    let o = s.run(s.file.seed, 1, 0)?;
    let frames: u64 = o.nics.iter().map(|n| n.transmitted_in_run).sum();
    let busy: std::collections::BTreeSet<usize> = flows
        .iter()
        .flat_map(|f| [&f.a, &f.b])
        .filter_map(|n| irq_of.get(n.as_str()))
        .map(|irq| irq_cpu.get(irq).copied().unwrap_or(0))
        .collect();
    Ok(Throughput {
        pps: frames as f64 / (o.run_length_us as f64 * 1e-6),
        busy_cpus: busy.len(),
    })
}
