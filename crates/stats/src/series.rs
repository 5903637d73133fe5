//! The sample series of a run in bounded memory: latency against sample number (seed 004's
//! Fig. 2, "the raw numbers"). Up to `capacity` points are kept exactly; beyond that adjacent
//! points are merged pairwise, so memory does not grow with the run.
//!
//! A merged point keeps its minimum and maximum, so every spike stays visible, and a small
//! summary of where its samples lie: at most [`MAX_RANGES`] value ranges with their counts.
//! Minimum and maximum alone make a stretch whose samples are all 1,964 ns but for one at
//! 4,500 ns look like wide variation (seed 002's round trip); the ranges say that almost all of
//! it sits at 1,964 ns. While a stretch holds at most [`MAX_RANGES`] distinct values the ranges
//! are those values, exactly; past that the two neighbouring ranges whose merge loses least are
//! merged, so a quantile read from them comes with bounds that hold
//! ([`SeriesPoint::quantile_range`]), never a guess.

use serde::{Deserialize, Serialize};

/// The most value ranges a point keeps. Sixteen hold every distinct value of a seed 000 or
/// seed 002 stretch (a peak and a few outliers, in 4 ns counts) and bound a point's memory to
/// 384 bytes of ranges.
pub const MAX_RANGES: usize = 16;

/// `count` samples whose latencies lie in `lo_ns..=hi_ns`. Ranges of one point may overlap
/// once points are merged (splitting an overlap would need counts nobody kept).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueRange {
    /// The smallest latency in the range.
    pub lo_ns: u64,
    /// The largest latency in the range.
    pub hi_ns: u64,
    /// How many samples lie in it.
    pub count: u64,
}

/// A point's ranges in JSON: one string, `lo:count` or `lo-hi:count` per range, separated by
/// spaces (`"1964:2041 4320:3"`). The JSON is pretty-printed, a line per number: as arrays the
/// ranges made a seed-000 run's file six times larger.
mod ranges_text {
    use super::ValueRange;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ranges: &[ValueRange], s: S) -> Result<S::Ok, S::Error> {
        let text: Vec<String> = ranges
            .iter()
            .map(|r| {
                if r.lo_ns == r.hi_ns {
                    format!("{}:{}", r.lo_ns, r.count)
                } else {
                    format!("{}-{}:{}", r.lo_ns, r.hi_ns, r.count)
                }
            })
            .collect();
        s.serialize_str(&text.join(" "))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ValueRange>, D::Error> {
        let text = String::deserialize(d)?;
        text.split_whitespace()
            .map(|token| {
                let parsed = token.split_once(':').and_then(|(range, count)| {
                    let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                    Some(ValueRange {
                        lo_ns: lo.parse().ok()?,
                        hi_ns: hi.parse().ok()?,
                        count: count.parse().ok()?,
                    })
                });
                parsed.ok_or_else(|| {
                    D::Error::custom(format!("a series range is lo[-hi]:count, not {token:?}"))
                })
            })
            .collect()
    }
}

/// One point: samples `first..first + count` (0-based), their smallest and largest latency, and
/// where they lie between the two.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// The first sample it covers (0-based).
    pub first: u64,
    /// How many samples it covers.
    pub count: u64,
    /// Their smallest latency.
    pub min_ns: u64,
    /// Their largest latency.
    pub max_ns: u64,
    /// Their latencies as ranges in ascending order of `lo_ns`, counts summing to `count`;
    /// empty when all are equal (and in files written before irqlab kept them), when
    /// [`SeriesPoint::ranges`] stands in with `min_ns..=max_ns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "ranges_text")]
    pub values: Vec<ValueRange>,
}

impl SeriesPoint {
    fn single(first: u64, ns: u64) -> Self {
        SeriesPoint {
            first,
            count: 1,
            min_ns: ns,
            max_ns: ns,
            values: Vec::new(),
        }
    }

