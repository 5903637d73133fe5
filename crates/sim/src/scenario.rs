//! Scenarios: TOML files that describe a platform, a kernel, the devices and the run, turned into
//! a built [`Machine`].
//!
//! A scenario names its platform file (`platforms/`) and kernel file (`kernels/`) by path,
//! relative to itself. `--set key=value` overrides address the combined document: scenario keys
//! at the top (`delivery`, `device.0.read_turnaround_ns`), the platform under `platform.`
//! (`platform.cpu.clock_hz`) and the kernel under `kernel.` (`kernel.instructions.do_irq`).
//! Unknown keys and wrong types are refused with the file, line and column, or the flag.

use crate::devices::exerciser::{
    DmaStream, Exerciser, ExerciserConfig, Generator, RoundTripConfig,
};
use crate::engine::{RngStreams, SimDuration};
use crate::hw::cpu::CpuTiming;
use crate::hw::fabric::{Fabric, Fsb, FsbTiming};
use crate::hw::ich::{Ich, IchTiming, PIRQ_ROUT_DISABLE};
use crate::hw::ioapic::RedirectionEntry;
use crate::hw::lapic::LocalApic;
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::{Bdf, IntxPin, Link, LinkConfig, LinkGen, LinkWidth};
use crate::kernel::costs::{IdleCosts, KernelInstructions, TickCosts};
use crate::kernel::cpuidle::{Cpuidle, IdleState};
use crate::kernel::Tick;
use crate::kernel::{Action, Chip, Delivery, DriverKind, ExerciserDriver, Flow, Isr, Kernel};
use crate::machine::{Counters, Cpu, Machine, Smi};
use crate::probes::analyzer::{Analyzer, LatencyProbe, TraceRecord};
use crate::result::{Count, Measured, RunResult};
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;

/// Points of a run's sample series: exact up to this many samples, min/max per stretch beyond.
pub const SERIES_POINTS: usize = 4096;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

// ---- file formats -------------------------------------------------------------------------

/// `platforms/*.toml`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformFile {
    pub name: String,
    pub description: String,
    pub cpu: CpuSection,
    pub fsb: FsbSection,
    pub mch: MchSection,
    pub dmi: LinkSection,
    pub ich: IchSection,
    /// System Management Interrupts; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smi: Option<SmiSection>,
}

/// System Management Interrupts: Poisson arrivals, each holding the cores for `duration_us`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmiSection {
    /// SMIs per second (0: none).
    pub rate_per_s: f64,
    pub duration_us: f64,
}

/// One idle state of the core: the kernel's table entry and the hardware's wake time.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleStateSection {
    pub name: String,
    /// The driver's exit latency and target residency (what the governor decides with).
    pub exit_latency_us: f64,
    pub target_residency_us: f64,
    /// The hardware's time to leave the state on an interrupt.
    pub wake_ns: f64,
    /// `poll_idle`: spin with interrupts on instead of entering a hardware state.
    #[serde(default)]
    pub polls: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSection {
    pub clock_hz: f64,
    pub cycles_per_instruction: f64,
    pub interrupt_vectoring_cycles: f64,
    pub iret_cycles: f64,
    pub lapic_access_cycles: f64,
    pub halt_exit_ns: f64,
    pub apic_id: u8,
    /// Idle states, shallowest first, for a kernel with cpuidle (`[idle]` in its file). Empty:
    /// HLT with `halt_exit_ns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_states: Vec<IdleStateSection>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsbSection {
    pub bus_clock_hz: f64,
    pub request_phase_clocks: u32,
    pub transaction_clocks: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MchSection {
    /// Requester ID the root complex puts on CPU-initiated TLPs.
    pub requester_id: String,
    pub crossing_ns: f64,
    /// PHY + data-link pipeline of a root port link (both ends), per direction.
    pub root_port_pipeline_ns: f64,
    /// From a device's DMA read request reaching the root complex to its data leaving it; only
    /// scenarios with DMA reads need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_read_ns: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    pub generation: u8,
    pub width: u32,
    pub pipeline_ns: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IchSection {
    pub crossing_ns: f64,
    pub internal_clock_hz: f64,
    pub legacy_io_clocks: u32,
    pub intack_clocks: u32,
    pub ioapic_access_clocks: u32,
    pub ioapic_delivery_clocks: u32,
    /// PIRQA..H routing as the BIOS left it: an 8259 IRQ number 0-15, or -1 for not routed.
    pub pirq_pic_irq: Vec<i32>,
    /// The IO-APIC input each of PIRQA..H drives (0-23).
    pub pirq_ioapic_pin: Vec<u32>,
    /// On-board functions whose interrupt shares a PIRQ line. Their drivers register at boot,
    /// before any module, so their handlers run first on the shared line.
    #[serde(default)]
    pub functions: Vec<IchFunction>,
}

/// An on-board ICH function on a shared interrupt line (a USB UHCI controller, say).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IchFunction {
    pub name: String,
    /// The PIRQ line its INTx is routed to, "A".."H".
    pub pirq: String,
    /// The I/O port its driver reads to see whether an interrupt is its own.
    pub status_port: u16,
    /// Its ISR's instructions besides that read.
    pub isr_instructions: u16,
}

/// `assign_irq_vector`: hands out vectors a step apart.
struct VectorAllocator {
    next: u32,
    step: u32,
}

impl VectorAllocator {
    fn alloc(&mut self, forced: Option<u32>) -> u32 {
        forced.unwrap_or_else(|| {
            let v = self.next;
            self.next += self.step;
            v
        })
    }
}

/// `kernels/*.toml`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFile {
    pub name: String,
    pub description: String,
    /// First vector `assign_irq_vector` hands out, and its step (spreads priority classes).
    pub first_device_vector: u32,
    pub vector_step: u32,
    pub instructions: KernelInstructions,
    /// The local timer tick; absent or `hz = 0`: not modelled.
    #[serde(default)]
    pub tick: Option<TickCosts>,
    /// The cpuidle idle path; absent: the 2.6 `sti; hlt` idle loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleCosts>,
}

/// A scenario file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub title: String,
    pub platform: String,
    pub kernel: String,
    pub delivery: Delivery,
    pub samples: u64,
    pub seed: u64,
    /// Interrupts run before the recorded samples, in every replication, and not recorded.
    #[serde(default)]
    pub warmup_samples: u64,
    pub device: Vec<DeviceSection>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSection {
    pub name: String,
    pub bdf: String,
    pub link_generation: u8,
    pub link_width: u32,
    pub intx_pin: String,
    pub msi_capable: bool,
    /// The MSI vector: 0 lets the kernel allocate one (`assign_irq_vector`); 32-255 forces it.
    #[serde(default)]
    pub msi_vector: u32,
    pub reg_bar: u64,
    pub reg_bar_size: u64,
    pub status_offset: u64,
    pub clear_offset: u64,
    pub pending_flag: u32,
    pub signature_bar: u64,
    pub signature_bar_size: u64,
    pub isr_signature_offset: u64,
    pub tasklet_signature_offset: u64,
    pub read_turnaround_ns: f64,
    pub deassert_delay_ns: f64,
    /// "poisson" or "periodic", or "none" for a card that only shares the line.
    pub interrupts: String,
    pub interval_us: f64,
    /// The card's oscillator against its nominal frequency, in parts per million: its interval
    /// and its counter run this much fast (+) or slow (-) against the host's clocks.
    #[serde(default)]
    pub clock_ppm: f64,
    /// Count the interval from the last interrupt ("trigger", the default) or from the host's
    /// answer to it ("service": the card raises the next one a gap after the answer arrived).
    #[serde(default = "default_interval_from")]
    pub interval_from: String,
    /// The driver: "seed000" (Figures 3-5, the default), "round-trip" (seed 002: acknowledge
    /// write, counter read) or "generic" (status reads and a clear write).
    #[serde(default = "default_driver")]
    pub driver: String,
    /// The driver's ISR instructions besides its device accesses ("round-trip": filing the
    /// count; "generic": its work).
    #[serde(default)]
    pub isr_instructions: u32,
    /// Status register reads of a "generic" driver's ISR.
    #[serde(default)]
    pub isr_status_reads: u8,
    /// The card's PCIe core: from its logic to the link and back (0 when its turnarounds
    /// include it).
    #[serde(default)]
    pub core_tx_ns: f64,
    #[serde(default)]
    pub core_rx_ns: f64,
    /// A counter that times each interrupt to the ISR's write (seed 002's instrument).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip: Option<RoundTripSection>,
    /// PCIe switches between the card and its root port, and each one's port-to-port latency.
    #[serde(default)]
    pub switches: u8,
    #[serde(default)]
    pub switch_latency_ns: f64,
    /// Bit error rate of each link segment, and the receiver's NAK latency (the Ack/Nak
    /// transmission latency limit) that a corrupted TLP waits before its replay.
    #[serde(default)]
    pub bit_error_rate: f64,
    #[serde(default)]
    pub ack_nak_latency_ns: f64,
    /// DMA traffic besides the interrupts: writes to host memory and reads from it, each as a
    /// Poisson stream of requests of one size at a mean data rate (0: none).
    #[serde(default)]
    pub dma_write_mb_per_s: f64,
    #[serde(default = "default_dma_bytes")]
    pub dma_write_bytes: u32,
    #[serde(default)]
    pub dma_read_mb_per_s: f64,
    #[serde(default = "default_dma_bytes")]
    pub dma_read_bytes: u32,
}

