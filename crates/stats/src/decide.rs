//! Whether a run holds enough samples to decide a validation row.
//!
//! A row compares one statistic of a simulated distribution (a rate of late samples, a
//! quantile, a ratio of two means) with a published window. A point value says nothing about
//! how sure it is: zero samples above 10 µs in 4 million round trips do not show that the rate
//! is below 1e-7, and the minimum of one sample is not the minimum of 4,400. So every such row
//! is judged on the statistic's two-sided 95% confidence interval:
//!
//! - **pass** when the interval lies inside the window;
//! - **fail** when it lies wholly outside it;
//! - **undecided** otherwise, with the sample count at which the interval would clear the
//!   nearest boundary if the statistic stayed where it is ([`Needs`]).
//!
//! The intervals are the textbook ones: Garwood's exact interval for a Poisson count (rates of
//! rare events), order statistics with binomial ranks for quantiles (distribution-free), and
//! the delta method for a ratio of two independent means. Extreme quantiles (a minimum or a
//! maximum) have no distribution-free interval; a sample extreme is comparable with a
//! published one only when it is taken over at least as many samples, so that is the rule.

use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, Gamma};

/// Two-sided confidence of every interval here.
pub const CONFIDENCE: f64 = 0.95;
/// Half the error probability, on each side.
const ALPHA_HALF: f64 = (1.0 - CONFIDENCE) / 2.0;
/// z of the normal distribution at 1 - ALPHA_HALF (for the delta method).
const Z: f64 = 1.959_963_984_540_054;
/// No sample count beyond this is worth naming.
const NEEDS_CAP: u64 = 1_000_000_000_000_000;

/// A closed interval of the statistic, in its own unit.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// How many samples would decide an undecided row.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Exactly derivable: with fewer than this many the interval cannot clear the boundary
    /// (zero events, an interval that needs ranks beyond the data, a published sample size).
    AtLeast(u64),
    /// Extrapolated: the interval narrows as 1/sqrt(n) around the present value.
    About(u64),
    /// The statistic sits on a boundary: no sample count decides it.
    Never,
}

/// The judgement of one row's statistic.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The interval lies inside the window.
    Pass,
    /// The interval lies wholly outside it.
    Fail,
    /// The interval reaches across a boundary.
    Undecided(Needs),
}

/// Where an interval sits against the window `[low, high]`: inside, wholly outside, or across
/// a boundary (`None`).
pub fn against(i: Interval, low: f64, high: f64) -> Option<bool> {
    if i.lo >= low && i.hi <= high {
        Some(true)
    } else if i.hi < low || i.lo > high {
        Some(false)
    } else {
        None
    }
}

/// Garwood's exact 95% interval for the mean of a Poisson count of `k` (real, so that a rate
/// can be scaled to another sample size): `[Gamma(k).q(α/2), Gamma(k + 1).q(1 - α/2)]` with
/// rate 1, the lower end 0 when `k` is 0.
pub fn poisson_interval(k: f64) -> Interval {
    let lo = if k > 0.0 {
        Gamma::new(k, 1.0)
            .expect("shape > 0")
            .inverse_cdf(ALPHA_HALF)
    } else {
        0.0
    };
    let hi = Gamma::new(k + 1.0, 1.0)
        .expect("shape > 0")
        .inverse_cdf(1.0 - ALPHA_HALF);
    Interval { lo, hi }
}

/// The 95% interval of a rate: `k` events in `n` samples.
pub fn rate_interval(k: u64, n: u64) -> Interval {
    let c = poisson_interval(k as f64);
    let n = n.max(1) as f64;
    Interval {
        lo: c.lo / n,
        hi: c.hi / n,
    }
}

