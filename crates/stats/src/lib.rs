//! Latency histograms and summaries for irqlab.
//!
//! This crate is pure computation: no I/O, no clocks. Producers (the simulator,
//! trace importers) record latencies as `u64` nanoseconds into a
//! [`LatencyHistogram`]; consumers (reports, the CLI) read quantiles, linear
//! buckets or a serialisable [`Summary`].
//!
//! # Accuracy
//!
//! [`LatencyHistogram`] wraps an HDR histogram tracking 1 ns to 10 s with 3
//! significant figures: every value is resolved to within 0.1% relative
//! (values below 2048 ns are exact). Count, minimum, maximum and mean are
//! kept exactly on the side, so only interior quantiles are approximate.
//! Values above 10 s are counted as [overflows](LatencyHistogram::overflows)
//! rather than silently clamped.
//!
//! # Example
//!
//! ```
//! use irqlab_stats::LatencyHistogram;
//!
//! let mut hist = LatencyHistogram::new();
//! for ns in [1_200, 1_350, 980, 15_000, 1_100] {
//!     hist.record(ns);
//! }
//! let p99 = hist.quantile_ns(0.99)?.expect("histogram is not empty");
//! println!("p99 = {p99} ns");
//! assert_eq!(p99, 15_000);
//! assert_eq!(hist.summary().min_ns, Some(980));
//! # Ok::<(), irqlab_stats::StatsError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod activity;
pub mod affinity;
pub mod boxwidth;
pub mod cpus;
pub mod decide;
mod error;
pub mod fence;
mod histogram;
pub mod inventory;
pub mod pcie;
pub mod plan;
pub mod results;
pub mod series;
mod summary;
pub mod uncertainty;

pub use error::StatsError;
pub use histogram::{
    LatencyHistogram, SerializedHistogram, SerializedHistogramError, HIGHEST_TRACKABLE_NS,
    LOWEST_DISCERNIBLE_NS, SIGNIFICANT_FIGURES,
};
pub use summary::Summary;

/// `1234567` -> `"1,234,567"`: thousands separators for counts and nanoseconds in tables.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
