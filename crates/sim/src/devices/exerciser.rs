//! The PCIe exerciser of seed 000's methodology: a card that raises interrupts on command (an
//! Assert_INTx / Deassert_INTx pair, or an MSI write) and exposes an MMIO region with a status
//! register, an interrupt-clear register and a signature region the driver writes to.
//!
//! Register addresses follow Figure 7: the status read at 0xFAFF2004, the clear write at
//! 0xFAFF3174 (both in the region the driver maps as `PCI_Reg_Pointer`), and the signatures at
//! 0xF9000040 (ISR) and 0xF9000080 (tasklet) in the region it maps as `ack_pointer`.

use super::{Effect, Effects, Timer, Upstream};
use crate::engine::{SimDuration, SimTime, Stream};
use crate::hw::msi::MsiCapability;
use crate::hw::pcie::{Bdf, IntxPin, MsgCode, Tlp, TlpKind};
use rand::Rng;

/// How the exerciser spaces its interrupts.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Generator {
    /// A fixed interval.
    Periodic { interval: SimDuration },
    /// Exponentially distributed gaps (a Poisson process) with this mean.
    Poisson { mean: SimDuration },
}

#[derive(Clone, Debug)]
pub struct ExerciserConfig {
    pub name: String,
    pub bdf: Bdf,
    pub intx_pin: IntxPin,
    /// The register region (BAR0) and the signature region (BAR1).
    pub reg_bar: u64,
    pub reg_bar_size: u64,
    pub signature_bar: u64,
    pub signature_bar_size: u64,
    pub status_offset: u64,
    pub clear_offset: u64,
    pub pending_flag: u32,
    /// The card's time from a read request arriving to its completion leaving.
    pub read_turnaround: SimDuration,
    /// The card's time from a clear write arriving to its Deassert_INTx leaving.
    pub deassert_delay: SimDuration,
    pub generator: Generator,
    /// Does this card raise interrupts at all (a second card on a shared line may not)?
    pub generates: bool,
    /// One interrupt at a time, as seed 000's method needs: the address whose write marks the
    /// previous interrupt as fully serviced (the tasklet's signature). A trigger that falls
    /// while one is still in service is held back until that write arrives.
    pub serviced_addr: Option<u64>,
    /// Count the generator's interval from the service write instead of from the last trigger:
    /// the card raises its next interrupt a gap after the host answered the last one.
    pub interval_from_service: bool,
    /// The card's PCIe core between its logic and the link: transmit and receive pipelines
    /// (0 for a card whose times are given as turnarounds).
    pub core_tx: SimDuration,
    pub core_rx: SimDuration,
    /// A counter in the card that times each interrupt to its service write (seed 002).
    pub round_trip: Option<RoundTripConfig>,
    /// DMA traffic the card keeps on its link besides its interrupts.
    pub dma_writes: Option<DmaStream>,
    pub dma_reads: Option<DmaStream>,
}

/// Seed 002's instrument: a counter that starts on a clock edge as the card asserts its MSI and
/// stops when the host's write reaches the card's register.
#[derive(Clone, Debug)]
pub struct RoundTripConfig {
    /// The counter's clock period as it runs (its oscillator's error included) ...
    pub period: SimDuration,
    /// ... and as the measurement reads it: counts x the nominal period (4 ns at 250 MHz).
    pub nominal_period: SimDuration,
    /// From the write leaving the PCIe core to the register that stops the counter.
    pub register_access: SimDuration,
}

/// A stream of DMA requests of one size at a mean rate (Poisson arrivals).
#[derive(Clone, Debug)]
pub struct DmaStream {
    pub mean_gap: SimDuration,
    /// Payload per request (a write's data, or a read's requested length).
    pub bytes: u32,
    /// The host memory address the requests target.
    pub addr: u64,
}

