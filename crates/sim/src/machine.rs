//! The assembled system and its event loop: packets cross the fabric hop by hop, the ICH and the
//! devices react to what reaches them, and the CPU runs kernel frames, stalling on every
//! non-posted access until its completion comes back.

use crate::devices::exerciser::{Exerciser, Reaction};
use crate::engine::{EventQueue, SimDuration, SimTime};
use crate::hw::cpu::{CpuCosts, CpuTiming};
use crate::hw::fabric::{Endpoint, Fabric, Hop, Route};
use crate::hw::ich::Ich;
use crate::hw::ioapic::IOAPIC_BASE;
use crate::hw::lapic::{self, LocalApic};
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::{Bdf, MsgCode, Tlp, TlpKind};
use crate::kernel::cpuidle::Cpuidle;
use crate::kernel::frames::{Access, Frame, Op, StepCtx};
use crate::kernel::sched::{Scheduler, TaskContext};
use crate::kernel::Kernel;
use crate::probes::analyzer::{Analyzer, LatencyProbe};

/// Events. Small and `Copy`: packets live in a slab and are named by index.
#[derive(Copy, Clone, Debug)]
enum Ev {
    /// Device k's interrupt generator fires.
    Generate(u8),
    /// Device k's DMA stream s (0 writes, 1 reads) issues its next request.
    Dma(u8, u8),
    /// Packet p reaches its next hop (or, past the last, its destination).
    Hop(u32),
    /// Device k re-checks its INTx line after a clear write.
    CheckDeassert(u8),
    /// Device k raises an interrupt it held back for its previous one's service (a reaction to
    /// a delivery made while the core ran ahead: the run's sample count, which every device
    /// reads, must change in time order).
    Trigger(u8),
    /// The ICH has finished servicing request packet p.
    IchDone(u32),
    /// The IO-APIC's interrupt write is ready to leave the hub.
    IoApicSend(MsiMessage),
    CpuResume,
    /// The Local APIC timer fires: the kernel's periodic tick.
    Tick,
    /// A System Management Interrupt: the core leaves the OS for firmware.
    Smi,
}

struct Packet {
    tlp: Tlp,
    /// `tlp.wire_bytes()`, computed once: every stateful hop needs it.
    wire_bytes: u32,
    route: Route,
    hop: u8,
    dest: Endpoint,
    /// A CPU store: the core may go on once the FSB has taken it.
    releases_cpu: bool,
    live: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CpuState {
    /// A resume event is scheduled.
    Running,
    /// Waiting for a completion or for the FSB to take a store.
    Stalled,
    Halted,
    /// Leaving HLT; a resume event is scheduled.
    Waking,
}

/// One CPU core with its Local APIC and the context of the task it runs.
pub struct Cpu {
    pub timing: CpuCosts,
    halt_exit: SimDuration,
    pub lapic: LocalApic,
    state: CpuState,
    /// The 8259's INTR wire as the core sees it (used when the Local APIC is disabled).
    intr_line: bool,
    /// The running task's kernel stack, flags and preempt count, loaded in the core (a context
    /// switch swaps it with the next task's, [`Scheduler::switch`]). Interrupts nest on this
    /// stack. An op parked there waits until its frame is on top again.
    ctx: TaskContext,
    /// Idle states and their governor (cpuidle); `None`: HLT with `halt_exit`.
    pub cpuidle: Option<Cpuidle>,
    /// In System Management Mode until then: the core runs no OS code.
    smm_until: SimTime,
}

impl Cpu {
    pub fn new(timing: CpuTiming, lapic: LocalApic) -> Self {
        Cpu {
            halt_exit: timing.halt_exit,
            timing: timing.costs(),
            lapic,
            state: CpuState::Running,
            intr_line: false,
            // The idle task, which the core runs from boot.
            ctx: TaskContext::starting(Frame::Idle { pc: 0 }),
            cpuidle: None,
            smm_until: SimTime::ZERO,
        }
    }
}

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
    /// Idle periods per idle state (cpuidle), in the platform's state order.
    pub idle_entries: Vec<(String, u64)>,
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
    pub cpu: Cpu,
    pub kernel: Kernel,
    /// The tasks and the core's run queue. Seeds 000 and 002 run the idle task alone, whose
    /// context is loaded in the core from the start.
    pub sched: Scheduler,
    pub devices: Vec<Exerciser>,
    packets: Vec<Packet>,
    free: Vec<u32>,
    pub analyzer: Analyzer,
    pub probe: LatencyProbe,
    /// The link the analyzer sits on (root port index).
    pub analyzed_link: u8,
    /// The device whose latencies the probe measures.
    pub probed_device: u8,
    /// Requester ID of the root complex (CPU-initiated requests).
    pub root_requester: Bdf,
    root_tag: u8,
    /// The interrupts the probed device raises before the run ends.
    pub target_samples: u64,
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
    /// When the next tick fires (the governor's next timer event).
    next_tick: Option<SimTime>,
    /// The latest delivery or idle entry made ahead of the clock (the run's end is the later of
    /// this and the last event).
    last_inline: SimTime,
    /// When the next SMI comes: an SMI is not masked by the interrupt flag, so the core may run
    /// ahead with interrupts off only up to it.
    next_smi: SimTime,
    /// System Management Interrupts, if the platform has them.
    pub smi: Option<Smi>,
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
    fn next_gap(&mut self) -> SimDuration {
        crate::engine::exponential(&mut self.rng, self.mean_interval)
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
        self.link_replays += o.link_replays;
        self.dma_requests += o.dma_requests;
        for (i, (_, n)) in o.idle_entries.iter().enumerate() {
            match self.idle_entries.get_mut(i) {
                Some(e) => e.1 += n,
                None => self.idle_entries.push(o.idle_entries[i].clone()),
            }
        }
        self.events += o.events;
        self.truncated |= o.truncated;
        self.packets_on_link += o.packets_on_link;
        self.simulated_ps += o.simulated_ps;
    }
}

