//! What `rtla timerlat` reports, on kernels without the timerlat tracer: for each wake-up of
//! the measuring threads, the **IRQ latency** (the timer's expiry to its hrtimer callback
//! running in the timer interrupt) beside the thread latency the threads measure themselves
//! (expiry to the thread running). Their difference is the scheduling part: the wake-up, a
//! context switch, and whatever ran in between.
//!
//! From the generic `timer` events: `hrtimer_start` gives each hrtimer's absolute expiry (its
//! `softexpires`, for a thread sleeping in `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`,
//! is exactly its deadline;
//! `common_pid` is the sleeping thread), and `hrtimer_expire_entry` the moment its callback
//! (`hrtimer_wakeup`) starts. The trace clock is `mono`, the same clock as the deadline.
//!
//! The same readers keep each CPU's most recent events (hard IRQs, softirqs, the local timer,
//! context switches and wake-ups) so that, when a wake-up is too late (`--break-us`), irqlab can
//! say what ran on that CPU before it.

use crate::readers::{CpuSink, Readers};
use crate::ringbuf::{self, Field, Format};
use crate::tracefs::{EventName, TraceInstance, IRQ_EVENTS, LOCAL_TIMER_EVENTS};
use crate::HostError;
use irqlab_stats::results::SpikeEvent;
use irqlab_stats::LatencyHistogram;
use std::collections::{HashMap, VecDeque};

/// Events kept per CPU for the spike account: at 100k events/s, the last ~80 ms.
const RECENT_EVENTS: usize = 8192;

/// Every event enabled here that fires between a timer's expiry and the thread running adds
/// its cost to the latency measured (a few hundred ns each on a virtual machine), so the set is
/// the smallest that still says what ran: not `sched_wakeup` (the callback marks the wake-up),
/// `softirq_raise` or `local_timer_entry`.
const EVENTS: [EventName; 8] = [
    EventName::new("timer", "hrtimer_start"),
    EventName::new("timer", "hrtimer_expire_entry"),
    IRQ_EVENTS[0],
    IRQ_EVENTS[1],
    IRQ_EVENTS[3],
    IRQ_EVENTS[4],
    EventName::new("sched", "sched_switch"),
    LOCAL_TIMER_EVENTS[1],
];
/// The first two are needed for the split; the rest only enrich the spike account.
const REQUIRED: usize = 2;

/// One decoded event, small enough to keep thousands per CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    HrtimerStart {
        pid: i32,
        expires_ns: i64,
    },
    HrtimerExpire {
        pid: Option<i32>,
    },
    IrqEntry {
        irq: i64,
        name: String,
    },
    IrqExit {
        irq: i64,
    },
    SoftirqRaise {
        vec: i64,
    },
    SoftirqEntry {
        vec: i64,
    },
    SoftirqExit {
        vec: i64,
    },
    LocalTimerEntry,
    LocalTimerExit,
    Switch {
        prev: String,
        prev_pid: i64,
        next: String,
        next_pid: i64,
    },
    Wakeup {
        comm: String,
        pid: i64,
    },
}

/// An event ID's meaning, with the fields it is read by, resolved once from its `format`.
#[derive(Clone)]
enum Kind {
    HrtimerStart {
        pid: Field,
        hrtimer: Field,
        function: Field,
        softexpires: Field,
    },
    HrtimerExpire {
        hrtimer: Field,
    },
    IrqEntry {
        irq: Field,
        name: Field,
    },
    IrqExit {
        irq: Field,
    },
    Softirq {
        stage: u8,
        vec: Field,
    },
    LocalTimer {
        entry: bool,
    },
    Switch {
        prev: Field,
        prev_pid: Field,
        next: Field,
        next_pid: Field,
    },
    Wakeup {
        comm: Field,
        pid: Field,
    },
}

