//! The file formats of a run's three documents: `platforms/*.toml`, `kernels/*.toml` and the
//! scenario file. Every format is a struct with `deny_unknown_fields`, so an unknown key is an
//! error and no parameter enters the model without a change to the code.

use crate::hw::pcie::{Bdf, IntxPin, LinkGen, LinkWidth};
use crate::kernel::costs::{IdleCosts, KernelInstructions, TickCosts};
use crate::kernel::Delivery;
use crate::topology::{LinkSection as TopologyLink, PartSection, WireSection};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `platforms/*.toml`: every platform, from the 1998 PC to the 2017 desktop, in one schema.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformFile {
    pub name: String,
    pub description: String,
    /// The board's crystal against true time, in parts per million: every board clock comes
    /// from it, and only a run timed against an outside reference (seed 004's GPS second) can
    /// see it. Absent: 0. (Serialized even at 0, so that `--set` reaches it.)
    #[serde(default)]
    pub crystal_ppm: f64,
    pub cpu: CpuSection,
    /// The south bridge's interrupt block with its own clock (an ICH's legacy block, PIRQ
    /// routing, IO-APIC). Absent: a south bridge whose 8259 pair answers within its bus's
    /// cycles (the PIIX4 behind its ISA bus, a `isa-bus` link); the PCIe-era scenarios need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ich: Option<IchSection>,
    /// System Management Interrupts; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smi: Option<SmiSection>,
    /// The topology: `[part.NAME]` tables (cores, host bridge, memory, root ports, hubs, the
    /// south bridge's functions), `[link.NAME]` tables (serial, shared-bus, delay) and
    /// `[[wire]]`s. A scenario's devices are added below the root ports they name.
    #[serde(default)]
    pub part: BTreeMap<String, PartSection>,
    #[serde(default)]
    pub link: BTreeMap<String, TopologyLink>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wire: Vec<WireSection>,
    /// `[range.*]`: the plausible ranges of this file's estimates (`scenario::ranges`), read
    /// from the text by `validate --uncertainty`; the model never sees them.
    #[serde(default, skip_serializing)]
    pub range: Option<toml::Value>,
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
    /// The hardware's time to leave the state on an interrupt (the median when spread).
    pub wake_ns: f64,
    /// The spread of the wake time: the standard deviation of its logarithm (a lognormal with
    /// median `wake_ns`, capped at `exit_latency_us`). 0 or absent: always `wake_ns`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wake_sigma: f64,
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
    /// An access to the core's Local APIC; absent: the core has none (the K6, whose interrupts
    /// come on INTR from the 8259).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lapic_access_cycles: Option<f64>,
    /// What entering an interrupt gate from user mode (a stack switch) costs besides
    /// `interrupt_vectoring_cycles`. Absent: 0 (seeds 000 and 002 take their interrupts in the
    /// idle loop, in kernel mode).
    #[serde(default)]
    pub privilege_change_cycles: f64,
    pub halt_exit_ns: f64,
    /// Instructions whose cost is cycles of their own, not the CPI: a kernel file that
    /// itemises them (`[net.serializing]`) charges each its cycles beyond its slots at the
    /// CPI. A locked read-modify-write (`lock; decb`, `xchgb`, `lock; incl`) on a line in this
    /// core's cache: it drains the store buffer and holds the line. Absent: no kernel may
    /// itemise one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_rmw_cycles: Option<f64>,
    /// `rdtsc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdtsc_cycles: Option<f64>,
    /// `local_irq_save` with its `local_irq_restore` (`pushfl; popl; cli` ... `pushl; popfl`:
    /// five instructions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_save_restore_cycles: Option<f64>,
    /// Cold code: the interrupt path's lines may have been evicted since their last use (how
    /// likely is the workload's `cold_fraction`). Absent: the path is always cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSection>,
    /// Idle states, shallowest first, for a kernel with cpuidle (`[idle]` in its file). Empty:
    /// HLT with `halt_exit_ns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_states: Vec<IdleStateSection>,
    /// A clock that moves in time (hardware P-states, HWP). Absent: always `clock_hz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<FrequencySection>,
    /// What data costs the core when it is not in its own cache: a line another core wrote,
    /// a line the DMA left in memory. Absent: nothing (the paths' counts include it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coherence: Option<CoherenceSection>,
}