    /// The value ranges, or the whole `min_ns..=max_ns` as one when none were kept.
    pub fn ranges(&self) -> std::borrow::Cow<'_, [ValueRange]> {
        if self.values.is_empty() {
            std::borrow::Cow::Owned(vec![ValueRange {
                lo_ns: self.min_ns,
                hi_ns: self.max_ns,
                count: self.count,
            }])
        } else {
            std::borrow::Cow::Borrowed(&self.values)
        }
    }

    /// Bounds on the `q`-quantile (`q` in [0, 1]) of the point's samples, the sample of rank
    /// `ceil(q * count)` (at least 1) as `LatencyHistogram` ranks them. Equal bounds when the
    /// point kept that value exactly.
    pub fn quantile_range(&self, q: f64) -> (u64, u64) {
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count.max(1));
        let ranges = self.ranges();
        // At most the samples of ranges starting before `lo` lie below `lo`: the first range
        // (by lo) whose running count reaches the rank starts at or below that sample.
        let mut seen = 0;
        let lo = ranges
            .iter()
            .find(|r| {
                seen += r.count;
                seen >= rank
            })
            .map_or(self.max_ns, |r| r.lo_ns);
        // At least the samples of ranges ending at or below `hi` lie at or below it.
        let mut ends: Vec<(u64, u64)> = ranges.iter().map(|r| (r.hi_ns, r.count)).collect();
        ends.sort_unstable();
        let mut seen = 0;
        let hi = ends
            .iter()
            .find(|e| {
                seen += e.1;
                seen >= rank
            })
            .map_or(self.max_ns, |e| e.0);
        (lo, hi)
    }

    /// One more sample in this point (not its first).
    #[inline]
    fn add(&mut self, ns: u64) {
        self.count += 1;
        if self.values.is_empty() {
            if ns == self.min_ns && ns == self.max_ns {
                // Still one value throughout: min = max says it all, no ranges to keep.
                return;
            }
            // The first other value: the samples so far become the first range.
            self.values.reserve(4);
            self.values.push(ValueRange {
                lo_ns: self.min_ns,
                hi_ns: self.min_ns,
                count: self.count - 1,
            });
        }
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        // Most samples repeat a value already kept (a stretch's peak): one binary search over
        // at most MAX_RANGES ranges and an increment. (The last range starting at or below the
        // sample; with overlapping ranges an earlier one might hold it too, and a new range
        // beside it is as true.)
        let i = self.values.partition_point(|r| r.lo_ns <= ns);
        if let Some(r) = i.checked_sub(1).map(|k| &mut self.values[k]) {
            if ns <= r.hi_ns {
                r.count += 1;
                return;
            }
        }
        if self.values.len() == MAX_RANGES {
            // Full, and the sample lies between two ranges (or beyond the last): the range
            // beside it that grows least by `compress`'s measure (its width times its samples)
            // takes it. Inserting it and merging the cheapest pair would cost a pass over every
            // pair for nearly every sample of a run whose latencies spread; while a stretch has
            // at most MAX_RANGES values the ranges stay exact either way.
            let grow_left = i.checked_sub(1).map(|k| {
                let r = self.values[k];
                ((ns - r.lo_ns).saturating_mul(r.count + 1), k)
            });
            let grow_right = self
                .values
                .get(i)
                .map(|r| ((r.hi_ns - ns).saturating_mul(r.count + 1), i));
            let (_, k) = match (grow_left, grow_right) {
                (Some(l), Some(r)) if r.0 < l.0 => r,
                (Some(l), _) => l,
                (None, Some(r)) => r,
                (None, None) => unreachable!("a full point has ranges"),
            };
            let r = &mut self.values[k];
            r.lo_ns = r.lo_ns.min(ns);
            r.hi_ns = r.hi_ns.max(ns);
            r.count += 1;
            return;
        }
        self.values.insert(
            i,
            ValueRange {
                lo_ns: ns,
                hi_ns: ns,
                count: 1,
            },
        );
    }

    /// This point followed by the next one, as one.
    fn merged(&self, next: &SeriesPoint) -> SeriesPoint {
        let (min_ns, max_ns) = (self.min_ns.min(next.min_ns), self.max_ns.max(next.max_ns));
        SeriesPoint {
            first: self.first,
            count: self.count + next.count,
            min_ns,
            max_ns,
            values: if min_ns == max_ns {
                Vec::new()
            } else {
                merge_ranges(&self.ranges(), &next.ranges())
            },
        }
    }
}

