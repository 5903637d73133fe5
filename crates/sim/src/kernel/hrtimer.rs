//! High-resolution timers (Linux `kernel/hrtimer.c`, 2.6.21 and later, `CONFIG_HIGH_RES_TIMERS`):
//! per-CPU queues of timers, each with an absolute expiry and a callback, and the Local APIC
//! timer in one-shot mode programmed for the earliest of them (`tick_program_event` ->
//! `lapic_next_event`, a write of the initial-count register). When it fires,
//! `hrtimer_interrupt` runs every expired timer's callback in hard-IRQ context and programs the
//! next expiry. The periodic tick itself is such a timer (`tick_sched_timer`) on a kernel with
//! high resolution timers, and so is a sleeper's wake-up (`hrtimer_wakeup`, from
//! `do_nanosleep`).
//!
//! The queue is a short list scanned in full: a CPU has its tick, one sleeper per task that
//! sleeps on it and little else in the modelled runs (the kernel's red-black tree pays off at
//! hundreds of timers).

use super::context::TaskId;
use super::cyclic::CyclicThread;
use super::ops::{After, Entry, Frame, Op};
use super::softirq::{SoftirqState, HRTIMER_SOFTIRQ};
use crate::engine::{SimDuration, SimTime};
use std::collections::VecDeque;

pub use super::context::TimerId;

/// One `struct hrtimer`.
#[derive(Clone, Debug)]
pub struct Hrtimer {
    pub name: String,
    /// The CPU whose queue it is on when queued (`hrtimer_cpu_base`).
    pub cpu: u8,
    pub expires: SimTime,
    /// Queued and not yet expired.
    pub queued: bool,
    /// The callback: a program called with the timer in its frame's first local.
    pub func: Entry,
    /// The task a sleeper's callback wakes (`struct hrtimer_sleeper.task`).
    pub task: Option<TaskId>,
    /// A periodic timer's period: its callback moves the expiry on by it and restarts it
    /// (`hrtimer_forward` + HRTIMER_RESTART, the tick's `tick_sched_timer`).
    pub period: Option<SimDuration>,
}

/// What `hrtimer_start` does with a sleeper whose expiry has already passed
/// (`hrtimer_enqueue_reprogram`, when `hrtimer_reprogram` finds the clock-event device cannot be
/// programmed in the past: -ETIME).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PastDue {
    /// The sleeper does not sleep. Mainline 2.6.29 raises HRTIMER_SOFTIRQ, whose
    /// `run_hrtimer_softirq` -> `hrtimer_peek_ahead_timers` runs it at once; PREEMPT_RT
    /// (2.6.29.4-rt17) runs an expired `irqsafe` timer in place (`__run_hrtimer`). Either way
    /// `do_nanosleep` finds the timer inactive and returns without `schedule()`.
    #[default]
    Run,
    /// The timer stays queued and the clock-event device keeps its programmed expiry: the
    /// sleeper sleeps until the next `hrtimer_interrupt` (the next tick, at the latest). The
    /// -rt patch without PREEMPT_RT: 2.6.29.4-rt17 replaced `run_hrtimer_softirq`'s body by
    /// `hrtimer_rt_run_pending()`, an empty stub without CONFIG_PREEMPT_RT (kernel/hrtimer.c
    /// L1343, L1499-1502), so the HRTIMER_SOFTIRQ that `hrtimer_enqueue_reprogram` raises runs
    /// nothing.
    NextEvent,
}

/// Every hrtimer of the kernel.
#[derive(Clone, Debug, Default)]
pub struct Hrtimers {
    pub timers: Vec<Hrtimer>,
    /// Callbacks run.
    pub expired: u64,
    /// What a sleeper started in the past does.
    pub past_due: PastDue,
    /// Sleepers started in the past and left queued ([`PastDue::NextEvent`]).
    pub past_due_queued: u64,
    /// Sleeper timers expired in hard IRQ and left to the HRTIMER softirq, per CPU (-rt's
    /// softirq split of hrtimers, [`TimerStep::DeferSleeper`]).
    pub deferred: Vec<VecDeque<TimerId>>,
}

