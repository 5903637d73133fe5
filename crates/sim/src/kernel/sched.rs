//! Tasks and the scheduler's skeleton.
//!
//! A task owns a kernel stack: the frames of the kernel code it is running, with the interrupts
//! that nest on top of them (an interrupt runs on the stack of whatever task it interrupted, as on
//! i386 Linux with 8K stacks and, with 4K stacks, on a per-CPU IRQ stack switched to from it).
//! The task running on a core has its context loaded in the core ([`TaskContext`]); a context
//! switch swaps the core's context with the next task's saved one.
//!
//! Each core has a run queue. The scheduler picks by class, as Linux's `pick_next_task` walks its
//! classes: real-time (SCHED_FIFO/RR, the highest priority first, first come first served within
//! one), then fair (SCHED_OTHER), then the idle task. When a woken task may take the core from the
//! running one is the kernel's preemption model ([`Preemption`](super::context::Preemption)).
//!
//! Seeds 000 and 002 run the idle task alone; seed 003's kernels (threaded handlers, ksoftirqd,
//! cyclictest) add the others.

pub use super::context::TaskId;
use super::context::{PreemptCount, SchedClass};
use super::ops::{After, Entry, Frame, Op};
use crate::engine::{SimDuration, SimTime};

/// The scheduler's operations in a program of the step language besides blocking and the
/// preemption points (core steps): what the tick and the real-time period timer do to it,
/// carried out on the machine's [`Scheduler`] when the frame hands them over.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SchedStep {
    /// The scheduler's part of the tick (`scheduler_tick` -> `task_tick_rt` ->
    /// `update_curr_rt`): charge the running real-time task and throttle its class past its
    /// bandwidth.
    Tick,
    /// `sched_rt_period_timer`'s work (`do_sched_rt_period_timer`): give one period's
    /// real-time runtime back and unthrottle.
    RtPeriod,
}

impl SchedStep {
    /// Where the operation may go instead of the next step: nowhere.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        None
    }

    /// The frame hands the operation to the core, which holds the scheduler.
    #[inline]
    pub fn step(self) -> After {
        After::Ask(match self {
            SchedStep::Tick => Op::SchedTick,
            SchedStep::RtPeriod => Op::RtPeriod,
        })
    }
}

/// A task's state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// On a core.
    Running,
    /// On a run queue, waiting for a core.
    Runnable,
    /// Waiting for an event (a timer, a wake-up from an interrupt handler).
    Sleeping,
}

/// What a core holds of the task it runs: its kernel stack, the flags and the preempt count. A
/// context switch saves it into the task and loads the next task's.
#[derive(Clone, Debug, Default)]
pub struct TaskContext {
    /// Function activations, innermost last; interrupts nest on top.
    pub stack: Vec<Frame>,
    /// Ops that must happen after the compute time accumulated before them, each with the stack
    /// depth of the frame that produced it (an interrupt taken in between runs first).
    pub parked: Vec<(usize, Op)>,
    /// The value of the last completed read, or the last callee's return value.
    pub value: u32,
    /// The interrupted code's `value`, one per interrupt frame on the stack: the interrupt saves
    /// the registers it holds (`pushal`) and IRET's path restores them.
    pub saved_values: Vec<u32>,
    /// EFLAGS.IF.
    pub irqs_enabled: bool,
    pub preempt: PreemptCount,
}

impl TaskContext {
    /// A task about to run `entry` (its first frame), with interrupts off as a new task starts
    /// in `schedule_tail`.
    pub fn starting(entry: Frame) -> TaskContext {
        TaskContext {
            stack: vec![entry],
            ..TaskContext::default()
        }
    }
}

/// A task.
#[derive(Clone, Debug)]
pub struct Task {
    pub name: String,
    pub class: SchedClass,
    pub state: TaskState,
    /// The core whose run queue it is on (or last ran on).
    pub core: u8,
    /// Its saved context, while it is not running.
    pub context: TaskContext,
    /// Woken while still running (or preempted), before the `schedule()` of a sleep it was
    /// about to make: a
    /// task sets itself TASK_INTERRUPTIBLE before it queues what will wake it, so such a wake
    /// makes it TASK_RUNNING again and its `schedule()` does not sleep.
    pub wake_pending: bool,
}

