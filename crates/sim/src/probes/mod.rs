//! Every measurement of a run, each made by a probe: the bus analyzer and the latency probe
//! built on it (seeds 000 and 001), the round trips a card's counter counted (seed 002),
//! cyclictest's latencies (seed 003), and the observers that watch the whole machine
//! ([`Observer`]: seed 004's PPS probe). Probes only read: nothing in the model reads them.

use crate::devices::Device;
use crate::kernel::Kernel;
use irqlab_stats::LatencyHistogram;

pub mod analyzer;
pub mod cyclictest;
pub mod round_trip;

/// Points of a run's sample series, for every probe: exact up to this many samples, min/max
/// per stretch beyond.
pub const SERIES_POINTS: usize = 4096;

pub mod pps;

/// A metric's samples kept per workload phase as well: sample n (1-based, numbered past the
/// warm-up) belongs to the first phase whose last sample is n or later, and samples beyond the
/// last phase to the last (a run asked for more samples than its phases name). Without phases
/// it keeps nothing.
#[derive(Clone, Debug, Default)]
pub struct ByPhase {
    /// Each phase's last sample.
    until: Vec<u64>,
    /// Samples numbered so far by [`ByPhase::record`].
    seen: u64,
    pub histograms: Vec<LatencyHistogram>,
}

impl ByPhase {
    pub fn new(until: Vec<u64>) -> Self {
        ByPhase {
            histograms: until.iter().map(|_| LatencyHistogram::new()).collect(),
            until,
            seen: 0,
        }
    }

    /// The metric's next sample, numbered in the order they come.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.seen += 1;
        self.record_at(self.seen, ns);
    }

    /// Sample number `n`, numbered by its source (a pulse's number, a thread's loop).
    #[inline]
    pub fn record_at(&mut self, n: u64, ns: u64) {
        if self.until.is_empty() {
            return;
        }
        let i = (self.until.iter())
            .position(|&u| n <= u)
            .unwrap_or(self.until.len() - 1);
        self.histograms[i].record(ns);
    }
}

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
    /// The number of the last pulse, if its sample is taken (what a windowed run waits for
    /// before it skips to the next pulse's window); `None` while one is awaited, or for a
    /// probe whose samples are not pulses.
    fn settled(&self) -> Option<u64> {
        None
    }
    /// The probe itself, for its owner to read its results after the run.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_go_to_the_phase_that_names_them_and_beyond_the_last_to_the_last() {
        let mut p = ByPhase::new(vec![2, 4]);
        for ns in [100, 200, 300, 400, 500] {
            p.record(ns);
        }
        let counts: Vec<u64> = p.histograms.iter().map(|h| h.count()).collect();
        assert_eq!(counts, [2, 3]);
        assert_eq!(p.histograms[0].max_ns(), Some(200));
        assert_eq!(p.histograms[1].min_ns(), Some(300));
        // Numbered by the source: pulse 3 falls in the second phase.
        p.record_at(3, 50);
        assert_eq!(p.histograms[1].min_ns(), Some(50));
        let mut none = ByPhase::default();
        none.record(7);
        assert!(none.histograms.is_empty());
    }
}
