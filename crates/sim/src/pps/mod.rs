//! Seed 004: a 1998 PC (AMD K6/233, Intel 430TX + PIIX4) running FreeBSD-current of July 1998,
//! timestamping a GPS pulse-per-second on the parallel port's interrupt (IRQ 7) against a
//! 90.112 MHz counter on a PCI card that also latches the pulse itself.
//!
//! This module reads the seed's scenario and kernel files (the platform file is of the one
//! schema, [`PlatformFile`]) and assembles the PC as an instance of the one machine
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
use crate::scenario::{Configured, NamesParts, PlatformFile, ScenarioError};
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The `model` key that marks a scenario file as this model's.
pub const MODEL: &str = "isa-pps";

// ---- the kernel ---------------------------------------------------------------------------

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BsdKernel {
    pub name: String,
    pub description: String,
    pub hz: u32,
    /// `pseudo-device sl`: tty_imask and net_imask merged.
    pub slip: bool,
    pub stub: crate::kernel::freebsd::StubCosts,
    pub clock: ClockCosts,
    pub statclock: StatclockCosts,
    pub pps: PpsCosts,
    /// `splXXX()` / `splx()` without a pending interrupt.
    pub spl_instructions: u32,
    /// `[range.*]`: the plausible ranges of this file's estimates (`scenario::ranges`), read
    /// from the text by `validate --uncertainty`; the model never sees them.
    #[serde(default, skip_serializing)]
    pub range: Option<toml::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockCosts {
    /// `clkintr` + `hardclock` (timecounter, timeouts, statistics), instructions.
    pub hardclock_instructions: u32,
    /// Reads of the counter card per tick (`tco_forward` and the PPS poll).
    pub timecounter_reads: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatclockCosts {
    pub statclock_instructions: u32,
}

/// `ppcintr` -> `ppb_intr` -> `ppsintr` -> `nanotime` -> `xrpu_get_timecount`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PpsCosts {
    pub before_read_instructions: u32,
    pub after_read_instructions: u32,
}

// ---- the scenario ---------------------------------------------------------------------------

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PpsFile {
    pub title: String,
    /// Always [`MODEL`].
    pub model: String,
    pub platform: String,
    pub kernel: String,
    pub samples: u64,
    pub seed: u64,
    pub pps: PpsSource,
    #[serde(default)]
    pub device: Vec<IsaPcDevice>,
    pub phase: Vec<Phase>,
    /// `[range.*]`: the plausible ranges of this file's estimates (`scenario::ranges`), read
    /// from the text by `validate --uncertainty`; the model never sees them.
    #[serde(default, skip_serializing)]
    pub range: Option<toml::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PpsSource {
    /// The pulse's wander against the GPS second (1 sigma).
    pub jitter_ns: f64,
    pub pulse_width_ms: f64,
    /// The interrupt class of the parallel port's line (`tty` in 1998 configs).
    pub class: IntrClass,
}

/// Another interrupting device.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsaPcDevice {
    pub name: String,
    pub irq: u8,
    /// `tty`, `net` or `bio`.
    pub class: IntrClass,
    /// `pci` (level-triggered via PIRQ), `isa8` or `isa16` (edge-triggered).
    pub bus: DeviceBus,
    pub handler_instructions: u32,
    /// Register accesses the handler makes (the first clears the interrupt).
    pub register_accesses: u32,
    /// Programmed-I/O data words per interrupt (an NE2000's packet copy).
    #[serde(default)]
    pub data_words: u32,
    /// A PCI card's register read: PCI clocks from the address phase until it claims the
    /// cycle (DEVSEL#), then until its data is on the bus. An ISA card's timing is its bus's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_clocks: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_clocks: Option<u32>,
}

/// One stretch of the run's workload.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    pub name: String,
    /// The last sample (1-based, inclusive) taken under this workload.
    pub until_sample: u64,
    /// Fraction of the time the CPU runs processes rather than idling in HLT.
    pub busy_fraction: f64,
    /// Mean length of a busy stretch, ms of CPU time.
    pub busy_ms: f64,
    /// Chance that a cache line the interrupt path needs was evicted since its last use.
    pub cold_fraction: f64,
    /// Interrupts per second, by device name.
    #[serde(default)]
    pub rates: BTreeMap<String, f64>,
    #[serde(default)]
    pub section: Vec<Section>,
}

/// Sections process code runs with interrupts held off.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// `tty`, `net`, `bio` (spltty, splimp, splbio), `high` (splhigh/splclock) or `cli`.
    pub mask: SectionMask,
    /// How many per second of busy CPU time.
    pub per_busy_s: f64,
    /// Mean length (exponential), us.
    pub mean_us: f64,
}

