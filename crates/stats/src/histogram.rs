use std::borrow::Cow;

use hdrhistogram::Histogram;

use crate::error::StatsError;
use crate::summary::Summary;

/// Smallest value the histogram distinguishes from its neighbours (1 ns).
pub const LOWEST_DISCERNIBLE_NS: u64 = 1;
/// Largest value recorded into the histogram (10 s); larger values are overflows.
pub const HIGHEST_TRACKABLE_NS: u64 = 10_000_000_000;
/// Significant decimal figures kept: values are resolved to within 0.1% relative.
pub const SIGNIFICANT_FIGURES: u8 = 3;

/// A latency histogram in nanoseconds.
///
/// Values from 0 to [`HIGHEST_TRACKABLE_NS`] go into an HDR histogram with
/// [`SIGNIFICANT_FIGURES`] = 3: values below 2048 ns are stored exactly and
/// larger ones in buckets no wider than 1/1024 of their value (under 0.1%).
/// Larger values are only counted in [`overflows`](Self::overflows) (and in
/// the exact sum, minimum and maximum), so an outlier is never hidden by
/// clamping.
///
/// Count, minimum, maximum and mean are exact; [`quantile_ns`](Self::quantile_ns)
/// is approximate as documented there. Memory use is about 200 KiB per
/// histogram regardless of the number of samples.
///
/// A simulation records long runs of one value (every round trip that takes
/// the same path), so a run of equal samples is counted in `run` and goes into
/// the HDR histogram in one `record_n` when the value changes: a repeat costs a
/// comparison and two additions instead of an HDR index computation. Readers
/// see the run as recorded.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    /// Samples of one in-range value not yet in `hist`: (value, count).
    run: (u64, u64),
    overflows: u64,
    /// Exact sum of all samples, overflows included; u128 cannot overflow in practice.
    sum_ns: u128,
    /// Exact extremes; `u64::MAX` / `0` while empty.
    min_ns: u64,
    max_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Equal when they hold the same samples, whether or not a run is still pending.
impl PartialEq for LatencyHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.overflows == other.overflows
            && self.sum_ns == other.sum_ns
            && self.min_ns == other.min_ns
            && self.max_ns == other.max_ns
            && *self.settled() == *other.settled()
    }
}

