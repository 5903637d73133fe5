//! The sample series of a run in bounded memory: latency against sample number (seed 004's
//! Fig. 2, "the raw numbers"). Up to `capacity` points are kept exactly; beyond that adjacent
//! points are merged pairwise, each keeping the minimum and the maximum of the samples it
//! covers, so a long run's spikes stay visible while memory does not grow with the run.

use serde::{Deserialize, Serialize};

/// One point: samples `first..first + count` (0-based), their smallest and largest latency.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// The first sample it covers (0-based).
    pub first: u64,
    /// How many samples it covers.
    pub count: u64,
    /// Their smallest latency.
    pub min_ns: u64,
    /// Their largest latency.
    pub max_ns: u64,
}

/// A run's latencies in sample order, in at most `capacity` points.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleSeries {
    /// The most points kept.
    pub capacity: usize,
    /// Samples per point (a power of two).
    pub stride: u64,
    /// The points, in sample order, tiling the samples.
    pub points: Vec<SeriesPoint>,
    /// Samples recorded.
    pub samples: u64,
}

impl SampleSeries {
    /// Keep at most `capacity` points (at least 2).
    pub fn new(capacity: usize) -> Self {
        SampleSeries {
            capacity: capacity.max(2),
            stride: 1,
            points: Vec::new(),
            samples: 0,
        }
    }

    /// Add the next sample.
    pub fn record(&mut self, ns: u64) {
        let i = self.samples;
        self.samples += 1;
        if let Some(last) = self.points.last_mut() {
            if last.count < self.stride {
                last.count += 1;
                last.min_ns = last.min_ns.min(ns);
                last.max_ns = last.max_ns.max(ns);
                return;
            }
        }
        if self.points.len() == self.capacity {
            self.halve();
        }
        self.points.push(SeriesPoint {
            first: i,
            count: 1,
            min_ns: ns,
            max_ns: ns,
        });
    }

    /// Merge neighbours pairwise and double the stride.
    fn halve(&mut self) {
        let merged: Vec<SeriesPoint> = self
            .points
            .chunks(2)
            .map(|c| match c {
                [a, b] => SeriesPoint {
                    first: a.first,
                    count: a.count + b.count,
                    min_ns: a.min_ns.min(b.min_ns),
                    max_ns: a.max_ns.max(b.max_ns),
                },
                [a] => *a,
                _ => unreachable!("chunks of two"),
            })
            .collect();
        self.points = merged;
        self.stride *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_exact() {
        let mut s = SampleSeries::new(8);
        for v in [5, 3, 9] {
            s.record(v);
        }
        assert_eq!(s.points.len(), 3);
        assert_eq!(
            s.points[2],
            SeriesPoint {
                first: 2,
                count: 1,
                min_ns: 9,
                max_ns: 9
            }
        );
    }

    #[test]
    fn long_series_stay_bounded_and_keep_every_extreme() {
        let mut s = SampleSeries::new(16);
        let n = 10_000u64;
        for i in 0..n {
            // One spike at 7777 and one dip at 4242.
            let v = match i {
                7777 => 1_000_000,
                4242 => 1,
                _ => 1000 + i % 7,
            };
            s.record(v);
        }
        assert!(s.points.len() <= 16);
        assert_eq!(s.points.iter().map(|p| p.count).sum::<u64>(), n);
        assert_eq!(s.points.iter().map(|p| p.max_ns).max(), Some(1_000_000));
        assert_eq!(s.points.iter().map(|p| p.min_ns).min(), Some(1));
        let spike = s.points.iter().find(|p| p.max_ns == 1_000_000).unwrap();
        assert!((spike.first..spike.first + spike.count).contains(&7777));
        // Points tile the samples in order.
        for w in s.points.windows(2) {
            assert_eq!(w[0].first + w[0].count, w[1].first);
        }
    }
}
