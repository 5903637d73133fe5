//! Task programs: the code of tasks besides the idle task, written in the step language as the
//! kernel's paths are.
//!
//! cyclictest (rt-tests, 2009, the version seed 003 ran) is one thread per CPU that loops:
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next)`, `clock_gettime(&now)`,
//! `diff = calcdiff(now, next)`, statistics, `next += interval`. Its latency is its own
//! arithmetic: the time it read after waking minus the time it asked to wake at. With no
//! catch-up of `next`, a thread that cannot run for a while reports a lag that grows by the
//! time it lost, and its `clock_nanosleep` calls for times already past return at once until
//! it has caught up (it never does, if it is starved for good: the lag then grows linearly and
//! the average is half the maximum).

use super::context::TaskId;
use super::costs::SchedCosts;
use super::hrtimer::{TimerId, TimerStep};
use super::program::{Builder, Entry, Step};
use crate::engine::{SimDuration, SimTime};

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

/// cyclictest's thread `thread` as a program: its loop, with the system calls' kernel paths
/// costed from the kernel file and its own user-space work between them (`loop_instructions`:
/// `calcdiff`, the statistics, the histogram update).
pub fn cyclictest(
    code: &mut super::program::Code,
    c: &SchedCosts,
    thread: u8,
    loop_instructions: u32,
) -> Entry {
    let half = c.syscall / 2;
    let mut b = Builder::new();
    // A new task starts with interrupts off (schedule_tail); it returns to user mode.
    b.push(Step::Sti);
    let top = b.here();
    // clock_nanosleep: sysenter, sys_clock_nanosleep -> hrtimer_nanosleep -> do_nanosleep, which
    // queues the sleeper and calls schedule() unless the time has passed.
    b.push(Step::Run(half + c.nanosleep));
    let sleep = b.here();
    b.push(TimerStep::Nanosleep { thread, skip: 0 })
        .push(Step::Block);
    let woken = b.here();
    b.patch(sleep, woken);
    // Back from schedule(): the rest of do_nanosleep, the syscall's exit to user mode; then
    // clock_gettime, a system call on i386 2.6.29 (the vDSO had no clock_gettime before 3.15),
    // which reads the clocksource; the reading is the sample. (The exit of one system call and
    // the entry of the next make one `syscall`.)
    b.push(Step::Run(c.syscall + c.clock_gettime))
        .push(Step::CyclicSample(thread))
        .push(Step::Run(c.syscall - half))
        // calcdiff, the statistics and the histogram update, `next += interval`.
        .push(Step::User(loop_instructions))
        .push(Step::Jump(top));
    code.add(format!("cyclictest thread {thread}"), b)
}

/// `hrtimer_wakeup`: the sleeper's callback wakes its task (`wake_up_process` ->
/// `try_to_wake_up`).
pub fn hrtimer_wakeup(code: &mut super::program::Code, c: &SchedCosts) -> Entry {
    code.add(
        "hrtimer_wakeup",
        vec![
            Step::Run(c.try_to_wake_up),
            TimerStep::WakeTask.into(),
            Step::Return(super::program::Operand::Const(0)),
        ]
        .into(),
    )
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