/// One core's run queue: the runnable tasks besides the one running, in the order they became
/// runnable, each with its rank (a task's class never changes, so it is worked out once, when
/// the task is queued).
#[derive(Clone, Debug, Default)]
pub struct RunQueue {
    runnable: Vec<(Rank, TaskId)>,
}

/// Which class and priority goes first: real-time by priority, then fair, then idle; one
/// number, so that a pick compares numbers. Real-time ranks are [`RT_RANK`] and above.
type Rank = u16;
const RT_RANK: Rank = 2 << 8;

fn rank(class: SchedClass) -> Rank {
    match class {
        SchedClass::Fifo { priority } => RT_RANK | Rank::from(priority),
        SchedClass::Normal { .. } => 1 << 8,
        SchedClass::Idle => 0,
    }
}

impl RunQueue {
    pub fn enqueue(&mut self, t: TaskId, class: SchedClass) {
        debug_assert!(!self.runnable.iter().any(|&(_, x)| x == t));
        self.runnable.push((rank(class), t));
    }

    /// [`RunQueue::pick`]'s task, with its rank.
    fn pick_ranked(&self, rt_throttled: bool) -> Option<(Rank, TaskId)> {
        let mut best: Option<(Rank, TaskId)> = None;
        for &(r, t) in &self.runnable {
            if rt_throttled && r >= RT_RANK {
                continue;
            }
            // Strictly better only: among equals the first queued stays.
            if best.is_none_or(|(b, _)| r > b) {
                best = Some((r, t));
            }
        }
        best
    }

    /// The task the scheduler picks: the best class and priority, the longest waiting among
    /// equals. It stays queued until [`RunQueue::take`]. `rt_throttled`: the real-time class
    /// has used its bandwidth (`pick_next_task_rt` returns NULL while `rt_rq_throttled`), so
    /// only the fair and idle classes are picked.
    pub fn pick(&self, rt_throttled: bool) -> Option<TaskId> {
        self.pick_ranked(rt_throttled).map(|(_, t)| t)
    }

    /// A running task taken off the core by a better one: it stays first among its equals
    /// (sched-rt.c requeues a preempted SCHED_FIFO task at the head of its priority's list).
    pub fn requeue_preempted(&mut self, t: TaskId, class: SchedClass) {
        debug_assert!(!self.runnable.iter().any(|&(_, x)| x == t));
        self.runnable.insert(0, (rank(class), t));
    }

    pub fn take(&mut self, t: TaskId) {
        self.runnable.retain(|&(_, x)| x != t);
    }
}

/// One core's `rt_rq` bandwidth state.
#[derive(Copy, Clone, Debug, Default)]
pub struct RtRq {
    /// `rt_rq->rt_time`: real-time execution charged and not yet given back by the period
    /// timer.
    pub time: SimDuration,
    /// `rt_rq->rt_throttled`.
    pub throttled: bool,
    /// `curr->se.exec_start`: since when the running task's time is not yet charged.
    pub exec_start: SimTime,
    /// When the current throttle began.
    pub throttled_at: SimTime,
}

/// Every task, each core's run queue and the task each core runs.
#[derive(Clone, Debug)]
pub struct Scheduler {
    pub tasks: Vec<Task>,
    pub queues: Vec<RunQueue>,
    /// The running task of each core.
    pub current: Vec<TaskId>,
    /// Context switches made.
    pub switches: u64,
    /// Real-time bandwidth (kernel/sched.c and kernel/sched_rt.c of 2.6.29, in every kernel
    /// since 2.6.25, the -rt patches included): `sysctl_sched_rt_runtime` of every period may
    /// go to SCHED_FIFO/RR tasks; past it the class is throttled until the period timer (an
    /// hrtimer of the kernel's, which holds the period) gives time back. `None`: unlimited
    /// (`sched_rt_runtime_us = -1`).
    pub rt_runtime: Option<SimDuration>,
    /// Each core's real-time run queue's bandwidth state.
    pub rt: Vec<RtRq>,
    /// Times the real-time class was throttled, and the time it spent throttled.
    pub rt_throttles: u64,
    pub rt_throttled_time: SimDuration,
}

