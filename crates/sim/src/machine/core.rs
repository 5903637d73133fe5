//! A CPU core: it runs the kernel programs of the task it holds, frame by frame, takes interrupts at instruction
//! boundaries, stalls on non-posted accesses, idles, and runs ahead of the clock only where that
//! is exact. Its Local APIC bus unit takes interrupt messages.

use super::fabric::Endpoint;
use super::{Ev, Machine};
use crate::devices::Device;
use crate::engine::{EventQueue, SimDuration, SimTime};
use crate::hw::bus::Cycle;
use crate::hw::cpu::{CpuCosts, CpuTiming};
use crate::hw::lapic::{self, LocalApic};
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::{Bdf, MsgCode, Tlp, TlpKind};
use crate::kernel::context::Preemption;
use crate::kernel::cpuidle::Cpuidle;
use crate::kernel::linux::Entries;
use crate::kernel::program::{self, Access, Frame, Op, Rings, StepCtx};
use crate::kernel::sched::{TaskContext, TaskState};
use crate::kernel::softirq::SoftirqState;
use crate::workload::WorkState;

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

/// One CPU core with its Local APIC, its idle states, its per-CPU kernel state and the context
/// of the task it runs.
pub struct Core {
    pub timing: CpuCosts,
    /// The timing `timing` was made from, at the clock of the moment (and `halt_exit`, which
    /// no clock changes).
    pub(super) base: CpuTiming,
    /// A clock that moves in time (`[cpu.frequency]`), if the platform has one.
    pub frequency: Option<Frequency>,
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
    /// This CPU's pending softirqs and tasklet list (per-CPU in Linux, `kernel/softirq.c`).
    pub(super) softirq: SoftirqState,
    /// When this core's next local timer tick fires (its governor's next timer event).
    pub(super) next_tick: Option<SimTime>,
    /// Hardware interrupts this core took (its column of `/proc/interrupts`, summed).
    pub(super) interrupts: u64,
    /// The scenario's workload on this core (`workload.rs`), run by the idle task.
    pub work: Option<WorkState>,
    /// Process code running with interrupts on, from..until, which an interrupt cuts.
    pub(super) busy: Option<(SimTime, SimTime)>,
    /// Counts busy runs started or cut: a `BusyDone` event of an older one is stale.
    pub(super) busy_gen: u32,
    /// The busy run under way is user-mode code (an interrupt that cuts it changes privilege).
    pub(super) busy_user: bool,
    /// The core runs user-mode code: an interrupt taken now goes through a privilege change.
    pub(super) in_user: bool,
    /// The interrupt being delivered came from user mode.
    pub(super) from_user: bool,
    /// Cache lines of kernel code that may have gone cold, if the platform models it.
    pub cold: Option<ColdCode>,
    /// Counts programmings of the one-shot Local APIC timer: a `LapicTimer` event of an older
    /// one is stale.
    pub(super) timer_gen: u32,
}

/// The cold-code model: a block of kernel code spans `ceil(n * instruction_bytes /
/// line_bytes)` cache lines, each evicted since it last ran with the workload's
/// `cold_fraction`; a miss costs a line fill from memory. Seed 004's K6 (32-byte lines, no
/// prefetch of code worth modelling).
#[derive(Clone, Debug)]
pub struct ColdCode {
    pub line_bytes: f64,
    pub instruction_bytes: f64,
    pub line_fill: SimDuration,
    pub rng: crate::engine::Stream,
    /// Lines missed so far.
    pub misses: u64,
    /// The missed lines' distribution, Binomial(lines, cold fraction), as a table for each
    /// block size and cold fraction met so far (a kernel has a few dozen block sizes, a
    /// workload one cold fraction per phase).
    tables: Vec<crate::engine::BinomialTable>,
    /// Where each (block size, cold fraction) has its table: a direct-mapped cache in front of
    /// `keys`, since a map's search cost more than the draw.
    slots: Box<[(u32, u64, u32); COLD_SLOTS]>,
    keys: std::collections::BTreeMap<(u32, u64), u32>,
}

/// Slots of [`ColdCode`]'s cache (a power of two).
const COLD_SLOTS: usize = 256;

impl ColdCode {
    pub fn new(
        line_bytes: f64,
        instruction_bytes: f64,
        line_fill: SimDuration,
        rng: crate::engine::Stream,
    ) -> Self {
        ColdCode {
            line_bytes,
            instruction_bytes,
            line_fill,
            rng,
            misses: 0,
            tables: Vec::new(),
            // Block size 0 never asks (it misses nothing): an empty slot.
            slots: Box::new([(0, 0, 0); COLD_SLOTS]),
            keys: Default::default(),
        }
    }

