//! Assembling a checked scenario into a [`Machine`]: the fabric and its links, the hub's
//! interrupt block as the BIOS left it, the core, and the kernel as it boots (on-board drivers
//! first, then the measured device's driver requesting its interrupt).

use super::check::{pirq_letter, NOT_WIRED};
use super::error::ScenarioError;
use super::files::{CacheSection, CpuSection, DeviceSection, DriverName, Interrupts, IntervalFrom};
use super::Scenario;
use crate::devices::exerciser::{
    DmaStream, Exerciser, ExerciserConfig, Generator, RoundTripConfig,
};
use crate::devices::Device;
use crate::engine::{RngStreams, SimDuration, SimTime};
use crate::hw::cpu::CpuTiming;
use crate::hw::ich::{Ich, IchTiming, PIRQ_ROUT_DISABLE};
use crate::hw::ioapic::RedirectionEntry;
use crate::hw::ioapic::IOAPIC_BASE;
use crate::hw::lapic::LocalApic;
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::Bdf;
use crate::kernel::context::SchedClass;
use crate::kernel::cpuidle::{Cpuidle, IdleState};
use crate::kernel::cyclic::CyclicThread;
use crate::kernel::drivers::{self, Registers};
use crate::kernel::program::Frame;
use crate::kernel::tasks;
use crate::kernel::Tick;
use crate::kernel::{linux, Action, Chip, Delivery, Flow, Kernel};
use crate::machine::fabric::{Ends, Fabric};
use crate::machine::{ColdCode, Core, Frequency, Machine, MachineBuilder, Phase, Smi};
use crate::probes::analyzer::{Analyzer, LatencyProbe};
use crate::probes::cyclictest::CyclictestProbe;
use crate::probes::round_trip::RoundTripProbe;
use crate::probes::ByPhase;
use crate::probes::SERIES_POINTS;
use crate::topology::route::Request;
use crate::topology::{
    LinkKindName, LinkSection as TopologyLinkSection, PartId, PartKind, PartKindName, PartSection,
    Topology, TopologyError, TopologyFile,
};
use crate::workload::WorkState;
use irqlab_stats::series::SampleSeries;

/// What an adapter does with IPv4 forwarding: the adapter (its index among the network
/// devices) its received frames are routed out of, and whether frames are routed out of it
/// (its poll then cleans its transmit ring).
#[derive(Copy, Clone, Debug, Default)]
struct Forwarding {
    to: Option<u16>,
    transmits: bool,
}

/// How device `k` is probed: MSI or the shared line, its watchdog (in a kernel with tasks:
/// `try_to_wake_up`'s count and the stream its timer's phase is drawn from), its forwarding.
struct NicProbe<'a> {
    k: u8,
    msi: bool,
    watchdog: Option<(u32, &'a mut crate::engine::Stream)>,
    forwarding: Forwarding,
    /// e1000e (2.6.29) or e1000 (2.4.21).
    driver: DriverName,
}

/// e1000e's probe and open for device `k` (section `d`): the adapter's state, its NAPI context
/// and poll, and its ISR (MSI or the shared-line one), whose entry is returned.
fn e1000e_probe(
    kernel: &mut Kernel,
    nc: &crate::kernel::costs::NetCosts,
    d: &DeviceSection,
    n: &super::files::NicSection,
    how: NicProbe<'_>,
) -> crate::kernel::Entry {
    let NicProbe {
        k,
        msi,
        watchdog,
        forwarding,
        driver,
    } = how;
    use crate::kernel::net::{itr_register, Latency, Napi, NetDev};
    let old = driver == DriverName::E1000;
    let dev = kernel.net.devs.len() as u16;
    let napi = kernel.net.napi.len() as u16;
    let itr = initial_itr(driver, nc);
    let rdt = kernel.new_var(u64::from(n.ring - 1));
    let tdt = kernel.new_var(0);
    let itr_reg = kernel.new_var(u64::from(itr_register(itr)));
    kernel.net.devs.push(NetDev {
        name: d.name.clone(),
        napi,
        device: k,
        ring: n.ring,
        rdt,
        cleaned: 0,
        frame_bytes: n.frame_bytes,
        total_packets: 0,
        total_bytes: 0,
        itr_setting: nc.itr_setting,
        itr,
        // The adapter is zeroed at probe: `lowest_latency`.
        rx_itr: Latency::Lowest,
        itr_reg,
        received: 0,
        tx_ring: n.tx_ring,
        tdt,
        tx_in_use: 0,
        tx_total_packets: 0,
        tx_total_bytes: 0,
        tx_itr: Latency::Lowest,
        tx_dropped: 0,
        forward_to: forwarding.to,
        xmit: crate::kernel::program::NO_ENTRY,
        tx_owner: None,
        xmit_cpu: None,
        refcnt_owner: None,
        netdev_owner: None,
    });
    let xmit = if old {
        drivers::e1000::xmit(kernel, nc, &d.name, d.reg_bar, dev)
    } else {
        drivers::e1000e::xmit(kernel, nc, &d.name, d.reg_bar, dev)
    };
    kernel.net.devs[usize::from(dev)].xmit = xmit;
    kernel.net.napi.push(Napi {
        scheduled: false,
        poll: crate::kernel::program::NO_ENTRY,
        weight: nc.weight,
        dev,
        rotate_while_scheduled: nc.napi == crate::kernel::costs::NapiApi::DevPoll,
    });
    let poll = if old {
        drivers::e1000::poll
    } else {
        drivers::e1000e::poll
    };
    let poll = poll(
        kernel,
        nc,
        &d.name,
        d.reg_bar,
        dev,
        napi,
        forwarding.transmits,
    );
    kernel.net.napi[usize::from(napi)].poll = poll;
    if old {
        return drivers::e1000::isr(kernel, nc, &d.name, d.reg_bar, napi);
    }
    // The watchdog, in a kernel that runs tasks (its work needs `events/0`). It was first
    // armed when the link came up, long before the run: it expires on a whole second, every
    // other one, and which of the two parities is this adapter's is not known.
    if let (Some((wake, stream)), true) = (watchdog, kernel.tick.is_some()) {
        use rand::Rng as _;
        let hz = kernel.deferred.hz;
        let t = drivers::e1000e::watchdog(kernel, nc, &d.name, d.reg_bar, wake);
        let parity = u64::from(stream.gen_bool(0.5));
        kernel.deferred.timers[usize::from(t)].expires = Some(hz * (1 + parity));
    }
    drivers::e1000e::isr(kernel, nc, &d.name, d.reg_bar, napi, msi)
}

