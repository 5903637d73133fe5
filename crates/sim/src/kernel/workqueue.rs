//! Deferred work a driver asks for: timer-wheel timers (`struct timer_list`, run by
//! `run_timer_softirq` once `jiffies` has reached their expiry) and the shared `events`
//! workqueue (one `events/N` thread per CPU, keventd's `worker_thread`), as Linux 2.6.29 has
//! them (kernel/timer.c, kernel/workqueue.c).
//!
//! e1000e's watchdog uses both: its timer's callback (`e1000_watchdog`) only calls
//! `schedule_work`, and `events/0` runs `e1000_watchdog_task`, whose ~35 reads of the
//! statistics registers cross the PCIe link one at a time in process context. 2.6.29's
//! `run_workqueue` has no `cond_resched()` between works, and `worker_thread` runs at
//! `set_user_nice(current, -5)`: a woken task takes the CPU from it only where the preemption
//! model lets it.

use super::ops::{After, Entry, Frame, Op};
use super::sched::TaskId;
use std::collections::VecDeque;

/// One timer-wheel timer.
#[derive(Clone, Debug)]
pub struct WheelTimer {
    pub name: String,
    /// The jiffy it expires at, while it is pending.
    pub expires: Option<u64>,
    /// Its callback (`timer->function`), run with the timer in its first local.
    pub func: Entry,
}

/// One work item.
#[derive(Clone, Debug)]
pub struct WorkItem {
    pub name: String,
    pub func: Entry,
    /// `WORK_STRUCT_PENDING`: queued and not yet taken by the worker.
    pub pending: bool,
}

/// The kernel's timer-wheel timers and its `events` workqueue.
#[derive(Clone, Debug, Default)]
pub struct Deferred {
    pub timers: Vec<WheelTimer>,
    /// `HZ`: `round_jiffies` rounds to whole seconds of it.
    pub hz: u64,
    pub works: Vec<WorkItem>,
    /// Each CPU's `cwq->worklist`.
    pub worklist: Vec<VecDeque<u16>>,
    /// Each CPU's `events/N` thread.
    pub events: Vec<TaskId>,
    /// Works run.
    pub runs: u64,
}

impl Deferred {
    /// `init_timer` + `setup_timer`: a timer with callback `func`, not pending.
    pub fn add_timer(&mut self, name: &str, func: Entry) -> u16 {
        self.timers.push(WheelTimer {
            name: name.to_string(),
            expires: None,
            func,
        });
        u16::try_from(self.timers.len() - 1).expect("fewer than 65,536 timers")
    }

    /// `INIT_WORK`: a work item running `func`.
    pub fn add_work(&mut self, name: &str, func: Entry) -> u16 {
        self.works.push(WorkItem {
            name: name.to_string(),
            func,
            pending: false,
        });
        u16::try_from(self.works.len() - 1).expect("fewer than 65,536 works")
    }

    /// `run_timer_softirq`'s inner loop: a timer whose expiry `jiffies` has reached, detached
    /// (no longer pending), lowest index first (timers of one jiffy run in the order the
    /// wheel's list has them; the model keeps the order they were set up in).
    pub fn take_expired(&mut self, jiffies: u64) -> Option<u16> {
        let i = self
            .timers
            .iter()
            .position(|t| t.expires.is_some_and(|e| e <= jiffies))?;
        self.timers[i].expires = None;
        Some(i as u16)
    }

    /// `mod_timer(timer, round_jiffies(jiffies + seconds * HZ))` on `cpu`.
    pub fn mod_timer_seconds(&mut self, timer: u16, seconds: u16, jiffies: u64, cpu: u8) {
        let at = round_jiffies(
            jiffies + u64::from(seconds) * self.hz,
            cpu,
            self.hz,
            jiffies,
        );
        self.timers[usize::from(timer)].expires = Some(at);
    }

    /// `queue_work` on `cpu`'s worker: `true` if the work was not already pending (the worker
    /// is then woken).
    pub fn queue(&mut self, cpu: u8, work: u16) -> bool {
        let w = &mut self.works[usize::from(work)];
        if w.pending {
            return false;
        }
        w.pending = true;
        self.worklist[usize::from(cpu)].push_back(work);
        true
    }

    /// `run_workqueue`: the next work of `cpu`'s list, its pending bit cleared before its
    /// function runs (`work_clear_pending`).
    pub fn next_work(&mut self, cpu: u8) -> Option<u16> {
        let w = self.worklist[usize::from(cpu)].pop_front()?;
        self.works[usize::from(w)].pending = false;
        self.runs += 1;
        Some(w)
    }
}

