//! The width of a histogram's flat-topped boxes: the clock quantum of a synchronised bus (seed
//! 004, Fig. 3).
//!
//! A latency that crosses one synchronisation to a bus clock of period `T` waits a time uniform
//! over `[0, T)` for the next edge. Each distinct path through the hardware and code (an "atom"
//! at offset `X_i`, anywhere on a continuous axis: atoms need not be whole bus cycles apart)
//! therefore becomes a flat-topped box exactly `T` wide, from `X_i` to `X_i + T`, and the
//! histogram is a sum of such boxes of different heights plus whatever smooth tail the rest of
//! the system adds. This module finds `T` from the samples alone. It replaces the lattice of
//! [`crate::fence`], which assumes the edges of all boxes lie on one lattice and so locks onto
//! the spacing of the atoms whenever they are not whole periods apart.
//!
//! # Method
//!
//! Histogram the samples at the instrument's resolution (one bin per count) and take the first
//! difference `d[p] = h[p] - h[p - 1]`. A box of height `a` contributes `+a` at its rising edge
//! `X` and `-a` at its falling edge `X + T`, and nothing in between, whatever its offset, so
//! the autocorrelation `R(L) = sum_p d[p] d[p + L]` has a term `-a²` at lag `T` from *every*
//! box. Terms between two boxes `i` and `j` fall at lags `|X_j - X_i|` (positive) and
//! `|X_j - X_i ± T|` (negative, `-a_i a_j`): they depend on the atoms' spacings, which differ from
//! pair to pair, while the `-a²` terms of all boxes pile up at the one lag `T`. The estimate
//! is the lag of the deepest local minimum of `R` in the search range, refined below one count
//! by the vertex of the parabola through `R` at the three integer lags around it (at 90.112 MHz
//! a 120 ns quantum is 10.8 counts, so whole lags alone could be up to 4.6% off).
//!
//! Counting noise is Poisson and independent from bin to bin, so its contribution to `R(L)`
//! averages to zero at every lag of two counts or more (at lag 0 it is positive, at lag 1
//! negative, because neighbouring differences share a bin); lags below [`MIN_LAG_COUNTS`] are
//! never candidates, and the smallest candidate's parabola uses lag 2 at the lowest. The depth
//! of a minimum is quoted in standard deviations of what Poisson noise alone would put at that
//! lag, `sd R(L)² = 4 S(L) + S(L - 1) + S(L + 1)` with `S(L) = sum_p h[p] h[p + L]` (the
//! variance of a sum of products of differences of independent Poisson counts, including the
//! covariance of neighbouring differences). The second-deepest minimum at least
//! [`MIN_LAG_COUNTS`] lags away from the first (so that the two parabolas share no point) is
//! reported as the runner-up, so that a caller can tell one clear minimum from two near-equal
//! ones.
//!
//! The histogram is kept sparse (only the occupied values and the differences next to them),
//! so an outlier far out in the tail costs nothing and cannot make a huge array. The work is
//! the number of lags searched (the search range in counts, at most the histogram's span)
//! times the number of occupied values: a few hundred thousand steps for seed 004's 40-400 ns
//! over 4,400 samples.
//!
//! # Choices, and what the synthetic study showed
//!
//! The method and every constant here were fixed on synthetic data alone, before the estimator
//! was run on any simulator output. The study (`crates/stats/tests/boxwidth.rs`, whose
//! generator it describes) draws, per dataset, 1 to 12 atoms at uniform continuous offsets over
//! 0.5-4 µs with log-normal weights (σ = 1.2, so one or two atoms often dominate), 4,400
//! samples `C + X_i + U[0, T)`, 5-20% of them instead from an exponential tail (mean 1-5 µs,
//! starting anywhere in the first 4 µs, itself synchronised), Gaussian jitter of 0-8 ns, read
//! by a counter of 11.0977 ns (90.112 MHz) at a random phase. Share of datasets within ±10% of
//! `T`, over the same 200 datasets (seeds 1000-1199) for each of `T` = 90, 120 and 150 ns,
//! searching 40-400 ns (the alternatives were coded for the study only and not kept; none of
//! them had a depth threshold, so the first row is also given without it):
//!
//! | estimator | 90 ns | 120 ns | 150 ns |
//! |---|---|---|---|
//! | this one, as shipped | 99.0% | 99.5% | 99.0% |
//! | this one without the [`MIN_DEPTH_SIGMAS`] threshold | 99.0% | 100% | 100% |
//! | the same at whole lags (no parabola) | 97.0% | 100% | 100% |
//! | histogram smoothed by [1 2 1]/4 first | 97.5% | 100% | 100% |
//! | each difference divided by its Poisson sd ("whitened") | 90.0% | 97.0% | 98.5% |
//! | whitened and smoothed | 30.0% | 79.0% | 97.0% |
//! | differences soft-thresholded by 1 Poisson sd | 98.5% | 99.5% | 98.5% |
//! | differences soft-thresholded by 2 Poisson sd | 96.5% | 99.0% | 97.5% |
//! | spectral comb: log power at `(m ± ½)/T` over `m/T`, mean over harmonics | 95.0% | 73.0% | 11.0% |
//! | the same, summed over harmonics (100 datasets) | 49% | 71% | 80% |
//! | [`crate::fence::step_period`] | 70.0% | 70.5% | 76.0% |
//!
//! On 1,000 further datasets per period (seeds 5000-5999) the shipped estimator is within ±10%
//! in 99.5%, 99.7% and 97.7% (the old lattice in 67.6%, 72.5% and 76.2%); the 5th to 95th
//! percentiles of its relative error are -2.9% to +2.4% over all periods, and the sd of the
//! estimates within ±10% is 1.5-1.6% of `T` (about 2 ns at 120 ns).
//!
//! - *No weighting.* Dividing each difference by its noise sd widens the estimate (median
//!   +3.5% to +6.6%): a box's rising edge climbs from low counts to high, so whitening amplifies
//!   its lower (earlier) half and moves the edge down, while the falling edge's lower half is
//!   its later one, moved up. Soft thresholding biases the same way, less (median +0.4% to
//!   +2.1%), and buys no accuracy. The raw difference is unbiased (median -0.4% to +0.4%).
//! - *No smoothing.* The counter's random phase and the jitter already spread each edge over
//!   two or three bins, so `R` is smooth near its minimum; smoothing the histogram widened the
//!   spread of the estimates (sd 1.9% against 1.7% of `T` at 90 ns) and cost 1.5 points at
//!   90 ns.
//! - *Parabolic interpolation.* It removes the whole-lag quantisation error (-1.4% at 90 ns,
//!   +1.7% at 120 ns, -3.8% or +3.6% at 150 ns, the same for every dataset) and gains 2 points
//!   at 90 ns.
//! - *Not the spectral null.* The boxes' transform has zeros at every `m/T`, and so at every
//!   multiple of `1/(T/2)` and `1/(T/3)` too: a comb at `T/3` meets nothing but nulls, and at
//!   150 ns (`T/3` = 50 ns, inside the search range) the averaged comb's median estimate was
//!   `T/3`. Summing over harmonics instead prefers `2T` and `3T`, whose combs contain all of
//!   `T`'s nulls. The autocorrelation of the difference has no such ambiguity: a single box has
//!   no negative term at any lag but `T`.
//! - *The depth threshold* ([`MIN_DEPTH_SIGMAS`] = 5). On 600 smooth distributions with no
//!   box (a hump, an exponential with a hard onset, a Gaussian; 0.3-5 µs wide) the deepest
//!   minimum that passed the other tests was 4.1 noise sds; the correct minima of the 1,000
//!   further datasets fall below 5 sds in 0%, 0.2% and 1.9% of them at 90, 120 and 150 ns
//!   (wider boxes are lower, so their minima are shallower). 5 keeps every one of the smooth
//!   cases out at that cost.
//!
//! Failure mode (the 1% missed at 90 ns): two atoms of similar weight very nearly `T` apart
//! make one box `2T` wide with a small step in the middle. Its differences are `+a₁`,
//! `a₂ - a₁`, `-a₂` at `X`, `X + T`, `X + 2T`, so `R(T) = -(a₁ - a₂)²` against
//! `R(2T) = -a₁a₂`, and the estimate is `2T` whenever the two heights are within a factor of
//! about 2.6 of each other. No estimator that sees only the histogram can tell that case from
//! one path of width `2T`; with other atoms present it is outvoted. Atoms at other spacings
//! `D` only add minima at `|D ± T|`, each with the weight of one pair (at spacing 2.5T the
//! runner-up sits at 1.5T with two thirds of the depth of three equal boxes at `T`).
//!
//! # When there is no answer
//!
//! [`box_width`] returns `None` when
//! - `samples` is empty, `unit_ns` is not a positive finite number, or the search range is not
//!   finite or has `min_ns > max_ns`;
//! - the histogram has fewer than two significant edges (differences larger than
//!   [`EDGE_SIGMAS`] Poisson standard deviations): a single value, or a smooth distribution,
//!   has no box to measure;
//! - the differences carry no more energy than counting noise alone would give them
//!   (`R(0) <= 2n` for `n` samples);
//! - no lag of at least [`MIN_LAG_COUNTS`] has a negative local minimum of `R` whose
//!   interpolated position lies within `min_ns..=max_ns` (a minimum just outside the range is
//!   not reported as the range's end);
//! - or the deepest such minimum is shallower than [`MIN_DEPTH_SIGMAS`] noise sds.

