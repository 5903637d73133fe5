//! A GPS receiver's pulse-per-second output (seed 004: a Motorola UT Oncore): a pulse at every
//! GPS second in the board's time (the board's crystal runs `crystal_ppm` fast or slow), with
//! the receiver's wander, `pulse_width` long. Its output is wired to the parallel port's nACK
//! pin and to the counter card's latch input ([`super::Effect::Pulse`]).

use super::Effects;
use crate::engine::{SimDuration, SimTime, Stream};
use rand::Rng;

const RISE: u8 = 0;

#[derive(Clone, Debug)]
pub struct Gps {
    /// The GPS second in board picoseconds.
    pub second_ps: f64,
    pub first: SimTime,
    /// The receiver's wander (1 sigma), ps.
    pub jitter_ps: f64,
    pub rng: Stream,
    /// Pulses sent so far (the number of the last one).
    pub pulses: u64,
}

impl Gps {
    pub fn start(&self) -> Effects {
        Effects::default().timer(self.first, RISE)
    }

    pub fn timer(&mut self, now: SimTime, _which: u8) -> Effects {
        self.pulses += 1;
        let n = self.pulses;
        let jitter = normal(&mut self.rng) * self.jitter_ps;
        let next = self.first.as_ps() as f64 + n as f64 * self.second_ps + jitter;
        let next = SimTime::from_ps(next.max(now.as_ps() as f64 + 1e9) as u64);
        let mut e = Effects::default().timer(next, RISE);
        e.push(super::Effect::Pulse(super::Pulse {
            number: n,
            half_period: self.half_second(),
        }));
        e
    }

    /// Half a GPS second, for what changes between pulses.
    pub fn half_second(&self) -> SimDuration {
        SimDuration::from_ps((self.second_ps / 2.0) as u64)
    }
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut Stream) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>();
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}
