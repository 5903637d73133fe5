//! Per-component random streams (docs/model.md, point 2): each component draws from a
//! stream derived from the run seed and the component's stable name, so adding a component, or
//! changing how often one draws, never shifts another component's draws.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The random generator every component uses.
pub type Stream = Xoshiro256PlusPlus;

/// An exponentially distributed duration with this mean: the gap of a Poisson process
/// (inverse-CDF sampling; 1 - u is in (0, 1], so ln never sees 0).
pub fn exponential(
    rng: &mut Stream,
    mean: crate::engine::SimDuration,
) -> crate::engine::SimDuration {
    use rand::Rng;
    let u: f64 = rng.gen();
    crate::engine::SimDuration::from_ps((-(1.0 - u).ln() * mean.as_ps() as f64).round() as u64)
}

/// A right-skewed positive value: lognormal with this median and this standard deviation of its
/// logarithm (one standard normal draw from `rng`).
pub fn lognormal(rng: &mut Stream, median: f64, sigma: f64) -> f64 {
    use rand::Rng;
    let z: f64 = rng.sample(rand_distr::StandardNormal);
    median * (sigma * z).exp()
}

/// Binomial draws by inversion of the distribution's cumulative table, built once for its `n`
/// and `p`: one uniform and a binary search per draw.
///
/// For a distribution drawn millions of times with few distinct `(n, p)`: the cold-code model
/// draws the missed lines of every kernel block from a handful of block sizes and one cold
/// fraction per workload phase. `rand_distr::Binomial` works out BTPE's constants and takes
/// logarithms at every draw (15-17% of a seed-004 run went to its `ln`). Inversion is exact up to
/// the table's rounding (a probability of about 1e-16 per entry); the test
/// `binomial_table_agrees_with_rand_distr` holds the two methods' draws to the same distribution.
#[derive(Clone, Debug)]
pub struct BinomialTable {
    /// `cdf[k]` = P(X <= k), for k in 0..=n; the last entry is exactly 1.
    cdf: Vec<f64>,
}

impl BinomialTable {
    /// The table of Binomial(`n`, `p`), `p` in [0, 1].
    pub fn new(n: u64, p: f64) -> Self {
        assert!((0.0..=1.0).contains(&p), "a probability, not {p}");
        let len = usize::try_from(n).expect("n fits the address space") + 1;
        if p == 0.0 || p == 1.0 {
            // Every draw is 0 (or n): the whole mass at one end.
            let mut cdf = vec![if p == 0.0 { 1.0 } else { 0.0 }; len];
            cdf[len - 1] = 1.0;
            return BinomialTable { cdf };
        }
        // The probabilities in logarithms, by the recurrence P(k + 1) = P(k) (n - k) / (k + 1)
        // p / q from P(0) = q^n (in logarithms no term underflows, whatever n), then scaled by
        // the largest before leaving them and normalised.
        let (ln_q, ln_ratio) = ((-p).ln_1p(), p.ln() - (-p).ln_1p());
        let mut ln_pmf = Vec::with_capacity(len);
        let mut l = n as f64 * ln_q;
        ln_pmf.push(l);
        for k in 0..n {
            l += ((n - k) as f64 / (k + 1) as f64).ln() + ln_ratio;
            ln_pmf.push(l);
        }
        let top = ln_pmf.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut cdf: Vec<f64> = ln_pmf
            .iter()
            .scan(0.0, |sum, &l| {
                *sum += (l - top).exp();
                Some(*sum)
            })
            .collect();
        let total = cdf[len - 1];
        cdf.iter_mut().for_each(|c| *c /= total);
        cdf[len - 1] = 1.0;
        BinomialTable { cdf }
    }

    /// One draw: the smallest k with u < P(X <= k), for u uniform in [0, 1).
    #[inline]
    pub fn sample(&self, rng: &mut Stream) -> u64 {
        use rand::Rng;
        let u: f64 = rng.gen();
        let k = self.cdf.partition_point(|&c| c <= u);
        // u < 1 = cdf[n], so k <= n; the clamp only guards the type.
        k.min(self.cdf.len() - 1) as u64
    }
}

/// Hands out independent streams for one run seed.
#[derive(Clone, Copy, Debug)]
pub struct RngStreams {
    seed: u64,
}

impl RngStreams {
    pub fn new(seed: u64) -> Self {
        RngStreams { seed }
    }

