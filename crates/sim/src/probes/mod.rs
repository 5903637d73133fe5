//! Every measurement of a run, each made by a probe: the bus analyzer and the latency probe
//! built on it (seeds 000 and 001), the round trips a card's counter counted (seed 002),
//! cyclictest's latencies (seed 003), and the observers that watch the whole machine
//! ([`Observer`]: seed 004's PPS probe). Probes only read: nothing in the model reads them.

use crate::devices::Device;
use crate::kernel::Kernel;

pub mod analyzer;
pub mod cyclictest;
pub mod round_trip;

/// Points of a run's sample series, for every probe: exact up to this many samples, min/max
/// per stretch beyond.
pub const SERIES_POINTS: usize = 4096;

pub mod pps;

/// A probe that watches the whole machine rather than one link: it looks at the kernel's state
/// and the machine's devices after every event, hears the board's pulse wire, and says when the
/// run has what it came for (the machine then stops). It measures nothing the machine does not
/// do: it only reads.
pub trait Observer: Send {
    /// A pulse on the board's wire, numbered by its source.
    fn pulse(&mut self, _number: u64) {}
    /// Look after an event.
    fn observe(&mut self, kernel: &Kernel, devices: &[Device]);
    /// Has it its samples?
    fn done(&self) -> bool;
    /// The probe itself, for its owner to read its results after the run.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}
