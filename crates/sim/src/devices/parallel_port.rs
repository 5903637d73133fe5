//! The PC parallel port: a pulse on pin 10 (nACK) raises its IRQ (7) through the Super I/O's
//! gates `ack_to_irq` later; the line follows the pulse down. The driver reads the status
//! register (`base + 1`, `ppb_rstr`) in its handler.

use super::Effects;
use crate::engine::{SimDuration, SimTime};

const RAISE: u8 = 0;
/// The timer of the line's fall with the pulse.
pub(super) const DROP: u8 = 1;

#[derive(Clone, Debug)]
pub struct ParallelPort {
    pub irq: u8,
    pub base: u16,
    pub ack_to_irq: SimDuration,
    pub pulse_width: SimDuration,
}

impl ParallelPort {
    /// nACK falls (the pulse's edge): the IRQ rises after the gates, and falls with the pulse.
    pub fn ack(&self, now: SimTime) -> Effects {
        Effects::default()
            .timer(now + self.ack_to_irq, RAISE)
            .timer(now + self.pulse_width, DROP)
    }

    pub fn timer(&self, _now: SimTime, which: u8) -> Effects {
        Effects::default().line(self.irq, which == RAISE)
    }

    /// The status register: nothing of it is modelled but its read.
    pub fn status(&self) -> u32 {
        0x7F
    }
}