impl Scheduler {
    /// One idle task per core, each running on its core (its context loaded there).
    pub fn new(cores: u8) -> Scheduler {
        let tasks = (0..cores)
            .map(|c| Task {
                name: format!("swapper/{c}"),
                class: SchedClass::Idle,
                state: TaskState::Running,
                core: c,
                // Its context lives in the core until it is switched out.
                context: TaskContext::default(),
                wake_pending: false,
            })
            .collect();
        Scheduler {
            tasks,
            queues: vec![RunQueue::default(); usize::from(cores)],
            current: (0..u16::from(cores)).collect(),
            switches: 0,
            rt_runtime: None,
            rt: vec![RtRq::default(); usize::from(cores)],
            rt_throttles: 0,
            rt_throttled_time: SimDuration::ZERO,
        }
    }

    /// `update_curr_rt` (kernel/sched_rt.c): charge the running task's time since it was last
    /// charged, at `now`, to its core's `rt_time` if it is a real-time task (the time of the
    /// interrupts it took included: 2.6.29 charges `rq->clock - exec_start`, and interrupt time
    /// is not taken out of it), then `sched_rt_runtime_exceeded`: past the runtime the class
    /// is throttled (and `resched_task(curr)`: [`Scheduler::need_resched`] says so from now).
    /// Called where the kernel calls it: at a context switch (`put_prev_task_rt`) and at the
    /// tick (`scheduler_tick` -> `task_tick_rt`).
    pub fn update_curr(&mut self, core: u8, now: SimTime) {
        let c = usize::from(core);
        let rt = &mut self.rt[c];
        let ran = now.since_or_zero(rt.exec_start);
        rt.exec_start = rt.exec_start.max(now);
        if !self.tasks[usize::from(self.current[c])].class.is_rt() {
            return;
        }
        let Some(runtime) = self.rt_runtime else {
            return;
        };
        rt.time += ran;
        if !rt.throttled && rt.time > runtime {
            rt.throttled = true;
            rt.throttled_at = now;
            self.rt_throttles += 1;
        }
    }

    /// `sched_rt_period_timer` -> `do_sched_rt_period_timer` at `now` on `core`: one period's
    /// runtime is given back (`rt_time -= min(rt_time, overrun * runtime)`, not a reset: a
    /// class that ran over keeps its debt) and a throttled class whose time is under the
    /// runtime again runs (`sched_rt_rq_enqueue`).
    pub fn rt_period(&mut self, core: u8, now: SimTime) {
        let Some(runtime) = self.rt_runtime else {
            return;
        };
        self.update_curr(core, now);
        let rt = &mut self.rt[usize::from(core)];
        rt.time = rt.time.saturating_sub(runtime);
        if rt.throttled && rt.time < runtime {
            rt.throttled = false;
            self.rt_throttled_time += now.since_or_zero(rt.throttled_at);
        }
    }

    /// A new task, runnable on `core`.
    pub fn spawn(&mut self, name: &str, class: SchedClass, core: u8, entry: Frame) -> TaskId {
        let id = self.tasks.len() as TaskId;
        self.tasks.push(Task {
            name: name.to_string(),
            class,
            state: TaskState::Runnable,
            core,
            context: TaskContext::starting(entry),
            wake_pending: false,
        });
        self.queues[usize::from(core)].enqueue(id, class);
        id
    }

