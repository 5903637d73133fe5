//! Histogram behaviour checked against an exact sorted-vector reference.

use irqlab_stats::{LatencyHistogram, StatsError, Summary, HIGHEST_TRACKABLE_NS};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const QS: [f64; 7] = [0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
const FIVE_S: u64 = 5_000_000_000;

/// Exact order statistic under hdrhistogram's rank rule: rank `ceil(q * n)`
/// computed in f64 (as `Histogram::value_at_quantile` does), at least 1.
fn reference(sorted: &[u64], q: f64) -> u64 {
    let n = sorted.len();
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1]
}

fn histogram_of(values: &[u64]) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    values.iter().for_each(|&v| h.record(v));
    h
}

/// Checks every quantile in `qs` against the reference: exact below 2048 ns,
/// otherwise at least the exact value, at most the maximum and at most
/// 0.1% + 1 ns above it; the exact maximum when the order statistic overflowed; the exact
/// minimum and maximum at ranks 1 and n, overflowed or not.
fn check_quantiles(values: &[u64], qs: &[f64]) -> Result<(), TestCaseError> {
    let h = histogram_of(values);
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    for &q in qs {
        let exact = reference(&sorted, q);
        let got = h.quantile_ns(q).unwrap().unwrap();
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        if rank == 1 || rank == sorted.len() {
            // The exact minimum and maximum are kept beside the buckets, overflowed or not.
            prop_assert_eq!(got, exact, "q={} (rank {})", q, rank);
        } else if exact > HIGHEST_TRACKABLE_NS {
            prop_assert_eq!(got, *sorted.last().unwrap(), "q={}", q);
        } else if exact < 2_048 {
            // Unit-width buckets: the histogram must hit the order statistic exactly.
            prop_assert_eq!(got, exact, "q={}", q);
        } else {
            prop_assert!(got >= exact, "q={q}: got {got} < exact {exact}");
            prop_assert!(got <= *sorted.last().unwrap(), "q={q}: {got} above max");
            let err = (got - exact) as f64;
            prop_assert!(
                err <= exact as f64 * 1e-3 + 1.0,
                "q={q}: got {got}, exact {exact}"
            );
        }
    }
    Ok(())
}

/// Latency-like distributions from 0 ns to 5 s.
fn latency() -> impl Strategy<Value = u64> {
    prop_oneof![
        // Exact region of the histogram.
        0u64..3_000,
        // Uniform.
        0u64..=FIVE_S,
        // Log-uniform from 1 ns to 5 s.
        (0.0f64..22.33).prop_map(|e| e.exp() as u64),
        // Exponential, mean 20 µs.
        (0.0f64..1.0).prop_map(|u| (-(1.0 - u).ln() * 20_000.0) as u64),
        // Pareto (alpha 1.1) from 1 µs, capped at 5 s: heavy tail.
        (0.0f64..1.0).prop_map(|u| (1_000.0 / (1.0 - u).powf(1.0 / 1.1)).min(5e9) as u64),
    ]
}

/// As [`latency`], with about 10% of samples around or above 10 s.
fn with_overflows() -> impl Strategy<Value = u64> {
    prop_oneof![
        9 => latency(),
        1 => HIGHEST_TRACKABLE_NS - 2..=2 * HIGHEST_TRACKABLE_NS,
    ]
}

