//! The kernel side of the model: Linux 2.6's generic IRQ layer on x86, softirqs and tasklets,
//! execution contexts, and the drivers of the modelled devices.
//!
//! Kernel code is programs of one step language (`program.rs`) that the CPU runs frame by
//! frame: run N instructions, read a device register, call another function. A register read
//! stalls the CPU until the completion returns, so the time a path takes is the sum of its
//! steps on the modelled hardware. `linux.rs` builds Linux's interrupt paths, `drivers/` the
//! drivers' ISRs and tasklets.

pub mod context;
pub mod costs;
pub mod cpuidle;
pub mod cyclic;
pub mod drivers;
pub mod freebsd;
pub mod hrtimer;
pub mod irq_threads;
pub mod linux;
pub mod net;
pub mod ops;
pub mod pic;
pub mod program;
pub mod sched;
pub mod softirq;
pub mod spl;
pub mod tasks;
pub mod workqueue;

use costs::{IdleCosts, KernelInstructions};
pub use program::Entry;
use program::{Code, Var, NO_ENTRY};
use serde::Serialize;
use softirq::{SoftirqState, Tasklet, TaskletId};

/// The interrupt controller an IRQ is delivered through (`irq_chip` / `hw_interrupt_type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Chip {
    /// `i8259A_chip` "XT-PIC".
    XtPic,
    /// `ioapic_chip` "IO-APIC".
    IoApic,
    /// `msi_chip` "PCI-MSI".
    Msi,
}

/// The flow handler (`kernel/irq/chip.c`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Flow {
    /// `handle_level_irq`: mask and ack before the actions, unmask after (XT-PIC).
    Level,
    /// `handle_fasteoi_irq`: actions, then one EOI (IO-APIC level-triggered).
    FastEoi,
    /// `handle_edge_irq`: ack (EOI) before the actions (IO-APIC edge, MSI).
    Edge,
}

/// The delivery method a scenario's kernel is configured for (seed 000's three kernels).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// UP kernel without Local APIC support: 8259A pair only.
    Xtpic,
    /// Local APIC + IO-APIC, MSI disabled.
    Ioapic,
    /// Local APIC + MSI for devices that support it.
    Msi,
}

/// A registered handler (`struct irqaction`).
#[derive(Clone, Debug, Serialize)]
pub struct Action {
    /// The driver's ISR (a program in the kernel's code).
    pub handler: Entry,
    /// SA_INTERRUPT / IRQF_DISABLED: run with interrupts off (the seed's driver sets it).
    pub irqs_disabled: bool,
}

/// `struct irq_desc`.
#[derive(Clone, Debug, Serialize)]
pub struct IrqDesc {
    pub irq: u16,
    pub chip: Chip,
    pub flow: Flow,
    pub vector: u8,
    pub actions: Vec<Action>,
    /// `kstat_irqs` and `irqs_unhandled` (variables the flow handler counts in).
    pub count: Var,
    pub unhandled: Var,
}

/// The local timer tick as the kernel runs it.
#[derive(Clone, Debug)]
pub struct Tick {
    pub vector: u8,
    pub period: crate::engine::SimDuration,
    pub handler: Work,
    pub timer_softirq: Work,
}

/// How much a block of kernel code runs each time: a fixed count, or a count drawn each time
/// from [`Kernel::drawn`] (a block whose work varies from one run to the next).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Work {
    Fixed(u32),
    Drawn(u8),
}

impl Work {
    /// The step that runs it.
    pub fn step(self) -> program::Step {
        match self {
            Work::Fixed(n) => program::Step::Run(n),
            Work::Drawn(i) => program::Step::RunDrawn(i),
        }
    }
}

/// An instruction count drawn afresh each time its block runs: lognormal with this median and
/// this standard deviation of its logarithm (a right-skewed spread: most runs near the median,
/// a few much longer, never below zero), from its own random stream.
#[derive(Clone, Debug)]
pub struct DrawnCount {
    pub median: f64,
    pub sigma: f64,
    pub rng: crate::engine::Stream,
}

impl DrawnCount {
    pub fn draw(&mut self) -> u32 {
        crate::engine::lognormal(&mut self.rng, self.median, self.sigma)
            .round()
            .clamp(0.0, f64::from(u32::MAX)) as u32
    }
}

