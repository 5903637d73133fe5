//! `irqlab`: the command line. Argument parsing and glue only; the work lives in the library
//! crates (`irqlab-sim`, `irqlab-report`, `irqlab-stats`).

#![forbid(unsafe_code)]

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use irqlab_report as report;
use irqlab_sim::experiment::AnyScenario;
use irqlab_sim::experiment::{planned_samples, validate_dir, ValidateOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when a validation row fails.
const EXIT_VALIDATION_FAILED: u8 = 1;
/// Exit status for bad input (files, flags) and measurements that cannot run.
const EXIT_BAD_INPUT: u8 = 2;
/// Exit status when a host setting could not be put back (the message says how to by hand).
const EXIT_NOT_RESTORED: u8 = 3;

#[derive(Parser)]
#[command(
    name = "irqlab",
    version,
    about = "Interrupt-latency laboratory: simulate the interrupt path, validate against published experiments, inventory and measure the host"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scenario and print its ISR and tasklet latencies.
    Sim {
        /// Scenario file (see experiments/seed000/ws.toml).
        scenario: PathBuf,
        /// Override a parameter by dotted path, e.g. `delivery=xtpic`,
        /// `platform.cpu.clock_hz=2.0e9`, `device.0.read_turnaround_ns=300`. Repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Random seed (default: the scenario's `seed`).
        #[arg(long)]
        seed: Option<u64>,
        /// Interrupts to raise (default: the scenario's `samples`).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        samples: Option<u64>,
        /// Print the first N packets the analyzer saw on the device's link (Figure 7 style).
        #[arg(long, value_name = "N", default_value_t = 0)]
        trace: usize,
        /// Also write the result as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Draw SVG figures into DIR: the latency histogram (log count axis) and the cumulative
        /// distribution.
        #[arg(long, value_name = "DIR")]
        plot: Option<PathBuf>,
        /// Split the samples over N independent replications run on all cores and merge their
        /// histograms (replication 0 uses --seed; the result depends on N, not on the cores). A
        /// seed-004 scenario's phases are set by sample number, so each of its replications
        /// runs the whole timeline and the histograms hold N times the samples.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=4096))]
        replications: u32,
    },
    /// Run every published experiment in experiments/ and compare published with simulated.
    Validate {
        /// Directory of experiment files.
        #[arg(long, default_value = "experiments")]
        experiments: PathBuf,
        /// Only rows whose id matches (substring, or a pattern with `*`).
        #[arg(long, value_name = "PATTERN")]
        only: Option<String>,
        /// Override the sample count of every run.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "full")]
        samples: Option<u64>,
        /// Run the published sample counts where they are long (seed 002: 256M round trips,
        /// on all cores) instead of the shorter defaults. The output says which ran.
        #[arg(long)]
        full: bool,
        /// Also write the validation as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Draw SVG figures into DIR: per experiment, its runs' latencies overlaid (histogram
        /// with a log count axis, and the cumulative distribution).
        #[arg(long, value_name = "DIR")]
        plot: Option<PathBuf>,
    },
    /// Inventory this host's interrupts: delivery, trigger, device and driver, rates per CPU,
    /// affinity, and findings (legacy INTx on MSI-capable devices, shared lines, load on one
    /// CPU, irqbalance).
    Host {
        /// Take two snapshots this far apart and show rates per CPU (e.g. `2s`, `500ms`).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        interval: Option<std::time::Duration>,
        /// Also write the inventory as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Read a captured tree (proc/, sys/) instead of the live system; see
        /// crates/host/tests/fixtures/capture-host.sh.
        #[arg(long, value_name = "DIR", default_value = "/")]
        root: PathBuf,
    },
    /// Draw saved results (`--json` of sim or measure timer) as SVG figures; several files are
    /// overlaid on the same axes, each metric labelled with its file's name.
    Plot {
        /// Result files written with --json.
        #[arg(required = true, value_name = "RESULT.json")]
        results: Vec<PathBuf>,
        /// Directory for the figures.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Measure this host: timer wake-up latency (`timer`), interrupt handler and softirq times
    /// (`irqs`).
    #[command(subcommand)]
    Measure(Measure),
}

#[derive(Subcommand)]
enum Measure {
    /// Timer wake-up latency per CPU, cyclictest's method (pinned SCHED_FIFO threads, absolute
    /// clock_nanosleep on CLOCK_MONOTONIC, mlockall, /dev/cpu_dma_latency held at 0), with the
    /// IRQ-vs-thread split from trace events where tracefs is available (root).
    Timer {
        /// CPUs to measure on, one thread each (e.g. `0-3,6`; default: all online).
        #[arg(long, value_name = "LIST")]
        cpus: Option<String>,
        /// SCHED_FIFO priority of the measuring threads.
        #[arg(long, default_value_t = 95)]
        priority: i32,
        /// Period between wake-ups, in microseconds.
        #[arg(long, value_name = "US", default_value_t = 1000)]
        interval_us: u64,
        /// How long to measure (e.g. `10s`, `5m`); without it or --loops, until Ctrl-C.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "loops")]
        duration: Option<std::time::Duration>,
        /// Wake-ups per thread, instead of --duration.
        #[arg(long, value_name = "N")]
        loops: Option<u64>,
        /// Stop at the first wake-up later than this (us) and show what ran on that CPU before
        /// it (from the trace).
        #[arg(long, value_name = "US")]
        break_us: Option<u64>,
        /// Run this shell command as load for the measurement's duration, then stop it (and
        /// everything it started), e.g. `--load 'stress-ng --cpu 2'`.
        #[arg(long, value_name = "CMD")]
        load: Option<String>,
        /// Do not trace: no IRQ/thread split, no spike account.
        #[arg(long)]
        no_trace: bool,
        /// Trace ring buffer per CPU in KiB.
        #[arg(long, value_name = "KIB", default_value_t = 4096,
              value_parser = clap::value_parser!(u32).range(1..))]
        buffer_kb: u32,
        /// Also write the result as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Also write the thread latencies in cyclictest's --histogram format (1 us buckets up
        /// to --histogram-max-us, later ones counted as overflows) to FILE, for existing
        /// plotting scripts.
        #[arg(long, value_name = "FILE")]
        histogram_out: Option<PathBuf>,
        /// Draw SVG figures of the latencies into DIR (histogram with a log count axis,
        /// cumulative distribution), every CPU on the same axes.
        #[arg(long, value_name = "DIR")]
        plot: Option<PathBuf>,
        /// Largest bucket of --histogram-out in us (cyclictest's -h value); later wake-ups
        /// count as overflows.
        #[arg(long, value_name = "US", default_value_t = 10_000,
              value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        histogram_max_us: u64,
    },
    /// Hard IRQ handler time, softirq raise-to-run delay and run time, and tasklet run time,
    /// per CPU, from the kernel's trace events (root; tracefs). Nothing of the host's tracing
    /// state is changed: irqlab works in its own tracing instance and removes it.
    Irqs {
        /// How long to measure (e.g. `10s`). Ctrl-C ends it early with the results so far.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        duration: std::time::Duration,
        /// Ring buffer per CPU in KiB; raise it if events are reported lost.
        #[arg(long, value_name = "KIB", default_value_t = 4096,
              value_parser = clap::value_parser!(u32).range(1..))]
        buffer_kb: u32,
        /// Also write the result as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
}

