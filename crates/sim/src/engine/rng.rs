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