    /// `try_to_wake_up`: a sleeping task becomes runnable on its CPU's queue (waking one that
    /// is runnable or running does nothing).
    pub fn wake(&mut self, t: TaskId) {
        let task = &mut self.tasks[usize::from(t)];
        match task.state {
            TaskState::Sleeping => {
                task.state = TaskState::Runnable;
                let on = usize::from(task.core);
                self.queues[on].enqueue(t, task.class);
            }
            // Preempted after setting itself sleeping, a task is still on the run queue:
            // the wake makes it TASK_RUNNING, and its `schedule()` returns at once too.
            TaskState::Running | TaskState::Runnable => task.wake_pending = true,
        }
    }

    /// Should `core` switch now: is a queued task of a better class or priority than the one
    /// running? (Whether it may, at this point of the running code, is the preemption model's.)
    /// A throttled real-time task must give the core up to whatever else is runnable.
    pub fn need_resched(&self, core: u8) -> bool {
        let c = usize::from(core);
        let running = self.tasks[usize::from(self.current[c])].class;
        let throttled = self.rt[c].throttled;
        let pick = self.queues[c].pick_ranked(throttled);
        if throttled && running.is_rt() {
            return pick.is_some();
        }
        pick.is_some_and(|(r, _)| r > rank(running))
    }

