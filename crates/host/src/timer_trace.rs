//! What `rtla timerlat` reports, on kernels without the timerlat tracer: for each wake-up of
//! the measuring threads, the **IRQ latency** (the timer's expiry to its hrtimer callback
//! running in the timer interrupt) beside the thread latency the threads measure themselves
//! (expiry to the thread running), and for the worst wake-up an **analysis** of where its
//! latency went (rtla's `--auto` analysis, `tools/tracing/rtla/src/timerlat_aa.c`).
//!
//! From the generic `timer` events: `hrtimer_start` gives each hrtimer's absolute expiry (its
//! `softexpires`, for a thread sleeping in `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`,
//! is exactly its deadline; `common_pid` is the sleeping thread), and `hrtimer_expire_entry`
//! the moment its callback (`hrtimer_wakeup`) starts. The trace clock is `mono`, the same clock
//! as the deadline.
//!
//! # What is traced, and what it costs
//!
//! Every enabled event that fires between a timer's expiry and the thread running adds its
//! cost to the latency being measured: a few hundred ns each on a virtual machine, where an
//! event right after the timer interrupt reprograms the timer (a VM exit) costs the most. On
//! the 2-CPU 6.18 VM this was written on, cyclictest's median beside a tracing instance
//! (`bench/trace-cost.sh`, alternating rounds) rose by 4-5% with the two timer events and by
//! 8-9% with the scheduler and interrupt-handler events added (`local_timer_exit` costing the
//! most), and irqlab's traced medians stand to cyclictest's in the same proportions
//! (`bench/vs-cyclictest.sh`: 1.04-1.05 and 1.08-1.10; untraced, 1.00). No reader placement or filter removes that: the cost is in the kernel, on the measured
//! path. So `irqlab measure timer` measures untraced by default, as cyclictest does, and traces
//! on request, in two sets ([`TraceDetail`]):
//!
//! - **Timer** (`--trace`): `hrtimer_start` and `hrtimer_expire_entry`, both filtered in the
//!   kernel on `hrtimer_wakeup` so the tick re-armed on the way out of idle and its expiry
//!   never reach the ring buffer (a filtered event is built in a per-CPU scratch buffer and
//!   copied into the ring only when it matches, `trace_event_buffer_lock_reserve()` in
//!   `kernel/trace/trace.c`). They give the IRQ/thread split, which task the timer interrupt
//!   found running, and the worst wake-up's bracket; what happened after the callback is left
//!   unattributed, and says so.
//! - **Scheduler** (`--trace-sched`, and `--break-us`): also `sched_switch`, `local_timer_exit`
//!   and the hard IRQ and softirq handlers, so the analysis names the end of the timer
//!   interrupt, every handler, the task that kept the CPU, the idle exit and the switch.
//!
//! `sched_wakeup` (the callback marks the wake-up), `softirq_raise` and `local_timer_entry` are
//! never traced.
//!
//! # The worst wake-up, in bounded memory
//!
//! Each CPU's sink keeps its most recent events in a ring, and for each thread that sleeps on
//! that CPU (at most `MAX_THREADS`, the most frequent sleepers: a measuring thread wakes every
//! interval) the events around its [`TOP_K`] latest wake-ups so far. The trace brackets each
//! wake-up's latency (the thread's clock reading minus the expiry): the thread read the clock
//! after the switch to it (or, where the trace has no switch, after its callback) and before
//! its next event of its own (arming its next sleep, or sleeping or exiting). When the upper
//! bound ranks among the thread's latest, the window from before the expiry to that event is
//! copied out of the ring. At the end the measuring thread's worst is matched to the window
//! whose bracket holds it. Memory: the ring and at most `MAX_THREADS` x [`TOP_K`] windows of
//! `MAX_WINDOW_EVENTS` per CPU, whatever the run's length.
//!
//! # The idle task's missing events (6.18 on this VM)
//!
//! On some kernels the trace has no task-context event of an idle task: on the 6.18 VM this was
//! written on, CPU 1's `swapper/1` never appears as `prev` in `sched_switch` (emitted by
//! `__schedule()`, `kernel/sched/core.c`), nor in `power:cpu_idle`, in irqlab's instance, in a
//! fresh one or in the top-level buffer, while a BPF program on the same tracepoint counts every
//! one and CPU 0's idle task is recorded in full. Its interrupt-context events are recorded, and
//! the buffer's `entries` count matches what is read, so the events are dropped before they
//! reach the ring buffer (one of the silent exits of `ring_buffer_lock_reserve()`,
//! `kernel/trace/ring_buffer.c`), not lost by irqlab. So on such a CPU the time from the timer
//! interrupt's end to the thread running (the idle exit and the switch) has no event: the
//! analysis names it unattributed instead of leaving a silent gap, and the run warns when a CPU
//! shows switches into idle but none out of it.

use crate::error::HostError;
use crate::readers::{CpuSink, Readers};
use crate::ringbuf::{self, Field, Format};
use crate::tracefs::{EventName, TraceInstance, IRQ_EVENTS, LOCAL_TIMER_EVENTS};
use irqlab_stats::results::{CauseTotal, LatencyCause, LatencyPart, SpikeEvent, WakeupAnalysis};
use irqlab_stats::LatencyHistogram;
use std::collections::{HashMap, VecDeque};

/// Events kept per CPU in the ring: at 100k events/s, the last ~80 ms.
const RECENT_EVENTS: usize = 8192;
/// Wake-ups kept per measuring thread, with their windows of events.
pub const TOP_K: usize = 3;
/// Events kept in one wake-up's window (the newest, when more happened).
const MAX_WINDOW_EVENTS: usize = 2048;
/// Sleeping threads followed per CPU: the measuring thread, and a few others that sleep on it
/// (irqlab's own threads, other programs), which the measuring thread outnumbers in wake-ups.
const MAX_THREADS: usize = 8;
/// How long after the thread's clock reading the event list still shows events: the trace
/// clock (`ktime_get_mono_fast_ns`) and `clock_gettime` can differ by a little.
const AFTER_RUN_NS: u64 = 2_000;

/// The timer's own events: needed for the split.
const TIMER_EVENTS: [EventName; 2] = [
    EventName::new("timer", "hrtimer_start"),
    EventName::new("timer", "hrtimer_expire_entry"),
];
/// The scheduler and interrupt events of [`TraceDetail::Scheduler`]; used where this kernel has
/// them.
const SCHED_EVENTS: [EventName; 6] = [
    EventName::new("sched", "sched_switch"),
    LOCAL_TIMER_EVENTS[1],
    IRQ_EVENTS[0],
    IRQ_EVENTS[1],
    IRQ_EVENTS[3],
    IRQ_EVENTS[4],
];

/// Which events a timer measurement traces (see the module's notes on their cost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceDetail {
    /// The timer's own events: the split, and an analysis up to the callback.
    Timer,
    /// Also the scheduler and the interrupt handlers: an analysis of the whole latency.
    Scheduler,
}

/// A task's name as `sched_switch` records it (`char[16]`, NUL-padded).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Comm([u8; 16]);

impl Comm {
    pub fn new(name: &str) -> Self {
        let mut c = [0u8; 16];
        let b = name.as_bytes();
        // The kernel keeps 15 bytes and a NUL (`TASK_COMM_LEN`).
        let n = b.len().min(15);
        c[..n].copy_from_slice(&b[..n]);
        Comm(c)
    }

    /// A `char[16]` field of a record; empty if the record is too short.
    fn of(f: &Field, rec: &[u8]) -> Self {
        let b = rec.get(f.offset..f.offset + f.size).unwrap_or_default();
        let mut c = [0u8; 16];
        let n = b.len().min(16);
        c[..n].copy_from_slice(&b[..n]);
        Comm(c)
    }

    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end])
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// One decoded event, small and without heap data, so thousands per CPU cost no allocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A sleeping thread's timer armed (`hrtimer_start` of `hrtimer_wakeup`); the thread is the
    /// record's `pid`.
    HrtimerStart {
        expires_ns: i64,
    },
    /// An hrtimer callback starts (`hrtimer_expire_entry`): the timer interrupt is running.
    /// `pid` is the thread whose sleep it ends and `expiry_ns` its deadline, when its
    /// `hrtimer_start` was seen.
    HrtimerExpire {
        pid: Option<i32>,
        expiry_ns: Option<u64>,
    },
    /// A hard IRQ handler starts; `name` indexes the CPU's interned handler names.
    IrqEntry {
        irq: i32,
        name: u16,
    },
    IrqExit {
        irq: i32,
    },
    SoftirqEntry {
        vec: u8,
    },
    SoftirqExit {
        vec: u8,
    },
    /// The local APIC timer interrupt ends.
    LocalTimerExit,
    Switch {
        prev: Comm,
        prev_pid: i32,
        /// `prev` stays runnable (preempted), rather than going to sleep or exiting.
        prev_runnable: bool,
        next: Comm,
        next_pid: i32,
    },
}