impl LatencyHistogram {
    /// Creates an empty histogram.
    pub fn new() -> Self {
        let hist = Histogram::new_with_bounds(
            LOWEST_DISCERNIBLE_NS,
            HIGHEST_TRACKABLE_NS,
            SIGNIFICANT_FIGURES,
        )
        .expect("constant histogram bounds are valid");
        Self {
            hist,
            run: (0, 0),
            overflows: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Records one sample of `latency_ns` nanoseconds (0 is allowed).
    pub fn record(&mut self, latency_ns: u64) {
        self.record_n(latency_ns, 1);
    }

    /// Records `count` samples of `latency_ns` nanoseconds. `count == 0` is a no-op.
    pub fn record_n(&mut self, latency_ns: u64, count: u64) {
        if count == 0 {
            return;
        }
        self.sum_ns = self
            .sum_ns
            .saturating_add(u128::from(latency_ns) * u128::from(count));
        if latency_ns == self.run.0 && self.run.1 > 0 {
            // The same value again: min and max already hold it.
            self.run.1 = self.run.1.saturating_add(count);
            return;
        }
        if latency_ns > HIGHEST_TRACKABLE_NS {
            self.overflows = self.overflows.saturating_add(count);
        } else {
            self.flush();
            self.run = (latency_ns, count);
        }
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
    }

    /// Put the pending run into the HDR histogram.
    fn flush(&mut self) {
        let (value, n) = std::mem::take(&mut self.run);
        if n > 0 {
            // In range, so this never clamps; it is just the infallible entry point.
            self.hist.saturating_record_n(value, n);
        }
    }

    /// The HDR histogram with the pending run in it (a copy only while a run is pending).
    fn settled(&self) -> Cow<'_, Histogram<u64>> {
        match self.run {
            (_, 0) => Cow::Borrowed(&self.hist),
            (value, n) => {
                let mut h = self.hist.clone();
                h.saturating_record_n(value, n);
                Cow::Owned(h)
            }
        }
    }

    /// Adds every sample of `other` to `self`.
    ///
    /// The result is identical (`==`) to having recorded both sample sets into
    /// one histogram, so per-CPU or per-run histograms can be combined freely.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.flush();
        self.hist
            .add(&*other.settled())
            .expect("histograms with identical bounds always add");
        self.overflows = self.overflows.saturating_add(other.overflows);
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Number of samples recorded, overflows included.
    pub fn count(&self) -> u64 {
        self.hist
            .len()
            .saturating_add(self.run.1)
            .saturating_add(self.overflows)
    }

    /// Samples in the HDR histogram's range (all but the overflows).
    fn in_range(&self) -> u64 {
        self.hist.len().saturating_add(self.run.1)
    }

    /// Whether no sample has been recorded.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Number of samples above [`HIGHEST_TRACKABLE_NS`].
    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// Exact smallest sample, `None` when empty.
    pub fn min_ns(&self) -> Option<u64> {
        (!self.is_empty()).then_some(self.min_ns)
    }

    /// Exact largest sample (overflows included), `None` when empty.
    pub fn max_ns(&self) -> Option<u64> {
        (!self.is_empty()).then_some(self.max_ns)
    }

    /// Mean of all samples, computed from an exact sum; `None` when empty.
    pub fn mean_ns(&self) -> Option<f64> {
        // Lossy only in the final conversions; precise to f64 for any realistic sum.
        (!self.is_empty()).then(|| self.sum_ns as f64 / self.count() as f64)
    }

    /// Standard deviation of the samples (population), from the HDR buckets (0.1% resolution);
    /// `None` when empty or when any sample overflowed (its value is not kept).
    pub fn stdev_ns(&self) -> Option<f64> {
        (!self.is_empty() && self.overflows == 0).then(|| self.settled().stdev())
    }

    /// Value at quantile `q` (a fraction in `[0, 1]`), `Ok(None)` when empty.
    ///
    /// The rank is hdrhistogram's: `ceil(q * count)` evaluated in `f64`, at
    /// least 1, counting overflows. Note that the `f64` product can land just
    /// above an integer (`0.07 * 100.0 == 7.000000000000001`, giving rank 8).
    /// The result follows hdrhistogram's "highest equivalent value"
    /// semantics: the upper end of the bucket holding that order statistic,
    /// so it is never below the exact value and exceeds it by under 0.1%.
    /// It is clamped to the exact `[min, max]`, and ranks 1 and `count` return
    /// the exact minimum and maximum. When the rank falls among overflowed
    /// samples (whose individual values are not kept) the exact maximum is
    /// returned.
    ///
    /// # Errors
    ///
    /// [`StatsError::QuantileOutOfRange`] when `q` is outside `[0, 1]` or NaN.
    pub fn quantile_ns(&self, q: f64) -> Result<Option<u64>, StatsError> {
        if !(0.0..=1.0).contains(&q) {
            return Err(StatsError::QuantileOutOfRange(q));
        }
        Ok(self.values_at_ranks([self.rank(q)])[0])
    }

    /// The `rank`-th smallest sample (1-based; clamped to `1..=count`), with the resolution of
    /// [`quantile_ns`](Self::quantile_ns); `None` when empty. For order-statistic intervals,
    /// whose ranks must not go through an `f64` quantile.
    pub fn value_at_rank_ns(&self, rank: u64) -> Option<u64> {
        self.values_at_ranks([rank.clamp(1, self.count().max(1))])[0]
    }

    /// hdrhistogram's rank for quantile `q` in `[0, 1]`: the same `f64`
    /// expression as `Histogram::value_at_quantile`, so results match it.
    fn rank(&self, q: f64) -> u64 {
        let n = self.count();
        ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
    }

    /// Values of the `ranks`-th smallest samples (1-based, non-decreasing),
    /// as described in `quantile_ns`, in a single pass over the buckets.
    fn values_at_ranks<const N: usize>(&self, ranks: [u64; N]) -> [Option<u64>; N] {
        if self.is_empty() {
            return [None; N];
        }
        let hist = self.settled();
        let mut buckets = hist.iter_recorded();
        let (mut seen, mut value) = (0u64, self.min_ns);
        ranks.map(|rank| {
            Some(if rank <= 1 {
                self.min_ns
            } else if rank >= self.count() || rank > self.in_range() {
                self.max_ns
            } else {
                // `hist.len() >= rank`, so the buckets cannot run out first.
                while seen < rank {
                    let Some(bucket) = buckets.next() else { break };
                    seen += bucket.count_at_value();
                    value = hist.highest_equivalent(bucket.value_iterated_to());
                }
                value.clamp(self.min_ns, self.max_ns)
            })
        })
    }

    /// Non-empty linear buckets of width `bucket_ns` (treated as 1 if 0), in
    /// ascending order, as `(bucket start ns, count)`.
    ///
    /// Bucket `k` covers `[k * bucket_ns, (k + 1) * bucket_ns)`; buckets with no
    /// samples are skipped, so fill gaps yourself if you need a dense series.
    /// Overflows are not included (their values are unknown): the counts sum
    /// to `count() - overflows()`.
    ///
    /// Each internal HDR bucket is attributed to the linear bucket holding its
    /// lowest value (clamped to the exact min/max). This is exact while
    /// `bucket_ns` is at least the HDR resolution at that value (about
    /// value/1024, e.g. 1 µs buckets are exact up to about 1 ms); beyond that a
    /// sample may land in the bucket just below its true one.
    pub fn iter_buckets(&self, bucket_ns: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let width = bucket_ns.max(1);
        let hist = self.settled();
        let (min, max) = (self.min_ns, self.max_ns);
        let starts: Vec<(u64, u64)> = hist
            .iter_recorded()
            .map(|bucket| {
                let low = hist.lowest_equivalent(bucket.value_iterated_to());
                let value = low.max(min).min(max);
                (value / width * width, bucket.count_at_value())
            })
            .collect();
        let mut starts = starts.into_iter().peekable();
        std::iter::from_fn(move || {
            let (start, mut count) = starts.next()?;
            while let Some((_, more)) = starts.next_if(|&(s, _)| s == start) {
                count += more;
            }
            Some((start, count))
        })
    }

    /// Count, overflows, exact min/mean/max and the standard percentiles.
    pub fn summary(&self) -> Summary {
        let ranks = [0.5, 0.9, 0.99, 0.999, 0.9999].map(|q| self.rank(q));
        let [p50_ns, p90_ns, p99_ns, p999_ns, p9999_ns] = self.values_at_ranks(ranks);
        Summary {
            count: self.count(),
            overflows: self.overflows,
            min_ns: self.min_ns(),
            mean_ns: self.mean_ns(),
            p50_ns,
            p90_ns,
            p99_ns,
            p999_ns,
            p9999_ns,
            max_ns: self.max_ns(),
        }
    }
}

/// A [`LatencyHistogram`] in a form that crosses machines (a sweep's shards, `irqlab sweep
/// merge`): its HDR part in HdrHistogram's V2 serialization, which every HdrHistogram
/// implementation reads, and beside it what the V2 form does not hold: the samples above its
/// range, and the exact sum and extremes. Reading it back gives a histogram equal (`==`) to the
/// one written, so merging read-back shards is merging the originals.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SerializedHistogram {
    /// HdrHistogram V2 (uncompressed: cookie `0x1c849313`; the counts are already run-length
    /// and varint encoded, so deflate would save little), in standard padded base64.
    pub hdr_v2_base64: String,
    /// Samples above [`HIGHEST_TRACKABLE_NS`].
    pub overflows: u64,
    /// Exact sum of every sample in ns, as decimal digits: it may pass 2^64, and a JSON reader
    /// that holds numbers as f64 would lose digits past 2^53.
    pub sum_ns: String,
    /// Exact smallest sample; `None` when empty.
    pub min_ns: Option<u64>,
    /// Exact largest sample (overflows included); `None` when empty.
    pub max_ns: Option<u64>,
}

