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

use super::costs::SchedCosts;
use super::hrtimer::TimerStep;
use super::program::{Builder, Entry, Step};

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
        .push(super::cyclic::CyclicStep::Sample(thread))
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