pub struct Exerciser {
    pub cfg: ExerciserConfig,
    status: u32,
    intx_asserted: bool,
    pub msi: MsiCapability,
    next_tag: u8,
    pub generated: u64,
    /// An interrupt was raised and its service write has not arrived yet.
    in_service: bool,
    /// A trigger fell while in service and waits for the service write.
    held_trigger: bool,
    /// Triggers that had to wait.
    pub held_triggers: u64,
    /// Register reads the card answered (its driver's "is it mine?" checks among them).
    pub reads_answered: u64,
    /// The round-trip counter's start, while it runs.
    counter_start: Option<SimTime>,
    /// DMA requests sent.
    pub dma_requests: u64,
    /// A network controller's receive side behind this PCIe function (`nic.rs`): its registers
    /// answer the driver, its interrupts go out through this function's MSI or INTx.
    pub nic: Option<Box<super::nic::Nic>>,
    /// The machine's pending event for the controller's next interrupt (its time, and a
    /// generation that makes older events stale).
    nic_timer: (Option<SimTime>, u32),
    /// The generation of the generator's pending interrupt: a new rate (a workload phase's)
    /// plans the next interrupt afresh and makes the one planned before stale.
    generator_gen: u32,
    rng: Stream,
}

impl Exerciser {
    pub fn new(cfg: ExerciserConfig, rng: Stream) -> Self {
        Exerciser {
            cfg,
            status: 0,
            intx_asserted: false,
            msi: MsiCapability::default(),
            next_tag: 0,
            generated: 0,
            in_service: false,
            held_trigger: false,
            held_triggers: 0,
            reads_answered: 0,
            counter_start: None,
            dma_requests: 0,
            nic: None,
            nic_timer: (None, 0),
            generator_gen: 0,
            rng,
        }
    }

    /// Its first timers, from the machine's start at `now`: its network controller's next
    /// interrupt, its own first interrupt, its DMA streams' first requests.
    pub fn start(&mut self, now: SimTime, e: &mut Effects) {
        // A held raise is the machine's to do after the access that freed it (`Effect::Due`),
        // so a controller's line re-check at that access would come before it, where it came
        // after before effects were values: the checker gives a network controller's card no
        // service address (`check.rs`, drivers e1000 and e1000e), and this keeps it so.
        debug_assert!(
            self.nic.is_none() || self.cfg.serviced_addr.is_none(),
            "a card with a network controller holds no interrupt for its service write"
        );
        if self.nic.is_some() {
            self.nic_changed(now, e);
        }
        if self.cfg.generates {
            let gap = self.first_gap();
            e.push(self.generator_at(now + gap));
        }
        for stream in 0..2u8 {
            if [&self.cfg.dma_writes, &self.cfg.dma_reads][usize::from(stream)].is_some() {
                let gap = self.next_dma_gap(stream);
                e.push(Effect::Timer {
                    at: now + gap,
                    timer: Timer::Dma(stream),
                    gen: 0,
                });
            }
        }
    }

    /// Its timer `t` (of generation `gen`) fires at `now`; `running`: the run still takes
    /// samples (else it raises nothing and issues no DMA, so that the run drains).
    pub fn timer(&mut self, now: SimTime, t: Timer, gen: u32, running: bool, e: &mut Effects) {
        match t {
            Timer::Generate => {
                // Planned before a phase gave the card a new rate, or at a rate of 0.
                if gen != self.generator_gen || !self.cfg.generates || !running {
                    return;
                }
                self.raise(now, e);
                // A card that counts its interval from the service write plans its next
                // interrupt when that write arrives.
                if !self.cfg.interval_from_service {
                    let gap = self.next_gap();
                    e.push(self.generator_at(now + gap));
                }
            }
            Timer::Trigger => {
                if running {
                    self.raise(now, e);
                }
            }
            Timer::Dma(stream) => {
                // A request leaves after the PCIe core's pipeline, and the next is planned.
                if running {
                    let tlp = self.dma_request(stream);
                    let gap = self.next_dma_gap(stream);
                    e.push(Effect::Send {
                        tlp,
                        at: now + self.cfg.core_tx,
                        to: Upstream::Memory,
                    });
                    e.push(Effect::Timer {
                        at: now + gap,
                        timer: Timer::Dma(stream),
                        gen: 0,
                    });
                }
            }
            Timer::CheckDeassert => {
                if let Some(tlp) = self.check_deassert() {
                    e.push(Effect::Send {
                        tlp,
                        at: now,
                        to: Upstream::Hub,
                    });
                }
            }
            Timer::Nic => {
                // The controller's next interrupt may be due, unless the timer was moved since.
                if self.nic_timer.1 != gen || !running {
                    return;
                }
                self.nic_timer.0 = None;
                let nic = self.nic.as_mut().expect("a controller's timer");
                if nic.assert_due(now) {
                    if let Some(tlp) = self.signal() {
                        e.push(Effect::Send {
                            tlp,
                            at: now + self.cfg.core_tx,
                            to: interrupt_upstream(&tlp),
                        });
                    }
                }
                self.nic_changed(now, e);
            }
            Timer::Own(_) => unreachable!("a card's timers are its generator's, DMA's and NIC's"),
        }
    }