/// Why a [`SerializedHistogram`] cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SerializedHistogramError {
    /// The text is not base64.
    #[error("hdr_v2_base64 is not base64: {0}")]
    Base64(String),
    /// The bytes are not a V2 histogram (the hdrhistogram crate's reason).
    #[error("hdr_v2_base64 is not an HdrHistogram V2 histogram: {0}")]
    V2(String),
    /// A histogram of other bounds than [`LatencyHistogram`]'s.
    #[error(
        "the histogram tracks {low}..{high} ns at {digits} significant figures; irqlab's track \
         {LOWEST_DISCERNIBLE_NS}..{HIGHEST_TRACKABLE_NS} ns at {SIGNIFICANT_FIGURES}"
    )]
    Bounds {
        /// Its lowest discernible value, ns.
        low: u64,
        /// Its highest trackable value, ns.
        high: u64,
        /// Its significant decimal figures.
        digits: u8,
    },
    /// The sum is not a whole number.
    #[error("sum_ns {0:?} is not a whole number of nanoseconds")]
    Sum(String),
    /// Extremes that do not fit the counts.
    #[error("min_ns and max_ns are given for an empty histogram, or missing for a non-empty one")]
    Extremes,
    /// Parts that contradict each other: the exact sum, extremes or overflows are not what the
    /// V2 counts allow (see [`LatencyHistogram::from_serialized`]).
    #[error("{0}")]
    Inconsistent(String),
}