/// The throttle rate the driver first writes to ITR, in interrupts a second: e1000e's
/// `INITIAL_ITR` for its dynamic modes; the 2.4 e1000's InterruptThrottleRate, static
/// (`kernel.net.itr_setting`, 8000 by default: `e1000_configure_rx` writes
/// `1000000000 / (itr * 256)`).
fn initial_itr(driver: DriverName, nc: &crate::kernel::costs::NetCosts) -> u32 {
    if driver == DriverName::E1000 {
        nc.itr_setting.max(1)
    } else {
        crate::kernel::net::INITIAL_ITR
    }
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

impl Scenario {
    /// Build the machine for a run that keeps its first `trace` TLPs and its sample series.
    pub fn build(&self, seed: u64, samples: u64, trace: usize) -> Result<Machine, ScenarioError> {
        self.build_keeping(seed, samples, samples, trace, true)
    }

    /// Build the machine for a run of `samples`, a replication's share of the run's
    /// `run_samples` (the workload's phases are numbered in those); `series`: keep the sample
    /// series (bounded).
    pub(super) fn build_keeping(
        &self,
        seed: u64,
        samples: u64,
        run_samples: u64,
        trace: usize,
        series: bool,
    ) -> Result<Machine, ScenarioError> {
        let p = &self.platform;
        let rng = RngStreams::new(seed);
        let ns = SimDuration::from_ns_f64;
        let delivery = self.file.delivery;

        // Hardware: the platform's links and the devices' own, and the routes between them.
        let (topology, ends) = self.topology()?;
        let mut fabric = Fabric::new(&topology, &ends)
            .map_err(|e| self.invalid("platform.link", e.to_string()))?;
        let mut devices = Vec::new();
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
            let l = fabric.device_link_mut(i);
            let pipeline_ns = p.part[&d.port].link_pipeline_ns.unwrap_or(0.0);
            l.path.switches = d.switches;
            l.path.switch_latency = ns(d.switch_latency_ns);
            l.path.bit_error_rate = d.bit_error_rate;
            // A NAK'd TLP: the receiver's NAK latency, the NAK's way back through the link
            // pipeline, and the replay's way out again through it.
            l.path.replay_delay = ns(d.ack_nak_latency_ns + 2.0 * pipeline_ns);
            if d.bit_error_rate > 0.0 {
                l.path.rng = Some(rng.stream(&format!("device.{i}.link")));
            }
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
                bdf: d.bdf,
                intx_pin: d.intx_pin,
                reg_bar: d.reg_bar,
                reg_bar_size: d.reg_bar_size,
                signature_bar: d.signature_bar,
                signature_bar_size: d.signature_bar_size,
                status_offset: d.status_offset,
                clear_offset: d.clear_offset,
                pending_flag: d.pending_flag,
                read_turnaround: ns(d.read_turnaround_ns),
                deassert_delay: ns(d.deassert_delay_ns),
                generator: match d.interrupts {
                    Interrupts::Periodic => Generator::Periodic { interval },
                    Interrupts::Poisson | Interrupts::None => Generator::Poisson { mean: interval },
                },
                generates: d.interrupts != Interrupts::None,
                // The write that answers an interrupt: the round-trip ISR's acknowledge, or seed
                // 000's tasklet signature.
                serviced_addr: match d.driver {
                    DriverName::RoundTrip => Some(d.signature_bar + d.isr_signature_offset),
                    DriverName::Seed000 => Some(d.signature_bar + d.tasklet_signature_offset),
                    // A generic device raises interrupts whenever it has work; a network
                    // controller whenever its traffic and its throttle say.
                    DriverName::Generic | DriverName::E1000e | DriverName::E1000 => None,
                },
                interval_from_service: d.interval_from == IntervalFrom::Service,
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
            let mut dev = Exerciser::new(cfg, rng.stream(&format!("device.{i}")));
            if let Some(n) = &d.nic {
                dev.nic = Some(Box::new(self.nic(d, n, &rng, i)));
            }
            devices.push(dev);
        }
        // The workload's phases (none: one load for the run), numbered in the run's samples
        // past the warm-up: the measured card's interrupts, or cyclictest's first thread's
        // loops. A card a phase gives a rate raises its interrupts at it (in the card's own
        // clock); the first phase's rates are the cards' from the start.
        let warmup = self.file.warmup_samples;
        let phase_specs = (self.file.workload.as_ref()).map_or(&[][..], |w| &w.phase[..]);
        let until: Vec<u64> = (phase_specs.iter())
            .map(|ph| ph.until_in(samples, run_samples))
            .collect();
        let pcie = self.pcie_devices();
        let phases: Vec<Phase> = (phase_specs.iter().zip(&until))
            .map(|(ph, &u)| Phase {
                until_sample: warmup + u,
                work: ph.load(),
                rates: (pcie.iter().enumerate())
                    .filter_map(|(k, d)| {
                        let rate = ph.rates.get(&d.name)?;
                        Some((k as u8, rate * (1.0 + d.clock_ppm * 1e-6)))
                    })
                    .collect(),
            })
            .collect();
        if let Some(first) = phases.first() {
            for &(k, rate) in &first.rates {
                devices[usize::from(k)].set_rate(rate);
            }
        }
        let mut pirq_rout = [PIRQ_ROUT_DISABLE; 8];
        let mut elcr: u16 = 0;
        let ich_file = self.ich()?;
        for (i, &irq) in ich_file.pirq_pic_irq.iter().enumerate() {
            if irq >= 0 {
                pirq_rout[i] = irq as u8;
                elcr |= 1 << irq; // the BIOS makes PCI lines level-sensitive
            }
        }
        let pirq_pins = self.pirq_pins()?;
        let mut ich = Ich::new(
            IchTiming {
                internal_clock_hz: ich_file.internal_clock_hz,
                legacy_io_clocks: ich_file.legacy_io_clocks,
                intack_clocks: ich_file.intack_clocks,
                ioapic_access_clocks: ich_file.ioapic_access_clocks,
                ioapic_delivery_clocks: ich_file.ioapic_delivery_clocks,
            },
            pirq_rout,
            pirq_pins,
        );
        // The BIOS's edge/level setting, then Linux's `init_8259A`.
        ich.pics.set_elcr(elcr);
        crate::kernel::pic::init_pair(&mut ich.pics, 0x20, 0x28);
        let lapic_on = delivery != Delivery::Xtpic;
        let lapic_access_cycles = self.lapic_access_cycles()?;
        let apic_ids = self.apic_ids(&topology, &ends);
        let cores: Vec<Core> = (0..self.cores())
            .map(|i| {
                let mut lapic = LocalApic::new(apic_ids[usize::from(i)], lapic_on);
                // Flat logical mode: one bit per CPU (`flat_init_apic_ldr`), for the first 8.
                lapic.ldr = 1u8.checked_shl(u32::from(i)).unwrap_or(0);
                let mut core = Core::new(cpu_timing(&p.cpu, lapic_access_cycles), lapic);
                if let Some(idle) = &self.kernel.linux().idle {
                    let states = p
                        .cpu
                        .idle_states
                        .iter()
                        .map(|s| IdleState {
                            name: s.name.clone(),
                            exit_latency: ns(s.exit_latency_us * 1e3),
                            target_residency: ns(s.target_residency_us * 1e3),
                            wake: ns(s.wake_ns),
                            wake_sigma: s.wake_sigma,
                            polls: s.polls,
                        })
                        .collect();
                    let mut ci = Cpuidle::new(states, Some(ns(idle.latency_limit_us * 1e3)));
                    ci.rng = Some(rng.stream(&format!("cpuidle.cpu{i}")));
                    core.cpuidle = Some(ci);
                }
                core.frequency = p.cpu.frequency.as_ref().map(|f| Frequency {
                    low_hz: f.low_hz,
                    high_hz: f.high_hz,
                    mean_hold: ns(f.hold_us * 1e3),
                    rng: rng.stream(&format!("frequency.cpu{i}")),
                });
                core.work = self.file.workload.as_ref().map(|w| {
                    let load = phases.first().map_or_else(|| w.load(), |p| p.work.clone());
                    WorkState::new(load, rng.stream(&format!("workload.cpu{i}")))
                });
                core.cold = p
                    .cpu
                    .cache
                    .as_ref()
                    .map(|c| cold_code(c, rng.stream(&format!("cache.cpu{i}"))));
                core
            })
            .collect();

        // The kernel boots: on-board drivers register first; then seed 000's module probes and
        // requests its interrupt (Figure 3).
        let mut kernel = Kernel::new(self.kernel.linux().instructions.clone());
        // The tick needs the Local APIC; in XT-PIC mode the tick is the PIT on IRQ 0, which is
        // not modelled.
        if lapic_on {
            if let Some(t) = self.kernel.linux().tick.as_ref().filter(|t| t.hz > 0) {
                let vector = u8::try_from(t.vector)
                    .ok()
                    .filter(|v| *v >= 32)
                    .ok_or_else(|| {
                        self.invalid(
                            "kernel.tick.vector",
                            format!("{} is not a vector 32..255", t.vector),
                        )
                    })?;
                let handler = kernel.work(
                    t.handler,
                    t.handler_sigma,
                    rng.stream("kernel.tick.handler"),
                );
                let timer_softirq = kernel.work(
                    t.timer_softirq,
                    t.timer_softirq_sigma,
                    rng.stream("kernel.tick.timer_softirq"),
                );
                kernel.tick = Some(Tick {
                    vector,
                    period: SimDuration::from_ps(1_000_000_000_000 / u64::from(t.hz)),
                    handler,
                    timer_softirq,
                });
                // `round_jiffies` rounds drivers' timers to whole seconds of it.
                kernel.deferred.hz = u64::from(t.hz);
            }
        }
        let mut vectors = VectorAllocator {
            next: self.kernel.linux().first_device_vector,
            step: self.kernel.linux().vector_step,
        };
        // One vector per IO-APIC pin: PIRQs wired to the same pin share it.
        let mut ioapic_vectors: [Option<(u8, u8)>; 24] = [None; 24];
        for (j, f) in ich_file.functions.iter().enumerate() {
            let pirq = f.pirq;
            let line = self.legacy_line(
                pirq,
                0,
                &f.name,
                &apic_ids,
                &mut ich,
                &mut kernel,
                &mut vectors,
                &mut ioapic_vectors,
            )?;
            let handler = drivers::port_status::probe(
                &mut kernel,
                &f.name,
                f.status_port,
                u32::from(f.isr_instructions),
            );
            let action = Action {
                handler,
                irqs_disabled: false, // on-board drivers request shared, not SA_INTERRUPT
            };
            kernel
                .request_irq(line.0, line.1, line.2, line.3, action)
                .map_err(|m| self.invalid(&format!("platform.ich.functions.{j}"), m))?;
        }
        let intx_lines = self.intx_lines(&topology, &ends)?;
        for (i, dev) in devices.iter_mut().enumerate() {
            let d = &self.pcie_devices()[i];
            let key = |f: &str| format!("device.{i}.{f}");
            let msi_mode = delivery == Delivery::Msi && d.msi_capable;
            let pirq = intx_lines[i].1;
            let regs = Registers {
                status_addr: d.reg_bar + d.status_offset,
                clear_addr: d.reg_bar + d.clear_offset,
                pending_flag: d.pending_flag,
                clear_mask: d.pending_flag,
                isr_signature_addr: d.signature_bar + d.isr_signature_offset,
                tasklet_signature_addr: d.signature_bar + d.tasklet_signature_offset,
            };
            let handler = match d.driver {
                DriverName::Seed000 => {
                    drivers::exerciser::probe(&mut kernel, &d.name, &regs, msi_mode)
                }
                DriverName::RoundTrip => {
                    drivers::round_trip::probe(&mut kernel, &d.name, &regs, d.isr_instructions)
                }
                DriverName::Generic => drivers::generic::probe(
                    &mut kernel,
                    &d.name,
                    &regs,
                    d.isr_instructions,
                    d.isr_status_reads,
                ),
                DriverName::E1000e | DriverName::E1000 => {
                    let nc = self.kernel.linux().net.clone().ok_or_else(|| {
                        self.invalid(
                            &key("driver"),
                            "the e1000e and e1000 drivers need a kernel file with a [net] \
                             section (the networking core's costs), such as \
                             kernels/linux-2.6.29-i386-up.toml",
                        )
                    })?;
                    if d.driver == DriverName::E1000 && msi_mode {
                        return Err(self.invalid(
                            "delivery",
                            "the 2.4 e1000 driver has no MSI (its CONFIG_PCI_MSI block is dead \
                             code on 2.4): use delivery = \"ioapic\"",
                        ));
                    }
                    let n = d.nic.as_ref().expect("checked: e1000e has a [device.nic]");
                    let wake = self.kernel.linux().sched.as_ref().map(|s| s.try_to_wake_up);
                    let mut stream = rng.stream(&format!("device.{i}.watchdog"));
                    let watchdog = wake.map(|w| (w, &mut stream));
                    let forwarding = self.forwarding(i);
                    let how = NicProbe {
                        k: i as u8,
                        msi: msi_mode,
                        watchdog,
                        forwarding,
                        driver: d.driver,
                    };
                    e1000e_probe(&mut kernel, &nc, d, n, how)
                }
            };
            let action = Action {
                handler,
                // SA_INTERRUPT in Figure 3; e1000e requests its IRQ without IRQF_DISABLED, so
                // handle_IRQ_event enables interrupts around it.
                irqs_disabled: !matches!(d.driver, DriverName::E1000e | DriverName::E1000),
            };
            let (irq, chip, flow, vector) = if msi_mode {
                let v = vectors.alloc((d.msi_vector != 0).then_some(d.msi_vector));
                let m = MsiMessage::new(apic_ids[usize::from(d.irq_cpu)], v, false)
                    .map_err(|m| self.invalid(&key("msi_vector"), m))?;
                dev.msi.program(m);
                (1000 + i as u16, Chip::Msi, Flow::Edge, m.vector)
            } else {
                self.legacy_line(
                    pirq,
                    d.irq_cpu,
                    &d.name,
                    &apic_ids,
                    &mut ich,
                    &mut kernel,
                    &mut vectors,
                    &mut ioapic_vectors,
                )?
            };
            kernel
                .request_irq(irq, chip, flow, vector, action)
                .map_err(|m| self.invalid(&key("msi_vector"), m))?;
        }

        // The analyzer times the first device's signature writes (a run of cyclictest alone has
        // none to time).
        let mut probe = match self
            .pcie_devices()
            .first()
            .copied()
            .filter(|d| d.nic.is_none())
        {
            Some(d0) => LatencyProbe::new(
                d0.signature_bar + d0.isr_signature_offset,
                (d0.driver != DriverName::RoundTrip)
                    .then_some(d0.signature_bar + d0.tasklet_signature_offset),
            ),
            None => LatencyProbe::new(u64::MAX, None),
        };
        // Warm-up interrupts go first and are not recorded: the governor starts with no history
        // and the run with every timer phase at zero, neither of which the published run had.
        probe.warmup = warmup;
        probe.isr_phases = ByPhase::new(until.clone());
        probe.tasklet_phases = ByPhase::new(until.clone());
        let mut round_trip = RoundTripProbe {
            warmup,
            phases: ByPhase::new(until.clone()),
            ..RoundTripProbe::default()
        };
        let mut cyclictest = CyclictestProbe::new(warmup);
        cyclictest.phases = ByPhase::new(until);
        if series {
            // The run's series is the round trips' where a card counts them, else the ISR
            // latencies' (`finish`): only that one is recorded (recording both cost seed 002's
            // replication 0 4.4% of its instructions, for a series thrown away).
            if self
                .pcie_devices()
                .first()
                .is_some_and(|d| d.round_trip.is_some())
            {
                round_trip.series = Some(SampleSeries::new(SERIES_POINTS));
            } else {
                probe.series = Some(SampleSeries::new(SERIES_POINTS));
            }
        }
        let root = match topology.parts[usize::from(topology.root)].kind {
            PartKind::HostBridge { requester_id } => requester_id,
            _ => unreachable!("the root is the host bridge"),
        };
        kernel.idle = self.kernel.linux().idle.clone();
        kernel.workload = self.file.workload.is_some();
        kernel.sched = self.kernel.linux().sched.clone();
        kernel.threads = self.kernel.linux().threads.clone().filter(|t| t.enabled);
        if kernel.threads.is_some() && kernel.sched.is_none() {
            return Err(self.invalid(
                "kernel.threads.enabled",
                format!(
                    "kernel '{}' has threaded handlers but no [sched] section, and threads \
                     need the scheduler: add [sched] (as kernels/linux-2.6.29-i386-up.toml has) \
                     or set kernel.threads.enabled=false",
                    self.kernel.name()
                ),
            ));
        }
        // A sleeper started in the past: the -rt patch without PREEMPT_RT leaves it queued
        // until the next timer interrupt (the kernel file's `past_due`); mainline and
        // PREEMPT_RT run it at once (`kernel/hrtimer.rs`).
        let rt = kernel
            .sched
            .as_ref()
            .is_some_and(|s| s.preemption == crate::kernel::context::Preemption::Rt);
        kernel.hrtimers.past_due = match &kernel.threads {
            Some(t) if !rt => t.past_due,
            _ => crate::kernel::hrtimer::PastDue::Run,
        };
        kernel.net.budget = self
            .kernel
            .linux()
            .net
            .as_ref()
            .map_or(0, |n| n.netdev_budget);
        kernel.net.time_limit_jiffies = self
            .kernel
            .linux()
            .net
            .as_ref()
            .map_or(0, |n| n.napi.time_limit_jiffies());
        if let (Some(co), Some(nc)) = (&p.cpu.coherence, &self.kernel.linux().net) {
            // The cores of one package share their bus link up (the platform's topology);
            // `ends.cores` are the run's CPUs in order.
            let package = |c: PartId| topology.parts[usize::from(c)].up;
            let cpus = ends.cores.len();
            kernel.net.cpus = cpus;
            let line = |a: usize, b: usize| {
                if package(ends.cores[a]) == package(ends.cores[b]) {
                    co.same_package_ns
                } else {
                    co.cross_package_ns
                }
            };
            kernel.net.free = crate::kernel::net::line_table(cpus, |a, b| {
                ns(line(a, b) * f64::from(nc.tx_packet_lines) / nc.tx_packet_lines_in_flight)
            });
            // A line a locked RMW takes moves alone: the locked operation overlaps no other
            // miss. Its own cycles are its path's (`[net.serializing]`), moved line or not.
            kernel.net.hold = crate::kernel::net::line_table(cpus, |a, b| {
                ns(line(a, b) * f64::from(nc.tx_packet_locked_lines))
            });
            kernel.net.ring = crate::kernel::net::line_table(cpus, |a, b| {
                ns(line(a, b) * f64::from(nc.tx_shared_lines))
            });
            kernel.net.netdev = crate::kernel::net::line_table(cpus, |a, b| {
                ns(line(a, b) * f64::from(nc.netdev_lines))
            });
            // The lines the chip's DMA took: read (`rx_memory_lines`) or owned again before a
            // store completes (`rfo_memory_lines`), `memory_lines_in_flight` at a time.
            kernel.net.rx_miss = ns(
                co.memory_line_ns * (nc.rx_memory_lines + nc.rfo_memory_lines)
                    / nc.memory_lines_in_flight,
            );
        }
        if let Some(nc) = &self.kernel.linux().net {
            // Each serialising instruction is one of its stage's instructions, timed at the
            // CPI there; it costs its measured cycles, so the rest is charged here.
            let c = &p.cpu;
            let extra = |cycles: Option<f64>, slots: f64| {
                (cycles.unwrap_or(0.0) - slots * c.cycles_per_instruction).max(0.0)
            };
            for (stage, n) in nc.serializing.stages() {
                let cycles = f64::from(n.locked) * extra(c.locked_rmw_cycles, 1.0)
                    + f64::from(n.rdtsc) * extra(c.rdtsc_cycles, 1.0)
                    + f64::from(n.irq_saves) * extra(c.irq_save_restore_cycles, 5.0);
                kernel.net.serializing[stage as usize] = ns(cycles * 1e9 / c.clock_hz);
            }
        }
        kernel.net_costs = self.kernel.linux().net.clone();
        linux::link(&mut kernel);
        // A kernel with tasks: the tick is an hrtimer on each CPU, and cyclictest's threads are
        // programs (spawned as tasks once the machine has its scheduler).
        let mut cyclic = Vec::new();
        if let Some(sc) = &self.kernel.linux().sched {
            let period = kernel.tick.as_ref().map(|t| t.period);
            for c in 0..self.cores() {
                if let Some(p) = period {
                    let e = kernel.entries.tick_sched_timer;
                    let t = kernel
                        .hrtimers
                        .add(&format!("tick_sched_timer/{c}"), c, e, None);
                    kernel.hrtimers.timers[usize::from(t)].period = Some(p);
                    kernel.hrtimers.start(t, SimTime::ZERO + p);
                }
            }
            // The real-time bandwidth's period timer, on the boot CPU (a UP kernel's one
            // `rt_bandwidth`). The kernel starts it when a real-time task is first queued (at
            // boot: the migration and watchdog threads) and stops it while nothing real-time
            // runs, but `start_rt_bandwidth` forwards it from its old expiry by whole periods:
            // its phase is kept, so a timer that runs every period is the same timer.
            if sc.rt_runtime_us >= 0 {
                let period = ns(sc.rt_period_us as f64 * 1e3);
                let e = kernel.entries.sched_rt_period_timer;
                let t = kernel.hrtimers.add("sched_rt_period_timer", 0, e, None);
                kernel.hrtimers.timers[usize::from(t)].period = Some(period);
                kernel.hrtimers.start(t, SimTime::ZERO + period);
            }
            if let Some(ct) = &self.file.cyclictest {
                for i in 0..ct.threads {
                    let e = tasks::cyclictest(&mut kernel.code, sc, i, ct.loop_instructions);
                    let wake = kernel.entries.hrtimer_wakeup;
                    let timer = kernel
                        .hrtimers
                        .add(&format!("cyclictest/{i}"), i, wake, None);
                    cyclic.push((i, e, timer));
                }
            }
        }
        let smi = p.smi.as_ref().filter(|s| s.rate_per_s > 0.0).map(|s| Smi {
            mean_interval: ns(1e9 / s.rate_per_s),
            duration: ns(s.duration_us * 1e3),
            rng: rng.stream("platform.smi"),
            count: 0,
        });
        let mut builder = MachineBuilder::new(fabric, ich, cores, root)
            .kernel(kernel)
            .smi(smi)
            .analyzer(Analyzer::new(trace), probe)
            .round_trip(round_trip)
            .cyclictest(cyclictest)
            .phases(phases)
            .samples(samples + warmup);
        if self.file.duration_ms > 0.0 {
            // A run of fixed length (a forwarding run's): its traffic ends with it.
            let end = SimTime::ZERO + ns(self.file.duration_ms * 1e6);
            builder = builder.ends_at(end);
            for d in &mut devices {
                if let Some(n) = &mut d.nic {
                    n.cfg.traffic_end = Some(end);
                }
            }
        }
        let mut machine = builder.devices(devices, intx_lines).build();
        if let Some(sc) = self
            .kernel
            .linux()
            .sched
            .as_ref()
            .filter(|s| s.rt_runtime_us >= 0)
        {
            machine.sched.rt_runtime = Some(ns(sc.rt_runtime_us as f64 * 1e3));
        }
        if machine.kernel.threads.is_some() {
            self.spawn_threads(&mut machine)?;
        } else if self.kernel.linux().sched.is_some() {
            // Each CPU's ksoftirqd (SCHED_OTHER, nice 19 in 2.6.29: `set_user_nice(current,
            // 19)` in kernel/softirq.c's ksoftirqd()).
            for c in 0..self.cores() {
                let e = machine.kernel.entries.ksoftirqd;
                let t = machine.sched.spawn(
                    &format!("ksoftirqd/{c}"),
                    SchedClass::Normal { nice: 19 },
                    c,
                    Frame::at(e),
                );
                machine.kernel.ksoftirqd.push(t);
            }
        }
        // keventd: each CPU's `events/N` (SCHED_OTHER, `set_user_nice(current, -5)` in
        // kernel/workqueue.c's worker_thread), with drivers' work to run.
        if !machine.kernel.deferred.works.is_empty() {
            for c in 0..self.cores() {
                let e = machine.kernel.entries.events_worker;
                let t = machine.sched.spawn(
                    &format!("events/{c}"),
                    SchedClass::Normal { nice: -5 },
                    c,
                    Frame::at(e),
                );
                machine.kernel.deferred.events.push(t);
                machine
                    .kernel
                    .deferred
                    .worklist
                    .push(std::collections::VecDeque::new());
            }
        }
        if let Some(ct) = &self.file.cyclictest {
            let class = match ct.priority {
                0 => SchedClass::Normal { nice: 0 },
                p => SchedClass::Fifo { priority: p },
            };
            let interval = ns(ct.interval_us * 1e3);
            // cyclictest starts whenever it is started: its wake-ups have an arbitrary phase
            // against the tick's (uniform over one tick period), not the boot's zero.
            let mut start = rng.stream("cyclictest.start");
            let tick = machine.kernel.tick.as_ref().map(|t| t.period);
            for (i, entry, timer) in cyclic {
                use rand::Rng as _;
                let phase = tick.map_or(SimDuration::ZERO, |p| {
                    SimDuration::from_ps(start.gen_range(0..p.as_ps().max(1)))
                });
                let name = format!("cyclictest/{i}");
                let task = machine.sched.spawn(&name, class, i, Frame::at(entry));
                machine.kernel.hrtimers.timers[usize::from(timer)].task = Some(task);
                // cyclictest reads the clock and asks to wake one interval later.
                let first = SimTime::ZERO + phase + interval;
                let t = CyclicThread::new(task, timer, interval, first);
                machine.kernel.cyclic.push(t);
            }
            // The traffic lasts as long as cyclictest's loops would on time (`-l`): then the
            // generators stop, and a cyclictest that fell behind catches up, as it did when
            // the seed's traffic ended.
            // cyclictest itself is stopped then too (one interval later, for the last loop
            // on time to finish), whatever loops it has run: a thread that fell behind for
            // good (a past-due sleeper left to the next tick, `kernel/hrtimer.rs`) would
            // otherwise run on for as long as its lag lets it finish its loops, where the
            // seed's starved maxima (268-311 s, 0.88 of the ~305 s its interrupt counts give
            // the run) say it was stopped with the traffic.
            if let Some(t) = machine.kernel.cyclic.first() {
                let end = t.next + interval * (samples + warmup).saturating_sub(1);
                for d in machine.devices.iter_mut().filter_map(Device::card_mut) {
                    if let Some(n) = &mut d.nic {
                        n.cfg.traffic_end = Some(end);
                    }
                }
                machine.end_at = Some(end + interval);
            }
        }
        Ok(machine)
    }

    /// A topology error, named at the platform's key, or at `device.N.port` when it is about a
    /// device's own part or link (the device's `port` put it there).
    fn topology_error(&self, e: TopologyError, devices: &[&DeviceSection]) -> ScenarioError {
        match e {
            TopologyError::Invalid { ref key, .. } => {
                let device = devices.iter().position(|d| {
                    [format!("part.{}", d.name), format!("link.{}-link", d.name)]
                        .iter()
                        .any(|k| key == k || key.starts_with(&format!("{k}.")))
                });
                match device {
                    Some(i) => self.invalid(&format!("device.{i}.port"), e.to_string()),
                    None => self.invalid(&format!("platform.{key}"), e.to_string()),
                }
            }
            other => self.invalid("platform.part", other.to_string()),
        }
    }

    /// The Local APIC IDs of the run's cores, CPU 0 first.
    fn apic_ids(&self, t: &Topology, ends: &Ends) -> Vec<u8> {
        ends.cores
            .iter()
            .map(|&c| match t.parts[usize::from(c)].kind {
                PartKind::Core { apic_id } => apic_id,
                _ => unreachable!("a core"),
            })
            .collect()
    }

    /// The router input each device's INTx arrives on: its pin, swizzled by every bridge on
    /// its way up (by device number, then by the bridge's INTXSWZCTRL).
    pub(super) fn intx_lines(
        &self,
        t: &Topology,
        ends: &Ends,
    ) -> Result<Vec<(Bdf, u8)>, ScenarioError> {
        self.pcie_devices()
            .into_iter()
            .zip(&ends.devices)
            .enumerate()
            .map(|(i, (d, &part))| {
                let path = t
                    .route(part, Request::Intx)
                    .map_err(|e| self.invalid(&format!("device.{i}.port"), e.to_string()))?;
                Ok((d.bdf, path.line.unwrap_or(0)))
            })
            .collect()
    }

    /// The platform's topology with the scenario's devices below the root ports they name, and
    /// the parts that are the machine's ends: the run's cores (lowest APIC ID first: CPU 0 is
    /// the boot CPU), the devices, the hub's interrupt block (the part that decodes the 8259's
    /// port 0x20, with the PIRQ router and the IO-APIC beside it) and host memory.
    pub fn topology(&self) -> Result<(Topology, Ends), ScenarioError> {
        let p = &self.platform;
        let mut f = TopologyFile {
            part: p.part.clone(),
            link: p.link.clone(),
            wire: p.wire.clone(),
        };
        // The platform on its own first, so that its mistakes are named in its file before a
        // device's port is looked for among its parts.
        let platform_only = Topology::from_file(&f).map_err(|e| self.topology_error(e, &[]))?;
        if let Some(part) = platform_only
            .parts
            .iter()
            .find(|x| matches!(x.kind, PartKind::Endpoint { .. }))
        {
            return Err(self.invalid(
                &format!("platform.part.{}", part.name),
                format!(
                    "part '{}' is an endpoint of the platform: the machine simulates the \
                     scenario's [[device]]s only, so it would be ignored; describe it as a device",
                    part.name
                ),
            ));
        }
        for (i, d) in self.pcie_devices().into_iter().enumerate() {
            let key = |k: &str| format!("device.{i}.{k}");
            let pipeline_ns = match p.part.get(&d.port) {
                Some(PartSection {
                    kind: Some(PartKindName::Bridge),
                    link_pipeline_ns,
                    ..
                }) => link_pipeline_ns.unwrap_or(0.0),
                _ => {
                    let ports: Vec<&str> = p
                        .part
                        .iter()
                        .filter(|(_, s)| s.kind == Some(PartKindName::Bridge))
                        .map(|(n, _)| n.as_str())
                        .collect();
                    return Err(self.invalid(
                        &key("port"),
                        format!(
                            "'{}' is not a root port of the platform '{}'; {}",
                            d.port,
                            p.name,
                            if ports.is_empty() {
                                "it has none (no part of kind \"bridge\"): a PCIe card needs a \
                                 platform with root ports"
                                    .to_string()
                            } else {
                                format!("its ports: {}", ports.join(", "))
                            }
                        ),
                    ));
                }
            };
            if p.part.contains_key(&d.name)
                || self.pcie_devices()[..i].iter().any(|o| o.name == d.name)
            {
                return Err(self.invalid(
                    &key("name"),
                    format!(
                        "'{}' is already the name of a part of the platform or of another device: \
                         give the device a name of its own",
                        d.name
                    ),
                ));
            }
            // A bus, device and function is one function's: two would answer the same
            // configuration cycles and claim the same requester ID.
            let holder = self.pcie_devices()[..i]
                .iter()
                .find(|o| o.bdf == d.bdf)
                .map(|o| format!("device '{}'", o.name))
                .or_else(|| {
                    f.part
                        .iter()
                        .find(|(_, part)| part.bdf == Some(d.bdf))
                        .map(|(name, _)| format!("the platform's '{name}'"))
                });
            if let Some(holder) = holder {
                return Err(self.invalid(
                    &key("bdf"),
                    format!(
                        "{} is already the address of {holder}: give this device a bus, device and \
                         function of its own",
                        d.bdf
                    ),
                ));
            }
            f.part.insert(
                d.name.clone(),
                PartSection {
                    kind: Some(PartKindName::Endpoint),
                    bdf: Some(d.bdf),
                    intx_pin: Some(d.intx_pin),
                    ..PartSection::default()
                },
            );
            // The card's link: its own generation and width (a slot trains to the card's), the
            // root port's pipelines.
            let link_name = format!("{}-link", d.name);
            if f.link.contains_key(&link_name) {
                return Err(self.invalid(
                    &key("name"),
                    format!("the platform already has a link '{link_name}': rename the device"),
                ));
            }
            let link = match &d.function_of {
                None => TopologyLinkSection {
                    kind: Some(LinkKindName::Serial),
                    up: d.port.clone(),
                    down: vec![d.name.clone()],
                    generation: Some(d.link_generation.number()),
                    width: Some(d.link_width.lanes() as u8),
                    pipeline_ns: Some(pipeline_ns),
                    ..TopologyLinkSection::default()
                },
                // Another function of a card: behind function 0 at no delay, so that its
                // packets share the card's link (a multi-function device's functions share
                // its port; PCIe Base 1.1, 7.3.1).
                Some(first) => {
                    let devices = self.pcie_devices();
                    let f0 = devices[..i]
                        .iter()
                        .find(|o| &o.name == first && o.function_of.is_none());
                    let Some(f0) = f0 else {
                        return Err(self.invalid(
                            &key("function_of"),
                            format!(
                                "'{first}' is not a device listed before this one with a link \
                                 of its own: name the card's function 0, listed first"
                            ),
                        ));
                    };
                    if (f0.bdf.bus, f0.bdf.dev) != (d.bdf.bus, d.bdf.dev)
                        || f0.bdf.func == d.bdf.func
                        || f0.port != d.port
                    {
                        return Err(self.invalid(
                            &key("bdf"),
                            format!(
                                "a function of '{first}' ({}, port '{}') has its bus and device, \
                                 a function of its own and its port; this one is {} on '{}'",
                                f0.bdf, f0.port, d.bdf, d.port
                            ),
                        ));
                    }
                    if (f0.link_generation, f0.link_width) != (d.link_generation, d.link_width) {
                        return Err(self.invalid(
                            &key("link_width"),
                            format!(
                                "a function of '{first}' shares its link (generation {}, x{}): \
                                 give this one the same link_generation and link_width",
                                f0.link_generation.number(),
                                f0.link_width.lanes()
                            ),
                        ));
                    }
                    TopologyLinkSection {
                        kind: Some(LinkKindName::Delay),
                        up: first.clone(),
                        down: vec![d.name.clone()],
                        ns: Some(0.0),
                        ..TopologyLinkSection::default()
                    }
                }
            };
            f.link.insert(link_name, link);
        }
        let t =
            Topology::from_file(&f).map_err(|e| self.topology_error(e, &self.pcie_devices()))?;
        let mut cores: Vec<(u8, PartId)> = t
            .parts
            .iter()
            .enumerate()
            .filter_map(|(i, part)| match part.kind {
                PartKind::Core { apic_id } => Some((apic_id, i as PartId)),
                _ => None,
            })
            .collect();
        cores.sort_unstable();
        let cores: Vec<PartId> = cores
            .into_iter()
            .take(usize::from(self.cores()))
            .map(|(_, id)| id)
            .collect();
        let devices = self
            .pcie_devices()
            .into_iter()
            .map(|d| t.part(&d.name).expect("added above"))
            .collect();
        let need = |found, what: &str| self.need_part(found, what);
        let ich = need(
            t.claimant(Request::Io(0x20)),
            "decodes I/O port 0x20 (the 8259 pair)",
        )?;
        let memory = need(
            t.parts
                .iter()
                .position(|x| matches!(x.kind, PartKind::Memory { .. }))
                .map(|i| i as PartId),
            "is host memory (kind = \"memory\")",
        )?;
        // The hub's interrupt block is one part of the model (`Ich`): the router and the
        // IO-APIC's registers must sit beside the 8259 pair, on the same hub fabric.
        let beside = |found: Option<PartId>, what: &str| -> Result<(), ScenarioError> {
            let id = need(found, what)?;
            if t.parts[usize::from(id)].up != t.parts[usize::from(ich)].up {
                return Err(self.invalid(
                    &format!("platform.part.{}", t.parts[usize::from(id)].name),
                    format!(
                        "the part that {what} hangs from another link than the 8259 pair's \
                         ('{}'): the model's interrupt block needs them on one hub fabric",
                        t.parts[usize::from(ich)].name
                    ),
                ));
            }
            Ok(())
        };
        beside(
            t.claimant(Request::Intx),
            "routes INTx (kind = \"pirq-router\")",
        )?;
        beside(
            t.claimant(Request::Mem(IOAPIC_BASE)),
            "decodes the IO-APIC's registers at 0xFEC00000",
        )?;
        Ok((
            t,
            Ends {
                cores,
                devices,
                ich,
                memory,
            },
        ))
    }

    /// Set up the INTx line of `pirq` as this kernel does and say how it registers it: with
    /// XT-PIC, the 8259 line the BIOS routed it to, unmasked; otherwise the IO-APIC pin it
    /// drives, programmed once (level-triggered, active low: PCI) with a vector of its own and
    /// `cpu` as its destination.
    #[allow(clippy::too_many_arguments)]
    fn legacy_line(
        &self,
        pirq: u8,
        cpu: u8,
        who: &str,
        apic_ids: &[u8],
        ich: &mut Ich,
        kernel: &mut Kernel,
        vectors: &mut VectorAllocator,
        ioapic_vectors: &mut [Option<(u8, u8)>; 24],
    ) -> Result<(u16, Chip, Flow, u8), ScenarioError> {
        if self.file.delivery == Delivery::Xtpic {
            let irq = self.ich()?.pirq_pic_irq[usize::from(pirq)];
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
            kernel.unmask_cached(irq);
            return Ok((u16::from(irq), Chip::XtPic, Flow::Level, 0x20 + irq));
        }
        let io_pin = ich.pirq_ioapic_pin[usize::from(pirq)];
        if io_pin == NOT_WIRED {
            return Err(self.unwired("platform.wire", who, pirq));
        }
        let vector = match ioapic_vectors[usize::from(io_pin)] {
            // One pin is one IRQ, with one destination (`check_cores` refuses two).
            Some((v, first)) => {
                debug_assert_eq!(first, cpu, "two destinations for pin {io_pin}");
                v
            }
            None => {
                let dest = apic_ids[usize::from(cpu)];
                let m = MsiMessage::new(dest, vectors.alloc(None), true)
                    .map_err(|m| self.invalid("kernel.first_device_vector", m))?;
                ich.ioapic.entries[usize::from(io_pin)] =
                    RedirectionEntry::new(m.vector, dest, true, true, false);
                ioapic_vectors[usize::from(io_pin)] = Some((m.vector, cpu));
                m.vector
            }
        };
        Ok((u16::from(io_pin), Chip::IoApic, Flow::FastEoi, vector))
    }
}

