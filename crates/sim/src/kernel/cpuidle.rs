//! cpuidle: the idle states a core can enter and the governor that picks one each time the CPU
//! goes idle (Linux `drivers/cpuidle/governors/menu.c`).
//!
//! Each state has two kinds of numbers. The kernel's table (`exit_latency`, `target_residency`:
//! `intel_idle`'s per-model tables) is what the governor decides with; the hardware's wake time
//! (`wake`) is what an interrupt actually waits for while the core leaves the state. The table is
//! a conservative upper bound, so the two differ, and the model keeps them apart.
//!
//! The governor follows menu's logic of Linux 5.x-6.5 (without the iowait buckets): the time to
//! the next timer event, scaled by a correction factor learned per decade of that time (how long
//! idle periods really lasted against the timer), and the typical interval of the last eight idle
//! periods (`get_typical_interval`, outliers discarded); the smaller is the prediction. The
//! deepest state whose target residency fits the prediction and whose exit latency fits the
//! latency limit is chosen.

use crate::engine::{SimDuration, SimTime};

/// One idle state.
#[derive(Clone, Debug)]
pub struct IdleState {
    pub name: String,
    /// The kernel's exit latency (the governor compares it with the latency limit).
    pub exit_latency: SimDuration,
    /// The kernel's target residency: the shortest idle period worth entering the state for.
    pub target_residency: SimDuration,
    /// The hardware's time to leave the state when an interrupt arrives: the median, when
    /// `wake_sigma` spreads it.
    pub wake: SimDuration,
    /// The spread of the wake time from one exit to the next: each exit takes a time drawn from
    /// a lognormal with median `wake` and this standard deviation of its logarithm, never more
    /// than the kernel's `exit_latency` (intel_idle's table values are measured worst cases).
    /// 0: every exit takes exactly `wake`.
    pub wake_sigma: f64,
    /// `poll_idle`: the core spins with interrupts enabled instead of entering a hardware state.
    pub polls: bool,
}

/// Number of past idle periods menu keeps (`INTERVALS`).
pub const INTERVALS: usize = 8;
/// menu.c: correction factors are fixed point with `RESOLUTION * DECAY` as 1.0, and each new
/// observation has weight 1/DECAY.
const RESOLUTION: u64 = 1024;
const DECAY: u64 = 8;
/// Buckets by the decade of the time to the next timer: <10 us, <100 us, <1 ms, <10 ms,
/// <100 ms, longer (menu.c `which_bucket` without its iowait half).
const BUCKETS: usize = 6;
/// menu.c MAX_INTERESTING: 50 ms.
const MAX_INTERESTING_US: u64 = 50_000;

/// The states, the governor's memory and what it chose.
#[derive(Clone, Debug)]
pub struct Cpuidle {
    pub states: Vec<IdleState>,
    /// PM QoS CPU latency limit (`/dev/cpu_dma_latency`); `None`: no limit.
    pub latency_limit: Option<SimDuration>,
    /// Past idle periods in microseconds, as menu stores them.
    intervals: [u32; INTERVALS],
    next_interval: usize,
    /// menu's `correction_factor[]`, and the bucket and timer distance of the current period.
    correction: [u64; BUCKETS],
    bucket: usize,
    next_timer_ns: u64,
    /// The state entered, and when.
    pub current: Option<(usize, SimTime)>,
    /// How often each state was entered.
    pub entered: Vec<u64>,
    /// The stream the spread wake times are drawn from (`cpuidle.cpuN`).
    pub rng: Option<crate::engine::Stream>,
}

impl Cpuidle {
    pub fn new(states: Vec<IdleState>, latency_limit: Option<SimDuration>) -> Self {
        let n = states.len();
        Cpuidle {
            states,
            latency_limit,
            // menu starts with an empty history: zero intervals give "no typical interval".
            intervals: [0; INTERVALS],
            next_interval: 0,
            correction: [RESOLUTION * DECAY; BUCKETS],
            bucket: 0,
            next_timer_ns: 0,
            current: None,
            entered: vec![0; n],
            rng: None,
        }
    }