/// An event with its time and the task running when it fired (`common_pid`; inside an
/// interrupt, the task it interrupted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub ts: u64,
    pub pid: i32,
    pub event: Event,
}

/// An event ID's meaning, with the fields it is read by, resolved once from its `format`.
#[derive(Clone)]
enum Kind {
    HrtimerStart {
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
        entry: bool,
        vec: Field,
    },
    LocalTimerExit,
    Switch {
        prev: Field,
        prev_pid: Field,
        prev_state: Option<Field>,
        next: Field,
        next_pid: Field,
    },
}

impl Kind {
    /// The kind of `ev` with its fields; an error if this kernel's format lacks one.
    fn of(ev: EventName, f: &Format) -> Result<Kind, HostError> {
        Ok(match ev.name {
            "hrtimer_start" => Kind::HrtimerStart {
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
            "softirq_entry" => Kind::Softirq {
                entry: true,
                vec: f.field("vec")?,
            },
            "softirq_exit" => Kind::Softirq {
                entry: false,
                vec: f.field("vec")?,
            },
            "local_timer_exit" => Kind::LocalTimerExit,
            "sched_switch" => Kind::Switch {
                prev: f.field("prev_comm")?,
                prev_pid: f.field("prev_pid")?,
                prev_state: f.field("prev_state").ok(),
                next: f.field("next_comm")?,
                next_pid: f.field("next_pid")?,
            },
            other => unreachable!("EVENTS lists {other} without a kind"),
        })
    }
}

#[derive(Clone, Default)]
struct Decoder {
    ids: HashMap<u16, Kind>,
    /// `common_pid`, the same in every event's header.
    common_pid: Option<Field>,
    /// The address of `hrtimer_wakeup`, the callback of a sleeping thread's timer (from
    /// `/proc/kallsyms`): other hrtimers started while the thread runs (the scheduler tick,
    /// re-armed in its context) are not its wake-ups. Unknown: no filter.
    wakeup_fn: Option<i64>,
}

/// A woken measuring thread not yet seen done with its wake-up.
#[derive(Clone, Copy, Debug)]
struct Pending {
    expiry_ns: u64,
    /// The callback, then the switch to the thread once seen: the thread read the clock after
    /// this.
    ran_after_ns: u64,
}

/// One of a thread's latest wake-ups, with the events around it. Its latency (the thread's
/// clock reading minus the expiry) lies in `ran_after_ns - expiry_ns ..= done_ns - expiry_ns`.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub expiry_ns: u64,
    /// The switch to the thread (or, where the trace lacks it, its callback).
    pub ran_after_ns: u64,
    /// The thread's next event of its own (arming its next sleep, or switching out), which
    /// comes after it read the clock.
    pub done_ns: u64,
    /// From the window's start (before the expiry) to `done_ns`, oldest first.
    pub events: Vec<Record>,
    /// The ring or the window cap dropped the window's oldest events.
    pub truncated: bool,
    /// The kernel lost events inside the window.
    pub lost: bool,
}

impl Candidate {
    /// The most its latency can be.
    pub fn bound_ns(&self) -> u64 {
        self.done_ns.saturating_sub(self.expiry_ns)
    }

    /// Whether a wake-up `latency_ns` late fits it.
    pub fn fits(&self, latency_ns: u64) -> bool {
        let least = self.ran_after_ns.saturating_sub(self.expiry_ns);
        (least..=self.bound_ns()).contains(&latency_ns)
    }
}

/// A measuring thread followed on one CPU.
#[derive(Clone, Debug, Default)]
struct Followed {
    pid: i32,
    /// The deadline of its first sleep: wake-up `k`'s deadline is this plus `k` intervals.
    first_expiry_ns: Option<u64>,
    pending: Option<Pending>,
    /// At most [`TOP_K`], latest first.
    best: Vec<Candidate>,
    /// Sleeps armed: the measuring thread's grows fastest, so it is never the one dropped.
    sleeps: u64,
}

/// One CPU's trace: IRQ latencies per sleeping thread, the recent events, and the windows of
/// the measuring threads' latest wake-ups.
#[derive(Default)]
pub struct CpuTimerTrace {
    /// Expiry to `hrtimer_expire_entry`, per pid of the thread that armed the timer.
    pub irq_latency_by_pid: HashMap<i32, LatencyHistogram>,
    /// Oldest first.
    pub recent: VecDeque<Record>,
    /// Handler names of `IrqEntry` events, by index.
    pub irq_names: Vec<String>,
    pub events: u64,
    /// Switches into the idle task and out of it: a CPU with the first and none of the second
    /// runs a kernel whose trace lacks the idle task's own events.
    pub switches_to_idle: u64,
    pub switches_from_idle: u64,
    /// hrtimer pointer -> (pid that armed it, expiry).
    armed: HashMap<i64, (i32, i64)>,
    followed: Vec<Followed>,
    /// How far before an expiry a window starts.
    before_ns: u64,
    /// Time of the first event after the kernel last lost events.
    lost_at_ns: Option<u64>,
}

impl CpuTimerTrace {
    /// A CPU's trace that keeps `before_ns` of events before each wake-up it keeps.
    pub fn new(before_ns: u64) -> Self {
        CpuTimerTrace {
            before_ns,
            ..CpuTimerTrace::default()
        }
    }

    fn on_record(&mut self, d: &Decoder, ts: u64, rec: &[u8]) {
        let Some(kind) = d.ids.get(&ringbuf::record_type(rec)) else {
            return;
        };
        let pid = d.common_pid.as_ref().map_or(-1, |f| f.int(rec) as i32);
        let event = match kind {
            Kind::HrtimerStart {
                hrtimer,
                function,
                softexpires,
            } => {
                if d.wakeup_fn.is_some_and(|f| f != function.int(rec)) {
                    return; // not a sleeping thread's timer
                }
                // softexpires is the requested deadline; expires adds the task's timer slack
                // (zero for real-time tasks, 50 us by default otherwise).
                let expires = softexpires.int(rec);
                self.armed.insert(hrtimer.int(rec), (pid, expires));
                Event::HrtimerStart {
                    expires_ns: expires,
                }
            }
            Kind::HrtimerExpire { hrtimer } => match self.armed.remove(&hrtimer.int(rec)) {
                Some((owner, expires)) => {
                    let lat = (ts as i64).saturating_sub(expires).max(0) as u64;
                    self.irq_latency_by_pid
                        .entry(owner)
                        .or_default()
                        .record(lat);
                    Event::HrtimerExpire {
                        pid: Some(owner),
                        expiry_ns: Some(expires.max(0) as u64),
                    }
                }
                None => Event::HrtimerExpire {
                    pid: None,
                    expiry_ns: None,
                },
            },
            Kind::IrqEntry { irq, name } => {
                let name = name.str(rec);
                let i = match self.irq_names.iter().position(|n| n == name) {
                    Some(i) => i,
                    None => {
                        self.irq_names.push(name.to_string());
                        self.irq_names.len() - 1
                    }
                };
                Event::IrqEntry {
                    irq: irq.int(rec) as i32,
                    name: u16::try_from(i).unwrap_or(u16::MAX),
                }
            }
            Kind::IrqExit { irq } => Event::IrqExit {
                irq: irq.int(rec) as i32,
            },
            Kind::Softirq { entry, vec } => {
                let vec = vec.int(rec) as u8;
                if *entry {
                    Event::SoftirqEntry { vec }
                } else {
                    Event::SoftirqExit { vec }
                }
            }
            Kind::LocalTimerExit => Event::LocalTimerExit,
            Kind::Switch {
                prev,
                prev_pid,
                prev_state,
                next,
                next_pid,
            } => Event::Switch {
                prev: Comm::of(prev, rec),
                prev_pid: prev_pid.int(rec) as i32,
                // A sleeping or exiting task has a state bit among the low eight (S, D, T, t,
                // X, Z, P, I); a preempted one reads 0 or TASK_REPORT_MAX, 0x100 ("R+";
                // `__trace_sched_switch_state()`, `include/trace/events/sched.h`).
                prev_runnable: prev_state.as_ref().is_some_and(|f| f.int(rec) & 0xff == 0),
                next: Comm::of(next, rec),
                next_pid: next_pid.int(rec) as i32,
            },
        };
        self.push(Record { ts, pid, event });
    }

