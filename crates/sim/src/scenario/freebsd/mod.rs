//! FreeBSD's model (a kernel file with `family = "freebsd"`), built for seed 004: a 1998 PC (AMD K6/233, Intel 430TX + PIIX4) running FreeBSD-current of July 1998,
//! timestamping a GPS pulse-per-second on the parallel port's interrupt (IRQ 7) against a
//! 90.112 MHz counter on a PCI card that also latches the pulse itself.
//!
//! A scenario whose kernel's `family` is `freebsd` runs here: this module checks it (its
//! devices are adapter cards, `kind = "card"`; its probe the GPS pulse, `[probe] kind = "pps"`;
//! its workload in `[[workload.phase]]`s) and assembles the PC as an instance of the one machine
//! ([`crate::machine::Machine`], `assemble.rs`): its buses are links of the topology (`clocked`
//! crossings and the PIIX4's `isa-bus`), its board devices are parts of the platform read into
//! devices (`devices/`), FreeBSD's paths are programs of the step language
//! (`kernel/freebsd.rs`, `kernel/spl.rs`), the load is the workload generator in phases, and the
//! measurement is a probe (`probes/pps.rs`). What it models:
//!
//! - **Buses with clocks.** A CPU port access crosses the host bridge to PCI (next PCI clock
//!   edge, then a few clocks), and the PIIX4 runs it as an ISA cycle that starts on an ISA clock
//!   edge (SYSCLK = PCICLK/4) and lasts 6 SYSCLKs for an 8-bit access. The interrupt
//!   acknowledge goes the same way. A PCI memory read to the counter card samples the counter
//!   when the card decodes it. The quantum of the latency histogram comes from these edges.
//! - **FreeBSD 1998's interrupt path** (`sys/i386/isa/icu_vector.s`, `ipl_funcs.c`, `icu_ipl.s`):
//!   the `INTR` stub masks the IRQ in the IMR and sends a non-specific EOI (two ISA writes),
//!   tests `cpl`, and either defers (sets `ipending`, leaves the IRQ masked, `iret`) or raises
//!   `cpl` by the IRQ's class mask, enables interrupts and calls the handler; afterwards it
//!   unmasks the IRQ and goes through `doreti`, which replays deferred IRQs via `Xresume`.
//!   `splx` replays them via `splz`, which re-enters the stub through a software `int`.
//! - **Interrupt classes**: the clock (IRQ 0, `clk_imask` = every hardware interrupt), the RTC
//!   statistics clock (IRQ 8, blocks none), and the scenario's devices in tty, net or bio class;
//!   with `pseudo-device sl` the tty and net masks are merged (`isa.c`).
//! - **The workload** in phases that follow the sample numbers of the seed: device interrupt
//!   rates, how busy the CPU is, the spl and `cli` sections process code takes, and how cold the
//!   caches are when an interrupt comes.
//!
//! Every second is simulated event by event: the clock and RTC interrupts, the devices and the
//! process work go on between the pulses, so the phase of each against the pulse is the one the
//! clocks give, not a fresh draw.

mod assemble;

use crate::result::{Count, Counts, Measured, RunResult};
use crate::scenario::files::{Device, DeviceBus, ProbeKind};
use crate::scenario::{Scenario, ScenarioError};
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;
use std::collections::BTreeMap;

/// What one replication's probe measured, in the probe's terms.
pub(crate) struct PpsRun {
    /// Pulse to timestamp, in ns (the counter's counts converted at its nominal rate).
    pub latency: LatencyHistogram,
    /// The same per workload phase, in the scenario's order.
    pub phases: Vec<(String, LatencyHistogram)>,
    /// Every sample in counter counts, in order (seed 004 has 4400).
    pub counts: Vec<u64>,
    /// Nanoseconds per count.
    pub count_ns: f64,
    pub series: SampleSeries,
    pub counters: Vec<Count>,
    /// The first ISA cycles on the parallel port's bus, if asked for.
    pub trace: Vec<crate::probes::analyzer::TraceRecord>,
}

