//! Softirqs and tasklets (Linux `kernel/softirq.c`): `raise_softirq` sets a pending bit;
//! `irq_exit` runs pending softirqs when not nested in another interrupt; `__do_softirq` runs
//! with interrupts enabled and restarts up to `MAX_SOFTIRQ_RESTART` (10) times before leaving
//! the rest to ksoftirqd.

use super::context::PreemptCount;
use super::ops::{After, Entry, Frame, Op};
use super::sched::TaskId;
use std::collections::VecDeque;

pub const HI_SOFTIRQ: u32 = 0;
pub const TIMER_SOFTIRQ: u32 = 1;
pub const NET_TX_SOFTIRQ: u32 = 2;
pub const NET_RX_SOFTIRQ: u32 = 3;
pub const TASKLET_SOFTIRQ: u32 = 6;
/// 2.6.29's `HRTIMER_SOFTIRQ` (-rt's deferred hrtimer callbacks).
pub const HRTIMER_SOFTIRQ: u32 = 7;
/// Softirq numbers this model uses a thread slot for.
pub const NR_SOFTIRQS: usize = 8;
/// `kernel/softirq.c`: restarts of the softirq loop before deferring to ksoftirqd.
pub const MAX_SOFTIRQ_RESTART: u8 = 10;

/// A softirq's name as -rt names its thread (`softirq_names` of kernel/softirq.c).
pub fn name(nr: u32) -> &'static str {
    match nr {
        HI_SOFTIRQ => "high",
        TIMER_SOFTIRQ => "timer",
        NET_TX_SOFTIRQ => "net-tx",
        NET_RX_SOFTIRQ => "net-rx",
        TASKLET_SOFTIRQ => "tasklet",
        HRTIMER_SOFTIRQ => "hrtimer",
        _ => "other",
    }
}

/// Index of a tasklet in the kernel's tasklet table.
pub type TaskletId = u16;

/// A tasklet: `func` is code a driver registered.
#[derive(Clone, Debug)]
pub struct Tasklet {
    /// TASKLET_STATE_SCHED: queued and not yet run (scheduling again is a no-op).
    pub scheduled: bool,
    /// The tasklet function: a program a driver registered.
    pub func: super::Entry,
}

/// Per-CPU softirq state.
#[derive(Clone, Debug, Default)]
pub struct SoftirqState {
    pub pending: u32,
    /// `tasklet_vec`: tasklets scheduled on this CPU, in order.
    pub tasklet_vec: VecDeque<TaskletId>,
    /// The list `tasklet_action` spliced off and is running.
    pub tasklet_running: VecDeque<TaskletId>,
    /// `softnet_data.poll_list`: NAPI contexts scheduled on this CPU, in order.
    pub poll_list: VecDeque<super::context::NapiId>,
    /// `net_rx_action`'s budget left and its time limit (in jiffies, the tick count).
    pub net_budget: i64,
    pub net_time_limit: u64,
}

impl SoftirqState {
    pub fn raise(&mut self, nr: u32) {
        self.pending |= 1 << nr;
    }
}

// ---- the operations of this subsystem's programs ------------------------------------------

/// An operation of softirqs and tasklets (`raise_softirq`, `__do_softirq`, `tasklet_action`,
/// the softirq threads of -rt) in a program of the step language (`Step::Softirq`),
/// interpreted here by [`SoftirqState::step`] on this CPU's state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SoftirqStep {
    /// Call the function of the tasklet in the frame's first local.
    CallTasklet,
    /// Branch unless `irq_exit` would run softirqs: still in interrupt context, or none
    /// pending.
    BranchIfNoSoftirq(Entry),
    SoftirqEnter,
    SoftirqLeave,
    RaiseSoftirq(u8),
    TaskletSchedule(TaskletId),
    /// `__do_softirq`: take the pending mask into the frame's first local, enable interrupts.
    TakeSoftirqs,
    /// Take softirq `nr` from the pending mask in the frame's first local: if its bit is set,
    /// clear it and go on; if not, go to `absent`.
    TakeSoftirq {
        nr: u8,
        absent: Entry,
    },
    /// `if (pending && --max_restart) goto restart;`: softirqs raised again while the round
    /// ran, and fewer than `max` rounds (counted in the frame's second local): go to `to`.
    SoftirqRestart {
        max: u8,
        to: Entry,
    },
    /// `tasklet_action`: splice this CPU's list away; tasklets scheduled from now on run in
    /// the next round.
    SpliceTasklets,
    /// The next spliced tasklet into the frame's first local (no longer scheduled); none left:
    /// go to `done`.
    NextTasklet {
        done: Entry,
    },
    /// `__do_softirq`'s end: softirqs still pending after the last round wake this CPU's
    /// ksoftirqd (`wakeup_softirqd`).
    WakeSoftirqd,
    /// `trigger_softirqs` on the interrupt's exit in a threaded kernel: the pending softirqs
    /// (outside a nested interrupt) into the frame's first local, whose threads
    /// [`SoftirqStep::WakeNextSoftirq`] then wakes.
    TriggerSoftirqs,
    /// The lowest softirq left in the frame's first local: wake its thread (`wakeup_softirqd`,
    /// which skips the wake where an IRQ thread of the same priority will run it); none left:
    /// go to `done`.
    WakeNextSoftirq {
        done: Entry,
    },
    /// A softirq thread's test: softirq `nr` pending: clear it and go on; not: go to `idle`.
    SoftirqThreadTake {
        nr: u8,
        idle: Entry,
    },
    /// Branch if any softirq is pending (the merged loop of an IRQ thread restarts while one
    /// is: "with softirq threading there's no reason not to finish the workload").
    BranchIfSoftirqPending(Entry),
}