    /// Keep a decoded event: in the ring, and in the wake-up windows it completes.
    pub fn push(&mut self, r: Record) {
        self.events += 1;
        if self.recent.len() == RECENT_EVENTS {
            self.recent.pop_front();
        }
        self.recent.push_back(r);
        match r.event {
            Event::Switch {
                prev_pid, next_pid, ..
            } => {
                if next_pid == 0 {
                    self.switches_to_idle += 1;
                }
                if prev_pid == 0 {
                    self.switches_from_idle += 1;
                }
            }
            Event::HrtimerStart { expires_ns } if r.pid > 0 => {
                self.follow(r.pid, expires_ns.max(0) as u64);
            }
            Event::HrtimerExpire {
                pid: Some(p),
                expiry_ns: Some(expiry_ns),
            } => {
                if let Some(f) = self.followed.iter_mut().find(|f| f.pid == p) {
                    f.pending = Some(Pending {
                        expiry_ns,
                        ran_after_ns: r.ts,
                    });
                }
            }
            _ => {}
        }
        // A woken thread runs after the switch to it; it has read the clock once it arms its
        // next sleep, or sleeps or exits. (An interrupt in its context, or its preemption, may
        // come before the clock reading, so they bound nothing.)
        for f in &mut self.followed {
            if let (Some(p), Event::Switch { next_pid, .. }) = (&mut f.pending, r.event) {
                if next_pid == f.pid {
                    p.ran_after_ns = r.ts;
                }
            }
        }
        let done = |f: &Followed| {
            f.pending.is_some()
                && r.pid == f.pid
                && matches!(
                    r.event,
                    Event::HrtimerStart { .. }
                        | Event::Switch {
                            prev_runnable: false,
                            ..
                        }
                )
        };
        if let Some(i) = self.followed.iter().position(done) {
            let p = self.followed[i].pending.take().expect("checked");
            self.wake_up_seen(i, p, r.ts);
        }
    }

    /// Thread `pid` arms a sleep until `expiry_ns`: follow it from its first.
    fn follow(&mut self, pid: i32, expiry_ns: u64) {
        if let Some(f) = self.followed.iter_mut().find(|f| f.pid == pid) {
            f.sleeps += 1;
            return;
        }
        if self.followed.len() == MAX_THREADS {
            // Drop the thread that slept least: never the measuring thread, which sleeps every
            // interval.
            let i = (0..self.followed.len())
                .min_by_key(|&i| self.followed[i].sleeps)
                .expect("full");
            self.followed.swap_remove(i);
        }
        self.followed.push(Followed {
            pid,
            first_expiry_ns: Some(expiry_ns),
            sleeps: 1,
            ..Followed::default()
        });
    }

    /// Thread `i`'s wake-up `p` was done by `done_ns`: keep its window if its bound ranks
    /// among the thread's [`TOP_K`] latest.
    fn wake_up_seen(&mut self, i: usize, p: Pending, done_ns: u64) {
        let expiry_ns = p.expiry_ns;
        let bound = done_ns.saturating_sub(expiry_ns);
        let best = &self.followed[i].best;
        if best.len() == TOP_K && best.iter().all(|c| c.bound_ns() >= bound) {
            return;
        }
        let from = expiry_ns.saturating_sub(self.before_ns);
        let in_window = self
            .recent
            .iter()
            .rev()
            .take_while(|x| x.ts >= from)
            .count();
        // The ring or the cap dropped some of the window's oldest events.
        let truncated = in_window > MAX_WINDOW_EVENTS
            || (in_window == self.recent.len() && self.recent.len() == RECENT_EVENTS);
        let keep = in_window.min(MAX_WINDOW_EVENTS);
        let events: Vec<Record> = self
            .recent
            .iter()
            .skip(self.recent.len() - keep)
            .copied()
            .collect();
        let candidate = Candidate {
            expiry_ns,
            ran_after_ns: p.ran_after_ns,
            done_ns,
            events,
            truncated,
            lost: self.lost_at_ns.is_some_and(|t| t >= from),
        };
        let best = &mut self.followed[i].best;
        best.push(candidate);
        best.sort_by_key(|c| std::cmp::Reverse(c.bound_ns()));
        best.truncate(TOP_K);
    }

    fn on_lost(&mut self) {
        // An expiry after the gap must not pair with a start before it, nor a wake-up with
        // its thread's running.
        self.armed.clear();
        for f in &mut self.followed {
            f.pending = None;
        }
        self.lost_at_ns = None;
    }
}

/// A CPU's reader state: the decoder and what it gathered.
pub struct TimerSink {
    decoder: Decoder,
    pub trace: CpuTimerTrace,
    lost_pending: bool,
}

impl CpuSink for TimerSink {
    fn event(&mut self, ts: u64, rec: &[u8]) {
        if self.lost_pending {
            self.lost_pending = false;
            self.trace.lost_at_ns = Some(ts);
        }
        self.trace.on_record(&self.decoder, ts, rec);
    }
    fn lost(&mut self) {
        self.trace.on_lost();
        self.lost_pending = true;
    }
}

/// The trace side of a timer measurement, running. Field order matters: the readers are
/// dropped (stopped and joined) before the instance is removed.
pub struct TimerTrace {
    readers: Readers<TimerSink>,
    inst: TraceInstance,
    cpus: Vec<u32>,
    detail: TraceDetail,
}

/// The trace side, finished.
pub struct TimerTraceResult {
    pub per_cpu: Vec<(u32, CpuTimerTrace)>,
    /// Per CPU of the run, events the ring buffer lost.
    pub lost_events: Vec<u64>,
    pub detail: TraceDetail,
}

impl TimerTrace {
    /// Start tracing `detail`'s events on `cpus` before the measuring threads start, keeping
    /// `before_ns` of events before each wake-up for the analysis.
    pub fn start(
        cpus: &[u32],
        buffer_kb: u32,
        before_ns: u64,
        detail: TraceDetail,
    ) -> Result<Self, HostError> {
        let inst = TraceInstance::create(&TIMER_EVENTS, buffer_kb)?;
        let wakeup_fn = crate::irqs::kernel_symbol("hrtimer_wakeup").map(|a| a as i64);
        if let Some(f) = wakeup_fn {
            // Only sleeping threads' timers reach the ring buffer. Best effort: the decoder
            // applies the same test, so a kernel that refuses the filter costs more, nothing else.
            // With the timer events alone, the other timers' expiries (the tick's, in the same
            // interrupt and before the thread's callback) explain nothing the analysis shows, so
            // they are filtered out too: one ring-buffer write fewer on the measured path
            // whenever the tick runs. The scheduler account keeps them (they open the timer
            // interrupt's context).
            let filtered: &[&str] = match detail {
                TraceDetail::Timer => &["hrtimer_start", "hrtimer_expire_entry"],
                TraceDetail::Scheduler => &["hrtimer_start"],
            };
            for ev in filtered {
                let filter = inst.dir().join(format!("events/timer/{ev}/filter"));
                let _ = std::fs::write(filter, format!("function == 0x{f:x}"));
            }
        }
        let sched: &[EventName] = match detail {
            TraceDetail::Timer => &[],
            TraceDetail::Scheduler => &SCHED_EVENTS,
        };
        inst.enable_if_present(sched)?;
        let mut decoder = Decoder {
            wakeup_fn,
            ..Decoder::default()
        };
        let required = TIMER_EVENTS.iter().map(|e| (e, true));
        for (ev, needed) in required.chain(sched.iter().map(|e| (e, false))) {
            let p = inst.format_path(*ev);
            if p.exists() {
                let f = Format::read(&p)?;
                match Kind::of(*ev, &f) {
                    Ok(kind) => {
                        decoder.common_pid.get_or_insert(f.field("common_pid")?);
                        decoder.ids.insert(f.id, kind);
                    }
                    Err(e) if needed => return Err(e),
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
            trace: CpuTimerTrace::new(before_ns),
            lost_pending: false,
        })?;
        Ok(TimerTrace {
            readers,
            inst,
            cpus: cpus.to_vec(),
            detail,
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
            detail: self.detail,
        })
    }
}

/// A wake-up's account: the events around it, and where its latency went.
#[derive(Clone, Debug, PartialEq)]
pub struct Account {
    /// Expiry to the thread's timer callback, if the callback is in the window.
    pub irq_latency_ns: Option<u64>,
    /// What ran on the CPU, relative to the expiry, with unattributed stretches named.
    pub events: Vec<SpikeEvent>,
    pub analysis: WakeupAnalysis,
}

/// The worst wake-up of a thread, found in the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstWakeup {
    pub expiry_ns: u64,
    /// Its index in the thread's run, from the deadline of its first sleep.
    pub loop_index: Option<u64>,
    /// The latency the account covers: the thread's measured worst when matched, else the
    /// trace's bound.
    pub latency_ns: u64,
    pub account: Account,
}