    /// menu's `get_typical_interval`: the average of the recent idle periods if they are
    /// consistent (standard deviation at most 20 us, or under a sixth of the average), after
    /// discarding the largest ones while three quarters remain; `None` otherwise, or when no
    /// period was shorter than `predicted_us` (6.4's shortcut: nothing shorter to predict).
    ///
    /// The arithmetic is 6.4's menu.c: `unsigned int` periods, `u64` sums, periods above
    /// `INT_MAX` discarded from the start, the variance test guarded against overflow. One
    /// difference: an all-zero history (no idle period yet) gives no prediction, as the later
    /// kernels' `if (!max)` has it; 6.4 would predict 0 and poll.
    pub fn typical_interval_us(&self, predicted_us: u64) -> Option<u64> {
        let mut thresh = i32::MAX as u32;
        loop {
            // One pass: the count, sum, sum of squares and extremes of the periods kept.
            let (mut n, mut sum, mut squares, mut min, mut max) =
                (0u64, 0u64, 0u64, u32::MAX, 0u32);
            for &v in &self.intervals {
                if v <= thresh {
                    n += 1;
                    sum += u64::from(v);
                    squares = squares.wrapping_add(u64::from(v) * u64::from(v));
                    min = min.min(v);
                    max = max.max(v);
                }
            }
            if max == 0 || u64::from(min) >= predicted_us {
                return None;
            }
            let avg = sum / n;
            // menu.c sums the squared deviations from the (truncated) average in a u64; the
            // same sum is sum(v^2) - 2 avg sum(v) + n avg^2, exactly, in integers. The
            // deviations of eight values in [0, 2^31) square to at most 8 * 2^60 = 2^63 in all:
            // the result fits menu's u64, so the terms, which may not, are taken modulo 2^64
            // (wrapping) and the sum is still exact (`the_one_pass_typical_interval_is_menus`
            // holds it to menu.c's two passes).
            let deviations = squares
                .wrapping_add(n.wrapping_mul(avg).wrapping_mul(avg))
                .wrapping_sub(avg.wrapping_mul(2).wrapping_mul(sum));
            let variance = deviations / n;
            if variance <= u64::MAX / 36
                && ((avg * avg > variance * 36 && n * 4 >= INTERVALS as u64 * 3) || variance <= 400)
            {
                return Some(avg);
            }
            if n * 4 <= INTERVALS as u64 * 3 {
                return None;
            }
            thresh = max - 1;
        }
    }

    /// Pick a state for an idle period starting at `now` with the next timer event `next_timer`
    /// away; remember it as entered.
    pub fn select(&mut self, now: SimTime, next_timer: Option<SimDuration>) -> usize {
        // No timer at all (a tickless model without one): menu's KTIME_MAX, in the last bucket.
        let timer_ns = next_timer.map_or(u64::MAX / 2, |d| d.as_ps() / 1_000);
        let timer_us = timer_ns / 1_000;
        self.next_timer_ns = timer_ns;
        self.bucket = match timer_us {
            0..10 => 0,
            10..100 => 1,
            100..1_000 => 2,
            1_000..10_000 => 3,
            10_000..100_000 => 4,
            _ => 5,
        };
        // menu.c: the timer in nanoseconds times the factor, rounded to the nearest
        // microsecond. A factor never exceeds RESOLUTION * DECAY, so the product overflows only
        // without a timer (u64::MAX / 2 ns), where the prediction is in effect unbounded (the
        // kernel's own KTIME_MAX product would wrap; the model does not copy that).
        let cf = self.correction[self.bucket];
        const SCALE: u64 = RESOLUTION * DECAY * 1_000;
        let corrected = timer_ns
            .checked_mul(cf)
            .map_or(timer_ns / SCALE * cf, |p| (p + SCALE / 2) / SCALE);
        let predicted_us = self
            .typical_interval_us(corrected)
            .map_or(corrected, |t| t.min(corrected));
        let mut chosen = 0;
        let predicted_ns = predicted_us.saturating_mul(1_000);
        for (i, s) in self.states.iter().enumerate() {
            let residency_ns = s.target_residency.as_ps() / 1_000;
            if residency_ns > predicted_ns {
                // menu.c: "Use a physical idle state, not busy polling, unless a timer is going
                // to trigger soon enough."
                if chosen == 0
                    && self.states[0].polls
                    && residency_ns <= timer_ns
                    && self.latency_limit.is_none_or(|l| s.exit_latency <= l)
                {
                    chosen = i;
                }
                break;
            }
            if self.latency_limit.is_some_and(|l| s.exit_latency > l) {
                break;
            }
            chosen = i;
        }
        self.entered[chosen] += 1;
        self.current = Some((chosen, now));
        chosen
    }

    /// The hardware wake time of the state the core is in: its `wake`, or a draw around it when
    /// the state's wake time is spread.
    pub fn wake_time(&mut self) -> SimDuration {
        let Some((i, _)) = self.current else {
            return SimDuration::ZERO;
        };
        let s = &self.states[i];
        match &mut self.rng {
            Some(rng) if s.wake_sigma > 0.0 => {
                let ps = crate::engine::lognormal(rng, s.wake.as_ps() as f64, s.wake_sigma);
                let worst = s.exit_latency.max(s.wake).as_ps() as f64;
                SimDuration::from_ps(ps.min(worst).round() as u64)
            }
            _ => s.wake,
        }
    }

