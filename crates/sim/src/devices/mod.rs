//! Interrupt sources.

pub mod exerciser;