/// Both points' ranges as one list in ascending order of `lo_ns`, at most [`MAX_RANGES`] long (a
/// range inside another, one from each point, joins it: nothing widens).
pub fn merge_ranges(a: &[ValueRange], b: &[ValueRange]) -> Vec<ValueRange> {
    // Merged on the stack and allocated once at the size kept: a long run merges every point
    // at each halving.
    let mut all = [ValueRange {
        lo_ns: 0,
        hi_ns: 0,
        count: 0,
    }; 2 * MAX_RANGES];
    let mut spill = Vec::new();
    let all: &mut [ValueRange] = if a.len() + b.len() <= all.len() {
        &mut all[..]
    } else {
        // Only ranges read from a file can be this many.
        spill.resize(a.len() + b.len(), all[0]);
        &mut spill[..]
    };
    let mut n: usize = 0;
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = if j == b.len()
            || (i < a.len() && (a[i].lo_ns, a[i].hi_ns) <= (b[j].lo_ns, b[j].hi_ns))
        {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        match n.checked_sub(1).map(|k| &mut all[k]) {
            Some(last) if next.hi_ns <= last.hi_ns => last.count += next.count,
            _ => {
                all[n] = next;
                n += 1;
            }
        }
    }
    let n = compress(&mut all[..n]);
    all[..n].to_vec()
}

/// Merge neighbouring ranges until at most [`MAX_RANGES`] are left, each time the pair whose
/// merged width times its samples is smallest: a quantile falls in a range in proportion to
/// its samples, so widening a crowded range costs the bulk's precision and widening two lone
/// outliers costs almost nothing. Ties go to the lower pair, so the result is deterministic.
/// Returns how many ranges are left at the front of `ranges`.
fn compress(ranges: &mut [ValueRange]) -> usize {
    // The cost of merging pair j. In u64, saturating: a product above 1.8e19 (a 10 s range
    // holding 1.8e9 samples in one point) would need a run far longer than any here, and it
    // would only tie with another such pair.
    let cost = |a: ValueRange, b: ValueRange| {
        (a.hi_ns.max(b.hi_ns) - a.lo_ns).saturating_mul(a.count + b.count)
    };
    let mut n = ranges.len();
    if n <= MAX_RANGES {
        return n;
    }
    // Each pair's cost, kept beside the ranges: a merge changes only the costs of the pairs
    // beside it, so each round is a scan of integers rather than of products (a long run merges
    // every point at each halving, 2,048 points of up to 32 ranges each).
    let mut on_stack = [0u64; 2 * MAX_RANGES];
    let mut spill = Vec::new();
    let costs: &mut [u64] = if n - 1 <= on_stack.len() {
        &mut on_stack[..n - 1]
    } else {
        // Only ranges read from a file can be this many.
        spill.resize(n - 1, 0);
        &mut spill[..]
    };
    for k in 0..n - 1 {
        costs[k] = cost(ranges[k], ranges[k + 1]);
    }
    while n > MAX_RANGES {
        // The first pair of least cost (ties go to the lower pair).
        let mut j = 0;
        let mut least = costs[0];
        for (k, &c) in costs.iter().enumerate().take(n - 1).skip(1) {
            if c < least {
                (j, least) = (k, c);
            }
        }
        let b = ranges[j + 1];
        let a = &mut ranges[j];
        a.hi_ns = a.hi_ns.max(b.hi_ns);
        a.count += b.count;
        ranges.copy_within(j + 2..n, j + 1);
        costs.copy_within((j + 2).min(n - 1)..n - 1, j + 1);
        n -= 1;
        if j > 0 {
            costs[j - 1] = cost(ranges[j - 1], ranges[j]);
        }
        if j + 1 < n {
            costs[j] = cost(ranges[j], ranges[j + 1]);
        }
    }
    n
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
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let i = self.samples;
        self.samples += 1;
        if let Some(last) = self.points.last_mut() {
            if last.count < self.stride {
                last.add(ns);
                return;
            }
        }
        if self.points.len() == self.capacity {
            self.halve();
        }
        self.points.push(SeriesPoint::single(i, ns));
    }

    /// Merge neighbours pairwise and double the stride.
    fn halve(&mut self) {
        let n = self.points.len();
        for k in 0..n / 2 {
            let merged = self.points[2 * k].merged(&self.points[2 * k + 1]);
            self.points[k] = merged;
        }
        if n % 2 == 1 {
            self.points.swap(n / 2, n - 1);
        }
        self.points.truncate(n.div_ceil(2));
        self.stride *= 2;
    }
}

