//! The box-width estimator on synthetic data only (see `crates/stats/src/boxwidth.rs`).
//!
//! Every dataset here is drawn from the model the estimator assumes, with the nuisances a real
//! run adds: atoms at continuous offsets (not on a lattice of the bus period), weights from
//! dominant to tiny, a contaminating exponential tail, jitter, and a counter read at a random
//! phase. Seeds are fixed, so every figure quoted in a comment is reproducible with
//! `cargo test -p irqlab-stats --test boxwidth -- --ignored --nocapture` (the study).

use irqlab_stats::boxwidth::{box_width, BoxWidth, MIN_DEPTH_SIGMAS};
use irqlab_stats::fence::step_period;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Seed 004's counter: 90.112 MHz, 11.0977 ns per count.
const UNIT_NS: f64 = 1e9 / 90.112e6;
/// Seed 004's run: 4,400 pulses.
const SAMPLES: usize = 4400;
/// The search range of seed 004's `pps-isa-quantum` row.
const MIN_NS: f64 = 40.0;
const MAX_NS: f64 = 400.0;
/// The quanta studied: PCICLK/3 = 90 ns, the ISA clock's 120 ns (8.33 MHz, PCICLK/4), 150 ns.
const PERIODS_NS: [f64; 3] = [90.0, 120.0, 150.0];
/// Datasets per period in the share tests (and the study).
const DATASETS: u64 = 200;
/// The first seed of the share tests; dataset `i` uses seed `FIRST_SEED + i`.
const FIRST_SEED: u64 = 1000;

/// A standard normal deviate (Box-Muller; `rand_distr` is not a dependency of this crate).
fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>();
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// One synthetic run of [`SAMPLES`] latencies in counts, and a description for failure
/// messages.
///
/// 1 to 12 atoms at uniform offsets over 0.5-4 µs after a base latency `C` of 3-4 µs, with
/// log-normal weights (σ = 1.2: typically one or two dominate and several are small). Each
/// sample is `C + X_i + U[0, T)`, or with probability 5-20% instead `C + t0 + Exp(τ) + U[0, T)`
/// (a tail of mean τ = 1-5 µs starting at t0 = 0-4 µs; it crosses the synchronisation too),
/// plus Gaussian jitter of σ = 0-8 ns, read as `floor(latency / unit + phase)` with the
/// counter's phase uniform (the counter runs freely against the pulse).
fn generate(period_ns: f64, seed: u64) -> (Vec<u64>, String) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let atoms = rng.gen_range(1..=12usize);
    let base_ns = rng.gen_range(3000.0..4000.0);
    let offsets_ns: Vec<f64> = (0..atoms).map(|_| rng.gen_range(500.0..4000.0)).collect();
    let weights: Vec<f64> = (0..atoms).map(|_| (1.2 * normal(&mut rng)).exp()).collect();
    let total: f64 = weights.iter().sum();
    let tail_share = rng.gen_range(0.05..0.20);
    let tail_mean_ns = rng.gen_range(1000.0..5000.0);
    let tail_start_ns = rng.gen_range(0.0..4000.0);
    let jitter_ns = rng.gen_range(0.0..8.0);
    let samples = (0..SAMPLES)
        .map(|_| {
            let path_ns = if rng.gen::<f64>() < tail_share {
                tail_start_ns - tail_mean_ns * (1.0 - rng.gen::<f64>()).ln()
            } else {
                let mut r = rng.gen::<f64>() * total;
                let mut i = 0;
                while i + 1 < atoms && r >= weights[i] {
                    r -= weights[i];
                    i += 1;
                }
                offsets_ns[i]
            };
            let ns =
                base_ns + path_ns + rng.gen::<f64>() * period_ns + jitter_ns * normal(&mut rng);
            (ns / UNIT_NS + rng.gen::<f64>()).floor() as u64
        })
        .collect();
    let desc = format!(
        "T={period_ns} seed={seed}: {atoms} atoms at {:?} ns with shares {:?}%, tail {:.0}% \
         of mean {tail_mean_ns:.0} ns, jitter {jitter_ns:.1} ns",
        offsets_ns.iter().map(|x| x.round()).collect::<Vec<_>>(),
        weights
            .iter()
            .map(|w| (100.0 * w / total).round())
            .collect::<Vec<_>>(),
        100.0 * tail_share,
    );
    (samples, desc)
}