/// An operation of the hrtimer subsystem in a program of the step language (`Step::Timer`),
/// interpreted here by [`Hrtimers::step`]: the step interpreter knows none of them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimerStep {
    /// `do_nanosleep` of cyclictest's thread `thread`: `hrtimer_start` of its sleeper for the
    /// time it asked to wake at (`clock_nanosleep(TIMER_ABSTIME)`), then the interrupts
    /// program the Local APIC timer if it is now the earliest; already past: what
    /// [`Hrtimers::past_due`] says, which either leaves it queued (the task sleeps until the
    /// next `hrtimer_interrupt`) or goes to `skip` (it does not sleep).
    Nanosleep { thread: u8, skip: Entry },
    /// `hrtimer_interrupt`'s loop: the earliest timer of this CPU that has expired into the
    /// frame's first local; none left: go to `done`.
    NextExpired { done: Entry },
    /// `__run_hrtimer`: call the callback of the timer in the frame's first local, with the
    /// timer in the callee's first local.
    Call,
    /// `hrtimer_wakeup`: wake the task of the sleeper timer in the frame's first local.
    WakeTask,
    /// A periodic timer's callback returns HRTIMER_RESTART: its expiry moves on by its period
    /// and it is queued again (the timer in the frame's first local).
    Restart,
    /// `tick_program_event`: program the Local APIC timer (one-shot) for this CPU's earliest
    /// queued hrtimer (a write of its initial-count register).
    Arm,
    /// In `hrtimer_interrupt` of a kernel that defers sleepers to the HRTIMER softirq: the
    /// expired timer in the frame's first local is a sleeper: queue it for the softirq and
    /// raise it; not: go to `call` (its callback runs here).
    DeferSleeper { call: Entry },
    /// The HRTIMER softirq: the next deferred timer of this CPU into the frame's first local;
    /// none left: go to `done`.
    NextDeferred { done: Entry },
}

impl TimerStep {
    /// Where the operation may go instead of the next step, if it branches.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        match self {
            TimerStep::Nanosleep { skip: to, .. }
            | TimerStep::NextExpired { done: to }
            | TimerStep::DeferSleeper { call: to }
            | TimerStep::NextDeferred { done: to } => Some(to),
            _ => None,
        }
    }
}

impl Hrtimers {
    /// Run operation `op` of the frame `frame` (its locals) at `now` on `cpu`, with
    /// cyclictest's threads (where a sleeper asks to wake) and this CPU's softirq state.
    #[inline(always)]
    pub fn step(
        &mut self,
        op: TimerStep,
        frame: &mut Frame,
        cyclic: &[CyclicThread],
        softirq: &mut SoftirqState,
        now: SimTime,
        cpu: u8,
    ) -> After {
        match op {
            TimerStep::Nanosleep { thread, skip } => {
                let t = &cyclic[usize::from(thread)];
                if t.next > now {
                    if self.start(t.timer, t.next) {
                        return After::Ask(Op::ArmTimer);
                    }
                } else if self.past_due == PastDue::NextEvent {
                    // Queued, but the Local APIC keeps its programmed expiry: the task
                    // sleeps until the next `hrtimer_interrupt`.
                    self.start(t.timer, t.next);
                    self.past_due_queued += 1;
                } else {
                    return After::Goto(skip);
                }
            }
            TimerStep::NextExpired { done } => match self.take_expired(cpu, now) {
                Some(t) => frame.a = u32::from(t),
                None => return After::Goto(done),
            },
            TimerStep::Call => {
                return After::CallFrame(Frame {
                    a: frame.a,
                    ..Frame::at(self.timers[frame.a as usize].func)
                })
            }
            TimerStep::WakeTask => {
                let task = self.timers[frame.a as usize]
                    .task
                    .expect("a sleeper's timer has its task");
                return After::Ask(Op::Wake(task));
            }
            TimerStep::Restart => {
                let t = &mut self.timers[frame.a as usize];
                let period = t.period.expect("a periodic timer");
                t.expires += period;
                t.queued = true;
            }
            TimerStep::Arm => return After::Ask(Op::ArmTimer),
            TimerStep::DeferSleeper { call } => {
                if self.timers[frame.a as usize].task.is_some() {
                    self.deferred[usize::from(cpu)].push_back(frame.a as TimerId);
                    softirq.raise(HRTIMER_SOFTIRQ);
                } else {
                    return After::Goto(call);
                }
            }
            TimerStep::NextDeferred { done } => match self.deferred[usize::from(cpu)].pop_front() {
                Some(t) => frame.a = u32::from(t),
                None => return After::Goto(done),
            },
        }
        After::Next
    }

