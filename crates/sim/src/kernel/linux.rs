//! The Linux library: the kernel's interrupt paths as programs of the step language
//! (`kernel/program.rs`), built when the machine is assembled from the instruction counts of the
//! kernel file, the registered IRQ descriptors and the kernel's policies (its idle loop, its
//! tick).
//!
//! The paths follow Linux 2.6.18-2.6.24 on i386 (see `kernels/linux-2.6.18-i386-up.toml` for the
//! source of each instruction count); Linux 6.4 (`kernels/linux-6.4-x86_64-smp.toml`) runs the
//! same shape with its own counts and the cpuidle idle loop:
//! - `common_interrupt` -> `do_IRQ` -> flow handler -> `handle_IRQ_event` -> actions -> `irq_exit`
//!   -> `__do_softirq` -> `tasklet_action` -> tasklet function;
//! - XT-PIC `handle_level_irq` (2.6.18: `__do_IRQ` with `.ack = mask_and_ack_8259A`, `.end =
//!   end_8259A_irq`: the same port I/Os),
//! - IO-APIC level `handle_fasteoi_irq` (2.6.18: `.ack` is empty and `.end =
//!   end_level_ioapic_irq`: "we do not touch any IO-APIC register while handling them"),
//! - MSI and IO-APIC edge `handle_edge_irq` (Local APIC EOI before the handler).
//!
//! Each descriptor gets its own `do_IRQ`, flow handler and action chain, with its IRQ, vector
//! and handlers as constants: what the running kernel reads from `irq_desc[irq]` is fixed once
//! `request_irq` has run, so the programs are the same code specialised, not a different path.

use super::hrtimer::TimerStep;
use super::irq_threads::IrqThreadStep;
use super::net::NetStep::*;
use super::program::{Builder, Entry, Idt, Operand, Step, NO_ENTRY};
use super::sched::SchedStep;
use super::softirq::SoftirqStep::*;
use super::softirq::{
    HRTIMER_SOFTIRQ, MAX_SOFTIRQ_RESTART, NET_RX_SOFTIRQ, TASKLET_SOFTIRQ, TIMER_SOFTIRQ,
};
use super::workqueue::DeferredStep::*;
use super::{Flow, Kernel, CACHED_IRQ_MASK, SPURIOUS_8259, TICKS};
use crate::hw::lapic;
use crate::hw::pic8259::{CASCADE_IR, MASTER_CMD, MASTER_DATA, SLAVE_CMD, SLAVE_DATA};
use std::collections::BTreeMap;
use Step::*;

/// The entry points the CPU itself starts programs at.
#[derive(Copy, Clone, Debug, Default)]
pub struct Entries {
    /// The idle task's loop (`cpu_idle`).
    pub idle: Entry,
    /// A hardware interrupt taken with the vector from the Local APIC.
    pub interrupt_apic: Entry,
    /// A hardware interrupt taken from the 8259's INTR: INTA first.
    pub interrupt_pic: Entry,
    /// With high-resolution timers: the tick's hrtimer callback (`tick_sched_timer`) and a
    /// sleeper's (`hrtimer_wakeup`).
    pub tick_sched_timer: Entry,
    pub hrtimer_wakeup: Entry,
    /// With real-time bandwidth limited: its period timer's callback.
    pub sched_rt_period_timer: Entry,
    /// A kernel with tasks: ksoftirqd's loop.
    pub ksoftirqd: Entry,
    /// With drivers' deferred work: keventd's `worker_thread` loop (`events/N`).
    pub events_worker: Entry,
}

