//! The core's vocabulary, shared by the step interpreter (`program.rs`) and every subsystem
//! that owns steps (`net.rs`, `softirq.rs`, `hrtimer.rs`, `workqueue.rs`, `spl.rs`) and by the
//! scheduler: a position in the code ([`Entry`]), a function activation ([`Frame`]), a kernel
//! variable ([`Var`]), an operand, the register accesses and the ops a frame hands the core
//! ([`Op`]), and what a subsystem's operation says about how its frame goes on ([`After`]).
//! Nothing here knows a subsystem, so the subsystems depend on it and the interpreter on them,
//! with no circle between the interpreter and what it dispatches to.

use crate::engine::SimDuration;

/// The position of a step in the kernel's code; a program's entry is its first step.
pub type Entry = u32;

/// No program (an empty slot of a dispatch table).
pub const NO_ENTRY: Entry = Entry::MAX;

/// A kernel variable: an index into [`Kernel::vars`](super::Kernel::vars). Counters the results read (`ticks`,
/// `spurious_8259`, each descriptor's counts), masks (`cached_irq_mask`) and drivers' own state
/// (`int_count`) are variables, so that programs change them without a step of their own.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Var(pub u16);

/// A memory-mapped register: an index into [`Code::mmio`](super::program::Code::mmio)'s table of addresses (which keeps a
/// step at 12 bytes: the interpreter loads one per step).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Mmio(pub u16);

/// A value a step writes or returns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    Const(u32),
    /// A kernel variable's low 32 bits.
    Var(Var),
    /// One byte of a variable: `(var >> shift) as u8` (a cached 8259 mask for one chip).
    VarByte(Var, u8),
    /// The frame's first local.
    Local,
}

/// Which interrupt descriptor table a vector is looked up in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Idt {
    /// The Local APIC supplied the vector.
    Apic = 0,
    /// The 8259 answered the interrupt-acknowledge cycle: a vector nobody registered is its
    /// spurious IRQ 7/15 path, not the Local APIC's.
    Pic = 1,
}

/// A register access the CPU performs on behalf of kernel code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Uncached load from memory-mapped I/O: non-posted, the core waits for the completion.
    MmioRead { addr: u64 },
    /// Uncached store: the core waits until the FSB has accepted it; it is posted beyond.
    MmioWrite { addr: u64, data: u32 },
    /// IN: non-posted; `wide`: a 16-bit access.
    PortIn { port: u16, wide: bool },
    /// OUT: non-posted too; x86 waits for I/O writes to complete (Intel SDM vol. 3, 8.2.5).
    PortOut { port: u16, data: u8 },
    /// Local APIC register read: on the core, no bus cycle.
    LapicRead { reg: u32 },
    /// Local APIC register write (an EOI write may send an EOI message to the IO-APIC).
    LapicWrite { reg: u32, data: u32 },
    /// The 8259's interrupt-acknowledge cycle; the value returned is the vector.
    IntAck,
}

/// What a frame asks the CPU to do next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Execute this many instructions.
    Run(u32),
    /// The microcoded interrupt delivery (IDT gate, frame push).
    Vectoring,
    Access(Access),
    Call(Frame),
    /// A software interrupt (`int`): enter the frame as an interrupt, saving the registers.
    Int(Frame),
    /// Return to the caller with a value (an ISR's irqreturn_t, for instance).
    Return(u32),
    /// Leave the interrupt frame: IRET restores the interrupted context's flags.
    Iret,
    /// Wait for an interrupt (see `Step::Halt`).
    Halt {
        sti: bool,
    },
    /// Process code with interrupts on for this long, in user mode or in the kernel (a system
    /// call's work): an interrupt cuts it at the next instruction boundary.
    Busy {
        d: SimDuration,
        user: bool,
    },
    /// Instructions an interrupt may cut (`Step::Code`).
    Code(u32),
    /// As `Code`, with the stalls of its serialising instructions (`NetStep::CodeSerial`).
    CodeStall {
        n: u32,
        stall: SimDuration,
    },
    /// Code with interrupts off for this long.
    Held(SimDuration),
    /// The workload's busy stretch is spent; the next arrives after this gap (`None`: when
    /// the machine says so).
    Rest(Option<SimDuration>),
    /// The running task sleeps: switch to the next one (`schedule()`).
    Block,
    /// Wake this task (`try_to_wake_up`): it becomes runnable on its CPU's run queue.
    Wake(super::context::TaskId),
    /// `wakeup_softirqd(nr)` of a threaded kernel: wake this CPU's thread of softirq `nr`.
    WakeSoftirq(u8),
    /// A preemption point (`Step::Resched`).
    Resched {
        irq_return: bool,
    },
    /// Program the Local APIC timer for the CPU's earliest hrtimer.
    ArmTimer,
    /// The scheduler's tick and its real-time period timer (`SchedStep::Tick`,
    /// `SchedStep::RtPeriod`).
    SchedTick,
    RtPeriod,
    /// A measuring program's sample (cyclictest thread `thread`'s latency, ns), for the
    /// machine's probe.
    Sample {
        thread: u8,
        ns: u64,
    },
    /// Take the next written-back receive descriptor of machine device `k`, if there is one
    /// (the value: 1 or 0).
    RxNext(u8),
    /// Take the next written-back transmit descriptor of machine device `k`, if there is one
    /// (the value: 1 or 0).
    TxNext(u8),
}

/// One function activation: its position in the code and its locals (an interrupt's vector,
/// `handle_IRQ_event`'s return value, `__do_softirq`'s pending mask and rounds,
/// `tasklet_action`'s current tasklet).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub pc: Entry,
    pub a: u32,
    pub b: u32,
}

impl Frame {
    /// An activation of the program at `entry`.
    pub fn at(entry: Entry) -> Frame {
        Frame {
            pc: entry,
            a: 0,
            b: 0,
        }
    }
}

/// What the interpreter does after an operation a subsystem interprets (`Step::Net` and
/// the others): the subsystem changes its own state and says how the frame goes on.
pub enum After {
    /// The next step.
    Next,
    /// Go to this step of the program instead.
    Goto(Entry),
    /// Call this program.
    Call(Entry),
    /// Call with this frame (its locals set).
    CallFrame(Frame),
    /// Interrupts on (`local_irq_enable`), then the next step.
    EnableIrqs,
    /// The core stalls this long (lines coming, serialising instructions).
    Stall(SimDuration),
    /// The core must act (ask a device, wake a task): the frame hands this op back.
    Ask(Op),
}

/// `irqreturn_t`'s IRQ_HANDLED.
pub const IRQ_HANDLED: u32 = 1;