impl Scenario {
    /// A threaded kernel's tasks (2.6.29-rt): an IRQ thread per device descriptor
    /// (`IRQ-16`, as -rt names them) and a thread per softirq and CPU (`sirq-net-rx/0`), all
    /// SCHED_FIFO at the kernel file's priorities.
    fn spawn_threads(&self, machine: &mut Machine) -> Result<(), ScenarioError> {
        let t = machine.kernel.threads.clone().expect("a threaded kernel");
        for (key, p) in [
            ("kernel.threads.irq_priority", t.irq_priority),
            ("kernel.threads.softirq_priority", t.softirq_priority),
        ] {
            if !(1..=99).contains(&p) {
                return Err(self.invalid(
                    key,
                    format!(
                        "{p} is not a SCHED_FIFO priority: kernel threads run at 1-99 \
                         (sched_setscheduler); -rt's default is 50"
                    ),
                ));
            }
        }
        for d in &machine.kernel.irqs {
            if d.flow != Flow::Edge {
                return Err(self.invalid(
                    "delivery",
                    format!(
                        "IRQ {} is level-triggered through the IO-APIC, and this model's \
                         threaded kernel only redirects edge interrupts (MSI) to their threads \
                         (-rt masks a level line until its thread has run, which is not \
                         modelled): use delivery = \"msi\", or kernel.threads.enabled=false",
                        d.irq
                    ),
                ));
            }
        }
        let irq_class = SchedClass::Fifo {
            priority: t.irq_priority,
        };
        let sirq_class = SchedClass::Fifo {
            priority: t.softirq_priority,
        };
        for (i, &e) in machine.kernel.irq_thread_entries.clone().iter().enumerate() {
            let name = format!("IRQ-{}", machine.kernel.irqs[i].irq);
            let task = machine.sched.spawn(&name, irq_class, 0, Frame::at(e));
            machine.kernel.irq_threads.tasks.push(task);
        }
        for c in 0..self.cores() {
            let mut slots = [None; crate::kernel::softirq::NR_SOFTIRQS];
            for &(nr, name, e) in &machine.kernel.softirq_thread_entries.clone() {
                let task =
                    machine
                        .sched
                        .spawn(&format!("sirq-{name}/{c}"), sirq_class, c, Frame::at(e));
                slots[usize::from(nr)] = Some(task);
            }
            machine.kernel.softirq_threads.push(slots);
            machine.kernel.hrtimers.deferred.push(Default::default());
        }
        Ok(())
    }