/// Latencies of the given atoms `(offset_ns, samples)`, each a box `period_ns` wide, with the
/// counter's random phase and no tail.
fn boxes(period_ns: f64, atoms: &[(f64, usize)], seed: u64) -> Vec<u64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    atoms
        .iter()
        .flat_map(|&(x, n)| std::iter::repeat_n(x, n))
        .map(|x| ((4000.0 + x + rng.gen::<f64>() * period_ns) / UNIT_NS + rng.gen::<f64>()) as u64)
        .collect()
}

fn within(estimate_ns: Option<f64>, period_ns: f64, tolerance: f64) -> bool {
    estimate_ns.is_some_and(|e| (e - period_ns).abs() <= tolerance * period_ns)
}

/// For one period: the estimates of [`box_width`] and of the old `fence::step_period` on the
/// same [`DATASETS`] datasets.
fn estimates(
    period_ns: f64,
    first_seed: u64,
    datasets: u64,
) -> Vec<(Option<BoxWidth>, Option<f64>, String)> {
    (first_seed..first_seed + datasets)
        .map(|seed| {
            let (s, desc) = generate(period_ns, seed);
            let new = box_width(&s, UNIT_NS, MIN_NS, MAX_NS);
            let old = step_period(&s, UNIT_NS, MIN_NS, MAX_NS).map(|p| p.period_ns);
            (new, old, desc)
        })
        .collect()
}

fn share(hits: usize, of: usize) -> f64 {
    hits as f64 / of as f64
}

/// The claim: at least 95% of datasets within ±10% of the true period, for each period.
///
/// Measured (200 datasets each): 99.0% at 90 ns, 99.5% at 120 ns, 99.0% at 150 ns; on 1,000
/// held-out datasets (the study) 99.5%, 99.7% and 97.7%. The two misses at 90 ns are datasets in
/// which two atoms of similar weight sit 89-90 ns apart, so that their boxes join into one box
/// 180 ns wide (the module's "Failure mode"): the estimate is then 2T. The misses at 120 and
/// 150 ns are `None`: the right minimum, but shallower than `MIN_DEPTH_SIGMAS`. The old
/// `fence::step_period` on the same data: 70.0%, 70.5% and 76.0%. The project's criterion on
/// the seed is ">= 80% of >= 20 seeds within ±10%"; 95% here leaves room for the failure modes
/// described, not for a systematic error.
#[test]
fn nineteen_in_twenty_datasets_are_within_ten_percent() {
    for period_ns in PERIODS_NS {
        let est = estimates(period_ns, FIRST_SEED, DATASETS);
        let new_hits: Vec<&String> = est
            .iter()
            .filter(|e| !within(e.0.map(|b| b.width_ns), period_ns, 0.10))
            .map(|e| &e.2)
            .collect();
        let new_share = share(est.len() - new_hits.len(), est.len());
        let old_share = share(
            est.iter().filter(|e| within(e.1, period_ns, 0.10)).count(),
            est.len(),
        );
        assert!(
            new_share >= 0.95,
            "T = {period_ns} ns: {:.1}% within ±10%; misses: {new_hits:#?}",
            100.0 * new_share
        );
        // The old estimator is worse on the same data (the reason for the replacement).
        assert!(
            old_share < new_share,
            "T = {period_ns}: fence {old_share} against {new_share}"
        );
    }
}

/// The claim on precision: of all datasets, at least 90% are within ±4% of the true period
/// (measured: 97.0%, 96.5% and 97.5%; 5th-95th percentiles of the relative error -2.9% to
/// +2.7%), and the median error is within ±1% (no bias; measured -0.4%, +0.3%, 0.0%).
#[test]
fn estimates_are_precise_and_unbiased() {
    for period_ns in PERIODS_NS {
        let mut rel: Vec<f64> = estimates(period_ns, FIRST_SEED, DATASETS)
            .iter()
            .filter_map(|e| e.0.map(|b| b.width_ns / period_ns - 1.0))
            .collect();
        rel.sort_by(f64::total_cmp);
        let close = rel.iter().filter(|r| r.abs() <= 0.04).count();
        assert!(
            share(close, DATASETS as usize) >= 0.90,
            "T = {period_ns}: {close} of {DATASETS} within ±4%"
        );
        let median = rel[rel.len() / 2];
        assert!(
            median.abs() <= 0.01,
            "T = {period_ns}: median error {median}"
        );
    }
}

