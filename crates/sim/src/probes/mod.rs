//! What observes the model: the bus analyzer and the latency probe built on it.

pub mod analyzer;

/// Points of a run's sample series, for every probe: exact up to this many samples, min/max
/// per stretch beyond.
pub const SERIES_POINTS: usize = 4096;

pub mod pps;