/// `cached_irq_mask` of i8259.c: the IMR bits Linux believes are set.
pub const CACHED_IRQ_MASK: Var = Var(0);
/// Interrupts on a vector nobody registered (a spurious 8259 IRQ 7 among them).
pub const SPURIOUS_8259: Var = Var(1);
/// Tick interrupts handled.
pub const TICKS: Var = Var(2);

/// Kernel state shared by its CPUs; what is per CPU (softirqs, the running task) lives in the
/// core (`machine::Core`).
#[derive(Clone, Debug)]
pub struct Kernel {
    pub cost: KernelInstructions,
    pub irqs: Vec<IrqDesc>,
    /// Vector -> index into `irqs`.
    pub vector_irq: [Option<u16>; 256],
    pub tasklets: Vec<Tasklet>,
    /// The local timer tick, if modelled.
    pub tick: Option<Tick>,
    /// The cpuidle idle path, if this kernel has one (else `sti; hlt`).
    pub idle: Option<IdleCosts>,
    /// Every program: the kernel's paths and the drivers'.
    pub code: Code,
    /// Kernel variables ([`Var`]): counters, masks, drivers' state.
    pub vars: Vec<u64>,
    /// The interrupt descriptor tables, [`program::Idt`] by vector: the program each vector
    /// calls.
    pub idt: Vec<Entry>,
    /// Where the CPU starts programs (filled by [`linux::link`]).
    pub entries: linux::Entries,
    /// The idle task runs the scenario's workload before it halts (`workload.rs`).
    pub workload: bool,
    /// FreeBSD's `cpl` masking policy, for a kernel that has it (`kernel/freebsd.rs`).
    pub spl: Option<spl::SplPolicy>,
    /// The counts [`program::Step::RunDrawn`] draws from.
    pub drawn: Vec<DrawnCount>,
    /// The scheduler's costs and preemption model, for a kernel that runs tasks besides the
    /// idle task; with it the tick is an hrtimer on the one-shot Local APIC timer.
    pub sched: Option<costs::SchedCosts>,
    pub hrtimers: hrtimer::Hrtimers,
    /// cyclictest's threads (their user-space state), if the scenario runs it.
    pub cyclic: Vec<cyclic::CyclicThread>,
    /// NAPI and the network drivers' state, and their costs (with network devices).
    pub net: net::Net,
    pub net_costs: Option<costs::NetCosts>,
    /// Each CPU's ksoftirqd, for a kernel that runs tasks.
    pub ksoftirqd: Vec<sched::TaskId>,
    /// Threaded handlers (`costs::Threads`, enabled), their IRQ threads by descriptor and each
    /// CPU's softirq threads by softirq number.
    pub threads: Option<costs::Threads>,
    pub irq_threads: irq_threads::IrqThreads,
    pub softirq_threads: Vec<[Option<sched::TaskId>; softirq::NR_SOFTIRQS]>,
    /// The thread programs `linux::link` built: each descriptor's IRQ thread, and each
    /// softirq's thread with its name (`sirq-net-rx`).
    pub irq_thread_entries: Vec<Entry>,
    pub softirq_thread_entries: Vec<(u8, &'static str, Entry)>,
    /// Timer-wheel timers and the `events` workqueue (drivers' deferred work).
    pub deferred: workqueue::Deferred,
}

impl Kernel {
    pub fn new(cost: KernelInstructions) -> Self {
        let mut vars = vec![0; 3];
        vars[usize::from(CACHED_IRQ_MASK.0)] = u64::from(!(1u16 << 2)); // all masked but the cascade (init_8259A)
        Kernel {
            cost,
            irqs: Vec::new(),
            vector_irq: [None; 256],
            tasklets: Vec::new(),
            tick: None,
            idle: None,
            code: Code::default(),
            vars,
            idt: vec![NO_ENTRY; 512],
            entries: linux::Entries::default(),
            workload: false,
            spl: None,
            drawn: Vec::new(),
            sched: None,
            hrtimers: hrtimer::Hrtimers::default(),
            cyclic: Vec::new(),
            net: net::Net::default(),
            net_costs: None,
            ksoftirqd: Vec::new(),
            threads: None,
            irq_threads: irq_threads::IrqThreads::default(),
            softirq_threads: Vec::new(),
            irq_thread_entries: Vec::new(),
            softirq_thread_entries: Vec::new(),
            deferred: workqueue::Deferred::default(),
        }
    }