/// Atoms a non-whole number of periods apart put their edges off any lattice of T (at 2.5T
/// every edge is on the lattice of T/2); the box width is still T (measured: every case within
/// 1.5%). The old `fence::step_period` is within ±10% of T in 2 of these 18 cases and
/// otherwise returns a finer lattice that catches the atoms' edges too: T/2, T/3 or 0.56T
/// (0.86T and 1.1T once each).
#[test]
fn atom_spacing_is_not_mistaken_for_the_width() {
    for period_ns in PERIODS_NS {
        for spacing in [2.5, 1.7] {
            for weights in [[1000, 1000, 1000], [2000, 700, 300], [300, 1500, 1200]] {
                let d = spacing * period_ns;
                let atoms = [(0.0, weights[0]), (d, weights[1]), (2.0 * d, weights[2])];
                let s = boxes(period_ns, &atoms, 7);
                let b = box_width(&s, UNIT_NS, MIN_NS, MAX_NS);
                assert!(
                    within(b.map(|b| b.width_ns), period_ns, 0.03),
                    "T = {period_ns}, spacing {spacing}T, weights {weights:?}: {b:?}"
                );
            }
        }
    }
}

/// The answer lies in the search range or is `None`; a range around the width finds it.
#[test]
fn the_search_range_is_honoured() {
    let (s, _) = generate(120.0, 5);
    for (lo, hi) in [(40.0, 100.0), (130.0, 400.0), (200.0, 260.0), (40.0, 45.0)] {
        if let Some(b) = box_width(&s, UNIT_NS, lo, hi) {
            assert!(lo <= b.width_ns && b.width_ns <= hi, "{lo}-{hi}: {b:?}");
            assert!(b
                .runner_up
                .is_none_or(|r| lo <= r.width_ns && r.width_ns <= hi));
        }
    }
    let b = box_width(&s, UNIT_NS, 100.0, 140.0).expect("the width is in range");
    assert!(within(Some(b.width_ns), 120.0, 0.05), "{b:?}");
}

/// Two quanta of equal weight (90 ns boxes and 150 ns boxes) give two minima of comparable
/// depth, and the runner-up says so; a single quantum gives a clear winner. (Measured: 90 ns at
/// depth 0.33 with 152 ns at 0.11 as runner-up, a ratio of 0.34; the single quantum 121 ns at
/// 0.50 with a runner-up at 0.035, a ratio of 0.07. The runner-up of the tie has the larger
/// `depth_sigmas`, 65 against 27: the noise is larger inside the wider boxes' lags, which is
/// why minima are ranked and compared by `depth`.)
#[test]
fn the_runner_up_tells_a_clear_answer_from_a_tie() {
    let mut s = boxes(90.0, &[(0.0, 1100), (1000.0, 1100)], 11);
    s.extend(boxes(150.0, &[(2200.0, 1100), (3100.0, 1100)], 12));
    let b = box_width(&s, UNIT_NS, MIN_NS, MAX_NS).expect("boxes");
    let r = b.runner_up.expect("two widths, two minima");
    let widths = [b.width_ns.min(r.width_ns), b.width_ns.max(r.width_ns)];
    assert!(within(Some(widths[0]), 90.0, 0.05), "{b:?}");
    assert!(within(Some(widths[1]), 150.0, 0.05), "{b:?}");
    // Equal sample counts in boxes of different widths: heights in the ratio 150:90, so R's
    // depths (the heights squared) in the ratio (90/150)² = 0.36.
    assert!(r.depth > b.depth / 4.0, "{b:?}");

    let s = boxes(120.0, &[(0.0, 2000), (700.0, 1400), (1900.0, 1000)], 13);
    let b = box_width(&s, UNIT_NS, MIN_NS, MAX_NS).expect("boxes");
    assert!(within(Some(b.width_ns), 120.0, 0.05), "{b:?}");
    assert!(b.depth_sigmas > 20.0, "{b:?}");
    assert!(
        b.runner_up.is_none_or(|r| r.depth < 0.15 * b.depth),
        "{b:?}"
    );
}

/// A smooth distribution with no synchronisation in it: kind 0 a hump (the sum of two
/// exponentials), kind 1 an exponential with a hard onset (one real edge), kind 2 a Gaussian;
/// scale 0.3-5 µs.
fn smooth(seed: u64) -> Vec<u64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let scale_ns = rng.gen_range(300.0..5000.0);
    (0..SAMPLES)
        .map(|_| {
            let x = match seed % 3 {
                0 => -(1.0 - rng.gen::<f64>()).ln() - (1.0 - rng.gen::<f64>()).ln(),
                1 => -(1.0 - rng.gen::<f64>()).ln(),
                _ => 3.0 + normal(&mut rng),
            };
            ((4000.0 + scale_ns * x) / UNIT_NS + rng.gen::<f64>()) as u64
        })
        .collect()
}