/// How often a run reports its progress, in interrupts of the measured device.
pub const PROGRESS_EVERY: u64 = 1 << 14;

impl Machine {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        fabric: Fabric,
        ich: Ich,
        cpu: Cpu,
        kernel: Kernel,
        devices: Vec<Exerciser>,
        analyzer: Analyzer,
        probe: LatencyProbe,
        root_requester: Bdf,
        target_samples: u64,
    ) -> Self {
        Machine {
            q: EventQueue::new(),
            fabric,
            ich,
            cpu,
            kernel,
            sched: Scheduler::new(1),
            devices,
            packets: Vec::with_capacity(16),
            free: Vec::new(),
            analyzer,
            probe,
            analyzed_link: 0,
            probed_device: 0,
            root_requester,
            root_tag: 0,
            target_samples,
            events: 0,
            port_ios: 0,
            interrupt_acknowledges: 0,
            mmio_reads: 0,
            event_limit: target_samples.saturating_mul(10_000).max(1_000_000),
            strict: false,
            progress: None,
            next_tick: None,
            last_inline: SimTime::ZERO,
            next_smi: SimTime::from_ps(u64::MAX),
            smi: None,
        }
    }

    /// Run until the probed device has raised its interrupts and everything has settled.
    pub fn run(&mut self) -> Counters {
        self.q.schedule_at(SimTime::ZERO, Ev::CpuResume);
        if let Some(t) = &self.kernel.tick {
            self.next_tick = Some(SimTime::ZERO + t.period);
            self.q.schedule_in(t.period, Ev::Tick);
        }
        if let Some(smi) = &mut self.smi {
            let gap = smi.next_gap();
            self.next_smi = SimTime::ZERO + gap;
            self.q.schedule_in(gap, Ev::Smi);
        }
        for k in 0..self.devices.len() {
            if self.devices[k].cfg.generates {
                let gap = self.devices[k].first_gap();
                self.q.schedule_in(gap, Ev::Generate(k as u8));
            }
            for stream in 0..2u8 {
                let d = &self.devices[k].cfg;
                if [&d.dma_writes, &d.dma_reads][usize::from(stream)].is_some() {
                    let gap = self.devices[k].next_dma_gap(stream);
                    self.q.schedule_in(gap, Ev::Dma(k as u8, stream));
                }
            }
        }
        let mut truncated = false;
        while let Some((_, ev)) = self.q.pop() {
            self.events += 1;
            if self.events > self.event_limit {
                truncated = true;
                break;
            }
            match ev {
                Ev::Generate(k) => self.on_generate(k),
                Ev::Dma(k, stream) => self.on_dma(k, stream),
                Ev::Hop(p) => self.on_hop(p),
                Ev::CheckDeassert(k) => {
                    if let Some(tlp) = self.devices[usize::from(k)].check_deassert() {
                        self.send(Endpoint::Device(k), Endpoint::Ich, tlp, SimDuration::ZERO);
                    }
                }
                Ev::IchDone(p) => self.on_ich_done(p),
                Ev::IoApicSend(m) => self.send_interrupt_write(m),
                Ev::CpuResume => {
                    self.cpu.state = CpuState::Running;
                    self.cpu_run();
                }
                Ev::Tick => self.on_tick(),
                Ev::Trigger(k) => {
                    if self.wants_more() {
                        self.raise(k);
                    }
                }
                Ev::Smi => self.on_smi(),
            }
        }
        Counters {
            interrupts_generated: self.devices[usize::from(self.probed_device)].generated,
            spurious_interrupts: self.kernel.spurious_8259,
            unhandled_interrupts: self.kernel.irqs.iter().map(|d| d.unhandled).sum(),
            overlapped_samples: self.probe.overlapped,
            held_triggers: self.devices[usize::from(self.probed_device)].held_triggers,
            port_ios: self.port_ios,
            interrupt_acknowledges: self.interrupt_acknowledges,
            mmio_reads: self.mmio_reads,
            ticks: self.kernel.ticks,
            smis: self.smi.as_ref().map_or(0, |s| s.count),
            link_replays: self.fabric.links.iter().map(|l| l.path.replays).sum(),
            dma_requests: self.devices.iter().map(|d| d.dma_requests).sum(),
            idle_entries: self.cpu.cpuidle.as_ref().map_or(Vec::new(), |c| {
                c.states
                    .iter()
                    .zip(&c.entered)
                    .map(|(s, n)| (s.name.clone(), *n))
                    .collect()
            }),
            events: self.events,
            truncated,
            packets_on_link: self.analyzer.packets,
            simulated_ps: self.q.now().max(self.last_inline).as_ps(),
        }
    }

    /// Every generator runs until the measured device has raised the run's sample count.
    fn wants_more(&self) -> bool {
        self.devices[usize::from(self.probed_device)].generated < self.target_samples
    }

    fn on_generate(&mut self, k: u8) {
        if self.wants_more() {
            self.raise(k);
            // A card that counts its interval from the service write schedules its next
            // interrupt when that write arrives.
            if !self.devices[usize::from(k)].cfg.interval_from_service {
                let gap = self.devices[usize::from(k)].next_gap();
                self.q.schedule_in(gap, Ev::Generate(k));
            }
        }
    }

    /// A DMA request leaves the card (after its PCIe core's pipeline), and the next is planned.
    fn on_dma(&mut self, k: u8, stream: u8) {
        if !self.wants_more() {
            return;
        }
        let dev = &mut self.devices[usize::from(k)];
        let tlp = dev.dma_request(stream);
        let delay = dev.cfg.core_tx;
        let gap = dev.next_dma_gap(stream);
        self.send(Endpoint::Device(k), Endpoint::Memory, tlp, delay);
        self.q.schedule_in(gap, Ev::Dma(k, stream));
    }

    /// The Local APIC timer's periodic interrupt. It stops with the generators, so the run can
    /// drain. A tick still pending in the IRR when the next one fires merges with it (one IRR
    /// bit per vector), as on the real APIC.
    fn on_tick(&mut self) {
        if !self.wants_more() {
            // No more ticks: the governor must not wait for this one.
            self.next_tick = None;
            return;
        }
        let t = self.kernel.tick.as_ref().expect("ticks only with a tick");
        let (vector, period) = (t.vector, t.period);
        self.cpu.lapic.accept(vector, false);
        self.poke_cpu();
        self.next_tick = Some(self.q.now() + period);
        self.q.schedule_in(period, Ev::Tick);
    }

    /// An SMI: the core is in System Management Mode for its duration, whatever it was doing.
    /// Interrupts that arrive meanwhile stay pending in the Local APIC; a read in flight
    /// completes, but the core only goes on afterwards.
    fn on_smi(&mut self) {
        if !self.wants_more() {
            return;
        }
        let smi = self.smi.as_mut().expect("SMI events only with SMIs");
        smi.count += 1;
        let end = self.q.now() + smi.duration;
        let gap = smi.duration + smi.next_gap();
        self.cpu.smm_until = self.cpu.smm_until.max(end);
        // An SMI takes a core out of MWAIT, and RSM returns past it (MWAIT does not restart):
        // the core is awake after SMM, with no idle state left to leave. (HLT restarts after RSM,
        // Intel SDM vol. 3, 32.10: a kernel without cpuidle stays halted.)
        if self.cpu.state == CpuState::Halted {
            if let Some(ci) = &mut self.cpu.cpuidle {
                ci.left(end);
                self.cpu.state = CpuState::Waking;
                self.q.schedule_at(end, Ev::CpuResume);
            }
        }
        self.next_smi = self.q.now() + gap;
        self.q.schedule_in(gap, Ev::Smi);
    }

    fn raise(&mut self, k: u8) {
        self.raise_at(k, self.q.now(), true);
    }

    /// Device k raises an interrupt at `at` (now, or later while the core runs ahead of the
    /// clock); `early` as for [`Self::send_at`].
    fn raise_at(&mut self, k: u8, at: SimTime, early: bool) {
        if let Some((tlp, delay)) = self.devices[usize::from(k)].trigger_at(at) {
            if k == self.probed_device {
                if let Some(p) = &self.progress {
                    if self.devices[usize::from(k)]
                        .generated
                        .is_multiple_of(PROGRESS_EVERY)
                    {
                        p.fetch_add(PROGRESS_EVERY, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
            let dest = if tlp.kind == TlpKind::MemWrite {
                Endpoint::Cpu
            } else {
                Endpoint::Ich
            };
            self.send_at(Endpoint::Device(k), dest, tlp, at + delay, early);
        }
    }

    // ---- packets -------------------------------------------------------------------------

    fn alloc(&mut self, pkt: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.packets[i as usize] = pkt;
                i
            }
            None => {
                self.packets.push(pkt);
                (self.packets.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, p: u32) {
        self.packets[p as usize].live = false;
        self.free.push(p);
    }

    /// Start `tlp` on its way from `from` to `to` after `delay`.
    fn send(&mut self, from: Endpoint, to: Endpoint, tlp: Tlp, delay: SimDuration) -> u32 {
        self.send_packet(from, to, tlp, self.q.now() + delay, false, true)
            .0
    }

    /// Start `tlp` on its way at `at`. `early`: it may cross hops ahead of the clock right away.
    /// That is exact only while every future action of the core is in the queue (it is not
    /// while the core runs ahead of the clock and goes on after this send), because a hop
    /// crossed early is taken before anything the core would put on it in the meantime.
    fn send_at(&mut self, from: Endpoint, to: Endpoint, tlp: Tlp, at: SimTime, early: bool) {
        self.send_packet(from, to, tlp, at, false, early);
    }

    /// Start a packet at `t`; `releases_cpu` marks a CPU store, which lets the core go on once
    /// the FSB has taken it; `early` as for [`Self::send_at`]. Returns the packet and, if it
    /// already crossed the FSB, when that was.
    fn send_packet(
        &mut self,
        from: Endpoint,
        to: Endpoint,
        tlp: Tlp,
        t: SimTime,
        releases_cpu: bool,
        early: bool,
    ) -> (u32, Option<SimTime>) {
        let p = self.alloc(Packet {
            tlp,
            wire_bytes: tlp.wire_bytes(),
            route: Route::between(from, to),
            hop: 0,
            dest: to,
            releases_cpu,
            live: true,
        });
        // Cross right away only if nothing is scheduled up to the entry time (see `advance`).
        if early && !self.strict && self.q.peek_time().is_none_or(|next| next > t) {
            // A store (the core goes on after it) runs ahead of the clock; a read stalls it.
            let ahead = releases_cpu;
            let released = self.advance(p, t, true, ahead);
            (p, released)
        } else {
            self.q.schedule_at(t, Ev::Hop(p));
            (p, None)
        }
    }

    fn on_hop(&mut self, p: u32) {
        let pkt = &self.packets[p as usize];
        debug_assert!(pkt.live);
        if pkt.route.hop(pkt.hop).is_none() {
            self.deliver(p);
            return;
        }
        self.advance(p, self.q.now(), false, false);
    }

    /// Cross hops from time `t` until the packet must wait for the clock: a stateful hop (bus,
    /// link) may be crossed ahead of time only if nothing else is scheduled before the packet
    /// reaches it, so nothing else can take that bus first (exact, like the CPU's run-ahead).
    /// With `inline_release`, a CPU store's release time is returned instead of scheduled.
    ///
    /// A packet that reaches a device with nothing scheduled before it is delivered there and
    /// then (nothing else can reach the device first, and a later packet on the same link
    /// arrives after this one). `ahead`: the core that sent it runs on ahead of the clock, so
    /// what the device does that others can see (a reply, a new interrupt, which changes the
    /// run's sample count) waits for its own event (see `send_at`, `device_receives`).
    fn advance(
        &mut self,
        p: u32,
        mut t: SimTime,
        inline_release: bool,
        ahead: bool,
    ) -> Option<SimTime> {
        let mut released = None;
        let pkt = &self.packets[p as usize];
        let (route, wire_bytes, releases, mut i) =
            (pkt.route, pkt.wire_bytes, pkt.releases_cpu, pkt.hop);
        let len = route.len();
        loop {
            let hop = route.at(i);
            i += 1;
            let crossing = self.fabric.cross(hop, t, wire_bytes);
            if let (Hop::Link(k, dir), Some(start)) = (hop, crossing.wire_start) {
                if k == self.analyzed_link {
                    let tlp = &self.packets[p as usize].tlp;
                    self.analyzer.observe(start, dir, tlp);
                    self.probe.observe(start, dir, tlp);
                }
            }
            if releases && hop == Hop::Fsb {
                if inline_release {
                    released = Some(crossing.arrival);
                } else {
                    self.q.schedule_at(crossing.arrival, Ev::CpuResume);
                }
            }
            // Hub crossings are pure delays: fold them in.
            t = crossing.arrival;
            while i < len {
                match self.fabric.pure_delay(route.at(i)) {
                    Some(d) => {
                        t += d;
                        i += 1;
                    }
                    None => break,
                }
            }
            if self.strict || i >= len || self.q.peek_time().is_some_and(|next| next <= t) {
                break;
            }
        }
        if !self.strict && i >= len && self.q.peek_time().is_none_or(|next| next > t) {
            let pkt = &self.packets[p as usize];
            let (tlp, dest) = (pkt.tlp, pkt.dest);
            match dest {
                Endpoint::Device(k) => {
                    self.release(p);
                    self.last_inline = self.last_inline.max(t);
                    self.device_receives(k, tlp, t, !ahead);
                    return released;
                }
                // An interrupt message for a halted core: nothing of the core runs before its
                // wake-up, which is an event.
                Endpoint::Cpu
                    if tlp.kind == TlpKind::MemWrite && self.cpu.state == CpuState::Halted =>
                {
                    self.release(p);
                    self.last_inline = self.last_inline.max(t);
                    self.interrupt_message(tlp, t);
                    return released;
                }
                _ => {}
            }
        }
        self.packets[p as usize].hop = i;
        self.q.schedule_at(t, Ev::Hop(p));
        released
    }

    fn deliver(&mut self, p: u32) {
        let pkt = &self.packets[p as usize];
        let (tlp, dest) = (pkt.tlp, pkt.dest);
        match dest {
            Endpoint::Device(k) => {
                self.release(p);
                self.device_receives(k, tlp, self.q.now(), true);
            }
            Endpoint::Memory => {
                self.release(p);
                if tlp.kind == TlpKind::MemRead {
                    self.memory_read(tlp);
                }
            }
            Endpoint::Cpu => {
                self.release(p);
                match tlp.kind {
                    TlpKind::MemWrite => self.interrupt_message(tlp, self.q.now()),
                    TlpKind::Cpl | TlpKind::CplD => {
                        debug_assert_eq!(self.cpu.state, CpuState::Stalled);
                        self.cpu.ctx.value = tlp.data;
                        self.cpu.state = CpuState::Running;
                        self.cpu_run();
                    }
                    _ => {}
                }
            }
            Endpoint::Ich => self.ich_receive(p, tlp),
        }
    }

    /// An interrupt write reaches the core's Local APIC at `at`: the MCH turns a write to
    /// 0xFEEx_xxxx into an FSB interrupt message.
    fn interrupt_message(&mut self, tlp: Tlp, at: SimTime) {
        if let Some(m) = MsiMessage::decode(tlp.addr, tlp.data) {
            if self.cpu.lapic.enabled && m.dest_apic_id == self.cpu.lapic.id {
                self.cpu.lapic.accept(m.vector, m.level_triggered);
                self.poke_cpu_at(at);
            }
        }
    }

    /// Device k takes `tlp` at `at` and reacts; `early` as for [`Self::send_at`].
    fn device_receives(&mut self, k: u8, tlp: Tlp, at: SimTime, early: bool) {
        match self.devices[usize::from(k)].receive(at, &tlp) {
            Reaction::None => {}
            Reaction::Send(delay, reply) => {
                self.send_at(Endpoint::Device(k), Endpoint::Cpu, reply, at + delay, early);
            }
            Reaction::CheckDeassert(delay) => {
                self.q.schedule_at(at + delay, Ev::CheckDeassert(k));
            }
            // While the core runs ahead, another device's delivery may still come before `at`
            // and read the sample count that this raise would change: raise at an event.
            Reaction::Trigger if !early => self.q.schedule_at(at, Ev::Trigger(k)),
            Reaction::Trigger => {
                if self.wants_more() {
                    self.raise_at(k, at, early);
                }
            }
            Reaction::TriggerAfter(gap) => {
                self.q.schedule_at(at + gap, Ev::Generate(k));
            }
        }
    }

    /// A device's DMA read reaches host memory: after the memory's latency the root complex
    /// returns the data in completions of at most the read completion boundary each (64 B: what
    /// Intel root complexes use; base spec 2.3.1.1).
    fn memory_read(&mut self, req: Tlp) {
        const RCB_BYTES: u32 = 64;
        let Some(k) = self.devices.iter().position(|d| d.cfg.bdf == req.requester) else {
            return;
        };
        let mut left = u32::from(req.len_dw) * 4;
        while left > 0 {
            let chunk = left.min(RCB_BYTES);
            left -= chunk;
            let cpl = Tlp {
                kind: TlpKind::CplD,
                requester: req.requester,
                completer: self.root_requester,
                tag: req.tag,
                addr: req.addr,
                len_dw: (chunk / 4) as u16,
                data: 0,
            };
            let latency = self.fabric.memory_read;
            self.send(Endpoint::Memory, Endpoint::Device(k as u8), cpl, latency);
        }
    }

    // ---- the I/O hub ---------------------------------------------------------------------

    fn ich_receive(&mut self, p: u32, tlp: Tlp) {
        let now = self.q.now();
        let t = &self.ich.timing;
        let clocks = match tlp.kind {
            TlpKind::Msg(MsgCode::AssertIntx(pin)) | TlpKind::Msg(MsgCode::DeassertIntx(pin)) => {
                self.release(p);
                let assert = matches!(tlp.kind, TlpKind::Msg(MsgCode::AssertIntx(_)));
                // The device's pin as seen above its bridge (swizzled by device number); the
                // ICH maps DMI INTA-D onto PIRQA-D.
                let pirq = pin.swizzle(tlp.requester.dev).index();
                let effect = self.ich.intx(pirq, assert);
                self.update_intr();
                if let Some(m) = effect.ioapic_message {
                    let at = self.ich.ioapic_delivery_done(now);
                    self.q.schedule_at(at, Ev::IoApicSend(m));
                }
                return;
            }
            TlpKind::Msg(MsgCode::Eoi(vector)) => {
                self.release(p);
                if let Some(m) = self.ich.ioapic.eoi(vector) {
                    let at = self.ich.ioapic_delivery_done(now);
                    self.q.schedule_at(at, Ev::IoApicSend(m));
                }
                return;
            }
            TlpKind::IoRead | TlpKind::IoWrite => t.legacy_io_clocks,
            TlpKind::IntAck => t.intack_clocks,
            TlpKind::MemRead | TlpKind::MemWrite => t.ioapic_access_clocks,
            TlpKind::Cpl | TlpKind::CplD => {
                self.release(p);
                return;
            }
        };
        let done = self.ich.service_done(now, clocks);
        self.q.schedule_at(done, Ev::IchDone(p));
    }

    fn on_ich_done(&mut self, p: u32) {
        let req = self.packets[p as usize].tlp;
        self.release(p);
        let reply = |kind, data| Tlp {
            kind,
            requester: req.requester,
            completer: Bdf::new(0, 31, 0), // the LPC bridge, D31:F0
            tag: req.tag,
            addr: req.addr,
            len_dw: 1,
            data,
        };
        let port = req.addr as u16;
        let completion = match req.kind {
            TlpKind::IoRead => {
                let v = self.ich.pics.port_read(port).unwrap_or(0xFF);
                Some(reply(TlpKind::CplD, u32::from(v)))
            }
            TlpKind::IoWrite => {
                self.ich.pics.port_write(port, req.data as u8);
                Some(reply(TlpKind::Cpl, 0))
            }
            TlpKind::IntAck => {
                let (vector, _) = self.ich.pics.interrupt_acknowledge();
                Some(reply(TlpKind::CplD, u32::from(vector)))
            }
            TlpKind::MemRead => {
                let v = self.ich.ioapic.mmio_read(req.addr - IOAPIC_BASE);
                Some(reply(TlpKind::CplD, v))
            }
            TlpKind::MemWrite => {
                if let Some(m) = self.ich.ioapic.mmio_write(req.addr - IOAPIC_BASE, req.data) {
                    let at = self.ich.ioapic_delivery_done(self.q.now());
                    self.q.schedule_at(at, Ev::IoApicSend(m));
                }
                None
            }
            _ => None,
        };
        self.update_intr();
        if let Some(c) = completion {
            self.send(Endpoint::Ich, Endpoint::Cpu, c, SimDuration::ZERO);
        }
    }

    /// The IO-APIC's interrupt: an upstream memory write to 0xFEEx_xxxx over DMI.
    fn send_interrupt_write(&mut self, m: MsiMessage) {
        let tlp = Tlp {
            kind: TlpKind::MemWrite,
            requester: Bdf::new(0, 31, 0),
            completer: Bdf::default(),
            tag: 0,
            addr: u64::from(m.address()),
            len_dw: 1,
            data: m.data(),
        };
        self.send(Endpoint::Ich, Endpoint::Cpu, tlp, SimDuration::ZERO);
    }

    /// The 8259's INTR wire drives the core directly (a sideband pin; its flight time is
    /// negligible against the bus crossings).
    fn update_intr(&mut self) {
        let level = self.ich.pics.intr();
        if level != self.cpu.intr_line {
            self.cpu.intr_line = level;
            if level && !self.cpu.lapic.enabled {
                self.poke_cpu();
            }
        }
    }

    // ---- the CPU -------------------------------------------------------------------------

    fn poke_cpu(&mut self) {
        self.poke_cpu_at(self.q.now());
    }

    /// An interrupt reaches the core at `at`: a halted core starts to wake.
    fn poke_cpu_at(&mut self, at: SimTime) {
        if self.cpu.state == CpuState::Halted {
            self.cpu.state = CpuState::Waking;
            // In SMM the core leaves its idle state only after the firmware resumes it.
            let from = at.max(self.cpu.smm_until);
            let wake = match &mut self.cpu.cpuidle {
                Some(ci) => {
                    let wake = ci.wake_time();
                    ci.left(from + wake);
                    wake
                }
                None => self.cpu.halt_exit,
            };
            self.q.schedule_at(from + wake, Ev::CpuResume);
        }
    }

    fn interrupt_pending(&self) -> bool {
        if self.cpu.lapic.enabled {
            self.cpu.lapic.deliverable().is_some()
        } else {
            self.cpu.intr_line
        }
    }

    fn take_interrupt(&mut self) {
        // An interrupt gate clears IF as part of delivery.
        self.cpu.ctx.irqs_enabled = false;
        let frame = if self.cpu.lapic.enabled {
            let vector = self.cpu.lapic.acknowledge().expect("deliverable");
            Frame::Interrupt {
                pc: 0,
                vector,
                from_pic: false,
            }
        } else {
            Frame::Interrupt {
                pc: 0,
                vector: 0,
                from_pic: true,
            }
        };
        self.cpu.ctx.stack.push(frame);
    }

    fn resume_after(&mut self, d: SimDuration) {
        self.cpu.state = CpuState::Running;
        self.q.schedule_in(d, Ev::CpuResume);
    }

    /// May the core run on to `now + acc` without an event? Only if nothing else is scheduled
    /// before then: no interrupt, completion or device action can happen in between, so
    /// continuing is exact, not an approximation.
    fn may_run_ahead(&self, acc: SimDuration) -> bool {
        !self.strict && self.q.peek_time().is_none_or(|t| t > self.q.now() + acc)
    }

    /// Run the core from now until it stalls, halts or must let time pass. `acc` is compute time
    /// already spent ahead of the queue's clock; the core runs ahead only while nothing else is
    /// scheduled in that window (`may_run_ahead`), and otherwise parks the pending op in
    /// `parked` and resumes at the right moment.
    fn cpu_run(&mut self) {
        let now = self.q.now();
        if now < self.cpu.smm_until {
            // In SMM: the OS goes on when the firmware resumes (RSM).
            self.cpu.state = CpuState::Running;
            self.q.schedule_at(self.cpu.smm_until, Ev::CpuResume);
            return;
        }
        let mut acc = SimDuration::ZERO;
        // Neither changes while the core runs: read them once.
        let (strict, next_smi) = (self.strict, self.next_smi);
        loop {
            // In the reference mode every step ends at an event. An SMI takes the core at the
            // first step boundary at or after its time, as in the reference mode, whatever the
            // interrupt flag.
            if acc > SimDuration::ZERO && (strict || now + acc >= next_smi) {
                return self.resume_after(acc);
            }
            if self.cpu.ctx.irqs_enabled {
                // An interrupt taken at this instruction boundary may have arrived while the core
                // ran ahead with interrupts off: catch up with the clock before deciding.
                if acc > SimDuration::ZERO && !self.may_run_ahead(acc) {
                    return self.resume_after(acc);
                }
                // Nothing is scheduled before `now + acc` (checked above), so the interrupt is
                // taken there, ahead of the clock: accepting it changes only the Local APIC and
                // the stack, which nothing else reads in between.
                if self.interrupt_pending() {
                    self.take_interrupt();
                }
            }
            let depth = self.cpu.ctx.stack.len();
            let op = match self.cpu.ctx.parked.last() {
                Some((d, _)) if *d == depth => self.cpu.ctx.parked.pop().expect("present").1,
                _ => {
                    let cpu = &mut self.cpu;
                    let frame = cpu
                        .ctx
                        .stack
                        .last_mut()
                        .expect("a task's first frame is never popped");
                    let mut cx = StepCtx {
                        kernel: &mut self.kernel,
                        costs: &cpu.timing,
                        fold: !strict,
                        horizon: next_smi.since_or_zero(now + acc),
                        charged: SimDuration::ZERO,
                        value: cpu.ctx.value,
                        irqs_enabled: &mut cpu.ctx.irqs_enabled,
                        preempt: &mut cpu.ctx.preempt,
                    };
                    let op = frame.step(&mut cx);
                    acc += cx.charged;
                    op
                }
            };
            match op {
                Op::Run(0) => {}
                Op::Run(n) => {
                    acc += self.cpu.timing.instructions(n);
                    // With interrupts on, one may arrive while these instructions run; it is
                    // taken at the end of the step, so the step must end at an event unless
                    // nothing can arrive before then.
                    if self.cpu.ctx.irqs_enabled && !self.may_run_ahead(acc) {
                        return self.resume_after(acc);
                    }
                }
                Op::Vectoring => acc += self.cpu.timing.vectoring(),
                Op::Access(a) => {
                    if acc > SimDuration::ZERO && !self.may_run_ahead(acc) {
                        self.cpu.ctx.parked.push((self.cpu.ctx.stack.len(), op));
                        return self.resume_after(acc);
                    }
                    match self.issue(a, acc) {
                        Some(local) => acc += local,
                        None => {
                            self.cpu.state = CpuState::Stalled;
                            return;
                        }
                    }
                }
                Op::Call(f) => self.cpu.ctx.stack.push(f),
                Op::Return(v) => {
                    self.cpu.ctx.stack.pop();
                    self.cpu.ctx.value = v;
                }
                Op::Iret => {
                    self.cpu.ctx.stack.pop();
                    acc += self.cpu.timing.iret();
                    self.cpu.ctx.irqs_enabled = true;
                }
                Op::Halt { sti } => {
                    // The core idles from `now + acc`, ahead of the clock, if nothing is
                    // scheduled before then: whatever wakes it comes later.
                    if acc > SimDuration::ZERO && !self.may_run_ahead(acc) {
                        self.cpu.ctx.parked.push((self.cpu.ctx.stack.len(), op));
                        return self.resume_after(acc);
                    }
                    let now = self.q.now() + acc;
                    self.last_inline = self.last_inline.max(now);
                    let next_timer = self.next_tick.map(|t| t.since(now));
                    let polls = match &mut self.cpu.cpuidle {
                        Some(ci) => {
                            let i = ci.select(now, next_timer);
                            ci.states[i].polls
                        }
                        None => false,
                    };
                    if sti || polls {
                        // sti; hlt, or poll_idle, which spins with interrupts on.
                        self.cpu.ctx.irqs_enabled = true;
                    }
                    if !self.interrupt_pending() {
                        self.cpu.state = CpuState::Halted;
                        return;
                    }
                    if let Some(ci) = &mut self.cpu.cpuidle {
                        ci.left(now); // MWAIT returns at once: a pending interrupt
                    }
                }
            }
        }
    }

    fn root_request(&mut self, kind: TlpKind, addr: u64, data: u32) -> Tlp {
        let tag = self.root_tag;
        self.root_tag = (self.root_tag + 1) & 31;
        Tlp {
            kind,
            requester: self.root_requester,
            completer: Bdf::default(),
            tag,
            addr,
            len_dw: 1,
            data,
        }
    }

    /// Where the MCH sends a CPU memory access.
    fn decode(&self, addr: u64) -> Endpoint {
        if let Some(k) = self.devices.iter().position(|d| d.claims(addr)) {
            Endpoint::Device(k as u8)
        } else if (IOAPIC_BASE..IOAPIC_BASE + 0x1000).contains(&addr) {
            Endpoint::Ich
        } else {
            panic!("access to 0x{addr:x}, which no modelled device decodes")
        }
    }

    /// Issue an access `at` after now (the core's compute time ahead of the clock). `Some(cost)`
    /// for accesses the core completes by itself (Local APIC); `None` when it waits for the bus.
    fn issue(&mut self, a: Access, at: SimDuration) -> Option<SimDuration> {
        let lapic_cost = self.cpu.timing.lapic_access();
        let (tlp, dest, posted) = match a {
            Access::LapicRead { reg } => {
                self.cpu.ctx.value = self.cpu.lapic.read(reg);
                return Some(lapic_cost);
            }
            Access::LapicWrite { reg, .. } => {
                if reg == lapic::REG_EOI {
                    if let Some(v) = self.cpu.lapic.eoi() {
                        // Level-triggered: the EOI goes out to the IO-APIC (posted).
                        let msg = self.root_request(TlpKind::Msg(MsgCode::Eoi(v)), 0, 0);
                        self.send(Endpoint::Cpu, Endpoint::Ich, msg, at);
                    }
                }
                return Some(lapic_cost);
            }
            Access::MmioRead { addr } => (
                {
                    self.mmio_reads += 1;
                    self.root_request(TlpKind::MemRead, addr, 0)
                },
                self.decode(addr),
                false,
            ),
            Access::MmioWrite { addr, data } => (
                self.root_request(TlpKind::MemWrite, addr, data),
                self.decode(addr),
                true,
            ),
            Access::PortIn { port } => (
                {
                    self.port_ios += 1;
                    self.root_request(TlpKind::IoRead, u64::from(port), 0)
                },
                Endpoint::Ich,
                false,
            ),
            Access::PortOut { port, data } => (
                {
                    self.port_ios += 1;
                    self.root_request(TlpKind::IoWrite, u64::from(port), u32::from(data))
                },
                Endpoint::Ich,
                false,
            ),
            Access::IntAck => (
                {
                    self.interrupt_acknowledges += 1;
                    self.root_request(TlpKind::IntAck, 0, 0)
                },
                Endpoint::Ich,
                false,
            ),
        };
        let t = self.q.now() + at;
        match self.send_packet(Endpoint::Cpu, dest, tlp, t, posted, true) {
            // A store the FSB took at once: the core goes on from then, no event needed.
            (_, Some(released)) => Some(released.since(self.q.now() + at)),
            _ => None,
        }
    }

    pub fn now(&self) -> SimTime {
        self.q.now()
    }
}
