//! The assembled system and its event loop: packets cross the fabric hop by hop, the ICH and the
//! devices react to what reaches them, and the CPU runs kernel programs, stalling on every
//! non-posted access until its completion comes back.
//!
//! One file per part of the machine: `core.rs` (a CPU core running kernel programs, its Local APIC
//! bus unit), `packets.rs` (transactions crossing the fabric and reaching their endpoints),
//! `hub.rs` (the I/O hub: port I/O, the 8259 pair, the IO-APIC), `fabric.rs` (the platform's
//! links with their state and the routes between the machine's ends, from the topology),
//! `devices.rs` (the one list of devices, their timers and what they ask of the machine),
//! `skip.rs` (a windowed run's skips between pulses). This file holds the machine, its events,
//! its builder and the run loop.

use crate::devices::exerciser::Exerciser;
use crate::devices::{Device, Timer};
use crate::engine::{EventQueue, SimDuration, SimTime};
use crate::hw::ich::Ich;
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::Bdf;
use crate::kernel::program::Frame;
use crate::kernel::sched::{Scheduler, TaskContext};
use crate::kernel::Kernel;
use crate::probes::analyzer::{Analyzer, LatencyProbe};
use crate::probes::cyclictest::CyclictestProbe;
use crate::probes::round_trip::RoundTripProbe;
use fabric::Fabric;

mod core;
pub mod devices;
pub mod fabric;
mod hub;
mod packets;
mod skip;

use self::core::CpuState;
pub use self::core::{ColdCode, Core, Frequency};
pub use self::devices::Phase;
use self::packets::Packet;

/// Events. Small and `Copy`: packets live in a slab and are named by index.
#[derive(Copy, Clone, Debug)]
enum Ev {
    /// Device k's timer t fires (of generation g, where the device reprograms it: a network
    /// controller's; 0 for the others).
    Device(u8, Timer, u32),
    /// Packet p reaches its next hop (or, past the last, its destination).
    Hop(u32),
    /// The ICH has finished servicing request packet p.
    IchDone(u32),
    /// The IO-APIC's interrupt write is ready to leave the hub.
    IoApicSend(MsiMessage),
    /// Core c goes on (after compute time, a store's release, or leaving an idle state).
    CpuResume(u8),
    /// Core c's Local APIC timer fires: the kernel's periodic tick on that CPU.
    Tick(u8),
    /// A System Management Interrupt: every core leaves the OS for firmware.
    Smi,
    /// Core c's busy run of process work (of generation g) ends.
    BusyDone(u8, u32),
    /// Core c's workload has its next busy stretch.
    WorkArrives(u8),
    /// The workload's phase i begins.
    Phase(u8),
    /// Core c's clock moves (`[cpu.frequency]`).
    Frequency(u8),
    /// Core c's one-shot Local APIC timer (programmed for its earliest hrtimer, programming g)
    /// fires.
    LapicTimer(u8, u32),
}

// An event is 8 bytes, so that the queue's entries (time, sequence number, event) are 24.
const _: () = assert!(std::mem::size_of::<Ev>() <= 8);

/// Counters a run reports besides the latencies.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Counters {
    pub interrupts_generated: u64,
    pub spurious_interrupts: u64,
    pub unhandled_interrupts: u64,
    pub overlapped_samples: u64,
    /// Triggers of the measured device that waited for the previous interrupt's service.
    pub held_triggers: u64,
    /// Port I/O reads and writes the CPU made (each a non-posted round trip to the ICH).
    pub port_ios: u64,
    /// 8259 interrupt-acknowledge cycles.
    pub interrupt_acknowledges: u64,
    /// Memory reads the CPU made of device registers (non-posted round trips).
    pub mmio_reads: u64,
    /// Local timer ticks the kernel handled.
    pub ticks: u64,
    /// System Management Interrupts taken.
    pub smis: u64,
    /// Sections with interrupts off the workloads ran.
    pub workload_sections: u64,
    /// Idle periods per idle state (cpuidle), in the platform's state order.
    pub idle_entries: Vec<(String, u64)>,
    /// Hardware interrupts each core took, by CPU number.
    pub interrupts_per_cpu: Vec<u64>,
    /// TLPs replayed after a bit error, on every device link.
    pub link_replays: u64,
    /// DMA requests the devices sent.
    pub dma_requests: u64,
    pub events: u64,
    /// The run hit its event limit before settling.
    pub truncated: bool,
    pub packets_on_link: u64,
    pub simulated_ps: u64,
}