impl LatencyHistogram {
    /// This histogram in its portable form.
    pub fn to_serialized(&self) -> SerializedHistogram {
        use base64::Engine;
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(&*self.settled(), &mut bytes)
            .expect("a histogram of irqlab's bounds always serializes into memory");
        SerializedHistogram {
            hdr_v2_base64: base64::engine::general_purpose::STANDARD.encode(bytes),
            overflows: self.overflows,
            sum_ns: self.sum_ns.to_string(),
            min_ns: self.min_ns(),
            max_ns: self.max_ns(),
        }
    }

    /// The histogram a [`SerializedHistogram`] holds (V2, or V2 with deflate as HdrHistogram's
    /// logs write it), once its parts are found to agree: every sample lies in its V2 bucket
    /// (whose values are equivalent to 0.1%) and between the exact extremes, so
    ///
    /// - `min_ns` lies in the lowest bucket the counts hold, or above [`HIGHEST_TRACKABLE_NS`]
    ///   when every sample overflowed; `max_ns` in the highest bucket when none overflowed,
    ///   else above [`HIGHEST_TRACKABLE_NS`];
    /// - `sum_ns` lies between the sums of every sample at the low and at the high end of its
    ///   bucket (each clamped to the extremes), overflows between `HIGHEST_TRACKABLE_NS + 1`
    ///   and `max_ns`.
    ///
    /// What [`to_serialized`](Self::to_serialized) wrote always agrees. An edit of one part
    /// alone (a sum multiplied, an extreme moved, overflows added, a count changed) is refused
    /// unless it stays within those bounds.
    pub fn from_serialized(s: &SerializedHistogram) -> Result<Self, SerializedHistogramError> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&s.hdr_v2_base64)
            .map_err(|e| SerializedHistogramError::Base64(e.to_string()))?;
        let bytes = checked_v2(bytes)?;
        check_v2_header(&bytes)?;
        let hist: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| SerializedHistogramError::V2(format!("{e:?}")))?;
        // Other bounds would not add to ours (merge) and would read at another resolution.
        if hist.low() != LOWEST_DISCERNIBLE_NS
            || hist.high() != HIGHEST_TRACKABLE_NS
            || hist.sigfig() != SIGNIFICANT_FIGURES
        {
            return Err(SerializedHistogramError::Bounds {
                low: hist.low(),
                high: hist.high(),
                digits: hist.sigfig(),
            });
        }
        let sum_ns = s
            .sum_ns
            .parse::<u128>()
            .map_err(|_| SerializedHistogramError::Sum(s.sum_ns.clone()))?;
        let empty = hist.is_empty() && s.overflows == 0;
        let (min_ns, max_ns) = match (s.min_ns, s.max_ns) {
            (None, None) if empty => (u64::MAX, 0),
            (Some(min), Some(max)) if !empty && min <= max => (min, max),
            _ => return Err(SerializedHistogramError::Extremes),
        };
        let h = LatencyHistogram {
            hist,
            run: (0, 0),
            overflows: s.overflows,
            sum_ns,
            min_ns,
            max_ns,
        };
        if !empty {
            h.check_consistent()?;
        }
        Ok(h)
    }

    /// Whether a non-empty histogram read back holds together (see
    /// [`from_serialized`](Self::from_serialized)).
    fn check_consistent(&self) -> Result<(), SerializedHistogramError> {
        let bad = |m: String| Err(SerializedHistogramError::Inconsistent(m));
        let (min, max) = (self.min_ns, self.max_ns);
        let buckets: Vec<(u64, u64, u64)> = self
            .hist
            .iter_recorded()
            .map(|b| {
                let v = b.value_iterated_to();
                (
                    self.hist.lowest_equivalent(v),
                    self.hist.highest_equivalent(v),
                    b.count_at_value(),
                )
            })
            .collect();
        match (buckets.first(), self.overflows) {
            (Some(&(lo, hi, _)), _) if !(lo..=hi).contains(&min) => {
                return bad(format!(
                    "min_ns {min} is not in the lowest bucket the counts hold ({lo} to {hi} ns)"
                ))
            }
            (None, _) if min <= HIGHEST_TRACKABLE_NS => {
                return bad(format!(
                    "min_ns {min} is within the tracked range, but the counts hold only \
                     overflows (samples above {HIGHEST_TRACKABLE_NS} ns)"
                ))
            }
            _ => {}
        }
        match (buckets.last(), self.overflows) {
            (Some(&(lo, hi, _)), 0) if !(lo..=hi).contains(&max) => {
                return bad(format!(
                    "max_ns {max} is not in the highest bucket the counts hold ({lo} to {hi} ns), \
                     and no sample overflowed"
                ))
            }
            (_, n) if n > 0 && max <= HIGHEST_TRACKABLE_NS => {
                return bad(format!(
                    "overflows {n}, but max_ns {max} is within the tracked range (an overflow \
                     is above {HIGHEST_TRACKABLE_NS} ns)"
                ))
            }
            _ => {}
        }
        // Each sample at the low and at the high end of what its bucket and the extremes allow.
        let (mut low, mut high) = (0u128, 0u128);
        for &(lo, hi, n) in &buckets {
            let n = u128::from(n);
            low = low.saturating_add(n * u128::from(lo.clamp(min, max)));
            high = high.saturating_add(n * u128::from(hi.clamp(min, max)));
        }
        let over = u128::from(self.overflows);
        low = low.saturating_add(over * u128::from((HIGHEST_TRACKABLE_NS + 1).max(min)));
        high = high.saturating_add(over * u128::from(max));
        if !(low..=high).contains(&self.sum_ns) {
            return bad(format!(
                "sum_ns {} is not what the counts and extremes allow ({low} to {high} ns for {} \
                 samples)",
                self.sum_ns,
                self.count()
            ));
        }
        Ok(())
    }
}