    /// A request `tlp` reaches its PCIe core from the link at `now`: what it does (a
    /// completion for a read among it), and, with a network controller behind the function,
    /// the controller's line and timer after it.
    pub fn access(&mut self, now: SimTime, tlp: &Tlp, e: &mut Effects) {
        self.receive(now, tlp, e);
        if self.nic.is_some() {
            self.nic_changed(now + self.cfg.core_rx, e);
        }
    }

    /// Raise interrupts at `per_s` from `now` on (a later workload phase's rate): the next
    /// interrupt is planned afresh where [`Self::set_rate`] says so.
    pub fn change_rate(&mut self, now: SimTime, per_s: f64, e: &mut Effects) {
        if self.set_rate(per_s) {
            let gap = self.next_gap();
            e.push(self.generator_at(now + gap));
        }
    }

    /// The generator's next interrupt at `at`, planned under its current generation.
    fn generator_at(&self, at: SimTime) -> Effect {
        Effect::Timer {
            at,
            timer: Timer::Generate,
            gen: self.generator_gen,
        }
    }

    /// Raise an interrupt at `at`: the run counts it, and its TLP leaves.
    fn raise(&mut self, at: SimTime, e: &mut Effects) {
        if let Some((tlp, delay)) = self.trigger_at(at) {
            e.push(Effect::Raised(self.generated));
            e.push(Effect::Send {
                tlp,
                at: at + delay,
                to: interrupt_upstream(&tlp),
            });
        }
    }

    /// After an access to its network controller (or the controller's timer) at `at`: a line
    /// the controller no longer asserts is deasserted, and the controller's timer moves to when
    /// its next interrupt is due (a new generation makes the one set before stale).
    fn nic_changed(&mut self, at: SimTime, e: &mut Effects) {
        let Some(nic) = &self.nic else { return };
        let next = nic.next_interrupt();
        if let Some(tlp) = self.nic_deassert() {
            e.push(Effect::Send {
                tlp,
                at: at + self.cfg.deassert_delay,
                to: Upstream::Hub,
            });
        }
        if next != self.nic_timer.0 {
            self.nic_timer = (next, self.nic_timer.1.wrapping_add(1));
            if let Some(at) = next {
                e.push(Effect::Timer {
                    at,
                    timer: Timer::Nic,
                    gen: self.nic_timer.1,
                });
            }
        }
    }

    /// Raise interrupts at `per_s` from now on (a workload phase's rate; 0 stops the
    /// generator; the assembly sets the first phase's this way). Returns whether the next
    /// interrupt must be planned afresh, under a new generation that makes the one planned
    /// before stale ([`Self::change_rate`] plans it): a card that counts its interval from the
    /// service write plans it there, unless it had stopped.
    pub fn set_rate(&mut self, per_s: f64) -> bool {
        let was = self.cfg.generates;
        self.cfg.generates = per_s > 0.0;
        if per_s > 0.0 {
            let gap = SimDuration::from_ps((1e12 / per_s).round() as u64);
            self.cfg.generator = match self.cfg.generator {
                Generator::Periodic { .. } => Generator::Periodic { interval: gap },
                Generator::Poisson { .. } => Generator::Poisson { mean: gap },
            };
        }
        if self.cfg.interval_from_service && was {
            return false;
        }
        self.generator_gen = self.generator_gen.wrapping_add(1);
        self.cfg.generates
    }