/// A progress bar with the time left for long simulations, on stderr when it is a terminal
/// (quiet otherwise, and for runs too short to need one).
struct Progress {
    done: Option<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    )>,
}

impl Progress {
    /// Runs shorter than this many samples finish before a bar would be useful.
    const MIN_SAMPLES: u64 = 2_000_000;

    fn start(total: u64, counter: &std::sync::Arc<std::sync::atomic::AtomicU64>) -> Progress {
        use std::io::IsTerminal;
        if total < Self::MIN_SAMPLES || !std::io::stderr().is_terminal() {
            return Progress { done: None };
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop2, counter) = (stop.clone(), counter.clone());
        let h = std::thread::spawn(move || {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:24} {human_pos}/{human_len} interrupts, ~{eta} left",
                )
                .expect("a valid template"),
            );
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                bar.set_position(
                    counter
                        .load(std::sync::atomic::Ordering::Relaxed)
                        .min(total),
                );
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            bar.finish_and_clear();
        });
        Progress {
            done: Some((stop, h)),
        }
    }

    fn finish(self) {
        if let Some((stop, h)) = self.done {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = h.join();
        }
    }
}

/// cyclictest's per-thread status lines on stderr, redrawn in place while a measurement runs;
/// nothing when stderr is not a terminal.
struct LiveLines {
    tty: bool,
    drawn: usize,
}

impl LiveLines {
    fn new() -> Self {
        use std::io::IsTerminal;
        LiveLines {
            tty: std::io::stderr().is_terminal(),
            drawn: 0,
        }
    }