    /// Device `i`'s part in IPv4 forwarding (the names were checked: each `forward_to` is
    /// another device with a network controller). Network devices are numbered in the file's
    /// order, as their drivers probe them. A port offered no traffic (`gap_us = 0`) receives
    /// nothing to forward: its route is no route, and sends nothing to the port it names (a
    /// scenario's own flow stopped by a run's `gap_us=0` leaves every program as it would be
    /// without that flow).
    fn forwarding(&self, i: usize) -> Forwarding {
        let devices = self.pcie_devices();
        let netdev = |name: &str| {
            devices
                .iter()
                .filter(|d| d.nic.is_some())
                .position(|d| d.name == name)
                .map(|p| p as u16)
        };
        let forward_to = |d: &DeviceSection| {
            d.nic
                .as_ref()
                .filter(|n| n.gap_us > 0.0)
                .and_then(|n| n.forward_to.clone())
        };
        Forwarding {
            to: forward_to(devices[i]).and_then(|t| netdev(&t)),
            transmits: devices
                .iter()
                .any(|d| forward_to(d).as_deref() == Some(devices[i].name.as_str())),
        }
    }

    /// Device `i`'s network controller, as `ifup` leaves it, and the traffic on its port.
    fn nic(
        &self,
        d: &DeviceSection,
        n: &super::files::NicSection,
        rng: &RngStreams,
        i: usize,
    ) -> crate::devices::nic::Nic {
        use crate::devices::nic::{Nic, NicConfig};
        use crate::hw::pcie::{Tlp, TlpKind};
        let ns = SimDuration::from_ns_f64;
        // A frame's data write and its descriptor write-back, one after the other on the link
        // (64-bit addresses: 4-DW headers).
        let write = |bytes: u32| Tlp {
            kind: TlpKind::MemWrite,
            requester: d.bdf,
            completer: Bdf::default(),
            tag: 0,
            addr: 1 << 32,
            len_dw: bytes.div_ceil(4) as u16,
            data: 0,
        };
        let bytes = write(n.frame_bytes).wire_bytes() + write(16).wire_bytes();
        let lanes = u64::from(d.link_width.lanes());
        let dma_per_frame = SimDuration::from_ps(
            u64::from(bytes) * d.link_generation.attoseconds_per_byte() / lanes / 1_000_000,
        );
        let gap = (n.gap_us > 0.0).then(|| ns(n.gap_us * 1e3));
        // The generator starts at an arbitrary phase within one gap.
        let first_arrival = gap.map_or(SimDuration::ZERO, |g| {
            use rand::Rng as _;
            let mut r = rng.stream(&format!("device.{i}.traffic"));
            SimDuration::from_ps(r.gen_range(0..g.as_ps().max(1)))
        });
        // Gigabit Ethernet: 8 ns a byte, with the 8-byte preamble and the 12-byte gap.
        let wire_per_frame = SimDuration::from_ns(u64::from(n.frame_bytes + 20) * 8);
        Nic::new(NicConfig {
            ring: n.ring,
            buffer_bytes: n.buffer_bytes,
            buffer_bytes_per_frame: n.buffer_bytes_per_frame,
            frame_bytes: n.frame_bytes,
            gap,
            first_arrival,
            traffic_end: None,
            rx_latency: ns(n.rx_latency_ns),
            dma_per_frame,
            descriptor_fetch: ns(n.descriptor_fetch_ns),
            // e1000_configure_rx's ITR write.
            itr_interval: SimDuration::from_ns(256)
                * u64::from(crate::kernel::net::itr_register(
                    self.kernel
                        .linux()
                        .net
                        .as_ref()
                        .map_or(crate::kernel::net::INITIAL_ITR, |nc| {
                            initial_itr(d.driver, nc)
                        }),
                )),
            tx_ring: n.tx_ring,
            tx_latency: ns(n.tx_latency_ns),
            wire_per_frame,
            tx_int_delay: ns(n.tx_int_delay_us * 1e3),
        })
    }
}

pub(crate) fn cold_code(c: &CacheSection, rng: crate::engine::Stream) -> ColdCode {
    ColdCode::new(
        f64::from(c.line_bytes),
        c.instruction_bytes,
        SimDuration::from_ns_f64(c.line_fill_ns),
        rng,
    )
}

/// A core's timing from a platform's `[cpu]`, its Local APIC accesses costing
/// `lapic_access_cycles`.
pub(crate) fn cpu_timing(c: &CpuSection, lapic_access_cycles: f64) -> CpuTiming {
    CpuTiming {
        clock_hz: c.clock_hz,
        cycles_per_instruction: c.cycles_per_instruction,
        interrupt_vectoring_cycles: c.interrupt_vectoring_cycles,
        iret_cycles: c.iret_cycles,
        lapic_access_cycles,
        privilege_change_cycles: c.privilege_change_cycles,
        halt_exit: SimDuration::from_ns_f64(c.halt_exit_ns),
    }
}
