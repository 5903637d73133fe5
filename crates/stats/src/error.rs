//! The crate's error.

/// Errors returned by this crate.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// A quantile was requested outside `[0, 1]` (or was NaN).
    #[error(
        "quantile {0} is outside [0, 1]; pass a fraction such as 0.99 for the 99th percentile"
    )]
    QuantileOutOfRange(f64),
}