/// `[cpu.coherence]`: one cache line's move to this core, by where it was.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoherenceSection {
    /// Modified in the cache of another core of the same package (the same bus link up: a
    /// Woodcrest die's two cores share its L2).
    pub same_package_ns: f64,
    /// Modified in a core of another package (a snoop that hits on the other front-side bus).
    pub cross_package_ns: f64,
    /// A line read from memory (a load that misses every cache).
    pub memory_line_ns: f64,
}

/// `[cpu.frequency]`: the core's clock as the hardware's power management moves it. Each core
/// starts at `clock_hz`; after a hold of exponentially distributed length (mean `hold_us`) it
/// moves to a clock drawn uniformly between `low_hz` and `high_hz`, and so on. Kernel code runs
/// at the clock of the moment; the wake from an idle state and the fabric do not depend on it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrequencySection {
    pub low_hz: f64,
    pub high_hz: f64,
    pub hold_us: f64,
}

/// `[cpu.cache]`: what a cold line of kernel code costs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    pub line_bytes: u32,
    /// The average instruction length, for how many lines a path's code spans.
    pub instruction_bytes: f64,
    /// A line fill from memory after a miss.
    pub line_fill_ns: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IchSection {
    pub internal_clock_hz: f64,
    pub legacy_io_clocks: u32,
    pub intack_clocks: u32,
    pub ioapic_access_clocks: u32,
    pub ioapic_delivery_clocks: u32,
    /// PIRQA..H routing as the BIOS left it: an 8259 IRQ number 0-15, or -1 for not routed.
    pub pirq_pic_irq: Vec<i32>,
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
    #[serde(with = "crate::text::pirq")]
    pub pirq: u8,
    /// The I/O port its driver reads to see whether an interrupt is its own.
    pub status_port: u16,
    /// Its ISR's instructions besides that read.
    pub isr_instructions: u16,
}

/// `kernels/*.toml`: one schema whose `family` key says which operating system's interrupt
/// path the file describes, and so which tables follow. Linux's and FreeBSD's paths share no
/// table: an IDT and `irq_desc` against `cpl` and INTR stubs.
// Read once per run: the size of the smaller variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum KernelFile {
    Linux(LinuxKernelFile),
    Freebsd(BsdKernelFile),
}

/// The operating system a kernel file describes (its `family` key).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Linux,
    Freebsd,
}

impl KernelFile {
    pub fn name(&self) -> &str {
        match self {
            KernelFile::Linux(k) => &k.name,
            KernelFile::Freebsd(k) => &k.name,
        }
    }

    pub fn family(&self) -> Family {
        match self {
            KernelFile::Linux(_) => Family::Linux,
            KernelFile::Freebsd(_) => Family::Freebsd,
        }
    }

    /// The Linux kernel's tables. Only Linux's assembler and checker ask, and a scenario runs
    /// on them only when its kernel's family is Linux (`Scenario::check`).
    pub fn linux(&self) -> &LinuxKernelFile {
        match self {
            KernelFile::Linux(k) => k,
            KernelFile::Freebsd(k) => {
                unreachable!("{} is a FreeBSD kernel: only Linux's model asks", k.name)
            }
        }
    }

    /// FreeBSD's tables (as [`KernelFile::linux`]).
    pub fn freebsd(&self) -> &BsdKernelFile {
        match self {
            KernelFile::Freebsd(k) => k,
            KernelFile::Linux(k) => {
                unreachable!("{} is a Linux kernel: only FreeBSD's model asks", k.name)
            }
        }
    }

    /// Parse a kernel file's text: its `family` picks the table it is read as, so that every
    /// error keeps the line and column of its value (serde's tagged enums would buffer the
    /// document and lose them).
    pub(crate) fn parse(
        path: &std::path::Path,
        text: &str,
    ) -> Result<KernelFile, super::ScenarioError> {
        match peek_str(text, "family").as_deref() {
            Some("freebsd") => super::parse_file(path, text).map(KernelFile::Freebsd),
            // Linux's table says what `family` may be, where it is missing or unknown.
            _ => super::parse_file(path, text).map(KernelFile::Linux),
        }
    }
}

/// The string value of top-level `key` in a TOML text, if it parses and has one.
fn peek_str(text: &str, key: &str) -> Option<String> {
    let t: toml::Table = text.parse().ok()?;
    t.get(key)?.as_str().map(str::to_string)
}