/// Seed 002's counter.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundTripSection {
    pub counter_hz: f64,
    /// From the write leaving the card's PCIe core to the register that stops the counter.
    pub register_access_ns: f64,
}

fn default_interval_from() -> String {
    "trigger".into()
}
fn default_driver() -> String {
    "seed000".into()
}
fn default_dma_bytes() -> u32 {
    256
}

// ---- errors -------------------------------------------------------------------------------

/// Where a bad value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    /// A `--set` flag.
    Flag(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { path, line, column } => {
                write!(f, "{}:{line}:{column}", path.display())
            }
            Origin::Flag(s) => write!(f, "--set {s}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A file could not be read. `named_by` says which file and key pointed at it.
    #[error("cannot read {}{}: {cause}", path.display(), named_by.as_deref().map(|n| format!(" (named by {n})")).unwrap_or_default())]
    Io {
        path: PathBuf,
        named_by: Option<String>,
        cause: std::io::Error,
    },
    #[error("{origin}: {message}")]
    Syntax { origin: Origin, message: String },
    /// An experiments directory without experiment files.
    #[error(
        "{}: no experiment files (*.toml) in this directory; pass --experiments with a directory \
         of experiment files, or leave it out to run the shipped experiments",
        dir.display()
    )]
    NoExperiments { dir: PathBuf },
    #[error("--set {flag}: {message}")]
    Override { flag: String, message: String },
    /// The run did not settle: the event limit was reached before the samples completed.
    #[error(
        "{}: the run stopped after {events} events with {completed} of {requested} samples: the \
         system never settles (an interrupt storm, or a line that stays asserted?)",
        path.display()
    )]
    Runaway {
        path: PathBuf,
        events: u64,
        completed: u64,
        requested: u64,
    },
    /// A configuration that hardware or the kernel cannot have.
    #[error("{origin}: {key}: {message}")]
    Invalid {
        origin: Origin,
        key: String,
        message: String,
    },
}

// ---- loading ------------------------------------------------------------------------------

pub(crate) fn read(path: &Path, named_by: Option<String>) -> Result<String, ScenarioError> {
    crate::shipped::read(path).map_err(|cause| ScenarioError::Io {
        path: path.to_owned(),
        named_by,
        cause,
    })
}

/// The toml crate speaks Rust types ("expected f64"); say it in the file's terms.
fn plain_types(message: &str) -> String {
    let mut m = message.to_string();
    for (rust, plain) in [
        ("f64", "a number such as 3.0e9"),
        ("u64", "a whole number 0 or more"),
        ("u32", "a whole number from 0 to 4294967295"),
        ("u16", "a whole number from 0 to 65535"),
        ("u8", "a whole number from 0 to 255"),
        ("i32", "a whole number"),
    ] {
        m = m.replace(&format!("expected {rust}"), &format!("expected {plain}"));
    }
    m
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Parse `text` (from `path`) as `T`, reporting errors with line and column.
pub fn parse_file<T: for<'de> Deserialize<'de>>(
    path: &Path,
    text: &str,
) -> Result<T, ScenarioError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        ScenarioError::Syntax {
            origin: Origin::File {
                path: path.to_owned(),
                line,
                column,
            },
            message: plain_types(e.message().trim()),
        }
    })
}

/// The position of dotted `key` (array-of-tables elements by index, `device.0.bdf`) in a TOML
/// text, for pointing at the line a bad value came from.
pub(crate) fn locate(text: &str, key: &str) -> Option<(usize, usize)> {
    use toml_edit::TableLike;
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let parts: Vec<&str> = key.split('.').collect();
    let mut table: &dyn TableLike = doc.as_table();
    let mut span = None;
    let mut i = 0;
    while i < parts.len() {
        let (k, v) = table.get_key_value(parts[i])?;
        span = k.span().or(span);
        i += 1;
        if i == parts.len() {
            break;
        }
        if let Some(aot) = v.as_array_of_tables() {
            let t = aot.get(parts[i].parse().ok()?)?;
            span = t.span().or(span);
            i += 1;
            table = t;
        } else {
            table = v.as_table_like()?;
        }
    }
    span.map(|s| line_col(text, s.start))
}

/// A scenario file with the platform and kernel files it names: parsed, with the `--set`
/// overrides applied, and with their texts kept so that an error can point at the line (or the
/// flag) a value came from. Each model's scenario is one of these ([`Scenario`],
/// [`crate::pps::PpsScenario`]); each checks its own.
#[derive(Clone, Debug)]
pub struct Configured<F, P, K> {
    pub path: PathBuf,
    pub file: F,
    pub platform_path: PathBuf,
    pub platform: P,
    pub kernel_path: PathBuf,
    pub kernel: K,
    texts: [String; 3],
    overrides: Vec<String>,
}

/// A scenario file's names for the other two documents of a run.
pub trait NamesParts {
    fn platform_name(&self) -> &str;
    fn kernel_name(&self) -> &str;
}