    fn tag(&mut self) -> u8 {
        let t = self.next_tag;
        self.next_tag = (self.next_tag + 1) & 31;
        t
    }

    fn request(&mut self, kind: TlpKind, addr: u64, len_dw: u16, data: u32) -> Tlp {
        Tlp {
            kind,
            requester: self.cfg.bdf,
            completer: Bdf::default(),
            tag: self.tag(),
            addr,
            len_dw,
            data,
        }
    }

    /// The gap to the first interrupt: a periodic card is switched on at an arbitrary moment of
    /// its period (uniformly drawn), so its phase against the host's timers is not fixed.
    fn first_gap(&mut self) -> SimDuration {
        let gap = self.next_gap();
        match self.cfg.generator {
            Generator::Periodic { .. } => {
                let u: f64 = self.rng.gen();
                SimDuration::from_ps((gap.as_ps() as f64 * u).round() as u64)
            }
            Generator::Poisson { .. } => gap,
        }
    }

    /// The gap to the next interrupt.
    fn next_gap(&mut self) -> SimDuration {
        match self.cfg.generator {
            Generator::Periodic { interval } => interval,
            Generator::Poisson { mean } => self.exponential(mean),
        }
    }

    fn exponential(&mut self, mean: SimDuration) -> SimDuration {
        crate::engine::exponential(&mut self.rng, mean)
    }

    /// The gap to the next DMA request of a stream (0: writes, 1: reads).
    fn next_dma_gap(&mut self, stream: u8) -> SimDuration {
        let s = if stream == 0 {
            &self.cfg.dma_writes
        } else {
            &self.cfg.dma_reads
        };
        let mean = s.as_ref().expect("a configured stream").mean_gap;
        self.exponential(mean)
    }

    /// The next DMA request of a stream: a memory write with its payload, or a read request.
    fn dma_request(&mut self, stream: u8) -> Tlp {
        self.dma_requests += 1;
        let (kind, s) = if stream == 0 {
            (TlpKind::MemWrite, self.cfg.dma_writes.clone())
        } else {
            (TlpKind::MemRead, self.cfg.dma_reads.clone())
        };
        let s = s.expect("a configured stream");
        self.request(kind, s.addr, (s.bytes / 4) as u16, 0)
    }

    /// Raise an interrupt at `now`. Returns the TLP and how long after `now` it reaches the
    /// link: a round-trip counter starts at its next clock edge, and the PCIe core's transmit
    /// pipeline lies between the card's logic and the link.
    fn trigger_at(&mut self, now: SimTime) -> Option<(Tlp, SimDuration)> {
        let tlp = self.trigger()?;
        let mut delay = self.cfg.core_tx;
        if let Some(rt) = &self.cfg.round_trip {
            let edge = now.next_edge(rt.period);
            self.counter_start = Some(edge);
            delay += edge.since(now);
        }
        Some((tlp, delay))
    }

    /// Raise an interrupt: set the pending status, then signal with an MSI write or, if the INTx
    /// line is not already asserted, an Assert_INTx message. Returns the TLP to send.
    fn trigger(&mut self) -> Option<Tlp> {
        if self.cfg.serviced_addr.is_some() {
            if self.in_service {
                self.held_trigger = true;
                self.held_triggers += 1;
                return None;
            }
            self.in_service = true;
        }
        self.generated += 1;
        self.status |= self.cfg.pending_flag;
        self.signal()
    }

    fn in_reg_bar(&self, addr: u64) -> Option<u64> {
        (addr >= self.cfg.reg_bar && addr < self.cfg.reg_bar + self.cfg.reg_bar_size)
            .then(|| addr - self.cfg.reg_bar)
    }

    /// Does this card decode `addr`?
    pub fn claims(&self, addr: u64) -> bool {
        self.in_reg_bar(addr).is_some()
            || (addr >= self.cfg.signature_bar
                && addr < self.cfg.signature_bar + self.cfg.signature_bar_size)
    }