/// Build the kernel's paths for its registered descriptors and fill its dispatch tables (the
/// IDT, `softirq_vec`). Runs once, after every driver has requested its IRQ.
pub fn link(k: &mut Kernel) {
    let c = k.cost.clone();

    // `irq_exit`, and the softirq loop it may run.
    let tasklet_action = k.code.add("tasklet_action", {
        let mut b = Builder::new();
        b.push(SpliceTasklets);
        let next = b.here();
        b.push(NextTasklet { done: 0 })
            .push(Run(c.tasklet_action))
            .push(CallTasklet)
            .push(Jump(next));
        let done = b.here();
        b.patch(next, done);
        b.push(Return(Operand::Const(0)));
        b
    });
    // The softirqs this kernel raises, lowest first, as `__do_softirq` walks `softirq_vec`:
    // TIMER (`run_timer_softirq` when no timer expires: a counted block with no accesses, run
    // inside the loop) before TASKLET.
    let mut handlers = Vec::new();
    // With drivers' timer-wheel timers, `run_timer_softirq` runs those whose expiry `jiffies`
    // has reached, each callback after the other.
    if let Some(t) = &k.tick {
        if k.deferred.timers.is_empty() {
            handlers.push((TIMER_SOFTIRQ as u8, t.timer_softirq.step()));
        } else {
            let mut b = Builder::new();
            b.push(t.timer_softirq.step());
            let top = b.here();
            b.push(NextExpiredWheelTimer { done: 0 })
                .push(CallWheelTimer)
                .push(Jump(top));
            let done = b.here();
            b.patch(top, done);
            b.push(Return(Operand::Const(0)));
            let run = k.code.add("run_timer_softirq", b);
            handlers.push((TIMER_SOFTIRQ as u8, Call(run)));
        }
    }
    // keventd's `worker_thread`: with the list lock (interrupts off) take the next work and
    // run it with interrupts on; sleep when the list is empty. 2.6.29's `run_workqueue` has no
    // `cond_resched()` between works.
    if !k.deferred.works.is_empty() {
        let sc = k
            .sched
            .clone()
            .expect("deferred work needs a kernel with tasks");
        let mut b: Builder = vec![Cli].into();
        let test = b.here();
        b.push(NextWork { idle: 0 })
            .push(Sti)
            .push(Run(sc.run_workqueue))
            .push(CallWork)
            .push(Jump(0));
        let sleep = b.here();
        b.patch(test, sleep);
        b.push(Block).push(Jump(0));
        k.entries.events_worker = k.code.add("worker_thread(events)", b);
    }
    // `net_rx_action` (net/core/dev.c; 2.6.29's or 2.4.21's, by the kernel's [net] napi), with
    // network devices: poll the contexts on this CPU's list while the budget and the kernel's
    // time limit (`Net::time_limit_jiffies`) last.
    if !k.net.napi.is_empty() {
        let nc = k
            .net_costs
            .clone()
            .expect("network devices need the kernel's [net] costs");
        let mut b = Builder::new();
        b.push(Run(nc.net_rx_action)).push(NetRxBegin);
        let top = b.here();
        b.push(NextNapi { done: 0 })
            .push(Run(nc.napi_poll))
            .push(CallPoll)
            .push(AfterPoll)
            .push(Jump(top));
        let done = b.here();
        b.patch(top, done);
        b.push(Return(Operand::Const(0)));
        let net_rx_action = k.code.add("net_rx_action", b);
        handlers.push((NET_RX_SOFTIRQ as u8, Call(net_rx_action)));
    }
    handlers.push((TASKLET_SOFTIRQ as u8, Call(tasklet_action)));
    let tasks = k.sched.is_some();
    // A threaded kernel (the -rt patch): device handlers in IRQ threads, softirqs in threads
    // of their own. PREEMPT_RT makes `local_bh_disable` a per-thread lock, so a softirq
    // handler in a thread stays preemptible; without it the preempt count holds preemption
    // off until the handler returns.
    let threads = k.threads.clone();
    let rt = k
        .sched
        .as_ref()
        .is_some_and(|s| s.preemption == super::context::Preemption::Rt);
    let deferred = threads
        .as_ref()
        .is_some_and(|t| t.hrtimer_wakeup == super::costs::HrtimerWakeup::Softirq);
    // -rt's softirq split of hrtimers: `run_hrtimer_softirq` runs the callbacks that
    // `hrtimer_interrupt` left to it.
    if deferred {
        let mut b = Builder::new();
        let top = b.here();
        b.push(TimerStep::NextDeferred { done: 0 })
            .push(TimerStep::Call)
            .push(Jump(top));
        let done = b.here();
        b.patch(top, done);
        b.push(Return(Operand::Const(0)));
        let run = k.code.add("run_hrtimer_softirq", b);
        handlers.push((HRTIMER_SOFTIRQ as u8, Call(run)));
    }
    // `__do_softirq`: the handlers run with interrupts on; `if (pending && --max_restart) goto
    // restart;`: 10 rounds in all (2.6.29 has no time limit; MAX_SOFTIRQ_TIME came in 3.10).
    // A kernel with tasks then wakes ksoftirqd for what is still pending.
    let do_softirq = k.code.add("__do_softirq", {
        let mut b = Builder::new();
        b.push(SoftirqEnter).push(Run(c.do_softirq));
        let restart = b.here();
        softirq_round(&mut b, &handlers);
        b.push(Cli).push(SoftirqRestart {
            max: MAX_SOFTIRQ_RESTART,
            to: restart,
        });
        if tasks {
            b.push(WakeSoftirqd);
        }
        b.push(SoftirqLeave).push(Return(Operand::Const(0)));
        b
    });
    let try_to_wake_up = k.sched.as_ref().map_or(0, |s| s.try_to_wake_up);
    let irq_exit = k.code.add("irq_exit", {
        let mut b = Builder::new();
        b.push(HardirqLeave).push(Run(c.irq_exit));
        let test = b.here();
        b.push(BranchIfNoSoftirq(0));
        if threads.is_some() {
            // -rt's `__do_softirq` with softirq threads: "Push all softirq processing off
            // to ksoftirqd" (`trigger_softirqs`: wake the thread of each pending softirq).
            trigger_softirqs(&mut b, try_to_wake_up);
        } else {
            b.push(Call(do_softirq));
        }
        let out = b.here();
        b.patch(test, out);
        b.push(Return(Operand::Const(0)));
        b
    });
    // Each softirq's thread (-rt's `ksoftirqd(data)`): while its softirq is pending, clear it,
    // `local_bh_disable`, run the handler with interrupts on, `cond_resched`; then sleep.
    if let Some(t) = &threads {
        for &(nr, h) in &handlers {
            let mut b: Builder = vec![Cli].into();
            let test = b.here();
            b.push(SoftirqThreadTake { nr, idle: 0 });
            if !rt {
                b.push(SoftirqEnter);
            }
            b.push(Sti)
                .push(Run(t.softirq_thread_loop))
                .push(h)
                .push(Cli);
            if !rt {
                b.push(SoftirqLeave);
            }
            b.push(Sti)
                .push(Resched { irq_return: false })
                .push(Jump(0));
            let sleep = b.here();
            b.patch(test, sleep);
            b.push(Block).push(Jump(0));
            let name = super::softirq::name(u32::from(nr));
            let e = k.code.add(format!("sirq-{name}"), b);
            k.softirq_thread_entries.push((nr, name, e));
        }
    }
    // The 8259's chip operations, per line, as i8259.c runs them.
    let mut chip_ops = ChipOps::default();
    let eoi = LapicWrite(lapic::REG_EOI, 0);

    // Each descriptor's flow handler and action chain.
    let mut do_irq = Vec::with_capacity(k.irqs.len());
    for i in 0..k.irqs.len() {
        let d = &k.irqs[i];
        let (irq, vector, flow, count, unhandled) = (d.irq, d.vector, d.flow, d.count, d.unhandled);
        // `handle_IRQ_event`: local_irq_enable() for !IRQF_DISABLED, each action, then
        // interrupts off again and the chain's verdict for `note_interrupt`.
        let mut b = Builder::new();
        if !d.actions[0].irqs_disabled {
            b.push(Sti);
        }
        b.push(Run(c.handle_irq_event));
        for a in &d.actions {
            b.push(Run(c.per_action))
                .push(Call(a.handler))
                .push(NoteHandled);
        }
        b.push(Cli);
        let test = b.here();
        b.push(BranchIfLocal(0)).push(Inc(unhandled));
        let out = b.here();
        b.patch(test, out);
        b.push(Return(Operand::Local));
        let chain = k.code.add(format!("handle_IRQ_event(irq {irq})"), b);

        let half = c.flow_handler / 2;
        let rest = c.note_interrupt + c.flow_handler - half;
        let mut b: Builder = vec![Inc(count), Run(half)].into();
        let name = match flow {
            // handle_level_irq: mask_ack, chain, unmask.
            Flow::Level => {
                let irq8 = irq as u8;
                let mask_ack = chip_ops.mask_ack(k, irq8);
                let unmask = chip_ops.unmask(k, irq8);
                b.push(Call(mask_ack))
                    .push(Call(chain))
                    .push(Run(rest))
                    .push(Call(unmask));
                "handle_level_irq"
            }
            // handle_fasteoi_irq: chain, then chip->eoi (TMR read + EOI write).
            Flow::FastEoi => {
                b.push(Call(chain))
                    .push(Run(rest + c.apic_chip_op))
                    .push(LapicRead(
                        lapic::REG_TMR_BASE + u32::from(vector >> 5) * 0x10,
                    ))
                    .push(eoi);
                "handle_fasteoi_irq"
            }
            // handle_edge_irq: chip->ack (EOI) first, then the chain.
            Flow::Edge => {
                b.push(Run(c.apic_chip_op)).push(eoi);
                match &threads {
                    // `redirect_hardirq`: the handler runs in the descriptor's thread.
                    Some(t) => b
                        .push(Run(t.redirect + try_to_wake_up))
                        .push(IrqThreadStep::Wake(i as u16)),
                    None => b.push(Call(chain)),
                };
                b.push(Run(rest));
                "handle_edge_irq"
            }
        };
        b.push(Return(Operand::Const(0)));
        let flow_entry = k.code.add(format!("{name}(irq {irq})"), b);
        // The descriptor's IRQ thread (-rt's `do_irqd`): take the pending mark, run the
        // handlers with interrupts on, then the softirqs (merged, or woken in their threads),
        // `cond_resched`; sleep when nothing is pending.
        if let Some(t) = &threads {
            let pending = k.new_var(0);
            k.irq_threads.pending.push(pending);
            let mut b: Builder = vec![Cli].into();
            let test = b.here();
            b.push(IrqThreadStep::Take {
                desc: i as u16,
                idle: 0,
            })
            .push(Sti)
            .push(Run(t.irq_thread_loop))
            .push(Call(chain))
            .push(Sti);
            // On the threaded-only kernel the handler runs inside `irq_enter()`/`irq_exit()`,
            // and `irq_exit` -> `__do_softirq` pushes every pending softirq to its thread
            // (`trigger_softirqs`); PREEMPT_RT's `do_irqd` reaches the same wake-ups through
            // `raise_softirq_irqoff` -> `wakeup_softirqd`. No IRQ thread runs a softirq itself:
            // 2.6.29.4-rt17's `___do_softirq(same_prio_only = 1)` has no caller.
            b.push(Cli);
            trigger_softirqs(&mut b, try_to_wake_up);
            b.push(Sti);
            b.push(Resched { irq_return: false }).push(Jump(0));
            let sleep = b.here();
            b.patch(test, sleep);
            b.push(Block).push(Jump(0));
            let e = k.code.add(format!("irq/{irq} thread"), b);
            k.irq_thread_entries.push(e);
        }
        do_irq.push(
            k.code.add(
                format!("do_IRQ(irq {irq})"),
                vec![
                    HardirqEnter,
                    Run(c.do_irq),
                    Call(flow_entry),
                    Call(irq_exit),
                    Return(Operand::Const(0)),
                ]
                .into(),
            ),
        );
    }

    // With high-resolution timers (a kernel that runs tasks) the Local APIC timer is one-shot:
    // `smp_apic_timer_interrupt` -> `hrtimer_interrupt` runs every expired hrtimer's callback
    // in hard-IRQ context, then programs the timer for the next expiry. The tick is one of
    // them (`tick_sched_timer`: update_process_times -> run_local_timers ->
    // raise_softirq(TIMER_SOFTIRQ), scheduler_tick; then `hrtimer_forward`, restart).
    if let (Some(sc), Some(t)) = (k.sched.clone(), k.tick.clone()) {
        k.entries.tick_sched_timer = k.code.add(
            "tick_sched_timer",
            vec![
                Inc(TICKS),
                RaiseSoftirq(TIMER_SOFTIRQ as u8).into(),
                t.handler.step(),
                SchedStep::Tick.into(),
                TimerStep::Restart.into(),
                Return(Operand::Const(0)),
            ]
            .into(),
        );
        k.entries.hrtimer_wakeup = super::tasks::hrtimer_wakeup(&mut k.code, &sc);
        // The real-time bandwidth's period timer (kernel/sched.c `sched_rt_period_timer`, an
        // `irqsafe` hrtimer run in `hrtimer_interrupt` on every kernel):
        // `hrtimer_forward` by the period, `do_sched_rt_period_timer`, restart.
        if sc.rt_runtime_us >= 0 {
            k.entries.sched_rt_period_timer = k.code.add(
                "sched_rt_period_timer",
                vec![
                    Run(sc.rt_period_timer),
                    SchedStep::RtPeriod.into(),
                    TimerStep::Restart.into(),
                    Return(Operand::Const(0)),
                ]
                .into(),
            );
        }
    }
    let hrtimer_interrupt = k.sched.clone().map(|sc| {
        let mut b: Builder = vec![
            Run(c.apic_chip_op),
            eoi,
            HardirqEnter,
            Run(sc.hrtimer_interrupt),
        ]
        .into();
        let top = b.here();
        b.push(TimerStep::NextExpired { done: 0 });
        if deferred {
            let defer = b.here();
            b.push(TimerStep::DeferSleeper { call: 0 }).push(Jump(top));
            let call = b.here();
            b.patch(defer, call);
        }
        b.push(TimerStep::Call).push(Jump(top));
        let done = b.here();
        b.patch(top, done);
        b.push(TimerStep::Arm)
            .push(Call(irq_exit))
            .push(Return(Operand::Const(0)));
        k.code
            .add("smp_apic_timer_interrupt (hrtimer_interrupt)", b)
    });
    // `smp_apic_timer_interrupt`: ack_APIC_irq comes first, so a later tick can be accepted
    // while this one runs; run_local_timers -> raise_softirq(TIMER_SOFTIRQ).
    let local_timer = k.tick.as_ref().map(|t| {
        (
            t.vector,
            k.code.add(
                "smp_apic_timer_interrupt",
                vec![
                    Run(c.apic_chip_op),
                    eoi,
                    HardirqEnter,
                    Inc(TICKS),
                    RaiseSoftirq(TIMER_SOFTIRQ as u8).into(),
                    t.handler.step(),
                    Call(irq_exit),
                    Return(Operand::Const(0)),
                ]
                .into(),
            ),
        )
    });
    let local_timer = match (local_timer, hrtimer_interrupt) {
        (Some((v, _)), Some(h)) => Some((v, h)),
        (l, _) => l,
    };

    // A vector nobody registered: do_IRQ's `ack_bad_irq` path, which acknowledges the Local
    // APIC, or its in-service bit (and a level line's remote IRR) would never clear.
    let bad_apic = k.code.add(
        "ack_bad_irq",
        vec![
            Inc(SPURIOUS_8259),
            Run(c.do_irq),
            eoi,
            Return(Operand::Const(0)),
        ]
        .into(),
    );
    // An 8259 IR7/IR15 with no handler is masked, so mask_and_ack_8259A takes its
    // spurious_8259A_irq path and asks the chip whether it is real.
    let mut bad_pic = [NO_ENTRY; 16];
    for (irq, e) in bad_pic.iter_mut().enumerate() {
        let real = chip_ops.irq_real(k, irq as u8);
        *e = k.code.add(
            format!("spurious_8259A_irq(irq {irq})"),
            vec![
                Inc(SPURIOUS_8259),
                Run(c.do_irq),
                Call(real),
                Return(Operand::Const(0)),
            ]
            .into(),
        );
    }
    for v in 0..256 {
        let registered = k.vector_irq[v].map(|d| do_irq[usize::from(d)]);
        k.idt[Idt::Apic as usize * 256 + v] = registered.unwrap_or(match local_timer {
            Some((tv, e)) if usize::from(tv) == v => e,
            _ => bad_apic,
        });
        k.idt[Idt::Pic as usize * 256 + v] =
            registered.unwrap_or(bad_pic[(v as u8).wrapping_sub(0x20) as usize & 0x0F]);
    }

    // The interrupt entry: with the Local APIC disabled the CPU must first ask the 8259 for the
    // vector; with it, the vector is known and the path starts at vectoring.
    // ksoftirqd (kernel/softirq.c): `while (!kthread_should_stop()) { if
    // (!local_softirq_pending()) schedule(); while (local_softirq_pending()) { do_softirq();
    // cond_resched(); } }`, its test made with interrupts off.
    if tasks {
        let mut b: Builder = vec![Cli].into();
        let test = b.here();
        b.push(BranchIfNoSoftirq(0))
            .push(Call(do_softirq))
            .push(Sti)
            .push(Resched { irq_return: false })
            .push(Jump(0));
        let sleep = b.here();
        b.patch(test, sleep);
        b.push(Block).push(Sti).push(Jump(0));
        k.entries.ksoftirqd = k.code.add("ksoftirqd", b);
    }
    // A kernel that runs tasks checks for a woken task on the way out (`ret_from_intr`).
    let mut tail = vec![Run(c.entry_stub), CallVector(Idt::Apic), Run(c.exit_path)];
    if tasks {
        tail.push(Resched { irq_return: true });
    }
    tail.push(Iret);
    let mut apic: Builder = vec![Vectoring].into();
    let mut pic: Builder = vec![IntAck, TakeVector, Vectoring].into();
    for s in tail {
        apic.push(s);
        pic.push(match s {
            CallVector(_) => CallVector(Idt::Pic),
            s => s,
        });
    }
    k.entries.interrupt_apic = k.code.add("common_interrupt (Local APIC)", apic);
    k.entries.interrupt_pic = k.code.add("common_interrupt (8259)", pic);

    // With a workload, the idle task runs its process work first (with interrupts on, as
    // process code runs) and idles when a busy stretch is spent (`workload.rs`).
    // With tasks, the idle loop looks for a woken task before it takes up process work again
    // (`cpu_idle`'s `while (!need_resched())`): the process work stands for other tasks'
    // time, which a woken task of a better class does not wait for.
    let mut idle: Builder = match (k.workload, tasks) {
        (true, true) => vec![Sti, Resched { irq_return: false }, Work { idle: 3 }].into(),
        (true, false) => vec![Sti, Work { idle: 2 }].into(),
        (false, _) => Builder::new(),
    };
    let start = idle.here();
    let name = match &k.idle {
        // 2.6: `cpu_idle`: `while (!need_resched()) default_idle(); schedule();` with
        // `default_idle` -> `safe_halt` (sti; hlt), its test made with interrupts off.
        None if tasks => {
            idle.push(Cli)
                .push(Run(c.idle_loop))
                .push(Resched { irq_return: false })
                .push(Halt { sti: true })
                .push(Jump(0));
            "cpu_idle"
        }
        // 2.6: `default_idle` -> `safe_halt` (sti; hlt): the interrupt is taken at once.
        None => {
            idle.push(Run(c.idle_loop))
                .push(Halt { sti: true })
                .push(Jump(0));
            "cpu_idle"
        }
        // cpuidle: entered with interrupts off; after the wake-up the exit path runs before
        // `local_irq_enable` lets the interrupt in (the `Run(0)` is that window).
        Some(costs) => {
            idle.push(Cli);
            if tasks {
                idle.push(Resched { irq_return: false });
            }
            idle.push(Run(c.idle_loop + costs.entry))
                .push(Halt { sti: false })
                .push(Run(costs.exit))
                .push(Sti)
                .push(Run(0))
                .push(Jump(0));
            "do_idle"
        }
    };
    debug_assert_eq!(
        start,
        u32::from(k.workload) * (2 + u32::from(tasks)),
        "the process work's `idle` target is the loop's start"
    );
    debug_assert!(
        !tasks || k.tick.is_some(),
        "hrtimers need the timer's vector"
    );
    k.entries.idle = k.code.add(name, idle);
}

