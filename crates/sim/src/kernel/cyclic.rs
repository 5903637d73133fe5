//! cyclictest's user-space state (rt-tests, 2009, the version seed 003 ran): each thread's
//! interval, the absolute time it asks to wake at next, and its loops. Its program is
//! `tasks.rs`'s; the hrtimer subsystem reads `next` when the thread sleeps
//! (`clock_nanosleep(TIMER_ABSTIME)`), and what it measures goes to the machine's probe.

use super::context::{TaskId, TimerId};
use super::ops::{After, Op};
use crate::engine::{SimDuration, SimTime};

/// cyclictest's own code in a program of the step language.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CyclicStep {
    /// The arithmetic after `clock_gettime`: the latency of thread `thread` is now minus the
    /// time it asked to wake at; then `next += interval` (2009's rt-tests: no catch-up, so a
    /// thread that falls behind reports a lag that grows). The sample goes to the probe.
    Sample(u8),
}

impl CyclicStep {
    /// Where the operation may go instead of the next step: nowhere.
    pub fn target_mut(&mut self) -> Option<&mut super::ops::Entry> {
        None
    }

    /// Interpret it on the threads' state at `now` (the core's time, ahead of the clock).
    #[inline]
    pub fn step(self, threads: &mut [CyclicThread], now: SimTime) -> After {
        match self {
            CyclicStep::Sample(thread) => {
                let ns = threads[usize::from(thread)].sample(now);
                After::Ask(Op::Sample { thread, ns })
            }
        }
    }
}

/// One cyclictest thread's state: its user-space variables. What it measures goes to the
/// machine's probe (`probes/cyclictest.rs`), which keeps its statistics.
#[derive(Clone, Debug)]
pub struct CyclicThread {
    pub task: TaskId,
    /// The hrtimer its `clock_nanosleep` sleeps on (`do_nanosleep`'s on-stack sleeper).
    pub timer: TimerId,
    /// `-i`: the interval.
    pub interval: SimDuration,
    /// The absolute time the thread asks to wake at next.
    pub next: SimTime,
    /// Loops completed (samples taken, warm-up included).
    pub loops: u64,
}

impl CyclicThread {
    pub fn new(task: TaskId, timer: TimerId, interval: SimDuration, first: SimTime) -> Self {
        CyclicThread {
            task,
            timer,
            interval,
            next: first,
            loops: 0,
        }
    }

    /// `clock_gettime` returned `now`: the latency, `now - next` in ns (cyclictest's own
    /// arithmetic; it truncates to whole microseconds when it prints); `next` moves on by one
    /// interval.
    pub fn sample(&mut self, now: SimTime) -> u64 {
        let ns = now.since_or_zero(self.next).as_ps() / 1000;
        self.loops += 1;
        self.next += self.interval;
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_now_minus_next_and_next_moves_on_by_one_interval_whatever_the_lag() {
        let us = |n: u64| SimDuration::from_ns(n * 1000);
        let mut t = CyclicThread::new(0, 0, us(500), SimTime::ZERO + us(500));
        assert_eq!(t.sample(SimTime::ZERO + us(505)), 5_000);
        assert_eq!(t.next, SimTime::ZERO + us(1000));
        // Starved for 2 ms: the lag is counted from the time asked, and `next` does not catch
        // up (2009's cyclictest), so the following loops report what is left of the lag.
        assert_eq!(t.sample(SimTime::ZERO + us(3000)), 2_000_000);
        assert_eq!(t.sample(SimTime::ZERO + us(3001)), 1_501_000);
        assert_eq!(t.next, SimTime::ZERO + us(2000));
        assert_eq!(t.loops, 3);
    }
}
