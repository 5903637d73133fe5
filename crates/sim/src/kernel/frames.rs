//! Kernel code paths as resumable frames.
//!
//! Each [`Frame`] is one activation of a kernel function. [`Frame::step`] advances it to its next
//! observable action and returns it as an [`Op`]: run some instructions, access a register
//! (which the CPU turns into a bus transaction, stalling for reads and non-posted writes), call
//! another function, or return. The frames are the running task's kernel stack, so interrupt
//! nesting and softirqs on interrupt exit are stack operations; a task switch swaps the core's
//! stack for the next task's (`kernel/sched.rs`).
//!
//! The paths follow Linux 2.6.18-2.6.24 on i386 (see `kernels/linux-2.6.18-i386-up.toml` for the
//! source of each instruction count):
//! - `common_interrupt` -> `do_IRQ` -> flow handler -> `handle_IRQ_event` -> actions -> `irq_exit`
//!   -> `__do_softirq` -> `tasklet_action` -> tasklet function;
//! - XT-PIC `handle_level_irq` (2.6.18: `__do_IRQ` with `.ack = mask_and_ack_8259A`, `.end =
//!   end_8259A_irq`: the same port I/Os),
//! - IO-APIC level `handle_fasteoi_irq` (2.6.18: `.ack` is empty and `.end =
//!   end_level_ioapic_irq`: "we do not touch any IO-APIC register while handling them"),
//! - MSI and IO-APIC edge `handle_edge_irq` (Local APIC EOI before the handler).

use super::context::PreemptCount;
use super::softirq::{SoftirqState, MAX_SOFTIRQ_RESTART, TASKLET_SOFTIRQ, TIMER_SOFTIRQ};
use super::{DriverKind, Flow, Isr, Kernel};
use crate::engine::SimDuration;
use crate::hw::cpu::CpuCosts;
use crate::hw::lapic;
use crate::hw::pic8259::{CASCADE_IR, MASTER_CMD, MASTER_DATA, SLAVE_CMD, SLAVE_DATA};

/// A register access the CPU performs on behalf of kernel code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Uncached load from memory-mapped I/O: non-posted, the core waits for the completion.
    MmioRead { addr: u64 },
    /// Uncached store: the core waits until the FSB has accepted it; it is posted beyond.
    MmioWrite { addr: u64, data: u32 },
    /// IN: non-posted.
    PortIn { port: u16 },
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
    /// Return to the caller with a value (an ISR's irqreturn_t, for instance).
    Return(u32),
    /// Leave the interrupt frame: IRET restores the interrupted context's flags.
    Iret,
    /// Wait for an interrupt: `sti; hlt` (`sti`), or the idle state the governor picks, entered
    /// with interrupts off (MWAIT wakes on a pending interrupt without taking it).
    Halt {
        sti: bool,
    },
}

/// The per-CPU state a frame may look at or change while it steps.
pub struct StepCtx<'a> {
    pub kernel: &'a mut Kernel,
    /// The core's instruction timing, for instructions a frame runs within its step.
    pub costs: &'a CpuCosts,
    /// May instructions run with interrupts off be folded into the step (`run!`)? Not in the
    /// reference mode, which ends every timed step at an event.
    pub fold: bool,
    /// Folding may not reach this far (the next SMI, which the interrupt flag does not hold).
    pub horizon: SimDuration,
    /// Time of the instructions folded into this step; it passes before the returned op.
    pub charged: SimDuration,
    /// The value of the last completed read, or the last callee's return value.
    pub value: u32,
    pub irqs_enabled: &'a mut bool,
    pub preempt: &'a mut PreemptCount,
    /// This CPU's softirq state.
    pub softirq: &'a mut SoftirqState,
}