/// A difference between neighbouring bins larger than this many standard deviations of counting
/// noise is an edge (the same rule as [`crate::fence::NOISE_SIGMAS`]).
pub const EDGE_SIGMAS: f64 = 3.0;

/// The smallest lag, in counts, that can be a box's width. At lag 1 neighbouring differences
/// share a bin and their noise anticorrelates; from lag 2 on the noise averages to zero, and
/// a minimum at lag 3 still has lag 2 for its parabola. A box narrower than three counts would
/// in any case be lost in the one-to-two-count spread of its own edges.
pub const MIN_LAG_COUNTS: u64 = 3;

/// A minimum shallower than this many standard deviations of the Poisson noise at its lag is
/// not an answer.
pub const MIN_DEPTH_SIGMAS: f64 = 5.0;

/// One local minimum of the autocorrelation of the histogram's difference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Minimum {
    /// The lag of the minimum (interpolated), in nanoseconds.
    pub width_ns: f64,
    /// Its depth `-R(L) / R₀` at the nearest whole lag, where `R₀` is the part of `R(0)` above
    /// counting noise (the energy of the edges): 0.5 for boxes of one width with nothing else
    /// near that lag, less as other lags take their share. Depths of different minima compare
    /// directly.
    pub depth: f64,
    /// `-R(L)` in standard deviations of what counting noise alone would give at that lag:
    /// whether the minimum is there at all. The noise differs from lag to lag (it is largest
    /// at lags shorter than the boxes), so compare minima by [`depth`](Self::depth), not by
    /// this.
    pub depth_sigmas: f64,
}