impl TimerTraceResult {
    fn cpu(&self, cpu: u32) -> Option<&CpuTimerTrace> {
        self.per_cpu.iter().find(|(c, _)| *c == cpu).map(|(_, t)| t)
    }

    /// IRQ latencies of the thread `pid` on `cpu`.
    pub fn irq_latency(&self, cpu: u32, pid: i32) -> Option<&LatencyHistogram> {
        self.cpu(cpu).and_then(|t| t.irq_latency_by_pid.get(&pid))
    }

    /// The account of thread `pid`'s wake-up at `expiry_ns` on `cpu`, `latency_ns` late (a
    /// break): from its window if it was kept, else from the CPU's most recent events.
    pub fn account_of(
        &self,
        cpu: u32,
        pid: i32,
        expiry_ns: u64,
        latency_ns: u64,
        before_ns: u64,
    ) -> Option<Account> {
        let t = self.cpu(cpu)?;
        let kept = t
            .followed
            .iter()
            .filter(|f| f.pid == pid)
            .flat_map(|f| &f.best)
            .find(|c| c.expiry_ns == expiry_ns);
        let mut notes = Vec::new();
        let events: Vec<Record> = match kept {
            Some(c) => {
                notes.extend(window_notes(c));
                c.events.clone()
            }
            None => t.recent.iter().copied().collect(),
        };
        let w = Wakeup {
            cpu,
            tid: pid,
            expiry_ns,
            latency_ns,
        };
        let mut a = account(&events, &t.irq_names, w, before_ns, self.detail, &proc_comm);
        notes.extend(self.detail_note());
        a.analysis.notes.splice(0..0, notes);
        Some(a)
    }

    /// The account of thread `pid`'s worst wake-up on `cpu`, whose measured latency was
    /// `worst_ns` at the deadline `expiry_ns` (CLOCK_MONOTONIC, when the thread recorded it):
    /// the kept window of that deadline; without one, the window whose bound is the closest
    /// above the latency (every wake-up's bound is at least its latency, but a wake-up
    /// disturbed after reading the clock has a wide bound too); or the largest bound when none
    /// fits (with a note).
    pub fn worst_of(
        &self,
        cpu: u32,
        pid: i32,
        worst_ns: u64,
        expiry_ns: Option<u64>,
        interval_ns: u64,
        before_ns: u64,
    ) -> Option<WorstWakeup> {
        let t = self.cpu(cpu)?;
        let f = t.followed.iter().find(|f| f.pid == pid)?;
        let matched = match expiry_ns {
            Some(e) => f.best.iter().find(|c| c.expiry_ns == e),
            // Every wake-up fits its own window; of several that fit, the tightest.
            None => f
                .best
                .iter()
                .filter(|c| c.fits(worst_ns))
                .min_by_key(|c| c.bound_ns()),
        };
        let (c, latency_ns, mut notes) = match matched {
            Some(c) => (c, worst_ns, Vec::new()),
            None => {
                let c = f.best.iter().max_by_key(|c| c.bound_ns())?;
                let note = format!(
                    "the thread's worst wake-up ({} ns) is not among the {} kept from the \
                     trace; this is the trace's latest, {} ns at most",
                    irqlab_stats::thousands(worst_ns),
                    f.best.len(),
                    irqlab_stats::thousands(c.bound_ns())
                );
                (c, c.bound_ns(), vec![note])
            }
        };
        notes.extend(window_notes(c));
        let w = Wakeup {
            cpu,
            tid: pid,
            expiry_ns: c.expiry_ns,
            latency_ns,
        };
        let mut a = account(
            &c.events,
            &t.irq_names,
            w,
            before_ns,
            self.detail,
            &proc_comm,
        );
        notes.extend(self.detail_note());
        a.analysis.notes.splice(0..0, notes);
        Some(WorstWakeup {
            expiry_ns: c.expiry_ns,
            loop_index: f
                .first_expiry_ns
                .filter(|_| interval_ns > 0)
                .and_then(|first| c.expiry_ns.checked_sub(first))
                .map(|d| d / interval_ns),
            latency_ns,
            account: a,
        })
    }

    /// What `--trace` alone leaves out, for the analysis' notes.
    fn detail_note(&self) -> Option<String> {
        (self.detail == TraceDetail::Timer).then(|| {
            "--trace holds the timer's events only, which cost least; --trace-sched \
             also traces the scheduler and the interrupt handlers to attribute what follows \
             the callback (it raises the median latency more)"
                .to_string()
        })
    }

    /// One warning per CPU whose trace shows switches into idle and none out of it.
    pub fn idle_warnings(&self) -> Vec<String> {
        self.per_cpu
            .iter()
            .filter(|(_, t)| t.switches_to_idle > 0 && t.switches_from_idle == 0)
            .map(|(cpu, t)| {
                format!(
                    "CPU {cpu}: the trace has {} switches into idle and none out of it: this \
                     kernel records no task-context event of CPU {cpu}'s idle task, so the idle \
                     exit and the switch to the thread show as unattributed",
                    t.switches_to_idle
                )
            })
            .collect()
    }
}

/// A task's name from `/proc/PID/comm` (any thread id works there), read after the run: the
/// timer events alone have no `sched_switch` to name the tasks its events found running.
fn proc_comm(pid: i32) -> Option<String> {
    (pid > 0)
        .then(|| std::fs::read_to_string(format!("/proc/{pid}/comm")).ok())
        .flatten()
        .map(|c| c.trim_end().to_string())
}

fn window_notes(c: &Candidate) -> Vec<String> {
    let mut notes = Vec::new();
    if c.lost {
        notes.push("the kernel lost events in this window (see trace_events_lost)".to_string());
    }
    if c.truncated {
        notes.push(format!(
            "the window's oldest events were not kept (more than {MAX_WINDOW_EVENTS} events, \
             or older than the last {RECENT_EVENTS})"
        ));
    }
    notes
}

/// What the CPU was doing, for the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Running {
    Unknown,
    Idle,
    Thread,
    Task(i32),
}

/// An interrupt context open on the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Hard {
        irq: i32,
        name: u16,
    },
    Soft {
        vec: u8,
    },
    /// A timer interrupt; `own` once it has run the thread's callback.
    Timer {
        own: bool,
    },
}

fn softirq_name(vec: u8) -> &'static str {
    crate::irqs::SOFTIRQ_NAMES
        .get(usize::from(vec))
        .copied()
        .unwrap_or("?")
}

/// One wake-up to account for: thread `tid` on `cpu`, whose timer expired at `expiry_ns`
/// (`CLOCK_MONOTONIC`, the trace clock) and which read the clock `latency_ns` later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wakeup {
    pub cpu: u32,
    pub tid: i32,
    pub expiry_ns: u64,
    pub latency_ns: u64,
}

/// Why what follows the callback is unattributed with the timer events only.
const UNTRACED_AFTER_CALLBACK: &str = "after the callback: not traced without --trace-sched";