    /// Switch `core` to the task its queue picks, saving `loaded` (the core's context) into the
    /// task that ran and returning the next task's context to load. The task that ran goes back
    /// on the queue if it is still runnable. `None`: nothing else to run. `now`: when the
    /// switch is made, up to which the task that ran is charged (`put_prev_task`).
    pub fn switch(&mut self, core: u8, loaded: &mut TaskContext, now: SimTime) -> Option<TaskId> {
        let c = usize::from(core);
        // `schedule()`: `put_prev_task` charges the task that ran (and may throttle its
        // class) before `pick_next_task` looks.
        self.update_curr(core, now);
        let next = self.queues[c].pick(self.rt[c].throttled)?;
        self.queues[c].take(next);
        let prev = self.current[c];
        let p = &mut self.tasks[usize::from(prev)];
        if p.state == TaskState::Running {
            p.state = TaskState::Runnable;
            let class = p.class;
            self.queues[c].requeue_preempted(prev, class);
        }
        std::mem::swap(&mut self.tasks[usize::from(prev)].context, loaded);
        let n = &mut self.tasks[usize::from(next)];
        n.state = TaskState::Running;
        n.core = core;
        std::mem::swap(&mut n.context, loaded);
        self.current[c] = next;
        self.switches += 1;
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Frame {
        Frame::at(0)
    }

    #[test]
    fn the_idle_task_runs_alone_until_another_is_queued() {
        let s = Scheduler::new(2);
        assert_eq!(s.current, vec![0, 1]);
        assert!(!s.need_resched(0) && !s.need_resched(1));
        assert_eq!(s.tasks[0].class, SchedClass::Idle);
    }

    #[test]
    fn classes_go_first_by_rank_and_equals_in_queue_order() {
        let mut s = Scheduler::new(1);
        let fair = s.spawn("make", SchedClass::Normal { nice: 0 }, 0, entry());
        let irq = s.spawn("irq/16-eth0", SchedClass::Fifo { priority: 50 }, 0, entry());
        let sirq = s.spawn("sirq-net-rx", SchedClass::Fifo { priority: 50 }, 0, entry());
        let cyclic = s.spawn("cyclictest", SchedClass::Fifo { priority: 80 }, 0, entry());
        let q = &s.queues[0];
        assert_eq!(q.pick(false), Some(cyclic));
        let mut order = Vec::new();
        let mut core = TaskContext::default();
        while let Some(t) = s.switch(0, &mut core, SimTime::ZERO) {
            order.push(t);
            // The one that ran blocks, so it leaves the queue.
            s.tasks[usize::from(t)].state = TaskState::Sleeping;
            if order.len() == 5 {
                break;
            }
        }
        // The idle task, switched out first, went back on the queue and runs last.
        assert_eq!(order, vec![cyclic, irq, sirq, fair, 0]);
        assert_eq!(s.switches, 5);
    }

    #[test]
    fn a_wake_of_a_task_that_has_not_yet_slept_is_kept_for_its_schedule() {
        let mut s = Scheduler::new(1);
        let t = s.spawn("cyclictest", SchedClass::Fifo { priority: 40 }, 0, entry());
        // Runnable (preempted after queueing its timer): the timer's wake is not lost.
        s.wake(t);
        assert!(s.tasks[usize::from(t)].wake_pending);
        assert_eq!(s.queues[0].pick(false), Some(t), "queued once");
        let mut core = TaskContext::default();
        s.switch(0, &mut core, SimTime::ZERO);
        s.tasks[usize::from(t)].state = TaskState::Sleeping;
        s.tasks[usize::from(t)].wake_pending = false;
        s.wake(t);
        assert_eq!(s.tasks[usize::from(t)].state, TaskState::Runnable);
        assert!(!s.tasks[usize::from(t)].wake_pending);
    }

    #[test]
    fn a_switch_swaps_the_kernel_stacks() {
        let mut s = Scheduler::new(1);
        let t = s.spawn(
            "ksoftirqd/0",
            SchedClass::Normal { nice: 19 },
            0,
            Frame::at(7),
        );
        assert!(s.need_resched(0), "a fair task goes before the idle task");
        let mut core = TaskContext::starting(entry()); // the idle task's stack, in the core
        assert_eq!(s.switch(0, &mut core, SimTime::ZERO), Some(t));
        assert_eq!(core.stack, vec![Frame::at(7)]);
        assert_eq!(
            s.tasks[0].context.stack,
            vec![entry()],
            "idle's stack saved"
        );
        assert_eq!(s.tasks[0].state, TaskState::Runnable);
        assert!(!s.need_resched(0), "the idle task does not preempt");
    }

    #[test]
    fn a_class_past_its_runtime_is_throttled_until_the_period_gives_it_back() {
        let ms = |n: u64| SimDuration::from_ns(n * 1_000_000);
        let at = |n: u64| SimTime::ZERO + ms(n);
        let mut s = Scheduler::new(1);
        s.rt_runtime = Some(ms(950));
        let sirq = s.spawn(
            "sirq-net-rx/0",
            SchedClass::Fifo { priority: 50 },
            0,
            entry(),
        );
        let mut core = TaskContext::default();
        assert_eq!(s.switch(0, &mut core, at(0)), Some(sirq));
        // It never sleeps: charged at each tick; 950 ms is not yet past the runtime.
        s.update_curr(0, at(950));
        assert!(!s.rt[0].throttled && !s.need_resched(0));
        s.update_curr(0, at(954));
        assert!(s.rt[0].throttled, "past 950 ms of the period");
        assert!(
            s.need_resched(0),
            "a throttled FIFO task yields to the idle task"
        );
        assert_eq!(s.switch(0, &mut core, at(954)), Some(0));
        assert_eq!(s.rt_throttles, 1);
        // The idle task's time is not charged; the period timer gives 950 ms back.
        s.update_curr(0, at(990));
        assert_eq!(s.rt[0].time, ms(954));
        assert!(!s.need_resched(0), "still throttled before the period ends");
        s.rt_period(0, at(1000));
        assert!(!s.rt[0].throttled);
        assert_eq!(s.rt[0].time, ms(4), "the debt past the runtime is kept");
        assert_eq!(s.rt_throttled_time, ms(46));
        assert!(s.need_resched(0), "the FIFO task runs again");
    }

    #[test]
    fn without_a_bandwidth_limit_nothing_is_throttled() {
        let mut s = Scheduler::new(1);
        let t = s.spawn("irq/16", SchedClass::Fifo { priority: 50 }, 0, entry());
        let mut core = TaskContext::default();
        s.switch(0, &mut core, SimTime::ZERO);
        s.update_curr(0, SimTime::ZERO + SimDuration::from_ns(5_000_000_000));
        assert!(!s.rt[0].throttled && s.current[0] == t);
    }
}