/// A loaded, overridden and checked seed-004 scenario.
pub type PpsScenario = Configured<PpsFile, PlatformFile, BsdKernel>;

impl NamesParts for PpsFile {
    fn platform_name(&self) -> &str {
        &self.platform
    }
    fn kernel_name(&self) -> &str {
        &self.kernel
    }
}

/// Is this TOML text a seed-004 (`model = "isa-pps"`) scenario?
pub fn is_pps_scenario(text: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get("model").and_then(|m| m.as_str().map(|m| m == MODEL)))
        .unwrap_or(false)
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct PpsResult {
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
}

impl PpsResult {
    /// Add another replication's result: histograms and counters add up; the samples and the
    /// series are this one's (the first replication's).
    fn absorb(&mut self, o: PpsResult) {
        self.latency.merge(&o.latency);
        for (a, b) in self.phases.iter_mut().zip(&o.phases) {
            a.1.merge(&b.1);
        }
        for (a, b) in self.counters.iter_mut().zip(&o.counters) {
            debug_assert_eq!(a.name, b.name, "every replication counts the same things");
            a.value += b.value;
        }
    }

    /// In the neutral result: the latency of every sample, then of each workload phase, all in
    /// the counter's counts.
    pub fn into_result(self) -> RunResult {
        let quantum_ns = Some(self.count_ns);
        let mut metrics = vec![Measured {
            name: "pps_latency".into(),
            description: "pulse edge (the card's latch) to the driver's timestamp read reaching \
                          the card, in 90.112 MHz counts"
                .into(),
            phase: None,
            histogram: self.latency,
            quantum_ns,
        }];
        metrics.extend(self.phases.into_iter().map(|(name, h)| Measured {
            name: "pps_latency".into(),
            description: format!("the samples taken during the '{name}' workload"),
            phase: Some(name),
            histogram: h,
            quantum_ns,
        }));
        RunResult {
            metrics,
            counters: self.counters,
            series: Some(("pps_latency".into(), self.series)),
            trace: Vec::new(),
            counts: Some(Counts {
                metric: "pps_latency".into(),
                values: self.counts,
                count_ns: self.count_ns,
            }),
        }
    }
}

impl PpsScenario {
    pub fn load(
        path: impl AsRef<Path>,
        overrides: &[String],
    ) -> Result<PpsScenario, ScenarioError> {
        // A thin generic shell over a non-generic body: the body (file parsing, deserialization)
        // is compiled once, in this crate, rather than again in every crate that calls it.
        PpsScenario::load_path(path.as_ref(), overrides)
    }

    fn load_path(path: &Path, overrides: &[String]) -> Result<PpsScenario, ScenarioError> {
        let s = PpsScenario::read_all(path, overrides)?;
        s.check()?;
        Ok(s)
    }