/// Without any box there is no answer. Measured over these 600 datasets: 517 fail the edge or
/// energy tests, and the deepest minimum of the other 83 is 4.1 noise sds, under the
/// [`MIN_DEPTH_SIGMAS`] of 5; true boxes (study, 1,000 held-out datasets per period) reach less
/// than 5 in 0%, 0.2% and 1.9% of datasets at 90, 120 and 150 ns.
#[test]
fn smooth_distributions_give_none() {
    let answered: Vec<(u64, BoxWidth)> = (0..600u64)
        .filter_map(|seed| box_width(&smooth(seed), UNIT_NS, MIN_NS, MAX_NS).map(|b| (seed, b)))
        .collect();
    assert!(answered.is_empty(), "{answered:#?}");
}

/// Order statistics of a sorted slice, as 5/25/50/75/95% percentiles.
fn percentiles(sorted: &[f64]) -> [f64; 5] {
    [0.05, 0.25, 0.5, 0.75, 0.95].map(|p| sorted[((sorted.len() - 1) as f64 * p).round() as usize])
}

/// The synthetic study: prints, per period, the share within ±10%, the spread of the estimates,
/// the depths, and the old estimator's share, on the tests' 200 datasets and on 1,000 held-out
/// ones (seeds 5000-5999, used to choose nothing but [`MIN_DEPTH_SIGMAS`]). Not a test: run it
/// with `--ignored --nocapture`.
#[test]
#[ignore = "prints the study's figures"]
fn study() {
    for (first_seed, datasets, show_misses) in [(FIRST_SEED, DATASETS, true), (5000, 1000, false)] {
        println!("seeds {first_seed}-{}:", first_seed + datasets - 1);
        for period_ns in PERIODS_NS {
            let est = estimates(period_ns, first_seed, datasets);
            let n = est.len();
            let new_ok = est
                .iter()
                .filter(|e| within(e.0.map(|b| b.width_ns), period_ns, 0.10))
                .count();
            let old_ok = est.iter().filter(|e| within(e.1, period_ns, 0.10)).count();
            let none = est.iter().filter(|e| e.0.is_none()).count();
            let mut rel: Vec<f64> = est
                .iter()
                .filter_map(|e| e.0.map(|b| b.width_ns / period_ns - 1.0))
                .collect();
            rel.sort_by(f64::total_cmp);
            let hits: Vec<f64> = rel.iter().copied().filter(|r| r.abs() <= 0.1).collect();
            let mean = hits.iter().sum::<f64>() / hits.len() as f64;
            let sd = (hits.iter().map(|r| (r - mean).powi(2)).sum::<f64>()
                / (hits.len() - 1) as f64)
                .sqrt();
            let mut depths: Vec<f64> = est
                .iter()
                .filter_map(|e| e.0.map(|b| b.depth_sigmas))
                .collect();
            depths.sort_by(f64::total_cmp);
            let mut ratios: Vec<f64> = est
                .iter()
                .filter_map(|e| e.0)
                .map(|b| b.runner_up.map_or(0.0, |r| r.depth / b.depth))
                .collect();
            ratios.sort_by(f64::total_cmp);
            let mut old_rel: Vec<f64> = est
                .iter()
                .filter_map(|e| e.1.map(|p| p / period_ns - 1.0))
                .collect();
            old_rel.sort_by(f64::total_cmp);
            println!(
                "  T = {period_ns} ns: box_width {new_ok}/{n} within ±10% ({:.1}%), {none} None; \
                 relative error 5/25/50/75/95%: {:+.3?}; sd of the hits {sd:.4}; within ±4%: \
                 {:.1}%; depth min/median {:.1}/{:.1} sds (gate {MIN_DEPTH_SIGMAS}); runner-up/winner depth median/max \
                 {:.2}/{:.2}; fence::step_period {old_ok}/{n} ({:.1}%), relative error \
                 {:+.3?}",
                100.0 * share(new_ok, n),
                percentiles(&rel),
                100.0 * share(rel.iter().filter(|r| r.abs() <= 0.04).count(), n),
                depths[0],
                depths[depths.len() / 2],
                ratios[ratios.len() / 2],
                ratios[ratios.len() - 1],
                100.0 * share(old_ok, n),
                percentiles(&old_rel),
            );
            if show_misses {
                for (b, _, desc) in &est {
                    if !within(b.map(|b| b.width_ns), period_ns, 0.10) {
                        println!("    miss: {b:?}\n          {desc}");
                    }
                }
            }
        }
    }
}