    fn show(&mut self, stats: &[irqlab_host::timer::LiveStat]) {
        if !self.tty {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.drawn > 0 {
            let _ = write!(err, "\x1b[{}A", self.drawn);
        }
        for (i, s) in stats.iter().enumerate() {
            let _ = writeln!(err, "\x1b[2K{}", s.cyclictest_line(i));
        }
        self.drawn = stats.len();
    }

    fn finish(&mut self) {
        if self.tty && self.drawn > 0 {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// `2s`, `500ms`, `1m`: a positive duration.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("{e}; expected a duration such as 2s, 500ms or 1m"))?;
    if d.is_zero() {
        return Err("must be longer than zero".into());
    }
    Ok(d)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
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
            let _ = writeln!(std::io::stderr(), "irqlab: error: {e:#}");
            let not_restored = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<irqlab_host::HostError>(),
                    Some(irqlab_host::HostError::Restore(_))
                )
            });
            ExitCode::from(if not_restored {
                EXIT_NOT_RESTORED
            } else {
                EXIT_BAD_INPUT
            })
        }
    }
}

fn print(s: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Write a run's JSON, print it, and draw its figures (named after the scenario and `kind`).
fn emit_run(
    rep: &irqlab_stats::results::RunReport,
    json: Option<&std::path::Path>,
    plot: Option<&std::path::Path>,
    scenario: &std::path::Path,
    kind: &str,
) -> Result<ExitCode> {
    if let Some(path) = json {
        report::write_atomic(path, report::run_json(rep)?.as_bytes()).with_context(|| "--json")?;
    }
    print(&report::run_text(rep))?;
    if let Some(dir) = plot {
        let name = scenario
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().into_owned());
        for f in
            report::plot::plot_run(rep, dir, &format!("{name}-{kind}")).with_context(|| "--plot")?
        {
            print(&format!("wrote {}\n", f.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Sim {
            scenario,
            set,
            seed,
            samples,
            trace,
            json,
            plot,
            replications,
        } => {
            let s = match AnyScenario::load(&scenario, &set)? {
                AnyScenario::Pcie(s) => *s,
                AnyScenario::Pps(s) => {
                    if trace > 0 {
                        anyhow::bail!(
                            "--trace shows PCIe analyzer packets; {} is an ISA PC with no PCIe \
                             link to watch",
                            scenario.display()
                        );
                    }
                    let seed = seed.unwrap_or(s.file.seed);
                    let samples = samples.unwrap_or(s.file.samples);
                    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
                    // Each replication runs the whole pulse timeline (its phases are by sample).
                    let total = samples.saturating_mul(u64::from(replications.max(1)));
                    let bar = Progress::start(total, &counter);
                    let result = s.run_replicated(seed, samples, replications, Some(counter));
                    bar.finish();
                    let result = result?;
                    let rep = irqlab_sim::report::pps_run_report(&s, seed, &result);
                    return emit_run(&rep, json.as_deref(), plot.as_deref(), &scenario, "pps");
                }
            };
            let seed = seed.unwrap_or(s.file.seed);
            let samples = samples.unwrap_or(s.file.samples);
            let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let bar = Progress::start(samples, &counter);
            let result = s.run_replicated(seed, samples, trace, replications, Some(counter));
            bar.finish();
            let result = result?;
            let rep = irqlab_sim::report::run_report(&s, seed, &result);
            let delivery = format!("{:?}", s.file.delivery).to_lowercase();
            emit_run(&rep, json.as_deref(), plot.as_deref(), &scenario, &delivery)
        }
        Command::Validate {
            experiments,
            only,
            samples,
            full,
            json,
            plot,
        } => {
            if !experiments.is_dir() {
                anyhow::bail!(
                    "no experiments directory '{}': run irqlab validate from the repository's top \
                     directory, or pass --experiments DIR",
                    experiments.display()
                );
            }
            let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let opts = ValidateOptions {
                only,
                samples,
                full,
                progress: Some(counter.clone()),
            };
            let bar = Progress::start(planned_samples(&experiments, &opts)?, &counter);
            let v = validate_dir(&experiments, &opts);
            bar.finish();
            let v = v?;
            if v.rows.is_empty() {
                anyhow::bail!(
                    "no validation row matches --only {}; row ids look like msi-ws-ioapic",
                    opts.only.as_deref().unwrap_or("")
                );
            }
            if let Some(path) = &json {
                report::write_atomic(path, report::validation_json(&v)?.as_bytes())
                    .with_context(|| "--json")?;
            }
            print(&report::validation_text(&v))?;
            if let Some(dir) = &plot {
                for f in report::plot::plot_validation(&v, dir).with_context(|| "--plot")? {
                    print(&format!("wrote {}\n", f.display()))?;
                }
            }
            Ok(if v.failed() > 0 {
                ExitCode::from(EXIT_VALIDATION_FAILED)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Host {
            interval,
            json,
            root,
        } => {
            if interval.is_some() && root != std::path::Path::new("/") {
                anyhow::bail!(
                    "--interval needs the live system: a captured tree (--root) does not change, \
                     so its rates would all be zero"
                );
            }
            let inv = irqlab_host::inventory::collect(&root, interval)?;
            if let Some(path) = &json {
                report::write_atomic(path, report::inventory_json(&inv)?.as_bytes())
                    .with_context(|| "--json")?;
            }
            print(&report::inventory_text(&inv))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plot { results, out } => {
            let mut merged: Option<irqlab_stats::results::RunReport> = None;
            let many = results.len() > 1;
            for path in &results {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let mut r: irqlab_stats::results::RunReport = serde_json::from_str(&text)
                    .with_context(|| {
                        format!(
                            "{} is not a run result (write one with irqlab sim --json or \
                             irqlab measure timer --json)",
                            path.display()
                        )
                    })?;
                if r.histograms.is_empty() {
                    anyhow::bail!(
                        "{} has no histograms to plot (it was written by an older irqlab)",
                        path.display()
                    );
                }
                if many {
                    let stem = path
                        .file_stem()
                        .map_or("run".into(), |s| s.to_string_lossy().into_owned());
                    for h in &mut r.histograms {
                        h.metric = format!("{stem}: {}", h.metric);
                    }
                }
                match &mut merged {
                    None => merged = Some(r),
                    Some(m) => m.histograms.extend(r.histograms),
                }
            }
            let mut r = merged.expect("at least one file");
            if many {
                r.title = "Comparison".into();
            }
            let name = if many {
                "comparison".to_string()
            } else {
                results[0]
                    .file_stem()
                    .map_or("run".into(), |s| s.to_string_lossy().into_owned())
            };
            for f in report::plot::plot_run(&r, &out, &name).with_context(|| "--out")? {
                print(&format!("wrote {}\n", f.display()))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Measure(Measure::Timer {
            cpus,
            priority,
            interval_us,
            duration,
            loops,
            break_us,
            load,
            no_trace,
            buffer_kb,
            json,
            histogram_out,
            histogram_max_us,
            plot,
        }) => {
            use irqlab_host::timer::{self, Stop, TimerOptions};
            let cpus = match cpus {
                Some(list) => {
                    timer::parse_cpu_list(&list).map_err(|e| anyhow::anyhow!("--cpus: {e}"))?
                }
                None => timer::online_cpus()?,
            };
            let stop_after = match (duration, loops) {
                (Some(d), _) => Stop::Duration(d),
                (None, Some(n)) => Stop::Loops(n),
                (None, None) => Stop::UntilStopped,
            };
            let mut opts = TimerOptions::new(cpus, stop_after);
            opts.priority = priority;
            opts.interval = std::time::Duration::from_micros(interval_us);
            opts.break_us = break_us;
            let m = irqlab_host::timer_report::MeasureTimer {
                timer: opts,
                trace: !no_trace,
                buffer_kb,
                load,
            };
            for (flag, path) in [("--json", &json), ("--histogram-out", &histogram_out)] {
                if let Some(p) = path {
                    report::check_writable(p).with_context(|| flag)?;
                }
            }
            let stop = irqlab_host::signals::stop_flag().context("installing signal handlers")?;
            let mut live = LiveLines::new();
            let measured = irqlab_host::timer_report::run(&m, &stop, &mut |s| live.show(s))?;
            live.finish();
            // The result first: a file that cannot be written must not hide it.
            print(&report::run_text(&measured.report))?;
            if let Some(path) = &json {
                report::write_atomic(path, report::run_json(&measured.report)?.as_bytes())
                    .with_context(|| "--json")?;
            }
            if let Some(path) = &histogram_out {
                let hists: Vec<&irqlab_stats::LatencyHistogram> =
                    measured.thread_histograms.iter().map(|(_, h)| h).collect();
                let text = timer::cyclictest_histogram(&hists, histogram_max_us);
                report::write_atomic(path, text.as_bytes()).with_context(|| "--histogram-out")?;
            }
            if let Some(dir) = &plot {
                for f in report::plot::plot_run(&measured.report, dir, "timer")
                    .with_context(|| "--plot")?
                {
                    print(&format!("wrote {}\n", f.display()))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Measure(Measure::Irqs {
            duration,
            buffer_kb,
            json,
        }) => {
            if let Some(p) = &json {
                report::check_writable(p).with_context(|| "--json")?;
            }
            let stop = irqlab_host::signals::stop_flag().context("installing signal handlers")?;
            let opts = irqlab_host::irqs::IrqsOptions {
                duration,
                buffer_kb,
            };
            let r = irqlab_host::irqs::measure_irqs(&opts, &stop)?;
            print(&report::irq_activity_text(&r))?;
            if let Some(path) = &json {
                report::write_atomic(path, report::irq_activity_json(&r)?.as_bytes())
                    .with_context(|| "--json")?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