impl Kind {
    /// The kind of `EVENTS[k]` with its fields; an error if this kernel's format lacks one.
    fn of(k: usize, f: &Format) -> Result<Kind, HostError> {
        Ok(match EVENTS[k].name {
            "hrtimer_start" => Kind::HrtimerStart {
                pid: f.field("common_pid")?,
                hrtimer: f.field("hrtimer")?,
                function: f.field("function")?,
                softexpires: f.field("softexpires")?,
            },
            "hrtimer_expire_entry" => Kind::HrtimerExpire {
                hrtimer: f.field("hrtimer")?,
            },
            "irq_handler_entry" => Kind::IrqEntry {
                irq: f.field("irq")?,
                name: f.field("name")?,
            },
            "irq_handler_exit" => Kind::IrqExit {
                irq: f.field("irq")?,
            },
            "softirq_raise" => Kind::Softirq {
                stage: 0,
                vec: f.field("vec")?,
            },
            "softirq_entry" => Kind::Softirq {
                stage: 1,
                vec: f.field("vec")?,
            },
            "softirq_exit" => Kind::Softirq {
                stage: 2,
                vec: f.field("vec")?,
            },
            "local_timer_entry" => Kind::LocalTimer { entry: true },
            "local_timer_exit" => Kind::LocalTimer { entry: false },
            "sched_switch" => Kind::Switch {
                prev: f.field("prev_comm")?,
                prev_pid: f.field("prev_pid")?,
                next: f.field("next_comm")?,
                next_pid: f.field("next_pid")?,
            },
            "sched_wakeup" => Kind::Wakeup {
                comm: f.field("comm")?,
                pid: f.field("pid")?,
            },
            other => unreachable!("EVENTS lists {other} without a kind"),
        })
    }
}

#[derive(Clone, Default)]
struct Decoder {
    ids: HashMap<u16, Kind>,
    /// The address of `hrtimer_wakeup`, the callback of a sleeping thread's timer (from
    /// `/proc/kallsyms`): other hrtimers started while the thread runs (the scheduler tick,
    /// re-armed in its context) are not its wake-ups. Unknown: no filter.
    wakeup_fn: Option<i64>,
}

/// One CPU's trace: IRQ latencies per sleeping thread and the recent events.
#[derive(Default)]
pub struct CpuTimerTrace {
    /// Expiry to `hrtimer_expire_entry`, per pid of the thread that armed the timer.
    pub irq_latency_by_pid: HashMap<i32, LatencyHistogram>,
    /// (timestamp ns, event), oldest first.
    pub recent: VecDeque<(u64, Event)>,
    pub events: u64,
    /// hrtimer pointer -> (pid that armed it, expiry).
    armed: HashMap<i64, (i32, i64)>,
}

impl CpuTimerTrace {
    fn on_event(&mut self, d: &Decoder, ts: u64, rec: &[u8]) {
        let Some(kind) = d.ids.get(&ringbuf::record_type(rec)) else {
            return;
        };
        self.events += 1;
        let event = match kind {
            Kind::HrtimerStart {
                pid,
                hrtimer,
                function,
                softexpires,
            } => {
                if d.wakeup_fn.is_some_and(|f| f != function.int(rec)) {
                    return; // not a sleeping thread's timer
                }
                let pid = pid.int(rec) as i32;
                // softexpires is the requested deadline; expires adds the task's timer slack
                // (zero for real-time tasks, 50 us by default otherwise).
                let expires = softexpires.int(rec);
                self.armed.insert(hrtimer.int(rec), (pid, expires));
                Event::HrtimerStart {
                    pid,
                    expires_ns: expires,
                }
            }
            Kind::HrtimerExpire { hrtimer } => match self.armed.remove(&hrtimer.int(rec)) {
                Some((pid, expires)) => {
                    let lat = (ts as i64).saturating_sub(expires).max(0) as u64;
                    self.irq_latency_by_pid.entry(pid).or_default().record(lat);
                    Event::HrtimerExpire { pid: Some(pid) }
                }
                None => Event::HrtimerExpire { pid: None },
            },
            Kind::IrqEntry { irq, name } => Event::IrqEntry {
                irq: irq.int(rec),
                name: name.str(rec).to_string(),
            },
            Kind::IrqExit { irq } => Event::IrqExit { irq: irq.int(rec) },
            Kind::Softirq { stage, vec } => {
                let vec = vec.int(rec);
                match stage {
                    0 => Event::SoftirqRaise { vec },
                    1 => Event::SoftirqEntry { vec },
                    _ => Event::SoftirqExit { vec },
                }
            }
            Kind::LocalTimer { entry: true } => Event::LocalTimerEntry,
            Kind::LocalTimer { entry: false } => Event::LocalTimerExit,
            Kind::Switch {
                prev,
                prev_pid,
                next,
                next_pid,
            } => Event::Switch {
                prev: prev.chars(rec),
                prev_pid: prev_pid.int(rec),
                next: next.chars(rec),
                next_pid: next_pid.int(rec),
            },
            Kind::Wakeup { comm, pid } => Event::Wakeup {
                comm: comm.chars(rec),
                pid: pid.int(rec),
            },
        };
        if self.recent.len() == RECENT_EVENTS {
            self.recent.pop_front();
        }
        self.recent.push_back((ts, event));
    }
}

