//! Execution contexts. A CPU runs one task at a time; hard IRQ and softirq work runs on top of
//! whatever task it interrupted, tracked by preempt-count-style depths as Linux does
//! (`include/linux/hardirq.h`). Threaded handlers, ksoftirqd, RT tasks and PREEMPT_RT add tasks
//! with other classes and priorities; the scheduler picks among them at preemption points.

use serde::Serialize;

/// Index of a task in the scheduler's table (`kernel/sched.rs`).
pub type TaskId = u16;

/// Index of a timer in the hrtimer subsystem's table (`Hrtimers::timers`, `kernel/hrtimer.rs`).
pub type TimerId = u16;

/// Index of a NAPI context in the networking core's table (`kernel/net.rs`).
pub type NapiId = u16;

/// Scheduling class of a task (Linux `SCHED_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum SchedClass {
    /// The idle task: runs only when nothing else can.
    Idle,
    /// SCHED_OTHER (CFS / O(1) in 2.6.18).
    Normal { nice: i8 },
    /// SCHED_FIFO with an RT priority 1..99 (threaded IRQ handlers use 50).
    Fifo { priority: u8 },
}

impl SchedClass {
    /// SCHED_FIFO (or RR): the real-time class, whose bandwidth is limited.
    pub fn is_rt(self) -> bool {
        matches!(self, SchedClass::Fifo { .. })
    }
}

/// What kind of code a CPU is executing right now.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum ExecContext {
    HardIrq,
    SoftIrq,
    Task(SchedClass),
}

/// The per-CPU counts Linux keeps in `preempt_count`.
#[derive(Copy, Clone, Debug, Default, Serialize)]
pub struct PreemptCount {
    pub hardirq: u8,
    pub softirq: u8,
}

impl PreemptCount {
    /// `in_interrupt()`: in hard IRQ or softirq context.
    pub fn in_interrupt(&self) -> bool {
        self.hardirq > 0 || self.softirq > 0
    }

    /// May a preemption point ([`super::program::Step::Resched`]) switch tasks with these
    /// counts? Never in interrupt context. Returning from an interrupt (`irq_return`): to user
    /// mode (`to_user`) always, to kernel code only under kernel preemption (`kernel_preempts`:
    /// `CONFIG_PREEMPT` or PREEMPT_RT). A voluntary point (the idle loop's `need_resched()`)
    /// outside interrupt context always. The core's loop and the interpreter both ask this.
    #[inline]
    pub fn allows_switch(&self, irq_return: bool, to_user: bool, kernel_preempts: bool) -> bool {
        !self.in_interrupt() && (!irq_return || to_user || kernel_preempts)
    }
    pub fn context(&self, task: SchedClass) -> ExecContext {
        if self.hardirq > 0 {
            ExecContext::HardIrq
        } else if self.softirq > 0 {
            ExecContext::SoftIrq
        } else {
            ExecContext::Task(task)
        }
    }
}

/// The kernel's preemption model (Linux `CONFIG_PREEMPT_*`): where a woken task of a higher
/// class or priority may take the core from the running one. A kernel file names its model
/// when its kernel runs tasks besides the idle task (seed 003's kernels); until then no
/// preemption point is reached.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preemption {
    /// `PREEMPT_NONE`: only on the return to user mode, or when the running task blocks.
    None,
    /// `PREEMPT_VOLUNTARY`: also at the kernel's `might_sleep()` points.
    Voluntary,
    /// `PREEMPT`: also whenever the preempt count drops to zero (after a spinlock, on the exit
    /// of an interrupt that did not interrupt a critical section).
    Preempt,
    /// `PREEMPT_RT`: as `Preempt`, with hard interrupt handlers and softirqs in threads and
    /// spinlocks that sleep, so almost all kernel code is preemptible.
    Rt,
}

impl Preemption {
    /// The value a kernel file (or `--set kernel.sched.preemption=`) gives, and the kernel
    /// option it stands for.
    pub fn describe(self) -> &'static str {
        match self {
            Preemption::None => "none (CONFIG_PREEMPT_NONE)",
            Preemption::Voluntary => "voluntary (CONFIG_PREEMPT_VOLUNTARY)",
            Preemption::Preempt => "preempt (CONFIG_PREEMPT)",
            Preemption::Rt => "rt (PREEMPT_RT)",
        }
    }
}