/// One round of `__do_softirq`: take the pending mask (interrupts on), then each handler whose
/// softirq was pending, lowest number first.
fn softirq_round(b: &mut Builder, handlers: &[(u8, Step)]) {
    b.push(TakeSoftirqs);
    for &(nr, h) in handlers {
        let test = b.here();
        b.push(TakeSoftirq { nr, absent: 0 }).push(h);
        let next = b.here();
        b.patch(test, next);
    }
}

/// -rt's `trigger_softirqs`: wake the thread of each pending softirq (`wakeup_softirqd`, each
/// wake a `try_to_wake_up`).
fn trigger_softirqs(b: &mut Builder, try_to_wake_up: u32) {
    b.push(TriggerSoftirqs);
    let wake = b.here();
    b.push(WakeNextSoftirq { done: 0 })
        .push(Run(try_to_wake_up))
        .push(Jump(wake));
    let done = b.here();
    b.patch(wake, done);
}

/// i8259.c's chip operations, one program per line, built when a line needs them.
#[derive(Default)]
struct ChipOps {
    built: BTreeMap<(&'static str, u8), Entry>,
}

impl ChipOps {
    fn once(
        &mut self,
        k: &mut Kernel,
        name: &'static str,
        irq: u8,
        steps: impl FnOnce() -> Vec<Step>,
    ) -> Entry {
        *self
            .built
            .entry((name, irq))
            .or_insert_with(|| k.code.add(format!("{name}(irq {irq})"), steps().into()))
    }