    /// The extra time `n` instructions of kernel code take for the lines they miss. Out of
    /// line, as its caller `code_op_time` is: inlined into the CPU's loop, the two changed how
    /// LLVM laid the loop out for every scenario (seed 001's frame, which has no cold-code
    /// model, 4,135 instructions against 3,990).
    #[inline(never)]
    fn misses(&mut self, n: u32, cold: f64) -> SimDuration {
        if cold <= 0.0 || n == 0 {
            return SimDuration::ZERO;
        }
        let bits = cold.to_bits();
        let hash = (u64::from(n) ^ bits ^ (bits >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = &mut self.slots[(hash >> 56) as usize % COLD_SLOTS];
        if slot.0 != n || slot.1 != bits {
            let (tables, lines) = (
                &mut self.tables,
                (f64::from(n) * self.instruction_bytes / self.line_bytes).ceil() as u64,
            );
            let i = *self.keys.entry((n, bits)).or_insert_with(|| {
                // The checker holds every cold fraction to [0, 1].
                tables.push(crate::engine::BinomialTable::new(lines, cold));
                (tables.len() - 1) as u32
            });
            *slot = (n, bits, i);
        }
        let missed = self.tables[slot.2 as usize].sample(&mut self.rng);
        self.misses += missed;
        self.line_fill * missed
    }
}

/// The core's clock under hardware power management: held for an exponentially distributed
/// time, then moved to a clock drawn uniformly in `low_hz..high_hz` (`[cpu.frequency]`).
#[derive(Clone, Debug)]
pub struct Frequency {
    pub low_hz: f64,
    pub high_hz: f64,
    pub mean_hold: SimDuration,
    pub rng: crate::engine::Stream,
}

impl Core {
    pub fn new(timing: CpuTiming, lapic: LocalApic) -> Self {
        Core {
            timing: timing.costs(),
            base: timing,
            frequency: None,
            lapic,
            state: CpuState::Running,
            intr_line: false,
            // The idle task, which the core runs from boot (its entry is set when the kernel
            // is linked, `MachineBuilder::build`).
            ctx: TaskContext::default(),
            cpuidle: None,
            smm_until: SimTime::ZERO,
            softirq: SoftirqState::default(),
            next_tick: None,
            interrupts: 0,
            work: None,
            busy: None,
            busy_gen: 0,
            busy_user: false,
            in_user: false,
            from_user: false,
            cold: None,
            timer_gen: 0,
        }
    }

    /// Run at `clock_hz` from now on: every cost in core cycles or instructions scales with it.
    pub(super) fn set_clock(&mut self, clock_hz: f64) {
        self.base.clock_hz = clock_hz;
        self.timing = self.base.costs();
    }

    /// A `Code` op's time, with a `CodeStall`'s stalls (the serialising instructions' cycles
    /// beyond their slots, fixed at the base clock when the kernel was linked). Out of line, as
    /// LLVM had it while the binomial draw was inline in it (see [`ColdCode::misses`]).
    #[inline(never)]
    fn code_op_time(&mut self, op: Op) -> SimDuration {
        match op {
            Op::CodeStall { n, stall } => self.code_time(n) + stall,
            Op::Code(n) => self.code_time(n),
            _ => unreachable!("not a code op"),
        }
    }

    /// The time `n` instructions of kernel code take, with the lines they miss.
    fn code_time(&mut self, n: u32) -> SimDuration {
        let t = self.timing.instructions(n);
        match (&mut self.cold, &self.work) {
            (Some(c), Some(w)) => t + c.misses(n, w.spec().cold_fraction),
            _ => t,
        }
    }

    /// Is an interrupt waiting for this core: a deliverable vector in its Local APIC, or the
    /// 8259's INTR when the Local APIC is off?
    fn interrupt_pending(&self) -> bool {
        self.lapic.interrupt_pending(self.intr_line)
    }

    /// Take the pending interrupt at this instruction boundary: its frame goes on the running
    /// task's stack.
    fn take_interrupt(&mut self, entries: &Entries) {
        self.interrupts += 1;
        self.from_user = std::mem::take(&mut self.in_user);
        // An interrupt gate clears IF as part of delivery.
        self.ctx.irqs_enabled = false;
        self.ctx.saved_values.push(self.ctx.value);
        // The entry frame's second local says whether the interrupt came from user mode (the
        // saved CS that `ret_from_intr` tests).
        let b = u32::from(self.from_user);
        let frame = if self.lapic.enabled {
            let vector = self.lapic.acknowledge().expect("deliverable");
            Frame {
                a: u32::from(vector),
                b,
                ..Frame::at(entries.interrupt_apic)
            }
        } else {
            // The vector comes from the 8259's INTA cycle, the program's first step.
            Frame {
                b,
                ..Frame::at(entries.interrupt_pic)
            }
        };
        self.ctx.stack.push(frame);
    }
}

/// The controllers' rings, for the interpreter and the core's loop alike.
impl program::Rings for Vec<Device> {
    fn take(&mut self, op: Op, at: SimTime) -> u32 {
        let (Op::RxNext(k) | Op::TxNext(k)) = op else {
            unreachable!("not a ring op")
        };
        let nic = super::card_mut(self, k)
            .nic
            .as_mut()
            .expect("a network driver's device has a controller");
        let taken = match op {
            Op::RxNext(_) => nic.take_frame(at),
            _ => nic.take_tx(at),
        };
        u32::from(taken)
    }
}

impl Machine {
    // ---- the CPU -------------------------------------------------------------------------

    pub(super) fn poke_cpu(&mut self, c: usize) {
        self.poke_cpu_at(c, self.q.now());
    }

    /// An interrupt reaches the core at `at`: a halted core starts to wake; process code
    /// running with interrupts on is cut at the next instruction boundary.
    pub(super) fn poke_cpu_at(&mut self, c: usize, at: SimTime) {
        let core = &mut self.cores[c];
        if let Some((start, end)) = core.busy {
            if core.ctx.irqs_enabled && core.interrupt_pending() {
                let step = core.timing.instructions(1).as_ps().max(1);
                let done = at.since_or_zero(start).as_ps().div_ceil(step) * step;
                let boundary = start + SimDuration::from_ps(done);
                if boundary < end {
                    self.cut_busy(c, boundary, boundary);
                }
            }
            return;
        }
        let core = &mut self.cores[c];
        if core.state == CpuState::Halted {
            core.state = CpuState::Waking;
            // In SMM the core leaves its idle state only after the firmware resumes it.
            let from = at.max(core.smm_until);
            let wake = match &mut core.cpuidle {
                Some(ci) => {
                    let wake = ci.wake_time();
                    ci.left(from + wake);
                    wake
                }
                None => core.base.halt_exit,
            };
            self.q.schedule_at(from + wake, Ev::CpuResume(c as u8));
        }
    }

    /// Stop core c's busy run at `at`: what is left of it waits on the task's stack (parked at
    /// its frame, so that it goes on when the frame is on top again), and the core resumes at
    /// `resume` (an SMI's end, or the boundary itself to take the interrupt).
    pub(super) fn cut_busy(&mut self, c: usize, at: SimTime, resume: SimTime) {
        let core = &mut self.cores[c];
        let (_, end) = core.busy.take().expect("a busy run");
        core.busy_gen = core.busy_gen.wrapping_add(1);
        let depth = core.ctx.stack.len();
        let user = std::mem::take(&mut core.busy_user);
        core.in_user = user;
        core.ctx.parked.push((
            depth,
            Op::Busy {
                d: end.since(at),
                user,
            },
        ));
        core.state = CpuState::Running;
        self.q.schedule_at(resume, Ev::CpuResume(c as u8));
    }

    /// Core c's busy run ends (unless it was cut meanwhile).
    pub(super) fn busy_done(&mut self, c: usize, gen: u32) {
        let core = &mut self.cores[c];
        if core.busy_gen != gen || core.busy.is_none() {
            return;
        }
        core.busy = None;
        core.state = CpuState::Running;
        self.cpu_run(c);
    }

    /// Core c's workload has a new busy stretch: a halted core leaves its idle state for it.
    pub(super) fn work_arrives(&mut self, c: usize) {
        if let Some(w) = &mut self.cores[c].work {
            if w.stopped {
                return;
            }
            w.pending = true;
        }
        self.poke_cpu(c);
    }

    pub(super) fn resume_after(&mut self, c: usize, d: SimDuration) {
        self.cores[c].state = CpuState::Running;
        self.q.schedule_in(d, Ev::CpuResume(c as u8));
    }

    /// May a core run on to `now + acc` without an event? Only if nothing else is scheduled
    /// before then: no interrupt, completion or device action can happen in between, so
    /// continuing is exact, not an approximation. (A function of the queue alone, so that the
    /// core's loop can ask while it holds its core.)
    fn may_run_ahead(q: &EventQueue<Ev>, strict: bool, acc: SimDuration) -> bool {
        !strict && q.peek_time().is_none_or(|t| t > q.now() + acc)
    }

    /// Run the core from now until it stalls, halts or must let time pass. `acc` is compute time
    /// already spent ahead of the queue's clock; the core runs ahead only while nothing else is
    /// scheduled in that window (`may_run_ahead`), and otherwise parks the pending op in
    /// `parked` and resumes at the right moment.
    pub(super) fn cpu_run(&mut self, c: usize) {
        let now = self.q.now();
        if now < self.cores[c].smm_until {
            // In SMM: the OS goes on when the firmware resumes (RSM).
            self.cores[c].state = CpuState::Running;
            self.q
                .schedule_at(self.cores[c].smm_until, Ev::CpuResume(c as u8));
            return;
        }
        let mut acc = SimDuration::ZERO;
        // Neither changes while the core runs: read them once.
        let (strict, next_smi, windowed) = (self.strict, self.next_smi, self.window.is_some());
        // How far past `now` instructions may be folded into a step (`StepCtx::horizon`).
        let horizon = next_smi.since_or_zero(now);
        let ahead = Self::may_run_ahead;
        // The scheduler's model and the cost of a switch, for kernels that run tasks.
        let (preemption, schedule_cost) = match &self.kernel.sched {
            Some(s) => (Some(s.preemption), s.schedule),
            None => (None, 0),
        };
        let kernel_preempts = matches!(preemption, Some(Preemption::Preempt | Preemption::Rt));
        /// Why the inner loop, which holds the core, stopped.
        enum Next {
            /// Let time pass: resume at `now + acc`.
            Resume,
            /// Issue an access on the bus (which needs the whole machine).
            Issue(Access),
            /// Stalled or halted: an event will wake it.
            Wait,
        }
        loop {
            let core = &mut self.cores[c];
            let next = loop {
                // In the reference mode every step ends at an event. An SMI takes the core at the
                // first step boundary at or after its time, as in the reference mode, whatever
                // the interrupt flag.
                if acc > SimDuration::ZERO && (strict || now + acc >= next_smi) {
                    break Next::Resume;
                }
                if core.ctx.irqs_enabled {
                    // An interrupt taken at this instruction boundary may have arrived while the
                    // core ran ahead with interrupts off: catch up with the clock before
                    // deciding.
                    if acc > SimDuration::ZERO && !ahead(&self.q, strict, acc) {
                        break Next::Resume;
                    }
                    // Nothing is scheduled before `now + acc` (checked above), so the interrupt
                    // is taken there, ahead of the clock: accepting it changes only the Local
                    // APIC and the stack, which nothing else reads in between.
                    if core.interrupt_pending() {
                        core.take_interrupt(&self.kernel.entries);
                    }
                }
                let depth = core.ctx.stack.len();
                let op = match core.ctx.parked.last() {
                    Some((d, _)) if *d == depth => core.ctx.parked.pop().expect("present").1,
                    _ => {
                        // With interrupts on, the loop must look again before the next queued
                        // event or SMI (`StepCtx::quiet`), and at once with an interrupt
                        // pending (asked only if the frame turns them on).
                        let quiet = match self.q.peek_time() {
                            Some(t) => t.since_or_zero(now).min(horizon),
                            None => horizon,
                        };
                        let mut cx = StepCtx {
                            kernel: &mut self.kernel,
                            costs: &core.timing,
                            fold: !strict,
                            horizon,
                            quiet,
                            lapic: &core.lapic,
                            intr_line: core.intr_line,
                            ahead: acc,
                            value: core.ctx.value,
                            irqs_enabled: &mut core.ctx.irqs_enabled,
                            preempt: &mut core.ctx.preempt,
                            softirq: &mut core.softirq,
                            work: core.work.as_mut(),
                            now,
                            cpu: c as u8,
                            from_user: core.from_user,
                            in_user: &mut core.in_user,
                            saved_values: &mut core.ctx.saved_values,
                            parked_depth: core.ctx.parked.last().map(|p| p.0),
                            rings: &mut self.devices,
                            sched: &mut self.sched,
                            kernel_preempts,
                        };
                        let op = program::step(&mut core.ctx.stack, &mut cx);
                        acc = cx.ahead;
                        core.ctx.value = cx.value;
                        op
                    }
                };
                // `in_user`: the last op was process code in user mode (an interrupt taken now
                // changes privilege). Only the ops a workload gives after a busy stretch reset it
                // (held, rest, code, int): the others never follow one without an interrupt in
                // between, which takes the flag.
                match op {
                    // Code an interrupt may cut, with interrupts on: a busy run of kernel code,
                    // parked here and run by the `Busy` arm at the next pass.
                    Op::Code(_) | Op::CodeStall { .. } if core.ctx.irqs_enabled => {
                        core.in_user = false;
                        let busy = Op::Busy {
                            d: core.code_op_time(op),
                            user: false,
                        };
                        core.ctx.parked.push((core.ctx.stack.len(), busy));
                    }
                    Op::Code(_) | Op::CodeStall { .. } => {
                        core.in_user = false;
                        acc += core.code_op_time(op);
                    }
                    Op::Run(0) => {}
                    Op::Run(n) => {
                        acc += core.timing.instructions(n);
                        // With interrupts on, one may arrive while these instructions run; it is
                        // taken at the end of the step, so the step must end at an event unless
                        // nothing can arrive before then.
                        if core.ctx.irqs_enabled && !ahead(&self.q, strict, acc) {
                            break Next::Resume;
                        }
                    }
                    Op::Vectoring => {
                        acc += core.timing.vectoring();
                        if core.from_user {
                            acc += core.timing.privilege_change();
                        }
                    }
                    Op::Held(d) => {
                        core.in_user = false;
                        acc += d;
                    }
                    Op::Busy { d, user } => {
                        // Once the run has its samples, the workload starts no new busy
                        // stretches, so that the run can end.
                        let done = super::has_samples(
                            &self.observer,
                            &self.kernel,
                            &self.devices,
                            self.probed_device,
                            self.target_samples,
                            self.end_at.map(|e| now + acc >= e),
                        );
                        if done {
                            if let Some(w) = &mut core.work {
                                w.stopped = true;
                            }
                        }
                        // Process code with interrupts on. Catch up with the clock first if
                        // something may have arrived meanwhile; an interrupt already pending goes
                        // first.
                        if acc > SimDuration::ZERO && !ahead(&self.q, strict, acc) {
                            core.ctx.parked.push((core.ctx.stack.len(), op));
                            break Next::Resume;
                        }
                        if core.interrupt_pending() {
                            // The interrupt cuts process code: it comes from user mode if the
                            // work is (`ret_from_intr` may then switch to a woken task).
                            core.in_user = user;
                            core.ctx.parked.push((core.ctx.stack.len(), op));
                            continue;
                        }
                        // Nothing can arrive before it ends: it runs ahead, exactly.
                        core.in_user = user;
                        if ahead(&self.q, strict, acc + d) {
                            acc += d;
                            continue;
                        }
                        // A windowed run's skip looks at the core between events (`skip.rs`,
                        // `at_rest`): there the core resumes at the end of its time ahead and
                        // starts the run then, as it always did.
                        if acc > SimDuration::ZERO && windowed {
                            core.ctx.parked.push((core.ctx.stack.len(), op));
                            break Next::Resume;
                        }
                        // Run it as an event an interrupt may cut (`poke_cpu_at`), from the end
                        // of the time ahead: nothing is queued before then (checked above), so
                        // resuming there only to start it would find the core as it is now.
                        let start = now + acc;
                        core.busy = Some((start, start + d));
                        core.busy_user = user;
                        core.busy_gen = core.busy_gen.wrapping_add(1);
                        self.q
                            .schedule_at(start + d, Ev::BusyDone(c as u8, core.busy_gen));
                        break Next::Wait;
                    }
                    Op::Rest(gap) => {
                        core.in_user = false;
                        let pending = core.work.as_ref().is_some_and(|w| w.pending);
                        if let (Some(g), false) = (gap, pending) {
                            self.q.schedule_at(now + acc + g, Ev::WorkArrives(c as u8));
                        }
                    }
                    Op::Access(a) => {
                        if acc > SimDuration::ZERO && !ahead(&self.q, strict, acc) {
                            core.ctx.parked.push((core.ctx.stack.len(), op));
                            break Next::Resume;
                        }
                        break Next::Issue(a);
                    }
                    Op::Call(f) => core.ctx.stack.push(f),
                    Op::Int(f) => {
                        core.in_user = false;
                        core.ctx.saved_values.push(core.ctx.value);
                        core.ctx.stack.push(f);
                    }
                    Op::Return(v) => {
                        core.ctx.stack.pop();
                        core.ctx.value = v;
                    }
                    Op::Iret => {
                        core.ctx.stack.pop();
                        if let Some(v) = core.ctx.saved_values.pop() {
                            core.ctx.value = v;
                        }
                        acc += core.timing.iret();
                        core.ctx.irqs_enabled = true;
                    }
                    Op::Block => {
                        // `schedule()` from a task that set itself sleeping.
                        let cur = usize::from(self.sched.current[c]);
                        // Woken since it set itself sleeping: `schedule()` returns at once.
                        if !std::mem::take(&mut self.sched.tasks[cur].wake_pending) {
                            self.sched.tasks[cur].state = TaskState::Sleeping;
                            acc += core.timing.instructions(schedule_cost);
                            core.in_user = false;
                            self.sched
                                .switch(c as u8, &mut core.ctx, now + acc)
                                .expect("the idle task is always runnable");
                        }
                    }
                    Op::Wake(t) => self.sched.wake(t),
                    Op::Sample { thread, ns } => {
                        self.cyclictest.record(thread, ns);
                        // The first thread's loops are the run's samples: the workload's
                        // phases follow them (as `Machine::sample_behind`, which needs the
                        // whole machine while the core is borrowed here).
                        if thread == 0 {
                            let loops = self.kernel.cyclic[0].loops;
                            if let Some(next) =
                                super::devices::next_phase(&self.phases, self.phase, loops)
                            {
                                self.q.schedule_at(now + acc, Ev::Phase(next));
                            }
                        }
                    }
                    Op::WakeSoftirq(nr) => {
                        // -rt's `wakeup_softirqd`: wake the softirq's thread (2.6.29.4-rt17's
                        // kernel/softirq.c; its "same-prio hardirq thread" branch of
                        // `___do_softirq` is dead code: the only caller passes 0).
                        if let Some(t) = self.kernel.softirq_threads[c][usize::from(nr)] {
                            self.sched.wake(t);
                        }
                    }
                    // `scheduler_tick` -> `task_tick_rt` -> `update_curr_rt`.
                    Op::SchedTick => self.sched.update_curr(c as u8, now + acc),
                    // `sched_rt_period_timer` -> `do_sched_rt_period_timer`.
                    Op::RtPeriod => self.sched.rt_period(c as u8, now + acc),
                    Op::Resched { irq_return } => {
                        let p = core.ctx.preempt;
                        // Returning from an interrupt: to user mode (the entry frame's second
                        // local) a woken task always gets the CPU; to kernel code only with
                        // kernel preemption and nothing that holds it off. A voluntary point
                        // (the idle loop) switches outside interrupt context.
                        let from_user =
                            irq_return && core.ctx.stack.last().is_some_and(|f| f.b != 0);
                        let may = p.allows_switch(irq_return, from_user, kernel_preempts);
                        if may && self.sched.need_resched(c as u8) {
                            acc += core.timing.instructions(schedule_cost);
                            core.in_user = false;
                            self.sched.switch(c as u8, &mut core.ctx, now + acc);
                        }
                    }
                    Op::RxNext(_) | Op::TxNext(_) => {
                        // The rings in host memory hold what the chip wrote back by now: catch
                        // up with the clock first, so that every access to the chip (a tail
                        // write on its way, its interrupt) that comes earlier has been made.
                        if acc > SimDuration::ZERO && !ahead(&self.q, strict, acc) {
                            core.ctx.parked.push((core.ctx.stack.len(), op));
                            break Next::Resume;
                        }
                        core.ctx.value = self.devices.take(op, now + acc);
                    }
                    Op::ArmTimer => {
                        // A write of the Local APIC timer's initial count: one-shot, for the
                        // earliest queued hrtimer of this CPU (or stopped, with none).
                        acc += core.timing.lapic_access();
                        core.timer_gen = core.timer_gen.wrapping_add(1);
                        if let Some(at) = self.kernel.hrtimers.earliest(c as u8) {
                            let when = at.max(now + acc);
                            self.q
                                .schedule_at(when, Ev::LapicTimer(c as u8, core.timer_gen));
                        }
                    }
                    Op::Halt { sti } => {
                        // The core idles from `now + acc`, ahead of the clock, if nothing is
                        // scheduled before then: whatever wakes it comes later.
                        if acc > SimDuration::ZERO && !ahead(&self.q, strict, acc) {
                            core.ctx.parked.push((core.ctx.stack.len(), op));
                            break Next::Resume;
                        }
                        let now = self.q.now() + acc;
                        self.last_inline = self.last_inline.max(now);
                        let next_timer = core.next_tick.map(|t| t.since(now));
                        let polls = match &mut core.cpuidle {
                            Some(ci) => {
                                let i = ci.select(now, next_timer);
                                ci.states[i].polls
                            }
                            None => false,
                        };
                        if sti || polls {
                            // sti; hlt, or poll_idle, which spins with interrupts on.
                            core.ctx.irqs_enabled = true;
                        }
                        let work = core.work.as_ref().is_some_and(|w| w.pending);
                        if !core.interrupt_pending() && !work {
                            core.state = CpuState::Halted;
                            break Next::Wait;
                        }
                        if let Some(ci) = &mut core.cpuidle {
                            ci.left(now); // MWAIT returns at once: a pending interrupt
                        }
                    }
                }
            };
            match next {
                Next::Resume => return self.resume_after(c, acc),
                Next::Wait => return,
                Next::Issue(a) => match self.issue(c, a, acc) {
                    Some(local) => acc += local,
                    None => {
                        self.cores[c].state = CpuState::Stalled;
                        return;
                    }
                },
            }
        }
    }

    pub(super) fn root_request(&mut self, c: usize, kind: TlpKind, addr: u64, data: u32) -> Tlp {
        let tag = self.root_tag;
        // The completion (or the FSB's release of a store) finds its core by the tag.
        self.tag_core[usize::from(tag)] = c as u8;
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
        if let Some(k) = self.devices.iter().position(|d| d.claims_mem(addr)) {
            Endpoint::Device(k as u8)
        } else if self.fabric.hub_window(addr).is_some() {
            Endpoint::Ich
        } else {
            panic!("access to 0x{addr:x}, which no modelled device decodes")
        }
    }

    /// Issue an access `at` after now (the core's compute time ahead of the clock). `Some(cost)`
    /// for accesses the core completes by itself (Local APIC); `None` when it waits for the bus.
    #[inline(always)]
    pub(super) fn issue(&mut self, c: usize, a: Access, at: SimDuration) -> Option<SimDuration> {
        let lapic_cost = self.cores[c].timing.lapic_access();
        let mut cycle = Cycle::Narrow;
        let (tlp, dest, posted) = match a {
            Access::LapicRead { reg } => {
                self.cores[c].ctx.value = self.cores[c].lapic.read(reg);
                return Some(lapic_cost);
            }
            Access::LapicWrite {
                reg: lapic::REG_ICR_HIGH,
                data,
            } => {
                self.cores[c].lapic.icr_high = data;
                return Some(lapic_cost);
            }
            Access::LapicWrite {
                reg: lapic::REG_ICR_LOW,
                data,
            } => {
                self.send_ipi(c, data, at + lapic_cost);
                return Some(lapic_cost);
            }
            Access::LapicWrite { reg, .. } => {
                if reg == lapic::REG_EOI {
                    if let Some(v) = self.cores[c].lapic.eoi() {
                        // Level-triggered: the EOI goes out to the IO-APIC (posted).
                        let msg = self.root_request(c, TlpKind::Msg(MsgCode::Eoi(v)), 0, 0);
                        self.send(Endpoint::Core(c as u8), Endpoint::Ich, msg, at);
                    }
                }
                return Some(lapic_cost);
            }
            Access::MmioRead { addr } => (
                {
                    self.mmio_reads += 1;
                    self.root_request(c, TlpKind::MemRead, addr, 0)
                },
                self.decode(addr),
                false,
            ),
            Access::MmioWrite { addr, data } => (
                self.root_request(c, TlpKind::MemWrite, addr, data),
                self.decode(addr),
                true,
            ),
            Access::PortIn { port, wide } => (
                {
                    self.port_ios += 1;
                    if wide {
                        cycle = Cycle::Wide;
                    }
                    self.root_request(c, TlpKind::IoRead, u64::from(port), 0)
                },
                self.decode_port(port),
                false,
            ),
            Access::PortOut { port, data } => (
                {
                    self.port_ios += 1;
                    self.root_request(c, TlpKind::IoWrite, u64::from(port), u32::from(data))
                },
                self.decode_port(port),
                false,
            ),
            Access::IntAck => (
                {
                    self.interrupt_acknowledges += 1;
                    cycle = Cycle::IntAck;
                    self.root_request(c, TlpKind::IntAck, 0, 0)
                },
                Endpoint::Ich,
                false,
            ),
        };
        let t = self.q.now() + at;
        // A read's completion may come back ahead of the clock too, unless an observer looks at
        // the machine after every event (seed 004's probe: the completion's event is one).
        if !posted && self.observer.is_none() {
            self.issuing = Some(c as u8);
        }
        let sent = self.send_packet(Endpoint::Core(c as u8), dest, tlp, t, posted, true, cycle);
        self.issuing = None;
        match (sent, self.completed.take()) {
            // A store the FSB took at once: the core goes on from then, no event needed.
            ((_, Some(released)), _) => Some(released.since(t)),
            // A read whose completion came back with nothing queued before it, even after all
            // the device did in answering: the core goes on from then with its data, as the
            // completion's event would have had it.
            (_, Some((p, arrival, _))) if self.q.peek_time().is_none_or(|n| n > arrival) => {
                let data = self.packets[p as usize].tlp.data;
                self.release(p);
                self.last_inline = self.last_inline.max(arrival);
                self.cores[c].ctx.value = data;
                Some(arrival.since(t))
            }
            // Something the device did after answering comes first: the completion is the
            // event it would have been, in the place it would have had among events at its time.
            (_, Some((p, arrival, seq))) => {
                self.q.schedule_reserved(arrival, seq, Ev::Hop(p));
                None
            }
            _ => None,
        }
    }

    /// An interrupt write reaches the Local APICs at `at`: the MCH turns a write to 0xFEEx_xxxx
    /// into an interrupt message on the host bus, which every Local APIC sees and the addressed
    /// ones accept (Intel SDM vol. 3, 10.6.2: physical or logical destination; 10.6.2.4: lowest
    /// priority).
    pub(super) fn interrupt_message(&mut self, tlp: Tlp, at: SimTime) {
        if let Some(m) = MsiMessage::decode(tlp.addr, tlp.data) {
            let addressed = self.addressed(&m);
            self.accept_message(&m, addressed, at);
        }
    }

    /// The addressed cores (a set from [`Self::addressed`]) take message `m` at `at`.
    pub(super) fn accept_message(&mut self, m: &MsiMessage, addressed: u64, at: SimTime) {
        let mut targets = self.chosen(m, addressed);
        while targets != 0 {
            let c = targets.trailing_zeros() as usize;
            targets &= targets - 1;
            self.cores[c].lapic.accept(m.vector, m.level_triggered);
            self.poke_cpu_at(c, at);
        }
    }

    /// The cores whose (enabled) Local APIC an interrupt message addresses, as a bit set of
    /// core indices. A physical destination is one APIC ID, found in the machine's table.
    pub(super) fn addressed(&self, m: &MsiMessage) -> u64 {
        if !m.logical && m.dest_apic_id != lapic::BROADCAST_ID {
            let c = self.apic_core[usize::from(m.dest_apic_id)];
            return match self.cores.get(usize::from(c)) {
                Some(core) if core.lapic.enabled => 1 << c,
                _ => 0,
            };
        }
        let mut set = 0u64;
        for (c, core) in self.cores.iter().enumerate() {
            let l = &core.lapic;
            if l.enabled && l.addressed_by(m.dest_apic_id, m.logical) {
                set |= 1 << c;
            }
        }
        set
    }

    /// Of the addressed cores, those that take the message: all of them, or with lowest-priority
    /// delivery the one at the lowest task priority (ties: the lowest APIC ID; SDM 10.6.2.4
    /// leaves the tie to the platform).
    fn chosen(&self, m: &MsiMessage, addressed: u64) -> u64 {
        if !m.lowest_priority || addressed.count_ones() < 2 {
            return addressed;
        }
        let best = (0..self.cores.len())
            .filter(|&c| addressed & (1 << c) != 0)
            .min_by_key(|&c| (self.cores[c].lapic.tpr, self.cores[c].lapic.id))
            .expect("two addressed cores");
        1 << best
    }

    /// The core a CPU-bound transaction goes to: a completion to the core that sent the request
    /// (by its tag); an interrupt message to the first core it addresses (or core 0 when it
    /// addresses none). Where every core has the same routes (one host bus, as on every shipped
    /// platform) the choice changes nothing and is skipped; on a platform with two front-side buses the MCH would send a
    /// message for cores on both buses to both, which is not modelled yet (seed 001).
    pub(super) fn core_of(&self, tlp: &Tlp) -> Endpoint {
        if self.fabric.cores_share_routes {
            return Endpoint::Core(0);
        }
        let c = match tlp.kind {
            TlpKind::MemWrite => MsiMessage::decode(tlp.addr, tlp.data)
                .map(|m| self.addressed(&m).trailing_zeros())
                .filter(|&c| c < 64)
                .unwrap_or(0) as u8,
            _ => self.tag_core[usize::from(tlp.tag)],
        };
        Endpoint::Core(c)
    }

    /// Are the cores in `addressed` all halted (every core, if the set is empty)? Then their
    /// message may be taken ahead of the clock: none of them runs before its wake-up, which is
    /// an event, and the choice among them reads only what halted cores hold.
    pub(super) fn all_halted(&self, addressed: u64) -> bool {
        self.cores
            .iter()
            .enumerate()
            .filter(|(c, _)| addressed == 0 || addressed & (1 << c) != 0)
            .all(|(_, core)| core.state == CpuState::Halted)
    }

    /// A write to the interrupt command register's low half sends an IPI: an interrupt message
    /// on the host bus, like any other (Intel SDM vol. 3, 10.6.1; since the Pentium 4 the
    /// messages travel on the system bus, not a separate APIC bus).
    fn send_ipi(&mut self, c: usize, icr_low: u32, at: SimDuration) {
        let l = &self.cores[c].lapic;
        let m = MsiMessage::from_icr(icr_low, l.icr_high, l.id);
        let tlp = self.root_request(c, TlpKind::MemWrite, u64::from(m.address()), m.data());
        let to = self.core_of(&tlp);
        self.send(Endpoint::Core(c as u8), to, tlp, at);
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::SimDuration;
    use crate::hw::lapic::{REG_ICR_HIGH, REG_ICR_LOW};
    use crate::kernel::program::Access;
    use crate::scenario::Scenario;

    #[test]
    fn an_ipi_is_a_message_on_the_host_bus_that_the_addressed_core_takes() {
        // The workstation with an SMP kernel on its two cores and a 1 Hz tick, whose first tick
        // comes long after this short run: core 0 writes the ICR with the tick's vector for APIC
        // ID 1, and core 1 alone handles it, once.
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let set = ["delivery=msi", "kernel.smp=true", "kernel.tick.hz=1"].map(String::from);
        let s = Scenario::load(repo.join("experiments/seed000/ws.toml"), &set).unwrap();
        let mut m = s.build(1, 5, 0).unwrap();
        let vector = m.kernel.tick.as_ref().unwrap().vector;
        let dest = u32::from(m.cores[1].lapic.id) << 24;
        let write = |reg, data| Access::LapicWrite { reg, data };
        m.issue(0, write(REG_ICR_HIGH, dest), SimDuration::ZERO);
        m.issue(0, write(REG_ICR_LOW, u32::from(vector)), SimDuration::ZERO);
        let c = m.run();
        assert_eq!(c.ticks, 1, "one tick handler ran: the IPI's");
        assert_eq!(c.interrupts_per_cpu[1], 1, "{:?}", c.interrupts_per_cpu);
        assert_eq!(c.interrupts_per_cpu[0], 5, "core 0 took the card's five");
    }
}
