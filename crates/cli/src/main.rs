//! `irqlab`: the command line. Argument parsing and glue only; the work lives in the library
//! crates (`irqlab-sim`, `irqlab-host`, `irqlab-report`, `irqlab-stats`).
//!
//! - [`args`]: the flags, parsed without side effects;
//! - [`cmd`]: one module per command, from flags to a rendered result;
//! - [`ui`]: stdout for results, stderr for progress.

#![forbid(unsafe_code)]

mod args;
mod cmd;
mod made;
mod ui;

use args::{Cli, Command, Measure, Plan};
use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

/// Exit status when a validation row fails.
const EXIT_VALIDATION_FAILED: u8 = 1;
/// Exit status for bad input (files, flags) and measurements that cannot run.
const EXIT_BAD_INPUT: u8 = 2;
/// Exit status when a host setting is not as irqlab meant to leave it: one that could not be
/// put back (the message says how to by hand), or an applied plan whose masks read back
/// otherwise.
const EXIT_HOST_STATE: u8 = 3;

fn main() -> ExitCode {
    // Before any thread starts: the simulator's runs reuse the memory the runs before them
    // freed (docs/performance.md).
    irqlab_host::retain_freed_memory();
    let invocation = made::Invocation::now();
    let cli = Cli::parse();
    match run(cli, &invocation) {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`irqlab sim ... | head`) is not an error worth a message.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            // stderr may be a closed pipe too; never panic on it.
            // What a file held may be quoted (a field a parser did not expect): shown, not
            // obeyed by the terminal.
            let message = format!("{e:#}");
            let _ = writeln!(
                std::io::stderr(),
                "irqlab: error: {}",
                ui::escape_controls_but_lines(&message)
            );
            let host_state = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<irqlab_host::HostError>(),
                    Some(
                        irqlab_host::HostError::Restore(_)
                            | irqlab_host::HostError::NotAsPlanned(_)
                    )
                )
            });
            ExitCode::from(if host_state {
                EXIT_HOST_STATE
            } else {
                EXIT_BAD_INPUT
            })
        }
    }
}

fn run(cli: Cli, inv: &made::Invocation) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Sim(a) => cmd::sim::run(a, inv)?,
        Command::Validate(a) => {
            if !cmd::validate::run(a, inv)? {
                return Ok(ExitCode::from(EXIT_VALIDATION_FAILED));
            }
        }
        Command::Host(a) => cmd::host::run(a, inv)?,
        Command::Plot(a) => cmd::plot::run(a)?,
        Command::Measure(Measure::Timer(a)) => cmd::measure::timer(a, inv)?,
        Command::Measure(Measure::Irqs(a)) => cmd::measure::irqs(a, inv)?,
        Command::List => cmd::list::run()?,
        Command::Show(a) => cmd::show::run(a)?,
        Command::Plan(Plan::Swizzle(a)) => cmd::plan::swizzle(a)?,
        Command::Plan(Plan::Affinity(a)) => cmd::plan::affinity(a)?,
        Command::Sweep(a) => {
            if !cmd::sweep::run(a, inv)? {
                return Ok(ExitCode::from(EXIT_VALIDATION_FAILED));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