/// The points merged pairwise (a last odd one kept): half the points, each covering twice the
/// samples. Plots use it to draw no more stretches than they have pixels.
pub fn coarsen(points: &[SeriesPoint]) -> Vec<SeriesPoint> {
    points
        .chunks(2)
        .map(|c| match c {
            [a, b] => a.merged(b),
            [a] => a.clone(),
            _ => unreachable!("chunks of two"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn short_series_are_exact() {
        let mut s = SampleSeries::new(8);
        for v in [5, 3, 9] {
            s.record(v);
        }
        assert_eq!(s.points.len(), 3);
        assert_eq!(s.points[2], SeriesPoint::single(2, 9));
        assert_eq!(s.points[2].quantile_range(0.5), (9, 9));
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
        // Seven distinct values and an outlier: every point kept them exactly, so its median
        // is one of 1000..=1006 although its maximum is 1,000,000.
        let (lo, hi) = spike.quantile_range(0.5);
        assert_eq!(lo, hi);
        assert!((1000..=1006).contains(&lo));
    }

    /// Each point's samples, from the values recorded.
    fn samples_of(p: &SeriesPoint, values: &[u64]) -> Vec<u64> {
        let mut v = values[p.first as usize..(p.first + p.count) as usize].to_vec();
        v.sort_unstable();
        v
    }

    /// The sample of rank `ceil(q * n)` (at least 1), as `quantile_range` ranks them.
    fn reference(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    /// Every point's ranges against its samples: disjoint, ascending, at most MAX_RANGES,
    /// counting every sample in its range, and every quantile within the range reported.
    fn check_against_brute_force(s: &SampleSeries, values: &[u64]) -> usize {
        let mut exact = 0;
        for p in &s.points {
            let sorted = samples_of(p, values);
            assert_eq!(p.min_ns, sorted[0]);
            assert_eq!(p.max_ns, *sorted.last().unwrap());
            let ranges = p.ranges();
            assert!(ranges.len() <= MAX_RANGES, "{} ranges", ranges.len());
            assert_eq!(ranges.iter().map(|r| r.count).sum::<u64>(), p.count);
            assert_eq!(ranges[0].lo_ns, p.min_ns);
            assert_eq!(ranges.iter().map(|r| r.hi_ns).max(), Some(p.max_ns));
            for w in ranges.windows(2) {
                assert!(w[0].lo_ns <= w[1].lo_ns, "{w:?}");
            }
            for r in ranges.iter() {
                assert!(r.lo_ns <= r.hi_ns);
                let inside = sorted
                    .iter()
                    .filter(|&&v| (r.lo_ns..=r.hi_ns).contains(&v))
                    .count() as u64;
                assert!(inside >= r.count, "{r:?} holds {inside}");
            }
            for v in &sorted {
                assert!(
                    ranges.iter().any(|r| (r.lo_ns..=r.hi_ns).contains(v)),
                    "{v}"
                );
            }
            let mut distinct = sorted.clone();
            distinct.dedup();
            if distinct.len() <= MAX_RANGES {
                // Few distinct values: kept exactly.
                assert!(ranges.iter().all(|r| r.lo_ns == r.hi_ns), "{ranges:?}");
                exact += 1;
            }
            for q in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0] {
                let (lo, hi) = p.quantile_range(q);
                let v = reference(&sorted, q);
                assert!(lo <= v && v <= hi, "q {q}: {v} outside {lo}..={hi}");
                if distinct.len() <= MAX_RANGES {
                    assert_eq!((lo, hi), (v, v));
                }
            }
        }
        exact
    }

    #[test]
    fn bulk_summary_matches_brute_force() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        // Seed 002's shape: a peak at 1,964 ns in 4 ns counts with rare outliers up to 4.5 us.
        let peaked: Vec<u64> = (0..300_000)
            .map(|_| {
                if rng.gen_bool(0.998) {
                    1964
                } else {
                    900 + 4 * rng.gen_range(0..900)
                }
            })
            .collect();
        // Seed 004's shape: a spread body in 11.1 ns steps with rare far spikes.
        let spread: Vec<u64> = (0..300_000)
            .map(|_| {
                if rng.gen_bool(0.01) {
                    rng.gen_range(5_000..110_000)
                } else {
                    3400 + (11.1 * rng.gen_range(0..170) as f64) as u64
                }
            })
            .collect();
        for (values, capacity) in [(&peaked, 4096), (&spread, 4096), (&spread, 63)] {
            let mut s = SampleSeries::new(capacity);
            values.iter().for_each(|&v| s.record(v));
            assert!(s.points.len() <= capacity);
            let exact = check_against_brute_force(&s, values);
            if std::ptr::eq(values, &peaked) {
                // Almost every stretch: the peak and a few outliers, kept exactly, with the
                // median at the peak although the extremes span 0.9 to 4.5 us.
                assert!(exact * 10 >= s.points.len() * 9, "{exact}");
                let at_peak = s
                    .points
                    .iter()
                    .filter(|p| p.quantile_range(0.1) == (1964, 1964))
                    .count();
                assert_eq!(at_peak, s.points.len());
            }
            // Coarsened for a plot, the bounds still hold.
            let coarse = SampleSeries {
                points: coarsen(&coarsen(&s.points)),
                stride: s.stride * 4,
                ..s.clone()
            };
            check_against_brute_force(&coarse, values);
        }
    }

    /// `compress` as first written: every round computes every pair's cost again.
    fn compress_reference(ranges: &mut [ValueRange]) -> usize {
        let cost = |a: ValueRange, b: ValueRange| {
            (a.hi_ns.max(b.hi_ns) - a.lo_ns).saturating_mul(a.count + b.count)
        };
        let mut n = ranges.len();
        while n > MAX_RANGES {
            let mut j = 0;
            let mut least = cost(ranges[0], ranges[1]);
            for k in 1..n - 1 {
                let c = cost(ranges[k], ranges[k + 1]);
                if c < least {
                    (j, least) = (k, c);
                }
            }
            let b = ranges[j + 1];
            let a = &mut ranges[j];
            a.hi_ns = a.hi_ns.max(b.hi_ns);
            a.count += b.count;
            ranges.copy_within(j + 2..n, j + 1);
            n -= 1;
        }
        n
    }

    #[test]
    fn compress_keeping_pair_costs_merges_as_recomputing_them_does() {
        // Ties (equal widths and counts) included, and lists longer than two points' worth
        // (ranges read from a file).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for case in 0..5_000 {
            let n = rng.gen_range(0..=3 * MAX_RANGES + 2);
            let mut lo = 0u64;
            let mut ranges: Vec<ValueRange> = (0..n)
                .map(|_| {
                    lo += rng.gen_range(0..4) * if case % 2 == 0 { 1 } else { 250 };
                    let hi = lo + rng.gen_range(0..3) * 4;
                    ValueRange {
                        lo_ns: lo,
                        hi_ns: hi,
                        count: rng.gen_range(1..4),
                    }
                })
                .collect();
            let mut reference = ranges.clone();
            let kept = compress(&mut ranges);
            let kept_reference = compress_reference(&mut reference);
            assert_eq!(kept, kept_reference, "case {case}");
            assert_eq!(ranges[..kept], reference[..kept], "case {case}");
        }
    }

    #[test]
    fn memory_stays_bounded() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let mut s = SampleSeries::new(256);
        for _ in 0..2_000_000u64 {
            s.record(rng.gen_range(0..1_000_000));
        }
        assert!(s.points.len() <= 256);
        assert_eq!(s.stride, 8192);
        // Every value distinct: each point at the bound, never above it.
        assert!(s.points.iter().all(|p| p.values.len() <= MAX_RANGES));
        assert!(s
            .points
            .iter()
            .all(|p| p.values.capacity() <= 2 * MAX_RANGES));
    }
}
