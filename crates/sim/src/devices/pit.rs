//! The 8254's counter 0 in mode 3 (square wave) on IRQ 0: the kernel's clock (`HZ`). Its output
//! is high for the first half of each period, low for the second; the 8259 takes the rising
//! edge. The counter has run since boot, so its phase against anything else is arbitrary.

use super::Effects;
use crate::engine::{SimDuration, SimTime};

/// The timer of the rising edge (the other is the falling edge's).
pub(super) const RISE: u8 = 0;
const FALL: u8 = 1;

#[derive(Clone, Debug)]
pub struct Pit {
    pub irq: u8,
    pub period: SimDuration,
    /// When the first rising edge comes.
    pub first: SimTime,
}

impl Pit {
    /// Counter 0 loaded with `divisor` on an input clock of `clock_hz` (1.193182 MHz); the
    /// first edge at `first`.
    pub fn new(irq: u8, clock_hz: f64, hz: u32, first_fraction: f64) -> Pit {
        let divisor = (clock_hz / f64::from(hz)).round();
        let period = SimDuration::from_ps((divisor / clock_hz * 1e12).round() as u64);
        Pit {
            irq,
            period,
            first: SimTime::from_ps((first_fraction * period.as_ps() as f64) as u64),
        }
    }

    pub fn start(&self) -> Effects {
        Effects::default().timer(self.first, RISE)
    }

    pub fn timer(&self, now: SimTime, which: u8) -> Effects {
        if which == RISE {
            Effects::default()
                .timer(now + self.period, RISE)
                .timer(now + SimDuration::from_ps(self.period.as_ps() / 2), FALL)
                .line(self.irq, true)
        } else {
            Effects::default().line(self.irq, false)
        }
    }
}