/// The account of wake-up `w`; `records` are its CPU's events, oldest first, from at least
/// `before_ns` before the expiry, traced at `detail`. Pure: the tests give it synthetic
/// sequences. `comm_of` names a task no switch in `records` names.
///
/// The latency is cut at every event into stretches, each attributed to what the CPU was
/// doing: the innermost open interrupt, else the running task (from the switches; where they
/// say nothing, the task the next event found running: its `common_pid`). Before the thread's
/// callback, time outside any handler is the interrupt's delivery; after it, time in another
/// task is that task's, time in the thread (from the switch to it) is the switch, and time in
/// the idle task is the idle exit, or unattributed when no switch out of idle follows (see the
/// module's note on idle tasks). With the timer events only, everything after the callback is
/// unattributed, and says why.
pub fn account(
    records: &[Record],
    irq_names: &[String],
    w: Wakeup,
    before_ns: u64,
    detail: TraceDetail,
    comm_of: &dyn Fn(i32) -> Option<String>,
) -> Account {
    let Wakeup {
        cpu,
        tid,
        expiry_ns,
        latency_ns,
    } = w;
    let from = expiry_ns.saturating_sub(before_ns);
    let run = expiry_ns + latency_ns;
    let name = |i: u16| irq_names.get(usize::from(i)).map_or("?", String::as_str);
    let mut comms: HashMap<i32, Comm> = HashMap::new();
    for r in records {
        if let Event::Switch {
            prev,
            prev_pid,
            next,
            next_pid,
            ..
        } = r.event
        {
            comms.insert(prev_pid, prev);
            comms.insert(next_pid, next);
        }
    }
    let task = |pid: i32| match comms.get(&pid) {
        Some(c) => format!("{}:{pid}", c.as_str()),
        None => match comm_of(pid) {
            Some(c) => format!("{c}:{pid}"),
            None => format!("pid {pid}"),
        },
    };
    let callback = records.iter().find(|r| {
        r.ts >= expiry_ns
            && r.ts <= run
            && matches!(r.event, Event::HrtimerExpire { pid: Some(p), .. } if p == tid)
    });
    let callback_ns = callback.map(|r| r.ts);
    let idle_left = |after: u64| {
        records.iter().any(|r| {
            r.ts >= after && r.ts <= run && matches!(r.event, Event::Switch { prev_pid: 0, .. })
        })
    };
    let who = |pid: i32| match pid {
        0 => Running::Idle,
        p if p == tid => Running::Thread,
        p if p > 0 => Running::Task(p),
        _ => Running::Unknown,
    };

    // The CPU's state at the window's start is unknown; the events before the expiry set it.
    let mut stack: Vec<Ctx> = Vec::new();
    let mut running = Running::Unknown;
    let apply = |r: &Record, stack: &mut Vec<Ctx>, running: &mut Running| {
        *running = who(r.pid);
        let close = |stack: &mut Vec<Ctx>, pred: &dyn Fn(&Ctx) -> bool| {
            if let Some(i) = stack.iter().rposition(pred) {
                stack.truncate(i);
            }
        };
        match r.event {
            Event::IrqEntry { irq, name } => stack.push(Ctx::Hard { irq, name }),
            Event::IrqExit { irq } => close(
                stack,
                &|c| matches!(c, Ctx::Hard { irq: i, .. } if *i == irq),
            ),
            Event::SoftirqEntry { vec } => stack.push(Ctx::Soft { vec }),
            Event::SoftirqExit { vec } => {
                close(stack, &|c| matches!(c, Ctx::Soft { vec: v } if *v == vec))
            }
            // Without `local_timer_exit` an interrupt's end is unknown: not opened at all.
            Event::HrtimerExpire { pid, .. } if detail == TraceDetail::Scheduler => {
                let own = pid == Some(tid);
                match stack.last_mut() {
                    Some(Ctx::Timer { own: o }) => *o |= own,
                    _ => stack.push(Ctx::Timer { own }),
                }
            }
            Event::HrtimerExpire { .. } => {}
            Event::LocalTimerExit => close(stack, &|c| matches!(c, Ctx::Timer { .. })),
            Event::Switch { next_pid, .. } => {
                // A switch happens in task context: whatever was open has closed.
                stack.clear();
                *running = who(next_pid);
            }
            // A thread arms its timer and sleeps: what runs next is not known from this.
            Event::HrtimerStart { .. } => *running = Running::Unknown,
        }
    };
    // Everything before the expiry (the window and older) says what was running at it.
    let mut i = 0;
    while i < records.len() && records[i].ts <= expiry_ns {
        apply(&records[i], &mut stack, &mut running);
        i += 1;
    }
    // The task the timer interrupt found running, else what the trace said before it.
    let found = callback.map_or(running, |r| who(r.pid));
    let from_idle = match found {
        Running::Unknown => None,
        r => Some(r == Running::Idle),
    };

    let mut parts: Vec<LatencyPart> = Vec::new();
    let mut add = |start: u64, end: u64, cause: LatencyCause, what: String| {
        if end <= start {
            return;
        }
        let offset_ns = start - expiry_ns;
        match parts.last_mut() {
            Some(p)
                if p.cause == cause
                    && p.what == what
                    && p.offset_ns + p.duration_ns == offset_ns =>
            {
                p.duration_ns += end - start;
            }
            _ => parts.push(LatencyPart {
                offset_ns,
                duration_ns: end - start,
                cause,
                what,
            }),
        }
    };
    let classify = |t: u64, stack: &[Ctx], running: Running| -> (LatencyCause, String) {
        let woken = callback_ns.is_some_and(|c| t >= c);
        match stack.last() {
            _ if woken && detail == TraceDetail::Timer => {
                (LatencyCause::Unattributed, UNTRACED_AFTER_CALLBACK.into())
            }
            Some(Ctx::Hard { irq, name: n }) => {
                (LatencyCause::HardIrq, format!("IRQ {irq} {}", name(*n)))
            }
            Some(Ctx::Soft { vec }) => (
                LatencyCause::Softirq,
                format!("softirq {vec} {}", softirq_name(*vec)),
            ),
            Some(Ctx::Timer { own: true }) => (
                LatencyCause::TimerInterrupt,
                "the timer interrupt after the thread's callback".into(),
            ),
            Some(Ctx::Timer { own: false }) => (
                LatencyCause::TimerInterrupt,
                "a timer interrupt running other timers".into(),
            ),
            None if callback_ns.is_none() && running != Running::Thread => (
                LatencyCause::Unattributed,
                "the thread's timer callback is not in the trace".into(),
            ),
            None if !woken => (
                LatencyCause::IrqDelivery,
                match running {
                    Running::Idle => {
                        "the timer interrupt's delivery to the idle CPU (its idle exit, or a \
                         hypervisor not running it)"
                            .into()
                    }
                    Running::Task(p) => format!(
                        "the timer interrupt's delivery while {} ran (interrupts off, or a \
                         hypervisor not running the CPU)",
                        task(p)
                    ),
                    _ => "the timer interrupt's delivery".into(),
                },
            ),
            None => match running {
                Running::Thread => (
                    LatencyCause::Switch,
                    "the switch to the thread and its return from clock_nanosleep".into(),
                ),
                Running::Task(p) => (LatencyCause::Task, task(p)),
                Running::Idle if idle_left(t) => {
                    (LatencyCause::IdleExit, "the idle task leaving idle".into())
                }
                Running::Idle => (
                    LatencyCause::Unattributed,
                    format!(
                        "the idle exit and the switch to the thread: no event (this kernel's \
                         trace holds no task-context event of CPU {cpu}'s idle task)"
                    ),
                ),
                Running::Unknown => (LatencyCause::Unattributed, "no event says what ran".into()),
            },
        }
    };
    let mut t = expiry_ns;
    while i < records.len() && records[i].ts <= run {
        let r = &records[i];
        // Where the trace does not say what ran (no switches traced, or none seen yet), the
        // task this event found running did.
        let during = match running {
            _ if detail == TraceDetail::Timer => who(r.pid),
            Running::Unknown => who(r.pid),
            known => known,
        };
        let (cause, what) = classify(t, &stack, during);
        add(t, r.ts, cause, what);
        apply(r, &mut stack, &mut running);
        t = r.ts.max(t);
        i += 1;
    }
    let (cause, what) = classify(t, &stack, running);
    add(t, run, cause, what);

    let mut totals: Vec<CauseTotal> = Vec::new();
    for p in &parts {
        match totals
            .iter_mut()
            .find(|c| c.cause == p.cause && c.what == p.what)
        {
            Some(c) => c.duration_ns += p.duration_ns,
            None => totals.push(CauseTotal {
                cause: p.cause,
                what: p.what.clone(),
                duration_ns: p.duration_ns,
            }),
        }
    }
    // The first of equals: the earliest stretch is the one that started the delay.
    let largest = totals.into_iter().rev().max_by_key(|c| c.duration_ns);

    let events = event_list(records, irq_names, &task, &parts, tid, expiry_ns, from, run);
    Account {
        irq_latency_ns: callback_ns.map(|c| c - expiry_ns),
        events,
        analysis: WakeupAnalysis {
            expiry_mono_ns: expiry_ns,
            from_idle,
            parts,
            largest,
            notes: Vec::new(),
        },
    }
}

