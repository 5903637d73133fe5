//! Checking a scenario's values: configurations the hardware or the kernel cannot have, and
//! physical quantities outside the range the model accepts, each refused with the file and line
//! (or the flag) it came from and how to fix it.

use super::error::ScenarioError;
use super::files::{DriverName, IchSection, Interrupts, IntervalFrom};
use super::Scenario;
use crate::hw::ioapic::IOAPIC_BASE;
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::Bdf;
use crate::kernel::Delivery;
use crate::topology::{PartKindName, PartSection};

pub(super) use crate::hw::ich::NOT_WIRED;

impl Scenario {
    /// The platform's `[ich]`: the interrupt block of this machine (PIRQ routing, the legacy
    /// block's and the IO-APIC's clocks) is read from it. Only a platform whose south bridge
    /// answers within its bus cycles (seed 004's PIIX4) has none.
    pub(super) fn ich(&self) -> Result<&IchSection, ScenarioError> {
        self.platform.ich.as_ref().ok_or_else(|| {
            self.invalid(
                "platform.ich",
                format!(
                    "platform '{}' has no [ich] section, and this scenario's machine reads its \
                     interrupt block from it (PIRQ routing, the legacy block's and the \
                     IO-APIC's clocks): add one, as platforms/ws-2008-core2-ich9.toml has",
                    self.platform.name
                ),
            )
        })
    }