impl<F, P, K> Configured<F, P, K>
where
    F: NamesParts + Serialize + for<'de> Deserialize<'de>,
    P: Serialize + for<'de> Deserialize<'de>,
    K: Serialize + for<'de> Deserialize<'de>,
{
    /// Read `path` and the files it names, and apply `overrides` (`key=value` strings). The
    /// model's own checks come after.
    pub(crate) fn read_all(path: &Path, overrides: &[String]) -> Result<Self, ScenarioError> {
        let path = path.to_owned();
        let text = read(&path, None)?;
        let file: F = parse_file(&path, &text)?;
        let (platform_path, ptext, platform) =
            load_named(&path, &text, "platform", file.platform_name())?;
        let (kernel_path, ktext, kernel) = load_named(&path, &text, "kernel", file.kernel_name())?;
        let mut s = Configured {
            path,
            file,
            platform_path,
            platform,
            kernel_path,
            kernel,
            texts: [text, ptext, ktext],
            overrides: overrides.to_vec(),
        };
        if !overrides.is_empty() {
            apply_combined(&mut s.file, &mut s.platform, &mut s.kernel, overrides)?;
        }
        Ok(s)
    }

    /// Where a key's value came from: the last `--set` naming it, or its line in a file.
    pub(crate) fn origin(&self, key: &str) -> Origin {
        origin_in(
            key,
            &self.overrides,
            [&self.path, &self.platform_path, &self.kernel_path],
            &self.texts,
        )
    }

    /// A refusal of `key`'s value, naming where it came from.
    pub(crate) fn invalid(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            origin: self.origin(key),
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// A physical quantity must lie in the range the model accepts: beyond it the picosecond
    /// clock would overflow or round to nothing, and the model would mean nothing.
    pub(crate) fn in_range(
        &self,
        key: &str,
        v: f64,
        lo: f64,
        hi: f64,
        unit: &str,
    ) -> Result<(), ScenarioError> {
        if v.is_finite() && v >= lo && v <= hi {
            return Ok(());
        }
        Err(self.invalid(
            key,
            format!("{v} {unit} is outside the range this model accepts, {lo} to {hi} {unit}"),
        ))
    }
}

/// The loaded, overridden and checked configuration of one scenario of the PCIe-era model.
pub type Scenario = Configured<ScenarioFile, PlatformFile, KernelFile>;

impl NamesParts for ScenarioFile {
    fn platform_name(&self) -> &str {
        &self.platform
    }
    fn kernel_name(&self) -> &str {
        &self.kernel
    }
}

/// What one run of the machine produced, in its own terms (the mechanism tests read these); the
/// rest of irqlab reads it as a [`RunResult`] ([`Outcome::into_result`]).
#[derive(Debug)]
pub struct Outcome {
    pub isr: LatencyHistogram,
    pub tasklet: LatencyHistogram,
    /// The measured card's own round-trip counter (seed 002's instrument); empty without one.
    pub round_trip: LatencyHistogram,
    /// Does the measured card's driver schedule a tasklet (seed 000's driver)?
    pub has_tasklet: bool,
    /// The headline latency (round trip, or else ISR latency) sample by sample, bounded; from
    /// the first replication only.
    pub series: Option<(&'static str, SampleSeries)>,
    pub counters: Counters,
    pub trace: Vec<TraceRecord>,
}

impl Outcome {
    /// Add another replication's result: histograms and counters add up; the trace and the
    /// series are the first replication's, whichever side holds them.
    fn absorb(&mut self, o: Outcome) {
        self.isr.merge(&o.isr);
        self.tasklet.merge(&o.tasklet);
        self.round_trip.merge(&o.round_trip);
        self.counters.merge(&o.counters);
        if self.trace.is_empty() {
            self.trace = o.trace;
        }
        if self.series.is_none() {
            self.series = o.series;
        }
    }

    /// In the neutral result: the latencies measured (the card's own round-trip counter if it
    /// has one, the analyzer's ISR latency, the tasklet latency for a driver with a tasklet) and
    /// the counters, in the order the reports list them. `warmup`: interrupts run first and not
    /// recorded.
    pub fn into_result(self, warmup: u64) -> RunResult {
        let c = &self.counters;
        let has_tasklet = self.has_tasklet;
        let completed = self
            .tasklet
            .count()
            .max(self.round_trip.count())
            .max(if has_tasklet { 0 } else { self.isr.count() });
        let mut counters = vec![
            Count::always("interrupts_raised", c.interrupts_generated),
            Count::if_nonzero("warmup_samples_not_recorded", warmup),
            Count::always("samples_completed", completed),
        ];
        if has_tasklet {
            counters.push(Count::always(
                "samples_overlapped_dropped",
                c.overlapped_samples,
            ));
        }
        counters.extend([
            Count::always("triggers_held_for_previous", c.held_triggers),
            Count::always("unhandled_interrupts", c.unhandled_interrupts),
            Count::always("spurious_8259_interrupts", c.spurious_interrupts),
            Count::always("cpu_port_ios", c.port_ios),
            Count::always("cpu_interrupt_acknowledges", c.interrupt_acknowledges),
            Count::always("cpu_mmio_reads", c.mmio_reads),
            Count::if_nonzero("local_timer_ticks", c.ticks),
            Count::always("tlps_on_device_link", c.packets_on_link),
            Count::always("events_simulated", c.events),
            Count::always("simulated_time_us", c.simulated_ps / 1_000_000),
            Count::if_nonzero("smis", c.smis),
        ]);
        counters.extend(c.idle_entries.iter().map(|(name, n)| {
            Count::if_nonzero(format!("idle_entries_{}", name.to_lowercase()), *n)
        }));
        counters.push(Count::if_nonzero("link_replays", c.link_replays));
        counters.push(Count::if_nonzero("dma_requests", c.dma_requests));
        let measured = |name: &str, description: &str, h: LatencyHistogram| Measured {
            name: name.into(),
            description: description.into(),
            phase: None,
            histogram: h,
            quantum_ns: None,
        };
        let mut metrics = Vec::new();
        if !self.round_trip.is_empty() {
            metrics.push(measured(
                "round_trip",
                "the card's counter: MSI raised to the ISR's write reaching its register (4 ns \
                 counts at 250 MHz, the register access included)",
                self.round_trip,
            ));
        }
        metrics.push(measured(
            "isr_latency",
            "interrupt TLP on the device's link to the ISR's write on it",
            self.isr,
        ));
        if has_tasklet {
            metrics.push(measured(
                "tasklet_latency",
                "interrupt TLP to the tasklet's signature write",
                self.tasklet,
            ));
        }
        RunResult {
            metrics,
            counters,
            series: self.series.map(|(name, s)| (name.to_string(), s)),
            trace: self.trace,
            counts: None,
        }
    }
}

impl Scenario {
    /// Settings the run cannot honour.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let tick = self.kernel.tick.as_ref().is_some_and(|t| t.hz > 0);
        if !tick && self.kernel.idle.is_some() {
            w.push(
                "kernel.tick.hz is 0 with a cpuidle kernel: with no timer at all the idle \
                 governor expects endless idle periods, and after any irregular one it picks the \
                 deepest state"
                    .to_string(),
            );
        }
        if tick && self.file.delivery == Delivery::Xtpic {
            w.push(
                "kernel.tick.hz is not modelled in XT-PIC mode (the tick comes from the PIT on \
                 IRQ 0 there): this run has no tick"
                    .to_string(),
            );
        }
        w
    }

    /// Load `path` and apply `overrides` (`key=value` strings).
    pub fn load(path: impl AsRef<Path>, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        let s = Scenario::read_all(path.as_ref(), overrides)?;
        s.check()?;
        Ok(s)
    }

    /// Registers must lie inside their BAR, and no two BARs (nor the chipset's interrupt and
    /// IO-APIC windows) may overlap, or the driver's accesses would reach the wrong device.
    fn check_bars(&self) -> Result<(), ScenarioError> {
        let mut windows: Vec<(u64, u64, String)> = vec![
            (
                0xFEC0_0000,
                0x1000,
                "the IO-APIC window (0xFEC00000)".into(),
            ),
            (
                0xFEE0_0000,
                0x10_0000,
                "the interrupt window (0xFEExxxxx)".into(),
            ),
        ];
        for (i, d) in self.file.device.iter().enumerate() {
            let key = |f: &str| format!("device.{i}.{f}");
            for (field, offset, bar, size) in [
                ("status_offset", d.status_offset, "reg_bar", d.reg_bar_size),
                ("clear_offset", d.clear_offset, "reg_bar", d.reg_bar_size),
                (
                    "isr_signature_offset",
                    d.isr_signature_offset,
                    "signature_bar",
                    d.signature_bar_size,
                ),
                (
                    "tasklet_signature_offset",
                    d.tasklet_signature_offset,
                    "signature_bar",
                    d.signature_bar_size,
                ),
            ] {
                if offset.checked_add(4).is_none_or(|end| end > size) {
                    return Err(self.invalid(
                        &key(field),
                        format!(
                            "offset 0x{offset:x} is outside {bar} (size 0x{size:x}); a register must \
                             lie within its BAR: use an offset below 0x{size:x} or a larger {bar}_size"
                        ),
                    ));
                }
            }
            for (bar, base, size) in [
                ("reg_bar", d.reg_bar, d.reg_bar_size),
                ("signature_bar", d.signature_bar, d.signature_bar_size),
            ] {
                let end = base.saturating_add(size);
                if let Some((_, _, other)) = windows
                    .iter()
                    .find(|(b, s, _)| base < b.saturating_add(*s) && *b < end)
                {
                    return Err(self.invalid(
                        &key(bar),
                        format!(
                            "{bar} 0x{base:x} (size 0x{size:x}) overlaps {other}; give each BAR its \
                             own address range"
                        ),
                    ));
                }
                windows.push((base, size, format!("{} of device '{}'", bar, d.name)));
            }
        }
        Ok(())
    }

    /// The parts seed 002 brought: idle states, SMIs, drivers, the round-trip counter, switches,
    /// bit errors and DMA traffic.
    fn check_modern(&self) -> Result<(), ScenarioError> {
        let p = &self.platform;
        if let Some(idle) = &self.kernel.idle {
            if p.cpu.idle_states.is_empty() {
                return Err(self.invalid(
                    "platform.cpu.idle_states",
                    format!(
                        "the kernel '{}' idles through cpuidle ([idle]), but the platform lists no \
                         idle states: add [[cpu.idle_states]] (at least C1) to the platform",
                        self.kernel.name
                    ),
                ));
            }
            self.in_range(
                "kernel.idle.latency_limit_us",
                idle.latency_limit_us,
                0.0,
                2e9,
                "us",
            )?;
        }
        let mut last_residency = 0.0;
        for (i, st) in p.cpu.idle_states.iter().enumerate() {
            let key = |f: &str| format!("platform.cpu.idle_states.{i}.{f}");
            self.in_range(&key("exit_latency_us"), st.exit_latency_us, 0.0, 1e6, "us")?;
            self.in_range(
                &key("target_residency_us"),
                st.target_residency_us,
                0.0,
                1e7,
                "us",
            )?;
            self.in_range(&key("wake_ns"), st.wake_ns, 0.0, 1e9, "ns")?;
            if st.target_residency_us < last_residency {
                return Err(self.invalid(
                    &key("target_residency_us"),
                    "idle states go shallowest first: each state's target residency must be at \
                     least the previous one's",
                ));
            }
            last_residency = st.target_residency_us;
        }
        if let Some(smi) = &p.smi {
            self.in_range("platform.smi.rate_per_s", smi.rate_per_s, 0.0, 1e5, "per s")?;
            self.in_range("platform.smi.duration_us", smi.duration_us, 0.0, 1e6, "us")?;
        }
        if let Some(m) = p.mch.memory_read_ns {
            self.in_range("platform.mch.memory_read_ns", m, 0.0, 1e6, "ns")?;
        }
        for (i, d) in self.file.device.iter().enumerate() {
            let key = |f: &str| format!("device.{i}.{f}");
            if !["seed000", "round-trip", "generic"].contains(&d.driver.as_str()) {
                return Err(self.invalid(
                    &key("driver"),
                    format!(
                        "driver = \"{}\" is not a modelled driver: use \"seed000\" (seed 000's \
                         Figures 3-5), \"round-trip\" (seed 002's acknowledge-and-read ISR) or \
                         \"generic\" (status reads and a clear write)",
                        d.driver
                    ),
                ));
            }
            if !["trigger", "service"].contains(&d.interval_from.as_str()) {
                return Err(self.invalid(
                    &key("interval_from"),
                    format!(
                        "interval_from = \"{}\": use \"trigger\" (the interval runs from one \
                         interrupt to the next) or \"service\" (from the host's answer)",
                        d.interval_from
                    ),
                ));
            }
            if d.driver == "round-trip" {
                // Point at what makes it impossible: the delivery method, or the card.
                let why = "the round-trip driver answers an MSI and never clears an INTx line: \
                           use it with msi_capable = true and delivery = \"msi\"";
                if self.file.delivery != Delivery::Msi {
                    return Err(self.invalid(
                        "delivery",
                        format!("device '{}' runs the round-trip driver; {why}", d.name),
                    ));
                }
                if !d.msi_capable {
                    return Err(self.invalid(&key("msi_capable"), why));
                }
            }
            if d.interval_from == "service" && d.driver != "round-trip" {
                return Err(self.invalid(
                    &key("interval_from"),
                    "interval_from = \"service\" needs a card whose interrupt is answered by the \
                     round-trip driver's write; use \"trigger\"",
                ));
            }
            if let Some(rt) = &d.round_trip {
                // The card's logic raises its MSI on a counter edge: a slow counter would hold the
                // interrupt back by up to a period, so the model asks for a fast one.
                self.in_range(
                    &key("round_trip.counter_hz"),
                    rt.counter_hz,
                    1e7,
                    1e11,
                    "Hz",
                )?;
                self.in_range(
                    &key("round_trip.register_access_ns"),
                    rt.register_access_ns,
                    0.0,
                    1e6,
                    "ns",
                )?;
                if d.driver != "round-trip" {
                    return Err(self.invalid(
                        &key("round_trip"),
                        "the round-trip counter stops on the round-trip driver's write: set driver \
                         = \"round-trip\"",
                    ));
                }
            }
            self.in_range(&key("clock_ppm"), d.clock_ppm, -1000.0, 1000.0, "ppm")?;
            self.in_range(&key("core_tx_ns"), d.core_tx_ns, 0.0, 1e6, "ns")?;
            self.in_range(&key("core_rx_ns"), d.core_rx_ns, 0.0, 1e6, "ns")?;
            self.in_range(
                &key("switch_latency_ns"),
                d.switch_latency_ns,
                0.0,
                1e6,
                "ns",
            )?;
            self.in_range(
                &key("switches"),
                f64::from(d.switches),
                0.0,
                8.0,
                "switches",
            )?;
            self.in_range(
                &key("bit_error_rate"),
                d.bit_error_rate,
                0.0,
                1e-4,
                "errors per bit",
            )?;
            self.in_range(
                &key("ack_nak_latency_ns"),
                d.ack_nak_latency_ns,
                0.0,
                1e6,
                "ns",
            )?;
            // Data rate the link can carry one way: lanes x rate x encoding efficiency.
            let gen = LinkGen::new(d.link_generation).expect("checked");
            let link_mb_per_s =
                f64::from(d.link_width) * gen.transfers_per_s() / gen.line_bits_per_byte() / 1e6;
            for (field, rate, bytes) in [
                (
                    "dma_write_mb_per_s",
                    d.dma_write_mb_per_s,
                    d.dma_write_bytes,
                ),
                ("dma_read_mb_per_s", d.dma_read_mb_per_s, d.dma_read_bytes),
            ] {
                let size_field = field.replace("mb_per_s", "bytes");
                if bytes == 0 || !bytes.is_multiple_of(4) || bytes > 4096 {
                    return Err(self.invalid(
                        &key(&size_field),
                        format!(
                            "{bytes} bytes is not a DMA request size: use a multiple of 4 up to \
                             4096 (the largest PCIe payload)"
                        ),
                    ));
                }
                self.in_range(&key(field), rate, 0.0, 1e6, "MB/s")?;
            }
            // Each direction of the link must carry its share with room for the interrupt
            // traffic, or its queue would grow without end. Up: writes with their headers and
            // framing (20 B for 32-bit addresses) and the read requests; down: the read data,
            // which comes back in 64 B completions (20 B overhead each).
            let up = d.dma_write_mb_per_s * f64::from(d.dma_write_bytes + 20)
                / f64::from(d.dma_write_bytes)
                + d.dma_read_mb_per_s * 20.0 / f64::from(d.dma_read_bytes);
            let down = d.dma_read_mb_per_s * (64.0 + 20.0) / 64.0;
            for (field, load, what) in [
                (
                    "dma_write_mb_per_s",
                    up,
                    "upstream (writes and read requests)",
                ),
                ("dma_read_mb_per_s", down, "downstream (read completions)"),
            ] {
                if load > 0.9 * link_mb_per_s {
                    return Err(self.invalid(
                        &key(field),
                        format!(
                            "the DMA traffic needs {load:.0} MB/s {what} on the x{} Gen{} link, \
                             more than the 90% of its {link_mb_per_s:.0} MB/s that leaves room \
                             for the interrupts: ask for less (a saturated link's queue would \
                             grow without end)",
                            d.link_width, d.link_generation
                        ),
                    ));
                }
            }
            if d.dma_read_mb_per_s > 0.0 && p.mch.memory_read_ns.is_none() {
                return Err(self.invalid(
                    &key("dma_read_mb_per_s"),
                    "DMA reads need the platform's memory read latency: set \
                     platform.mch.memory_read_ns",
                ));
            }
        }
        Ok(())
    }

    /// The ICH has eight PIRQ lines, A..H: a per-PIRQ list needs one value for each.
    fn one_per_pirq(&self, key: &str, len: usize) -> Result<(), ScenarioError> {
        if len == 8 {
            return Ok(());
        }
        Err(self.invalid(
            key,
            format!("the ICH has 8 PIRQ lines (PIRQA..H); give 8 values, one each, not {len}"),
        ))
    }

    /// Refuse configurations the hardware or the kernel cannot have.
    fn check(&self) -> Result<(), ScenarioError> {
        let p = &self.platform;
        LinkGen::new(p.dmi.generation).map_err(|m| self.invalid("platform.dmi.generation", m))?;
        LinkWidth::new(p.dmi.width).map_err(|m| self.invalid("platform.dmi.width", m))?;
        Bdf::parse(&p.mch.requester_id)
            .map_err(|m| self.invalid("platform.mch.requester_id", m))?;
        self.one_per_pirq("platform.ich.pirq_pic_irq", p.ich.pirq_pic_irq.len())?;
        self.one_per_pirq("platform.ich.pirq_ioapic_pin", p.ich.pirq_ioapic_pin.len())?;
        for (i, &irq) in p.ich.pirq_pic_irq.iter().enumerate() {
            if irq != -1 && !(0..=15).contains(&irq) {
                return Err(self.invalid(
                    "platform.ich.pirq_pic_irq",
                    format!(
                        "PIRQ{} is routed to 8259 line {irq}, but the 8259A pair has lines 0-15; \
                         use 0-15, or -1 for not routed",
                        pirq_letter(i)
                    ),
                ));
            }
            if [0, 2, 8, 13].contains(&irq) {
                return Err(self.invalid(
                    "platform.ich.pirq_pic_irq",
                    format!(
                        "PIRQ{} is routed to IRQ{irq}, which the PC reserves (0 timer, 2 cascade, \
                         8 RTC, 13 FPU; seed 000 Table 1); pick a free line such as 10 or 11",
                        pirq_letter(i)
                    ),
                ));
            }
        }
        for (i, &pin) in p.ich.pirq_ioapic_pin.iter().enumerate() {
            if pin >= u32::from(crate::hw::ioapic::PINS) {
                return Err(self.invalid(
                    "platform.ich.pirq_ioapic_pin",
                    format!(
                        "PIRQ{} is wired to IO-APIC pin {pin}, but an IO-APIC has pins 0-23 \
                         (82093AA: 24 redirection entries); use 0-23",
                        pirq_letter(i)
                    ),
                ));
            }
        }
        for (i, f) in p.ich.functions.iter().enumerate() {
            if pirq_index(&f.pirq).is_none() {
                return Err(self.invalid(
                    &format!("platform.ich.functions.{i}.pirq"),
                    format!(
                        "'{}' is not a PIRQ line: the ICH has PIRQA..PIRQH (pirq = \"A\"..\"H\")",
                        f.pirq
                    ),
                ));
            }
        }
        // Physical quantities in their plausible ranges: beyond them the picosecond clock would
        // overflow or round to nothing, and the model would mean nothing.
        let c = &p.cpu;
        let mut ranges: Vec<(String, f64, f64, f64, &str)> = vec![
            ("platform.cpu.clock_hz".into(), c.clock_hz, 1e6, 1e11, "Hz"),
            (
                "platform.cpu.cycles_per_instruction".into(),
                c.cycles_per_instruction,
                0.05,
                100.0,
                "cycles",
            ),
            (
                "platform.cpu.interrupt_vectoring_cycles".into(),
                c.interrupt_vectoring_cycles,
                0.0,
                1e6,
                "cycles",
            ),
            (
                "platform.cpu.iret_cycles".into(),
                c.iret_cycles,
                0.0,
                1e6,
                "cycles",
            ),
            (
                "platform.cpu.lapic_access_cycles".into(),
                c.lapic_access_cycles,
                0.0,
                1e6,
                "cycles",
            ),
            (
                "platform.cpu.halt_exit_ns".into(),
                c.halt_exit_ns,
                0.0,
                1e9,
                "ns",
            ),
            (
                "platform.fsb.bus_clock_hz".into(),
                p.fsb.bus_clock_hz,
                1e6,
                1e11,
                "Hz",
            ),
            (
                "platform.fsb.request_phase_clocks".into(),
                f64::from(p.fsb.request_phase_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.fsb.transaction_clocks".into(),
                f64::from(p.fsb.transaction_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.mch.crossing_ns".into(),
                p.mch.crossing_ns,
                0.0,
                1e9,
                "ns",
            ),
            (
                "platform.mch.root_port_pipeline_ns".into(),
                p.mch.root_port_pipeline_ns,
                0.0,
                1e9,
                "ns",
            ),
            (
                "platform.dmi.pipeline_ns".into(),
                p.dmi.pipeline_ns,
                0.0,
                1e9,
                "ns",
            ),
            (
                "platform.ich.crossing_ns".into(),
                p.ich.crossing_ns,
                0.0,
                1e9,
                "ns",
            ),
            (
                "platform.ich.internal_clock_hz".into(),
                p.ich.internal_clock_hz,
                1e5,
                1e11,
                "Hz",
            ),
            (
                "platform.ich.legacy_io_clocks".into(),
                f64::from(p.ich.legacy_io_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.ich.intack_clocks".into(),
                f64::from(p.ich.intack_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.ich.ioapic_access_clocks".into(),
                f64::from(p.ich.ioapic_access_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.ich.ioapic_delivery_clocks".into(),
                f64::from(p.ich.ioapic_delivery_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "kernel.vector_step".into(),
                f64::from(self.kernel.vector_step),
                1.0,
                32.0,
                "vectors",
            ),
        ];
        for (i, d) in self.file.device.iter().enumerate() {
            ranges.push((
                format!("device.{i}.read_turnaround_ns"),
                d.read_turnaround_ns,
                0.0,
                1e9,
                "ns",
            ));
            ranges.push((
                format!("device.{i}.deassert_delay_ns"),
                d.deassert_delay_ns,
                0.0,
                1e9,
                "ns",
            ));
            if d.interrupts != "none" {
                ranges.push((
                    format!("device.{i}.interval_us"),
                    d.interval_us,
                    0.001,
                    1e9,
                    "us",
                ));
            }
        }
        for (key, v, lo, hi, unit) in &ranges {
            self.in_range(key, *v, *lo, *hi, unit)?;
        }
        if self.file.device.is_empty() {
            return Err(self.invalid(
                "device",
                "a scenario needs at least one [[device]] (the measured exerciser comes first)",
            ));
        }
        let mut msi_vectors: Vec<(u32, &str)> = Vec::new();
        for (i, d) in self.file.device.iter().enumerate() {
            let key = |f: &str| format!("device.{i}.{f}");
            LinkGen::new(d.link_generation)
                .map_err(|m| self.invalid(&key("link_generation"), m))?;
            LinkWidth::new(d.link_width).map_err(|m| self.invalid(&key("link_width"), m))?;
            IntxPin::parse(&d.intx_pin).map_err(|m| self.invalid(&key("intx_pin"), m))?;
            Bdf::parse(&d.bdf).map_err(|m| self.invalid(&key("bdf"), m))?;
            if d.msi_vector != 0 {
                let v = d.msi_vector;
                MsiMessage::new(0, v, false).map_err(|m| {
                    self.invalid(
                        &key("msi_vector"),
                        format!("{m} (or 0 to let the kernel choose)"),
                    )
                })?;
                if let Some((_, other)) = msi_vectors.iter().find(|(w, _)| *w == v) {
                    return Err(self.invalid(
                        &key("msi_vector"),
                        format!(
                            "devices '{other}' and '{}' both use MSI vector {v} on CPU 0; an MSI \
                             vector identifies one device (seed 000: \"IRQ sharing is no longer \
                             allowed\"): give each its own vector",
                            d.name
                        ),
                    ));
                }
                msi_vectors.push((v, &d.name));
            }
            match d.interrupts.as_str() {
                "poisson" | "periodic" => {} // interval range-checked below
                "none" if i > 0 => {}
                other => {
                    return Err(self.invalid(
                        &key("interrupts"),
                        format!(
                            "interrupts = \"{other}\" is not a generator: use \"poisson\" or \
                             \"periodic\" (or \"none\" for a card after the first that only shares \
                             the line)"
                        ),
                    ))
                }
            }
        }
        self.check_bars()?;
        self.check_modern()?;
        if self.file.samples == 0 {
            return Err(self.invalid("samples", "samples must be at least 1"));
        }
        if self.file.warmup_samples > 1_000_000_000 {
            return Err(self.invalid(
                "warmup_samples",
                format!(
                    "{} warm-up interrupts is more than this model accepts (1,000,000,000); a \
                     few hundred let the idle governor learn the device's rhythm",
                    self.file.warmup_samples
                ),
            ));
        }
        Ok(())
    }

    /// Build the machine for a run that keeps its first `trace` TLPs and its sample series.
    pub fn build(&self, seed: u64, samples: u64, trace: usize) -> Result<Machine, ScenarioError> {
        self.build_keeping(seed, samples, trace, true)
    }

    /// Build the machine for a run; `series`: keep the sample series (bounded).
    fn build_keeping(
        &self,
        seed: u64,
        samples: u64,
        trace: usize,
        series: bool,
    ) -> Result<Machine, ScenarioError> {
        let p = &self.platform;
        let rng = RngStreams::new(seed);
        let ns = SimDuration::from_ns_f64;
        let link = |g: u8, w: u32, pipe: f64| LinkConfig {
            gen: LinkGen::new(g).expect("checked"),
            width: LinkWidth::new(w).expect("checked"),
            pipeline_latency: ns(pipe),
        };
        let delivery = self.file.delivery;

        // Hardware.
        let mut links = Vec::new();
        let mut devices = Vec::new();
        for (i, d) in self.file.device.iter().enumerate() {
            let mut l = Link::new(link(
                d.link_generation,
                d.link_width,
                p.mch.root_port_pipeline_ns,
            ));
            l.path.switches = d.switches;
            l.path.switch_latency = ns(d.switch_latency_ns);
            l.path.bit_error_rate = d.bit_error_rate;
            // A NAK'd TLP: the receiver's NAK latency, the NAK's way back through the link
            // pipeline, and the replay's way out again through it.
            l.path.replay_delay = ns(d.ack_nak_latency_ns + 2.0 * p.mch.root_port_pipeline_ns);
            if d.bit_error_rate > 0.0 {
                l.path.rng = Some(rng.stream(&format!("device.{i}.link")));
            }
            links.push(l);
            // The card's own clock: its intervals and counter periods are nominal / (1 + ppm).
            let card_clock = 1.0 + d.clock_ppm * 1e-6;
            let interval = SimDuration::from_ns_f64(d.interval_us * 1e3 / card_clock);
            let dma = |mb_per_s: f64, bytes: u32, addr: u64| {
                (mb_per_s > 0.0).then(|| DmaStream {
                    mean_gap: ns(f64::from(bytes) / mb_per_s * 1e3),
                    bytes,
                    addr,
                })
            };
            let cfg = ExerciserConfig {
                name: d.name.clone(),
                bdf: Bdf::parse(&d.bdf).expect("checked"),
                intx_pin: IntxPin::parse(&d.intx_pin).expect("checked"),
                reg_bar: d.reg_bar,
                reg_bar_size: d.reg_bar_size,
                signature_bar: d.signature_bar,
                signature_bar_size: d.signature_bar_size,
                status_offset: d.status_offset,
                clear_offset: d.clear_offset,
                pending_flag: d.pending_flag,
                read_turnaround: ns(d.read_turnaround_ns),
                deassert_delay: ns(d.deassert_delay_ns),
                generator: match d.interrupts.as_str() {
                    "periodic" => Generator::Periodic { interval },
                    _ => Generator::Poisson { mean: interval },
                },
                generates: d.interrupts != "none",
                // The write that answers an interrupt: the round-trip ISR's acknowledge, or seed
                // 000's tasklet signature.
                serviced_addr: match d.driver.as_str() {
                    "round-trip" => Some(d.signature_bar + d.isr_signature_offset),
                    "seed000" => Some(d.signature_bar + d.tasklet_signature_offset),
                    _ => None, // a generic device raises interrupts whenever it has work
                },
                interval_from_service: d.interval_from == "service",
                core_tx: ns(d.core_tx_ns),
                core_rx: ns(d.core_rx_ns),
                round_trip: d.round_trip.as_ref().map(|r| RoundTripConfig {
                    period: SimDuration::period_of(r.counter_hz * card_clock),
                    nominal_period: SimDuration::period_of(r.counter_hz),
                    register_access: ns(r.register_access_ns),
                }),
                // Host memory for the card's DMA: a buffer at 256 MiB (any RAM address).
                dma_writes: dma(d.dma_write_mb_per_s, d.dma_write_bytes, 0x1000_0000),
                dma_reads: dma(d.dma_read_mb_per_s, d.dma_read_bytes, 0x1000_0000),
            };
            devices.push(Exerciser::new(cfg, rng.stream(&format!("device.{i}"))));
        }
        let fabric = Fabric {
            fsb: Fsb::new(FsbTiming {
                bus_clock_hz: p.fsb.bus_clock_hz,
                request_phase_clocks: p.fsb.request_phase_clocks,
                transaction_clocks: p.fsb.transaction_clocks,
            }),
            mch_crossing: ns(p.mch.crossing_ns),
            dmi: Link::new(link(p.dmi.generation, p.dmi.width, p.dmi.pipeline_ns)),
            ich_crossing: ns(p.ich.crossing_ns),
            links,
            memory_read: ns(p.mch.memory_read_ns.unwrap_or(0.0)),
        };
        let mut pirq_rout = [PIRQ_ROUT_DISABLE; 8];
        let mut elcr: u16 = 0;
        for (i, &irq) in p.ich.pirq_pic_irq.iter().enumerate() {
            if irq >= 0 {
                pirq_rout[i] = irq as u8;
                elcr |= 1 << irq; // the BIOS makes PCI lines level-sensitive
            }
        }
        let mut pirq_pins = [0u8; 8];
        for (i, &pin) in p.ich.pirq_ioapic_pin.iter().enumerate() {
            pirq_pins[i] = pin as u8;
        }
        let mut ich = Ich::new(
            IchTiming {
                internal_clock_hz: p.ich.internal_clock_hz,
                legacy_io_clocks: p.ich.legacy_io_clocks,
                intack_clocks: p.ich.intack_clocks,
                ioapic_access_clocks: p.ich.ioapic_access_clocks,
                ioapic_delivery_clocks: p.ich.ioapic_delivery_clocks,
            },
            pirq_rout,
            pirq_pins,
        );
        ich.pics.linux_init(elcr);
        let lapic_on = delivery != Delivery::Xtpic;
        let mut cpu = Cpu::new(
            CpuTiming {
                clock_hz: p.cpu.clock_hz,
                cycles_per_instruction: p.cpu.cycles_per_instruction,
                interrupt_vectoring_cycles: p.cpu.interrupt_vectoring_cycles,
                iret_cycles: p.cpu.iret_cycles,
                lapic_access_cycles: p.cpu.lapic_access_cycles,
                halt_exit: ns(p.cpu.halt_exit_ns),
            },
            LocalApic::new(p.cpu.apic_id, lapic_on),
        );
        if let Some(idle) = &self.kernel.idle {
            let states = p
                .cpu
                .idle_states
                .iter()
                .map(|s| IdleState {
                    name: s.name.clone(),
                    exit_latency: ns(s.exit_latency_us * 1e3),
                    target_residency: ns(s.target_residency_us * 1e3),
                    wake: ns(s.wake_ns),
                    polls: s.polls,
                })
                .collect();
            cpu.cpuidle = Some(Cpuidle::new(states, Some(ns(idle.latency_limit_us * 1e3))));
        }

        // The kernel boots: on-board drivers register first; then seed 000's module probes and
        // requests its interrupt (Figure 3).
        let mut kernel = Kernel::new(self.kernel.instructions.clone());
        // The tick needs the Local APIC; in XT-PIC mode the tick is the PIT on IRQ 0, which is
        // not modelled.
        if lapic_on {
            if let Some(t) = self.kernel.tick.as_ref().filter(|t| t.hz > 0) {
                let vector = u8::try_from(t.vector)
                    .ok()
                    .filter(|v| *v >= 32)
                    .ok_or_else(|| {
                        self.invalid(
                            "kernel.tick.vector",
                            format!("{} is not a vector 32..255", t.vector),
                        )
                    })?;
                kernel.tick = Some(Tick {
                    vector,
                    period: SimDuration::from_ps(1_000_000_000_000 / u64::from(t.hz)),
                    handler: t.handler,
                    timer_softirq: t.timer_softirq,
                });
            }
        }
        let mut vectors = VectorAllocator {
            next: self.kernel.first_device_vector,
            step: self.kernel.vector_step,
        };
        // One vector per IO-APIC pin: PIRQs wired to the same pin share it.
        let mut ioapic_vectors: [Option<u8>; 24] = [None; 24];
        for (j, f) in p.ich.functions.iter().enumerate() {
            let pirq = pirq_index(&f.pirq).expect("checked");
            let line = self.legacy_line(
                pirq,
                &f.name,
                &mut ich,
                &mut kernel,
                &mut vectors,
                &mut ioapic_vectors,
            )?;
            let action = Action {
                isr: Isr::PortStatusCheck {
                    port: f.status_port,
                    instructions: f.isr_instructions,
                },
                irqs_disabled: false, // on-board drivers request shared, not SA_INTERRUPT
            };
            kernel
                .request_irq(line.0, line.1, line.2, line.3, action)
                .map_err(|m| self.invalid(&format!("platform.ich.functions.{j}"), m))?;
        }
        for (i, dev) in devices.iter_mut().enumerate() {
            let d = &self.file.device[i];
            let key = |f: &str| format!("device.{i}.{f}");
            let msi_mode = delivery == Delivery::Msi && d.msi_capable;
            let pin = dev.cfg.intx_pin.swizzle(dev.cfg.bdf.dev);
            let pirq = pin.index();
            let tasklet = kernel.tasklet_init(i as u16);
            let action = Action {
                isr: Isr::Exerciser(i as u16),
                irqs_disabled: true, // SA_INTERRUPT in Figure 3
            };
            let (irq, chip, flow, vector) = if msi_mode {
                let v = vectors.alloc((d.msi_vector != 0).then_some(d.msi_vector));
                let m = MsiMessage::new(p.cpu.apic_id, v, false)
                    .map_err(|m| self.invalid(&key("msi_vector"), m))?;
                dev.msi.program(m);
                (1000 + i as u16, Chip::Msi, Flow::Edge, m.vector)
            } else {
                self.legacy_line(
                    pirq,
                    &d.name,
                    &mut ich,
                    &mut kernel,
                    &mut vectors,
                    &mut ioapic_vectors,
                )?
            };
            kernel
                .request_irq(irq, chip, flow, vector, action)
                .map_err(|m| self.invalid(&key("msi_vector"), m))?;
            kernel.drivers.push(ExerciserDriver {
                kind: match d.driver.as_str() {
                    "round-trip" => DriverKind::RoundTrip {
                        bin: d.isr_instructions,
                    },
                    "generic" => DriverKind::Generic {
                        instructions: d.isr_instructions,
                        status_reads: d.isr_status_reads,
                    },
                    _ => DriverKind::Seed000,
                },
                msi_mode,
                status_addr: d.reg_bar + d.status_offset,
                clear_addr: d.reg_bar + d.clear_offset,
                pending_flag: d.pending_flag,
                clear_mask: d.pending_flag,
                isr_signature_addr: d.signature_bar + d.isr_signature_offset,
                tasklet_signature_addr: d.signature_bar + d.tasklet_signature_offset,
                tasklet,
                int_count: 0,
            });
        }

        let d0 = &self.file.device[0];
        let mut probe = LatencyProbe::new(
            d0.signature_bar + d0.isr_signature_offset,
            (d0.driver != "round-trip").then_some(d0.signature_bar + d0.tasklet_signature_offset),
        );
        // Warm-up interrupts go first and are not recorded: the governor starts with no history
        // and the run with every timer phase at zero, neither of which the published run had.
        let warmup = self.file.warmup_samples;
        probe.warmup = warmup;
        if let Some(d) = devices.first_mut() {
            d.warmup = warmup;
        }
        if series {
            probe.series = Some(SampleSeries::new(SERIES_POINTS));
            if let Some(d) = devices.first_mut() {
                d.series = Some(SampleSeries::new(SERIES_POINTS));
            }
        }
        let root = Bdf::parse(&p.mch.requester_id).expect("checked");
        kernel.idle = self.kernel.idle.clone();
        let smi = p.smi.as_ref().filter(|s| s.rate_per_s > 0.0).map(|s| Smi {
            mean_interval: ns(1e9 / s.rate_per_s),
            duration: ns(s.duration_us * 1e3),
            rng: rng.stream("platform.smi"),
            count: 0,
        });
        let mut machine = Machine::new(
            fabric,
            ich,
            cpu,
            kernel,
            devices,
            Analyzer::new(trace),
            probe,
            root,
            samples + warmup,
        );
        machine.smi = smi;
        Ok(machine)
    }

    /// Set up the INTx line of `pirq` as this kernel does and say how it registers it: with
    /// XT-PIC, the 8259 line the BIOS routed it to, unmasked; otherwise the IO-APIC pin it
    /// drives, programmed once (level-triggered, active low: PCI) with a vector of its own.
    fn legacy_line(
        &self,
        pirq: u8,
        who: &str,
        ich: &mut Ich,
        kernel: &mut Kernel,
        vectors: &mut VectorAllocator,
        ioapic_vectors: &mut [Option<u8>; 24],
    ) -> Result<(u16, Chip, Flow, u8), ScenarioError> {
        let p = &self.platform;
        if self.file.delivery == Delivery::Xtpic {
            let irq = p.ich.pirq_pic_irq[usize::from(pirq)];
            if irq < 0 {
                return Err(self.invalid(
                    "platform.ich.pirq_pic_irq",
                    format!(
                        "'{who}' signals on PIRQ{}, which the BIOS did not route to the 8259: \
                         XT-PIC delivery needs it routed",
                        pirq_letter(usize::from(pirq))
                    ),
                ));
            }
            let irq = irq as u8;
            // request_irq -> startup_8259A_irq -> enable_8259A_irq: unmask the line.
            let imr_port = if irq >= 8 { 0xA1 } else { 0x21 };
            let imr = ich.pics.port_read(imr_port).expect("PIC port");
            ich.pics.port_write(imr_port, imr & !(1 << (irq & 7)));
            kernel.cached_irq_mask &= !(1 << irq);
            return Ok((u16::from(irq), Chip::XtPic, Flow::Level, 0x20 + irq));
        }
        let io_pin = p.ich.pirq_ioapic_pin[usize::from(pirq)] as u8;
        let vector = match ioapic_vectors[usize::from(io_pin)] {
            Some(v) => v,
            None => {
                let m = MsiMessage::new(p.cpu.apic_id, vectors.alloc(None), true)
                    .map_err(|m| self.invalid("kernel.first_device_vector", m))?;
                ich.ioapic.entries[usize::from(io_pin)] =
                    RedirectionEntry::new(m.vector, p.cpu.apic_id, true, true, false);
                ioapic_vectors[usize::from(io_pin)] = Some(m.vector);
                m.vector
            }
        };
        Ok((u16::from(io_pin), Chip::IoApic, Flow::FastEoi, vector))
    }

    /// Build and run: `samples` interrupts from the measured device, the first `trace` TLPs on
    /// its link kept.
    pub fn run(&self, seed: u64, samples: u64, trace: usize) -> Result<Outcome, ScenarioError> {
        self.run_with(seed, samples, trace, false)
    }

    /// Split `samples` over `replications` independent runs and run them on all cores, merging
    /// their histograms and counters: memory stays that of one run per core. Replication 0
    /// uses `seed` itself (so one replication is [`Scenario::run`]); replication r > 0 a seed
    /// derived from `seed` and r. The result depends on the replication count, never on the
    /// number of cores or threads. `progress` counts interrupts raised, across replications.
    pub fn run_replicated(
        &self,
        seed: u64,
        samples: u64,
        trace: usize,
        replications: u32,
        progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<Outcome, ScenarioError> {
        use rayon::prelude::*;
        let r = u64::from(replications.max(1));
        let share = |i: u64| samples / r + u64::from(i < samples % r);
        // Merged as they finish (histograms and counters add up in any order), so memory is
        // that of one run per thread, whatever the replication count.
        let merged = (0..r)
            .into_par_iter()
            .filter(|&i| share(i) > 0)
            .map(|i| {
                let s = if i == 0 {
                    seed
                } else {
                    replication_seed(seed, i)
                };
                // The first replication keeps the trace and the series.
                let mut m = if i == 0 {
                    self.build_keeping(s, share(i), trace, true)?
                } else {
                    self.build_keeping(s, share(i), 0, false)?
                };
                m.progress = progress.clone();
                self.finish(m, share(i)).map(Some)
            })
            .try_reduce(
                || None,
                |a, b| {
                    Ok(match (a, b) {
                        (Some(mut a), Some(b)) => {
                            a.absorb(b);
                            Some(a)
                        }
                        (a, b) => a.or(b),
                    })
                },
            )?;
        Ok(merged.expect("at least one sample"))
    }

    /// [`Scenario::run`], optionally in the machine's step-by-step reference mode.
    pub fn run_with(
        &self,
        seed: u64,
        samples: u64,
        trace: usize,
        strict: bool,
    ) -> Result<Outcome, ScenarioError> {
        let mut m = self.build(seed, samples, trace)?;
        m.strict = strict;
        self.finish(m, samples)
    }

    /// Run a built machine and collect its result.
    fn finish(&self, mut m: Machine, samples: u64) -> Result<Outcome, ScenarioError> {
        let counters = m.run();
        if counters.truncated {
            return Err(ScenarioError::Runaway {
                path: self.path.clone(),
                events: counters.events,
                completed: m.probe.completed().max(m.devices[0].round_trips.count()),
                requested: samples,
            });
        }
        let mut trace = std::mem::take(&mut m.analyzer.records);
        trace.sort_by_key(|r| (r.time_ps, r.packet));
        Ok(Outcome {
            isr: std::mem::take(&mut m.probe.isr),
            tasklet: std::mem::take(&mut m.probe.tasklet),
            round_trip: std::mem::take(&mut m.devices[0].round_trips),
            has_tasklet: m.probe.tasklet_signature_addr.is_some(),
            series: match (m.devices[0].series.take(), m.probe.series.take()) {
                (Some(s), _) if s.samples > 0 => Some(("round_trip", s)),
                (_, Some(s)) if s.samples > 0 => Some(("isr_latency", s)),
                _ => None,
            },
            counters,
            trace,
        })
    }
}

/// The file a scenario names under `key` (its platform or kernel), relative to the scenario:
/// its path, text and contents. An unreadable file is reported with the line that named it.
pub(crate) fn load_named<T: for<'de> Deserialize<'de>>(
    scenario: &Path,
    text: &str,
    key: &str,
    name: &str,
) -> Result<(PathBuf, String, T), ScenarioError> {
    let path = crate::shipped::resolve(scenario.parent().unwrap_or(Path::new(".")), name);
    let (line, column) = locate(text, key).unwrap_or((1, 1));
    let by = format!("`{key}` at {}:{line}:{column}", scenario.display());
    let body = read(&path, Some(by))?;
    let value = parse_file(&path, &body)?;
    Ok((path, body, value))
}

/// Apply `--set` flags to a run's three documents as one: scenario keys at the top, the platform
/// under `platform.`, the kernel under `kernel.`. One flag at a time, each read back before the
/// next, so an error names the flag that caused it.
pub(crate) fn apply_combined<F, P, K>(
    file: &mut F,
    platform: &mut P,
    kernel: &mut K,
    overrides: &[String],
) -> Result<(), ScenarioError>
where
    F: Serialize + for<'de> Deserialize<'de>,
    P: Serialize + for<'de> Deserialize<'de>,
    K: Serialize + for<'de> Deserialize<'de>,
{
    let ser = |e: toml::ser::Error| ScenarioError::Override {
        flag: String::new(),
        message: e.to_string(),
    };
    let mut root = toml::Value::try_from(&*file).map_err(ser)?;
    let table = root
        .as_table_mut()
        .expect("a scenario serializes to a table");
    // The scenario's own `platform` and `kernel` keys (file names) give way to the documents.
    let (pname, kname) = (table.remove("platform"), table.remove("kernel"));
    table.insert(
        "platform".into(),
        toml::Value::try_from(&*platform).map_err(ser)?,
    );
    table.insert(
        "kernel".into(),
        toml::Value::try_from(&*kernel).map_err(ser)?,
    );
    for flag in overrides {
        apply_override(&mut root, flag)?;
        let back = |what: &'static str, e: toml::de::Error| ScenarioError::Override {
            flag: flag.clone(),
            message: format!(
                "the {what} does not accept it: {}",
                plain_types(e.message())
            ),
        };
        let mut t = root.as_table().expect("table").clone();
        let p = t.remove("platform").expect("present");
        let k = t.remove("kernel").expect("present");
        if let Some(v) = &pname {
            t.insert("platform".into(), v.clone());
        }
        if let Some(v) = &kname {
            t.insert("kernel".into(), v.clone());
        }
        *platform = p.try_into().map_err(|e| back("platform", e))?;
        *kernel = k.try_into().map_err(|e| back("kernel", e))?;
        *file = toml::Value::Table(t)
            .try_into()
            .map_err(|e| back("scenario", e))?;
    }
    Ok(())
}

/// Where a key's value came from: the last `--set` naming it (or a table or list above it,
/// `device.0.round_trip={...}`), or its line in the scenario (`paths[0]`), platform
/// (`platform.`, `paths[1]`) or kernel (`kernel.`, `paths[2]`) file.
pub(crate) fn origin_in(
    key: &str,
    overrides: &[String],
    paths: [&Path; 3],
    texts: &[String; 3],
) -> Origin {
    if let Some(flag) = overrides.iter().rev().find(|f| {
        f.split_once('=').is_some_and(|(k, _)| {
            let k = k.trim();
            key == k
                || key
                    .strip_prefix(k)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }) {
        return Origin::Flag(flag.clone());
    }
    let (i, sub) = if let Some(rest) = key.strip_prefix("platform.") {
        (1, rest)
    } else if let Some(rest) = key.strip_prefix("kernel.") {
        (2, rest)
    } else {
        (0, key)
    };
    let (line, column) = locate(&texts[i], sub).unwrap_or((1, 1));
    Origin::File {
        path: paths[i].to_owned(),
        line,
        column,
    }
}

/// A replication's seed: SplitMix64 of the run's seed and the replication index, so that
/// replications draw unrelated streams.
pub fn replication_seed(seed: u64, replication: u64) -> u64 {
    let mut z = seed ^ replication.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Apply one `key=value` to the combined document.
fn apply_override(root: &mut toml::Value, flag: &str) -> Result<(), ScenarioError> {
    let err = |message: String| ScenarioError::Override {
        flag: flag.to_string(),
        message,
    };
    let (key, raw) = flag
        .split_once('=')
        .ok_or_else(|| err("expected key=value, for example platform.cpu.clock_hz=2.0e9".into()))?;
    let key = key.trim();
    let raw = raw.trim();
    let mut node = root;
    let mut walked = Vec::new();
    for part in key.split('.') {
        let here = if walked.is_empty() {
            "the top level".to_string()
        } else {
            format!("'{}'", walked.join("."))
        };
        node = match node {
            toml::Value::Table(t) => {
                let keys: Vec<String> = t.keys().cloned().collect();
                t.get_mut(part).ok_or_else(|| {
                    err(format!(
                        "no key '{part}' in {here}; it has: {}",
                        keys.join(", ")
                    ))
                })?
            }
            toml::Value::Array(a) => {
                let n = a.len();
                let valid = match n {
                    0 => "it is empty".to_string(),
                    1 => "it has 1 element, index 0".to_string(),
                    _ => format!("it has {n} elements, indices 0 to {}", n - 1),
                };
                let i: usize = part.parse().map_err(|_| {
                    err(format!(
                        "{here} is a list: address an element by its index ({valid})"
                    ))
                })?;
                a.get_mut(i)
                    .ok_or_else(|| err(format!("index {i} is past the end of {here}: {valid}")))?
            }
            _ => return Err(err(format!("{here} is a value, not a table"))),
        };
        walked.push(part);
    }
    // Parse the value as TOML; a bare word is taken as a string (`delivery=xtpic`).
    let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let new = match (&*node, parsed) {
        (toml::Value::Float(_), toml::Value::Integer(i)) => toml::Value::Float(i as f64),
        (old, new) if std::mem::discriminant(old) == std::mem::discriminant(&new) => new,
        (old, new) => {
            return Err(err(format!(
                "'{key}' is {}, but '{raw}' is {}",
                type_name(old),
                type_name(&new)
            )))
        }
    };
    *node = new;
    Ok(())
}

fn pirq_index(s: &str) -> Option<u8> {
    match s.as_bytes() {
        [c @ b'A'..=b'H'] => Some(c - b'A'),
        [c @ b'a'..=b'h'] => Some(c - b'a'),
        _ => None,
    }
}

fn pirq_letter(i: usize) -> char {
    (b'A' + i as u8) as char
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "a whole number",
        toml::Value::Float(_) => "a decimal number",
        toml::Value::Boolean(_) => "a boolean (true or false)",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}