/// The V2 header (HdrHistogram's `V2EncodingCookieBase`: cookie, payload length, normalizing
/// offset, significant figures, lowest and highest value, conversion ratio; 40 bytes, big
/// endian) checked before the hdrhistogram crate reads it: it allocates the payload length and
/// the counts of the bounds it is given, so a header edited to claim gigabytes would take them.
/// The compressed form (cookie `0x1c849314`) is left to the crate, which bounds its input by
/// the outer length.
fn check_v2_header(bytes: &[u8]) -> Result<(), SerializedHistogramError> {
    const V2: u32 = 0x1c84_9313;
    const HEADER: usize = 40;
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")))
    };
    let long = |at: usize| {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
    };
    if word(0) != Some(V2) {
        return Ok(());
    }
    let payload = word(4).map(|n| n as usize);
    if bytes.len() < HEADER || payload != Some(bytes.len() - HEADER) {
        return Err(SerializedHistogramError::V2(format!(
            "the header says {} bytes of counts, the histogram has {}",
            payload.unwrap_or(0),
            bytes.len().saturating_sub(HEADER)
        )));
    }
    let (digits, low, high) = (word(12), long(16), long(24));
    if digits != Some(u32::from(SIGNIFICANT_FIGURES))
        || low != Some(LOWEST_DISCERNIBLE_NS)
        || high != Some(HIGHEST_TRACKABLE_NS)
    {
        return Err(SerializedHistogramError::Bounds {
            low: low.unwrap_or(0),
            high: high.unwrap_or(0),
            digits: digits.map_or(0, |d| d.min(255) as u8),
        });
    }
    Ok(())
}

/// HdrHistogram's V2 cookies (`serialization::V2_COOKIE`, `V2_COMPRESSED_COOKIE`) and header:
/// cookie, payload length, normalizing offset, significant figures (4 bytes each, big-endian),
/// lowest, highest (8 each), integer-to-double ratio (8).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
const V2_HEADER_BYTES: usize = 40;