/// The box width found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxWidth {
    /// The width of the boxes, in nanoseconds (the lag of the deepest minimum, interpolated).
    pub width_ns: f64,
    /// The relative depth of that minimum (see [`Minimum::depth`]).
    pub depth: f64,
    /// Its depth in standard deviations of counting noise (at least [`MIN_DEPTH_SIGMAS`]).
    pub depth_sigmas: f64,
    /// The next-deepest minimum in the search range at least [`MIN_LAG_COUNTS`] lags away, if
    /// any: a [`depth`](Minimum::depth) close to the winner's means two near-equal candidates.
    pub runner_up: Option<Minimum>,
    /// How many significant edges the histogram has.
    pub edges: usize,
}

/// The width of the flat-topped boxes of the histogram of `samples` (integers in instrument
/// counts, `unit_ns` nanoseconds each), searching `min_ns..=max_ns`. See the
/// [module documentation](self) for the method and for exactly when the answer is `None`.
pub fn box_width(samples: &[u64], unit_ns: f64, min_ns: f64, max_ns: f64) -> Option<BoxWidth> {
    if !(unit_ns.is_finite() && unit_ns > 0.0 && min_ns.is_finite() && max_ns.is_finite()) {
        return None;
    }
    if min_ns > max_ns {
        return None;
    }
    let hist = Sparse::new(samples)?;
    let edges = hist
        .steps
        .iter()
        .filter(|s| s.diff.abs() > EDGE_SIGMAS * s.var.sqrt())
        .count();
    if edges < 2 {
        return None;
    }
    let (min_counts, max_counts) = (min_ns / unit_ns, max_ns / unit_ns);
    // Beyond the histogram's span every product is zero, so no minimum can lie there.
    let span = hist.span();
    let lag_lo = (min_counts.floor().max(0.0) as u64).max(MIN_LAG_COUNTS);
    let lag_hi = (max_counts.ceil().max(0.0) as u64).min(span.saturating_add(1));
    if lag_lo > lag_hi {
        return None;
    }
    // The edges' energy: R(0) less its expectation under counting noise alone, the sum of the
    // differences' variances (each sample's bin enters two differences).
    let noise_energy = 2.0 * samples.len() as f64;
    let edge_energy = hist.diff_acf(0) - noise_energy;
    if edge_energy <= 0.0 {
        return None;
    }
    // R at lag_lo - 1 ..= lag_hi + 1, so that every candidate has both neighbours.
    let r: Vec<f64> = (lag_lo - 1..=lag_hi.saturating_add(1))
        .map(|l| hist.diff_acf(l))
        .collect();
    let mut minima: Vec<(u64, Minimum)> = Vec::new();
    for (i, w) in r.windows(3).enumerate() {
        let (a, b, c) = (w[0], w[1], w[2]);
        if !(b < 0.0 && b <= a && b <= c) {
            continue;
        }
        let lag = lag_lo + i as u64;
        // Vertex of the parabola through the three lags; within half a lag of the middle one
        // because the middle is the lowest.
        let curvature = a - 2.0 * b + c;
        let offset = if curvature > 0.0 {
            0.5 * (a - c) / curvature
        } else {
            0.0
        };
        let width_counts = lag as f64 + offset;
        if width_counts < min_counts || width_counts > max_counts {
            continue;
        }
        let sd = hist.diff_acf_noise_sd(lag);
        if sd <= 0.0 {
            continue;
        }
        minima.push((
            lag,
            Minimum {
                width_ns: width_counts * unit_ns,
                depth: -b / edge_energy,
                depth_sigmas: -b / sd,
            },
        ));
    }
    // Rank by the depth of R itself: every box adds -a² at its width whatever the noise there.
    let deeper = |x: &&(u64, Minimum), y: &&(u64, Minimum)| x.1.depth.total_cmp(&y.1.depth);
    let &(best_lag, best) = minima.iter().max_by(deeper)?;
    if best.depth_sigmas < MIN_DEPTH_SIGMAS {
        return None;
    }
    let runner_up = minima
        .iter()
        .filter(|(lag, _)| lag.abs_diff(best_lag) >= MIN_LAG_COUNTS)
        .max_by(deeper)
        .map(|&(_, m)| m);
    Some(BoxWidth {
        width_ns: best.width_ns,
        depth: best.depth,
        depth_sigmas: best.depth_sigmas,
        runner_up,
        edges,
    })
}