    /// The card's interrupt (its own, or its network controller's), as this function signals
    /// it: an MSI write (held pending while masked), or Assert_INTx if the line is not
    /// asserted already.
    fn signal(&mut self) -> Option<Tlp> {
        if self.msi.enabled {
            if self.msi.masked {
                self.msi.pending = true;
                return None;
            }
            let (a, d) = (u64::from(self.msi.address), self.msi.data);
            return Some(self.request(TlpKind::MemWrite, a, 1, d));
        }
        if self.intx_asserted {
            return None;
        }
        self.intx_asserted = true;
        let pin = self.cfg.intx_pin;
        Some(self.request(TlpKind::Msg(MsgCode::AssertIntx(pin)), 0, 0, 0))
    }

    /// Deassert_INTx once the controller no longer asserts its interrupt (ICR was read).
    fn nic_deassert(&mut self) -> Option<Tlp> {
        let asserted = self.nic.as_ref().is_some_and(|n| n.line_asserted());
        if self.msi.enabled || !self.intx_asserted || asserted {
            return None;
        }
        self.intx_asserted = false;
        let pin = self.cfg.intx_pin;
        Some(self.request(TlpKind::Msg(MsgCode::DeassertIntx(pin)), 0, 0, 0))
    }

    /// A register access of the network controller, at `at` (after the card's PCIe core): a
    /// read's value, or `None` for a write.
    fn nic_access(&mut self, at: SimTime, off: u64, write: Option<u32>) -> Option<u32> {
        use super::nic;
        let n = self.nic.as_mut()?;
        match (off, write) {
            (nic::ICR, None) => Some(n.read_icr(at)),
            (nic::STATUS, None) => Some(nic::STATUS_LINK_UP_1000_FD),
            (_, None) => Some(0),
            (nic::IMS, Some(v)) => {
                if v != 0 {
                    n.write_mask(at, true);
                }
                None
            }
            (nic::IMC, Some(v)) => {
                if v != 0 {
                    n.write_mask(at, false);
                }
                None
            }
            (nic::RDT, Some(v)) => {
                n.write_rdt(at, v);
                None
            }
            (nic::ITR, Some(v)) => {
                n.write_itr(at, v);
                None
            }
            (nic::TDT, Some(v)) => {
                n.write_tdt(at, v);
                None
            }
            (nic::ICS, Some(v)) => {
                n.write_ics(at, v);
                None
            }
            (_, Some(_)) => None,
        }
    }

    /// The completion of read `tlp`, arrived at `now`, with `value`, after the card's
    /// turnaround.
    fn answer(&mut self, now: SimTime, tlp: &Tlp, value: u32, e: &mut Effects) {
        self.reads_answered += 1;
        let cpl = Tlp {
            kind: TlpKind::CplD,
            requester: tlp.requester,
            completer: self.cfg.bdf,
            tag: tlp.tag,
            addr: tlp.addr,
            len_dw: 1,
            data: value,
        };
        e.push(Effect::Send {
            tlp: cpl,
            at: now + (self.cfg.core_rx + self.cfg.read_turnaround + self.cfg.core_tx),
            to: Upstream::Cpu,
        });
    }