    /// `hrtimer_init` + the callback: a timer on `cpu`, not queued.
    pub fn add(&mut self, name: &str, cpu: u8, func: Entry, task: Option<TaskId>) -> TimerId {
        self.timers.push(Hrtimer {
            name: name.to_string(),
            cpu,
            expires: SimTime::ZERO,
            queued: false,
            func,
            task,
            period: None,
        });
        TimerId::try_from(self.timers.len() - 1).expect("fewer than 65,536 hrtimers")
    }

    /// `hrtimer_start(HRTIMER_MODE_ABS)`: queue `t` to expire at `at`. Does it now expire first
    /// on its CPU (so that the Local APIC timer must be programmed again)?
    pub fn start(&mut self, t: TimerId, at: SimTime) -> bool {
        let cpu = self.timers[usize::from(t)].cpu;
        let first = self.earliest(cpu).is_none_or(|e| at < e);
        let timer = &mut self.timers[usize::from(t)];
        timer.expires = at;
        timer.queued = true;
        first
    }

    /// The earliest expiry queued on `cpu`.
    pub fn earliest(&self, cpu: u8) -> Option<SimTime> {
        self.timers
            .iter()
            .filter(|t| t.queued && t.cpu == cpu)
            .map(|t| t.expires)
            .min()
    }

    /// `__run_hrtimer`'s choice: the earliest timer on `cpu` that has expired by `now`, taken
    /// off the queue (ties: the one started first, as the tree keeps insertion order among
    /// equal keys; here the lower index).
    pub fn take_expired(&mut self, cpu: u8, now: SimTime) -> Option<TimerId> {
        let (i, _) = self
            .timers
            .iter()
            .enumerate()
            .filter(|(_, t)| t.queued && t.cpu == cpu && t.expires <= now)
            .min_by_key(|(i, t)| (t.expires, *i))?;
        self.timers[i].queued = false;
        self.expired += 1;
        Some(i as TimerId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_timers_come_out_earliest_first_and_only_once() {
        let mut h = Hrtimers::default();
        let at = |us: u64| SimTime::ZERO + SimDuration::from_ns(us * 1000);
        let tick = h.add("tick", 0, 0, None);
        let sleeper = h.add("cyclictest", 0, 1, Some(1));
        let other_cpu = h.add("tick/1", 1, 0, None);
        assert!(h.start(tick, at(4000)), "the first timer programs the APIC");
        assert!(
            h.start(sleeper, at(500)),
            "an earlier one programs it again"
        );
        assert!(!h.start(other_cpu, at(100)) || h.earliest(0) == Some(at(500)));
        assert_eq!(h.earliest(0), Some(at(500)));
        assert_eq!(h.take_expired(0, at(499)), None);
        assert_eq!(h.take_expired(0, at(4000)), Some(sleeper));
        assert_eq!(h.take_expired(0, at(4000)), Some(tick));
        assert_eq!(h.take_expired(0, at(9000)), None, "each runs once");
        assert_eq!(
            h.earliest(1),
            Some(at(100)),
            "another CPU's queue is its own"
        );
        assert_eq!(h.expired, 2);
    }
}