/// One nonzero difference between neighbouring bins.
struct Step {
    /// The position: the difference is `h[pos] - h[pos - 1]`.
    pos: u128,
    diff: f64,
    /// Its Poisson variance, `h[pos] + h[pos - 1]`.
    var: f64,
}

/// A histogram at one bin per count, holding only the occupied bins and the steps next to them.
struct Sparse {
    /// Occupied values, ascending, with their counts.
    bins: Vec<(u64, f64)>,
    /// Nonzero differences, by ascending position.
    steps: Vec<Step>,
}

impl Sparse {
    fn new(samples: &[u64]) -> Option<Self> {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let mut bins: Vec<(u64, f64)> = Vec::new();
        for v in sorted {
            match bins.last_mut() {
                Some((last, n)) if *last == v => *n += 1.0,
                _ => bins.push((v, 1.0)),
            }
        }
        if bins.is_empty() {
            return None;
        }
        let count = |x: u128| -> f64 {
            u64::try_from(x)
                .ok()
                .and_then(|x| bins.binary_search_by_key(&x, |b| b.0).ok())
                .map_or(0.0, |i| bins[i].1)
        };
        // Only the bins at an occupied value and just after it can differ from their left
        // neighbour. The positions come in ascending order, possibly repeated.
        let mut positions: Vec<u128> = bins
            .iter()
            .flat_map(|&(v, _)| [u128::from(v), u128::from(v) + 1])
            .collect();
        positions.dedup();
        let steps = positions
            .into_iter()
            .filter_map(|pos| {
                let (here, left) = (count(pos), pos.checked_sub(1).map_or(0.0, count));
                (here != left).then_some(Step {
                    pos,
                    diff: here - left,
                    var: here + left,
                })
            })
            .collect();
        Some(Self { bins, steps })
    }

    /// The distance from the lowest occupied value to the highest, in counts (the first and
    /// last steps are one further apart).
    fn span(&self) -> u64 {
        self.bins[self.bins.len() - 1].0 - self.bins[0].0
    }

    /// `R(lag) = sum_p d[p] d[p + lag]`.
    fn diff_acf(&self, lag: u64) -> f64 {
        let lag = u128::from(lag);
        let mut j = 0;
        let mut sum = 0.0;
        for s in &self.steps {
            let target = s.pos + lag;
            while j < self.steps.len() && self.steps[j].pos < target {
                j += 1;
            }
            if j == self.steps.len() {
                break;
            }
            if self.steps[j].pos == target {
                sum += s.diff * self.steps[j].diff;
            }
        }
        sum
    }

    /// `S(lag) = sum_p h[p] h[p + lag]`.
    fn hist_acf(&self, lag: u64) -> f64 {
        let mut j = 0;
        let mut sum = 0.0;
        for &(v, n) in &self.bins {
            let Some(target) = v.checked_add(lag) else {
                break;
            };
            while j < self.bins.len() && self.bins[j].0 < target {
                j += 1;
            }
            if j == self.bins.len() {
                break;
            }
            if self.bins[j].0 == target {
                sum += n * self.bins[j].1;
            }
        }
        sum
    }

