//! The language kernel code is written in, and the one interpreter that runs it.
//!
//! Every kernel path and every driver is a *program*: a run of [`Step`]s in the kernel's
//! [`Code`], built when the machine is assembled (the Linux library in `kernel/linux.rs`, the
//! drivers in `kernel/drivers/`) from the instruction counts of `kernels/*.toml` and the
//! scenario's devices. A function activation is a [`Frame`]: where it is in the code and two
//! locals. The frames are the running task's kernel stack, so interrupt nesting and softirqs on
//! interrupt exit are stack operations; a task switch swaps the core's stack for the next
//! task's (`kernel/sched.rs`).
//!
//! [`step`] runs the top frame to its next observable action and returns it as an [`Op`]:
//! run some instructions, access a register (which the CPU turns into a bus transaction,
//! stalling for reads and non-posted writes), call, return, take the vector, leave the
//! interrupt, halt. Steps that only change kernel state (a counter, the interrupt flag, a
//! pending softirq, a branch) run inside the call, as the instructions that do them are part of
//! the counted blocks around them. Adding a driver or a kernel path adds a program, not a case
//! here: the steps are the machine's and the kernel's primitives, the programs are data.
//!
//! The core steps are the machine's (run, access a register, call and return, branch, the
//! interrupt flag, take the vector, wake, block) and are interpreted here. A subsystem's own
//! operations are one variant each, interpreted in the subsystem's module, which changes its
//! own state and answers with an [`After`] (go on, go to, call, stall, interrupts on, or an op
//! for the core): [`Step::Net`] (NAPI and the drivers' rings, `kernel/net.rs`),
//! [`Step::Softirq`] (`kernel/softirq.rs`), [`Step::Deferred`] (the timer wheel and the
//! workqueue, `kernel/workqueue.rs`), [`Step::Timer`] (hrtimers, `kernel/hrtimer.rs`),
//! [`Step::Spl`] (FreeBSD's `cpl`, `kernel/spl.rs`), [`Step::IrqThread`] (genirq's threaded
//! handlers: `redirect_hardirq`'s handoff and `do_irqd`'s take, `kernel/irq_threads.rs`),
//! [`Step::Sched`] (the tick's and the RT period's accounting, `kernel/sched.rs`) and
//! [`Step::Cyclic`] (cyclictest's arithmetic, `kernel/cyclic.rs`). A preemption point and
//! block are core steps.
//!
//! A subsystem's operation costs a second dispatch (its own `match`, ~10 instructions), so
//! they are cut at the grain where the kernel's code tests, takes and counts together: the
//! receive loop's head is one operation (the budget's test and the next descriptor), not two.
//!
//! One rule decides what a core sees between steps: an interrupt is taken only where the
//! interpreter hands an op back to the core (after a `Run` with interrupts on, at a call or a
//! return; the interpreter makes a call or return itself, and folds a `Run`, only where the
//! core would find nothing to take). A `Run` of a Linux path is a block counted as a whole and is not cut by an
//! interrupt; the CPU checks for one at its end, as the model always has (seeds 000 and 002's
//! outputs were made so).

use super::context::PreemptCount;
pub use super::ops::{
    Access, After, Entry, Frame, Idt, Mmio, Op, Operand, Var, IRQ_HANDLED, NO_ENTRY,
};
use super::softirq::SoftirqState;
use super::Kernel;
use crate::engine::{SimDuration, SimTime};
use crate::hw::cpu::CpuCosts;
use crate::hw::lapic::LocalApic;
use crate::workload::{Piece, WorkState};