    /// A TLP addressed to the card reaches its PCIe core from the link at `now`.
    fn receive(&mut self, now: SimTime, tlp: &Tlp, e: &mut Effects) {
        if self.nic.is_some() {
            if let Some(off) = self.in_reg_bar(tlp.addr) {
                let at = now + self.cfg.core_rx;
                match tlp.kind {
                    TlpKind::MemRead => {
                        let value = self.nic_access(at, off, None).unwrap_or(0);
                        return self.answer(now, tlp, value, e);
                    }
                    TlpKind::MemWrite => {
                        self.nic_access(at, off, Some(tlp.data));
                        return;
                    }
                    _ => {}
                }
            }
        }
        match tlp.kind {
            TlpKind::MemRead => {
                let value = match self.in_reg_bar(tlp.addr) {
                    Some(off) if off == self.cfg.status_offset => self.status,
                    _ => 0,
                };
                self.answer(now, tlp, value, e)
            }
            TlpKind::MemWrite => match self.in_reg_bar(tlp.addr) {
                Some(off) if off == self.cfg.clear_offset => {
                    self.status &= !tlp.data;
                    e.push(Effect::Timer {
                        at: now + (self.cfg.core_rx + self.cfg.deassert_delay),
                        timer: Timer::CheckDeassert,
                        gen: 0,
                    });
                }
                _ if Some(tlp.addr) == self.cfg.serviced_addr => {
                    self.in_service = false;
                    let arrived = now + self.cfg.core_rx;
                    if let (Some(rt), Some(start)) = (&self.cfg.round_trip, self.counter_start) {
                        // The register stops the counter: it has counted every edge in
                        // (start, stop].
                        let stop = arrived + rt.register_access;
                        let ticks = stop.since(start).as_ps() / rt.period.as_ps();
                        let ns = (ticks * rt.nominal_period.as_ps()).div_ceil(1000);
                        e.push(Effect::RoundTrip(ns));
                        self.counter_start = None;
                    }
                    if self.cfg.interval_from_service {
                        let gap = self.cfg.core_rx + self.next_gap();
                        e.push(self.generator_at(now + gap));
                    } else if std::mem::take(&mut self.held_trigger) {
                        e.push(Effect::Due(Timer::Trigger));
                    }
                }
                _ => {} // the signature region just takes the write
            },
            _ => {}
        }
    }

    /// After a clear: drop the INTx line if nothing is pending any more.
    fn check_deassert(&mut self) -> Option<Tlp> {
        if self.intx_asserted && self.status & self.cfg.pending_flag == 0 {
            self.intx_asserted = false;
            let pin = self.cfg.intx_pin;
            return Some(self.request(TlpKind::Msg(MsgCode::DeassertIntx(pin)), 0, 0, 0));
        }
        None
    }
}

/// Where a card's interrupt goes: an MSI write to the cores, INTx messages to the hub.
fn interrupt_upstream(tlp: &Tlp) -> Upstream {
    if tlp.kind == TlpKind::MemWrite {
        Upstream::Cpu
    } else {
        Upstream::Hub
    }
}

#[cfg(test)]
mod tests {
    //! The card behind the devices' one interface: what it asks of the machine, as values, in
    //! its order.
    use super::*;
    use crate::engine::RngStreams;
    use crate::hw::msi::MsiMessage;

    const REG: u64 = 0xFAFF_0000;
    const SIG: u64 = 0xF900_0000;

    fn ns(n: u64) -> SimDuration {
        SimDuration::from_ns(n)
    }

    fn at(n: u64) -> SimTime {
        SimTime::ZERO + ns(n)
    }

    /// Seed 002's kind of card: periodic, one interrupt at a time, counted from its service
    /// write, with a round-trip counter at 250 MHz.
    fn card(interval_from_service: bool, msi: bool) -> Exerciser {
        card_with(interval_from_service, msi, |_| {})
    }

    fn card_with(
        interval_from_service: bool,
        msi: bool,
        edit: impl FnOnce(&mut ExerciserConfig),
    ) -> Exerciser {
        let cfg = ExerciserConfig {
            name: "card".into(),
            bdf: Bdf::new(3, 0, 0),
            intx_pin: IntxPin::parse("A").unwrap(),
            reg_bar: REG,
            reg_bar_size: 0x1000,
            signature_bar: SIG,
            signature_bar_size: 0x1000,
            status_offset: 4,
            clear_offset: 0x174,
            pending_flag: 1,
            read_turnaround: ns(300),
            deassert_delay: ns(50),
            generator: Generator::Periodic {
                interval: ns(10_000),
            },
            generates: true,
            serviced_addr: Some(SIG + 0x80),
            interval_from_service,
            core_tx: ns(100),
            core_rx: ns(80),
            round_trip: Some(RoundTripConfig {
                period: ns(4),
                nominal_period: ns(4),
                register_access: ns(8),
            }),
            dma_writes: None,
            dma_reads: None,
        };
        let mut cfg = cfg;
        edit(&mut cfg);
        let mut c = Exerciser::new(cfg, RngStreams::new(1).stream("card"));
        if msi {
            c.msi.program(MsiMessage::new(0, 0x41, false).unwrap());
        }
        c
    }