/// Judge `k` events in `n` samples against a rate window `[low, high]` (`low` may be 0).
pub fn decide_rate(k: u64, n: u64, low: f64, high: f64) -> (Interval, Decision) {
    let i = rate_interval(k, n);
    let d = match against(i, low, high) {
        Some(true) => Decision::Pass,
        Some(false) => Decision::Fail,
        None if k == 0 => {
            // Zero events: more samples can only push the upper end down. Below a lower
            // boundary that fails the row; with none, below the upper one passes it.
            let bound = if low > 0.0 { low } else { high };
            Decision::Undecided(Needs::AtLeast(ceil_samples(
                poisson_interval(0.0).hi / bound,
            )))
        }
        None => {
            let r = k as f64 / n as f64;
            Decision::Undecided(first_deciding(n, |m| {
                let c = poisson_interval(r * m as f64);
                let mf = m as f64;
                against(
                    Interval {
                        lo: c.lo / mf,
                        hi: c.hi / mf,
                    },
                    low,
                    high,
                )
                .is_some()
            }))
        }
    };
    (i, d)
}

/// The 1-based ranks `(l, u)` of the order statistics that bound quantile `q` of `n` samples
/// with 95% confidence: `P(l <= B < u) >= 0.95` for `B ~ Binomial(n, q)`, the number of
/// samples below the true quantile. `None` when the data are too few (a rank below 1 or above
/// `n`). Not for `q` of 0 or 1.
pub fn quantile_ranks(n: u64, q: f64) -> Option<(u64, u64)> {
    if n == 0 || q <= 0.0 || q >= 1.0 {
        return None;
    }
    let b = Binomial::new(q, n).expect("0 < q < 1");
    // l - 1 is the largest j with F(j) <= α/2; u - 1 the smallest j with F(j) >= 1 - α/2.
    let j_lo = b.inverse_cdf(ALPHA_HALF); // smallest j with F(j) >= α/2
    let l = if b.cdf(j_lo) > ALPHA_HALF {
        j_lo // F(j_lo - 1) < α/2, so l - 1 = j_lo - 1
    } else {
        j_lo + 1
    };
    let u = b.inverse_cdf(1.0 - ALPHA_HALF) + 1;
    (l >= 1 && u <= n).then_some((l, u))
}

/// The fewest samples for which [`quantile_ranks`] exists at `q`; never for `q` outside
/// (0, 1), whose order-statistic interval has no end on one side at any sample count.
pub fn quantile_min_samples(q: f64) -> Needs {
    if !(q > 0.0 && q < 1.0) {
        return Needs::Never;
    }
    // Both ends exist once the chance that every sample falls on one side of the quantile is
    // at most α/2: q^n <= α/2 and (1 - q)^n <= α/2.
    let side = q.max(1.0 - q);
    let mut n = (ALPHA_HALF.ln() / side.ln()).ceil().max(1.0) as u64;
    while quantile_ranks(n, q).is_none() {
        if n >= NEEDS_CAP {
            return Needs::Never;
        }
        n += 1;
    }
    Needs::AtLeast(n)
}

/// The 95% interval of a ratio of two independent means, `mean_a / mean_b`, by the delta
/// method: relative variance `cv_a² / n_a + cv_b² / n_b`. `None` with fewer than two samples
/// on either side (no spread to estimate) or a non-positive mean.
pub fn ratio_interval(a: MeanSample, b: MeanSample) -> Option<Interval> {
    let rel = ratio_rel_sd(a, b)?;
    let r = a.mean / b.mean;
    Some(Interval {
        lo: r * (1.0 - Z * rel),
        hi: r * (1.0 + Z * rel),
    })
}

/// A mean with what its interval needs.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MeanSample {
    /// Samples.
    pub n: u64,
    /// Their mean.
    pub mean: f64,
    /// Their standard deviation.
    pub sd: f64,
}

fn ratio_rel_sd(a: MeanSample, b: MeanSample) -> Option<f64> {
    if a.n < 2 || b.n < 2 || a.mean <= 0.0 || b.mean <= 0.0 {
        return None;
    }
    let cv2 = |s: MeanSample| (s.sd / s.mean).powi(2) / s.n as f64;
    Some((cv2(a) + cv2(b)).sqrt())
}