impl<'de> Deserialize<'de> for KernelFile {
    /// From a document already read (a `--set` applied to it): the `family` picks the table.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = toml::Value::deserialize(d)?;
        let family = v.get("family").and_then(|f| f.as_str()).unwrap_or("");
        if family == "freebsd" {
            v.try_into()
                .map(KernelFile::Freebsd)
                .map_err(D::Error::custom)
        } else {
            v.try_into()
                .map(KernelFile::Linux)
                .map_err(D::Error::custom)
        }
    }
}

/// A Linux kernel's file (`family = "linux"`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinuxKernelFile {
    pub name: String,
    /// Always [`Family::Linux`].
    pub family: Family,
    pub description: String,
    /// First vector `assign_irq_vector` hands out, and its step (spreads priority classes).
    pub first_device_vector: u32,
    pub vector_step: u32,
    /// CONFIG_SMP: the kernel brings up every core; otherwise only the boot CPU runs and the
    /// others stay parked in wait-for-SIPI, taking no interrupts.
    #[serde(default)]
    pub smp: bool,
    pub instructions: KernelInstructions,
    /// The local timer tick; absent or `hz = 0`: not modelled.
    #[serde(default)]
    pub tick: Option<TickCosts>,
    /// The cpuidle idle path; absent: the 2.6 `sti; hlt` idle loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleCosts>,
    /// The scheduler and high-resolution timers, for a kernel that runs tasks (cyclictest,
    /// threads); absent: the idle task runs alone and the tick is periodic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<crate::kernel::costs::SchedCosts>,
    /// Threaded interrupt handlers and softirq threads (the -rt patch), for a kernel with
    /// `[sched]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<crate::kernel::costs::Threads>,
    /// The networking core and the network drivers' costs, for a kernel that runs network
    /// devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<crate::kernel::costs::NetCosts>,
    /// `[range.*]`: the plausible ranges of this file's estimates (`scenario::ranges`), read
    /// from the text by `validate --uncertainty`; the model never sees them.
    #[serde(default, skip_serializing)]
    pub range: Option<toml::Value>,
}

/// cyclictest as the scenario runs it (rt-tests' options): one thread per CPU from CPU 0, each
/// sleeping to absolute times `interval_us` apart and measuring how late it woke.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CyclictestSection {
    /// `-i`: the interval, in microseconds.
    pub interval_us: f64,
    /// `-p`: SCHED_FIFO priority 1-99; 0 runs it SCHED_OTHER (cyclictest's default without
    /// `-p`).
    pub priority: u8,
    /// `-t`: threads, one per CPU from CPU 0.
    #[serde(default = "one_thread")]
    pub threads: u8,
    /// cyclictest's own user-space instructions per loop (`calcdiff`, the statistics, the
    /// histogram update).
    pub loop_instructions: u32,
}

fn one_thread() -> u8 {
    1
}

/// A scenario file: its `[[device]]`s are of several kinds (a PCIe function, an adapter card
/// on an 8259 line), all the same kind in one file as read ([`ScenarioFileOf`] of one kind),
/// and [`Device`]s after.
pub type ScenarioFile = ScenarioFileOf<Device>;

/// A scenario file whose devices are `D`s.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "D: Deserialize<'de>"))]
pub struct ScenarioFileOf<D> {
    pub title: String,
    pub platform: String,
    pub kernel: String,
    pub delivery: Delivery,
    pub samples: u64,
    pub seed: u64,
    /// Interrupts run before the recorded samples, in every replication, and not recorded.
    #[serde(default)]
    pub warmup_samples: u64,
    /// The cores the run simulates, like booting with `maxcpus=N` (0 or absent: every core the
    /// kernel brings up).
    #[serde(default)]
    pub cpus: u8,
    /// A run of fixed length, in milliseconds of simulated time: the network controllers'
    /// traffic lasts this long and the run ends with it (a forwarding run counts frames, not
    /// samples; `samples` then only splits the run into replications, each the whole length:
    /// give 1). 0 or absent: the run counts samples.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duration_ms: f64,
    /// Background process work on every core (`workload.rs`), in one load or in phases by
    /// sample number; absent: the cores idle between interrupts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::workload::WorkloadSection>,
    /// cyclictest on the kernel's tasks: its loops are the run's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cyclictest: Option<CyclictestSection>,
    /// Settings of the platform and kernel files this scenario runs with, as `--set` flags
    /// (`platform.cpu.clock_hz=800e6`: seed 003's clock on the EP80579 platform); the command
    /// line's come after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    #[serde(default)]
    pub device: Vec<D>,
    /// An instrument outside the host that times each sample (`probes/`): absent, the run's
    /// samples are the ones its devices, its analyzer or cyclictest time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeSection>,
    /// `[range.*]`: the plausible ranges of this file's estimates (`scenario::ranges`), read
    /// from the text by `validate --uncertainty`; the model never sees them.
    #[serde(default, skip_serializing)]
    pub range: Option<toml::Value>,
}