    fn ports(irq: u8) -> (u16, u16, u8) {
        if irq & 8 != 0 {
            (SLAVE_DATA, SLAVE_CMD, 8)
        } else {
            (MASTER_DATA, MASTER_CMD, 0)
        }
    }

    /// `mask_and_ack_8259A`.
    fn mask_ack(&mut self, k: &mut Kernel, irq: u8) -> Entry {
        let n = k.cost.i8259_chip_op;
        self.once(k, "mask_and_ack_8259A", irq, || {
            let (imr, cmd, shift) = Self::ports(irq);
            let mut s = vec![
                SetBits(CACHED_IRQ_MASK, 1 << irq),
                Run(n),
                // inb(IMR): "DUMMY - (do we need this?)"
                In(imr),
                Out(imr, Operand::VarByte(CACHED_IRQ_MASK, shift)),
                // 'Specific EOI' to the chip the IRQ is on ...
                Out(cmd, Operand::Const(0x60 + u32::from(irq & 7))),
            ];
            // ... and for a slave IRQ, to the master's cascade input.
            if irq & 8 != 0 {
                s.push(Out(
                    MASTER_CMD,
                    Operand::Const(0x60 + u32::from(CASCADE_IR)),
                ));
            }
            s.push(Return(Operand::Const(0)));
            s
        })
    }

    /// `enable_8259A_irq`.
    fn unmask(&mut self, k: &mut Kernel, irq: u8) -> Entry {
        let n = k.cost.i8259_chip_op;
        self.once(k, "enable_8259A_irq", irq, || {
            let (imr, _, shift) = Self::ports(irq);
            vec![
                ClearBits(CACHED_IRQ_MASK, 1 << irq),
                Run(n),
                Out(imr, Operand::VarByte(CACHED_IRQ_MASK, shift)),
                Return(Operand::Const(0)),
            ]
        })
    }

    /// `i8259A_irq_real`: read the ISR through OCW3 to tell a spurious IRQ7/15 from a real one:
    /// outb(0x0B): OCW3, read ISR; inb: the ISR; outb(0x0A): back to IRR.
    fn irq_real(&mut self, k: &mut Kernel, irq: u8) -> Entry {
        let n = k.cost.i8259_chip_op;
        self.once(k, "i8259A_irq_real", irq, || {
            let (_, cmd, _) = Self::ports(irq);
            vec![
                Run(n),
                Out(cmd, Operand::Const(0x0B)),
                In(cmd),
                Out(cmd, Operand::Const(0x0A)),
                Return(Operand::Const(0)),
            ]
        })
    }
}
