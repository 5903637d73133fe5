use serde::{Deserialize, Serialize};

/// Serialisable digest of a [`LatencyHistogram`](crate::LatencyHistogram).
///
/// All `*_ns` fields are nanoseconds and `None` when `count == 0`. `min_ns`,
/// `mean_ns` and `max_ns` are exact; the percentiles carry the histogram's
/// 0.1% resolution (see [`quantile_ns`](crate::LatencyHistogram::quantile_ns)).
/// `Default` is the summary of an empty histogram.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples, overflows included.
    pub count: u64,
    /// Samples above [`HIGHEST_TRACKABLE_NS`](crate::HIGHEST_TRACKABLE_NS).
    pub overflows: u64,
    /// Exact minimum.
    pub min_ns: Option<u64>,
    /// Exact mean.
    pub mean_ns: Option<f64>,
    /// 50th percentile (median).
    pub p50_ns: Option<u64>,
    /// 90th percentile.
    pub p90_ns: Option<u64>,
    /// 99th percentile.
    pub p99_ns: Option<u64>,
    /// 99.9th percentile.
    pub p999_ns: Option<u64>,
    /// 99.99th percentile.
    pub p9999_ns: Option<u64>,
    /// Exact maximum.
    pub max_ns: Option<u64>,
}

impl Summary {
    /// Order statistics from smallest to largest, labelled like the field
    /// names without `_ns` (`"min"`, `"p50"`, ..., `"p9999"`, `"max"`), so
    /// table columns and JSON keys line up.
    pub fn quantiles(&self) -> [(&'static str, Option<u64>); 7] {
        [
            ("min", self.min_ns),
            ("p50", self.p50_ns),
            ("p90", self.p90_ns),
            ("p99", self.p99_ns),
            ("p999", self.p999_ns),
            ("p9999", self.p9999_ns),
            ("max", self.max_ns),
        ]
    }
}