impl PpsRun {
    /// In the neutral result: the latency of every sample, then of each workload phase, all in
    /// the counter's counts.
    fn into_result(self) -> RunResult {
        let quantum_ns = Some(self.count_ns);
        let metric = ProbeKind::Pps.metric();
        let mut metrics = vec![Measured {
            name: metric.into(),
            description: "pulse edge (the card's latch) to the driver's timestamp read reaching \
                          the card, in 90.112 MHz counts"
                .into(),
            phase: None,
            histogram: self.latency,
            quantum_ns,
        }];
        metrics.extend(self.phases.into_iter().map(|(name, h)| Measured {
            name: metric.into(),
            description: format!("the samples taken during the '{name}' workload"),
            phase: Some(name),
            histogram: h,
            quantum_ns,
        }));
        RunResult {
            metrics,
            counters: self.counters,
            series: Some((metric.into(), self.series)),
            trace: self.trace,
            counts: Some(Counts {
                metric: metric.into(),
                values: self.counts,
                count_ns: self.count_ns,
            }),
        }
    }
}

/// The scenario's adapter cards (under FreeBSD every device is one: [`check`]).
pub(crate) fn cards(s: &Scenario) -> Vec<&crate::scenario::files::CardSection> {
    s.file.device.iter().filter_map(Device::card).collect()
}

