//! Seed 004's counter card (PHK's "xrpu": a Xilinx XC6200 on PCI): a free-running counter at
//! 90.112 MHz, 22 bits wide, and a latch that its pulse input loads. A read of the card returns
//! the counter as it is when the card decodes the read (what `xrpu_get_timecount` reads), after
//! the card's data wait states.

use crate::engine::{SimDuration, SimTime};

/// The card's memory window.
pub const WINDOW: u64 = 0x1000;

#[derive(Clone, Debug)]
pub struct CounterCard {
    pub base: u64,
    pub counter_hz: f64,
    pub mask: u64,
    /// The counter's value at time zero, as a fraction of a count (it has run since power-on).
    pub phase: f64,
    /// From decoding a read to its data on the bus.
    pub data_delay: SimDuration,
    /// The counter as the last pulse latched it.
    pub latch: u64,
}

impl CounterCard {
    /// The counter at `t`.
    pub fn counter(&self, t: SimTime) -> u64 {
        (t.as_ps() as f64 * 1e-12 * self.counter_hz + self.phase).floor() as u64
    }

    pub fn latch_now(&mut self, now: SimTime) {
        self.latch = self.counter(now) & self.mask;
    }

    pub fn read(&self, now: SimTime) -> u32 {
        (self.counter(now) & self.mask) as u32
    }

    /// Nanoseconds per count.
    pub fn count_ns(&self) -> f64 {
        1e9 / self.counter_hz
    }
}