    fn write(addr: u64, data: u32) -> Tlp {
        Tlp {
            kind: TlpKind::MemWrite,
            requester: Bdf::default(),
            completer: Bdf::default(),
            tag: 0,
            addr,
            len_dw: 1,
            data,
        }
    }

    fn effects(f: impl FnOnce(&mut Effects)) -> Vec<Effect> {
        let mut e = Effects::default();
        f(&mut e);
        e.0.to_vec()
    }

    #[test]
    fn a_raise_counts_the_interrupt_then_sends_its_msi_then_plans_the_next() {
        let mut c = card(false, true);
        let e = effects(|e| c.timer(at(1_001), Timer::Generate, 0, true, e));
        assert_eq!(e.len(), 3, "{e:?}");
        assert_eq!(e[0], Effect::Raised(1));
        // The counter starts on the next 4 ns edge (1,004 ns); the MSI leaves the card's PCIe
        // core 100 ns after it.
        match e[1] {
            Effect::Send { tlp, at: t, to } => {
                assert_eq!(
                    (tlp.kind, to, t),
                    (TlpKind::MemWrite, Upstream::Cpu, at(1_104))
                );
            }
            other => panic!("not a send: {other:?}"),
        }
        let next = Effect::Timer {
            at: at(11_001),
            timer: Timer::Generate,
            gen: 0,
        };
        assert_eq!(e[2], next);
    }

    #[test]
    fn without_msi_the_card_asserts_intx_once_and_the_clear_write_deasserts_it() {
        let mut c = card(false, false);
        let e = effects(|e| c.timer(at(0), Timer::Generate, 0, true, e));
        assert!(
            matches!(e[1], Effect::Send { tlp, to: Upstream::Hub, .. }
                if tlp.kind == TlpKind::Msg(MsgCode::AssertIntx(IntxPin::parse("A").unwrap()))),
            "{e:?}"
        );
        let clear = effects(|e| c.access(at(500), &write(REG + 0x174, 1), e));
        let recheck = Effect::Timer {
            at: at(500 + 80 + 50),
            timer: Timer::CheckDeassert,
            gen: 0,
        };
        assert_eq!(clear, vec![recheck]);
        let e = effects(|e| c.timer(at(630), Timer::CheckDeassert, 0, true, e));
        assert!(
            matches!(e[..], [Effect::Send { tlp, to: Upstream::Hub, .. }]
                if matches!(tlp.kind, TlpKind::Msg(MsgCode::DeassertIntx(_)))),
            "{e:?}"
        );
        // The line is down: a second re-check sends nothing.
        assert!(effects(|e| c.timer(at(700), Timer::CheckDeassert, 0, true, e)).is_empty());
    }

    #[test]
    fn the_service_write_stops_the_counter_and_plans_the_next_interrupt_from_it() {
        // The counter's oscillator runs at 4.001 ns; the measurement reads counts x 3.999 ns.
        let mut c = card_with(true, true, |cfg| {
            let rt = cfg.round_trip.as_mut().unwrap();
            rt.period = SimDuration::from_ps(4_001);
            rt.nominal_period = SimDuration::from_ps(3_999);
        });
        effects(|e| c.timer(at(1_001), Timer::Generate, 0, true, e));
        let e = effects(|e| c.access(at(3_000), &write(SIG + 0x80, 0), e));
        // Started on the edge at 1,004,251 ps (251 x 4,001); stopped at 3,000 + 80 + 8 ns:
        // 520 whole periods of 4,001 ps, read as 520 x 3,999 ps = 2,079.48 ns, rounded up.
        let next = Effect::Timer {
            at: at(3_000 + 80 + 10_000),
            timer: Timer::Generate,
            gen: 0,
        };
        assert_eq!(e, vec![Effect::RoundTrip(2_080), next]);
    }

