//! The PCIe exerciser of seed 000's methodology: a card that raises interrupts on command (an
//! Assert_INTx / Deassert_INTx pair, or an MSI write) and exposes an MMIO region with a status
//! register, an interrupt-clear register and a signature region the driver writes to.
//!
//! Register addresses follow Figure 7: the status read at 0xFAFF2004, the clear write at
//! 0xFAFF3174 (both in the region the driver maps as `PCI_Reg_Pointer`), and the signatures at
//! 0xF9000040 (ISR) and 0xF9000080 (tasklet) in the region it maps as `ack_pointer`.

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

/// What a TLP arriving at the card makes it do.
#[derive(Clone, Debug, PartialEq)]
pub enum Reaction {
    None,
    /// Send this TLP after the given delay.
    Send(SimDuration, Tlp),
    /// Re-check the INTx line after the given delay (a clear write was taken).
    CheckDeassert(SimDuration),
    /// Raise the interrupt that was held back.
    Trigger,
    /// Raise the next interrupt after this gap (interval counted from the service write).
    TriggerAfter(SimDuration),
}

/// What the card does with a TLP that reaches it, and what its round-trip counter counted if
/// the TLP stopped it (ns: its counts times its nominal period; the probe keeps it,
/// `probes/round_trip.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    pub reaction: Reaction,
    pub round_trip_ns: Option<u64>,
}

impl From<Reaction> for Received {
    fn from(reaction: Reaction) -> Self {
        Received {
            reaction,
            round_trip_ns: None,
        }
    }
}

pub struct Exerciser {
    pub cfg: ExerciserConfig,
    pub status: u32,
    pub intx_asserted: bool,
    pub msi: MsiCapability,
    next_tag: u8,
    pub generated: u64,
    /// An interrupt was raised and its service write has not arrived yet.
    pub in_service: bool,
    /// A trigger fell while in service and waits for the service write.
    pub held_trigger: bool,
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
    pub nic_timer: (Option<SimTime>, u32),
    /// The generation of the generator's pending interrupt: a new rate (a workload phase's)
    /// plans the next interrupt afresh and makes the one planned before stale.
    pub generator_gen: u32,
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

    /// Raise interrupts at `per_s` from now on (a workload phase's rate; 0 stops the
    /// generator). Returns whether the machine must plan the next interrupt afresh (with the
    /// new [`Self::generator_gen`]): a card that counts its interval from the service write
    /// plans it there, unless it had stopped.
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
    pub fn first_gap(&mut self) -> SimDuration {
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
    pub fn next_gap(&mut self) -> SimDuration {
        match self.cfg.generator {
            Generator::Periodic { interval } => interval,
            Generator::Poisson { mean } => self.exponential(mean),
        }
    }

    fn exponential(&mut self, mean: SimDuration) -> SimDuration {
        crate::engine::exponential(&mut self.rng, mean)
    }

    /// The gap to the next DMA request of a stream (0: writes, 1: reads).
    pub fn next_dma_gap(&mut self, stream: u8) -> SimDuration {
        let s = if stream == 0 {
            &self.cfg.dma_writes
        } else {
            &self.cfg.dma_reads
        };
        let mean = s.as_ref().expect("a configured stream").mean_gap;
        self.exponential(mean)
    }

    /// The next DMA request of a stream: a memory write with its payload, or a read request.
    pub fn dma_request(&mut self, stream: u8) -> Tlp {
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
    pub fn trigger_at(&mut self, now: SimTime) -> Option<(Tlp, SimDuration)> {
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
    pub fn trigger(&mut self) -> Option<Tlp> {
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
    pub fn signal(&mut self) -> Option<Tlp> {
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
    pub fn nic_deassert(&mut self) -> Option<Tlp> {
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

    /// The completion of read `tlp` with `value`, after the card's turnaround.
    fn answer(&mut self, tlp: &Tlp, value: u32) -> Reaction {
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
        Reaction::Send(
            self.cfg.core_rx + self.cfg.read_turnaround + self.cfg.core_tx,
            cpl,
        )
    }

    /// A TLP addressed to the card reaches its PCIe core from the link at `now`.
    pub fn receive(&mut self, now: SimTime, tlp: &Tlp) -> Received {
        if self.nic.is_some() {
            if let Some(off) = self.in_reg_bar(tlp.addr) {
                let at = now + self.cfg.core_rx;
                match tlp.kind {
                    TlpKind::MemRead => {
                        let value = self.nic_access(at, off, None).unwrap_or(0);
                        return self.answer(tlp, value).into();
                    }
                    TlpKind::MemWrite => {
                        self.nic_access(at, off, Some(tlp.data));
                        return Reaction::None.into();
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
                self.answer(tlp, value).into()
            }
            TlpKind::MemWrite => match self.in_reg_bar(tlp.addr) {
                Some(off) if off == self.cfg.clear_offset => {
                    self.status &= !tlp.data;
                    Reaction::CheckDeassert(self.cfg.core_rx + self.cfg.deassert_delay).into()
                }
                _ if Some(tlp.addr) == self.cfg.serviced_addr => {
                    self.in_service = false;
                    let arrived = now + self.cfg.core_rx;
                    let mut round_trip_ns = None;
                    if let (Some(rt), Some(start)) = (&self.cfg.round_trip, self.counter_start) {
                        // The register stops the counter: it has counted every edge in
                        // (start, stop].
                        let stop = arrived + rt.register_access;
                        let ticks = stop.since(start).as_ps() / rt.period.as_ps();
                        round_trip_ns = Some((ticks * rt.nominal_period.as_ps()).div_ceil(1000));
                        self.counter_start = None;
                    }
                    let reaction = if self.cfg.interval_from_service {
                        let gap = self.cfg.core_rx + self.next_gap();
                        Reaction::TriggerAfter(gap)
                    } else if std::mem::take(&mut self.held_trigger) {
                        Reaction::Trigger
                    } else {
                        Reaction::None
                    };
                    Received {
                        reaction,
                        round_trip_ns,
                    }
                }
                _ => Reaction::None.into(), // the signature region just takes the write
            },
            _ => Reaction::None.into(),
        }
    }

    /// After a clear: drop the INTx line if nothing is pending any more.
    pub fn check_deassert(&mut self) -> Option<Tlp> {
        if self.intx_asserted && self.status & self.cfg.pending_flag == 0 {
            self.intx_asserted = false;
            let pin = self.cfg.intx_pin;
            return Some(self.request(TlpKind::Msg(MsgCode::DeassertIntx(pin)), 0, 0, 0));
        }
        None
    }
}