proptest! {
    #[test]
    fn quantiles_match_sorted_reference(values in prop::collection::vec(latency(), 1..1_000)) {
        check_quantiles(&values, &QS)?;
    }

    #[test]
    fn arbitrary_quantiles_match_reference(
        values in prop::collection::vec(with_overflows(), 1..500),
        qs in prop::collection::vec(0.0f64..=1.0, 1..20),
    ) {
        check_quantiles(&values, &qs)?;
    }

    #[test]
    fn merge_equals_recording_union(
        a in prop::collection::vec(with_overflows(), 0..500),
        b in prop::collection::vec(with_overflows(), 0..500),
    ) {
        let mut merged = histogram_of(&a);
        merged.merge(&histogram_of(&b));
        let union = histogram_of(&[a.as_slice(), b.as_slice()].concat());

        prop_assert_eq!(merged.summary(), union.summary());
        prop_assert_eq!(merged.overflows(), union.overflows());
        for q in QS {
            prop_assert_eq!(merged.quantile_ns(q), union.quantile_ns(q));
        }
        prop_assert!(merged.iter_buckets(1_000).eq(union.iter_buckets(1_000)));
        prop_assert_eq!(merged, union);
    }

    /// What `irqlab sweep merge` relies on: shards written in the serialized form (HdrHistogram
    /// V2 and the exact extras) and read back merge into exactly the unsharded histogram.
    #[test]
    fn serialized_shards_merge_into_the_whole(
        a in prop::collection::vec(with_overflows(), 0..500),
        b in prop::collection::vec(with_overflows(), 0..500),
    ) {
        let read = |v: &[u64]| {
            LatencyHistogram::from_serialized(&histogram_of(v).to_serialized()).unwrap()
        };
        let mut merged = read(&a);
        merged.merge(&read(&b));
        let whole = histogram_of(&[a.as_slice(), b.as_slice()].concat());
        prop_assert_eq!(merged.summary(), whole.summary());
        prop_assert_eq!(merged, whole);
    }

    #[test]
    fn exact_count_min_max_mean(values in prop::collection::vec(with_overflows(), 1..500)) {
        let h = histogram_of(&values);
        let sum: u128 = values.iter().map(|&v| u128::from(v)).sum();
        prop_assert_eq!(h.count(), values.len() as u64);
        prop_assert_eq!(h.min_ns(), values.iter().copied().min());
        prop_assert_eq!(h.max_ns(), values.iter().copied().max());
        prop_assert_eq!(h.mean_ns(), Some(sum as f64 / values.len() as f64));
        let overflows = values.iter().filter(|&&v| v > HIGHEST_TRACKABLE_NS).count() as u64;
        prop_assert_eq!(h.overflows(), overflows);
        let s = h.summary();
        let ps = [0.5, 0.9, 0.99, 0.999, 0.9999].map(|q| h.quantile_ns(q).unwrap());
        prop_assert_eq!([s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.p9999_ns], ps);
        let bucketed: u64 = h.iter_buckets(1_000).map(|(_, c)| c).sum();
        prop_assert_eq!(bucketed, h.count() - overflows);
    }
}

/// In the exact region any rank error shows, including hdrhistogram's f64
/// rounding (`0.07 * 100.0` is just above 7, so rank 8).
/// The case CI's proptest run found (stop 45): every sample overflowed, and rank 1 is the
/// exact minimum, not the maximum. Kept as a plain test because proptest's regression file
/// cannot be located from an integration test here.
#[test]
fn all_overflowed_minimum_is_exact() {
    let values = [HIGHEST_TRACKABLE_NS + 1, HIGHEST_TRACKABLE_NS + 2];
    check_quantiles(&values, &[0.0, 0.5, 1.0]).unwrap();
    let h = histogram_of(&values);
    assert_eq!(h.quantile_ns(0.0).unwrap(), Some(HIGHEST_TRACKABLE_NS + 1));
    assert_eq!(h.quantile_ns(1.0).unwrap(), Some(HIGHEST_TRACKABLE_NS + 2));
}

#[test]
fn rank_rule_matches_reference_exactly() {
    let qs: Vec<f64> = (0..=100).map(|i| f64::from(i) / 100.0).chain(QS).collect();
    for n in (1..=300).chain([999, 1_000, 1_001, 1_024, 2_000]) {
        check_quantiles(&(1..=n).collect::<Vec<_>>(), &qs).unwrap();
    }
    assert_eq!(
        histogram_of(&(1..=100).collect::<Vec<_>>()).quantile_ns(0.07),
        Ok(Some(8))
    );
}

/// A million samples from a seeded heavy-tailed mixture, many quantiles.
#[test]
fn large_seeded_mixture_matches_reference() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x1a7e_9c1e);
    let values: Vec<u64> = (0..1_000_000)
        .map(|_| match rng.gen_range(0..10) {
            0 => rng.gen_range(0..FIVE_S),
            1..=3 => (1_000.0 / (1.0 - rng.gen::<f64>()).powf(1.0 / 1.1)).min(5e9) as u64,
            _ => 2_000 + (-(1.0 - rng.gen::<f64>()).ln() * 5_000.0) as u64,
        })
        .collect();
    let qs: Vec<f64> = (0..=1_000).map(|i| f64::from(i) / 1_000.0).collect();
    check_quantiles(&values, &qs).unwrap();
    check_quantiles(&values, &[0.9999, 0.99999, 0.999999, 0.9999999]).unwrap();
}