    /// An access to a core's Local APIC: the Linux kernels here end interrupts and run their
    /// tick on it.
    pub(super) fn lapic_access_cycles(&self) -> Result<f64, ScenarioError> {
        self.platform.cpu.lapic_access_cycles.ok_or_else(|| {
            self.invalid(
                "platform.cpu.lapic_access_cycles",
                format!(
                    "platform '{}' gives no Local APIC access cost, so its cores have none; \
                     the Linux kernels of this machine use the Local APIC: give the cost in \
                     core cycles (40 on the 2008 platforms)",
                    self.platform.name
                ),
            )
        })
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
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
            let key = |f: &str| format!("device.{i}.{f}");
            // A network controller's registers are its own (`devices/nic.rs`); it has no
            // signature region.
            let exerciser = d.nic.is_none();
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
                if exerciser && offset.checked_add(4).is_none_or(|end| end > size) {
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
                if size == 0 {
                    continue;
                }
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

    /// The CPU's cycles for the serialising instructions a kernel file itemises: each cost
    /// the kernel needs must be on the platform, and none may be negative.
    fn check_serializing(&self) -> Result<(), ScenarioError> {
        let c = &self.platform.cpu;
        let costs = [
            ("locked_rmw_cycles", c.locked_rmw_cycles, "locked"),
            ("rdtsc_cycles", c.rdtsc_cycles, "rdtsc"),
            (
                "irq_save_restore_cycles",
                c.irq_save_restore_cycles,
                "irq_saves",
            ),
        ];
        for (key, v, _) in costs {
            if let Some(v) = v.filter(|v| !(*v >= 0.0 && v.is_finite())) {
                return Err(self.invalid(
                    &format!("platform.cpu.{key}"),
                    format!("{v} is not a cost: give 0 or more core cycles"),
                ));
            }
        }
        let Some(net) = &self.kernel.linux().net else {
            return Ok(());
        };
        for (stage, n) in net.serializing.stages() {
            for (key, v, count) in costs {
                let wanted = match count {
                    "locked" => n.locked,
                    "rdtsc" => n.rdtsc,
                    _ => n.irq_saves,
                };
                if wanted > 0 && v.is_none() {
                    return Err(self.invalid(
                        &format!("platform.cpu.{key}"),
                        format!(
                            "kernel '{}' itemises {wanted} {count} per frame in its {} stage \
                             ([net.serializing]), and platform '{}' does not say what one \
                             costs: add {key} to its [cpu] (a measured cycle count, as \
                             platforms/server-2006-bensley-5000p.toml has) or take the count \
                             out",
                            self.kernel.name(),
                            stage.name(),
                            self.platform.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The workload, for every kernel family: one load for the whole run, or phases that follow
    /// the run's sample numbers, each a load of its own with its devices' interrupt rates.
    /// `rated`: the devices a phase may give a rate (by name), or why a device may not have one.
    pub(super) fn check_workload(
        &self,
        rated: &[(&str, Option<&str>)],
    ) -> Result<(), ScenarioError> {
        let Some(w) = &self.file.workload else {
            return Ok(());
        };
        if w.phase.is_empty() {
            let (Some(_), Some(_)) = (w.busy_fraction, w.busy_ms) else {
                return Err(self.invalid(
                    "workload",
                    "give busy_fraction (0 to 1) and busy_ms (a busy stretch's mean length), or \
                     the load in [[workload.phase]]s",
                ));
            };
            return self.check_load("workload", &w.load());
        }
        let given = [
            ("busy_fraction", w.busy_fraction.is_some()),
            ("busy_ms", w.busy_ms.is_some()),
            ("section", !w.section.is_empty()),
            ("cold_fraction", w.cold_fraction != 0.0),
        ];
        if let Some((key, _)) = given.iter().find(|(_, given)| *given) {
            return Err(self.invalid(
                &format!("workload.{key}"),
                "with [[workload.phase]]s, each phase gives its own load: move busy_fraction, \
                 busy_ms, section and cold_fraction into the phases",
            ));
        }
        if self.counts_frames() {
            return Err(self.invalid(
                "workload.phase",
                "a run of fixed length (duration_ms) counts frames, not samples: phases follow \
                 sample numbers; give the run one load in [workload]",
            ));
        }
        let mut last = 0;
        for (i, ph) in w.phase.iter().enumerate() {
            let key = |k: &str| format!("workload.phase.{i}.{k}");
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
            if w.phase[..i].iter().any(|p| p.name == ph.name) {
                return Err(self.invalid(
                    &key("name"),
                    format!(
                        "two phases are named '{}': a phase's results go by its name",
                        ph.name
                    ),
                ));
            }
            self.check_load(&format!("workload.phase.{i}"), &ph.load())?;
            for (name, rate) in &ph.rates {
                let key = key(&format!("rates.{name}"));
                match rated.iter().find(|(n, _)| n == name) {
                    None => {
                        let names: Vec<&str> = rated.iter().map(|(n, _)| *n).collect();
                        return Err(self.invalid(
                            &key,
                            format!("no device '{name}'; the devices are: {}", names.join(", ")),
                        ));
                    }
                    Some((_, Some(why))) => return Err(self.invalid(&key, *why)),
                    Some((_, None)) => {}
                }
                self.in_range(&key, *rate, 0.0, 1e7, "per s")?;
            }
        }
        if last < self.file.samples {
            return Err(self.invalid(
                &format!("workload.phase.{}.until_sample", w.phase.len() - 1),
                format!(
                    "the last phase ends at sample {last}, before the run's {} samples: extend \
                     its until_sample",
                    self.file.samples
                ),
            ));
        }
        Ok(())
    }

    /// One load (`prefix`: `workload` or `workload.phase.N`): a busy fraction, stretches, and
    /// sections whose time fits in a busy second.
    fn check_load(
        &self,
        prefix: &str,
        w: &crate::workload::WorkloadSpec,
    ) -> Result<(), ScenarioError> {
        let key = |f: &str| format!("{prefix}.{f}");
        self.in_range(&key("busy_fraction"), w.busy_fraction, 0.0, 1.0, "")?;
        self.in_range(&key("busy_ms"), w.busy_ms, 1e-3, 1e5, "ms")?;
        self.in_range(&key("cold_fraction"), w.cold_fraction, 0.0, 1.0, "")?;
        let mut held = 0.0;
        for (i, s) in w.section.iter().enumerate() {
            let key = |f: &str| format!("{prefix}.section.{i}.{f}");
            self.in_range(&key("per_busy_s"), s.per_busy_s, 0.0, 1e6, "per s")?;
            self.in_range(&key("mean_us"), s.mean_us, 1e-3, 1e6, "us")?;
            self.in_range(&key("sigma"), s.sigma, 0.0, 5.0, "")?;
            if s.distribution == crate::workload::LengthDistribution::Lognormal && s.sigma == 0.0 {
                return Err(self.invalid(
                    &key("sigma"),
                    "a lognormal length needs its spread: give sigma > 0 (the standard deviation \
                     of the length's logarithm), or use distribution = \"fixed\"",
                ));
            }
            held += s.per_busy_s * s.mean_us * 1e-6;
        }
        if held >= 1.0 {
            return Err(self.invalid(
                &key("section"),
                format!(
                    "the sections would hold interrupts off for {:.0}% of every busy second: \
                     lower per_busy_s or mean_us so that they take less than all of it",
                    held * 100.0
                ),
            ));
        }
        Ok(())
    }

    /// The parts seed 002 brought: idle states, SMIs, drivers, the round-trip counter, switches,
    /// bit errors and DMA traffic.
    fn check_modern(&self) -> Result<(), ScenarioError> {
        let p = &self.platform;
        if let Some(idle) = &self.kernel.linux().idle {
            if p.cpu.idle_states.is_empty() {
                return Err(self.invalid(
                    "platform.cpu.idle_states",
                    format!(
                        "the kernel '{}' idles through cpuidle ([idle]), but the platform lists no \
                         idle states: add [[cpu.idle_states]] (at least C1) to the platform",
                        self.kernel.name()
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
            self.in_range(&key("wake_sigma"), st.wake_sigma, 0.0, 3.0, "")?;
            if st.target_residency_us < last_residency {
                return Err(self.invalid(
                    &key("target_residency_us"),
                    "idle states go shallowest first: each state's target residency must be at \
                     least the previous one's",
                ));
            }
            last_residency = st.target_residency_us;
        }
        if let Some(f) = &p.cpu.frequency {
            self.in_range("platform.cpu.frequency.low_hz", f.low_hz, 1e6, 1e11, "Hz")?;
            self.in_range("platform.cpu.frequency.high_hz", f.high_hz, 1e6, 1e11, "Hz")?;
            self.in_range("platform.cpu.frequency.hold_us", f.hold_us, 1.0, 1e9, "us")?;
            if !(f.low_hz..=f.high_hz).contains(&p.cpu.clock_hz) {
                return Err(self.invalid(
                    "platform.cpu.frequency.low_hz",
                    format!(
                        "the clock moves between {} and {} Hz, but the core starts at clock_hz = \
                         {} Hz, outside them: give low_hz <= clock_hz <= high_hz (to run at one \
                         clock, set platform.cpu.frequency.low_hz and high_hz to it as well)",
                        f.low_hz, f.high_hz, p.cpu.clock_hz
                    ),
                ));
            }
        }
        if let Some(t) = &self.kernel.linux().tick {
            self.in_range("kernel.tick.handler_sigma", t.handler_sigma, 0.0, 3.0, "")?;
            self.in_range(
                "kernel.tick.timer_softirq_sigma",
                t.timer_softirq_sigma,
                0.0,
                3.0,
                "",
            )?;
        }
        if let Some(smi) = &p.smi {
            self.in_range("platform.smi.rate_per_s", smi.rate_per_s, 0.0, 1e5, "per s")?;
            self.in_range("platform.smi.duration_us", smi.duration_us, 0.0, 1e6, "us")?;
        }
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
            let key = |f: &str| format!("device.{i}.{f}");
            if d.driver == DriverName::RoundTrip {
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
            if d.interval_from == IntervalFrom::Service && d.driver != DriverName::RoundTrip {
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
                if d.driver != DriverName::RoundTrip {
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
            let gen = d.link_generation;
            let link_mb_per_s = f64::from(d.link_width.lanes()) * gen.transfers_per_s()
                / gen.line_bits_per_byte()
                / 1e6;
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
                            d.link_width.lanes(),
                            d.link_generation.number()
                        ),
                    ));
                }
            }
            let memory = p
                .part
                .iter()
                .find(|(_, s)| s.kind == Some(PartKindName::Memory));
            if d.dma_read_mb_per_s > 0.0 && memory.is_none_or(|(_, m)| m.read_ns.is_none()) {
                return Err(self.invalid(
                    &key("dma_read_mb_per_s"),
                    format!(
                        "DMA reads need the platform's memory read latency: set \
                         platform.part.{}.read_ns",
                        memory.map_or("<memory>", |(n, _)| n.as_str())
                    ),
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

    /// The IO-APIC pin each of PIRQA..H drives ([`NOT_WIRED`]: none), from the platform's
    /// `[[wire]]`s from the PIRQ router to the IO-APIC (the part decoding its registers).
    pub(super) fn pirq_pins(&self) -> Result<[u8; 8], ScenarioError> {
        let p = &self.platform;
        let named = |kind: PartKindName, holds: &dyn Fn(&PartSection) -> bool| {
            p.part
                .iter()
                .find(|(_, s)| s.kind == Some(kind) && holds(s))
                .map(|(n, _)| n.as_str())
        };
        let router = named(PartKindName::PirqRouter, &|_| true);
        let ioapic = named(PartKindName::Function, &|s| {
            s.mem
                .iter()
                .any(|w| (w[0]..w[0].saturating_add(w[1])).contains(&IOAPIC_BASE))
        });
        let mut pins = [NOT_WIRED; 8];
        for (i, w) in p.wire.iter().enumerate() {
            let key = |k: &str| format!("platform.wire.{i}.{k}");
            if Some(w.from.as_str()) != router {
                return Err(self.invalid(
                    &key("from"),
                    format!(
                        "a wire from '{}': the machine simulates the PIRQ router's wires only \
                         (a conventional PCI device on its own wire is not modelled yet)",
                        w.from
                    ),
                ));
            }
            if Some(w.to.as_str()) != ioapic {
                return Err(self.invalid(
                    &key("to"),
                    format!(
                        "the PIRQ router's line {} goes to '{}': its wires go to the IO-APIC \
                         (the part decoding 0xFEC00000); the 8259 input of each PIRQ is the \
                         BIOS's PIRQx_ROUT, platform.ich.pirq_pic_irq",
                        w.from_line, w.to
                    ),
                ));
            }
            if w.to_line >= crate::hw::ioapic::PINS {
                return Err(self.invalid(
                    &key("to_line"),
                    format!(
                        "PIRQ{} is wired to IO-APIC pin {}, but an IO-APIC has pins 0-23 \
                         (82093AA: 24 redirection entries); use 0-23",
                        pirq_letter(usize::from(w.from_line)),
                        w.to_line
                    ),
                ));
            }
            let pin = &mut pins[usize::from(w.from_line)];
            if *pin != NOT_WIRED {
                let pins = if *pin == w.to_line {
                    format!("pin {} twice", w.to_line)
                } else {
                    format!("pins {} and {}", *pin, w.to_line)
                };
                return Err(self.invalid(
                    &key("from_line"),
                    format!(
                        "PIRQ{} is wired to IO-APIC {pins}: one PIRQ line drives one pin, by one \
                         wire",
                        pirq_letter(usize::from(w.from_line)),
                    ),
                ));
            }
            *pin = w.to_line;
        }
        Ok(pins)
    }

    /// `who` signals on a PIRQ line that drives no IO-APIC pin.
    pub(super) fn unwired(&self, key: &str, who: &str, pirq: u8) -> ScenarioError {
        self.invalid(
            key,
            format!(
                "'{who}' signals on PIRQ{}, which no [[wire]] connects to the IO-APIC: wire the \
                 router's line {pirq} to a pin, or use delivery = \"xtpic\"",
                pirq_letter(usize::from(pirq))
            ),
        )
    }

    /// The platform's cores: its parts of kind "core" (at most 255 can be counted; more are
    /// refused as more than the model holds).
    fn platform_cores(&self) -> u8 {
        let n = self
            .platform
            .part
            .values()
            .filter(|p| p.kind == Some(PartKindName::Core))
            .count();
        u8::try_from(n).unwrap_or(u8::MAX)
    }

    /// The cores the run simulates: those the kernel brings up (all with an SMP kernel, the
    /// boot CPU alone with a UP one), or fewer with `cpus`.
    pub fn cores(&self) -> u8 {
        let booted = if self.kernel.linux().smp {
            self.platform_cores()
        } else {
            1
        };
        match self.file.cpus {
            0 => booted,
            n => n.min(booted),
        }
    }

    /// The cores: how many the package has, how many the kernel brings up and the run
    /// simulates, and where each device's interrupt is aimed.
    fn check_cores(&self, pins: &[u8; 8], lines: &[(Bdf, u8)]) -> Result<(), ScenarioError> {
        // Core sets are 64-bit masks (the topology refuses the broadcast ID and doubles).
        let platform_cores = self.platform_cores();
        if !(1..=64).contains(&platform_cores) {
            return Err(self.invalid(
                "platform.part",
                format!("{platform_cores} parts of kind \"core\": the model holds 1 to 64"),
            ));
        }
        let booted = if self.kernel.linux().smp {
            platform_cores
        } else {
            1
        };
        if let n @ 1.. = self.file.cpus {
            if n > booted {
                let why = if self.kernel.linux().smp {
                    format!("the platform has {platform_cores} cores")
                } else {
                    format!(
                        "the kernel '{}' is uniprocessor (no smp = true) and runs on one core",
                        self.kernel.name()
                    )
                };
                return Err(
                    self.invalid("cpus", format!("cpus = {n}, but {why}: use 1 to {booted}"))
                );
            }
        }
        let cores = self.cores();
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
            if d.irq_cpu >= cores {
                return Err(self.invalid(
                    &format!("device.{i}.irq_cpu"),
                    format!(
                        "device '{}' aims its interrupt at CPU {}, but the run has {cores} \
                         (CPUs 0 to {}): pick one of those, or raise `cpus`",
                        d.name,
                        d.irq_cpu,
                        cores - 1
                    ),
                ));
            }
            // One IO-APIC pin is one IRQ with one destination: the on-board functions' (CPU 0)
            // and every device's on it.
            let msi = self.file.delivery == Delivery::Msi && d.msi_capable;
            if d.irq_cpu != 0 && self.file.delivery != Delivery::Xtpic && !msi {
                let pin_of = |pirq: u8| pins.get(usize::from(pirq)).filter(|&&p| p != NOT_WIRED);
                let pin = pin_of(lines[i].1);
                let onboard = self.ich()?.functions.iter().map(|f| (f.pirq, 0u8, &f.name));
                let devices = self.pcie_devices();
                let others = devices[..i]
                    .iter()
                    .zip(lines)
                    .filter(|(o, _)| !(self.file.delivery == Delivery::Msi && o.msi_capable))
                    .map(|(o, &(_, line))| (line, o.irq_cpu, &o.name));
                if let Some((_, cpu, name)) = onboard
                    .chain(others)
                    .find(|(q, cpu, _)| pin_of(*q) == pin && *cpu != d.irq_cpu)
                {
                    return Err(self.invalid(
                        &format!("device.{i}.irq_cpu"),
                        format!(
                            "device '{}' aims its interrupt at CPU {}, but it shares IO-APIC pin \
                             {} with '{name}', aimed at CPU {cpu}; a pin is one IRQ with one \
                             destination: give both the same CPU",
                            d.name,
                            d.irq_cpu,
                            pin.copied().unwrap_or_default()
                        ),
                    ));
                }
            }
            if d.irq_cpu != 0 && self.file.delivery == Delivery::Xtpic {
                return Err(self.invalid(
                    &format!("device.{i}.irq_cpu"),
                    format!(
                        "device '{}' aims its interrupt at CPU {}, but XT-PIC delivery reaches \
                         the boot CPU only (the 8259's INTR pin): use 0, or delivery = \"ioapic\" \
                         or \"msi\"",
                        d.name, d.irq_cpu
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Refuse configurations the hardware or the kernel cannot have: the kernel's family says
    /// whose model runs the scenario, and that model checks it.
    pub(super) fn check(&self) -> Result<(), ScenarioError> {
        match self.kernel.family() {
            super::files::Family::Linux => self.check_linux(),
            super::files::Family::Freebsd => crate::scenario::freebsd::check(self),
        }
    }

    /// Linux's model: PCIe functions behind the platform's root ports, delivered by the
    /// 8259s, the IO-APIC or MSI.
    fn check_linux(&self) -> Result<(), ScenarioError> {
        if let Some(i) = self.file.device.iter().position(|d| d.pcie().is_none()) {
            return Err(self.invalid(
                &format!("device.{i}.kind"),
                "Linux's model runs PCIe functions (kind = \"pcie\"); an adapter card on the \
                 8259's lines runs under FreeBSD's (a kernel file with family = \"freebsd\")",
            ));
        }
        if self.file.probe.is_some() {
            return Err(self.invalid(
                "probe",
                "Linux's model times its samples with the device's counter, the analyzer or \
                 cyclictest; the GPS pulse probe runs under FreeBSD's",
            ));
        }
        // The parts and links, with the devices in their ports; the PIRQ line each device's
        // INTx arrives on (swizzled on its way) and the IO-APIC pin each line drives.
        let (t, ends) = self.topology()?;
        let pins = self.pirq_pins()?;
        let lines = self.intx_lines(&t, &ends)?;
        self.check_cores(&pins, &lines)?;
        // A wire to the IO-APIC for every PIRQ line an interrupt it delivers arrives on.
        if self.file.delivery != Delivery::Xtpic {
            for (i, (d, &(_, pirq))) in self.pcie_devices().into_iter().zip(&lines).enumerate() {
                let msi = self.file.delivery == Delivery::Msi && d.msi_capable;
                if !msi && pins[usize::from(pirq)] == NOT_WIRED {
                    return Err(self.unwired(&format!("device.{i}.intx_pin"), &d.name, pirq));
                }
            }
            for (j, f) in self.ich()?.functions.iter().enumerate() {
                if pins[usize::from(f.pirq)] == NOT_WIRED {
                    return Err(self.unwired(
                        &format!("platform.ich.functions.{j}"),
                        &f.name,
                        f.pirq,
                    ));
                }
            }
        }
        let ich = self.ich()?;
        let lapic_access_cycles = self.lapic_access_cycles()?;
        self.one_per_pirq("platform.ich.pirq_pic_irq", ich.pirq_pic_irq.len())?;
        for (i, &irq) in ich.pirq_pic_irq.iter().enumerate() {
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
        // Physical quantities in their plausible ranges: beyond them the picosecond clock would
        // overflow or round to nothing, and the model would mean nothing.
        self.check_cpu()?;
        let mut ranges: Vec<(String, f64, f64, f64, &str)> = vec![
            (
                "platform.cpu.lapic_access_cycles".into(),
                lapic_access_cycles,
                0.0,
                1e6,
                "cycles",
            ),
            (
                "platform.ich.internal_clock_hz".into(),
                ich.internal_clock_hz,
                1e5,
                1e11,
                "Hz",
            ),
            (
                "platform.ich.legacy_io_clocks".into(),
                f64::from(ich.legacy_io_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.ich.intack_clocks".into(),
                f64::from(ich.intack_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.ich.ioapic_access_clocks".into(),
                f64::from(ich.ioapic_access_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "platform.ich.ioapic_delivery_clocks".into(),
                f64::from(ich.ioapic_delivery_clocks),
                0.0,
                1e6,
                "clocks",
            ),
            (
                "kernel.vector_step".into(),
                f64::from(self.kernel.linux().vector_step),
                1.0,
                32.0,
                "vectors",
            ),
        ];
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
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
            if d.interrupts != Interrupts::None {
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
        if self.file.device.is_empty() && self.file.cyclictest.is_none() {
            return Err(self.invalid(
                "device",
                "a scenario needs at least one [[device]] (the measured exerciser comes first), \
                 or a [cyclictest] to measure",
            ));
        }
        if let Some(ct) = &self.file.cyclictest {
            if self.kernel.linux().sched.is_none() {
                return Err(self.invalid(
                    "cyclictest",
                    "cyclictest is a task, and this kernel file has no [sched] section (its \
                     scheduler and high-resolution timers): use a kernel that has one, such as \
                     kernels/linux-2.6.29-i386-up.toml",
                ));
            }
            self.in_range("cyclictest.interval_us", ct.interval_us, 1.0, 1e7, "us")?;
            if ct.priority > 99 {
                return Err(self.invalid(
                    "cyclictest.priority",
                    format!(
                        "{} is not a SCHED_FIFO priority: use 1-99, or 0 for SCHED_OTHER",
                        ct.priority
                    ),
                ));
            }
            if ct.threads == 0 || ct.threads > self.cores() {
                return Err(self.invalid(
                    "cyclictest.threads",
                    format!(
                        "{} threads on {} CPU(s): cyclictest runs one thread per CPU, 1 to {}",
                        ct.threads,
                        self.cores(),
                        self.cores()
                    ),
                ));
            }
        }
        if let Some(sc) = &self.kernel.linux().sched {
            if sc.rt_period_us == 0 || sc.rt_period_us > 1_000_000_000 {
                return Err(self.invalid(
                    "kernel.sched.rt_period_us",
                    format!(
                        "{} us is not an RT period: give 1 to 1,000,000,000 microseconds \
                         (the sysctl's default is 1,000,000)",
                        sc.rt_period_us
                    ),
                ));
            }
            if sc.rt_runtime_us < -1 || sc.rt_runtime_us > sc.rt_period_us as i64 {
                return Err(self.invalid(
                    "kernel.sched.rt_runtime_us",
                    format!(
                        "{} us of every {} us: the RT runtime is 0 to the period, or -1 for no \
                         limit (as sched_rt_runtime_us takes it; the default is 950,000)",
                        sc.rt_runtime_us, sc.rt_period_us
                    ),
                ));
            }
            let tick = self.kernel.linux().tick.as_ref().is_some_and(|t| t.hz > 0);
            if !tick || self.file.delivery == Delivery::Xtpic {
                return Err(self.invalid(
                    "kernel.sched",
                    "a kernel with [sched] runs its timers on the Local APIC timer: it needs a \
                     [tick] with hz > 0 and the Local APIC (delivery = \"ioapic\" or \"msi\")",
                ));
            }
        }
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
            let key = |f: &str| format!("device.{i}.{f}");
            match (&d.nic, d.driver) {
                (None, DriverName::E1000e | DriverName::E1000) => {
                    return Err(self.invalid(
                        &key("driver"),
                        "the e1000e and e1000 drivers run a network controller: add a \
                         [device.nic] section (ring, buffer_bytes, frame_bytes, gap_us, ...)",
                    ))
                }
                (Some(_), DriverName::E1000e | DriverName::E1000) => {
                    // Each driver is written against one NAPI interface: e1000 7.0.33's
                    // `e1000_clean(dev, &budget)` against 2.4's, e1000e's against 2.6's.
                    use crate::kernel::costs::NapiApi;
                    let (wants, driver) = match d.driver {
                        DriverName::E1000 => (NapiApi::DevPoll, "e1000"),
                        _ => (NapiApi::NapiStruct, "e1000e"),
                    };
                    if let Some(net) = self.kernel.linux().net.as_ref().filter(|n| n.napi != wants)
                    {
                        return Err(self.invalid(
                            &key("driver"),
                            format!(
                                "driver \"{driver}\" polls through the {} NAPI interface, but \
                                 kernel '{}' has napi = \"{}\" ([net]): pick a kernel of the \
                                 driver's generation (e1000 with linux-2.4.21-i386-smp, e1000e \
                                 with a 2.6 kernel)",
                                wants.name(),
                                self.kernel.name(),
                                net.napi.name()
                            ),
                        ));
                    }
                }
                (Some(_), other) => {
                    return Err(self.invalid(
                        &key("nic"),
                        format!(
                            "a network controller needs driver = \"e1000e\" or \"e1000\" (this \
                             device's driver is {other:?})"
                        ),
                    ))
                }
                (None, _) if d.signature_bar_size == 0 => {
                    return Err(self.invalid(
                        &key("signature_bar_size"),
                        "missing: the exerciser's drivers write their signatures there; give \
                         signature_bar, signature_bar_size and the register offsets",
                    ))
                }
                (None, _) => {}
            }
            if let Some(n) = &d.nic {
                for (field, count, param) in [
                    ("nic.ring", n.ring, "RxDescriptors"),
                    ("nic.tx_ring", n.tx_ring, "TxDescriptors"),
                ] {
                    if !(64..=4096).contains(&count) || count % 8 != 0 {
                        return Err(self.invalid(
                            &key(field),
                            format!(
                                "{count} descriptors: the 8257x rings hold 64 to 4096, a \
                                 multiple of 8 (e1000e {param})"
                            ),
                        ));
                    }
                }
                if n.frame_bytes < 64 || n.frame_bytes > 1518 {
                    return Err(self.invalid(
                        &key("nic.frame_bytes"),
                        format!(
                            "{} bytes is not an Ethernet frame (64 to 1518)",
                            n.frame_bytes
                        ),
                    ));
                }
                if n.buffer_bytes_per_frame < n.frame_bytes
                    || n.buffer_bytes < n.buffer_bytes_per_frame
                {
                    return Err(self.invalid(
                        &key("nic.buffer_bytes_per_frame"),
                        "a frame takes at least its own size in the packet buffer, and the buffer \
                         holds at least one",
                    ));
                }
                // Gigabit Ethernet: 8 ns per byte, with the 8-byte preamble and 12-byte gap.
                let line_us = f64::from(n.frame_bytes + 20) * 8e-3;
                if n.gap_us != 0.0 && !(n.gap_us >= line_us && n.gap_us <= 1e6) {
                    return Err(self.invalid(
                        &key("nic.gap_us"),
                        format!(
                            "{} us between {}-byte frames is {}: Gigabit Ethernet carries one \
                             every {line_us:.3} us at most (with preamble and inter-frame gap); \
                             use {line_us:.3} to 1e6 us, or 0 for no traffic",
                            n.gap_us,
                            n.frame_bytes,
                            if n.gap_us < line_us {
                                "faster than line rate"
                            } else {
                                "out of range"
                            }
                        ),
                    ));
                }
                self.in_range(&key("nic.rx_latency_ns"), n.rx_latency_ns, 0.0, 1e6, "ns")?;
                self.in_range(&key("nic.tx_latency_ns"), n.tx_latency_ns, 0.0, 1e6, "ns")?;
                self.in_range(
                    &key("nic.tx_int_delay_us"),
                    n.tx_int_delay_us,
                    0.0,
                    67_000.0,
                    "us",
                )?;
                if let Some(to) = &n.forward_to {
                    let target = self.pcie_devices().into_iter().find(|o| &o.name == to);
                    if to == &d.name || target.is_none_or(|o| o.nic.is_none()) {
                        let nics: Vec<&str> = (self.pcie_devices().into_iter())
                            .filter(|o| o.nic.is_some() && o.name != d.name)
                            .map(|o| o.name.as_str())
                            .collect();
                        let choice = if nics.is_empty() {
                            "this scenario has no other network controller to forward to"
                                .to_string()
                        } else {
                            format!("forward to one of [{}]", nics.join(", "))
                        };
                        return Err(self.invalid(
                            &key("nic.forward_to"),
                            format!(
                                "'{to}' is not another network controller of this scenario: \
                                 {choice}, or leave forward_to out to receive only"
                            ),
                        ));
                    }
                }
                self.in_range(
                    &key("nic.descriptor_fetch_ns"),
                    n.descriptor_fetch_ns,
                    0.0,
                    1e6,
                    "ns",
                )?;
            }
        }
        let mut msi_vectors: Vec<(u32, &str)> = Vec::new();
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
            let key = |f: &str| format!("device.{i}.{f}");
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
            // The first device is the measured one, unless cyclictest measures (and a network
            // controller's traffic makes its interrupts).
            let measured = i == 0 && self.file.cyclictest.is_none() && d.nic.is_none();
            if d.interrupts == Interrupts::None && measured {
                return Err(self.invalid(
                    &key("interrupts"),
                    "interrupts = \"none\" is for a card after the first that only shares the \
                     line; the first device is the measured one: use \"poisson\" or \"periodic\"",
                ));
            }
        }
        self.check_bars()?;
        self.check_modern()?;
        // A phase may give a rate to a card that raises interrupts of its own.
        let rated: Vec<(&str, Option<&str>)> = (self.pcie_devices().into_iter())
            .map(|d| {
                let why = if d.nic.is_some() {
                    Some("a network controller's interrupts come from its traffic: give its port's gap_us instead")
                } else if d.interrupts == Interrupts::None {
                    Some("this card raises no interrupts of its own (interrupts = \"none\")")
                } else {
                    None
                };
                (d.name.as_str(), why)
            })
            .collect();
        self.check_workload(&rated)?;
        // The measured card's interrupts are the run's samples: it cannot stop raising them.
        let measured = (self.pcie_devices().first())
            .filter(|d| self.file.cyclictest.is_none() && d.nic.is_none())
            .map(|d| d.name.clone());
        let phases = self
            .file
            .workload
            .as_ref()
            .map_or(&[][..], |w| &w.phase[..]);
        for (i, ph) in phases.iter().enumerate() {
            if let Some(name) = &measured {
                if ph.rates.get(name) == Some(&0.0) {
                    return Err(self.invalid(
                        &format!("workload.phase.{i}.rates.{name}"),
                        format!(
                            "{name} is the measured device: its interrupts are the run's \
                             samples, so its rate must be above 0"
                        ),
                    ));
                }
            }
        }
        if let Some(net) = self.kernel.linux().net.as_ref() {
            for (key, n) in [
                ("tx_packet_lines_in_flight", net.tx_packet_lines_in_flight),
                ("memory_lines_in_flight", net.memory_lines_in_flight),
            ] {
                if !(n >= 1.0 && n.is_finite()) {
                    return Err(self.invalid(
                        &format!("kernel.net.{key}"),
                        format!(
                            "{n} misses in flight: give 1 (one after another) or more (a core \
                             overlapping that many)"
                        ),
                    ));
                }
            }
        }
        if let Some(co) = &self.platform.cpu.coherence {
            for (key, v) in [
                ("same_package_ns", co.same_package_ns),
                ("cross_package_ns", co.cross_package_ns),
                ("memory_line_ns", co.memory_line_ns),
            ] {
                if !(v >= 0.0 && v.is_finite()) {
                    return Err(self.invalid(
                        &format!("platform.cpu.coherence.{key}"),
                        format!("{v} is not a cost: give 0 or more nanoseconds"),
                    ));
                }
            }
        }
        self.check_serializing()?;
        if self.file.duration_ms < 0.0 || !self.file.duration_ms.is_finite() {
            return Err(self.invalid(
                "duration_ms",
                format!(
                    "{} is not a run length: give milliseconds of simulated time (50), or 0 \
                     to count samples",
                    self.file.duration_ms
                ),
            ));
        }
        if self.file.duration_ms == 0.0
            && self.file.cyclictest.is_none()
            && !self.file.device.is_empty()
            && self.pcie_devices().into_iter().all(|d| d.nic.is_some())
        {
            return Err(self.invalid(
                "duration_ms",
                "nothing in this scenario produces samples to count (its devices are network \
                 controllers and it runs no cyclictest): give the run a length, duration_ms = \
                 50.0 (milliseconds of simulated time)",
            ));
        }
        if self.file.duration_ms > 0.0 && self.file.cyclictest.is_some() {
            return Err(self.invalid(
                "duration_ms",
                "a run with cyclictest counts its loops (`samples`): remove duration_ms, or \
                 the [cyclictest] section",
            ));
        }
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
}

pub(super) fn pirq_letter(i: usize) -> char {
    (b'A' + i as u8) as char
}

impl Scenario {
    /// The platform's clock and core in the ranges the model accepts: one set of limits for
    /// every scenario, whichever kernel it runs. Beyond them the picosecond clock would
    /// overflow or round a cycle to nothing, and the model would mean nothing: a core from
    /// 1 MHz to 100 GHz; 0.05 to 100 cycles an instruction; fixed interrupt costs up to a
    /// million cycles; a halted core back within 1 ms (a C1 exit is ~1 us, the deep states
    /// are cpuidle's, `[[cpu.idle_state]]`); a crystal within 0.1%.
    pub(crate) fn check_cpu(&self) -> Result<(), ScenarioError> {
        let p = &self.platform;
        let c = &p.cpu;
        for (key, v, lo, hi, unit) in [
            (
                "platform.crystal_ppm",
                p.crystal_ppm,
                -1000.0,
                1000.0,
                "ppm",
            ),
            ("platform.cpu.clock_hz", c.clock_hz, 1e6, 1e11, "Hz"),
            (
                "platform.cpu.cycles_per_instruction",
                c.cycles_per_instruction,
                0.05,
                100.0,
                "cycles",
            ),
            (
                "platform.cpu.interrupt_vectoring_cycles",
                c.interrupt_vectoring_cycles,
                0.0,
                1e6,
                "cycles",
            ),
            (
                "platform.cpu.privilege_change_cycles",
                c.privilege_change_cycles,
                0.0,
                1e6,
                "cycles",
            ),
            (
                "platform.cpu.iret_cycles",
                c.iret_cycles,
                0.0,
                1e6,
                "cycles",
            ),
            ("platform.cpu.halt_exit_ns", c.halt_exit_ns, 0.0, 1e6, "ns"),
        ] {
            self.in_range(key, v, lo, hi, unit)?;
        }
        if let Some(cache) = &c.cache {
            if cache.line_bytes == 0 || !cache.line_bytes.is_power_of_two() {
                return Err(self.invalid(
                    "platform.cpu.cache.line_bytes",
                    "a cache line is a power of two bytes (32 on the K6, 64 since the Pentium 4)",
                ));
            }
            self.in_range(
                "platform.cpu.cache.instruction_bytes",
                cache.instruction_bytes,
                1.0,
                15.0,
                "bytes",
            )?;
            self.in_range(
                "platform.cpu.cache.line_fill_ns",
                cache.line_fill_ns,
                0.0,
                1e6,
                "ns",
            )?;
        }
        Ok(())
    }
}