impl SoftirqStep {
    /// Where the operation may go instead of the next step, if it branches.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        match self {
            SoftirqStep::BranchIfNoSoftirq(to)
            | SoftirqStep::SoftirqRestart { to, .. }
            | SoftirqStep::NextTasklet { done: to }
            | SoftirqStep::TakeSoftirq { absent: to, .. }
            | SoftirqStep::WakeNextSoftirq { done: to }
            | SoftirqStep::SoftirqThreadTake { idle: to, .. }
            | SoftirqStep::BranchIfSoftirqPending(to) => Some(to),
            _ => None,
        }
    }
}

impl SoftirqState {
    /// Run operation `op` of frame `frame` (its locals) on this CPU's softirq state, with its
    /// preempt count, the kernel's tasklets and ksoftirqd threads, on CPU `cpu`.
    #[inline(always)]
    pub fn step(
        &mut self,
        op: SoftirqStep,
        frame: &mut Frame,
        preempt: &mut PreemptCount,
        tasklets: &mut [Tasklet],
        ksoftirqd: &[TaskId],
        cpu: u8,
    ) -> After {
        match op {
            SoftirqStep::CallTasklet => return After::Call(tasklets[frame.a as usize].func),
            SoftirqStep::BranchIfNoSoftirq(to) => {
                if preempt.in_interrupt() || self.pending == 0 {
                    return After::Goto(to);
                }
            }
            SoftirqStep::SoftirqEnter => preempt.softirq += 1,
            SoftirqStep::SoftirqLeave => preempt.softirq -= 1,
            SoftirqStep::RaiseSoftirq(nr) => self.raise(u32::from(nr)),
            SoftirqStep::TaskletSchedule(t) => super::tasklet_schedule(tasklets, self, t),
            SoftirqStep::TakeSoftirqs => {
                frame.a = std::mem::take(&mut self.pending);
                return After::EnableIrqs;
            }
            SoftirqStep::TakeSoftirq { nr, absent } => {
                if frame.a & (1 << nr) != 0 {
                    frame.a &= !(1 << nr);
                } else {
                    return After::Goto(absent);
                }
            }
            SoftirqStep::SoftirqRestart { max, to } => {
                if self.pending != 0 && frame.b + 1 < u32::from(max) {
                    frame.b += 1;
                    return After::Goto(to);
                }
            }
            SoftirqStep::SpliceTasklets => {
                // Swapping the two lists keeps both buffers: no allocation per run.
                debug_assert!(self.tasklet_running.is_empty());
                std::mem::swap(&mut self.tasklet_vec, &mut self.tasklet_running);
            }
            SoftirqStep::WakeSoftirqd => {
                if self.pending != 0 {
                    if let Some(&t) = ksoftirqd.get(usize::from(cpu)) {
                        return After::Ask(Op::Wake(t));
                    }
                }
            }
            SoftirqStep::TriggerSoftirqs => {
                frame.a = if preempt.in_interrupt() {
                    0
                } else {
                    self.pending
                };
            }
            SoftirqStep::WakeNextSoftirq { done } => {
                if frame.a == 0 {
                    return After::Goto(done);
                } else {
                    let nr = frame.a.trailing_zeros();
                    frame.a &= !(1 << nr);
                    return After::Ask(Op::WakeSoftirq(nr as u8));
                }
            }
            SoftirqStep::SoftirqThreadTake { nr, idle } => {
                if self.pending & (1 << nr) != 0 {
                    self.pending &= !(1 << nr);
                } else {
                    return After::Goto(idle);
                }
            }
            SoftirqStep::BranchIfSoftirqPending(to) => {
                if self.pending != 0 {
                    return After::Goto(to);
                }
            }
            SoftirqStep::NextTasklet { done } => match self.tasklet_running.pop_front() {
                Some(t) => {
                    frame.a = u32::from(t);
                    tasklets[usize::from(t)].scheduled = false;
                }
                None => return After::Goto(done),
            },
        }
        After::Next
    }
}
