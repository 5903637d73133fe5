//! Simulated time: an integer count of picoseconds (docs/model.md, point 1).
//!
//! Picoseconds keep a 2.5 GT/s PCIe symbol (400 ps per bit) and a 3 GHz CPU cycle (333 ps) exact
//! enough that rounding never orders two events differently from the hardware they model, and a
//! `u64` still spans 213 days of simulated time.

use serde::Serialize;
use std::fmt;
use std::ops::{Add, AddAssign, Mul, Sub};

const PS_PER_NS: u64 = 1_000;

/// An instant of simulated time, in picoseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SimTime(u64);

/// A span of simulated time, in picoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SimDuration(u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);

    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }
    /// The span from `earlier` to `self`; panics if `earlier` is later, which would be a
    /// causality bug in the model rather than a user error.
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn since_or_zero(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }

    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(
            self.0
                .checked_sub(earlier.0)
                .expect("simulated time ran backwards"),
        )
    }
    /// The next instant at or after `self` that is a whole multiple of `period`: a clock edge of
    /// a clock domain whose edges fall on multiples of its period.
    pub fn next_edge(self, period: SimDuration) -> SimTime {
        if period.0 == 0 {
            return self;
        }
        let rem = self.0 % period.0;
        if rem == 0 {
            self
        } else {
            SimTime(self.0 + (period.0 - rem))
        }
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_ps(ps: u64) -> Self {
        SimDuration(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns * PS_PER_NS)
    }
    /// Nanoseconds given as a float (parameters in files are in ns), rounded to the picosecond.
    pub fn from_ns_f64(ns: f64) -> Self {
        debug_assert!(ns >= 0.0 && ns.is_finite());
        SimDuration((ns * PS_PER_NS as f64).round() as u64)
    }
    /// `cycles` cycles of a clock running at `hz`, rounded to the picosecond.
    pub fn from_cycles(cycles: f64, hz: f64) -> Self {
        debug_assert!(hz > 0.0);
        SimDuration((cycles * 1e12 / hz).round() as u64)
    }
    /// One period of a clock at `hz`.
    pub fn period_of(hz: f64) -> Self {
        Self::from_cycles(1.0, hz)
    }
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }
    /// `self - other`, or zero if `other` is longer.
    pub const fn saturating_sub(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }
    /// Whole nanoseconds, rounded to nearest (what the histograms record).
    pub fn as_ns_rounded(self) -> u64 {
        (self.0 + PS_PER_NS / 2) / PS_PER_NS
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        // A u64 of picoseconds lasts 213 days of simulated time; overflow is checked in debug
        // builds (and so in every test) rather than on every step of a release run.
        debug_assert!(self.0.checked_add(d.0).is_some(), "simulated time overflow");
        SimTime(self.0.wrapping_add(d.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}
impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    fn sub(self, rhs: SimTime) -> SimDuration {
        self.since(rhs)
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0 + d.0)
    }
}
impl AddAssign for SimDuration {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 += d.0;
    }
}
impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    fn mul(self, k: u64) -> SimDuration {
        SimDuration(self.0 * k)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ns", self.as_ns_f64())
    }
}
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ns", self.as_ns_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_to_the_picosecond() {
        assert_eq!(SimDuration::from_cycles(1.0, 2.5e9).as_ps(), 400);
        assert_eq!(SimDuration::from_cycles(1.0, 3e9).as_ps(), 333);
        assert_eq!(SimDuration::from_ns_f64(1.2345).as_ps(), 1235);
        assert_eq!(SimDuration::from_ps(1499).as_ns_rounded(), 1);
        assert_eq!(SimDuration::from_ps(1500).as_ns_rounded(), 2);
    }

    #[test]
    fn next_edge_aligns_to_the_clock() {
        let p = SimDuration::from_ps(3000);
        assert_eq!(SimTime::from_ps(0).next_edge(p).as_ps(), 0);
        assert_eq!(SimTime::from_ps(1).next_edge(p).as_ps(), 3000);
        assert_eq!(SimTime::from_ps(3000).next_edge(p).as_ps(), 3000);
        assert_eq!(SimTime::from_ps(3001).next_edge(p).as_ps(), 6000);
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn negative_spans_are_a_bug() {
        let _ = SimTime::from_ps(1).since(SimTime::from_ps(2));
    }
}