pub struct Machine {
    q: EventQueue<Ev>,
    pub fabric: Fabric,
    pub ich: Ich,
    /// The cores the kernel runs on, in CPU number order (core 0 boots).
    pub cores: Vec<Core>,
    /// The core that issued the CPU request with each tag (its completion returns there).
    tag_core: [u8; 32],
    /// The core of each physical APIC ID (`u8::MAX`: none).
    apic_core: [u8; 256],
    pub kernel: Kernel,
    /// The tasks and the core's run queue. Seeds 000 and 002 run the idle task alone, whose
    /// context is loaded in the core from the start.
    pub sched: Scheduler,
    /// The devices, in the fabric's order of ends (`Endpoint::Device(k)` is `devices[k]`): the
    /// PCIe endpoints, then the board's devices.
    pub devices: Vec<Device>,
    /// The workload's phases, by sample number, and the current one.
    pub phases: Vec<Phase>,
    phase: usize,
    /// A probe that watches the whole machine after every event and may end the run
    /// (seed 004's: the kernel's PPS timestamps against the counter card's latch).
    pub observer: Option<Box<dyn crate::probes::Observer>>,
    packets: Vec<Packet>,
    free: Vec<u32>,
    pub analyzer: Analyzer,
    pub probe: LatencyProbe,
    /// The measured card's round trips, as its counter counted them (seed 002).
    pub round_trip: RoundTripProbe,
    /// cyclictest's latencies, as its threads measured them (seed 003).
    pub cyclictest: CyclictestProbe,
    /// The link the analyzer sits on (the probed device's; `u8::MAX`: none).
    pub analyzed_link: u8,
    /// The router input each device's INTx arrives on (its pin swizzled by the bridges on its
    /// way, from the topology), by requester ID.
    pub intx_lines: Vec<(Bdf, u8)>,
    /// The device whose latencies the probe measures.
    pub probed_device: u8,
    /// Requester ID of the root complex (CPU-initiated requests).
    pub root_requester: Bdf,
    root_tag: u8,
    /// The interrupts the probed device raises before the run ends.
    pub target_samples: u64,
    /// A run of fixed length (a forwarding run's traffic): it ends at this time, whatever the
    /// samples.
    pub end_at: Option<SimTime>,
    events: u64,
    port_ios: u64,
    interrupt_acknowledges: u64,
    mmio_reads: u64,
    /// Stop after this many events even if not drained (an interrupt storm, for instance).
    pub event_limit: u64,
    /// Reference mode: no run-ahead and no early hop crossing; every step that takes time ends
    /// at an event. Slower, and by construction ordered; tests check the fast paths against it.
    pub strict: bool,
    /// Interrupts raised so far, shared with a progress display (every [`PROGRESS_EVERY`]).
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// The latest delivery or idle entry made ahead of the clock (the run's end is the later of
    /// this and the last event).
    last_inline: SimTime,
    /// The core whose read is on its way from `issue`, while the read crosses ahead of the
    /// clock: its completion may reach it there too ([`Machine::advance`]).
    issuing: Option<u8>,
    /// That read's completion, if it reached the core ahead of the clock: its packet, when it
    /// arrived, and the sequence number its event would have had. Until `issue` decides, it
    /// stands for that event: what the device does after answering sees it as queued
    /// ([`Machine::next_due`]), as it would have seen the event.
    completed: Option<(u32, SimTime, u64)>,
    /// When the next SMI comes: an SMI is not masked by the interrupt flag, so the core may run
    /// ahead with interrupts off only up to it.
    next_smi: SimTime,
    /// System Management Interrupts, if the platform has them.
    pub smi: Option<Smi>,
    /// A windowed run (`skip.rs`): only this long before each pulse of the board's wire is
    /// simulated, and the pulse's service; the time between is skipped.
    pub window: Option<SimDuration>,
    /// The last pulse after which the run skipped (or found no room to).
    skipped_after: u64,
    /// The simulated time skipped between windows.
    pub skipped: SimDuration,
}