    #[test]
    fn a_trigger_held_for_the_previous_service_is_due_at_the_service_write() {
        let mut c = card(false, true);
        effects(|e| c.timer(at(0), Timer::Generate, 0, true, e));
        // The next trigger falls while the first is in service: held, nothing sent.
        let held = effects(|e| c.timer(at(10_000), Timer::Generate, 0, true, e));
        let next = Effect::Timer {
            at: at(20_000),
            timer: Timer::Generate,
            gen: 0,
        };
        assert_eq!(held, vec![next]);
        assert_eq!(c.held_triggers, 1);
        let e = effects(|e| c.access(at(12_000), &write(SIG + 0x80, 0), e));
        assert_eq!(
            e,
            vec![Effect::RoundTrip(12_088), Effect::Due(Timer::Trigger)]
        );
        // A run that has its samples raises nothing more.
        assert!(effects(|e| c.timer(at(12_000), Timer::Trigger, 0, false, e)).is_empty());
        let raised = effects(|e| c.timer(at(12_000), Timer::Trigger, 0, true, e));
        assert_eq!(raised[0], Effect::Raised(2));
    }

    #[test]
    fn a_stale_generation_or_a_run_that_has_its_samples_raises_nothing() {
        let mut c = card(false, true);
        assert!(effects(|e| c.timer(at(0), Timer::Generate, 0, false, e)).is_empty());
        // A new rate plans afresh under a new generation: the old plan is stale.
        let plan = effects(|e| c.change_rate(at(0), 50_000.0, e));
        let fresh = Effect::Timer {
            at: at(20_000),
            timer: Timer::Generate,
            gen: 1,
        };
        assert_eq!(plan, vec![fresh]);
        assert!(effects(|e| c.timer(at(10_000), Timer::Generate, 0, true, e)).is_empty());
        assert_eq!(
            effects(|e| c.timer(at(20_000), Timer::Generate, 1, true, e)).len(),
            3
        );
        assert_eq!(c.generated, 1);
    }

    #[test]
    fn a_read_of_the_status_register_is_answered_after_the_cards_turnaround() {
        let mut c = card(false, true);
        effects(|e| c.timer(at(0), Timer::Generate, 0, true, e));
        let read = Tlp {
            kind: TlpKind::MemRead,
            tag: 7,
            ..write(REG + 4, 0)
        };
        let e = effects(|e| c.access(at(1_000), &read, e));
        match e[..] {
            [Effect::Send { tlp, at: t, to }] => {
                assert_eq!((tlp.kind, tlp.tag, tlp.data), (TlpKind::CplD, 7, 1));
                assert_eq!((t, to), (at(1_000 + 80 + 300 + 100), Upstream::Cpu));
            }
            _ => panic!("one completion expected: {e:?}"),
        }
        assert_eq!(c.reads_answered, 1);
    }

    #[test]
    fn dma_streams_start_with_the_generator_and_each_request_plans_the_next() {
        let stream = |addr| DmaStream {
            mean_gap: ns(500),
            bytes: 256,
            addr,
        };
        let mut c = card_with(false, true, |cfg| {
            cfg.dma_writes = Some(stream(0x1000_0000));
            cfg.dma_reads = Some(stream(0x2000_0000));
        });
        let e = effects(|e| c.start(at(0), e));
        let timers: Vec<Timer> = (e.iter())
            .map(|x| match x {
                Effect::Timer { timer, .. } => *timer,
                other => panic!("start only plans timers: {other:?}"),
            })
            .collect();
        assert_eq!(timers, [Timer::Generate, Timer::Dma(0), Timer::Dma(1)]);
        let e = effects(|e| c.timer(at(2_000), Timer::Dma(1), 0, true, e));
        match e[..] {
            [Effect::Send { tlp, at: t, to }, Effect::Timer {
                at: next, timer, ..
            }] => {
                assert_eq!(
                    (tlp.kind, tlp.addr, tlp.len_dw),
                    (TlpKind::MemRead, 0x2000_0000, 64)
                );
                assert_eq!((t, to, timer), (at(2_100), Upstream::Memory, Timer::Dma(1)));
                assert!(next > at(2_000));
            }
            _ => panic!("a read request, then the next: {e:?}"),
        }
        assert!(effects(|e| c.timer(at(3_000), Timer::Dma(0), 0, false, e)).is_empty());
        assert_eq!(c.dma_requests, 1);
    }
}
