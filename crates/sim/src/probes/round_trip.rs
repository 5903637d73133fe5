//! Seed 002's measurement: the card's own counter, which starts on a clock edge as the card
//! asserts its MSI and stops when the host's write reaches the card's register
//! (`devices/exerciser.rs` counts; this probe keeps what it counted). The card's model says how
//! long a round trip took; what a run keeps of it (past the warm-up, as a histogram and a
//! series) is the probe's.

use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;

/// The round trips the measured card's counter counted.
#[derive(Debug, Default)]
pub struct RoundTripProbe {
    /// Round trips still to discard (the run's warm-up).
    pub warmup: u64,
    pub histogram: LatencyHistogram,
    /// The round trips in order (bounded), when asked for.
    pub series: Option<SampleSeries>,
    /// The round trips per workload phase, by their number past the warm-up.
    pub phases: super::ByPhase,
}

impl RoundTripProbe {
    /// The counter stopped at `ns` (its counts times its nominal period).
    pub fn record(&mut self, ns: u64) {
        if self.warmup > 0 {
            self.warmup -= 1;
            return;
        }
        self.histogram.record(ns);
        self.phases.record(ns);
        if let Some(s) = &mut self.series {
            s.record(ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_is_not_recorded() {
        let mut p = RoundTripProbe {
            warmup: 2,
            series: Some(SampleSeries::new(8)),
            ..RoundTripProbe::default()
        };
        for ns in [900, 800, 700, 600] {
            p.record(ns);
        }
        assert_eq!(p.histogram.count(), 2);
        assert_eq!(p.histogram.max_ns(), Some(700));
        assert_eq!(p.series.as_ref().map(|s| s.samples), Some(2));
    }
}