/// `round_jiffies(j)` of kernel/timer.c (2.6.29) on `cpu`: to a whole second, skewed by three
/// jiffies per CPU; down if `j` is less than a quarter second past one, else up; the original
/// if rounding would put it at or before `now`.
pub fn round_jiffies(j: u64, cpu: u8, hz: u64, now: u64) -> u64 {
    let skew = u64::from(cpu) * 3;
    let s = j + skew;
    let rem = s % hz;
    let rounded = if rem < hz / 4 { s - rem } else { s - rem + hz } - skew;
    if rounded <= now {
        j
    } else {
        rounded
    }
}

// ---- the operations of this subsystem's programs ------------------------------------------

/// An operation of the timer wheel (`run_timer_softirq`, `mod_timer`) or the `events`
/// workqueue (`schedule_work`, `run_workqueue`) in a program of the step language
/// (`Step::Deferred`), interpreted here by [`Deferred::step`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DeferredStep {
    /// `run_timer_softirq`'s loop: the next timer-wheel timer whose expiry `jiffies` has
    /// reached, detached, into the frame's first local; none left: go to `done`.
    NextExpiredWheelTimer { done: Entry },
    /// Call the callback of the timer-wheel timer in the frame's first local.
    CallWheelTimer,
    /// `mod_timer(timer, round_jiffies(jiffies + seconds * HZ))`.
    ModTimerSeconds { timer: u16, seconds: u16 },
    /// `schedule_work`: queue the work on this CPU's `events` thread and wake it, unless the
    /// work is pending already.
    QueueWork(u16),
    /// `run_workqueue`'s loop: the next work of this CPU's list into the frame's first local;
    /// none left: go to `idle`.
    NextWork { idle: Entry },
    /// Call the function of the work in the frame's first local.
    CallWork,
}

impl DeferredStep {
    /// Where the operation may go instead of the next step, if it branches.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        match self {
            DeferredStep::NextExpiredWheelTimer { done: to }
            | DeferredStep::NextWork { idle: to } => Some(to),
            _ => None,
        }
    }
}

impl Deferred {
    /// Run operation `op` of frame `frame` (its locals) with the kernel's variables on CPU `cpu`.
    #[inline(always)]
    pub fn step(
        &mut self,
        op: DeferredStep,
        frame: &mut Frame,
        vars: &mut [u64],
        cpu: u8,
    ) -> After {
        match op {
            DeferredStep::NextExpiredWheelTimer { done } => {
                let jiffies = vars[usize::from(super::TICKS.0)];
                match self.take_expired(jiffies) {
                    Some(t) => frame.a = u32::from(t),
                    None => return After::Goto(done),
                }
            }
            DeferredStep::CallWheelTimer => {
                return After::CallFrame(Frame {
                    a: frame.a,
                    ..Frame::at(self.timers[frame.a as usize].func)
                })
            }
            DeferredStep::ModTimerSeconds { timer, seconds } => {
                let jiffies = vars[usize::from(super::TICKS.0)];
                self.mod_timer_seconds(timer, seconds, jiffies, cpu);
            }
            DeferredStep::QueueWork(w) => {
                if self.queue(cpu, w) {
                    return After::Ask(Op::Wake(self.events[usize::from(cpu)]));
                }
            }
            DeferredStep::NextWork { idle } => match self.next_work(cpu) {
                Some(w) => frame.a = u32::from(w),
                None => return After::Goto(idle),
            },
            DeferredStep::CallWork => return After::Call(self.works[frame.a as usize].func),
        }
        After::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_jiffies_goes_to_the_nearer_whole_second_with_kernel_timer_c_s_quarter_rule() {
        // HZ 250: 2 s after jiffy 1,003 is 1,503, three past a second: down to 1,500.
        assert_eq!(round_jiffies(1503, 0, 250, 1003), 1500);
        // 1,570 is 70 past (more than a quarter second, 62): up to 1,750.
        assert_eq!(round_jiffies(1570, 0, 250, 1070), 1750);
        // CPU 1 is skewed three jiffies earlier.
        assert_eq!(round_jiffies(1503, 1, 250, 1003), 1497);
        // Rounding that would eat the timeout keeps the original.
        assert_eq!(round_jiffies(1010, 0, 250, 1000), 1010);
    }

    #[test]
    fn a_work_is_queued_once_until_the_worker_takes_it_and_expired_timers_detach() {
        let mut d = Deferred {
            worklist: vec![VecDeque::new()],
            hz: 250,
            ..Deferred::default()
        };
        let w = d.add_work("w", 7);
        assert!(d.queue(0, w));
        assert!(!d.queue(0, w), "pending: queue_work returns 0");
        assert_eq!(d.next_work(0), Some(w));
        assert!(d.queue(0, w), "taken: it may be queued again while it runs");
        let t = d.add_timer("t", 9);
        d.timers[usize::from(t)].expires = Some(500);
        assert_eq!(d.take_expired(499), None);
        assert_eq!(d.take_expired(500), Some(t));
        assert_eq!(d.take_expired(600), None, "detached when it ran");
    }
}