/// The platform's System Management Interrupts: firmware that takes every core away from the OS
/// for a while, invisible to it (Intel SDM vol. 3, ch. 32). Poisson arrivals.
pub struct Smi {
    pub mean_interval: SimDuration,
    pub duration: SimDuration,
    pub rng: crate::engine::Stream,
    pub count: u64,
}

impl Smi {
    pub(super) fn next_gap(&mut self) -> SimDuration {
        crate::engine::exponential(&mut self.rng, self.mean_interval)
    }
}

/// Add `from` to `into` element by element with `add`, taking `from`'s elements where `into` is
/// shorter (per-state and per-CPU counts of runs, replications or cores).
fn add_by_index<T: Clone>(into: &mut Vec<T>, from: &[T], add: impl Fn(&mut T, &T)) {
    for (i, n) in from.iter().enumerate() {
        match into.get_mut(i) {
            Some(e) => add(e, n),
            None => into.push(n.clone()),
        }
    }
}

impl Counters {
    /// Add another run's counters (replications of one scenario).
    pub fn merge(&mut self, o: &Counters) {
        self.interrupts_generated += o.interrupts_generated;
        self.spurious_interrupts += o.spurious_interrupts;
        self.unhandled_interrupts += o.unhandled_interrupts;
        self.overlapped_samples += o.overlapped_samples;
        self.held_triggers += o.held_triggers;
        self.port_ios += o.port_ios;
        self.interrupt_acknowledges += o.interrupt_acknowledges;
        self.mmio_reads += o.mmio_reads;
        self.ticks += o.ticks;
        self.smis += o.smis;
        self.workload_sections += o.workload_sections;
        self.link_replays += o.link_replays;
        self.dma_requests += o.dma_requests;
        add_by_index(&mut self.idle_entries, &o.idle_entries, |e, n| e.1 += n.1);
        add_by_index(
            &mut self.interrupts_per_cpu,
            &o.interrupts_per_cpu,
            |e, n| *e += n,
        );
        self.events += o.events;
        self.truncated |= o.truncated;
        self.packets_on_link += o.packets_on_link;
        self.simulated_ps += o.simulated_ps;
    }
}

/// Has the run its samples: its end time if it has one, else what its observer says if it has
/// one, else cyclictest's loops, else the measured device's interrupts? (Of the machine's
/// parts, so that the core's loop can ask while it holds a core.)
pub(super) fn has_samples(
    observer: &Option<Box<dyn crate::probes::Observer>>,
    kernel: &Kernel,
    devices: &[Device],
    probed: u8,
    target: u64,
    ended: Option<bool>,
) -> bool {
    if let Some(ended) = ended {
        return ended;
    }
    match (observer, kernel.cyclic.first()) {
        (Some(o), _) => o.done(),
        (None, Some(t)) => t.loops >= target,
        (None, None) => card(devices, probed).generated >= target,
    }
}

/// PCIe device k of the machine's devices (the measured device, a network controller's
/// function: the caller knows it is one).
#[inline]
pub(super) fn card(devices: &[Device], k: u8) -> &Exerciser {
    (devices[usize::from(k)].card())
        .unwrap_or_else(|| unreachable!("device {k} is on the board, not a PCIe endpoint"))
}

/// PCIe device k of the machine's devices, to change.
#[inline]
pub(super) fn card_mut(devices: &mut [Device], k: u8) -> &mut Exerciser {
    (devices[usize::from(k)].card_mut())
        .unwrap_or_else(|| unreachable!("device {k} is on the board, not a PCIe endpoint"))
}

/// How often a run reports its progress, in interrupts of the measured device.
pub const PROGRESS_EVERY: u64 = 1 << 14;