#[test]
fn overflow_is_counted_and_max_is_exact() {
    let mut h = LatencyHistogram::new();
    h.record(1_000);
    h.record(HIGHEST_TRACKABLE_NS); // still in range
    h.record_n(HIGHEST_TRACKABLE_NS + 1, 2);
    h.record(12_345_678_901);
    assert_eq!(h.count(), 5);
    assert_eq!(h.overflows(), 3);
    assert_eq!(h.max_ns(), Some(12_345_678_901));
    assert_eq!(h.quantile_ns(1.0), Ok(Some(12_345_678_901)));
    // Rank 3 of 5 is an overflow: reported as the exact maximum.
    assert_eq!(h.quantile_ns(0.5), Ok(Some(12_345_678_901)));
    // Rank 2 is the in-range 10 s sample, within 0.1%.
    let p40 = h.quantile_ns(0.4).unwrap().unwrap();
    assert!(
        (HIGHEST_TRACKABLE_NS..=HIGHEST_TRACKABLE_NS + HIGHEST_TRACKABLE_NS / 1000).contains(&p40)
    );
    let s = h.summary();
    assert_eq!((s.count, s.overflows), (5, 3));
    assert_eq!(s.max_ns, Some(12_345_678_901));
    assert_eq!(s.p9999_ns, Some(12_345_678_901));
}

#[test]
fn empty_histogram() {
    let h = LatencyHistogram::default();
    assert_eq!(h.quantile_ns(0.5), Ok(None));
    assert_eq!((h.min_ns(), h.max_ns(), h.mean_ns()), (None, None, None));
    let s = h.summary();
    assert_eq!(s, Summary::default());
    assert_eq!(s.count, 0);
    assert!(s.quantiles().iter().all(|(_, v)| v.is_none()));
    assert_eq!(s.mean_ns, None);
}

#[test]
fn quantile_out_of_range_is_an_error() {
    let h = histogram_of(&[1, 2, 3]);
    for q in [-0.01, 1.5, 99.0, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(h.quantile_ns(q), Err(StatsError::QuantileOutOfRange(q)));
    }
    assert!(matches!(
        h.quantile_ns(f64::NAN),
        Err(StatsError::QuantileOutOfRange(q)) if q.is_nan()
    ));
    // Also for an empty histogram: the argument is wrong regardless of data.
    assert!(LatencyHistogram::new().quantile_ns(2.0).is_err());
    let msg = StatsError::QuantileOutOfRange(1.5).to_string();
    assert_eq!(
        msg,
        "quantile 1.5 is outside [0, 1]; pass a fraction such as 0.99 for the 99th percentile"
    );
}

#[test]
fn summary_fields_and_labels() {
    let h = histogram_of(&(1..=10_000).collect::<Vec<_>>());
    let s = h.summary();
    assert_eq!(s.count, 10_000);
    assert_eq!(s.min_ns, Some(1));
    assert_eq!(s.max_ns, Some(10_000));
    assert_eq!(s.mean_ns, Some(5_000.5));
    let labels: Vec<_> = s.quantiles().iter().map(|(l, _)| *l).collect();
    assert_eq!(labels, ["min", "p50", "p90", "p99", "p999", "p9999", "max"]);
    assert_eq!(s.quantiles()[4].1, s.p999_ns);
    // Percentiles are monotone and within 0.1% of the exact rank values.
    let ps = s.quantiles().map(|(_, v)| v.unwrap());
    assert!(ps.windows(2).all(|w| w[0] <= w[1]));
    for (got, exact) in [(s.p50_ns, 5_000), (s.p90_ns, 9_000), (s.p99_ns, 9_900)] {
        let got = got.unwrap();
        assert!(
            got >= exact && got - exact <= exact / 1000 + 1,
            "{got} vs {exact}"
        );
    }

    fn assert_serde<T: serde::Serialize + serde::de::DeserializeOwned>() {}
    assert_serde::<Summary>();
}