    /// Refuse what the hardware or the kernel cannot have, and values the model cannot run.
    fn check(&self) -> Result<(), ScenarioError> {
        let f = &self.file;
        if f.model != MODEL {
            return Err(self.invalid("model", format!("must be \"{MODEL}\" for this file")));
        }
        if f.samples == 0 || f.samples > 1_000_000 {
            return Err(self.invalid(
                "samples",
                format!(
                    "{} pulses: one pulse is one second of simulated time; give 1 to 1000000",
                    f.samples
                ),
            ));
        }
        self.check_cpu()?;
        for (key, v, lo, hi, unit) in [
            ("pps.jitter_ns", f.pps.jitter_ns, 0.0, 1e6, "ns"),
            (
                "pps.pulse_width_ms",
                f.pps.pulse_width_ms,
                0.001,
                900.0,
                "ms",
            ),
        ] {
            self.in_range(key, v, lo, hi, unit)?;
        }
        // The board's devices, read from their parts (each checked there).
        let board = assemble::BoardParts::read(self)?;
        // The parts and links with the cards in them, checked now rather than at the run.
        assemble::topology(self, &board)?;
        if !(1..=1000).contains(&self.kernel.hz) {
            return Err(self.invalid("kernel.hz", "the clock interrupt rate must be 1 to 1000 Hz"));
        }
        // IRQs: 0 is the 8254, 2 the cascade, 8 the RTC; the rest must be unique.
        let mut used: BTreeMap<u8, String> = BTreeMap::new();
        used.insert(2, "the 8259 cascade".to_string());
        let mut claim = |key: String, irq: u8, who: &str| -> Result<(), ScenarioError> {
            if irq > 15 {
                return Err(
                    self.invalid(&key, format!("IRQ {irq}: the 8259 pair has lines 0 to 15"))
                );
            }
            if let Some(other) = used.insert(irq, who.to_string()) {
                return Err(self.invalid(
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
        for (i, d) in f.device.iter().enumerate() {
            claim(format!("device.{i}.irq"), d.irq, &d.name)?;
            let pci = d.bus == DeviceBus::Pci;
            for (key, v) in [
                ("decode_clocks", d.decode_clocks),
                ("data_clocks", d.data_clocks),
            ] {
                match (pci, v) {
                    (true, None) => {
                        return Err(self.invalid(
                            &format!("device.{i}"),
                            format!(
                                "{} is a PCI card: give `{key}`, its register read's PCI clocks",
                                d.name
                            ),
                        ))
                    }
                    (false, Some(_)) => {
                        return Err(self.invalid(
                            &format!("device.{i}.{key}"),
                            format!(
                                "{} is an ISA card: its timing is the ISA bus's (the platform's \
                                 isa-bus link); `{key}` is for PCI cards",
                                d.name
                            ),
                        ))
                    }
                    (true, Some(c)) => self.in_range(
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
                return Err(self.invalid(
                    &format!("device.{i}.register_accesses"),
                    "a handler reads its device at least once (to clear the interrupt)",
                ));
            }
        }
        if f.phase.is_empty() {
            return Err(self.invalid("phase", "give at least one [[phase]]"));
        }
        let mut last = 0;
        for (i, ph) in f.phase.iter().enumerate() {
            let key = |k: &str| format!("phase.{i}.{k}");
            if ph.until_sample <= last {
                return Err(self.invalid(
                    &key("until_sample"),
                    format!(
                        "{} does not come after the previous phase's {last}: phases run in \
                         sample order",
                        ph.until_sample
                    ),
                ));
            }
            last = ph.until_sample;
            self.in_range(&key("busy_fraction"), ph.busy_fraction, 0.0, 1.0, "")?;
            self.in_range(&key("busy_ms"), ph.busy_ms, 0.001, 1e5, "ms")?;
            self.in_range(&key("cold_fraction"), ph.cold_fraction, 0.0, 1.0, "")?;
            for (name, rate) in &ph.rates {
                if !f.device.iter().any(|d| &d.name == name) {
                    let names: Vec<&str> = f.device.iter().map(|d| d.name.as_str()).collect();
                    return Err(self.invalid(
                        &format!("phase.{i}.rates.{name}"),
                        format!("no device '{name}'; the devices are: {}", names.join(", ")),
                    ));
                }
                self.in_range(&format!("phase.{i}.rates.{name}"), *rate, 0.0, 1e5, "per s")?;
            }
            for (j, s) in ph.section.iter().enumerate() {
                let key = |k: &str| format!("phase.{i}.section.{j}.{k}");
                self.in_range(&key("per_busy_s"), s.per_busy_s, 0.0, 1e6, "per s")?;
                self.in_range(&key("mean_us"), s.mean_us, 0.0, 1e5, "us")?;
            }
        }
        if last < f.samples {
            return Err(self.invalid(
                &format!("phase.{}.until_sample", f.phase.len() - 1),
                format!(
                    "the last phase ends at sample {last}, before the run's {} samples: extend \
                     its until_sample",
                    f.samples
                ),
            ));
        }
        Ok(())
    }

    /// Run `samples` pulses with `seed`.
    pub fn run(&self, seed: u64, samples: u64) -> Result<PpsResult, ScenarioError> {
        assemble::run(self, seed, samples, None)
    }

    /// Independent replications on all cores, merged; the series and the samples are the first
    /// replication's. `progress` counts pulses timestamped, across replications.
    pub fn run_replicated(
        &self,
        seed: u64,
        samples: u64,
        replications: u32,
        progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<PpsResult, ScenarioError> {
        let merged = crate::scenario::replicate(
            seed,
            replications,
            |_, s| assemble::run(self, s, samples, progress.clone()).map(Some),
            PpsResult::absorb,
        )?;
        Ok(merged.expect("at least one replication"))
    }
}

/// FreeBSD's interrupt classes (`tty_imask`, `net_imask`, `bio_imask` of `isa.c`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntrClass {
    Tty,
    Net,
    Bio,
}

impl IntrClass {
    /// Its index in the kernel's class masks.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The bus a device's registers sit on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceBus {
    /// PCI: level-triggered through a PIRQ line.
    Pci,
    /// 8-bit ISA I/O, edge-triggered.
    Isa8,
    /// 16-bit ISA I/O, edge-triggered.
    Isa16,
}

/// What a section of process code holds off.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SectionMask {
    /// `spltty()`, `splimp()`, `splbio()`: the class's interrupts.
    Tty,
    Net,
    Bio,
    /// `splhigh()` / `splclock()`: every hardware interrupt.
    High,
    /// `cli`: the processor's interrupt flag.
    Cli,
}
