//! A CPU core: it runs the kernel frames of the task it holds, takes interrupts at instruction
//! boundaries, stalls on non-posted accesses, idles, and runs ahead of the clock only where that
//! is exact. Its Local APIC bus unit takes interrupt messages.

use super::{Ev, Machine};
use crate::engine::{SimDuration, SimTime};
use crate::hw::cpu::{CpuCosts, CpuTiming};
use crate::hw::fabric::Endpoint;
use crate::hw::ioapic::IOAPIC_BASE;
use crate::hw::lapic::{self, LocalApic};
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::{Bdf, MsgCode, Tlp, TlpKind};
use crate::kernel::cpuidle::Cpuidle;
use crate::kernel::frames::{Access, Frame, Op, StepCtx};
use crate::kernel::sched::TaskContext;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum CpuState {
    /// A resume event is scheduled.
    Running,
    /// Waiting for a completion or for the FSB to take a store.
    Stalled,
    Halted,
    /// Leaving HLT; a resume event is scheduled.
    Waking,
}

/// One CPU core with its Local APIC and the context of the task it runs.
pub struct Cpu {
    pub timing: CpuCosts,
    pub(super) halt_exit: SimDuration,
    pub lapic: LocalApic,
    pub(super) state: CpuState,
    /// The 8259's INTR wire as the core sees it (used when the Local APIC is disabled).
    pub(super) intr_line: bool,
    /// The running task's kernel stack, flags and preempt count, loaded in the core (a context
    /// switch swaps it with the next task's, [`Scheduler::switch`]). Interrupts nest on this
    /// stack. An op parked there waits until its frame is on top again.
    pub(super) ctx: TaskContext,
    /// Idle states and their governor (cpuidle); `None`: HLT with `halt_exit`.
    pub cpuidle: Option<Cpuidle>,
    /// In System Management Mode until then: the core runs no OS code.
    pub(super) smm_until: SimTime,
}

impl Cpu {
    pub fn new(timing: CpuTiming, lapic: LocalApic) -> Self {
        Cpu {
            halt_exit: timing.halt_exit,
            timing: timing.costs(),
            lapic,
            state: CpuState::Running,
            intr_line: false,
            // The idle task, which the core runs from boot.
            ctx: TaskContext::starting(Frame::Idle { pc: 0 }),
            cpuidle: None,
            smm_until: SimTime::ZERO,
        }
    }
}

impl Machine {
    // ---- the CPU -------------------------------------------------------------------------

    pub(super) fn poke_cpu(&mut self) {
        self.poke_cpu_at(self.q.now());
    }

    /// An interrupt reaches the core at `at`: a halted core starts to wake.
    pub(super) fn poke_cpu_at(&mut self, at: SimTime) {
        if self.cpu.state == CpuState::Halted {
            self.cpu.state = CpuState::Waking;
            // In SMM the core leaves its idle state only after the firmware resumes it.
            let from = at.max(self.cpu.smm_until);
            let wake = match &mut self.cpu.cpuidle {
                Some(ci) => {
                    let wake = ci.wake_time();
                    ci.left(from + wake);
                    wake
                }
                None => self.cpu.halt_exit,
            };
            self.q.schedule_at(from + wake, Ev::CpuResume);
        }
    }

    pub(super) fn interrupt_pending(&self) -> bool {
        if self.cpu.lapic.enabled {
            self.cpu.lapic.deliverable().is_some()
        } else {
            self.cpu.intr_line
        }
    }

    pub(super) fn take_interrupt(&mut self) {
        // An interrupt gate clears IF as part of delivery.
        self.cpu.ctx.irqs_enabled = false;
        let frame = if self.cpu.lapic.enabled {
            let vector = self.cpu.lapic.acknowledge().expect("deliverable");
            Frame::Interrupt {
                pc: 0,
                vector,
                from_pic: false,
            }
        } else {
            Frame::Interrupt {
                pc: 0,
                vector: 0,
                from_pic: true,
            }
        };
        self.cpu.ctx.stack.push(frame);
    }

    pub(super) fn resume_after(&mut self, d: SimDuration) {
        self.cpu.state = CpuState::Running;
        self.q.schedule_in(d, Ev::CpuResume);
    }

    /// May the core run on to `now + acc` without an event? Only if nothing else is scheduled
    /// before then: no interrupt, completion or device action can happen in between, so
    /// continuing is exact, not an approximation.
    pub(super) fn may_run_ahead(&self, acc: SimDuration) -> bool {
        !self.strict && self.q.peek_time().is_none_or(|t| t > self.q.now() + acc)
    }