/// The events of the window in readable form, relative to the expiry, with handler and
/// softirq durations paired inside it, every unattributed stretch of `parts`, and the thread
/// running at the end.
#[allow(clippy::too_many_arguments)]
fn event_list(
    records: &[Record],
    irq_names: &[String],
    task: &dyn Fn(i32) -> String,
    parts: &[LatencyPart],
    tid: i32,
    expiry_ns: u64,
    from: u64,
    run: u64,
) -> Vec<SpikeEvent> {
    let window: Vec<&Record> = records
        .iter()
        .filter(|r| r.ts >= from && r.ts <= run + AFTER_RUN_NS)
        .collect();
    let rel = |ts: u64| ts as i64 - expiry_ns as i64;
    let name = |i: u16| irq_names.get(usize::from(i)).map_or("?", String::as_str);
    let mut out = Vec::new();
    for (i, r) in window.iter().enumerate() {
        let end_of = |pred: &dyn Fn(&Event) -> bool| {
            window[i + 1..]
                .iter()
                .find(|x| pred(&x.event))
                .map(|x| x.ts - r.ts)
        };
        let (what, duration_ns) = match r.event {
            Event::IrqEntry { irq, name: n } => (
                format!("hard IRQ {irq} {}", name(n)),
                end_of(&|x| matches!(x, Event::IrqExit { irq: j } if *j == irq)),
            ),
            Event::SoftirqEntry { vec } => (
                format!("softirq {vec} {}", softirq_name(vec)),
                end_of(&|x| matches!(x, Event::SoftirqExit { vec: v } if *v == vec)),
            ),
            Event::HrtimerExpire { pid: Some(p), .. } if p == tid => (
                "timer callback wakes the measuring thread".to_string(),
                None,
            ),
            Event::LocalTimerExit if r.ts >= expiry_ns => {
                ("end of the timer interrupt".to_string(), None)
            }
            Event::Switch {
                prev_pid,
                next_pid,
                prev_runnable,
                ..
            } => (
                format!(
                    "switch {}{} -> {}",
                    task(prev_pid),
                    // The idle task is always runnable: only another task is preempted.
                    if prev_runnable && prev_pid != 0 {
                        " (preempted)"
                    } else {
                        ""
                    },
                    task(next_pid),
                ),
                None,
            ),
            _ => continue,
        };
        out.push(SpikeEvent {
            offset_ns: rel(r.ts),
            event: what,
            duration_ns,
        });
    }
    for p in parts
        .iter()
        .filter(|p| p.cause == LatencyCause::Unattributed)
    {
        let at = p.offset_ns as i64;
        let pos = out.partition_point(|e| e.offset_ns <= at);
        out.insert(
            pos,
            SpikeEvent {
                offset_ns: at,
                event: format!(
                    "unattributed: {:.1} us ({})",
                    p.duration_ns as f64 / 1000.0,
                    p.what
                ),
                duration_ns: Some(p.duration_ns),
            },
        );
    }
    let end = rel(run);
    let pos = out.partition_point(|e| e.offset_ns <= end);
    out.insert(
        pos,
        SpikeEvent {
            offset_ns: end,
            event: "the measuring thread runs (reads the clock)".into(),
            duration_ns: None,
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TID: i32 = 900;
    const EXPIRY: u64 = 1_000_000;

    fn wakeup(cpu: u32, latency_ns: u64) -> Wakeup {
        Wakeup {
            cpu,
            tid: TID,
            expiry_ns: EXPIRY,
            latency_ns,
        }
    }

    fn rec(ts: u64, pid: i32, event: Event) -> Record {
        Record { ts, pid, event }
    }

    fn switch(prev: &str, prev_pid: i32, next: &str, next_pid: i32) -> Event {
        Event::Switch {
            prev: Comm::new(prev),
            prev_pid,
            prev_runnable: false,
            next: Comm::new(next),
            next_pid,
        }
    }

    fn preempt(prev: &str, prev_pid: i32, next: &str, next_pid: i32) -> Event {
        match switch(prev, prev_pid, next, next_pid) {
            Event::Switch {
                prev,
                prev_pid,
                next,
                next_pid,
                ..
            } => Event::Switch {
                prev,
                prev_pid,
                prev_runnable: true,
                next,
                next_pid,
            },
            _ => unreachable!(),
        }
    }

    fn callback(expiry_ns: u64) -> Event {
        Event::HrtimerExpire {
            pid: Some(TID),
            expiry_ns: Some(expiry_ns),
        }
    }

    /// (cause, offset us, duration us) of each part.
    fn parts(a: &Account) -> Vec<(LatencyCause, u64, u64)> {
        a.analysis
            .parts
            .iter()
            .map(|p| (p.cause, p.offset_ns / 1000, p.duration_ns / 1000))
            .collect()
    }

    fn assert_parts_add_up(a: &Account, latency_ns: u64) {
        let sum: u64 = a.analysis.parts.iter().map(|p| p.duration_ns).sum();
        assert_eq!(sum, latency_ns, "{:#?}", a.analysis.parts);
        let mut at = 0;
        for p in &a.analysis.parts {
            assert_eq!(
                p.offset_ns, at,
                "parts are consecutive: {:#?}",
                a.analysis.parts
            );
            at += p.duration_ns;
        }
    }

    /// An idle CPU whose trace has the switch out of idle (CPU 0 here).
    fn idle_wakeup(with_switch_from_idle: bool) -> Vec<Record> {
        let mut r = vec![
            rec(
                9_000,
                TID,
                Event::HrtimerStart {
                    expires_ns: EXPIRY as i64,
                },
            ),
            rec(10_000, TID, switch("irqlab-timer0", TID, "swapper/0", 0)),
            rec(EXPIRY + 8_000, 0, callback(EXPIRY)),
            rec(EXPIRY + 12_000, 0, Event::LocalTimerExit),
        ];
        if with_switch_from_idle {
            r.push(rec(
                EXPIRY + 15_000,
                0,
                switch("swapper/0", 0, "irqlab-timer0", TID),
            ));
        }
        // After the thread read the clock: arming its next sleep.
        r.push(rec(
            EXPIRY + 18_000,
            TID,
            Event::HrtimerStart {
                expires_ns: 2 * EXPIRY as i64,
            },
        ));
        r
    }

    #[test]
    fn a_switch_out_of_idle_splits_the_wakeup_into_idle_exit_and_switch() {
        let a = account(
            &idle_wakeup(true),
            &[],
            wakeup(0, 17_000),
            1_000_000,
            TraceDetail::Scheduler,
            &|_| None,
        );
        use LatencyCause::*;
        assert_eq!(
            parts(&a),
            vec![
                (IrqDelivery, 0, 8),
                (TimerInterrupt, 8, 4),
                (IdleExit, 12, 3),
                (Switch, 15, 2)
            ]
        );
        assert_parts_add_up(&a, 17_000);
        assert_eq!(a.irq_latency_ns, Some(8_000));
        assert_eq!(a.analysis.from_idle, Some(true));
        assert_eq!(
            a.analysis.parts[0].what,
            "the timer interrupt's delivery to the idle CPU (its idle exit, or a hypervisor not \
             running it)"
        );
        let largest = a.analysis.largest.as_ref().unwrap();
        assert_eq!((largest.cause, largest.duration_ns), (IrqDelivery, 8_000));
        let events: Vec<(i64, &str)> = a
            .events
            .iter()
            .map(|e| (e.offset_ns / 1000, e.event.as_str()))
            .collect();
        assert_eq!(
            events,
            vec![
                (-990, "switch irqlab-timer0:900 -> swapper/0:0"),
                (8, "timer callback wakes the measuring thread"),
                (12, "end of the timer interrupt"),
                (15, "switch swapper/0:0 -> irqlab-timer0:900"),
                (17, "the measuring thread runs (reads the clock)"),
            ]
        );
        assert!(!a.events.iter().any(|e| e.event.starts_with("unattributed")));
    }

    #[test]
    fn an_idle_exit_without_events_is_named_unattributed() {
        // CPU 1 of this 6.18 VM: nothing between the end of the timer interrupt and the thread.
        let a = account(
            &idle_wakeup(false),
            &[],
            wakeup(1, 17_000),
            100_000,
            TraceDetail::Scheduler,
            &|_| None,
        );
        use LatencyCause::*;
        assert_eq!(
            parts(&a),
            vec![
                (IrqDelivery, 0, 8),
                (TimerInterrupt, 8, 4),
                (Unattributed, 12, 5)
            ]
        );
        assert_parts_add_up(&a, 17_000);
        assert!(
            a.analysis.parts[2].what.contains("CPU 1's idle task"),
            "{}",
            a.analysis.parts[2].what
        );
        let gap = a
            .events
            .iter()
            .find(|e| e.event.starts_with("unattributed: 5.0 us ("))
            .expect("the gap is in the event list");
        assert_eq!((gap.offset_ns, gap.duration_ns), (12_000, Some(5_000)));
        // In time order, before the thread runs.
        let order: Vec<&str> = a.events.iter().map(|e| e.event.as_str()).collect();
        let at = |p: &str| order.iter().position(|e| e.starts_with(p)).unwrap();
        assert!(
            at("end of the timer") < at("unattributed") && at("unattributed") < at("the measuring")
        );
    }

    #[test]
    fn a_busy_cpu_names_the_handlers_and_the_blocking_task() {
        let names = vec!["virtio1-req.0".to_string()];
        let records = vec![
            rec(500_000, TID, switch("irqlab-timer0", TID, "stress", 77)),
            rec(EXPIRY + 2_000, 77, Event::IrqEntry { irq: 36, name: 0 }),
            rec(EXPIRY + 6_000, 77, Event::IrqExit { irq: 36 }),
            rec(EXPIRY + 9_000, 77, callback(EXPIRY)),
            rec(EXPIRY + 11_000, 77, Event::LocalTimerExit),
            rec(EXPIRY + 12_000, 77, Event::SoftirqEntry { vec: 9 }),
            rec(EXPIRY + 13_000, 77, Event::SoftirqExit { vec: 9 }),
            rec(
                EXPIRY + 40_000,
                77,
                switch("stress", 77, "irqlab-timer0", TID),
            ),
        ];
        let a = account(
            &records,
            &names,
            wakeup(0, 42_000),
            1_000_000,
            TraceDetail::Scheduler,
            &|_| None,
        );
        use LatencyCause::*;
        assert_eq!(
            parts(&a),
            vec![
                (IrqDelivery, 0, 2),
                (HardIrq, 2, 4),
                (IrqDelivery, 6, 3),
                (TimerInterrupt, 9, 2),
                (Task, 11, 1),
                (Softirq, 12, 1),
                (Task, 13, 27),
                (Switch, 40, 2),
            ]
        );
        assert_parts_add_up(&a, 42_000);
        assert_eq!(a.analysis.from_idle, Some(false));
        assert_eq!(a.analysis.parts[1].what, "IRQ 36 virtio1-req.0");
        assert_eq!(a.analysis.parts[5].what, "softirq 9 RCU");
        let largest = a.analysis.largest.as_ref().unwrap();
        assert_eq!(
            (largest.cause, largest.what.as_str(), largest.duration_ns),
            (Task, "stress:77", 28_000)
        );
        let irq = a
            .events
            .iter()
            .find(|e| e.event.starts_with("hard IRQ"))
            .unwrap();
        assert_eq!(
            (irq.event.as_str(), irq.duration_ns),
            ("hard IRQ 36 virtio1-req.0", Some(4_000))
        );
    }

    #[test]
    fn the_timer_events_attribute_up_to_the_callback_and_say_why_not_further() {
        let records = vec![
            rec(
                9_000,
                TID,
                Event::HrtimerStart {
                    expires_ns: EXPIRY as i64,
                },
            ),
            // Another timer, from idle: without switches traced it says nothing about later.
            rec(
                500_000,
                0,
                Event::HrtimerExpire {
                    pid: None,
                    expiry_ns: None,
                },
            ),
            // The interrupt found pid 77 running (its comm is not in the timer events).
            rec(EXPIRY + 6_000, 77, callback(EXPIRY)),
            rec(
                EXPIRY + 30_000,
                TID,
                Event::HrtimerStart {
                    expires_ns: 2 * EXPIRY as i64,
                },
            ),
        ];
        let a = account(
            &records,
            &[],
            wakeup(0, 25_000),
            1_000_000,
            TraceDetail::Timer,
            &|p| (p == 77).then(|| "stress".to_string()),
        );
        use LatencyCause::*;
        assert_eq!(parts(&a), vec![(IrqDelivery, 0, 6), (Unattributed, 6, 19)]);
        assert_parts_add_up(&a, 25_000);
        assert_eq!(a.analysis.from_idle, Some(false));
        assert!(a.analysis.parts[0].what.contains("while stress:77 ran"));
        assert_eq!(a.analysis.parts[1].what, UNTRACED_AFTER_CALLBACK);
        // From idle, and the note on what --trace alone leaves out.
        let mut records = records;
        records[2].pid = 0;
        let result = TimerTraceResult {
            per_cpu: vec![(0, {
                let mut t = CpuTimerTrace::new(1_000_000);
                for r in &records {
                    t.push(*r);
                }
                t
            })],
            lost_events: vec![0],
            detail: TraceDetail::Timer,
        };
        let w = result
            .worst_of(0, TID, 25_000, None, 1_000_000, 1_000_000)
            .unwrap();
        assert_eq!(w.account.analysis.from_idle, Some(true));
        assert_eq!(
            w.account.analysis.parts[0].what,
            "the timer interrupt's delivery to the idle CPU (its idle exit, or a hypervisor not \
             running it)"
        );
        assert!(w.account.analysis.notes[0].contains("--trace-sched"));
    }

    #[test]
    fn the_measuring_thread_outlasts_other_sleepers() {
        let mut t = CpuTimerTrace::new(100_000);
        for k in 0..100u64 {
            // The measuring thread sleeps every time; a new sleeper appears every other time.
            t.push(rec(k * 1_000, TID, Event::HrtimerStart { expires_ns: 0 }));
            if k % 2 == 0 {
                t.push(rec(
                    k * 1_000 + 1,
                    2_000 + k as i32,
                    Event::HrtimerStart { expires_ns: 0 },
                ));
            }
        }
        assert_eq!(t.followed.len(), MAX_THREADS);
        let me = t
            .followed
            .iter()
            .find(|f| f.pid == TID)
            .expect("still followed");
        assert_eq!(me.sleeps, 100);
    }

    #[test]
    fn a_missing_callback_is_not_taken_for_delivery() {
        let records = vec![rec(EXPIRY + 5_000, 0, Event::LocalTimerExit)];
        let a = account(
            &records,
            &[],
            wakeup(0, 10_000),
            100_000,
            TraceDetail::Scheduler,
            &|_| None,
        );
        assert_eq!(a.irq_latency_ns, None);
        assert!(a
            .analysis
            .parts
            .iter()
            .all(|p| p.cause == LatencyCause::Unattributed));
        assert_parts_add_up(&a, 10_000);
    }

    /// A CPU's sink fed five wake-ups of `irqlab-timer0` one interval apart, `latencies_us` late.
    fn sink_with(latencies_us: &[u64]) -> CpuTimerTrace {
        let mut t = CpuTimerTrace::new(200_000);
        let interval = 1_000_000;
        let start = 10_000_000;
        t.push(rec(
            start + 1_000,
            TID,
            Event::HrtimerStart {
                expires_ns: (start + interval) as i64,
            },
        ));
        t.push(rec(
            start + 2_000,
            TID,
            switch("irqlab-timer0", TID, "swapper/0", 0),
        ));
        for (k, &lat) in latencies_us.iter().enumerate() {
            let e = start + (k as u64 + 1) * interval;
            let lat = lat * 1000;
            t.push(rec(e + 3_000, 0, callback(e)));
            t.push(rec(e + 5_000, 0, Event::LocalTimerExit));
            t.push(rec(
                e + lat - 1_000,
                0,
                switch("swapper/0", 0, "irqlab-timer0", TID),
            ));
            t.push(rec(
                e + lat + 500,
                TID,
                Event::HrtimerStart {
                    expires_ns: (e + interval) as i64,
                },
            ));
            t.push(rec(
                e + lat + 900,
                TID,
                switch("irqlab-timer0", TID, "swapper/0", 0),
            ));
        }
        t
    }

    #[test]
    fn the_sink_keeps_the_windows_of_the_latest_wakeups() {
        let t = sink_with(&[20, 90, 30, 70, 50]);
        assert_eq!(t.followed.len(), 1);
        let f = &t.followed[0];
        assert_eq!(f.pid, TID);
        assert_eq!(f.first_expiry_ns, Some(11_000_000));
        let bounds: Vec<u64> = f.best.iter().map(|c| c.bound_ns() / 1000).collect();
        assert_eq!(bounds, vec![90, 70, 50], "the latest {TOP_K}, latest first");
        let c = &f.best[0];
        assert!(c.fits(90_000) && !c.fits(88_000) && !c.fits(91_000));
        // The window runs from before_ns ahead of the expiry to the thread arming its next sleep.
        assert!(c.events.first().unwrap().ts >= c.expiry_ns - 200_000);
        assert_eq!(c.events.last().unwrap().ts, c.done_ns);
        assert!(!c.truncated && !c.lost);

        let result = TimerTraceResult {
            per_cpu: vec![(0, t)],
            lost_events: vec![0],
            detail: TraceDetail::Scheduler,
        };
        let w = result
            .worst_of(0, TID, 90_000, None, 1_000_000, 200_000)
            .unwrap();
        assert_eq!(
            (w.expiry_ns, w.loop_index, w.latency_ns),
            (12_000_000, Some(1), 90_000)
        );
        assert!(w.account.analysis.notes.is_empty());
        assert_eq!(w.account.irq_latency_ns, Some(3_000));
        assert_parts_add_up(&w.account, 90_000);
        // A worst the windows cannot hold: the latest window, said so.
        let w = result
            .worst_of(0, TID, 95_000, None, 1_000_000, 200_000)
            .unwrap();
        assert_eq!(w.latency_ns, 90_500);
        assert!(w.account.analysis.notes[0].contains("not among the 3 kept"));
        // The deadline the thread measured its worst at picks the window, whatever the bounds.
        for (latency, expiry) in [(90_000, 12_000_000), (70_000, 14_000_000)] {
            let w = result
                .worst_of(0, TID, latency, Some(expiry), 1_000_000, 200_000)
                .unwrap();
            assert_eq!((w.expiry_ns, w.latency_ns), (expiry, latency));
            assert_parts_add_up(&w.account, latency);
        }
        let w = result
            .worst_of(0, TID, 90_000, Some(99), 1_000_000, 200_000)
            .unwrap();
        assert!(w.account.analysis.notes[0].contains("not among the 3 kept"));
        // The break's account comes from its window too.
        let a = result
            .account_of(0, TID, 14_000_000, 70_000, 200_000)
            .unwrap();
        assert_eq!(a.irq_latency_ns, Some(3_000));
        assert_eq!(result.idle_warnings(), Vec::<String>::new());
    }

    #[test]
    fn a_thread_preempted_before_reading_the_clock_is_not_done() {
        let mut t = sink_with(&[]);
        let e = 11_000_000;
        t.push(rec(e + 3_000, 0, callback(e)));
        t.push(rec(
            e + 5_000,
            0,
            switch("swapper/0", 0, "irqlab-timer0", TID),
        ));
        // A higher-priority task takes the CPU before the thread reads the clock...
        t.push(rec(
            e + 6_000,
            TID,
            preempt("irqlab-timer0", TID, "watchdog/0", 12),
        ));
        assert!(t.followed[0].pending.is_some());
        t.push(rec(
            e + 30_000,
            12,
            switch("watchdog/0", 12, "irqlab-timer0", TID),
        ));
        // ... so the wake-up ends when the thread arms its next sleep.
        t.push(rec(
            e + 32_000,
            TID,
            Event::HrtimerStart {
                expires_ns: (e + 1_000_000) as i64,
            },
        ));
        let c = &t.followed[0].best[0];
        assert_eq!((c.ran_after_ns - e, c.done_ns - e), (30_000, 32_000));
        let result = TimerTraceResult {
            per_cpu: vec![(0, t)],
            lost_events: vec![0],
            detail: TraceDetail::Scheduler,
        };
        let w = result
            .worst_of(0, TID, 31_000, None, 1_000_000, 200_000)
            .unwrap();
        use LatencyCause::*;
        assert_eq!(
            parts(&w.account),
            vec![
                (IrqDelivery, 0, 3),
                (TimerInterrupt, 3, 2),
                (Switch, 5, 1),
                (Task, 6, 24),
                (Switch, 30, 1)
            ]
        );
        assert!(w
            .account
            .events
            .iter()
            .any(|e| e.event == "switch irqlab-timer0:900 (preempted) -> watchdog/0:12"));
    }

    #[test]
    fn a_cpu_without_switches_out_of_idle_is_warned_about() {
        let mut t = CpuTimerTrace::new(100_000);
        t.push(rec(
            1_000,
            TID,
            switch("irqlab-timer1", TID, "swapper/1", 0),
        ));
        t.push(rec(5_000, 0, Event::LocalTimerExit));
        let result = TimerTraceResult {
            per_cpu: vec![(1, t)],
            lost_events: vec![0],
            detail: TraceDetail::Scheduler,
        };
        let w = result.idle_warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("CPU 1: the trace has 1 switches into idle and none out of it"));
    }

    #[test]
    fn lost_events_forget_the_pending_wakeup_and_mark_windows() {
        let mut sink = TimerSink {
            decoder: Decoder::default(),
            trace: CpuTimerTrace::new(200_000),
            lost_pending: false,
        };
        let t = &mut sink.trace;
        t.push(rec(
            1_000,
            TID,
            Event::HrtimerStart {
                expires_ns: 1_000_000,
            },
        ));
        t.push(rec(
            2_000,
            TID,
            switch("irqlab-timer0", TID, "swapper/0", 0),
        ));
        t.push(rec(1_003_000, 0, callback(1_000_000)));
        sink.lost();
        assert!(sink.trace.followed[0].pending.is_none());
        // The next event (of any kind) marks where the gap ended; a window over it says so.
        sink.event(1_900_000, &[]);
        assert_eq!(sink.trace.lost_at_ns, Some(1_900_000));
        let t = &mut sink.trace;
        t.push(rec(
            1_990_000,
            TID,
            Event::HrtimerStart {
                expires_ns: 2_000_000,
            },
        ));
        t.push(rec(2_003_000, 0, callback(2_000_000)));
        t.push(rec(
            2_010_000,
            TID,
            Event::HrtimerStart {
                expires_ns: 3_000_000,
            },
        ));
        let best = &sink.trace.followed[0].best;
        assert_eq!(best.len(), 1);
        assert!(best[0].lost);
        assert_eq!(best[0].expiry_ns, 2_000_000);
    }

    /// `format` files of Linux 6.18 (x86-64), as this VM's tracefs shows them.
    const HRTIMER_START: &str = "name: hrtimer_start
ID: 460
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;
\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;
\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;
\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;
\tfield:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;
\tfield:bool was_armed;\toffset:44;\tsize:1;\tsigned:0;
";
    const HRTIMER_EXPIRE_ENTRY: &str = "name: hrtimer_expire_entry
ID: 459
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;
\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;
\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;
";
    const SCHED_SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;
";

    fn raw(id: u16, pid: i32, len: usize, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut r = vec![0u8; len];
        r[0..2].copy_from_slice(&id.to_le_bytes());
        r[4..8].copy_from_slice(&pid.to_le_bytes());
        for (at, bytes) in fields {
            r[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        r
    }

    #[test]
    fn records_decode_with_the_formats_of_a_real_kernel() {
        const WAKEUP_FN: i64 = 0x1234_5678;
        let mut d = Decoder {
            wakeup_fn: Some(WAKEUP_FN),
            ..Decoder::default()
        };
        for (text, ev) in [
            (HRTIMER_START, TIMER_EVENTS[0]),
            (HRTIMER_EXPIRE_ENTRY, TIMER_EVENTS[1]),
            (SCHED_SWITCH, SCHED_EVENTS[0]),
        ] {
            let f = Format::parse(text).unwrap();
            d.common_pid = Some(f.field("common_pid").unwrap());
            d.ids.insert(f.id, Kind::of(ev, &f).unwrap());
        }
        let mut t = CpuTimerTrace::new(100_000);
        let timer = 0xffff_8880_0000_1000u64.to_le_bytes();
        let expires = 5_000_000i64.to_le_bytes();
        let arm = |function: i64| {
            raw(
                460,
                TID,
                48,
                &[(8, &timer), (16, &function.to_le_bytes()), (32, &expires)],
            )
        };
        // The tick, re-armed in the thread's context, is not a wake-up; its own timer is.
        t.on_record(&d, 1_000, &arm(0x9999));
        t.on_record(&d, 2_000, &arm(WAKEUP_FN));
        let mut comm = [0u8; 16];
        comm[..13].copy_from_slice(b"irqlab-timer0");
        let mut swapper = [0u8; 16];
        swapper[..9].copy_from_slice(b"swapper/0");
        t.on_record(
            &d,
            3_000,
            &raw(
                372,
                TID,
                64,
                &[
                    (8, &comm),
                    (24, &TID.to_le_bytes()),
                    (32, &1i64.to_le_bytes()), // S: asleep
                    (40, &swapper),
                    (56, &0i32.to_le_bytes()),
                ],
            ),
        );
        t.on_record(&d, 5_004_000, &raw(459, 0, 32, &[(8, &timer)]));
        // "R+": preempted (TASK_REPORT_MAX).
        t.on_record(
            &d,
            5_006_000,
            &raw(
                372,
                0,
                64,
                &[
                    (8, &swapper),
                    (32, &0x100i64.to_le_bytes()),
                    (40, &comm),
                    (56, &TID.to_le_bytes()),
                ],
            ),
        );
        let got: Vec<Record> = t.recent.iter().copied().collect();
        assert_eq!(
            got,
            vec![
                rec(
                    2_000,
                    TID,
                    Event::HrtimerStart {
                        expires_ns: 5_000_000
                    }
                ),
                rec(3_000, TID, switch("irqlab-timer0", TID, "swapper/0", 0)),
                rec(5_004_000, 0, callback(5_000_000)),
                rec(5_006_000, 0, preempt("swapper/0", 0, "irqlab-timer0", TID)),
            ]
        );
        assert_eq!(t.irq_latency_by_pid[&TID].max_ns(), Some(4_000));
        assert_eq!(t.followed[0].first_expiry_ns, Some(5_000_000));
        let p = t.followed[0].pending.expect("woken, not yet done");
        assert_eq!(p.ran_after_ns, 5_006_000);
    }
}