impl<D> ScenarioFileOf<D> {
    /// The same file with its devices made `E`s.
    fn map_devices<E>(self, f: impl FnMut(D) -> E) -> ScenarioFileOf<E> {
        ScenarioFileOf {
            title: self.title,
            platform: self.platform,
            kernel: self.kernel,
            delivery: self.delivery,
            samples: self.samples,
            seed: self.seed,
            warmup_samples: self.warmup_samples,
            cpus: self.cpus,
            duration_ms: self.duration_ms,
            workload: self.workload,
            cyclictest: self.cyclictest,
            set: self.set,
            device: self.device.into_iter().map(f).collect(),
            probe: self.probe,
            range: self.range,
        }
    }
}

impl ScenarioFile {
    /// Parse a scenario file's text. Where every device is of one kind (the `kind` keys say
    /// which), the file is read with that kind's table, so that every error keeps the line and
    /// column of its value; a file that mixes kinds is read device by device (and refused by
    /// the check: no family's model runs both).
    pub(crate) fn parse(
        path: &std::path::Path,
        text: &str,
    ) -> Result<ScenarioFile, super::ScenarioError> {
        let kinds: Vec<Option<String>> = text
            .parse::<toml::Table>()
            .ok()
            .and_then(|t| t.get("device").and_then(|d| d.as_array()).cloned())
            .unwrap_or_default()
            .iter()
            .map(|d| d.get("kind").and_then(|k| k.as_str()).map(str::to_string))
            .collect();
        let card = |k: &Option<String>| k.as_deref() == Some(CardKind::NAME);
        if kinds.iter().all(card) && !kinds.is_empty() {
            super::parse_file::<ScenarioFileOf<CardSection>>(path, text)
                .map(|f| f.map_devices(Device::Card))
        } else if !kinds.iter().any(card) {
            super::parse_file::<ScenarioFileOf<DeviceSection>>(path, text)
                .map(|f| f.map_devices(Device::Pcie))
        } else {
            super::parse_file(path, text)
        }
    }
}

/// A device of the scenario (`[[device]]`), by its `kind`.
// Read once per run: the size of the smaller variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Device {
    /// A PCIe function on a root port's link (`kind = "pcie"`, the default).
    Pcie(DeviceSection),
    /// An adapter card on a PC's PCI or ISA bus, interrupting on a line of the 8259 pair
    /// (`kind = "card"`).
    Card(CardSection),
}

impl<'de> Deserialize<'de> for Device {
    /// From a document already read (a `--set` applied to it): the `kind` picks the table.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = toml::Value::deserialize(d)?;
        if v.get("kind").and_then(|k| k.as_str()) == Some(CardKind::NAME) {
            v.try_into().map(Device::Card).map_err(D::Error::custom)
        } else {
            v.try_into().map(Device::Pcie).map_err(D::Error::custom)
        }
    }
}

impl Device {
    pub fn name(&self) -> &str {
        match self {
            Device::Pcie(d) => &d.name,
            Device::Card(d) => &d.name,
        }
    }

    /// The PCIe function, if it is one.
    pub fn pcie(&self) -> Option<&DeviceSection> {
        match self {
            Device::Pcie(d) => Some(d),
            Device::Card(_) => None,
        }
    }

    pub fn pcie_mut(&mut self) -> Option<&mut DeviceSection> {
        match self {
            Device::Pcie(d) => Some(d),
            Device::Card(_) => None,
        }
    }

    /// The adapter card, if it is one.
    pub fn card(&self) -> Option<&CardSection> {
        match self {
            Device::Card(d) => Some(d),
            Device::Pcie(_) => None,
        }
    }
}

/// `kind = "pcie"`: the only value a PCIe function's `kind` takes (and its default).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PcieKind {
    #[default]
    Pcie,
}

impl PcieKind {
    fn is_default(&self) -> bool {
        true
    }
}

/// `kind = "card"`: the only value an adapter card's `kind` takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CardKind {
    Card,
}