/// One step of a program. Jump targets are positions in the kernel's code ([`Builder`] writes
/// them relative to the program and makes them absolute when the program is added).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Execute this many instructions (a counted block of the path; not cut by an interrupt).
    Run(u32),
    /// As `Run`, with a count drawn afresh each time from the kernel's `drawn[i]` (a block whose
    /// work varies from run to run).
    RunDrawn(u8),
    /// Execute this many instructions, which an interrupt cuts at the next instruction boundary
    /// when interrupts are on (FreeBSD's handlers run with interrupts on, and an interrupt of
    /// another class is taken in the middle of one). Each cache line the block spans may have
    /// been evicted since it last ran (the core's cold-code model).
    Code(u32),
    /// The microcoded interrupt delivery (IDT gate, frame push).
    Vectoring,
    /// Uncached load from memory-mapped I/O: non-posted, the core waits for the completion.
    Read(Mmio),
    /// Uncached store: the core waits until the FSB has accepted it; it is posted beyond.
    Write(Mmio, Operand),
    /// IN: non-posted.
    In(u16),
    /// `inw`: a 16-bit port read (a programmed-I/O data port).
    InW(u16),
    /// OUT: non-posted too (Intel SDM vol. 3, 8.2.5: x86 waits for I/O writes).
    Out(u16, Operand),
    LapicRead(u32),
    LapicWrite(u32, u32),
    /// The 8259's interrupt-acknowledge cycle; the value returned is the vector.
    IntAck,
    /// The value INTA returned is the frame's vector (its first local).
    TakeVector,
    Call(Entry),
    /// Call through the IDT with the frame's vector.
    CallVector(Idt),
    /// Go on at the IDT's entry for the frame's vector, in this frame (the interrupt gate's
    /// target is the stub itself, as FreeBSD's `INTR` stubs are).
    JumpVector(Idt),
    Return(Operand),
    Jump(Entry),
    /// Go on at another program's entry (an absolute position: FreeBSD's stubs jump to
    /// `doreti` and to each other rather than call).
    Goto(Entry),
    /// Branch if the last value read has none of these bits set.
    BranchIfClear(u32, Entry),
    /// Branch if the frame's first local is not zero.
    BranchIfLocal(Entry),
    /// Branch if the variable has any of these bits set.
    BranchIfSet(Var, u32, Entry),
    /// `local_irq_disable` / `local_irq_enable`.
    Cli,
    Sti,
    /// Wait for an interrupt: `sti; hlt` (`sti`), or the idle state the governor picks, entered
    /// with interrupts off (MWAIT wakes on a pending interrupt without taking it).
    Halt {
        sti: bool,
    },
    /// Leave the interrupt frame: IRET restores the interrupted context's flags.
    Iret,
    /// The idle task's process work (`workload.rs`): the core's next piece of it, coming back
    /// here until the busy stretch is spent; then on to `idle` (the halt).
    Work {
        idle: Entry,
    },
    Inc(Var),
    /// Keep the last value read in a variable.
    Store(Var),
    SetBits(Var, u32),
    ClearBits(Var, u32),
    /// `retval |= action_ret` of `handle_IRQ_event`: the frame's first local notes whether the
    /// last callee returned IRQ_HANDLED.
    NoteHandled,
    /// `irq_enter` / `irq_exit`'s preempt-count changes, and `__local_bh_disable` /
    /// `__local_bh_enable`'s.
    HardirqEnter,
    HardirqLeave,
    /// Instructions of user-mode code (a task's own work between system calls): process code
    /// an interrupt cuts at the next instruction boundary, after a privilege change.
    User(u32),
    /// `schedule()` from a task that has set itself sleeping: it leaves the run queue and the
    /// core switches to the next task.
    Block,
    /// A preemption point: switch if a runnable task outranks the running one and the
    /// kernel's preemption model allows it here. `irq_return`: the return from an interrupt
    /// (`ret_from_intr`: to user mode always; to kernel code only with kernel preemption and
    /// a zero preempt count); otherwise a voluntary point (the idle loop's `need_resched()`).
    Resched {
        irq_return: bool,
    },
    /// An operation of the scheduler's tick and bandwidth ([`super::sched::SchedStep`]).
    Sched(super::sched::SchedStep),
    /// cyclictest's own arithmetic ([`super::cyclic::CyclicStep`]).
    Cyclic(super::cyclic::CyclicStep),
    /// An operation of genirq's threaded handlers, interpreted by
    /// [`super::irq_threads::IrqThreads::step`].
    IrqThread(super::irq_threads::IrqThreadStep),
    /// An operation of the networking core and its drivers (NAPI, the receive and transmit
    /// rings), interpreted by [`super::net::Net::step`].
    Net(super::net::NetStep),
    /// An operation of FreeBSD's `cpl` policy, interpreted by [`super::spl::SplPolicy::step`].
    Spl(super::spl::SplStep),
    /// An operation of the timer wheel or the `events` workqueue, interpreted by
    /// [`super::workqueue::Deferred::step`].
    Deferred(super::workqueue::DeferredStep),
    /// An operation of softirqs and tasklets, interpreted by [`super::softirq::SoftirqState::step`].
    Softirq(super::softirq::SoftirqStep),
    /// An operation of the hrtimer subsystem (`kernel/hrtimer.rs`).
    Timer(super::hrtimer::TimerStep),
}

impl Step {
    /// Where the step may go instead of the next step, if it is a jump of some kind.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        match self {
            Step::Jump(to)
            | Step::BranchIfClear(_, to)
            | Step::BranchIfLocal(to)
            | Step::BranchIfSet(_, _, to)
            | Step::Work { idle: to } => Some(to),
            Step::IrqThread(op) => op.target_mut(),
            Step::Sched(op) => op.target_mut(),
            Step::Cyclic(op) => op.target_mut(),
            Step::Net(op) => op.target_mut(),
            Step::Spl(op) => op.target_mut(),
            Step::Deferred(op) => op.target_mut(),
            Step::Softirq(op) => op.target_mut(),
            Step::Timer(op) => op.target_mut(),
            _ => None,
        }
    }
}

/// Each subsystem's operations are steps of the language: `Step::Net(op)` is `op.into()`.
macro_rules! subsystem_steps {
    ($($variant:ident($op:ty)),* $(,)?) => {
        $(impl From<$op> for Step {
            fn from(op: $op) -> Step {
                Step::$variant(op)
            }
        })*
    };
}

subsystem_steps!(
    Net(super::net::NetStep),
    Timer(super::hrtimer::TimerStep),
    Softirq(super::softirq::SoftirqStep),
    Deferred(super::workqueue::DeferredStep),
    Spl(super::spl::SplStep),
    IrqThread(super::irq_threads::IrqThreadStep),
    Sched(super::sched::SchedStep),
    Cyclic(super::cyclic::CyclicStep),
);

/// A named program's place in the code.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub entry: Entry,
    pub len: u32,
}

/// The kernel's code: every program's steps, one after another.
#[derive(Clone, Debug, Default)]
pub struct Code {
    pub steps: Vec<Step>,
    pub programs: Vec<Program>,
    /// The addresses of the memory-mapped registers the steps access.
    pub addrs: Vec<u64>,
}

impl Code {
    /// The register at `addr`, for a step to access.
    pub fn mmio(&mut self, addr: u64) -> Mmio {
        let i = match self.addrs.iter().position(|&a| a == addr) {
            Some(i) => i,
            None => {
                self.addrs.push(addr);
                self.addrs.len() - 1
            }
        };
        Mmio(u16::try_from(i).expect("fewer than 65,536 device registers"))
    }