    /// The core has left the state at `now`: learn from the idle period (menu_update): the
    /// residency less the state's exit latency, against the timer it expected.
    pub fn left(&mut self, now: SimTime) {
        if let Some((state, since)) = self.current.take() {
            // In nanoseconds, as menu_update works.
            let residency_ns = now.since(since).as_ps() / 1_000;
            let exit_ns = self.states[state].exit_latency.as_ps() / 1_000;
            let mut measured_ns = if residency_ns > 2 * exit_ns {
                residency_ns - exit_ns
            } else {
                residency_ns / 2
            };
            measured_ns = measured_ns.min(self.next_timer_ns);
            let cf = &mut self.correction[self.bucket];
            *cf -= *cf / DECAY;
            *cf += if self.next_timer_ns > 0 && measured_ns < MAX_INTERESTING_US * 1_000 {
                // div64_u64(RESOLUTION * measured_ns, next_timer_ns); measured_ns is below
                // MAX_INTERESTING here, so the product fits.
                RESOLUTION * measured_ns / self.next_timer_ns
            } else {
                RESOLUTION
            };
            // menu.c: "We don't want 0 as factor; we always want at least a tiny bit".
            *cf = (*cf).max(1);
            // ktime_to_us into menu's `unsigned int` intervals (the kernel truncates the high
            // bits; a period over 71 minutes is capped here instead).
            let measured_us = measured_ns / 1_000;
            self.intervals[self.next_interval] = u32::try_from(measured_us).unwrap_or(u32::MAX);
            self.next_interval = (self.next_interval + 1) % INTERVALS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: u64) -> SimDuration {
        SimDuration::from_ps(v * 1_000_000)
    }

    #[test]
    fn a_spread_wake_time_has_its_median_and_never_passes_the_worst_case() {
        let state = IdleState {
            name: "C1".into(),
            exit_latency: us(2),
            target_residency: us(2),
            wake: SimDuration::from_ns(1000),
            wake_sigma: 0.3,
            polls: false,
        };
        let mut ci = Cpuidle::new(vec![state], None);
        ci.rng = Some(crate::engine::RngStreams::new(5).stream("cpuidle.cpu0"));
        let mut draws: Vec<u64> = (0..20_001)
            .map(|_| {
                ci.current = Some((0, SimTime::ZERO));
                ci.wake_time().as_ps()
            })
            .collect();
        draws.sort_unstable();
        let median = draws[10_000] as f64;
        assert!((median / 1e6 - 1.0).abs() < 0.02, "median {median} ps");
        // ln(2) / 0.3 = 2.3 standard deviations: ~1% of draws reach the cap, none pass it.
        let capped = draws.iter().filter(|&&d| d == 2_000_000).count();
        assert!((100..=250).contains(&capped), "{capped} at the cap");
        assert_eq!(*draws.last().unwrap(), 2_000_000);
        assert!(draws[0] > 300_000);
        // Without a spread, no draw at all: the exact wake time.
        ci.states[0].wake_sigma = 0.0;
        ci.current = Some((0, SimTime::ZERO));
        assert_eq!(ci.wake_time(), SimDuration::from_ns(1000));
    }

    fn skl() -> Cpuidle {
        // intel_idle skl_cstates (drivers/idle/intel_idle.c): exit latency / target residency.
        let s = |name: &str, exit: u64, res: u64| IdleState {
            name: name.into(),
            exit_latency: us(exit),
            target_residency: us(res),
            wake: SimDuration::from_ps(exit * 500_000),
            wake_sigma: 0.0,
            polls: name == "POLL",
        };
        Cpuidle::new(
            vec![
                s("POLL", 0, 0),
                s("C1", 2, 2),
                s("C1E", 10, 20),
                s("C6", 85, 200),
            ],
            None,
        )
    }

    #[test]
    fn without_history_the_next_timer_decides() {
        let mut c = skl();
        assert_eq!(c.select(SimTime::ZERO, Some(us(4000))), 3);
        assert_eq!(c.select(SimTime::ZERO, Some(us(15))), 1);
        assert_eq!(c.select(SimTime::ZERO, Some(us(1))), 0);
        assert_eq!(c.entered, vec![1, 1, 0, 1]);
    }

    #[test]
    fn a_steady_short_interval_keeps_the_core_shallow_despite_a_far_timer() {
        let mut c = skl();
        let mut chosen = Vec::new();
        for i in 0..16 {
            chosen.push(c.select(SimTime::from_ps(i * 20_000_000), Some(us(4000))));
            c.left(SimTime::from_ps(i * 20_000_000 + 9_000_000));
        }
        // The first period goes deep (no history, a 4 ms timer); the 9 us periods then teach
        // both the typical interval (9 us less C1's 2 us exit latency) and the correction factor.
        assert_eq!(chosen[0], 3);
        assert_eq!(c.typical_interval_us(u64::MAX), Some(7));
        assert_eq!(chosen[15], 1, "C1 for 9 us: {chosen:?}");
    }

    #[test]
    fn outliers_are_discarded_and_scattered_history_gives_no_prediction() {
        let mut c = skl();
        c.intervals = [10, 10, 10, 10, 10, 10, 10, 5000];
        assert_eq!(c.typical_interval_us(u64::MAX), Some(10));
        // menu's shortcut: no period shorter than the timer's prediction, nothing to learn.
        assert_eq!(c.typical_interval_us(10), None);
        assert_eq!(c.typical_interval_us(11), Some(10));
        c.intervals = [1, 900, 40, 3000, 70, 2, 600, 5000];
        assert_eq!(c.typical_interval_us(u64::MAX), None);
    }

    #[test]
    fn the_timer_prediction_is_rounded_from_nanoseconds() {
        let mut c = skl();
        // 19.6 us with a fresh factor: menu rounds to 20 us, which C1E's 20 us residency fits;
        // truncating to whole microseconds first would give 19 and C1.
        assert_eq!(
            c.select(SimTime::ZERO, Some(SimDuration::from_ps(19_600_000))),
            2
        );
        assert_eq!(
            c.select(SimTime::ZERO, Some(SimDuration::from_ps(19_400_000))),
            1
        );
    }

    #[test]
    fn periods_above_int_max_are_discarded_like_menu() {
        let mut c = skl();
        c.intervals = [10, 10, 10, 10, 10, 10, 10, u32::MAX];
        assert_eq!(c.typical_interval_us(u64::MAX), Some(10));
        // The factor learns in nanoseconds: 7.5 us of a 10 us timer adds 768/1024, not 7/10.
        let mut c = skl();
        c.select(SimTime::ZERO, Some(us(10)));
        c.left(SimTime::from_ps(9_500_000)); // 9.5 us in C1 (exit latency 2 us): 7.5 us
        assert_eq!(c.correction[1], RESOLUTION * DECAY - RESOLUTION + 768);
        assert_eq!(c.intervals[0], 7);
    }

    /// `get_typical_interval` as menu.c writes it: a second pass sums the squared deviations.
    fn typical_interval_reference(intervals: &[u32; INTERVALS], predicted_us: u64) -> Option<u64> {
        let mut thresh = i32::MAX as u32;
        loop {
            let kept = || intervals.iter().copied().filter(|&v| v <= thresh);
            let n = kept().count() as u64;
            let (min, max) = (kept().min().unwrap_or(u32::MAX), kept().max().unwrap_or(0));
            if max == 0 || u64::from(min) >= predicted_us {
                return None;
            }
            let avg = kept().map(u64::from).sum::<u64>() / n;
            let variance = kept()
                .map(|v| u64::from(v).abs_diff(avg).pow(2))
                .sum::<u64>()
                / n;
            if variance <= u64::MAX / 36
                && ((avg * avg > variance * 36 && n * 4 >= INTERVALS as u64 * 3) || variance <= 400)
            {
                return Some(avg);
            }
            if n * 4 <= INTERVALS as u64 * 3 {
                return None;
            }
            thresh = max - 1;
        }
    }

    proptest::proptest! {
        #[test]
        fn the_one_pass_typical_interval_is_menus(
            // Short and steady, scattered, and huge (above INT_MAX) periods.
            intervals in proptest::array::uniform8(proptest::prop_oneof![
                0u32..50,
                0u32..100_000,
                proptest::num::u32::ANY,
            ]),
            predicted_us in proptest::prop_oneof![0u64..100, proptest::num::u64::ANY],
        ) {
            let mut c = skl();
            c.intervals = intervals;
            proptest::prop_assert_eq!(
                c.typical_interval_us(predicted_us),
                typical_interval_reference(&intervals, predicted_us)
            );
        }
    }

    #[test]
    fn the_latency_limit_caps_the_depth() {
        let mut c = skl();
        c.latency_limit = Some(us(10));
        assert_eq!(c.select(SimTime::ZERO, Some(us(4000))), 2);
        c.latency_limit = Some(SimDuration::ZERO);
        assert_eq!(c.select(SimTime::ZERO, Some(us(4000))), 0);
    }
}