/// One function activation. `pc` is the resume point within the function.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// The idle task's loop (`cpu_idle`).
    Idle {
        pc: u8,
    },
    /// A hardware interrupt being taken: INTA (XT-PIC only), vectoring, entry stub, `do_IRQ`,
    /// exit path, IRET. `vector` is known up front when the Local APIC supplied it.
    Interrupt {
        pc: u8,
        vector: u8,
        from_pic: bool,
    },
    DoIrq {
        pc: u8,
        desc: u16,
    },
    Flow {
        pc: u8,
        desc: u16,
    },
    /// `mask_and_ack_8259A`.
    I8259MaskAck {
        pc: u8,
        irq: u8,
    },
    /// `enable_8259A_irq`.
    I8259Unmask {
        pc: u8,
        irq: u8,
    },
    /// `i8259A_irq_real`: read the ISR through OCW3 to tell a spurious IRQ7/15 from a real one.
    I8259IrqReal {
        pc: u8,
        irq: u8,
    },
    /// `handle_IRQ_event`: walk the action chain.
    HandleIrqEvent {
        pc: u8,
        desc: u16,
        next: u8,
        handled: bool,
    },
    /// Seed 000's driver ISR: Figure 4 (legacy) or Figure 5 (MSI).
    ExerciserIsr {
        pc: u8,
        driver: u16,
    },
    /// Seed 002's ISR: acknowledge write, counter read, histogram.
    RoundTripIsr {
        pc: u8,
        driver: u16,
    },
    /// A generic device ISR: status reads, then a clear write.
    GenericIsr {
        pc: u8,
        driver: u16,
        reads: u8,
    },
    /// Another driver on a shared line: a status read by port I/O, then IRQ_NONE.
    PortStatusIsr {
        pc: u8,
        port: u16,
        instructions: u16,
    },
    IrqExit {
        pc: u8,
    },
    /// `smp_apic_timer_interrupt`: the local timer tick.
    LocalTimer {
        pc: u8,
    },
    /// `do_softirq` / `__do_softirq`; `pending` is the mask taken for this round.
    DoSoftirq {
        pc: u8,
        restarts: u8,
        pending: u16,
    },
    TaskletAction {
        pc: u8,
        current: u16,
    },
    /// Seed 000's tasklet: one signature write.
    ExerciserTasklet {
        pc: u8,
        driver: u16,
    },
}

const IRQ_NONE: u32 = 0;
const IRQ_HANDLED: u32 = 1;

/// Run `n` instructions before the frame's next action. With interrupts off nothing can come
/// between them and that action, so (outside the reference mode) their time is charged to the
/// step and the frame goes straight on: one step instead of two, the same time. With interrupts
/// on they are an [`Op::Run`] of their own, after which the CPU checks for an interrupt.
macro_rules! run {
    ($cx:ident, $n:expr) => {{
        let n: u32 = $n;
        let t = $cx.costs.instructions(n);
        if $cx.fold && !*$cx.irqs_enabled && $cx.charged + t < $cx.horizon {
            $cx.charged += t;
        } else {
            return Op::Run(n);
        }
    }};
}