    /// Run the core from now until it stalls, halts or must let time pass. `acc` is compute time
    /// already spent ahead of the queue's clock; the core runs ahead only while nothing else is
    /// scheduled in that window (`may_run_ahead`), and otherwise parks the pending op in
    /// `parked` and resumes at the right moment.
    pub(super) fn cpu_run(&mut self) {
        let now = self.q.now();
        if now < self.cpu.smm_until {
            // In SMM: the OS goes on when the firmware resumes (RSM).
            self.cpu.state = CpuState::Running;
            self.q.schedule_at(self.cpu.smm_until, Ev::CpuResume);
            return;
        }
        let mut acc = SimDuration::ZERO;
        // Neither changes while the core runs: read them once.
        let (strict, next_smi) = (self.strict, self.next_smi);
        loop {
            // In the reference mode every step ends at an event. An SMI takes the core at the
            // first step boundary at or after its time, as in the reference mode, whatever the
            // interrupt flag.
            if acc > SimDuration::ZERO && (strict || now + acc >= next_smi) {
                return self.resume_after(acc);
            }
            if self.cpu.ctx.irqs_enabled {
                // An interrupt taken at this instruction boundary may have arrived while the core
                // ran ahead with interrupts off: catch up with the clock before deciding.
                if acc > SimDuration::ZERO && !self.may_run_ahead(acc) {
                    return self.resume_after(acc);
                }
                // Nothing is scheduled before `now + acc` (checked above), so the interrupt is
                // taken there, ahead of the clock: accepting it changes only the Local APIC and
                // the stack, which nothing else reads in between.
                if self.interrupt_pending() {
                    self.take_interrupt();
                }
            }
            let depth = self.cpu.ctx.stack.len();
            let op = match self.cpu.ctx.parked.last() {
                Some((d, _)) if *d == depth => self.cpu.ctx.parked.pop().expect("present").1,
                _ => {
                    let cpu = &mut self.cpu;
                    let frame = cpu
                        .ctx
                        .stack
                        .last_mut()
                        .expect("a task's first frame is never popped");
                    let mut cx = StepCtx {
                        kernel: &mut self.kernel,
                        costs: &cpu.timing,
                        fold: !strict,
                        horizon: next_smi.since_or_zero(now + acc),
                        charged: SimDuration::ZERO,
                        value: cpu.ctx.value,
                        irqs_enabled: &mut cpu.ctx.irqs_enabled,
                        preempt: &mut cpu.ctx.preempt,
                    };
                    let op = frame.step(&mut cx);
                    acc += cx.charged;
                    op
                }
            };
            match op {
                Op::Run(0) => {}
                Op::Run(n) => {
                    acc += self.cpu.timing.instructions(n);
                    // With interrupts on, one may arrive while these instructions run; it is
                    // taken at the end of the step, so the step must end at an event unless
                    // nothing can arrive before then.
                    if self.cpu.ctx.irqs_enabled && !self.may_run_ahead(acc) {
                        return self.resume_after(acc);
                    }
                }
                Op::Vectoring => acc += self.cpu.timing.vectoring(),
                Op::Access(a) => {
                    if acc > SimDuration::ZERO && !self.may_run_ahead(acc) {
                        self.cpu.ctx.parked.push((self.cpu.ctx.stack.len(), op));
                        return self.resume_after(acc);
                    }
                    match self.issue(a, acc) {
                        Some(local) => acc += local,
                        None => {
                            self.cpu.state = CpuState::Stalled;
                            return;
                        }
                    }
                }
                Op::Call(f) => self.cpu.ctx.stack.push(f),
                Op::Return(v) => {
                    self.cpu.ctx.stack.pop();
                    self.cpu.ctx.value = v;
                }
                Op::Iret => {
                    self.cpu.ctx.stack.pop();
                    acc += self.cpu.timing.iret();
                    self.cpu.ctx.irqs_enabled = true;
                }
                Op::Halt { sti } => {
                    // The core idles from `now + acc`, ahead of the clock, if nothing is
                    // scheduled before then: whatever wakes it comes later.
                    if acc > SimDuration::ZERO && !self.may_run_ahead(acc) {
                        self.cpu.ctx.parked.push((self.cpu.ctx.stack.len(), op));
                        return self.resume_after(acc);
                    }
                    let now = self.q.now() + acc;
                    self.last_inline = self.last_inline.max(now);
                    let next_timer = self.next_tick.map(|t| t.since(now));
                    let polls = match &mut self.cpu.cpuidle {
                        Some(ci) => {
                            let i = ci.select(now, next_timer);
                            ci.states[i].polls
                        }
                        None => false,
                    };
                    if sti || polls {
                        // sti; hlt, or poll_idle, which spins with interrupts on.
                        self.cpu.ctx.irqs_enabled = true;
                    }
                    if !self.interrupt_pending() {
                        self.cpu.state = CpuState::Halted;
                        return;
                    }
                    if let Some(ci) = &mut self.cpu.cpuidle {
                        ci.left(now); // MWAIT returns at once: a pending interrupt
                    }
                }
            }
        }
    }

