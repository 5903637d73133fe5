//! Judging a validation row by the model's own uncertainty (DESIGN.md, "How a row is judged").
//!
//! The model's estimates are drawn over their plausible ranges; each draw runs the whole
//! experiment and gives the row one value (a ratio, a quantile, a rate) or one yes/no (a shape or
//! sequence criterion). This module turns those draws into the row's verdict class: the 5-95%
//! band, where the published value falls in it, which parameters drive it (Spearman's rank
//! correlation), and the class. It is pure arithmetic on the draws; drawing and running are the
//! simulator's.

use serde::{Deserialize, Serialize};

/// How a row's value is compared: on a linear axis (ratios, latencies) or on a logarithmic one
/// (rates of rare events, whose windows span decades).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Widths are differences.
    Linear,
    /// Widths are decades (`log10(high / low)`).
    Log,
}

impl Scale {
    /// The width of `lo..hi` on this axis (infinite where a log axis meets zero).
    pub fn width(self, lo: f64, hi: f64) -> f64 {
        match self {
            Scale::Linear => hi - lo,
            Scale::Log if lo > 0.0 => (hi / lo).log10(),
            Scale::Log => f64::INFINITY,
        }
    }
}

/// The verdict classes of DESIGN.md.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The published value is inside the 5-95% band, and the band is no wider than twice the
    /// row's tolerance window (shape rows: the criterion holds in at least the row's pass share
    /// of the draws).
    Pass,
    /// Inside the band, but the band is too wide to say much: source the top drivers (shape
    /// rows: the criterion holds in some draws and not others).
    ConsistentButUninformative,
    /// Outside the 5-95% band (shape rows: holds in fewer than 5% of the draws).
    Tension,
    /// Outside the 1-99% band (shape rows: holds in fewer than 1% of the draws).
    Inconsistent,
    /// The draws cannot resolve the row (too few samples per draw for the published window).
    Undecided,
}

impl Class {
    /// The class as the tables print it.
    pub fn label(self) -> &'static str {
        match self {
            Class::Pass => "pass",
            Class::ConsistentButUninformative => "uninformative",
            Class::Tension => "tension",
            Class::Inconsistent => "inconsistent",
            Class::Undecided => "undecided",
        }
    }
}

/// Quantiles of a row's draws.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// The 1st percentile.
    pub p1: f64,
    /// The 5th percentile: the band's lower edge.
    pub p5: f64,
    /// The median.
    pub median: f64,
    /// The 95th percentile: the band's upper edge.
    pub p95: f64,
    /// The 99th percentile.
    pub p99: f64,
}

/// The `q` quantile of `sorted` (ascending, no NaN), interpolated between order statistics
/// (Hyndman and Fan's type 7, the default of R and NumPy). `None` when empty.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let (i, frac) = (h.floor() as usize, h - h.floor());
    let lo = sorted[i];
    Some(if i + 1 < n && frac > 0.0 {
        lo + (sorted[i + 1] - lo) * frac
    } else {
        lo
    })
}

impl Band {
    /// The band of `values` (any order; NaNs are left out). `None` when no value remains.
    pub fn of(values: &[f64]) -> Option<Band> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        v.sort_by(f64::total_cmp);
        Some(Band {
            p1: quantile(&v, 0.01)?,
            p5: quantile(&v, 0.05)?,
            median: quantile(&v, 0.50)?,
            p95: quantile(&v, 0.95)?,
            p99: quantile(&v, 0.99)?,
        })
    }
}

/// Where `x` falls among `values`, in percent: the share below it plus half the share equal to
/// it (so a value in the middle of a run of ties sits in the run's middle).
pub fn percentile_of(values: &[f64], x: f64) -> f64 {
    let v: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    let below = v.iter().filter(|&&v| v < x).count() as f64;
    let equal = v.iter().filter(|&&v| v == x).count() as f64;
    100.0 * (below + equal / 2.0) / v.len() as f64
}

/// Ranks of `v` from 1, ties given their average rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation of `x` and `y` (pairs with a NaN left out): the Pearson
/// correlation of their ranks, so any monotone relation scores ±1. NaN when either side is
/// constant or fewer than three pairs remain.
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    let (x, y): (Vec<f64>, Vec<f64>) = x
        .iter()
        .zip(y)
        .filter(|(a, b)| !a.is_nan() && !b.is_nan())
        .map(|(a, b)| (*a, *b))
        .unzip();
    if x.len() < 3 {
        return f64::NAN;
    }
    let (rx, ry) = (ranks(&x), ranks(&y));
    let n = rx.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return f64::NAN;
    }
    sxy / (sxx * syy).sqrt()
}

/// Whether `a..b` and `c..d` share any point.
fn overlaps(a: f64, b: f64, c: f64, d: f64) -> bool {
    a <= d && c <= b
}

/// The class of a row with a value: `published` is the published value as an interval (a point
/// is `x..x`), `window` the width of the row's tolerance window on `scale`.
///
/// The width test is what keeps a range from buying a pass: widening a parameter's range
/// widens the band, and a band wider than twice the window is at best uninformative.
pub fn classify_value(band: &Band, published: (f64, f64), window: f64, scale: Scale) -> Class {
    let (lo, hi) = published;
    if overlaps(lo, hi, band.p5, band.p95) {
        if scale.width(band.p5, band.p95) <= 2.0 * window {
            Class::Pass
        } else {
            Class::ConsistentButUninformative
        }
    } else if overlaps(lo, hi, band.p1, band.p99) {
        Class::Tension
    } else {
        Class::Inconsistent
    }
}

