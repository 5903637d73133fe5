//! The discrete-event engine: simulated time, the event queue, seeded random streams.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::EventQueue;
pub use rng::{exponential, lognormal, BinomialTable, RngStreams, Stream};
pub use time::{SimDuration, SimTime};
