//! The spacing of a histogram's "fence posts" (seed 004, Fig. 3).
//!
//! A latency that passes through a bus synchronised to a clock is quantised by that clock: the
//! wait for the next edge is uniform over one period, so each distinct path through the bus
//! becomes a flat-topped block exactly one period wide, and blocks of paths that differ by whole
//! bus cycles sit side by side. The histogram is then a row of boards whose edges lie on one
//! lattice, and the lattice's period is the bus clock's. This module finds that period from the
//! samples alone, with no knowledge of what produced them.
//!
//! Method: histogram the samples at the instrument's resolution (one bin per count), keep the
//! steps between adjacent bins that stand out of the counting noise (more than
//! [`NOISE_SIGMAS`] standard deviations of the difference of two Poisson counts), and for each
//! candidate period `T` and phase find the share of the step weight that falls on the lattice
//! `phase + k·T` (within about half a bin). A finer lattice always catches at least as much, so
//! candidates are ranked by the share caught minus the fraction of the axis the lattice's
//! windows cover (what a lattice would catch by chance). Periods next to the winner that catch
//! the same edges explain them as well; the period reported is the centre of that run. `kappa`
//! is the winner's agreement above chance, `(caught - covered) / (1 - covered)`.

/// Steps smaller than this many standard deviations of counting noise are not edges.
pub const NOISE_SIGMAS: f64 = 3.0;

/// The lattice found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepPeriod {
    /// The period, in the samples' unit times `unit_ns`.
    pub period_ns: f64,
    /// Agreement above chance, 0 (none) to 1 (every edge on the lattice).
    pub kappa: f64,
    /// How many significant edges the histogram has.
    pub edges: usize,
}

/// Find the period of the step edges of the histogram of `samples` (integers in instrument
/// counts, `unit_ns` nanoseconds each), searching `min_ns..=max_ns`. `None` if the histogram has
/// fewer than two significant edges.
pub fn step_period(samples: &[u64], unit_ns: f64, min_ns: f64, max_ns: f64) -> Option<StepPeriod> {
    let lo = *samples.iter().min()?;
    let hi = *samples.iter().max()?;
    let bins = usize::try_from(hi - lo + 1).ok()?;
    let mut h = vec![0u64; bins + 2];
    for &s in samples {
        h[usize::try_from(s - lo).ok()? + 1] += 1;
    }
    // Edge j lies between bins j and j+1 (in count units from lo - 1).
    let edges: Vec<(f64, f64)> = h
        .windows(2)
        .enumerate()
        .filter_map(|(j, w)| {
            let (a, b) = (w[0] as f64, w[1] as f64);
            let excess = (b - a).abs() - NOISE_SIGMAS * (a + b).sqrt();
            (excess > 0.0).then_some((j as f64 + 0.5, excess))
        })
        .collect();
    if edges.len() < 2 {
        return None;
    }
    let total: f64 = edges.iter().map(|e| e.1).sum();
    // Candidate periods in counts, a tenth of a count apart; phases a quarter count apart.
    let (tmin, tmax) = (min_ns / unit_ns, max_ns / unit_ns);
    // An edge between two bins is known to within half a bin either side.
    let window = 0.6;
    // For each candidate: the best phase's caught share, and that share above chance.
    let mut scores: Vec<(f64, f64, f64)> = Vec::new();
    let mut t = tmin;
    while t <= tmax {
        let covered = (2.0 * window / t).min(1.0);
        let mut caught_best = 0.0f64;
        let mut phase = 0.0;
        while phase < t {
            let caught: f64 = edges
                .iter()
                .filter(|(x, _)| {
                    let r = (x - phase).rem_euclid(t);
                    r <= window || t - r <= window
                })
                .map(|e| e.1)
                .sum();
            caught_best = caught_best.max(caught / total);
            phase += 0.25;
        }
        scores.push((t, caught_best, caught_best - covered));
        t += 0.1;
    }
    let best = scores.iter().copied().max_by(|a, b| a.2.total_cmp(&b.2))?;
    // Every period near the best that catches the same edges explains them equally well: report
    // the centre of that run of candidates (the best one alone sits at its upper end, where the
    // windows cover least).
    let i = scores.iter().position(|s| s.0 == best.0)?;
    let same = |s: &(f64, f64, f64)| s.1 >= best.1 - 1e-9;
    let mut first = i;
    while first > 0 && same(&scores[first - 1]) {
        first -= 1;
    }
    let mut last = i;
    while last + 1 < scores.len() && same(&scores[last + 1]) {
        last += 1;
    }
    let period = (scores[first].0 + scores[last].0) / 2.0;
    let covered = (2.0 * window / period).min(1.0);
    let kappa = if covered < 1.0 {
        (best.1 - covered) / (1.0 - covered)
    } else {
        0.0
    };
    Some(StepPeriod {
        period_ns: period * unit_ns,
        kappa,
        edges: edges.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const UNIT: f64 = 1e9 / 90.112e6; // seed 004's xrpu counter, 11.1 ns

    /// Latencies of paths `k` bus periods long, each starting at a uniform phase of the bus
    /// clock, read by a counter of `UNIT` resolution at a random phase of its own.
    fn synchronised(period_ns: f64, ks: &[(u32, usize)], seed: u64) -> Vec<u64> {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut v = Vec::new();
        for &(k, n) in ks {
            for _ in 0..n {
                let lat = 4000.0 + f64::from(k) * period_ns + rng.gen::<f64>() * period_ns;
                let phase: f64 = rng.gen();
                v.push(((lat / UNIT) + phase).floor() as u64);
            }
        }
        v
    }

    #[test]
    fn finds_the_bus_period_of_a_row_of_blocks() {
        let s = synchronised(
            120.0,
            &[(0, 2500), (1, 900), (2, 600), (4, 300), (5, 100)],
            1,
        );
        let p = step_period(&s, UNIT, 40.0, 400.0).expect("edges");
        assert!((p.period_ns - 120.0).abs() < 6.0, "{p:?}");
        assert!(p.kappa > 0.5, "{p:?}");
    }

    #[test]
    fn a_single_block_gives_its_width() {
        let s = synchronised(120.0, &[(0, 400)], 2);
        let p = step_period(&s, UNIT, 40.0, 400.0).expect("edges");
        assert!((p.period_ns - 120.0).abs() < 12.0, "{p:?}");
    }

    #[test]
    fn another_clock_gives_another_period() {
        // A 30 ns (PCI) quantum is not mistaken for 120 ns.
        let s = synchronised(30.0, &[(0, 1500), (2, 1500), (5, 1500)], 3);
        let p = step_period(&s, UNIT, 20.0, 400.0).expect("edges");
        assert!(p.period_ns < 100.0, "{p:?}");
    }

    #[test]
    fn a_smooth_distribution_has_no_lattice() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
        // Exponential tail, no quantum: either no edges or a weak score.
        let s: Vec<u64> = (0..4400)
            .map(|_| ((4000.0 - 2000.0 * (1.0 - rng.gen::<f64>()).ln()) / UNIT) as u64)
            .collect();
        if let Some(p) = step_period(&s, UNIT, 40.0, 400.0) {
            assert!(p.kappa < 0.5, "{p:?}");
        }
    }

    #[test]
    fn too_few_samples_is_none() {
        assert_eq!(step_period(&[], UNIT, 40.0, 400.0), None);
        assert_eq!(step_period(&[5, 5], UNIT, 40.0, 400.0), None);
    }
}
