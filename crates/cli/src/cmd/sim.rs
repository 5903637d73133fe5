//! `irqlab sim`: one scenario, simulated.

use super::emit_run;
use crate::args::SimArgs;
use crate::made::Invocation;
use crate::ui::Progress;
use anyhow::Result;
use irqlab_sim::experiment::AnyScenario;
use serde::Serialize;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The settings of a simulation, as its JSON records them: what reproduces it bit for bit.
#[derive(Serialize)]
struct Settings<'a> {
    /// The scenario as given on the command line.
    scenario: String,
    /// Every `--set`, in order.
    overrides: &'a [String],
    /// The seed the run used (the scenario's unless `--seed`).
    seed: u64,
    /// Samples simulated (the scenario's unless `--samples`).
    samples: u64,
    replications: u32,
    trace_packets: usize,
}

pub fn run(a: SimArgs, inv: &Invocation) -> Result<()> {
    let SimArgs {
        scenario,
        set,
        seed,
        samples,
        trace,
        json,
        plot,
        replications,
    } = a;
    let s = match AnyScenario::load(&scenario, &set)? {
        AnyScenario::Pcie(s) => *s,
        AnyScenario::Pps(s) => {
            if trace > 0 {
                anyhow::bail!(
                    "--trace shows PCIe analyzer packets; {} is an ISA PC with no PCIe link to \
                     watch",
                    scenario.display()
                );
            }
            let seed = seed.unwrap_or(s.file.seed);
            let samples = samples.unwrap_or(s.file.samples);
            let counter = Arc::new(AtomicU64::new(0));
            // Each replication runs the whole pulse timeline (its phases are by sample).
            let total = samples.saturating_mul(u64::from(replications.max(1)));
            let bar = Progress::start(total, &counter);
            let result = s.run_replicated(seed, samples, replications, Some(counter));
            bar.finish();
            let result = result?;
            let rep = irqlab_sim::report::pps_run_report(&s, seed, &result);
            let made = inv.made(
                &Settings {
                    scenario: scenario.display().to_string(),
                    overrides: &set,
                    seed,
                    samples,
                    replications,
                    trace_packets: trace,
                },
                None,
            );
            return emit_run(
                &rep,
                &made,
                json.as_deref(),
                plot.as_deref(),
                &scenario,
                "pps",
            );
        }
    };
    let seed = seed.unwrap_or(s.file.seed);
    let samples = samples.unwrap_or(s.file.samples);
    let counter = Arc::new(AtomicU64::new(0));
    let bar = Progress::start(samples, &counter);
    let result = s.run_replicated(seed, samples, trace, replications, Some(counter));
    bar.finish();
    let result = result?;
    let rep = irqlab_sim::report::run_report(&s, seed, &result);
    let made = inv.made(
        &Settings {
            scenario: scenario.display().to_string(),
            overrides: &set,
            seed,
            samples,
            replications,
            trace_packets: trace,
        },
        None,
    );
    let delivery = format!("{:?}", s.file.delivery).to_lowercase();
    emit_run(
        &rep,
        &made,
        json.as_deref(),
        plot.as_deref(),
        &scenario,
        &delivery,
    )
}