/// A CPU's reader state: the decoder and what it gathered.
pub struct TimerSink {
    decoder: Decoder,
    pub trace: CpuTimerTrace,
}

impl CpuSink for TimerSink {
    fn event(&mut self, ts: u64, rec: &[u8]) {
        self.trace.on_event(&self.decoder, ts, rec);
    }
    fn lost(&mut self) {
        // An expiry after the gap must not pair with a start before it.
        self.trace.armed.clear();
    }
}

/// The trace side of a timer measurement, running. Field order matters: the readers are
/// dropped (stopped and joined) before the instance is removed.
pub struct TimerTrace {
    readers: Readers<TimerSink>,
    inst: TraceInstance,
    cpus: Vec<u32>,
}

/// The trace side, finished.
pub struct TimerTraceResult {
    pub per_cpu: Vec<(u32, CpuTimerTrace)>,
    /// Per CPU of the run, events the ring buffer lost.
    pub lost_events: Vec<u64>,
}

impl TimerTrace {
    /// Start tracing on `cpus` before the measuring threads start.
    pub fn start(cpus: &[u32], buffer_kb: u32) -> Result<Self, HostError> {
        let inst = TraceInstance::create(&EVENTS[..REQUIRED], buffer_kb)?;
        let wakeup_fn = crate::irqs::kernel_symbol("hrtimer_wakeup").map(|a| a as i64);
        if let Some(f) = wakeup_fn {
            // Only sleeping threads' timers reach the ring buffer: the scheduler tick, re-armed
            // on the way out of idle before the thread runs, is dropped in the kernel (a filtered
            // event is built in a per-CPU scratch buffer and copied into the ring only when it
            // matches, `trace_event_buffer_lock_reserve()` in `kernel/trace/trace.c`). Best
            // effort: the decoder applies the same test.
            let filter = inst.dir().join("events/timer/hrtimer_start/filter");
            let _ = std::fs::write(filter, format!("function == 0x{f:x}"));
        }
        inst.enable_if_present(&EVENTS[REQUIRED..])?;
        let mut decoder = Decoder {
            wakeup_fn,
            ..Decoder::default()
        };
        for (k, ev) in EVENTS.iter().enumerate() {
            let p = inst.format_path(*ev);
            if p.exists() {
                let f = Format::read(&p)?;
                match Kind::of(k, &f) {
                    Ok(kind) => {
                        decoder.ids.insert(f.id, kind);
                    }
                    Err(e) if k < REQUIRED => return Err(e),
                    // An optional event with other fields on this kernel: left out.
                    Err(_) => {}
                }
            }
        }
        // The reader on the CPUs not measured, when there are any.
        let others: Vec<u32> = crate::timer::online_cpus()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !cpus.contains(c))
            .collect();
        let readers = Readers::start_on(&inst, cpus, &others, |_| TimerSink {
            decoder: decoder.clone(),
            trace: CpuTimerTrace::default(),
        })?;
        Ok(TimerTrace {
            readers,
            inst,
            cpus: cpus.to_vec(),
        })
    }

    /// Stop tracing, drain the buffers, remove the instance.
    pub fn finish(self) -> Result<TimerTraceResult, HostError> {
        let stopped = self.inst.stop();
        let drained = self.readers.finish();
        let lost_events = self
            .cpus
            .iter()
            .map(|&c| self.inst.lost_events(c).unwrap_or(0))
            .collect();
        self.inst.close()?;
        stopped?;
        let per_cpu = drained?
            .into_iter()
            .map(|(cpu, sink)| (cpu, sink.trace))
            .collect();
        Ok(TimerTraceResult {
            per_cpu,
            lost_events,
        })
    }
}

