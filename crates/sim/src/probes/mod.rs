//! What observes the model: the bus analyzer and the latency probe built on it, and the
//! observers that watch the whole machine ([`Observer`]: seed 004's PPS probe).

use crate::devices::Board;
use crate::kernel::Kernel;

pub mod analyzer;

/// Points of a run's sample series, for every probe: exact up to this many samples, min/max
/// per stretch beyond.
pub const SERIES_POINTS: usize = 4096;

pub mod pps;

/// A probe that watches the whole machine rather than one link: it looks at the kernel's state
/// and the board's devices after every event, hears the board's pulse wire, and says when the
/// run has what it came for (the machine then stops). It measures nothing the machine does not
/// do: it only reads.
pub trait Observer: Send {
    /// A pulse on the board's wire, numbered by its source.
    fn pulse(&mut self, _number: u64) {}
    /// Look after an event.
    fn observe(&mut self, kernel: &Kernel, board: &[Board]);
    /// Has it its samples?
    fn done(&self) -> bool;
    /// The probe itself, for its owner to read its results after the run.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}