    /// Add a program; its jump targets, relative to its first step, become absolute. A jump
    /// or branch to an unconditional [`Step::Jump`] goes to that jump's target instead (jump
    /// threading: the `Jump` would only move the program counter there, at no time and with no
    /// effect), so a loop whose back edge a branch reaches (e1000's receive loop, once per
    /// frame) dispatches one step fewer per pass.
    pub fn add(&mut self, name: impl Into<String>, mut b: Builder) -> Entry {
        let entry = self.steps.len() as Entry;
        let len = b.steps.len() as u32;
        for i in 0..b.steps.len() {
            let mut s = b.steps[i];
            if let Some(to) = s.target_mut() {
                // At most one pass over the program: a loop of jumps alone is left as written.
                for _ in 0..len {
                    match b.steps.get(*to as usize) {
                        Some(&Step::Jump(next)) if next != *to => *to = next,
                        _ => break,
                    }
                }
            }
            b.steps[i] = s;
        }
        self.steps.extend(b.steps.into_iter().map(|mut s| {
            if let Some(to) = s.target_mut() {
                *to += entry;
            }
            s
        }));
        self.programs.push(Program {
            name: name.into(),
            entry,
            len,
        });
        entry
    }

    /// The program an entry starts, by name (for tests and listings).
    pub fn entry(&self, name: &str) -> Option<Entry> {
        self.programs
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.entry)
    }

    /// The steps of the program named `name`.
    pub fn program(&self, name: &str) -> Option<&[Step]> {
        let p = self.programs.iter().find(|p| p.name == name)?;
        Some(&self.steps[p.entry as usize..(p.entry + p.len) as usize])
    }
}

/// A program being written. Jump targets are positions within it ([`Builder::here`]); a
/// forward jump is written with a placeholder and [`Builder::patch`]ed when its target is known.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    steps: Vec<Step>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    pub fn push(&mut self, s: impl Into<Step>) -> &mut Builder {
        self.steps.push(s.into());
        self
    }

    /// The position the next step will have.
    pub fn here(&self) -> Entry {
        self.steps.len() as Entry
    }

    /// Point the jump at `at` to `to`.
    pub fn patch(&mut self, at: Entry, to: Entry) {
        let s = &mut self.steps[at as usize];
        match s.target_mut() {
            Some(t) => *t = to,
            None => panic!("step {at} ({s:?}) is not a jump"),
        }
    }
}

impl From<Vec<Step>> for Builder {
    fn from(steps: Vec<Step>) -> Builder {
        Builder { steps }
    }
}

/// The per-CPU state a frame may look at or change while it steps.
pub struct StepCtx<'a> {
    pub kernel: &'a mut Kernel,
    /// The core's instruction timing, for instructions a frame runs within its step.
    pub costs: &'a CpuCosts,
    /// May instructions run with interrupts off be folded into the next op? Not in the
    /// reference mode, which ends every timed step at an event.
    pub fold: bool,
    /// Folding may not reach this far past the clock (the next SMI, which the interrupt flag
    /// does not hold).
    pub horizon: SimDuration,
    /// The next queued event (which may bring an interrupt) or SMI, past the clock. With
    /// interrupts on and none pending, the frame may go on by itself while its time ahead stays
    /// below it: the core's loop would find nothing to take between two steps.
    pub quiet: SimDuration,
    /// The core's Local APIC and INTR line, to ask whether an interrupt is pending.
    pub lapic: &'a LocalApic,
    pub intr_line: bool,
    /// The core's compute time ahead of the clock, with the instructions folded into this step
    /// added: they pass before the returned op.
    pub ahead: SimDuration,
    /// The value of the last completed read, or the last callee's return value.
    pub value: u32,
    pub irqs_enabled: &'a mut bool,
    pub preempt: &'a mut PreemptCount,
    /// This CPU's softirq state.
    pub softirq: &'a mut SoftirqState,
    /// This CPU's workload generator, if the scenario has one.
    pub work: Option<&'a mut WorkState>,
    /// The clock when the core's loop began; the time of a step is `now + ahead`.
    pub now: SimTime,
    /// This CPU's number (its hrtimer queue).
    pub cpu: u8,
    /// The interrupt being delivered came from user mode (its vectoring changes privilege).
    pub from_user: bool,
    /// The core runs user-mode code (`Core::in_user`): kernel code run here clears it, as the
    /// core's loop does for the ops it runs.
    pub in_user: &'a mut bool,
    /// The interrupted code's `value`s, one per interrupt frame (`TaskContext::saved_values`).
    pub saved_values: &'a mut Vec<u32>,
    /// The stack depth of the op the core has parked last, if any (`TaskContext::parked`): a
    /// frame returned to at that depth goes on with that op, in the core's loop.
    pub parked_depth: Option<usize>,
    /// The network controllers' rings: a driver's look at the next descriptor.
    pub rings: &'a mut dyn Rings,
    /// The scheduler, and whether the kernel preempts kernel code (`CONFIG_PREEMPT` or
    /// PREEMPT_RT): a preemption point that switches nothing, and a wake-up, run here
    /// ([`Step::Resched`], [`Op::Wake`]).
    pub sched: &'a mut super::sched::Scheduler,
    pub kernel_preempts: bool,
}

/// The network controllers' descriptor rings in host memory, as a driver looks at them: the
/// machine's devices answer (the kernel layer does not know the controllers' model).
pub trait Rings {
    /// A driver's look at its ring ([`Op::RxNext`] or [`Op::TxNext`]) at `at`: 1 if the
    /// controller had written back the next descriptor (and it is now the driver's), else 0.
    fn take(&mut self, op: Op, at: SimTime) -> u32;
}