    /// The standard deviation of `R(lag)` for `lag >= 2` under counting noise alone:
    /// `4 S(lag) + S(lag - 1) + S(lag + 1)` is its variance. `d[p]` has variance
    /// `h[p] + h[p - 1]` and covariance `-h[p]` with `d[p + 1]`; summing the covariances of the
    /// products `d[p] d[p + lag]` over all pairs (only equal and neighbouring `p` contribute
    /// once `lag >= 2`) gives that total.
    fn diff_acf_noise_sd(&self, lag: u64) -> f64 {
        let (below, above) = (self.hist_acf(lag - 1), self.hist_acf(lag.saturating_add(1)));
        (4.0 * self.hist_acf(lag) + below + above).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: f64 = 1e9 / 90.112e6; // seed 004's counter, 11.0977 ns

    #[test]
    fn degenerate_inputs_are_none() {
        assert_eq!(box_width(&[], UNIT, 40.0, 400.0), None);
        assert_eq!(box_width(&[7], UNIT, 40.0, 400.0), None);
        assert_eq!(box_width(&[7; 4400], UNIT, 40.0, 400.0), None);
        assert_eq!(box_width(&[0, u64::MAX], UNIT, 40.0, 400.0), None);
        assert_eq!(box_width(&[u64::MAX; 3], UNIT, 40.0, 400.0), None);
    }

    #[test]
    fn bad_parameters_are_none() {
        // A clean box 11 counts wide, so that only the parameters can fail.
        let s: Vec<u64> = (0..4400).map(|i| 1000 + i % 11).collect();
        assert!(box_width(&s, UNIT, 40.0, 400.0).is_some());
        assert_eq!(box_width(&s, 0.0, 40.0, 400.0), None);
        assert_eq!(box_width(&s, -UNIT, 40.0, 400.0), None);
        assert_eq!(box_width(&s, f64::NAN, 40.0, 400.0), None);
        assert_eq!(box_width(&s, UNIT, 400.0, 40.0), None);
        assert_eq!(box_width(&s, UNIT, f64::NAN, 400.0), None);
        assert_eq!(box_width(&s, UNIT, 40.0, f64::INFINITY), None);
        // A range wholly below the smallest lag.
        assert_eq!(box_width(&s, UNIT, 0.0, 2.0 * UNIT), None);
    }

    #[test]
    fn an_exact_box_gives_its_width() {
        // 400 samples in each of 11 bins: edges at 1000 and 1011, width 11 counts exactly.
        let s: Vec<u64> = (0..4400).map(|i| 1000 + i % 11).collect();
        let b = box_width(&s, UNIT, 40.0, 400.0).expect("a box");
        assert!((b.width_ns / UNIT - 11.0).abs() < 0.01, "{b:?}");
        assert_eq!(b.edges, 2);
        assert_eq!(b.runner_up, None, "one box has one negative lag");
    }

    #[test]
    fn fewer_than_two_edges_is_none() {
        // A triangle rising and falling by one sample per count: no difference stands out of
        // the counting noise.
        let s: Vec<u64> = (0..=40u64)
            .flat_map(|k| std::iter::repeat_n(1000 + k, 20 - k.abs_diff(20) as usize))
            .collect();
        assert_eq!(box_width(&s, UNIT, 40.0, 400.0), None);
        // One edge only: a ramp up to a cliff.
        let s: Vec<u64> = (0..=40u64)
            .flat_map(|k| std::iter::repeat_n(1000 + k, k as usize))
            .collect();
        assert_eq!(box_width(&s, UNIT, 40.0, 400.0), None);
    }

    #[test]
    fn a_box_wider_than_the_range_is_none() {
        // Edges 300 counts apart (3.3 us) and a search up to 400 ns: no minimum in range.
        let s: Vec<u64> = (0..4400).map(|i| 1000 + i % 300).collect();
        assert_eq!(box_width(&s, UNIT, 40.0, 400.0), None);
    }

    #[test]
    fn far_outliers_cost_nothing() {
        let mut s: Vec<u64> = (0..4400).map(|i| 1000 + i % 11).collect();
        s.push(u64::MAX);
        s.push(u64::MAX - 1);
        let b = box_width(&s, UNIT, 40.0, 400.0).expect("a box");
        assert!((b.width_ns / UNIT - 11.0).abs() < 0.01, "{b:?}");
    }
}