/// The V2 bytes uncompressed, once their header is seen to state no more payload than follows
/// it. HdrHistogram's reader allocates and zero-fills the stated length before reading: a
/// shard file stating 4 GiB took 4 GiB and 7 s to refuse. The deflate form is inflated here,
/// to no more than a histogram of irqlab's bounds can take (9 bytes, the longest varint, per
/// count), and its V2 checked the same way.
fn checked_v2(bytes: Vec<u8>) -> Result<Vec<u8>, SerializedHistogramError> {
    use std::io::Read;
    let cookie = |b: &[u8]| {
        b.get(0..4)
            .map(|c| u32::from_be_bytes(c.try_into().expect("4")))
    };
    let bytes = if cookie(&bytes) == Some(V2_DEFLATE_COOKIE) {
        let most = V2_HEADER_BYTES + 9 * LatencyHistogram::new().hist.distinct_values();
        let mut inflated = Vec::new();
        flate2::read::ZlibDecoder::new(bytes.get(8..).unwrap_or_default())
            .take(most as u64 + 1)
            .read_to_end(&mut inflated)
            .map_err(|e| SerializedHistogramError::V2(format!("deflate: {e}")))?;
        if inflated.len() > most {
            return Err(SerializedHistogramError::V2(format!(
                "inflates to more than {most} bytes, more than a histogram of irqlab's bounds takes"
            )));
        }
        inflated
    } else {
        bytes
    };
    if cookie(&bytes) == Some(V2_COOKIE) {
        if let Some(len) = bytes.get(4..8) {
            let stated = u32::from_be_bytes(len.try_into().expect("4"));
            let held = bytes.len().saturating_sub(V2_HEADER_BYTES);
            if stated as usize > held {
                return Err(SerializedHistogramError::V2(format!(
                    "its header states {stated} bytes of counts, but {held} follow it"
                )));
            }
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V2 header states its payload's length, and HdrHistogram's reader allocates and
    /// zero-fills that much before reading it: a shard whose header stated 4 GiB took 4 GiB
    /// and 7 s for `sweep merge` to refuse (found by `fuzz/`'s sweep_shard target). A length
    /// the bytes do not hold is refused first, saying so, in both V2 forms.
    #[test]
    fn a_v2_length_the_bytes_do_not_hold_is_refused_before_it_is_allocated() {
        use base64::Engine;
        use std::io::Write;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut h = LatencyHistogram::new();
        h.record_n(5_000, 10);
        let good = h.to_serialized();
        let mut v2 = b64.decode(&good.hdr_v2_base64).unwrap();
        // 1 MiB stated (4 GiB in the fuzzer's input: the same path, cheaper to test).
        v2[4..8].copy_from_slice(&(1u32 << 20).to_be_bytes());
        let mut bad = good.clone();
        bad.hdr_v2_base64 = b64.encode(&v2);
        let e = LatencyHistogram::from_serialized(&bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("states 1048576 bytes of counts, but 3 follow"),
            "{e}"
        );
        // The deflate form (cookie 0x1c849314): the V2 inside states the length.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&v2).unwrap();
        let zipped = z.finish().unwrap();
        let mut deflated = 0x1c84_9314u32.to_be_bytes().to_vec();
        deflated.extend_from_slice(&(zipped.len() as u32).to_be_bytes());
        deflated.extend_from_slice(&zipped);
        bad.hdr_v2_base64 = b64.encode(&deflated);
        let e = LatencyHistogram::from_serialized(&bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("states 1048576 bytes"), "{e}");
        // Deflated with the right length, it reads back.
        let good_v2 = b64.decode(&good.hdr_v2_base64).unwrap();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&good_v2).unwrap();
        let zipped = z.finish().unwrap();
        let mut deflated = 0x1c84_9314u32.to_be_bytes().to_vec();
        deflated.extend_from_slice(&(zipped.len() as u32).to_be_bytes());
        deflated.extend_from_slice(&zipped);
        bad.hdr_v2_base64 = b64.encode(&deflated);
        assert_eq!(LatencyHistogram::from_serialized(&bad).unwrap(), h);
    }

    #[test]
    fn the_serialized_form_reads_back_equal_and_merges_as_the_original() {
        let mut a = LatencyHistogram::new();
        for v in [0, 5, 5, 5, 2_049, 123_456_789, HIGHEST_TRACKABLE_NS + 3, 7] {
            a.record(v);
        }
        // A run still pending when serialized.
        a.record_n(7, 1_000);
        let s = a.to_serialized();
        let back = LatencyHistogram::from_serialized(&s).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.summary(), a.summary());
        assert_eq!(back.to_serialized(), s, "the encoding is deterministic");
        let mut b = LatencyHistogram::new();
        b.record_n(1_500, 3);
        let mut merged = a.clone();
        merged.merge(&b);
        let mut from_parts = LatencyHistogram::from_serialized(&s).unwrap();
        from_parts.merge(&LatencyHistogram::from_serialized(&b.to_serialized()).unwrap());
        assert_eq!(from_parts, merged);
        let empty = LatencyHistogram::new();
        assert_eq!(
            LatencyHistogram::from_serialized(&empty.to_serialized()).unwrap(),
            empty
        );
    }

    #[test]
    fn the_serialized_form_is_standard_v2_and_other_bounds_are_refused() {
        use base64::Engine;
        let mut h = LatencyHistogram::new();
        h.record(1_000);
        let s = h.to_serialized();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&s.hdr_v2_base64)
            .unwrap();
        assert_eq!(bytes[..4], 0x1c84_9313u32.to_be_bytes(), "V2 cookie");
        // A histogram of other bounds (HdrHistogram's default 1..2^63, 3 digits).
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let mut other = Vec::new();
        V2Serializer::new()
            .serialize(&Histogram::<u64>::new(3).unwrap(), &mut other)
            .unwrap();
        let foreign = SerializedHistogram {
            hdr_v2_base64: base64::engine::general_purpose::STANDARD.encode(other),
            ..s.clone()
        };
        assert!(matches!(
            LatencyHistogram::from_serialized(&foreign),
            Err(SerializedHistogramError::Bounds { .. })
        ));
        for broken in [
            SerializedHistogram {
                hdr_v2_base64: "not base64!".into(),
                ..s.clone()
            },
            SerializedHistogram {
                sum_ns: "-1".into(),
                ..s.clone()
            },
            SerializedHistogram {
                min_ns: None,
                ..s.clone()
            },
        ] {
            assert!(
                LatencyHistogram::from_serialized(&broken).is_err(),
                "{broken:?}"
            );
        }
    }

    #[test]
    fn parts_that_contradict_the_counts_are_refused() {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut h = LatencyHistogram::new();
        for v in [850, 859, 860, 2_049, 5_000] {
            h.record_n(v, 100);
        }
        let s = h.to_serialized();
        let sum: u128 = s.sum_ns.parse().unwrap();
        let mut over = h.clone();
        over.record_n(HIGHEST_TRACKABLE_NS + 7, 2);
        let o = over.to_serialized();
        let only_over = {
            let mut x = LatencyHistogram::new();
            x.record(HIGHEST_TRACKABLE_NS * 2);
            x.to_serialized()
        };
        let mut flipped = b64.decode(&s.hdr_v2_base64).unwrap();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x02;
        let mut long = b64.decode(&s.hdr_v2_base64).unwrap();
        long[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let edits: Vec<(SerializedHistogram, &str)> = vec![
            (
                SerializedHistogram {
                    sum_ns: (sum * 10).to_string(),
                    ..s.clone()
                },
                "sum_ns",
            ),
            (
                SerializedHistogram {
                    sum_ns: (sum - 1_000).to_string(),
                    ..s.clone()
                },
                "sum_ns",
            ),
            (
                SerializedHistogram {
                    min_ns: Some(425),
                    ..s.clone()
                },
                "min_ns 425 is not in",
            ),
            (
                SerializedHistogram {
                    min_ns: Some(851),
                    ..s.clone()
                },
                "min_ns 851 is not in",
            ),
            (
                SerializedHistogram {
                    max_ns: Some(15_000),
                    ..s.clone()
                },
                "max_ns 15000",
            ),
            (
                SerializedHistogram {
                    max_ns: Some(4_000),
                    ..s.clone()
                },
                "max_ns 4000",
            ),
            (
                SerializedHistogram {
                    overflows: 3,
                    ..s.clone()
                },
                "overflows 3, but max_ns 5000",
            ),
            (
                SerializedHistogram {
                    overflows: 0,
                    ..o.clone()
                },
                "max_ns 10000000007 is not",
            ),
            (
                SerializedHistogram {
                    overflows: 9,
                    ..o.clone()
                },
                "sum_ns",
            ),
            (
                SerializedHistogram {
                    min_ns: Some(3),
                    ..only_over
                },
                "counts hold only overflows",
            ),
            (
                SerializedHistogram {
                    hdr_v2_base64: b64.encode(&flipped),
                    ..s.clone()
                },
                "",
            ),
            (
                SerializedHistogram {
                    hdr_v2_base64: b64.encode(&long),
                    ..s.clone()
                },
                "bytes of counts",
            ),
        ];
        for (e, why) in edits {
            let err = LatencyHistogram::from_serialized(&e)
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{e:?}: {err}");
        }
        // What was written reads back, overflows and all.
        assert_eq!(LatencyHistogram::from_serialized(&o).unwrap(), over);
    }

    #[test]
    fn exact_min_max_mean_on_hand_example() {
        let mut h = LatencyHistogram::new();
        // 123_456_789 is not representable exactly at 3 significant figures.
        for v in [0, 7, 123_456_789, 2_049, 1_000_001] {
            h.record(v);
        }
        h.record_n(5, 3);
        h.record_n(9, 0); // no-op: must not affect min/max
        assert_eq!(h.count(), 8);
        assert_eq!(h.min_ns(), Some(0));
        assert_eq!(h.max_ns(), Some(123_456_789));
        let sum = 7 + 123_456_789 + 2_049 + 1_000_001 + 15;
        assert_eq!(h.mean_ns(), Some(sum as f64 / 8.0));
        assert_eq!(h.quantile_ns(1.0), Ok(Some(123_456_789)));
        assert_eq!(h.quantile_ns(0.0), Ok(Some(0)));
        // rank ceil(0.5 * 8) = 4 of [0, 5, 5, 5, 7, ...] -> 5 (exact below 2048).
        assert_eq!(h.quantile_ns(0.5), Ok(Some(5)));

        // Rank 2 is 1_000_001, whose bucket's highest equivalent (~1_000_447)
        // lies above the exact maximum, so it is clamped to it.
        let mut h = LatencyHistogram::new();
        [1, 1_000_001, 1_000_002].iter().for_each(|&v| h.record(v));
        assert_eq!(h.quantile_ns(0.5), Ok(Some(1_000_002)));
    }

    #[test]
    fn matches_hdrhistogram_value_at_quantile() {
        let mut h = LatencyHistogram::new();
        let mut x = 1u64;
        for _ in 0..5_000 {
            // Deterministic spread over many HDR buckets.
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            h.record((x >> 40) * (x >> 60));
        }
        let n = h.count();
        for i in 0..=1_000 {
            let q = f64::from(i) / 1_000.0;
            let ours = h.quantile_ns(q).unwrap().unwrap();
            let theirs = h.settled().value_at_quantile(q).clamp(h.min_ns, h.max_ns);
            if (q * n as f64).ceil() <= 1.0 {
                assert_eq!(ours, h.min_ns, "q={q}");
            } else {
                assert_eq!(ours, theirs, "q={q}");
            }
        }
    }

    #[test]
    fn rank_uses_f64_ceil_like_hdrhistogram() {
        let mut h = LatencyHistogram::new();
        (1..=100).for_each(|v| h.record(v));
        // 0.07 * 100.0 == 7.000000000000001 in f64, so the rank is 8, not 7.
        assert_eq!(h.quantile_ns(0.07), Ok(Some(8)));
        assert_eq!(h.settled().value_at_quantile(0.07), 8);
    }

    #[test]
    fn runs_of_equal_samples_read_as_recorded() {
        // Runs, a value that comes back after others, zero, and an overflow inside a run.
        let values = [
            5,
            5,
            5,
            2_049,
            2_049,
            HIGHEST_TRACKABLE_NS + 7,
            2_049,
            5,
            0,
            0,
            4_096,
        ];
        let mut h = LatencyHistogram::new();
        let mut direct =
            Histogram::<u64>::new_with_bounds(LOWEST_DISCERNIBLE_NS, HIGHEST_TRACKABLE_NS, 3)
                .unwrap();
        for (i, &v) in values.iter().enumerate() {
            h.record(v);
            if v <= HIGHEST_TRACKABLE_NS {
                direct.record(v).unwrap();
            }
            // Every prefix reads as if each sample had gone straight into the HDR histogram.
            assert_eq!(*h.settled(), direct, "after {} samples", i + 1);
            assert_eq!(h.count(), i as u64 + 1);
        }
        assert_eq!(h.overflows(), 1);
        assert_eq!(h.min_ns(), Some(0));
        assert_eq!(h.max_ns(), Some(HIGHEST_TRACKABLE_NS + 7));
        assert_eq!(h.quantile_ns(0.5), Ok(Some(5)));
        assert_eq!(
            h.iter_buckets(1_000).collect::<Vec<_>>(),
            vec![(0, 6), (2_000, 3), (4_000, 1)]
        );
        // A histogram with a run pending equals the same samples merged into an empty one, and
        // merging a pending run carries it.
        let mut merged = LatencyHistogram::new();
        merged.merge(&h);
        assert_eq!(merged, h);
        assert_eq!(merged.summary(), h.summary());
        h.record(4_096);
        assert_ne!(merged, h);
    }

    #[test]
    fn buckets_are_linear_and_sparse() {
        let mut h = LatencyHistogram::new();
        for v in [0, 999, 1_000, 1_500, 5_000, 5_999] {
            h.record(v);
        }
        h.record(HIGHEST_TRACKABLE_NS + 1);
        let buckets: Vec<_> = h.iter_buckets(1_000).collect();
        assert_eq!(buckets, vec![(0, 2), (1_000, 2), (5_000, 2)]);
        assert_eq!(h.iter_buckets(0).map(|(_, c)| c).sum::<u64>(), 6);
        assert_eq!(LatencyHistogram::new().iter_buckets(1).count(), 0);
    }
}