    /// A block of `median` instructions whose count is drawn each run with spread `sigma`
    /// ([`DrawnCount`]) from the stream `rng`; a fixed count when `sigma` is 0.
    pub fn work(&mut self, median: u32, sigma: f64, rng: crate::engine::Stream) -> Work {
        if sigma == 0.0 {
            return Work::Fixed(median);
        }
        self.drawn.push(DrawnCount {
            median: f64::from(median),
            sigma,
            rng,
        });
        Work::Drawn(u8::try_from(self.drawn.len() - 1).expect("fewer than 256 drawn blocks"))
    }

    /// A new kernel variable holding `init`.
    pub fn new_var(&mut self, init: u64) -> Var {
        self.vars.push(init);
        Var((self.vars.len() - 1) as u16)
    }

    pub fn var(&self, v: Var) -> u64 {
        self.vars[usize::from(v.0)]
    }

    /// Clear bit `irq` of `cached_irq_mask` (`enable_8259A_irq` at `request_irq`).
    pub fn unmask_cached(&mut self, irq: u8) {
        self.vars[usize::from(CACHED_IRQ_MASK.0)] &= !(1u64 << irq);
    }

    /// `request_irq`: add an action to the IRQ's chain, creating the descriptor on first use.
    /// Sharing needs every action to agree (SA_SHIRQ); MSI vectors are never shared.
    pub fn request_irq(
        &mut self,
        irq: u16,
        chip: Chip,
        flow: Flow,
        vector: u8,
        action: Action,
    ) -> Result<(), String> {
        if let Some(i) = self.irqs.iter().position(|d| d.irq == irq) {
            let d = &mut self.irqs[i];
            if d.chip == Chip::Msi || chip == Chip::Msi {
                return Err(format!(
                    "IRQ {irq} (vector {vector}) would be shared by two MSI devices; an MSI vector \
                     belongs to one device: give each device its own msi_vector"
                ));
            }
            d.actions.push(action);
            return Ok(());
        }
        if let Some(other) = self.vector_irq[usize::from(vector)] {
            return Err(format!(
                "vector {vector} is already used by IRQ {}; two interrupt sources cannot share \
                 a vector on one CPU: choose another vector",
                self.irqs[usize::from(other)].irq
            ));
        }
        self.vector_irq[usize::from(vector)] = Some(self.irqs.len() as u16);
        let (count, unhandled) = (self.new_var(0), self.new_var(0));
        self.irqs.push(IrqDesc {
            irq,
            chip,
            flow,
            vector,
            actions: vec![action],
            count,
            unhandled,
        });
        Ok(())
    }

    /// `tasklet_init`: `func` is the tasklet function's program.
    pub fn tasklet_init(&mut self, func: Entry) -> TaskletId {
        self.tasklets.push(Tasklet {
            scheduled: false,
            func,
        });
        (self.tasklets.len() - 1) as TaskletId
    }
}

/// `tasklet_schedule`: queue once on this CPU, raise TASKLET_SOFTIRQ.
pub(crate) fn tasklet_schedule(tasklets: &mut [Tasklet], softirq: &mut SoftirqState, t: TaskletId) {
    let tl = &mut tasklets[usize::from(t)];
    if !tl.scheduled {
        tl.scheduled = true;
        softirq.tasklet_vec.push_back(t);
        softirq.raise(softirq::TASKLET_SOFTIRQ);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_count_is_lognormal_around_its_median_and_a_fixed_one_draws_nothing() {
        let mut k = Kernel::new(KernelInstructions::default());
        let rng = || crate::engine::RngStreams::new(11).stream("kernel.tick.handler");
        assert_eq!(k.work(8000, 0.0, rng()), Work::Fixed(8000));
        assert!(k.drawn.is_empty());
        let w = k.work(8000, 0.35, rng());
        assert_eq!(w, Work::Drawn(0));
        assert_eq!(w.step(), program::Step::RunDrawn(0));
        let logs: Vec<f64> = (0..40_000)
            .map(|_| f64::from(k.drawn[0].draw()).ln())
            .collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        assert!(
            (mean.exp() / 8000.0 - 1.0).abs() < 0.01,
            "median {}",
            mean.exp()
        );
        assert!((sd / 0.35 - 1.0).abs() < 0.02, "sigma {sd}");
    }
}