/// The class of a shape or sequence row from the share of draws in which its criterion holds:
/// at least `pass_share` passes; below 5% is tension and below 1% inconsistent (the published
/// "holds" then lies outside the model's 5-95% or 1-99% of outcomes); in between, the model
/// cannot say whether it holds.
pub fn classify_share(share: f64, pass_share: f64) -> Class {
    if share >= pass_share {
        Class::Pass
    } else if share < 0.01 {
        Class::Inconsistent
    } else if share < 0.05 {
        Class::Tension
    } else {
        Class::ConsistentButUninformative
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), Some(3.0));
        assert_eq!(quantile(&v, 0.25), Some(2.0));
        assert_eq!(quantile(&v, 0.1), Some(1.4));
        assert_eq!(quantile(&v, 1.0), Some(5.0));
        assert_eq!(quantile(&[], 0.5), None);
        let b = Band::of(&[f64::NAN, 2.0, 1.0]).unwrap();
        assert_eq!((b.p1, b.median, b.p99), (1.01, 1.5, 1.99));
    }

    #[test]
    fn percentiles_count_ties_half() {
        let v = [1.0, 2.0, 2.0, 3.0];
        assert_eq!(percentile_of(&v, 2.0), 50.0);
        assert_eq!(percentile_of(&v, 0.5), 0.0);
        assert_eq!(percentile_of(&v, 9.0), 100.0);
        assert_eq!(percentile_of(&v, 2.5), 75.0);
    }

    #[test]
    fn spearman_sees_monotone_relations_and_ties() {
        let x: Vec<f64> = (0..50).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|v| (v / 10.0).exp()).collect();
        assert!((spearman(&x, &y) - 1.0).abs() < 1e-12);
        let neg: Vec<f64> = x.iter().map(|v| -v * v).collect();
        assert!((spearman(&x, &neg) + 1.0).abs() < 1e-12);
        assert!(spearman(&x, &[1.0; 50]).is_nan());
        // A known value (ties averaged): x = 1,2,3,4,5; y = 2,1,4,3,5 gives rho = 0.8.
        let r = spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 1.0, 4.0, 3.0, 5.0]);
        assert!((r - 0.8).abs() < 1e-12, "{r}");
    }

    fn band(p1: f64, p5: f64, p95: f64, p99: f64) -> Band {
        Band {
            p1,
            p5,
            median: (p5 + p95) / 2.0,
            p95,
            p99,
        }
    }

    #[test]
    fn value_classes() {
        let narrow = band(2.6, 2.7, 3.1, 3.2);
        // Window of a ±10% row at 2.9: 0.58 wide; the band (0.4) is narrower than twice that.
        assert_eq!(
            classify_value(&narrow, (2.9, 2.9), 0.58, Scale::Linear),
            Class::Pass
        );
        let wide = band(1.5, 2.0, 3.5, 4.0);
        assert_eq!(
            classify_value(&wide, (2.9, 2.9), 0.58, Scale::Linear),
            Class::ConsistentButUninformative
        );
        assert_eq!(
            classify_value(&narrow, (3.15, 3.15), 0.58, Scale::Linear),
            Class::Tension
        );
        assert_eq!(
            classify_value(&narrow, (3.5, 3.6), 0.58, Scale::Linear),
            Class::Inconsistent
        );
        // An interval published value counts where it overlaps.
        assert_eq!(
            classify_value(&narrow, (3.05, 3.5), 0.58, Scale::Linear),
            Class::Pass
        );
        // On a log axis a band reaching zero is infinitely wide.
        let zero = band(0.0, 0.0, 1e-4, 2e-4);
        assert_eq!(
            classify_value(&zero, (1e-7, 1e-3), 4.0, Scale::Log),
            Class::ConsistentButUninformative
        );
    }

    #[test]
    fn widening_a_band_never_creates_a_pass() {
        // Any band around the published value, widened beyond twice the window, stops passing,
        // whatever the widening's centre: the rule that keeps a range from buying a verdict.
        for k in 0..200 {
            let c = 2.0 + f64::from(k) * 0.01;
            let half = 0.6 + f64::from(k % 7) * 0.1;
            let b = band(c - half * 1.2, c - half, c + half, c + half * 1.2);
            assert_ne!(
                classify_value(&b, (2.9, 2.9), 0.58, Scale::Linear),
                Class::Pass
            );
        }
    }

    #[test]
    fn share_classes() {
        assert_eq!(classify_share(0.95, 0.9), Class::Pass);
        assert_eq!(classify_share(0.85, 0.9), Class::ConsistentButUninformative);
        assert_eq!(classify_share(0.85, 0.8), Class::Pass);
        assert_eq!(classify_share(0.03, 0.9), Class::Tension);
        assert_eq!(classify_share(0.0, 0.9), Class::Inconsistent);
    }
}