    /// The stream for the component called `name` (e.g. `"device.exerciser0"`).
    pub fn stream(&self, name: &str) -> Stream {
        // FNV-1a of the name, then SplitMix64 of (seed, name hash): a stable derivation that does
        // not depend on std's randomized hasher or on the Rust version.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.as_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Stream::seed_from_u64(splitmix64(self.seed ^ splitmix64(h)))
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// Pearson's chi-square of two samples' counts over the values both reach, cells of fewer
    /// than 20 expected draws pooled; returns (statistic, degrees of freedom).
    fn two_sample_chi_square(a: &[u64], b: &[u64]) -> (f64, usize) {
        let top = a.iter().chain(b).copied().max().unwrap_or(0) as usize;
        let (mut ca, mut cb) = (vec![0f64; top + 1], vec![0f64; top + 1]);
        a.iter().for_each(|&x| ca[x as usize] += 1.0);
        b.iter().for_each(|&x| cb[x as usize] += 1.0);
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let (mut stat, mut cells) = (0.0, 0usize);
        let (mut pa, mut pb) = (0.0, 0.0);
        for k in 0..=top {
            pa += ca[k];
            pb += cb[k];
            let pooled = pa + pb;
            if pooled * na.min(nb) / (na + nb) < 20.0 && k < top {
                continue;
            }
            let (ea, eb) = (pooled * na / (na + nb), pooled * nb / (na + nb));
            if ea > 0.0 {
                stat += (pa - ea).powi(2) / ea + (pb - eb).powi(2) / eb;
                cells += 1;
            }
            (pa, pb) = (0.0, 0.0);
        }
        (stat, cells.saturating_sub(1))
    }

    #[test]
    fn binomial_table_agrees_with_rand_distr() {
        // The cold-code model's shapes: a short block at a small cold fraction (rand_distr's
        // inversion, BINV), long blocks at large ones (its BTPE), and a mean near BTPE's
        // threshold of 10.
        for (n, p) in [
            (3u64, 0.05),
            (19, 0.3),
            (38, 0.3),
            (94, 0.6),
            (250, 0.3),
            (750, 0.45),
        ] {
            let draws = 200_000;
            let table = BinomialTable::new(n, p);
            let mut rng = RngStreams::new(11).stream("table");
            let ours: Vec<u64> = (0..draws).map(|_| table.sample(&mut rng)).collect();
            let binomial = rand_distr::Binomial::new(n, p).unwrap();
            let mut rng = RngStreams::new(12).stream("rand_distr");
            let theirs: Vec<u64> = (0..draws).map(|_| rng.sample(binomial)).collect();
            // The mean within 4.5 standard errors of the difference of two means of draws
            // whose variance is n p q each.
            let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
            let se = (2.0 * n as f64 * p * (1.0 - p) / draws as f64).sqrt();
            assert!(
                (mean(&ours) - mean(&theirs)).abs() < 4.5 * se,
                "B({n}, {p}): means {} and {}",
                mean(&ours),
                mean(&theirs)
            );
            assert!((mean(&ours) - n as f64 * p).abs() < 4.5 * se);
            // The whole distribution: chi-square below its 0.9999 quantile (Wilson-Hilferty).
            let (stat, df) = two_sample_chi_square(&ours, &theirs);
            let k = df as f64;
            let z = 3.719; // the standard normal's 0.9999 quantile
            let limit = k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3);
            assert!(stat < limit, "B({n}, {p}): chi-square {stat:.1} on {df} df");
            assert!(ours.iter().all(|&x| x <= n));
        }
    }

    #[test]
    fn binomial_table_ends() {
        let mut rng = RngStreams::new(1).stream("x");
        assert!((0..100).all(|_| BinomialTable::new(7, 0.0).sample(&mut rng) == 0));
        assert!((0..100).all(|_| BinomialTable::new(7, 1.0).sample(&mut rng) == 7));
        assert!((0..100).all(|_| BinomialTable::new(0, 0.4).sample(&mut rng) == 0));
        // A long block at a high cold fraction: q^n underflows f64 (0.4^1000 ~ 1e-398), the
        // table in logarithms does not, and the draws sit around n p.
        let t = BinomialTable::new(1_000, 0.6);
        let mean = (0..10_000).map(|_| t.sample(&mut rng)).sum::<u64>() as f64 / 10_000.0;
        assert!((mean - 600.0).abs() < 2.0, "{mean}");
    }

    #[test]
    fn same_seed_and_name_give_the_same_draws() {
        let a: Vec<u64> = (0..8)
            .map({
                let mut s = RngStreams::new(7).stream("x");
                move |_| s.gen()
            })
            .collect();
        let b: Vec<u64> = (0..8)
            .map({
                let mut s = RngStreams::new(7).stream("x");
                move |_| s.gen()
            })
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn streams_are_independent_of_each_other_and_of_the_seed() {
        let r = RngStreams::new(7);
        let x: u64 = r.stream("device.a").gen();
        let y: u64 = r.stream("device.b").gen();
        let z: u64 = RngStreams::new(8).stream("device.a").gen();
        assert_ne!(x, y);
        assert_ne!(x, z);
    }
}