impl CardKind {
    const NAME: &'static str = "card";
}

/// An adapter card on a 1990s PC's PCI or ISA bus (`kind = "card"`): an interrupt line of the
/// 8259 pair, its driver's class and what its handler does. How often it interrupts is the
/// workload's (`rates` of each `[[workload.phase]]`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardSection {
    pub kind: CardKind,
    pub name: String,
    pub irq: u8,
    /// The driver's interrupt class: `tty`, `net` or `bio` (FreeBSD's `isa.c` masks).
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

/// The bus a card's registers sit on.
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

/// `[probe]`: an instrument outside the host that times each sample.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSection {
    pub kind: ProbeKind,
    /// The pulse's wander against the GPS second (1 sigma).
    pub jitter_ns: f64,
    pub pulse_width_ms: f64,
    /// The interrupt class of the line the pulse comes in on (the parallel port's: `tty` in
    /// 1998 configs).
    pub class: IntrClass,
    /// A windowed run: simulate only this long before each pulse (and the pulse's service),
    /// skipping the time between (`machine/skip.rs`); 0, the default: the whole timeline.
    #[serde(default)]
    pub window_ms: f64,
}

/// What the probe is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// A GPS receiver's pulse-per-second on the platform's parallel port, latched by the
    /// platform's counter card, against the driver's read of the same counter
    /// (`probes/pps.rs`).
    Pps,
}

impl ProbeKind {
    /// The latency metric it measures.
    pub fn metric(self) -> &'static str {
        match self {
            ProbeKind::Pps => "pps_latency",
        }
    }
}

/// A PCIe function (`kind = "pcie"`, the default).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSection {
    #[serde(default, skip_serializing_if = "PcieKind::is_default")]
    pub kind: PcieKind,
    pub name: String,
    #[serde(with = "crate::text::bdf")]
    pub bdf: Bdf,
    #[serde(with = "crate::text::generation")]
    pub link_generation: LinkGen,
    #[serde(with = "crate::text::width")]
    pub link_width: LinkWidth,
    /// The platform's root port (a `bridge` part) whose link the card sits on.
    pub port: String,
    /// Another function of this device's card (a dual-port 82571EB's second port): the
    /// device named here is function 0, on the same link; this one has its `bdf` with the
    /// same bus and device, its own function and INTx pin, and no link of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_of: Option<String>,
    #[serde(with = "crate::text::pin")]
    pub intx_pin: IntxPin,
    pub msi_capable: bool,
    /// The MSI vector: 0 lets the kernel allocate one (`assign_irq_vector`); 32-255 forces it.
    #[serde(default)]
    pub msi_vector: u32,
    /// The CPU its interrupt is aimed at (its `smp_affinity` set to that one CPU): the MSI's
    /// or the IO-APIC pin's destination.
    #[serde(default)]
    pub irq_cpu: u8,
    pub reg_bar: u64,
    pub reg_bar_size: u64,
    #[serde(default)]
    pub status_offset: u64,
    #[serde(default)]
    pub clear_offset: u64,
    #[serde(default)]
    pub pending_flag: u32,
    #[serde(default)]
    pub signature_bar: u64,
    #[serde(default)]
    pub signature_bar_size: u64,
    #[serde(default)]
    pub isr_signature_offset: u64,
    #[serde(default)]
    pub tasklet_signature_offset: u64,
    pub read_turnaround_ns: f64,
    pub deassert_delay_ns: f64,
    /// "poisson" or "periodic", or "none" for a card that only shares the line.
    #[serde(default)]
    pub interrupts: Interrupts,
    #[serde(default)]
    pub interval_us: f64,
    /// The card's oscillator against its nominal frequency, in parts per million: its interval
    /// and its counter run this much fast (+) or slow (-) against the host's clocks.
    #[serde(default)]
    pub clock_ppm: f64,
    /// Count the interval from the last interrupt ("trigger", the default) or from the host's
    /// answer to it ("service": the card raises the next one a gap after the answer arrived).
    #[serde(default)]
    pub interval_from: IntervalFrom,
    /// The driver: "seed000" (Figures 3-5, the default), "round-trip" (seed 002: acknowledge
    /// write, counter read) or "generic" (status reads and a clear write).
    #[serde(default)]
    pub driver: DriverName,
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
    /// The network controller behind the function, for `driver = "e1000e"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<NicSection>,
}

