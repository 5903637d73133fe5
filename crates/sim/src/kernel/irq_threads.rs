//! genirq's threaded handlers as the -rt patches run them (2.6.29.4-rt17,
//! `kernel/irq/manage.c`): the hard part of a threaded interrupt (`redirect_hardirq`) marks the
//! descriptor pending (`IRQ_PENDING`) and wakes its thread; the thread's loop (`do_irqd`) takes
//! the mark and runs the handlers, and sleeps when none is pending. The flow handlers and the
//! thread's program are built in `linux.rs`; their operations on this state are steps of the
//! language (`Step::IrqThread`), interpreted here.

use super::context::TaskId;
use super::ops::{After, Entry, Op, Var};

/// Each descriptor's IRQ thread and its pending mark, by descriptor.
#[derive(Clone, Debug, Default)]
pub struct IrqThreads {
    /// The thread of each descriptor (spawned as the kernel boots).
    pub tasks: Vec<TaskId>,
    /// Per descriptor: the variable whose bit 0 says the hard part has run and the thread has
    /// not yet taken it (`IRQ_PENDING`).
    pub pending: Vec<Var>,
}

/// An operation on a descriptor's thread, in a program of the step language.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IrqThreadStep {
    /// `redirect_hardirq`: mark descriptor `desc` pending for its thread and wake the thread.
    Wake(u16),
    /// `do_irqd`: the thread of descriptor `desc` takes the pending mark; none: go to `idle`
    /// (sleep).
    Take { desc: u16, idle: Entry },
}

impl IrqThreadStep {
    /// Where the operation may go instead of the next step.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        match self {
            IrqThreadStep::Take { idle, .. } => Some(idle),
            IrqThreadStep::Wake(_) => None,
        }
    }
}

impl IrqThreads {
    /// Interpret `op` on the kernel's variables `vars`.
    #[inline]
    pub fn step(&self, op: IrqThreadStep, vars: &mut [u64]) -> After {
        match op {
            IrqThreadStep::Wake(d) => {
                vars[usize::from(self.pending[usize::from(d)].0)] |= 1;
                After::Ask(Op::Wake(self.tasks[usize::from(d)]))
            }
            IrqThreadStep::Take { desc, idle } => {
                let v = &mut vars[usize::from(self.pending[usize::from(desc)].0)];
                if *v & 1 != 0 {
                    *v &= !1;
                    After::Next
                } else {
                    After::Goto(idle)
                }
            }
        }
    }
}
