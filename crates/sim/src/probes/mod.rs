//! What observes the model: the bus analyzer and the latency probe built on it.

pub mod analyzer;
pub mod pps;