/// A machine assembled in stages, each a method: the fabric with its hub and cores
/// ([`MachineBuilder::new`]), the kernel as it boots, the PCIe devices with their INTx lines,
/// the board's devices, the workload's phases, the platform's SMIs, the probes, and how
/// long the run is; then [`MachineBuilder::build`]. A stage left out is the machine without
/// it (no devices, no SMIs, no observer). Tasks are spawned on the built machine, as the
/// kernel boots them.
pub struct MachineBuilder {
    fabric: Fabric,
    ich: Ich,
    cores: Vec<Core>,
    kernel: Option<Kernel>,
    devices: Vec<Exerciser>,
    intx_lines: Vec<(Bdf, u8)>,
    board: Vec<crate::devices::Board>,
    phases: Vec<Phase>,
    smi: Option<Smi>,
    analyzer: Analyzer,
    probe: LatencyProbe,
    analyzed: Option<usize>,
    round_trip: RoundTripProbe,
    cyclictest: CyclictestProbe,
    observer: Option<Box<dyn crate::probes::Observer>>,
    root_requester: Bdf,
    target_samples: u64,
    end_at: Option<SimTime>,
    event_limit: Option<u64>,
    window: Option<SimDuration>,
}

impl MachineBuilder {
    /// The hardware's fabric: its links and routes, the I/O hub as the BIOS left it, the cores
    /// (in CPU number order), and the root complex's requester ID.
    pub fn new(fabric: Fabric, ich: Ich, cores: Vec<Core>, root_requester: Bdf) -> Self {
        MachineBuilder {
            fabric,
            ich,
            cores,
            kernel: None,
            devices: Vec::new(),
            intx_lines: Vec::new(),
            board: Vec::new(),
            phases: Vec::new(),
            smi: None,
            analyzer: Analyzer::new(0),
            probe: LatencyProbe::new(0, None),
            analyzed: None,
            round_trip: RoundTripProbe::default(),
            cyclictest: CyclictestProbe::default(),
            observer: None,
            root_requester,
            target_samples: 0,
            end_at: None,
            event_limit: None,
            window: None,
        }
    }