/// An Intel 8257x Gigabit Ethernet controller's receive side and the traffic generator on its
/// port (`devices/nic.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicSection {
    /// Receive descriptors (e1000e's RxDescriptors, default 256).
    pub ring: u32,
    /// The receive share of the on-chip packet buffer, in bytes (PBA).
    pub buffer_bytes: u32,
    /// What one frame takes in that buffer.
    pub buffer_bytes_per_frame: u32,
    /// Frame size on the wire (without preamble and inter-frame gap).
    pub frame_bytes: u32,
    /// The traffic generator's fixed gap between frames, in microseconds; 0: no traffic.
    pub gap_us: f64,
    /// From a frame's end on the wire to its descriptor written back, with a descriptor ready.
    pub rx_latency_ns: f64,
    /// From a tail write reaching the chip to its fetch of the descriptors it gave.
    pub descriptor_fetch_ns: f64,
    /// Transmit descriptors (e1000e's TxDescriptors, default 256).
    pub tx_ring: u32,
    /// From a transmit tail write reaching the chip to the frame's descriptor written back,
    /// with the wire free.
    pub tx_latency_ns: f64,
    /// TIDV: how long a transmit write-back's interrupt cause waits (e1000e's TxIntDelay).
    pub tx_int_delay_us: f64,
    /// IPv4 forwarding: the device (by name) every frame received here is routed out of;
    /// absent, the host receives only (its stack drops frames not addressed to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_to: Option<String>,
}

/// Seed 002's counter.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundTripSection {
    pub counter_hz: f64,
    /// From the write leaving the card's PCIe core to the register that stops the counter.
    pub register_access_ns: f64,
}

fn default_dma_bytes() -> u32 {
    256
}

/// How a device spaces its interrupts (`interrupts`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interrupts {
    /// Exponentially distributed gaps with mean `interval_us`.
    Poisson,
    /// Every `interval_us` of the card's clock.
    Periodic,
    /// None: a card after the first that only shares the line, or a network controller (its
    /// traffic makes its interrupts).
    #[default]
    None,
}

/// Where a device counts its interval from (`interval_from`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntervalFrom {
    /// From one interrupt to the next.
    #[default]
    Trigger,
    /// From the host's answer to the last one.
    Service,
}

/// The driver that runs a device (`driver`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriverName {
    /// Seed 000's Figures 3-5: status check (legacy), ISR signature, tasklet.
    #[default]
    Seed000,
    /// Seed 002's acknowledge write and counter read.
    RoundTrip,
    /// Status reads and a clear write.
    Generic,
    /// Linux 2.6.29's e1000e on an 82571/82572 (needs a `[device.nic]`).
    E1000e,
    /// Linux 2.4.21's e1000 7.0.33-k2-NAPI on an 82571 (needs a `[device.nic]`; a shared
    /// level line, static throttling).
    E1000,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// A FreeBSD kernel's file (`family = "freebsd"`): FreeBSD 1998's ISA interrupt path
/// (`sys/i386/isa/icu_vector.s`, `ipl_funcs.c`, `icu_ipl.s`, `clock.c`, `isa.c`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BsdKernelFile {
    pub name: String,
    /// Always [`Family::Freebsd`].
    pub family: Family,
    pub description: String,
    pub hz: u32,
    /// `pseudo-device sl`: tty_imask and net_imask merged.
    pub slip: bool,
    pub stub: crate::kernel::freebsd::StubCosts,
    pub clock: BsdClockCosts,
    pub statclock: BsdStatclockCosts,
    pub pps: BsdPpsCosts,
    /// `splXXX()` / `splx()` without a pending interrupt.
    pub spl_instructions: u32,
    /// `[range.*]`: the plausible ranges of this file's estimates (`scenario::ranges`), read
    /// from the text by `validate --uncertainty`; the model never sees them.
    #[serde(default, skip_serializing)]
    pub range: Option<toml::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BsdClockCosts {
    /// `clkintr` + `hardclock` (timecounter, timeouts, statistics), instructions.
    pub hardclock_instructions: u32,
    /// Reads of the counter card per tick (`tco_forward` and the PPS poll).
    pub timecounter_reads: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BsdStatclockCosts {
    pub statclock_instructions: u32,
}

/// `ppcintr` -> `ppb_intr` -> `ppsintr` -> `nanotime` -> `xrpu_get_timecount`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BsdPpsCosts {
    pub before_read_instructions: u32,
    pub after_read_instructions: u32,
}