/// Judge a ratio of means against `[low, high]`.
pub fn decide_ratio(
    a: MeanSample,
    b: MeanSample,
    low: f64,
    high: f64,
) -> (Option<Interval>, Decision) {
    let Some(i) = ratio_interval(a, b) else {
        return (None, Decision::Undecided(Needs::AtLeast(2)));
    };
    let d = match against(i, low, high) {
        Some(true) => Decision::Pass,
        Some(false) => Decision::Fail,
        None => {
            let r = a.mean / b.mean;
            let half = (i.hi - i.lo) / 2.0;
            Decision::Undecided(extrapolate(a.n.max(b.n), half, distance(r, low, high)))
        }
    };
    (Some(i), d)
}

/// Distance from `x` to the nearest boundary of `[low, high]`.
pub fn distance(x: f64, low: f64, high: f64) -> f64 {
    (x - low).abs().min((high - x).abs())
}

/// The sample count at which an interval of half-width `half` at `n` samples, narrowing as
/// 1/sqrt(n), becomes narrower than `gap`.
pub fn extrapolate(n: u64, half: f64, gap: f64) -> Needs {
    if gap <= 0.0 || !gap.is_finite() {
        return Needs::Never;
    }
    let factor = (half / gap).powi(2);
    Needs::About(ceil_samples(n as f64 * factor).max(n + 1))
}