/// Run the top frame of `stack` to the next action the core must see. Inlined into the CPU's
/// loop: it runs several times per interrupt, and the call and context setup cost more than
/// many of the steps.
///
/// Where folding is allowed, calls and returns happen here too when nothing can come between
/// them and the callee's (or caller's) next step: with interrupts off before the next SMI
/// (`horizon`), with interrupts on before the next event (`quiet`) and with no interrupt
/// requested. The core's loop would only push or pop the frame and come back: the same frames,
/// values and times, in fewer rounds. Under the same condition a task's wake-up is made here,
/// and a preemption point that would switch nothing passes (the core's loop would only put a
/// task on a run queue, or find no switch to make, and come back). Instructions run with
/// interrupts on fold under the same condition. (The tests `calls_and_returns_run_inline_only_
/// where_the_core_would_find_nothing_to_take` and `a_wake_up_and_a_preemption_point_run_inline_
/// only_where_the_core_would_go_straight_on`, and the reference-mode comparisons, hold it to
/// that.)
#[inline(always)]
pub fn step(stack: &mut Vec<Frame>, cx: &mut StepCtx<'_>) -> Op {
    // The code and the tables are read through locals, and the top frame is kept in registers
    // and stored when the frame hands an op back.
    let Kernel {
        code,
        vars,
        tasklets,
        idt,
        spl,
        drawn,
        hrtimers,
        cyclic,
        net,
        ksoftirqd,
        irq_threads,
        deferred,
        softirq_threads,
        ..
    } = &mut *cx.kernel;
    let (steps, addrs) = (&code.steps[..], &code.addrs[..]);
    let mut top = stack.len() - 1;
    let mut this = stack[top];
    let mut pc = this.pc;
    // How far ahead the frame may go on by itself with the interrupt flag as it is: to the next
    // SMI with interrupts off; with them on to the next event (`quiet`), and not at all with an
    // interrupt requested (nothing in a step changes that); never in the reference mode.
    // Computed again where a step changes the flag.
    macro_rules! limit {
        () => {
            if !cx.fold {
                SimDuration::ZERO
            } else if !*cx.irqs_enabled {
                cx.horizon
            } else if cx.lapic.nothing_requested(cx.intr_line) {
                cx.quiet
            } else {
                SimDuration::ZERO
            }
        };
    }
    let mut limit = limit!();
    // A stall of `d` (the core waits, nothing runs): charged ahead while no event can come
    // before it ends, else handed to the core.
    macro_rules! held {
        ($d:expr) => {{
            let d: SimDuration = $d;
            if d > SimDuration::ZERO {
                if cx.ahead + d < limit {
                    cx.ahead += d;
                } else {
                    break Op::Held(d);
                }
            }
        }};
    }
    // May a call or return happen here rather than in the core's loop?
    macro_rules! inline {
        () => {
            cx.ahead < limit
        };
    }
    macro_rules! call {
        ($entry:expr) => {
            call_frame!(Frame::at($entry))
        };
    }
    macro_rules! call_frame {
        ($callee:expr) => {{
            let callee = $callee;
            if !inline!() {
                break Op::Call(callee);
            }
            stack[top] = Frame { pc, ..this };
            stack.push(callee);
            top += 1;
            this = callee;
            pc = callee.pc;
        }};
    }
    // What a subsystem's operation asks of the interpreter.
    macro_rules! after {
        ($after:expr) => {
            match $after {
                After::Next => {}
                After::Goto(to) => pc = to,
                After::Call(entry) => call!(entry),
                After::CallFrame(frame) => call_frame!(frame),
                After::EnableIrqs => {
                    *cx.irqs_enabled = true;
                    limit = limit!();
                }
                After::Stall(d) => held!(d),
                // A driver's look at its ring in host memory, as the core's loop takes it
                // (`Machine::cpu_run`, `Op::RxNext`), here where that loop would take it at
                // once: nothing is queued before the time ahead (so every write of the chip
                // that comes earlier has been made), and nothing for the core to take.
                After::Ask(op @ (Op::RxNext(_) | Op::TxNext(_)))
                    if cx.ahead < limit && cx.ahead < cx.quiet =>
                {
                    cx.value = cx.rings.take(op, cx.now + cx.ahead);
                }
                // A task's wake-up (`wake_up_process`: onto its run queue; no time, no switch
                // here), as the core's loop makes it (`Op::Wake`, `Op::WakeSoftirq`), where that
                // loop would go straight on to the next step.
                After::Ask(Op::Wake(t)) if inline!() => cx.sched.wake(t),
                After::Ask(Op::WakeSoftirq(nr)) if inline!() => {
                    if let Some(t) = softirq_threads[usize::from(cx.cpu)][usize::from(nr)] {
                        cx.sched.wake(t);
                    }
                }
                After::Ask(op) => break op,
            }
        };
    }
    let op = loop {
        // Matched in place: the step's fields are read as its variant needs them.
        let at = pc as usize;
        pc += 1;
        match steps[at] {
            // Run `n` instructions before the frame's next action. With interrupts off
            // nothing can come between them and that action, so (outside the reference
            // mode) their time is charged to the step and the frame goes straight on: one
            // step instead of two, the same time. With interrupts on the same holds while no
            // event can come before they end (`calm`); otherwise they are an [`Op::Run`] of
            // their own, after which the CPU checks for an interrupt.
            Step::Run(n) => {
                let t = cx.costs.instructions(n);
                if cx.ahead + t < limit {
                    cx.ahead += t;
                } else {
                    break Op::Run(n);
                }
            }
            Step::RunDrawn(i) => {
                let n = drawn[usize::from(i)].draw();
                let t = cx.costs.instructions(n);
                if cx.ahead + t < limit {
                    cx.ahead += t;
                } else {
                    break Op::Run(n);
                }
            }
            // Code an interrupt may cut: folded as a `Run` is where nothing can come before
            // it ends (the core's loop would run it ahead, `Op::Busy`), unless the core has a
            // workload, whose cold-code model draws its misses in the core's loop.
            Step::Code(n) => {
                let t = cx.costs.instructions(n);
                if cx.work.is_none() && cx.ahead + t < limit {
                    cx.ahead += t;
                    *cx.in_user = false;
                } else {
                    break Op::Code(n);
                }
            }
            // The microcode's delivery, folded where the core's loop would go straight on.
            Step::Vectoring => {
                let mut t = cx.costs.vectoring();
                if cx.from_user {
                    t += cx.costs.privilege_change();
                }
                if cx.ahead + t < limit {
                    cx.ahead += t;
                } else {
                    break Op::Vectoring;
                }
            }
            Step::Read(r) => {
                break Op::Access(Access::MmioRead {
                    addr: addrs[usize::from(r.0)],
                })
            }
            Step::Write(r, d) => {
                break Op::Access(Access::MmioWrite {
                    addr: addrs[usize::from(r.0)],
                    data: this.operand(d, vars),
                })
            }
            Step::In(port) => break Op::Access(Access::PortIn { port, wide: false }),
            Step::InW(port) => break Op::Access(Access::PortIn { port, wide: true }),
            Step::Out(port, d) => {
                let data = this.operand(d, vars) as u8;
                break Op::Access(Access::PortOut { port, data });
            }
            Step::LapicRead(reg) => break Op::Access(Access::LapicRead { reg }),
            Step::LapicWrite(reg, data) => break Op::Access(Access::LapicWrite { reg, data }),
            Step::IntAck => break Op::Access(Access::IntAck),
            Step::TakeVector => this.a = cx.value & 0xFF,
            Step::Call(e) => call!(e),
            Step::CallVector(t) => call!(idt[t as usize * 256 + (this.a & 0xFF) as usize]),
            Step::JumpVector(t) => pc = idt[t as usize * 256 + (this.a & 0xFF) as usize],
            Step::Return(v) => {
                let v = this.operand(v, vars);
                // A task's first frame is never popped: its return goes to the core's loop.
                if top == 0 || !inline!() {
                    break Op::Return(v);
                }
                stack.pop();
                top -= 1;
                this = stack[top];
                pc = this.pc;
                cx.value = v;
            }
            Step::Jump(to) | Step::Goto(to) => pc = to,
            Step::BranchIfClear(mask, to) => {
                if cx.value & mask == 0 {
                    pc = to;
                }
            }
            Step::BranchIfLocal(to) => {
                if this.a != 0 {
                    pc = to;
                }
            }
            Step::BranchIfSet(v, bits, to) => {
                if vars[usize::from(v.0)] & u64::from(bits) != 0 {
                    pc = to;
                }
            }
            Step::Cli => {
                *cx.irqs_enabled = false;
                limit = limit!();
            }
            Step::Sti => {
                *cx.irqs_enabled = true;
                limit = limit!();
            }
            Step::Halt { sti } => break Op::Halt { sti },
            // IRET, here where the core's loop would go straight on with the frame below:
            // no op of its own parked at that depth, and with interrupts on, nothing to take
            // and nothing queued before the time ahead.
            Step::Iret => {
                let t = cx.costs.iret();
                let on = if !cx.fold || !cx.lapic.nothing_requested(cx.intr_line) {
                    SimDuration::ZERO
                } else {
                    cx.quiet
                };
                if top == 0 || cx.parked_depth == Some(top) || cx.ahead + t >= on {
                    break Op::Iret;
                }
                stack.pop();
                top -= 1;
                this = stack[top];
                pc = this.pc;
                if let Some(v) = cx.saved_values.pop() {
                    cx.value = v;
                }
                cx.ahead += t;
                *cx.irqs_enabled = true;
                limit = on;
            }
            Step::Work { idle } => {
                let Some(w) = cx.work.as_deref_mut() else {
                    pc = idle;
                    continue;
                };
                pc -= 1; // back here for the next piece
                match w.next_piece() {
                    Piece::Busy(d) => {
                        debug_assert!(*cx.irqs_enabled, "process code runs with IF set");
                        break Op::Busy { d, user: true };
                    }
                    Piece::Syscall(d) => break Op::Busy { d, user: false },
                    Piece::Cli => {
                        *cx.irqs_enabled = false;
                        limit = limit!();
                    }
                    Piece::Sti => {
                        *cx.irqs_enabled = true;
                        limit = limit!();
                    }
                    // Folded as a `Run` with interrupts off is.
                    Piece::Held(d) => {
                        if cx.fold && !*cx.irqs_enabled && cx.ahead + d < cx.horizon {
                            cx.ahead += d;
                        } else {
                            break Op::Held(d);
                        }
                    }
                    Piece::Rest(gap) => {
                        pc = idle;
                        break Op::Rest(gap);
                    }
                    Piece::Spl(kind) => {
                        let p = spl.as_ref().expect("spl sections need an spl kernel");
                        let cpl = &mut vars[usize::from(p.cpl.0)];
                        this.b = *cpl as u32;
                        *cpl = p.raise(kind, *cpl);
                    }
                    Piece::Splx => {
                        let p = spl.as_ref().expect("spl sections need an spl kernel");
                        vars[usize::from(p.cpl.0)] = u64::from(this.b);
                        // `splz`: an interrupt held off and now unmasked is taken through
                        // a software `int` to its stub, with interrupts off.
                        if let Some(e) = p.splz_replay(vars) {
                            *cx.irqs_enabled = false;
                            break Op::Int(Frame::at(e));
                        }
                    }
                    Piece::Code(n) => break Op::Code(n),
                }
            }
            Step::Inc(v) => vars[usize::from(v.0)] += 1,
            Step::Store(v) => vars[usize::from(v.0)] = u64::from(cx.value),
            Step::SetBits(v, m) => vars[usize::from(v.0)] |= u64::from(m),
            Step::ClearBits(v, m) => vars[usize::from(v.0)] &= !u64::from(m),
            Step::NoteHandled => this.a |= u32::from(cx.value == IRQ_HANDLED),
            Step::HardirqEnter => cx.preempt.hardirq += 1,
            Step::HardirqLeave => cx.preempt.hardirq -= 1,
            Step::User(n) => {
                break Op::Busy {
                    d: cx.costs.instructions(n),
                    user: true,
                }
            }
            Step::Block => break Op::Block,
            // A preemption point where the core's loop would switch nothing (`Machine::cpu_run`,
            // `Op::Resched`: the same test) and would go straight on: here, as a call is.
            Step::Resched { irq_return } => {
                let from_user = irq_return && this.b != 0;
                let may = (cx.preempt).allows_switch(irq_return, from_user, cx.kernel_preempts);
                if !inline!() || (may && cx.sched.need_resched(cx.cpu)) {
                    break Op::Resched { irq_return };
                }
            }
            Step::Sched(op) => after!(op.step()),
            Step::Cyclic(op) => after!(op.step(cyclic, cx.now + cx.ahead)),
            Step::IrqThread(op) => after!(irq_threads.step(op, vars)),
            // The networking core's and drivers' operations, interpreted by their subsystem.
            Step::Net(op) => after!(net.step(op, &mut this, vars, cx.softirq, cx.value, cx.cpu)),
            Step::Spl(op) => after!(spl
                .as_ref()
                .expect("an spl step in an spl kernel")
                .step(op, &mut this, vars)),
            Step::Deferred(op) => after!(deferred.step(op, &mut this, vars, cx.cpu)),
            Step::Softirq(op) => after!(cx
                .softirq
                .step(op, &mut this, cx.preempt, tasklets, ksoftirqd, cx.cpu)),
            Step::Timer(op) => {
                after!(hrtimers.step(op, &mut this, cyclic, cx.softirq, cx.now + cx.ahead, cx.cpu))
            }
        }
    };
    stack[top] = Frame { pc, ..this };
    op
}