    /// The kernel, with its programs for the registered descriptors.
    pub fn kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = Some(kernel);
        self
    }

    /// The PCIe devices (the measured one first) and the router input each one's INTx
    /// arrives on, by requester ID.
    pub fn devices(mut self, devices: Vec<Exerciser>, intx_lines: Vec<(Bdf, u8)>) -> Self {
        self.devices = devices;
        self.intx_lines = intx_lines;
        self
    }

    /// The board's devices (on the fabric after the PCIe devices: board device j is the
    /// machine's device `cards + j`).
    pub fn board(mut self, board: Vec<crate::devices::Board>) -> Self {
        self.board = board;
        self
    }

    /// The workload's phases, by the number of the run's samples (none: one load).
    pub fn phases(mut self, phases: Vec<Phase>) -> Self {
        self.phases = phases;
        self
    }

    /// The platform's System Management Interrupts, if it has them.
    pub fn smi(mut self, smi: Option<Smi>) -> Self {
        self.smi = smi;
        self
    }

    /// The analyzer on the measured device's link and the latency probe that reads its log.
    /// The measured device is the first PCIe device unless [`Self::analyzed`] names another.
    pub fn analyzer(mut self, analyzer: Analyzer, probe: LatencyProbe) -> Self {
        self.analyzer = analyzer;
        self.probe = probe;
        self
    }

    /// The device whose link the analyzer sits on (the machine's device index: PCIe devices
    /// first, then the board's): its serial link, or the ISA bus a board device sits on.
    pub fn analyzed(mut self, device: usize) -> Self {
        self.analyzed = Some(device);
        self
    }

    /// The probe that keeps what the measured card's round-trip counter counts.
    pub fn round_trip(mut self, probe: RoundTripProbe) -> Self {
        self.round_trip = probe;
        self
    }

    /// The probe that keeps what cyclictest's threads measure, if the kernel runs it.
    pub fn cyclictest(mut self, probe: CyclictestProbe) -> Self {
        self.cyclictest = probe;
        self
    }

    /// A probe that watches the whole machine and says when the run is done.
    pub fn observer(mut self, observer: Box<dyn crate::probes::Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The samples the run takes (the measured device's interrupts, cyclictest's loops or the
    /// observer's samples), and, unless given, the event limit from them.
    pub fn samples(mut self, target: u64) -> Self {
        self.target_samples = target;
        self
    }

    /// A run of fixed length: it ends at `end`, whatever its samples, and its length, not its
    /// samples, bounds its events.
    pub fn ends_at(mut self, end: SimTime) -> Self {
        self.end_at = Some(end);
        self.event_limit = Some(u64::MAX);
        self
    }

    /// A windowed run: only `window` before each pulse of the board's wire is simulated, and
    /// the pulse's service (`skip.rs`). The machine must have board devices only, and an
    /// observer whose samples are the pulses.
    pub fn window(mut self, window: SimDuration) -> Self {
        self.window = Some(window);
        self
    }

    /// Stop after this many events even if not drained.
    pub fn event_limit(mut self, limit: u64) -> Self {
        self.event_limit = Some(limit);
        self
    }

    pub fn build(self) -> Machine {
        let kernel = self.kernel.expect("a machine runs a kernel");
        // The analyzer sits on the measured device's link: the one named, else the first PCIe
        // device's (without either there is none).
        let analyzed = self.analyzed.or((!self.devices.is_empty()).then_some(0));
        let analyzed_link = analyzed
            .and_then(|k| self.fabric.device_links.get(k).copied())
            .unwrap_or(u8::MAX);
        let mut cores = self.cores;
        for core in &mut cores {
            // The idle task, which each core runs from boot.
            core.ctx = TaskContext::starting(Frame::at(kernel.entries.idle));
        }
        let mut apic_core = [u8::MAX; 256];
        for (c, core) in cores.iter().enumerate() {
            apic_core[usize::from(core.lapic.id)] = c as u8;
        }
        let target_samples = self.target_samples;
        Machine {
            q: EventQueue::new(),
            fabric: self.fabric,
            ich: self.ich,
            sched: Scheduler::new(cores.len() as u8),
            cores,
            tag_core: [0; 32],
            apic_core,
            kernel,
            devices: (self.devices.into_iter().map(Device::Card))
                .chain(self.board.into_iter().map(Device::Board))
                .collect(),
            phases: self.phases,
            phase: 0,
            observer: self.observer,
            packets: Vec::with_capacity(16),
            free: Vec::new(),
            analyzer: self.analyzer,
            probe: self.probe,
            round_trip: self.round_trip,
            cyclictest: self.cyclictest,
            analyzed_link,
            intx_lines: self.intx_lines,
            probed_device: 0,
            root_requester: self.root_requester,
            root_tag: 0,
            target_samples,
            end_at: self.end_at,
            events: 0,
            port_ios: 0,
            interrupt_acknowledges: 0,
            mmio_reads: 0,
            event_limit: self
                .event_limit
                .unwrap_or(target_samples.saturating_mul(10_000).max(1_000_000)),
            strict: false,
            progress: None,
            last_inline: SimTime::ZERO,
            issuing: None,
            completed: None,
            next_smi: SimTime::from_ps(u64::MAX),
            smi: self.smi,
            window: self.window,
            skipped_after: 0,
            skipped: SimDuration::ZERO,
        }
    }
}

impl Machine {
    /// Run until the probed device has raised its interrupts and everything has settled.
    pub fn run(&mut self) -> Counters {
        for c in 0..self.cores.len() {
            self.q.schedule_at(SimTime::ZERO, Ev::CpuResume(c as u8));
        }
        // With high-resolution timers the Local APIC timer is one-shot, programmed for each
        // CPU's earliest hrtimer (the tick among them); without, it is the periodic tick.
        if self.kernel.sched.is_some() {
            for c in 0..self.cores.len() {
                if let Some(at) = self.kernel.hrtimers.earliest(c as u8) {
                    let g = self.cores[c].timer_gen;
                    self.q.schedule_at(at, Ev::LapicTimer(c as u8, g));
                }
            }
        }
        // Every CPU's tick on the same jiffy boundary (Linux aligns them unless booted with
        // `skew_tick=1`, kernel/time/tick-sched.c).
        if let Some(t) = self
            .kernel
            .tick
            .as_ref()
            .filter(|_| self.kernel.sched.is_none())
        {
            for (c, core) in self.cores.iter_mut().enumerate() {
                if core.lapic.enabled {
                    core.next_tick = Some(SimTime::ZERO + t.period);
                    self.q.schedule_in(t.period, Ev::Tick(c as u8));
                }
            }
        }
        if let Some(smi) = &mut self.smi {
            let gap = smi.next_gap();
            self.next_smi = SimTime::ZERO + gap;
            self.q.schedule_in(gap, Ev::Smi);
        }
        for (c, core) in self.cores.iter_mut().enumerate() {
            if let Some(f) = &mut core.frequency {
                let hold = crate::engine::exponential(&mut f.rng, f.mean_hold);
                self.q.schedule_in(hold, Ev::Frequency(c as u8));
            }
        }
        self.start_devices();
        let mut truncated = false;
        while let Some((_, ev)) = self.q.pop() {
            self.events += 1;
            if self.events > self.event_limit {
                truncated = true;
                break;
            }
            match ev {
                Ev::Device(k, t, g) => self.on_device_timer(k, t, g),
                Ev::Hop(p) => self.on_hop(p),
                Ev::IchDone(p) => self.on_ich_done(p, self.q.now()),
                Ev::IoApicSend(m) => self.send_interrupt_write(m),
                Ev::CpuResume(c) => {
                    let c = usize::from(c);
                    self.cores[c].state = CpuState::Running;
                    self.cpu_run(c);
                }
                Ev::Tick(c) => self.on_tick(usize::from(c)),
                Ev::Smi => self.on_smi(),
                Ev::BusyDone(c, g) => self.busy_done(usize::from(c), g),
                Ev::WorkArrives(c) => self.work_arrives(usize::from(c)),
                Ev::Phase(i) => self.set_phase(usize::from(i)),
                Ev::Frequency(c) => self.on_frequency(usize::from(c)),
                Ev::LapicTimer(c, g) => self.on_lapic_timer(usize::from(c), g),
            }
            if let Some(o) = &mut self.observer {
                o.observe(&self.kernel, &self.devices);
                if o.done() {
                    break;
                }
                // Asked only of a windowed run: the whole timeline pays nothing per event.
                if self.window.is_some() {
                    if let Some(n) = o.settled().filter(|&n| n > self.skipped_after) {
                        self.try_skip(n);
                    }
                }
            }
        }
        // The controllers' counts run to the end: frames that arrived after their last access.
        let end = self.q.now().max(self.last_inline);
        for d in self.devices.iter_mut().filter_map(Device::card_mut) {
            if let Some(n) = &mut d.nic {
                n.finish(end);
            }
        }
        let probed = (self.devices.get(usize::from(self.probed_device))).and_then(Device::card);
        Counters {
            interrupts_generated: probed.map_or(0, |d| d.generated),
            spurious_interrupts: self.kernel.var(crate::kernel::SPURIOUS_8259),
            unhandled_interrupts: self
                .kernel
                .irqs
                .iter()
                .map(|d| self.kernel.var(d.unhandled))
                .sum(),
            overlapped_samples: self.probe.overlapped,
            held_triggers: probed.map_or(0, |d| d.held_triggers),
            port_ios: self.port_ios,
            interrupt_acknowledges: self.interrupt_acknowledges,
            mmio_reads: self.mmio_reads,
            ticks: self.kernel.var(crate::kernel::TICKS),
            smis: self.smi.as_ref().map_or(0, |s| s.count),
            workload_sections: (self.cores.iter())
                .filter_map(|c| c.work.as_ref().map(|w| w.sections))
                .sum(),
            link_replays: self.fabric.replays(),
            dma_requests: (self.devices.iter().filter_map(Device::card))
                .map(|d| d.dma_requests)
                .sum(),
            idle_entries: self.idle_entries(),
            interrupts_per_cpu: self.cores.iter().map(|c| c.interrupts).collect(),
            events: self.events,
            truncated,
            packets_on_link: self.analyzer.packets,
            simulated_ps: self.q.now().max(self.last_inline).as_ps(),
        }
    }

    /// Every generator runs until the measured device has raised the run's sample count (or
    /// cyclictest has run its loops).
    pub(super) fn wants_more(&self) -> bool {
        !has_samples(
            &self.observer,
            &self.kernel,
            &self.devices,
            self.probed_device,
            self.target_samples,
            self.end_at.map(|e| self.q.now() >= e),
        )
    }

    /// Core c's one-shot Local APIC timer fires, unless it was programmed again since (a stale
    /// event) or the run has its samples (the timers stop, so the run can drain).
    pub(super) fn on_lapic_timer(&mut self, c: usize, gen: u32) {
        if self.cores[c].timer_gen != gen || !self.wants_more() {
            return;
        }
        let t = self
            .kernel
            .tick
            .as_ref()
            .expect("a kernel with hrtimers has a timer vector");
        let vector = t.vector;
        self.cores[c].lapic.accept(vector, false);
        self.poke_cpu(c);
    }

    /// The Local APIC timer's periodic interrupt. It stops with the generators, so the run can
    /// drain. A tick still pending in the IRR when the next one fires merges with it (one IRR
    /// bit per vector), as on the real APIC.
    pub(super) fn on_tick(&mut self, c: usize) {
        if !self.wants_more() {
            // No more ticks: the governor must not wait for this one.
            self.cores[c].next_tick = None;
            return;
        }
        let t = self.kernel.tick.as_ref().expect("ticks only with a tick");
        let (vector, period) = (t.vector, t.period);
        self.cores[c].lapic.accept(vector, false);
        self.poke_cpu(c);
        self.cores[c].next_tick = Some(self.q.now() + period);
        self.q.schedule_in(period, Ev::Tick(c as u8));
    }

    /// Core c's clock moves to a new one, held until the next move. Code the core has already
    /// run ahead of the clock keeps the old clock's time (the move lands between two steps).
    pub(super) fn on_frequency(&mut self, c: usize) {
        if !self.wants_more() {
            return;
        }
        use rand::Rng as _;
        let core = &mut self.cores[c];
        let f = core
            .frequency
            .as_mut()
            .expect("frequency events only with [cpu.frequency]");
        let clock_hz = f.rng.gen_range(f.low_hz..=f.high_hz);
        let hold = crate::engine::exponential(&mut f.rng, f.mean_hold);
        core.set_clock(clock_hz);
        self.q.schedule_in(hold, Ev::Frequency(c as u8));
    }

    /// An SMI: every core is in System Management Mode for its duration, whatever it was doing
    /// (the chipset broadcasts it, Intel SDM vol. 3, 32.1). Interrupts that arrive meanwhile stay
    /// pending in the Local APICs; a read in flight completes, but a core only goes on
    /// afterwards.
    pub(super) fn on_smi(&mut self) {
        if !self.wants_more() {
            return;
        }
        let smi = self.smi.as_mut().expect("SMI events only with SMIs");
        smi.count += 1;
        let end = self.q.now() + smi.duration;
        let gap = smi.duration + smi.next_gap();
        for c in 0..self.cores.len() {
            if self.cores[c].busy.is_some() {
                // Process code stops for SMM and goes on after it.
                let now = self.q.now();
                self.cut_busy(c, now, end);
            }
            let core = &mut self.cores[c];
            core.smm_until = core.smm_until.max(end);
            // An SMI takes a core out of MWAIT, and RSM returns past it (MWAIT does not
            // restart): the core is awake after SMM, with no idle state left to leave. (HLT
            // restarts after RSM, Intel SDM vol. 3, 32.10: a kernel without cpuidle stays
            // halted.)
            if core.state == CpuState::Halted {
                if let Some(ci) = &mut core.cpuidle {
                    ci.left(end);
                    core.state = CpuState::Waking;
                    self.q.schedule_at(end, Ev::CpuResume(c as u8));
                }
            }
        }
        self.next_smi = self.q.now() + gap;
        self.q.schedule_in(gap, Ev::Smi);
    }

    /// Idle periods per idle state over all cores, in the platform's state order.
    fn idle_entries(&self) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = Vec::new();
        for ci in self.cores.iter().filter_map(|c| c.cpuidle.as_ref()) {
            let core: Vec<(String, u64)> = (ci.states.iter().map(|s| s.name.clone()))
                .zip(ci.entered.iter().copied())
                .collect();
            add_by_index(&mut out, &core, |e, n| e.1 += n.1);
        }
        out
    }

    pub fn now(&self) -> SimTime {
        self.q.now()
    }
}