impl Frame {
    /// Advance to the next action. Inlined into the CPU's loop: it runs ~25 times per
    /// interrupt, and the call and context setup cost more than many of the steps.
    #[inline(always)]
    pub fn step(&mut self, cx: &mut StepCtx<'_>) -> Op {
        let k = &mut *cx.kernel;
        let c = &k.cost;
        match self {
            Frame::Idle { pc } => match &k.idle {
                // 2.6: `default_idle` -> `safe_halt` (sti; hlt): the interrupt is taken at once.
                None => {
                    *pc ^= 1;
                    if *pc == 1 {
                        Op::Run(c.idle_loop)
                    } else {
                        Op::Halt { sti: true }
                    }
                }
                // cpuidle: entered with interrupts off; after the wake-up the exit path runs
                // before `local_irq_enable` lets the interrupt in.
                Some(idle) => loop {
                    *pc = *pc % 4 + 1;
                    match *pc {
                        1 => {
                            *cx.irqs_enabled = false;
                            run!(cx, c.idle_loop + idle.entry)
                        }
                        2 => return Op::Halt { sti: false },
                        3 => run!(cx, idle.exit),
                        _ => {
                            *cx.irqs_enabled = true;
                            return Op::Run(0);
                        }
                    }
                },
            },

            Frame::Interrupt {
                pc,
                vector,
                from_pic,
            } => loop {
                *pc += 1;
                // With the Local APIC disabled the CPU must first ask the 8259 for the vector
                // (step 2); with it, the vector is known and the path starts at vectoring.
                let step = *pc + if *from_pic { 1 } else { 2 };
                match step {
                    2 => return Op::Access(Access::IntAck),
                    3 => {
                        if *from_pic {
                            *vector = cx.value as u8;
                        }
                        return Op::Vectoring;
                    }
                    4 => run!(cx, c.entry_stub),
                    5 => match k.vector_irq[usize::from(*vector)] {
                        Some(desc) => return Op::Call(Frame::DoIrq { pc: 0, desc }),
                        None if !*from_pic
                            && k.tick.as_ref().is_some_and(|t| t.vector == *vector) =>
                        {
                            return Op::Call(Frame::LocalTimer { pc: 0 })
                        }
                        None => {
                            // A vector nobody registered (a spurious 8259 IRQ7 among them):
                            // do_IRQ's `ack_bad_irq` path.
                            k.spurious_8259 += 1;
                            run!(cx, c.do_irq)
                        }
                    },
                    // ack_bad_irq acknowledges the Local APIC, or its in-service bit (and a
                    // level line's remote IRR) would never clear.
                    6 if !*from_pic
                        && k.vector_irq[usize::from(*vector)].is_none()
                        && k.tick.as_ref().is_none_or(|t| t.vector != *vector) =>
                    {
                        return Op::Access(Access::LapicWrite {
                            reg: lapic::REG_EOI,
                            data: 0,
                        })
                    }
                    // An 8259 IR7/IR15 with no handler is masked, so mask_and_ack_8259A takes
                    // its spurious_8259A_irq path and asks the chip whether it is real.
                    6 if *from_pic && k.vector_irq[usize::from(*vector)].is_none() => {
                        return Op::Call(Frame::I8259IrqReal {
                            pc: 0,
                            irq: vector.wrapping_sub(0x20) & 0x0F,
                        })
                    }
                    6 => {}
                    7 => run!(cx, c.exit_path),
                    _ => return Op::Iret,
                }
            },

            Frame::DoIrq { pc, desc } => loop {
                *pc += 1;
                match *pc {
                    1 => {
                        cx.preempt.hardirq += 1; // irq_enter
                        run!(cx, c.do_irq)
                    }
                    2 => return Op::Call(Frame::Flow { pc: 0, desc: *desc }),
                    3 => return Op::Call(Frame::IrqExit { pc: 0 }),
                    _ => return Op::Return(0),
                }
            },

            Frame::Flow { pc, desc } => loop {
                let d = &mut k.irqs[usize::from(*desc)];
                let half = c.flow_handler / 2;
                *pc += 1;
                let irq = d.irq as u8;
                let chain = Frame::HandleIrqEvent {
                    pc: 0,
                    desc: *desc,
                    next: 0,
                    handled: false,
                };
                match (d.flow, *pc) {
                    (_, 1) => {
                        d.count += 1;
                        run!(cx, half)
                    }
                    // handle_level_irq: mask_ack, chain, unmask.
                    (Flow::Level, 2) => return Op::Call(Frame::I8259MaskAck { pc: 0, irq }),
                    (Flow::Level, 3) => return Op::Call(chain),
                    (Flow::Level, 4) => run!(cx, c.note_interrupt + c.flow_handler - half),
                    (Flow::Level, 5) => return Op::Call(Frame::I8259Unmask { pc: 0, irq }),
                    // handle_fasteoi_irq: chain, then chip->eoi (TMR read + EOI write).
                    (Flow::FastEoi, 2) => return Op::Call(chain),
                    (Flow::FastEoi, 3) => {
                        run!(
                            cx,
                            c.note_interrupt + c.flow_handler - half + c.apic_chip_op
                        )
                    }
                    (Flow::FastEoi, 4) => {
                        return Op::Access(Access::LapicRead {
                            reg: lapic::REG_TMR_BASE + u32::from(d.vector >> 5) * 0x10,
                        })
                    }
                    (Flow::FastEoi, 5) => {
                        return Op::Access(Access::LapicWrite {
                            reg: lapic::REG_EOI,
                            data: 0,
                        })
                    }
                    // handle_edge_irq: chip->ack (EOI) first, then the chain.
                    (Flow::Edge, 2) => run!(cx, c.apic_chip_op),
                    (Flow::Edge, 3) => {
                        return Op::Access(Access::LapicWrite {
                            reg: lapic::REG_EOI,
                            data: 0,
                        })
                    }
                    (Flow::Edge, 4) => return Op::Call(chain),
                    (Flow::Edge, 5) => run!(cx, c.note_interrupt + c.flow_handler - half),
                    _ => return Op::Return(0),
                }
            },

            Frame::I8259MaskAck { pc, irq } => loop {
                *pc += 1;
                let slave = *irq & 8 != 0;
                let (imr_port, cmd_port) = if slave {
                    (SLAVE_DATA, SLAVE_CMD)
                } else {
                    (MASTER_DATA, MASTER_CMD)
                };
                return match *pc {
                    1 => {
                        k.cached_irq_mask |= 1 << *irq;
                        run!(cx, c.i8259_chip_op);
                        continue;
                    }
                    // inb(IMR): "DUMMY - (do we need this?)"
                    2 => Op::Access(Access::PortIn { port: imr_port }),
                    3 => Op::Access(Access::PortOut {
                        port: imr_port,
                        data: (k.cached_irq_mask >> if slave { 8 } else { 0 }) as u8,
                    }),
                    // 'Specific EOI' to the chip the IRQ is on ...
                    4 => Op::Access(Access::PortOut {
                        port: cmd_port,
                        data: 0x60 + (*irq & 7),
                    }),
                    // ... and for a slave IRQ, to the master's cascade input.
                    5 if slave => Op::Access(Access::PortOut {
                        port: MASTER_CMD,
                        data: 0x60 + CASCADE_IR,
                    }),
                    _ => Op::Return(0),
                };
            },

            Frame::I8259IrqReal { pc, irq } => loop {
                *pc += 1;
                let cmd = if *irq & 8 != 0 { SLAVE_CMD } else { MASTER_CMD };
                return match *pc {
                    1 => {
                        run!(cx, c.i8259_chip_op);
                        continue;
                    }
                    // outb(0x0B): OCW3, read ISR; inb: the ISR; outb(0x0A): back to IRR.
                    2 => Op::Access(Access::PortOut {
                        port: cmd,
                        data: 0x0B,
                    }),
                    3 => Op::Access(Access::PortIn { port: cmd }),
                    4 => Op::Access(Access::PortOut {
                        port: cmd,
                        data: 0x0A,
                    }),
                    _ => Op::Return(0),
                };
            },

            Frame::I8259Unmask { pc, irq } => loop {
                *pc += 1;
                return match *pc {
                    1 => {
                        k.cached_irq_mask &= !(1 << *irq);
                        run!(cx, c.i8259_chip_op);
                        continue;
                    }
                    2 => {
                        let (port, shift) = if *irq & 8 != 0 {
                            (SLAVE_DATA, 8)
                        } else {
                            (MASTER_DATA, 0)
                        };
                        Op::Access(Access::PortOut {
                            port,
                            data: (k.cached_irq_mask >> shift) as u8,
                        })
                    }
                    _ => Op::Return(0),
                };
            },

            Frame::HandleIrqEvent {
                pc,
                desc,
                next,
                handled,
            } => loop {
                let d = &mut k.irqs[usize::from(*desc)];
                if *pc == 0 {
                    *pc = 1;
                    if !d.actions[0].irqs_disabled {
                        *cx.irqs_enabled = true; // local_irq_enable() for !IRQF_DISABLED
                    }
                    run!(cx, c.handle_irq_event);
                    continue;
                }
                if *pc == 3 {
                    // Back from an ISR: note its irqreturn_t, go on down the chain.
                    *handled |= cx.value == IRQ_HANDLED;
                    *next += 1;
                    *pc = 1;
                }
                match *pc {
                    1 if usize::from(*next) < d.actions.len() => {
                        *pc = 2;
                        run!(cx, c.per_action)
                    }
                    1 => {
                        *cx.irqs_enabled = false;
                        if !*handled {
                            d.unhandled += 1;
                        }
                        return Op::Return(u32::from(*handled));
                    }
                    _ => {
                        *pc = 3;
                        return Op::Call(match d.actions[usize::from(*next)].isr {
                            Isr::Exerciser(driver) => match k.drivers[usize::from(driver)].kind {
                                DriverKind::Seed000 => Frame::ExerciserIsr { pc: 0, driver },
                                DriverKind::RoundTrip { .. } => {
                                    Frame::RoundTripIsr { pc: 0, driver }
                                }
                                DriverKind::Generic { .. } => Frame::GenericIsr {
                                    pc: 0,
                                    driver,
                                    reads: 0,
                                },
                            },
                            Isr::PortStatusCheck { port, instructions } => Frame::PortStatusIsr {
                                pc: 0,
                                port,
                                instructions,
                            },
                        });
                    }
                }
            },

            Frame::ExerciserIsr { pc, driver } => loop {
                let drv = &mut k.drivers[usize::from(*driver)];
                *pc += 1;
                match (drv.msi_mode, *pc) {
                    (_, 1) => run!(cx, c.driver_isr),
                    // Figure 4: "Incase of a shared IRQ Check if the interrupt is ours".
                    (false, 2) => {
                        return Op::Access(Access::MmioRead {
                            addr: drv.status_addr,
                        })
                    }
                    (false, 3) => {
                        if cx.value & drv.pending_flag == 0 {
                            *pc = 9;
                            return Op::Return(IRQ_NONE);
                        }
                        return Op::Access(Access::MmioWrite {
                            addr: drv.clear_addr,
                            data: drv.clear_mask,
                        });
                    }
                    // Figure 4 and 5: the ISR-entry signature, then tasklet_schedule.
                    (false, 4) | (true, 2) => {
                        drv.int_count = drv.int_count.wrapping_add(1);
                        return Op::Access(Access::MmioWrite {
                            addr: drv.isr_signature_addr,
                            data: drv.int_count,
                        });
                    }
                    (false, 5) | (true, 3) => {
                        let t = drv.tasklet;
                        super::tasklet_schedule(&mut k.tasklets, cx.softirq, t);
                        run!(cx, c.tasklet_schedule)
                    }
                    _ => return Op::Return(IRQ_HANDLED),
                }
            },

            Frame::RoundTripIsr { pc, driver } => loop {
                let drv = &mut k.drivers[usize::from(*driver)];
                let DriverKind::RoundTrip { bin } = drv.kind else {
                    unreachable!("a round-trip ISR runs a round-trip driver")
                };
                *pc += 1;
                match *pc {
                    1 => run!(cx, c.driver_isr),
                    // "the ISR at the host returns write data back to the FPGA" (seed 002).
                    2 => {
                        drv.int_count = drv.int_count.wrapping_add(1);
                        return Op::Access(Access::MmioWrite {
                            addr: drv.isr_signature_addr,
                            data: drv.int_count,
                        });
                    }
                    // "The histogram ... was created directly in a Linux's ISR": read the count.
                    3 => {
                        return Op::Access(Access::MmioRead {
                            addr: drv.status_addr,
                        })
                    }
                    4 => run!(cx, bin),
                    _ => return Op::Return(IRQ_HANDLED),
                }
            },

            Frame::GenericIsr { pc, driver, reads } => loop {
                let drv = &k.drivers[usize::from(*driver)];
                let DriverKind::Generic {
                    instructions,
                    status_reads,
                } = drv.kind
                else {
                    unreachable!("a generic ISR runs a generic driver")
                };
                match *pc {
                    0 => {
                        *pc = 1;
                        run!(cx, c.driver_isr + instructions)
                    }
                    1 if *reads < status_reads => {
                        *reads += 1;
                        return Op::Access(Access::MmioRead {
                            addr: drv.status_addr,
                        });
                    }
                    1 => {
                        *pc = 2;
                        return Op::Access(Access::MmioWrite {
                            addr: drv.clear_addr,
                            data: drv.clear_mask,
                        });
                    }
                    _ => return Op::Return(IRQ_HANDLED),
                }
            },

            Frame::PortStatusIsr {
                pc,
                port,
                instructions,
            } => loop {
                *pc += 1;
                match *pc {
                    1 => run!(cx, u32::from(*instructions)),
                    2 => return Op::Access(Access::PortIn { port: *port }),
                    _ => return Op::Return(IRQ_NONE),
                }
            },

            Frame::IrqExit { pc } => loop {
                *pc += 1;
                match *pc {
                    1 => {
                        cx.preempt.hardirq -= 1;
                        run!(cx, c.irq_exit)
                    }
                    2 if !cx.preempt.in_interrupt() && cx.softirq.pending != 0 => {
                        return Op::Call(Frame::DoSoftirq {
                            pc: 0,
                            restarts: 0,
                            pending: 0,
                        })
                    }
                    _ => return Op::Return(0),
                }
            },

            Frame::LocalTimer { pc } => loop {
                *pc += 1;
                let tick = k.tick.as_ref().expect("a tick vector implies a tick");
                match *pc {
                    // ack_APIC_irq comes first, so a later tick can be accepted while this one runs.
                    1 => run!(cx, c.apic_chip_op),
                    2 => {
                        return Op::Access(Access::LapicWrite {
                            reg: lapic::REG_EOI,
                            data: 0,
                        })
                    }
                    3 => {
                        cx.preempt.hardirq += 1; // irq_enter
                        k.ticks += 1;
                        // run_local_timers -> raise_softirq(TIMER_SOFTIRQ)
                        cx.softirq.raise(super::softirq::TIMER_SOFTIRQ);
                        run!(cx, tick.handler)
                    }
                    4 => return Op::Call(Frame::IrqExit { pc: 0 }),
                    _ => return Op::Return(0),
                }
            },

            Frame::DoSoftirq {
                pc,
                restarts,
                pending,
            } => {
                if *pc == 0 {
                    *pc = 1;
                    cx.preempt.softirq += 1;
                    run!(cx, c.do_softirq);
                }
                loop {
                    if *pc == 1 {
                        // Take the pending mask and run the handlers with interrupts on, lowest
                        // vector first (TIMER before TASKLET), as `__do_softirq` does.
                        *pending = std::mem::take(&mut cx.softirq.pending) as u16;
                        *cx.irqs_enabled = true;
                        *pc = 2;
                    }
                    if *pc == 2 {
                        if *pending & (1 << TIMER_SOFTIRQ) != 0 {
                            *pending &= !(1 << TIMER_SOFTIRQ);
                            let n = k.tick.as_ref().map_or(0, |t| t.timer_softirq);
                            return Op::Run(n);
                        }
                        if *pending & (1 << TASKLET_SOFTIRQ) != 0 {
                            *pending &= !(1 << TASKLET_SOFTIRQ);
                            return Op::Call(Frame::TaskletAction { pc: 0, current: 0 });
                        }
                        *pc = 3;
                    }
                    *cx.irqs_enabled = false;
                    // `if (pending && --max_restart) goto restart;`: 10 rounds in all.
                    if cx.softirq.pending != 0 && *restarts + 1 < MAX_SOFTIRQ_RESTART {
                        *restarts += 1;
                        *pc = 1;
                        continue;
                    }
                    // Anything still pending would wake ksoftirqd (not modelled yet).
                    cx.preempt.softirq -= 1;
                    return Op::Return(0);
                }
            }

            Frame::TaskletAction { pc, current } => {
                if *pc == 0 {
                    // Splice the per-CPU list away (with interrupts off in Linux): tasklets
                    // scheduled from now on, by a nested interrupt say, go on the emptied list,
                    // raise TASKLET_SOFTIRQ again and run in the next round.
                    // Swapping the two lists keeps both buffers: no allocation per run.
                    debug_assert!(cx.softirq.tasklet_running.is_empty());
                    std::mem::swap(&mut cx.softirq.tasklet_vec, &mut cx.softirq.tasklet_running);
                    *pc = 1;
                }
                match *pc {
                    1 => match cx.softirq.tasklet_running.pop_front() {
                        Some(t) => {
                            *current = t;
                            *pc = 2;
                            k.tasklets[usize::from(t)].scheduled = false;
                            Op::Run(c.tasklet_action)
                        }
                        None => Op::Return(0),
                    },
                    _ => {
                        *pc = 1;
                        let driver = k.tasklets[usize::from(*current)].owner;
                        Op::Call(Frame::ExerciserTasklet { pc: 0, driver })
                    }
                }
            }

            Frame::ExerciserTasklet { pc, driver } => {
                let drv = &k.drivers[usize::from(*driver)];
                *pc += 1;
                match *pc {
                    1 => Op::Run(c.driver_tasklet),
                    2 => Op::Access(Access::MmioWrite {
                        addr: drv.tasklet_signature_addr,
                        data: drv.int_count,
                    }),
                    _ => Op::Return(0),
                }
            }
        }
    }
}