impl TimerTraceResult {
    /// IRQ latencies of the thread `pid` on `cpu`.
    pub fn irq_latency(&self, cpu: u32, pid: i32) -> Option<&LatencyHistogram> {
        self.per_cpu
            .iter()
            .find(|(c, _)| *c == cpu)
            .and_then(|(_, t)| t.irq_latency_by_pid.get(&pid))
    }

    /// What ran on `cpu` from `before_ns` ahead of `expiry_ns` until the thread `pid` ran, in
    /// time order, relative to the expiry; handler and softirq durations paired within the
    /// window. Also returns the IRQ latency of that wake-up, if its hrtimer event was seen.
    pub fn spike_account(
        &self,
        cpu: u32,
        pid: i32,
        expiry_ns: u64,
        latency_ns: u64,
        before_ns: u64,
    ) -> (Option<u64>, Vec<SpikeEvent>) {
        let Some((_, t)) = self.per_cpu.iter().find(|(c, _)| *c == cpu) else {
            return (None, Vec::new());
        };
        let from = expiry_ns.saturating_sub(before_ns);
        // Leave some room after the wake-up: the reading of the clock comes after it.
        let to = expiry_ns + latency_ns + 2_000;
        let window: Vec<&(u64, Event)> = t
            .recent
            .iter()
            .filter(|(ts, _)| *ts >= from && *ts <= to)
            .collect();
        let mut irq_latency = None;
        let mut out = Vec::new();
        let rel = |ts: u64| ts as i64 - expiry_ns as i64;
        for (i, (ts, e)) in window.iter().enumerate() {
            let end_of = |pred: &dyn Fn(&Event) -> bool| {
                window[i + 1..]
                    .iter()
                    .find(|(_, x)| pred(x))
                    .map(|(te, _)| te - ts)
            };
            let (what, duration_ns) = match e {
                Event::IrqEntry { irq, name } => (
                    format!("hard IRQ {irq} {name}"),
                    end_of(&|x| matches!(x, Event::IrqExit { irq: j } if j == irq)),
                ),
                Event::SoftirqEntry { vec } => (
                    format!(
                        "softirq {vec} {}",
                        crate::irqs::SOFTIRQ_NAMES
                            .get(*vec as usize)
                            .copied()
                            .unwrap_or("?")
                    ),
                    end_of(&|x| matches!(x, Event::SoftirqExit { vec: v } if v == vec)),
                ),
                Event::LocalTimerEntry => (
                    "local timer interrupt".to_string(),
                    end_of(&|x| matches!(x, Event::LocalTimerExit)),
                ),
                Event::LocalTimerExit => ("end of the timer interrupt".to_string(), None),
                Event::HrtimerExpire { pid: Some(p) } if *p == pid => {
                    irq_latency = Some(ts.saturating_sub(expiry_ns));
                    (
                        "timer callback wakes the measuring thread".to_string(),
                        None,
                    )
                }
                Event::Switch {
                    prev,
                    prev_pid,
                    next,
                    next_pid,
                } => (
                    format!("switch {prev}:{prev_pid} -> {next}:{next_pid}"),
                    None,
                ),
                Event::Wakeup { comm, pid } => (format!("wake-up of {comm}:{pid}"), None),
                Event::SoftirqRaise { vec } => (format!("softirq {vec} raised"), None),
                _ => continue,
            };
            out.push(SpikeEvent {
                offset_ns: rel(*ts),
                event: what,
                duration_ns,
            });
        }
        (irq_latency, out)
    }
}
