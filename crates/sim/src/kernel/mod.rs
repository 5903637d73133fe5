//! The kernel side of the model: Linux 2.6's generic IRQ layer on x86, softirqs and tasklets,
//! execution contexts, and the drivers of the modelled devices.
//!
//! Kernel code runs as [`frames::Frame`]s: resumable state machines, one per function
//! activation, that tell the CPU what to do next (run N instructions, read a device register,
//! call another function). A register read stalls the CPU until the completion returns, so the
//! time a path takes is the sum of its steps on the modelled hardware.

pub mod context;
pub mod costs;
pub mod cpuidle;
pub mod frames;
pub mod sched;
pub mod softirq;

use costs::{IdleCosts, KernelInstructions};
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

/// Which interrupt service routine an action runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Isr {
    /// Seed 000's exerciser driver (Figures 4 and 5): index into [`Kernel::drivers`].
    Exerciser(u16),
    /// An on-board function's driver that reads its status register with port I/O and finds
    /// the interrupt is not its own, as uhci-hcd's `uhci_irq` does with `inw(USBSTS)`.
    PortStatusCheck { port: u16, instructions: u16 },
}

/// A registered handler (`struct irqaction`).
#[derive(Clone, Debug, Serialize)]
pub struct Action {
    pub isr: Isr,
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
    pub count: u64,
    pub unhandled: u64,
}

/// Which driver runs a card.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum DriverKind {
    /// Seed 000's driver (Figures 3-5): status check (legacy), ISR signature, tasklet.
    Seed000,
    /// Seed 002's ISR: write the acknowledge register (stopping the card's counter), read the
    /// counter back and file it in a histogram (`bin` instructions). No tasklet.
    RoundTrip { bin: u32 },
    /// A typical device ISR: `instructions` of its own, `status_reads` register reads, then a
    /// write that clears the interrupt. A source of other interrupts on the CPU.
    Generic { instructions: u32, status_reads: u8 },
}

/// What a driver's ISR and tasklet do. The exerciser driver is seed 000's Figures 3-5.
#[derive(Clone, Debug, Serialize)]
pub struct ExerciserDriver {
    pub kind: DriverKind,
    /// MSI mode (`msi_mode=1`): Figure 5's ISR; otherwise Figure 4's.
    pub msi_mode: bool,
    /// BAR0 addresses of the status and interrupt-clear registers (Figure 7: 0xFAFF2004 and
    /// 0xFAFF3174).
    pub status_addr: u64,
    pub clear_addr: u64,
    /// `IRQ_PENDING_FLAG` and `IRQ_CLEAR_MASK`.
    pub pending_flag: u32,
    pub clear_mask: u32,
    /// Signature writes: ISR entry (`ack_pointer + 0x10` dwords = BAR + 0x40) and tasklet entry
    /// (BAR + 0x80).
    pub isr_signature_addr: u64,
    pub tasklet_signature_addr: u64,
    pub tasklet: TaskletId,
    /// `int_count`, written as the signature payload.
    pub int_count: u32,
}

/// The local timer tick as the kernel runs it.
#[derive(Clone, Debug)]
pub struct Tick {
    pub vector: u8,
    pub period: crate::engine::SimDuration,
    pub handler: u32,
    pub timer_softirq: u32,
}

/// Kernel state shared by its CPUs; what is per CPU (softirqs, the running task) lives in the
/// core (`machine::Core`).
#[derive(Clone, Debug)]
pub struct Kernel {
    pub cost: KernelInstructions,
    pub irqs: Vec<IrqDesc>,
    /// Vector -> index into `irqs`.
    pub vector_irq: [Option<u16>; 256],
    pub drivers: Vec<ExerciserDriver>,
    pub tasklets: Vec<Tasklet>,
    /// `cached_irq_mask` of i8259.c: the IMR bits Linux believes are set.
    pub cached_irq_mask: u16,
    pub spurious_8259: u64,
    /// The local timer tick, if modelled.
    pub tick: Option<Tick>,
    /// Tick interrupts handled.
    pub ticks: u64,
    /// The cpuidle idle path, if this kernel has one (else `sti; hlt`).
    pub idle: Option<IdleCosts>,
}

impl Kernel {
    pub fn new(cost: KernelInstructions) -> Self {
        Kernel {
            cost,
            irqs: Vec::new(),
            vector_irq: [None; 256],
            drivers: Vec::new(),
            tasklets: Vec::new(),
            cached_irq_mask: !(1 << 2), // everything masked but the cascade (init_8259A)
            spurious_8259: 0,
            tick: None,
            ticks: 0,
            idle: None,
        }
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
        self.irqs.push(IrqDesc {
            irq,
            chip,
            flow,
            vector,
            actions: vec![action],
            count: 0,
            unhandled: 0,
        });
        Ok(())
    }

    /// `tasklet_init`.
    pub fn tasklet_init(&mut self, owner: u16) -> TaskletId {
        self.tasklets.push(Tasklet {
            scheduled: false,
            owner,
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