/// Refuse what the hardware or the kernel cannot have, and values the model cannot run.
pub(crate) fn check(s: &Scenario) -> Result<(), ScenarioError> {
    let f = &s.file;
    if f.delivery != crate::kernel::Delivery::Xtpic {
        return Err(s.invalid(
            "delivery",
            "FreeBSD 1998's uniprocessor kernel programs the 8259 pair alone: give \"xtpic\"",
        ));
    }
    if let Some(i) = f.device.iter().position(|d| d.card().is_none()) {
        return Err(s.invalid(
            &format!("device.{i}.kind"),
            "FreeBSD's model runs adapter cards on the 8259's lines (kind = \"card\"); a PCIe \
             function needs a Linux kernel",
        ));
    }
    if f.probe.is_none() {
        return Err(s.invalid(
            "probe",
            "FreeBSD's model measures with the GPS pulse on the parallel port: give [probe] \
             kind = \"pps\"",
        ));
    }
    for (key, given) in [
        ("cyclictest", f.cyclictest.is_some()),
        ("duration_ms", f.duration_ms > 0.0),
        ("warmup_samples", f.warmup_samples > 0),
        ("cpus", f.cpus > 1),
    ] {
        if given {
            return Err(s.invalid(
                key,
                "FreeBSD's model runs one core, timed pulse by pulse: it has no such setting",
            ));
        }
    }
    if f.samples == 0 || f.samples > 1_000_000 {
        return Err(s.invalid(
            "samples",
            format!(
                "{} pulses: one pulse is one second of simulated time; give 1 to 1000000",
                f.samples
            ),
        ));
    }
    s.check_cpu()?;
    let probe = f.probe.as_ref().expect("checked above");
    let k = s.kernel.freebsd();
    for (key, v, lo, hi, unit) in [
        ("probe.jitter_ns", probe.jitter_ns, 0.0, 1e6, "ns"),
        (
            "probe.pulse_width_ms",
            probe.pulse_width_ms,
            0.001,
            900.0,
            "ms",
        ),
    ] {
        s.in_range(key, v, lo, hi, unit)?;
    }
    // A window shorter than what a sample remembers (a section or a handler under way, tens of
    // microseconds; a busy stretch's lengthening by its sections) would bias the samples.
    if probe.window_ms != 0.0 {
        s.in_range("probe.window_ms", probe.window_ms, 1.0, 900.0, "ms")?;
    }
    // The board's devices, read from their parts (each checked there).
    let board = assemble::BoardParts::read(s)?;
    // The parts and links with the cards in them, checked now rather than at the run.
    assemble::topology(s, &board)?;
    if !(1..=1000).contains(&k.hz) {
        return Err(s.invalid("kernel.hz", "the clock interrupt rate must be 1 to 1000 Hz"));
    }
    // IRQs: 0 is the 8254, 2 the cascade, 8 the RTC; the rest must be unique.
    let mut used: BTreeMap<u8, String> = BTreeMap::new();
    used.insert(2, "the 8259 cascade".to_string());
    let mut claim = |key: String, irq: u8, who: &str| -> Result<(), ScenarioError> {
        if irq > 15 {
            return Err(s.invalid(&key, format!("IRQ {irq}: the 8259 pair has lines 0 to 15")));
        }
        if let Some(other) = used.insert(irq, who.to_string()) {
            return Err(s.invalid(
                &key,
                format!(
                    "IRQ {irq} is already {other}'s; this model does not share lines: \
                     choose a free IRQ"
                ),
            ));
        }
        Ok(())
    };
    for (name, irq, who) in [
        (&board.pit.name, board.pit.irq, "the 8254 clock"),
        (&board.rtc.name, board.rtc.irq, "the RTC"),
        (&board.lpt.name, board.lpt.irq, "the parallel port"),
    ] {
        claim(format!("platform.part.{name}.irq"), irq, who)?;
    }
    let cards = cards(s);
    for (i, d) in cards.iter().enumerate() {
        claim(format!("device.{i}.irq"), d.irq, &d.name)?;
        let pci = d.bus == DeviceBus::Pci;
        for (key, v) in [
            ("decode_clocks", d.decode_clocks),
            ("data_clocks", d.data_clocks),
        ] {
            match (pci, v) {
                (true, None) => {
                    return Err(s.invalid(
                        &format!("device.{i}"),
                        format!(
                            "{} is a PCI card: give `{key}`, its register read's PCI clocks",
                            d.name
                        ),
                    ))
                }
                (false, Some(_)) => {
                    return Err(s.invalid(
                        &format!("device.{i}.{key}"),
                        format!(
                            "{} is an ISA card: its timing is the ISA bus's (the platform's \
                             isa-bus link); `{key}` is for PCI cards",
                            d.name
                        ),
                    ))
                }
                (true, Some(c)) => s.in_range(
                    &format!("device.{i}.{key}"),
                    f64::from(c),
                    0.0,
                    1e3,
                    "PCI clocks",
                )?,
                (false, None) => {}
            }
        }
        if d.register_accesses == 0 {
            return Err(s.invalid(
                &format!("device.{i}.register_accesses"),
                "a handler reads its device at least once (to clear the interrupt)",
            ));
        }
    }
    if f.workload.as_ref().is_none_or(|w| w.phase.is_empty()) {
        return Err(s.invalid(
            "workload",
            "give at least one [[workload.phase]]: FreeBSD's model follows the load by sample \
             number",
        ));
    }
    let rated: Vec<(&str, Option<&str>)> = cards.iter().map(|d| (d.name.as_str(), None)).collect();
    s.check_workload(&rated)
}

/// Run `samples` pulses with `seed` in `replications`, merged: the samples are split among
/// the replications as every model splits them, and each replication runs the workload's
/// phases over its share in proportion (a phase that ends at sample 1100 of 4400 ends at 275
/// of a quarter's 1100). The series and the samples are the first replication's. `progress`
/// counts pulses timestamped, across replications.
pub(crate) fn run_replicated(
    s: &Scenario,
    seed: u64,
    samples: u64,
    trace: usize,
    replications: u32,
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
) -> Result<RunResult, ScenarioError> {
    let share = |i: u64| crate::scenario::share(samples, replications, i);
    let merged = crate::scenario::replicate(
        seed,
        replications,
        |i, seed| {
            if share(i) == 0 {
                return Ok(None);
            }
            // The first replication keeps the trace.
            let trace = if i == 0 { trace } else { 0 };
            let run = assemble::run(s, seed, share(i), samples, trace, progress.clone())?;
            Ok(Some(run.into_result()))
        },
        RunResult::absorb,
    )?;
    Ok(merged.expect("at least one sample"))
}
