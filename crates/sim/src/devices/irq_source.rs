//! A card that interrupts at a rate (a SCSI controller, an ATM or Ethernet card, the keyboard):
//! requests arrive as a Poisson process; each raises the card's IRQ line unless it is still
//! raised (then it joins the pending one: coalesced). The handler's first register access
//! clears the line. The rate changes with the workload's phase.

use super::{Answer, Effects};
use crate::engine::{SimDuration, SimTime, Stream};

#[derive(Clone, Debug)]
pub struct IrqSource {
    pub name: String,
    pub irq: u8,
    /// I/O ports or a memory window its registers answer at.
    pub ports: Option<(u16, u16)>,
    pub mem: Option<u64>,
    pub rate_per_s: f64,
    /// From decoding a register read to its data (a PCI target's wait states; 0 on ISA, whose
    /// data comes within the cycle).
    pub data_delay: SimDuration,
    pub rng: Stream,
    /// Timers of an older rate are stale.
    gen: u8,
    raised: bool,
    pub interrupts: u64,
    pub coalesced: u64,
}

impl IrqSource {
    pub fn new(
        name: String,
        irq: u8,
        ports: Option<(u16, u16)>,
        mem: Option<u64>,
        rng: Stream,
    ) -> Self {
        IrqSource {
            name,
            irq,
            ports,
            mem,
            rate_per_s: 0.0,
            data_delay: SimDuration::ZERO,
            rng,
            gen: 0,
            raised: false,
            interrupts: 0,
            coalesced: 0,
        }
    }

    /// A new rate from `now` (a workload phase): the next request after a fresh gap.
    pub fn set_rate(&mut self, now: SimTime, rate_per_s: f64) -> Effects {
        self.gen = self.gen.wrapping_add(1);
        self.rate_per_s = rate_per_s;
        if rate_per_s <= 0.0 {
            return Effects::default();
        }
        let gap = super::poisson_gap(&mut self.rng, rate_per_s);
        Effects::default().timer(now + gap, self.gen)
    }

    pub fn timer(&mut self, now: SimTime, which: u8) -> Effects {
        if which != self.gen || self.rate_per_s <= 0.0 {
            return Effects::default();
        }
        let gap = super::poisson_gap(&mut self.rng, self.rate_per_s);
        let e = Effects::default().timer(now + gap, self.gen);
        if self.raised {
            self.coalesced += 1;
            return e;
        }
        self.raised = true;
        self.interrupts += 1;
        e.line(self.irq, true)
    }

    /// Its request timer `which`, due in a stretch the machine skips, fires instead after a
    /// fresh gap from `to` (the arrivals are a Poisson process: what is left of a gap is a gap
    /// of the same law); a timer of an older rate no longer fires.
    pub fn skip(&mut self, which: u8, to: SimTime) -> Option<SimTime> {
        if which != self.gen || self.rate_per_s <= 0.0 {
            return None;
        }
        Some(to + super::poisson_gap(&mut self.rng, self.rate_per_s))
    }

    /// A register access: the first after a request clears the line.
    pub fn access(&mut self) -> Answer {
        let mut effects = Effects::default();
        if std::mem::take(&mut self.raised) {
            effects.push(super::Effect::Line(self.irq, false));
        }
        Answer {
            data: 0,
            delay: self.data_delay,
            effects,
        }
    }
}