    pub(super) fn root_request(&mut self, kind: TlpKind, addr: u64, data: u32) -> Tlp {
        let tag = self.root_tag;
        self.root_tag = (self.root_tag + 1) & 31;
        Tlp {
            kind,
            requester: self.root_requester,
            completer: Bdf::default(),
            tag,
            addr,
            len_dw: 1,
            data,
        }
    }

    /// Where the MCH sends a CPU memory access.
    pub(super) fn decode(&self, addr: u64) -> Endpoint {
        if let Some(k) = self.devices.iter().position(|d| d.claims(addr)) {
            Endpoint::Device(k as u8)
        } else if (IOAPIC_BASE..IOAPIC_BASE + 0x1000).contains(&addr) {
            Endpoint::Ich
        } else {
            panic!("access to 0x{addr:x}, which no modelled device decodes")
        }
    }

    /// Issue an access `at` after now (the core's compute time ahead of the clock). `Some(cost)`
    /// for accesses the core completes by itself (Local APIC); `None` when it waits for the bus.
    pub(super) fn issue(&mut self, a: Access, at: SimDuration) -> Option<SimDuration> {
        let lapic_cost = self.cpu.timing.lapic_access();
        let (tlp, dest, posted) = match a {
            Access::LapicRead { reg } => {
                self.cpu.ctx.value = self.cpu.lapic.read(reg);
                return Some(lapic_cost);
            }
            Access::LapicWrite { reg, .. } => {
                if reg == lapic::REG_EOI {
                    if let Some(v) = self.cpu.lapic.eoi() {
                        // Level-triggered: the EOI goes out to the IO-APIC (posted).
                        let msg = self.root_request(TlpKind::Msg(MsgCode::Eoi(v)), 0, 0);
                        self.send(Endpoint::Cpu, Endpoint::Ich, msg, at);
                    }
                }
                return Some(lapic_cost);
            }
            Access::MmioRead { addr } => (
                {
                    self.mmio_reads += 1;
                    self.root_request(TlpKind::MemRead, addr, 0)
                },
                self.decode(addr),
                false,
            ),
            Access::MmioWrite { addr, data } => (
                self.root_request(TlpKind::MemWrite, addr, data),
                self.decode(addr),
                true,
            ),
            Access::PortIn { port } => (
                {
                    self.port_ios += 1;
                    self.root_request(TlpKind::IoRead, u64::from(port), 0)
                },
                Endpoint::Ich,
                false,
            ),
            Access::PortOut { port, data } => (
                {
                    self.port_ios += 1;
                    self.root_request(TlpKind::IoWrite, u64::from(port), u32::from(data))
                },
                Endpoint::Ich,
                false,
            ),
            Access::IntAck => (
                {
                    self.interrupt_acknowledges += 1;
                    self.root_request(TlpKind::IntAck, 0, 0)
                },
                Endpoint::Ich,
                false,
            ),
        };
        let t = self.q.now() + at;
        match self.send_packet(Endpoint::Cpu, dest, tlp, t, posted, true) {
            // A store the FSB took at once: the core goes on from then, no event needed.
            (_, Some(released)) => Some(released.since(self.q.now() + at)),
            _ => None,
        }
    }

    /// An interrupt write reaches the core's Local APIC at `at`: the MCH turns a write to
    /// 0xFEEx_xxxx into an FSB interrupt message.
    pub(super) fn interrupt_message(&mut self, tlp: Tlp, at: SimTime) {
        if let Some(m) = MsiMessage::decode(tlp.addr, tlp.data) {
            if self.cpu.lapic.enabled && m.dest_apic_id == self.cpu.lapic.id {
                self.cpu.lapic.accept(m.vector, m.level_triggered);
                self.poke_cpu_at(at);
            }
        }
    }
}