impl Frame {
    #[inline(always)]
    fn operand(&self, o: Operand, vars: &[u64]) -> u32 {
        match o {
            Operand::Const(c) => c,
            Operand::Var(v) => vars[usize::from(v.0)] as u32,
            Operand::VarByte(v, shift) => u32::from((vars[usize::from(v.0)] >> shift) as u8),
            Operand::Local => self.a,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::cpu::CpuTiming;
    use crate::kernel::costs::KernelInstructions;
    use crate::kernel::softirq::SoftirqStep::*;
    use crate::kernel::softirq::TASKLET_SOFTIRQ;

    #[test]
    fn a_step_is_twelve_bytes() {
        // The interpreter loads one per step; keep them small (addresses go through a table).
        assert_eq!(std::mem::size_of::<Step>(), 12);
    }

    /// A machine without network controllers.
    struct NoRings;
    impl Rings for NoRings {
        fn take(&mut self, _: Op, _: SimTime) -> u32 {
            unreachable!("no ring op in these programs")
        }
    }

    fn kernel() -> Kernel {
        Kernel::new(KernelInstructions {
            entry_stub: 0,
            do_irq: 0,
            flow_handler: 0,
            i8259_chip_op: 0,
            apic_chip_op: 0,
            handle_irq_event: 0,
            per_action: 0,
            note_interrupt: 0,
            driver_isr: 0,
            tasklet_schedule: 0,
            irq_exit: 0,
            do_softirq: 0,
            tasklet_action: 0,
            driver_tasklet: 0,
            exit_path: 0,
            idle_loop: 0,
        })
    }

    /// A core at 1 GHz, one instruction per cycle, nothing else costed.
    fn one_ns_per_instruction() -> CpuCosts {
        CpuTiming {
            clock_hz: 1e9,
            cycles_per_instruction: 1.0,
            interrupt_vectoring_cycles: 0.0,
            iret_cycles: 0.0,
            lapic_access_cycles: 0.0,
            privilege_change_cycles: 0.0,
            halt_exit: SimDuration::ZERO,
        }
        .costs()
    }

    /// Step a frame as the core does, with interrupts `irqs` and the given last value; the op
    /// and the time folded into it.
    fn step(
        k: &mut Kernel,
        f: &mut Frame,
        value: u32,
        irqs: &mut bool,
        s: &mut SoftirqState,
    ) -> (Op, SimDuration) {
        let costs = one_ns_per_instruction();
        let mut preempt = PreemptCount::default();
        let mut cx = StepCtx {
            kernel: k,
            costs: &costs,
            fold: true,
            horizon: SimDuration::from_ps(u64::MAX),
            // An interrupt may come at any time: with interrupts on, every step is the core's.
            quiet: SimDuration::ZERO,
            lapic: &LocalApic::default(),
            intr_line: false,
            ahead: SimDuration::ZERO,
            value,
            irqs_enabled: irqs,
            preempt: &mut preempt,
            softirq: s,
            work: None,
            now: SimTime::ZERO,
            cpu: 0,
            from_user: false,
            in_user: &mut false,
            saved_values: &mut Vec::new(),
            parked_depth: None,
            rings: &mut NoRings,
            sched: &mut super::super::sched::Scheduler::new(1),
            kernel_preempts: false,
        };
        let mut stack = vec![*f];
        let op = super::step(&mut stack, &mut cx);
        assert_eq!(
            stack.len(),
            1,
            "the helper steps one frame (no call made inline)"
        );
        *f = stack[0];
        (op, cx.ahead)
    }

    #[test]
    fn instructions_with_interrupts_off_fold_into_the_next_action_and_branches_read_the_value() {
        // A driver's shared-line check: read the status, return IRQ_NONE if its bit is clear.
        let mut k = kernel();
        let status = k.code.mmio(0xFAFF_2004);
        let mut b: Builder = vec![Run(100), Read(status)].into();
        let test = b.here();
        b.push(BranchIfClear(0x4, 0))
            .push(Return(Operand::Const(IRQ_HANDLED)));
        let none = b.here();
        b.patch(test, none);
        b.push(Return(Operand::Const(0)));
        let isr = k.code.add("isr", b);
        use Step::*;
        let (mut irqs, mut s) = (false, SoftirqState::default());
        let mut f = Frame::at(isr);
        let (op, ahead) = step(&mut k, &mut f, 0, &mut irqs, &mut s);
        assert_eq!(op, Op::Access(Access::MmioRead { addr: 0xFAFF_2004 }));
        assert_eq!(
            ahead,
            SimDuration::from_ps(100_000),
            "100 instructions at 1 ns, folded"
        );
        let mut g = f;
        assert_eq!(
            step(&mut k, &mut f, 0x4, &mut irqs, &mut s).0,
            Op::Return(1)
        );
        assert_eq!(
            step(&mut k, &mut g, 0x2, &mut irqs, &mut s).0,
            Op::Return(0)
        );
        // With interrupts on, the instructions are a step of their own: an interrupt may be
        // taken after them.
        let mut irqs = true;
        let (op, ahead) = step(&mut k, &mut Frame::at(isr), 0, &mut irqs, &mut s);
        assert_eq!((op, ahead), (Op::Run(100), SimDuration::ZERO));
    }

    /// Run `stack` as the core does, with the given flag, fold mode, quiet time and Local APIC.
    fn run_stack(
        k: &mut Kernel,
        stack: &mut Vec<Frame>,
        irqs: bool,
        fold: bool,
        quiet_ns: u64,
        lapic: &LocalApic,
    ) -> (Op, SimDuration, u32) {
        let (mut s, mut sched) = (
            SoftirqState::default(),
            super::super::sched::Scheduler::new(1),
        );
        run_stack_with(k, stack, irqs, fold, quiet_ns, lapic, &mut s, &mut sched)
    }

    /// [`run_stack`] with this CPU's softirq state and the scheduler given.
    #[allow(clippy::too_many_arguments)]
    fn run_stack_with(
        k: &mut Kernel,
        stack: &mut Vec<Frame>,
        irqs: bool,
        fold: bool,
        quiet_ns: u64,
        lapic: &LocalApic,
        softirq: &mut SoftirqState,
        sched: &mut super::super::sched::Scheduler,
    ) -> (Op, SimDuration, u32) {
        let costs = one_ns_per_instruction();
        let (mut irqs, mut preempt) = (irqs, PreemptCount::default());
        let mut cx = StepCtx {
            kernel: k,
            costs: &costs,
            fold,
            horizon: SimDuration::from_ps(u64::MAX),
            quiet: SimDuration::from_ns(quiet_ns),
            lapic,
            intr_line: false,
            ahead: SimDuration::ZERO,
            value: 0,
            irqs_enabled: &mut irqs,
            preempt: &mut preempt,
            softirq,
            work: None,
            now: SimTime::ZERO,
            cpu: 0,
            from_user: false,
            in_user: &mut false,
            saved_values: &mut Vec::new(),
            parked_depth: None,
            rings: &mut NoRings,
            sched,
            kernel_preempts: false,
        };
        let op = super::step(stack, &mut cx);
        (op, cx.ahead, cx.value)
    }

    #[test]
    fn calls_and_returns_run_inline_only_where_the_core_would_find_nothing_to_take() {
        // caller: run 10, call callee, branch on its value, read the status; callee: run 20,
        // return 4.
        let mut k = kernel();
        let status = k.code.mmio(0xFAFF_2004);
        let callee = k.code.add(
            "callee",
            vec![Step::Run(20), Step::Return(Operand::Const(4))].into(),
        );
        let mut b: Builder = vec![Step::Run(10), Step::Call(callee)].into();
        let test = b.here();
        b.push(Step::BranchIfClear(0x4, 0)).push(Step::Read(status));
        let skip = b.here();
        b.patch(test, skip);
        b.push(Step::Return(Operand::Const(0)));
        let caller = k.code.add("caller", b);
        let read = Op::Access(Access::MmioRead { addr: 0xFAFF_2004 });
        let idle = LocalApic::new(0, true);

        // Interrupts off, folding: the call and the return happen within the step, the callee's
        // value reaches the caller's branch, and the time is the sum of both runs.
        let mut stack = vec![Frame::at(caller)];
        let (op, ahead, value) = run_stack(&mut k, &mut stack, false, true, 0, &idle);
        assert_eq!((op, value), (read, 4));
        assert_eq!(ahead, SimDuration::from_ns(30));
        assert_eq!(stack.len(), 1, "the callee's frame is gone");

        // The reference mode: the call is the core's.
        let mut stack = vec![Frame::at(caller)];
        let (op, ..) = run_stack(&mut k, &mut stack, false, false, 0, &idle);
        assert_eq!(op, Op::Run(10));

        // Interrupts on and the next event 100 ns away: the same as with them off.
        let mut stack = vec![Frame::at(caller)];
        let (op, ahead, value) = run_stack(&mut k, &mut stack, true, true, 100, &idle);
        assert_eq!((op, ahead, value), (read, SimDuration::from_ns(30), 4));

        // ... but an event 25 ns away ends the callee's run as an op of its own (the core must
        // look at what the event brings before the return), ...
        let mut stack = vec![Frame::at(caller)];
        let (op, ahead, _) = run_stack(&mut k, &mut stack, true, true, 25, &idle);
        assert_eq!((op, ahead), (Op::Run(20), SimDuration::from_ns(10)));
        assert_eq!(stack.len(), 2, "the call was made inline");

        // ... and an interrupt requested stops it at once.
        let mut requested = LocalApic::new(0, true);
        requested.accept(0x41, false);
        let mut stack = vec![Frame::at(caller)];
        let (op, ahead, _) = run_stack(&mut k, &mut stack, true, true, 100, &requested);
        assert_eq!((op, ahead), (Op::Run(10), SimDuration::ZERO));
    }

    #[test]
    fn a_wake_up_and_a_preemption_point_run_inline_only_where_the_core_would_go_straight_on() {
        use crate::kernel::context::SchedClass;
        use crate::kernel::sched::{Scheduler, TaskContext, TaskState};
        use crate::kernel::softirq::SoftirqStep::WakeSoftirqd;
        // `wakeup_softirqd` (ksoftirqd's wake-up when softirqs are left pending), a voluntary
        // preemption point, then a block of instructions and a read.
        let mut k = kernel();
        let status = k.code.mmio(0xFAFF_2004);
        let program = k.code.add(
            "wake_then_resched",
            vec![
                WakeSoftirqd.into(),
                Step::Resched { irq_return: false },
                Step::Run(5),
                Step::Read(status),
            ]
            .into(),
        );
        let read = Op::Access(Access::MmioRead { addr: 0xFAFF_2004 });
        // ksoftirqd asleep: it ran once, then blocked, and the idle task has the core.
        let mut sched = Scheduler::new(1);
        let ksoftirqd = sched.spawn(
            "ksoftirqd/0",
            SchedClass::Normal { nice: 0 },
            0,
            Frame::at(0),
        );
        let mut loaded = TaskContext::default();
        sched.switch(0, &mut loaded, SimTime::ZERO);
        sched.tasks[usize::from(ksoftirqd)].state = TaskState::Sleeping;
        sched.switch(0, &mut loaded, SimTime::ZERO);
        k.ksoftirqd = vec![ksoftirqd];
        // Run the program once with interrupts off; `pending`: softirqs are left pending.
        let run = |k: &mut Kernel, sched: &mut Scheduler, fold: bool, pending: bool| {
            let mut s = SoftirqState::default();
            if pending {
                s.raise(TASKLET_SOFTIRQ);
            }
            let mut stack = vec![Frame::at(program)];
            let idle = LocalApic::default();
            let (op, ahead, _) =
                run_stack_with(k, &mut stack, false, fold, 0, &idle, &mut s, sched);
            (op, ahead)
        };
        let state = |s: &Scheduler| s.tasks[usize::from(ksoftirqd)].state;

        // Nothing pending: no wake-up, and nothing outranks the idle task, so the preemption
        // point switches nothing and the frame goes on to the read.
        let (op, ahead) = run(&mut k, &mut sched, true, false);
        assert_eq!((op, ahead), (read, SimDuration::from_ns(5)));
        // The reference mode hands the preemption point to the core's loop.
        let (op, _) = run(&mut k, &mut sched, false, false);
        assert_eq!(op, Op::Resched { irq_return: false });

        // Pending softirqs, reference mode: the wake-up is the core's, and nothing changed yet.
        let (op, _) = run(&mut k, &mut sched, false, true);
        assert_eq!(op, Op::Wake(ksoftirqd));
        assert_eq!(state(&sched), TaskState::Sleeping);
        // Folding: the wake-up is made here, and the preemption point after it, which would
        // now switch to ksoftirqd, is the core's.
        let (op, ahead) = run(&mut k, &mut sched, true, true);
        assert_eq!(
            (op, ahead),
            (Op::Resched { irq_return: false }, SimDuration::ZERO)
        );
        assert_eq!(state(&sched), TaskState::Runnable);
        assert!(sched.need_resched(0));
    }

    #[test]
    fn the_softirq_loop_restarts_at_most_ten_rounds() {
        // `__do_softirq` of kernel/softirq.c with a handler that raises its softirq again
        // every time (as a tasklet that reschedules itself does): ten rounds run, then the
        // loop leaves the rest pending (for ksoftirqd).
        let mut k = kernel();
        let handler = k.code.add(
            "reraise",
            vec![
                RaiseSoftirq(TASKLET_SOFTIRQ as u8).into(),
                Run(1),
                Return(Operand::Const(0)),
            ]
            .into(),
        );
        // (Without the preempt-count steps: the helper gives each step a fresh count.)
        let mut b = Builder::new();
        let restart = b.here();
        b.push(TakeSoftirqs);
        let take = b.here();
        b.push(TakeSoftirq {
            nr: TASKLET_SOFTIRQ as u8,
            absent: 0,
        })
        .push(Call(handler));
        let after = b.here();
        b.patch(take, after);
        b.push(Cli)
            .push(SoftirqRestart {
                max: 10,
                to: restart,
            })
            .push(Return(Operand::Const(0)));
        let do_softirq = k.code.add("__do_softirq", b);
        use Step::*;
        let (mut irqs, mut s) = (false, SoftirqState::default());
        s.raise(TASKLET_SOFTIRQ);
        let mut f = Frame::at(do_softirq);
        let mut rounds = 0;
        loop {
            match step(&mut k, &mut f, 0, &mut irqs, &mut s).0 {
                Op::Call(mut h) => {
                    assert!(irqs, "softirq handlers run with interrupts on");
                    rounds += 1;
                    while step(&mut k, &mut h, 0, &mut irqs, &mut s).0 != Op::Return(0) {}
                }
                Op::Return(0) => break,
                op => panic!("unexpected {op:?}"),
            }
        }
        assert_eq!(rounds, 10);
        assert_eq!(
            s.pending,
            1 << TASKLET_SOFTIRQ,
            "left pending for ksoftirqd"
        );
        assert!(!irqs);
    }
}