/// The first sample count from `n` on (doubling, then bisecting) at which `decided` holds.
fn first_deciding(n: u64, decided: impl Fn(u64) -> bool) -> Needs {
    let mut hi = n.max(1);
    while !decided(hi) {
        if hi >= NEEDS_CAP {
            return Needs::Never;
        }
        hi = hi.saturating_mul(2);
    }
    let mut lo = hi / 2;
    while hi - lo > 1.max(hi / 1000) {
        let mid = lo + (hi - lo) / 2;
        if decided(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Needs::About(hi)
}

fn ceil_samples(x: f64) -> u64 {
    if x.is_finite() {
        (x.ceil() as u64).min(NEEDS_CAP)
    } else {
        NEEDS_CAP
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garwood_matches_published_tables() {
        // Garwood (1936) 95% limits, as tabulated e.g. by Ulm (1990): k=0: 0-3.689;
        // k=2: 0.242-7.225; k=9: 4.115-17.08.
        let close = |a: f64, b: f64| (a - b).abs() < 2e-3 * b.max(1.0);
        let i = poisson_interval(0.0);
        assert_eq!(i.lo, 0.0);
        assert!(close(i.hi, 3.689), "{i:?}");
        let i = poisson_interval(2.0);
        assert!(close(i.lo, 0.2422) && close(i.hi, 7.2247), "{i:?}");
        let i = poisson_interval(9.0);
        assert!(close(i.lo, 4.115) && close(i.hi, 17.08), "{i:?}");
    }

    #[test]
    fn no_event_in_too_few_samples_decides_nothing() {
        // P(> 5 us) in 1e-7 .. 1e-3 with none seen in 4M: the upper end, 9.2e-7, is above
        // 1e-7, and zero events never show a rate above 1e-7.
        let (i, d) = decide_rate(0, 4_000_000, 1e-7, 1e-3);
        assert!((i.hi - 3.689 / 4e6).abs() < 1e-9);
        assert_eq!(d, Decision::Undecided(Needs::AtLeast(36_888_795)));
        // The same with no lower end: 37M samples without an event show P <= 1e-7.
        assert_eq!(
            decide_rate(0, 4_000_000, 0.0, 1e-7).1,
            Decision::Undecided(Needs::AtLeast(36_888_795))
        );
        assert_eq!(decide_rate(0, 256_000_000, 0.0, 1e-7).1, Decision::Pass);
        // 9 in 256M (3.5e-8, interval 1.6e-8 .. 6.7e-8) is below 1e-7: a failure.
        assert_eq!(decide_rate(9, 256_000_000, 1e-7, 1e-3).1, Decision::Fail);
        // 2 in 10M (2e-7): interval 2.4e-8 .. 7.2e-7 straddles 1e-7; more samples at the same
        // rate decide it, and the count named does.
        let (_, d) = decide_rate(2, 10_000_000, 1e-7, 1e-3);
        let Decision::Undecided(Needs::About(m)) = d else {
            panic!("{d:?}")
        };
        assert!(m > 10_000_000);
        let at = |m: u64| {
            let c = poisson_interval(2e-7 * m as f64);
            let i = Interval {
                lo: c.lo / m as f64,
                hi: c.hi / m as f64,
            };
            against(i, 1e-7, 1e-3)
        };
        assert_eq!(at(m), Some(true), "{m}");
        assert_eq!(at(m - m / 100), None, "{m} is about the first");
    }

    #[test]
    fn quantile_ranks_cover_95_percent_and_need_enough_data() {
        // The median of n samples needs n >= 6 for a 95% order-statistic interval (a classic
        // result: 2 * 0.5^6 = 0.031 <= 0.05, 2 * 0.5^5 = 0.0625 > 0.05).
        assert_eq!(quantile_ranks(5, 0.5), None);
        assert_eq!(quantile_ranks(6, 0.5), Some((1, 6)));
        assert_eq!(quantile_min_samples(0.5), Needs::AtLeast(6));
        // p99 needs about ln(0.025)/ln(0.99) = 367 samples.
        assert_eq!(quantile_min_samples(0.99), Needs::AtLeast(368));
        // An extreme has no two-sided interval at any count (and asking must not hang).
        for q in [0.0, 1.0, f64::NAN] {
            assert_eq!(quantile_min_samples(q), Needs::Never);
        }
        assert!(quantile_ranks(367, 0.99).is_none());
        for (n, q) in [(100u64, 0.5), (1000, 0.9), (5000, 0.99), (4_000_000, 0.5)] {
            let (l, u) = quantile_ranks(n, q).unwrap();
            let b = Binomial::new(q, n).unwrap();
            // [X(l), X(u)] holds the quantile when l <= B <= u - 1, B ~ Binomial(n, q) the
            // count of samples below it.
            let cover = b.cdf(u - 1) - b.cdf(l - 1);
            assert!(cover >= CONFIDENCE - 1e-9, "n {n} q {q}: {cover}");
            assert!(l as f64 <= n as f64 * q && u as f64 >= n as f64 * q);
        }
    }

    #[test]
    fn ratios_are_decided_by_their_spread() {
        let m = |n, mean, sd| MeanSample { n, mean, sd };
        // 8.0x against 6.8 +-10% with a tight spread: a clear failure.
        let (_, d) = decide_ratio(m(20_000, 6_899.0, 5.0), m(20_000, 860.0, 2.0), 6.12, 7.48);
        assert_eq!(d, Decision::Fail);
        // One sample: no spread, nothing decided.
        assert_eq!(
            decide_ratio(m(1, 6_899.0, 0.0), m(1, 860.0, 0.0), 6.12, 7.48).1,
            Decision::Undecided(Needs::AtLeast(2))
        );
        // A wide spread near the boundary: undecided, and the extrapolated count decides.
        let (i, d) = decide_ratio(m(50, 700.0, 300.0), m(50, 100.0, 5.0), 6.12, 7.48);
        assert!(i.unwrap().hi > 7.48);
        let Decision::Undecided(Needs::About(n)) = d else {
            panic!("{d:?}")
        };
        let (_, d2) = decide_ratio(m(n, 700.0, 300.0), m(n, 100.0, 5.0), 6.12, 7.48);
        assert_eq!(d2, Decision::Pass);
    }
}
