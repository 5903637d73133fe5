//! Timer wake-up latency, measured the way cyclictest measures it (`irqlab measure timer`).
//!
//! The method is cyclictest's default mode (rt-tests `src/cyclictest/cyclictest.c`,
//! `timerthread()`): one thread per CPU, pinned to it and running `SCHED_FIFO`, sleeps to
//! absolute `CLOCK_MONOTONIC` deadlines one interval apart with
//! `clock_nanosleep(TIMER_ABSTIME)`. Right after each wake-up it reads the clock; the wake-up
//! latency is that reading minus the deadline: the timer interrupt, the hrtimer expiry and the
//! scheduler switching to the thread. As in cyclictest, the process locks its memory and holds
//! a zero request on `/dev/cpu_dma_latency` for the whole run.
//!
//! What differs from cyclictest: latencies are kept in nanoseconds in a [`LatencyHistogram`]
//! per CPU (so percentiles come for free and memory does not grow with the run); wake-ups later
//! than the next period are counted as overruns; a missing privilege is a warning, not an exit.
//!
//! ```no_run
//! use irqlab_host::timer::{measure_timer, Stop, TimerOptions};
//! use std::sync::{atomic::AtomicBool, Arc};
//! use std::time::Duration;
//!
//! let opts = TimerOptions::new(vec![0, 1], Stop::Duration(Duration::from_secs(10)));
//! let stop = Arc::new(AtomicBool::new(false)); // a Ctrl-C handler sets it
//! let run = measure_timer(&opts, &stop, &mut |live| {
//!     for (i, s) in live.iter().enumerate() {
//!         eprintln!("{}", s.cyclictest_line(i));
//!     }
//! })?;
//! for w in &run.warnings {
//!     eprintln!("warning: {w}");
//! }
//! for cpu in &run.per_cpu {
//!     println!("CPU {}: max {:?} ns", cpu.cpu, cpu.histogram.max_ns());
//! }
//! # Ok::<(), irqlab_host::HostError>(())
//! ```

use crate::error::HostError;
use crate::sys;
// Linux's CPU list format lives with the shared result model (`irqlab_stats::cpus`): the
// renderers format lists too, and they read only that crate.
pub use irqlab_stats::cpus::{format_cpu_list, parse_cpu_list};
use irqlab_stats::LatencyHistogram;
use nix::errno::Errno;
use serde::Serialize;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// cyclictest's `SCHED_FIFO` priority in its usual invocations (`-p 95`).
pub const DEFAULT_PRIORITY: i32 = 95;
/// cyclictest's default interval (`DEFAULT_INTERVAL`, 1000 us).
pub const DEFAULT_INTERVAL: Duration = Duration::from_micros(1000);
/// How often [`measure_timer`] reports live statistics.
pub const PROGRESS_PERIOD: Duration = Duration::from_millis(250);
/// The most rows cyclictest's histogram has (the renderer's, `irqlab_report::cyclictest`).
pub const CYCLICTEST_HIST_MAX_US: u64 = 1_000_000;
/// The kernel's list of online CPUs.
pub const ONLINE_CPUS_PATH: &str = "/sys/devices/system/cpu/online";
/// The PM QoS device: while a file descriptor holding a request is open, no CPU enters an idle
/// state whose exit latency exceeds the request (Linux `Documentation/power/pm_qos_interface.rst`).
pub const CPU_DMA_LATENCY_PATH: &str = "/dev/cpu_dma_latency";

/// Warning when `SCHED_FIFO` is refused.
pub const WARN_NO_FIFO: &str =
    "no SCHED_FIFO (not root / no CAP_SYS_NICE): latencies include normal scheduling delays";
/// Warning when memory cannot be locked (the reason follows in parentheses).
pub const WARN_NO_MLOCK: &str = "memory not locked: page faults may add latency";
/// Warning when no PM QoS request can be held.
pub const WARN_NO_DMA_LATENCY: &str = "no /dev/cpu_dma_latency: deep C-state exits may add latency";

/// Longest interval accepted: an hour. Keeps deadline arithmetic far from overflowing a `u64`
/// of nanoseconds.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Stack of each measuring thread. Small, because with `MCL_FUTURE` every byte of it is locked
/// in RAM; the loop is shallow and the histogram lives on the heap.
const THREAD_STACK_BYTES: usize = 256 * 1024;
/// `CAP_IPC_LOCK`'s bit in `CapEff` (Linux `include/uapi/linux/capability.h`).
const CAP_IPC_LOCK: u32 = 14;

/// When the measuring threads stop on their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Stop {
    /// After this long (cyclictest `-D`): each thread stops at its first wake-up at or after its
    /// start plus this duration, so it runs about `duration / interval` loops.
    Duration(Duration),
    /// After this many wake-ups per thread (cyclictest `-l`).
    Loops(u64),
    /// Only on the stop flag or a break (cyclictest's default, endless).
    UntilStopped,
}

/// The scheduling policy of the measuring threads (cyclictest `--policy`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// `SCHED_FIFO` (cyclictest's default with `-p`).
    Fifo,
    /// `SCHED_RR`: FIFO with a time slice among threads of equal priority.
    Rr,
    /// `SCHED_OTHER`: the fair scheduler, at priority 0; what a normal task sees.
    Other,
}

impl Policy {
    /// From a `--policy` value: `fifo`, `rr`, `other` (cyclictest also says `normal`).
    pub fn parse(s: &str) -> Result<Policy, String> {
        match s {
            "fifo" => Ok(Policy::Fifo),
            "rr" => Ok(Policy::Rr),
            "other" | "normal" => Ok(Policy::Other),
            _ => Err(format!("`{s}` is not a policy; use fifo, rr or other")),
        }
    }

    /// The kernel's name: `SCHED_FIFO`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Other => "SCHED_OTHER",
        }
    }

    /// Real-time (fifo, rr): a priority 1..=99 and privilege needed.
    pub fn is_realtime(self) -> bool {
        self != Policy::Other
    }

    fn raw(self) -> libc::c_int {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
        }
    }
}

/// What to measure. Build with [`TimerOptions::new`] and adjust the fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerOptions {
    /// One measuring thread per CPU, pinned to it. Each must be online and listed once.
    pub cpus: Vec<u32>,
    /// Scheduling policy of the measuring threads.
    pub policy: Policy,
    /// Their priority: 1..=99 for fifo and rr, 0 for other.
    pub priority: i32,
    /// The PM QoS request held on `/dev/cpu_dma_latency` for the run, in us (cyclictest
    /// `--latency`, default 0: no idle state with a longer exit latency is entered).
    pub latency_us: i32,
    /// Period between deadlines; more than zero.
    pub interval: Duration,
    pub stop: Stop,
    /// Stop every thread at the first wake-up later than this many microseconds (cyclictest
    /// `-b`, "breaktrace": strictly greater), and report where it happened.
    pub break_us: Option<u64>,
}

impl TimerOptions {
    /// Options for `cpus` with cyclictest's defaults: priority 95, interval 1000 us, no break.
    pub fn new(cpus: Vec<u32>, stop: Stop) -> Self {
        TimerOptions {
            cpus,
            policy: Policy::Fifo,
            priority: DEFAULT_PRIORITY,
            latency_us: 0,
            interval: DEFAULT_INTERVAL,
            stop,
            break_us: None,
        }
    }

    /// Checks the options against the host's online CPUs, without touching the host. Each
    /// error is one line naming the flag and what to pass instead.
    pub fn validate(&self, online_cpus: &[u32]) -> Result<(), HostError> {
        let invalid = |m: String| Err(HostError::Invalid(m));
        let online = format_cpu_list(online_cpus);
        if self.cpus.is_empty() {
            return invalid(format!(
                "--cpus: no CPU given; name at least one online CPU (online: {online})"
            ));
        }
        for (i, cpu) in self.cpus.iter().enumerate() {
            if self.cpus[..i].contains(cpu) {
                return invalid(format!(
                    "--cpus: CPU {cpu} is listed twice; list each CPU once"
                ));
            }
            if !online_cpus.contains(cpu) {
                return invalid(format!(
                    "--cpus: CPU {cpu} is not online (online: {online})"
                ));
            }
        }
        if self.policy.is_realtime() && !(1..=99).contains(&self.priority) {
            return invalid(format!(
                "--priority: {} is outside 1..=99, the {} priorities; pass e.g. --priority {DEFAULT_PRIORITY}",
                self.priority,
                self.policy.name()
            ));
        }
        if !self.policy.is_realtime() && self.priority != 0 {
            return invalid(format!(
                "--priority: SCHED_OTHER has no priority (it is 0); leave --priority out with \
                 --policy other, or use --policy fifo or rr for priority {}",
                self.priority
            ));
        }
        if self.latency_us < 0 {
            return invalid(format!(
                "--latency: {} us is negative; pass 0 (no deep idle state, cyclictest's default) \
                 or the exit latency in us the CPUs may take",
                self.latency_us
            ));
        }
        if self.interval.is_zero() {
            return invalid("--interval-us must be at least 1".into());
        }
        if self.interval > MAX_INTERVAL {
            return invalid(format!(
                "--interval-us: {} is above one hour; pass at most {}",
                self.interval.as_micros(),
                MAX_INTERVAL.as_micros()
            ));
        }
        match self.stop {
            Stop::Loops(0) => return invalid("--loops must be at least 1".into()),
            Stop::Duration(d) if d.is_zero() => {
                return invalid("--duration must be more than 0; pass e.g. --duration 10s".into())
            }
            _ => {}
        }
        if self.break_us == Some(0) {
            return invalid("--break-us must be at least 1".into());
        }
        Ok(())
    }
}

/// Live statistics of one measuring thread, as cyclictest's status line shows them.
/// Latencies are `None` until the first wake-up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveStat {
    pub cpu: u32,
    /// Kernel task id of the thread, 0 until it has started.
    pub tid: i32,
    /// Effective real-time priority; 0 when the thread runs `SCHED_OTHER`.
    pub priority: i32,
    pub interval_us: u64,
    /// Wake-ups measured so far.
    pub loops: u64,
    /// Periods skipped because a wake-up came after the next deadline.
    pub overruns: u64,
    pub min_ns: Option<u64>,
    /// The latest wake-up's latency (cyclictest's `Act`).
    pub last_ns: Option<u64>,
    pub avg_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl LiveStat {
    /// cyclictest's status line for thread `thread_index`, in microseconds (its `print_stat`:
    /// `"T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld"`). Latencies are
    /// rounded down to whole microseconds and shown as 0 before the first wake-up (cyclictest
    /// shows its initial minimum, 1000000). `P` is the effective priority.
    pub fn cyclictest_line(&self, thread_index: usize) -> String {
        let us = |ns: Option<u64>| ns.unwrap_or(0) / 1000;
        format!(
            "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
            thread_index,
            self.tid,
            self.priority,
            self.interval_us,
            self.loops,
            us(self.min_ns),
            us(self.last_ns),
            us(self.avg_ns),
            us(self.max_ns),
        )
    }
}

/// The result of one CPU's thread.
#[derive(Clone, Debug)]
pub struct CpuResult {
    pub cpu: u32,
    /// Kernel task id of the thread (cyclictest prints it with `-b`).
    pub tid: i32,
    /// Whether the thread ran under the requested policy (false: a real-time policy was
    /// refused and it ran `SCHED_OTHER`, see the run's warnings).
    pub policy_applied: bool,
    /// Wake-up latencies in ns, one sample per loop; exact count, min, mean and max.
    pub histogram: LatencyHistogram,
    /// Wake-ups measured (equal to `histogram.count()`).
    pub loops: u64,
    /// Periods skipped because a wake-up came after the next deadline.
    pub overruns: u64,
    /// Where the worst wake-up (the histogram's maximum, its first occurrence) was.
    pub worst: Option<WorstAt>,
}

/// Which wake-up a thread's worst was: what ties the trace's account to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorstAt {
    /// 0-based index among the thread's wake-ups (as a `--break-us` stop counts them).
    pub loop_index: u64,
    /// Its deadline, CLOCK_MONOTONIC ns: the expiry its timer's `hrtimer_start` carries.
    pub expiry_mono_ns: u64,
}

/// Why the measurement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum StopReason {
    /// Every thread reached the duration or loop count.
    Completed,
    /// A wake-up exceeded `break_us`; every thread was stopped. The first one wins.
    Break {
        cpu: u32,
        /// Kernel task id of the thread that saw it (cyclictest's "Break thread").
        tid: i32,
        /// 0-based index of the wake-up on that CPU.
        loop_index: u64,
        latency_ns: u64,
        /// The deadline that was overshot, in `CLOCK_MONOTONIC` ns: the same clock as tracefs's
        /// `mono` trace clock, for finding what ran on the CPU before it.
        expiry_mono_ns: u64,
    },
    /// The caller's stop flag was set (normally by a Ctrl-C handler).
    Signal,
}

/// The result of [`measure_timer`].
#[derive(Clone, Debug)]
pub struct TimerRun {
    /// One entry per CPU of the options, in their order.
    pub per_cpu: Vec<CpuResult>,
    /// One line per missing privilege and its effect on the figures.
    pub warnings: Vec<String>,
    /// Wall time from starting the threads until all of them ended.
    pub duration: Duration,
    pub stopped_by: StopReason,
    /// Whether the PM QoS request on `/dev/cpu_dma_latency` was held (if not, a warning says
    /// why).
    pub pm_qos_held: bool,
}

/// Only one measurement runs per process at a time: memory locking is process-wide, and one
/// run's `munlockall` would undo another's `mlockall`.
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Measures timer wake-up latency on `opts.cpus` until `opts.stop`, a break, or `stop_flag`.
///
/// Calls `progress` from the calling thread about every [`PROGRESS_PERIOD`] and once at the
/// end, with one [`LiveStat`] per CPU. A thread notices `stop_flag` at its next wake-up, so the
/// run ends at most one interval after the flag is set. The flag is only read.
///
/// Before the threads start, memory is locked (`mlockall(MCL_CURRENT | MCL_FUTURE)`) and a
/// zero-latency PM QoS request is held on `/dev/cpu_dma_latency`; both are undone when this
/// function returns, on every path. What cannot be done is a warning in the result: without
/// root the measurement still runs, with the effects named. A second call from another thread
/// waits until the first has finished.
///
/// # Errors
///
/// [`HostError::Invalid`] for options that [`TimerOptions::validate`] rejects, or a CPU the
/// process may not run on; [`HostError::Io`] or [`HostError::Parse`] when the online CPU list
/// cannot be read.
pub fn measure_timer(
    opts: &TimerOptions,
    stop_flag: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&[LiveStat]),
) -> Result<TimerRun, HostError> {
    opts.validate(&online_cpus()?)?;
    // At most MAX_INTERVAL, validated.
    let interval_ns = opts.interval.as_nanos() as u64;
    let _one_run = ONE_RUN_AT_A_TIME
        .lock()
        .unwrap_or_else(PoisonError::into_inner);

    let mut warnings = Vec::new();
    match sys::monotonic_resolution_ns() {
        Ok(1) => {}
        Ok(ns) => warnings.push(format!(
            "no high-resolution timers (CLOCK_MONOTONIC resolution {ns} ns): wake-ups are rounded to the timer tick"
        )),
        Err(e) => warnings.push(format!("cannot read the CLOCK_MONOTONIC resolution: {e}")),
    }
    // Guards: dropped in reverse order on every return path, after the threads have ended.
    let _memory = MemoryLock::acquire(&mut warnings);
    let qos = DmaLatencyRequest::acquire(
        Path::new(CPU_DMA_LATENCY_PATH),
        opts.latency_us,
        &mut warnings,
    );

    let halt = Halt {
        caller: stop_flag,
        internal: AtomicBool::new(false),
    };
    let live: Vec<LiveCounters> = opts.cpus.iter().map(|&c| LiveCounters::new(c)).collect();
    let break_event = OnceLock::new();
    let started = Instant::now();
    let ended = thread::scope(|scope| -> Result<Vec<ThreadEnd>, HostError> {
        // Any early return (or panic) below stops the threads before the scope joins them.
        let _stop_threads = HaltOnDrop(&halt);
        let (done_tx, done_rx) = mpsc::channel();
        let mut handles = Vec::with_capacity(opts.cpus.len());
        for (&cpu, live) in opts.cpus.iter().zip(&live) {
            let worker = Worker {
                cpu,
                policy: opts.policy,
                priority: opts.priority,
                interval_ns,
                stop: opts.stop,
                break_ns: opts.break_us.map(|us| us.saturating_mul(1000)),
                halt: &halt,
                live,
                break_event: &break_event,
                _done: DoneSignal(done_tx.clone()),
            };
            let handle = thread::Builder::new()
                .name(format!("irqlab-timer{cpu}"))
                .stack_size(THREAD_STACK_BYTES)
                .spawn_scoped(scope, move || worker.run())
                .map_err(|e| {
                    HostError::Invalid(format!(
                        "cannot start the measuring thread for CPU {cpu}: {e}"
                    ))
                })?;
            handles.push((cpu, handle));
        }
        drop(done_tx);

        let mut running = handles.len();
        let mut next_report = Instant::now() + PROGRESS_PERIOD;
        while running > 0 {
            let wait = next_report.saturating_duration_since(Instant::now());
            match done_rx.recv_timeout(wait) {
                Ok(()) => running -= 1,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    progress(&snapshot(&live, interval_ns));
                    next_report += PROGRESS_PERIOD;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        progress(&snapshot(&live, interval_ns));

        let mut ended = Vec::with_capacity(handles.len());
        let mut first_error = None;
        for (cpu, handle) in handles {
            match handle.join() {
                Ok(Ok(end)) => ended.push(end),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_) => {
                    first_error.get_or_insert(HostError::Invalid(format!(
                        "the measuring thread for CPU {cpu} panicked; this is a bug in irqlab"
                    )));
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(ended),
        }
    })?;
    let duration = started.elapsed();

    if ended.iter().any(|e| !e.result.policy_applied) {
        warnings.push(WARN_NO_FIFO.replace("SCHED_FIFO", opts.policy.name()));
    }
    let stopped_by = match break_event.get() {
        Some(b) => *b,
        None if ended.iter().any(|e| e.halted) => StopReason::Signal,
        None => StopReason::Completed,
    };
    Ok(TimerRun {
        per_cpu: ended.into_iter().map(|e| e.result).collect(),
        warnings,
        duration,
        stopped_by,
        pm_qos_held: qos.is_some(),
    })
}

/// The online CPUs, from [`ONLINE_CPUS_PATH`].
pub fn online_cpus() -> Result<Vec<u32>, HostError> {
    let path = Path::new(ONLINE_CPUS_PATH);
    let text = std::fs::read_to_string(path).map_err(|e| HostError::io(path, e))?;
    parse_cpu_list(&text).map_err(|message| HostError::Parse {
        path: path.to_path_buf(),
        line: 1,
        message,
    })
}

/// Stops the measuring threads: the caller's flag (read only) or our own (set by a break, an
/// error, or an early return).
struct Halt<'a> {
    caller: &'a AtomicBool,
    internal: AtomicBool,
}

impl Halt<'_> {
    fn is_set(&self) -> bool {
        // Relaxed: the flags carry no data; a thread sees them at its next check at the latest.
        self.internal.load(Relaxed) || self.caller.load(Relaxed)
    }
    fn set(&self) {
        self.internal.store(true, Relaxed);
    }
}

struct HaltOnDrop<'a>(&'a Halt<'a>);

impl Drop for HaltOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Tells the main thread that a worker has ended, on every path including a panic.
struct DoneSignal(mpsc::Sender<()>);

impl Drop for DoneSignal {
    fn drop(&mut self) {
        // The receiver outlives the workers within the scope; a failure is harmless.
        let _ = self.0.send(());
    }
}

/// One thread's running statistics, written by its thread alone and read by the main thread
/// for progress. Relaxed atomics: a snapshot may mix two consecutive wake-ups, which does not
/// matter for a display, and the writer pays only plain stores.
struct LiveCounters {
    cpu: u32,
    tid: AtomicI32,
    priority: AtomicI32,
    loops: AtomicU64,
    overruns: AtomicU64,
    min_ns: AtomicU64,
    last_ns: AtomicU64,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
}

impl LiveCounters {
    fn new(cpu: u32) -> Self {
        LiveCounters {
            cpu,
            tid: AtomicI32::new(0),
            priority: AtomicI32::new(0),
            loops: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            min_ns: AtomicU64::new(u64::MAX),
            last_ns: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }

    fn snapshot(&self, interval_ns: u64) -> LiveStat {
        let loops = self.loops.load(Relaxed);
        let seen = |v: u64| (loops > 0).then_some(v);
        LiveStat {
            cpu: self.cpu,
            tid: self.tid.load(Relaxed),
            priority: self.priority.load(Relaxed),
            interval_us: interval_ns / 1000,
            loops,
            overruns: self.overruns.load(Relaxed),
            min_ns: seen(self.min_ns.load(Relaxed)),
            last_ns: seen(self.last_ns.load(Relaxed)),
            avg_ns: seen(self.sum_ns.load(Relaxed) / loops.max(1)),
            max_ns: seen(self.max_ns.load(Relaxed)),
        }
    }
}

fn snapshot(live: &[LiveCounters], interval_ns: u64) -> Vec<LiveStat> {
    live.iter().map(|l| l.snapshot(interval_ns)).collect()
}

/// What a worker hands back.
struct ThreadEnd {
    result: CpuResult,
    /// Stopped by the stop flag or another thread, not by its own duration or loop count.
    halted: bool,
}

/// One measuring thread: cyclictest's `timerthread()` in `MODE_CLOCK_NANOSLEEP` with
/// `TIMER_ABSTIME` on `CLOCK_MONOTONIC`.
struct Worker<'a> {
    cpu: u32,
    policy: Policy,
    priority: i32,
    interval_ns: u64,
    stop: Stop,
    break_ns: Option<u64>,
    halt: &'a Halt<'a>,
    live: &'a LiveCounters,
    break_event: &'a OnceLock<StopReason>,
    _done: DoneSignal,
}

impl Worker<'_> {
    fn run(self) -> Result<ThreadEnd, HostError> {
        let result = self.measure();
        if result.is_err() {
            // The run fails as a whole; stop the other threads now rather than at their end.
            self.halt.set();
        }
        result
    }

    fn measure(&self) -> Result<ThreadEnd, HostError> {
        let cpu = self.cpu;
        let tid = sys::current_tid();
        self.live.tid.store(tid, Relaxed);
        sys::pin_current_thread(cpu).map_err(|e| {
            HostError::Invalid(format!(
                "--cpus: cannot run a thread on CPU {cpu}: {e} (is it outside this process's cpuset? see Cpus_allowed_list in /proc/self/status)"
            ))
        })?;
        let policy_applied = match sys::set_current_thread_policy(self.policy.raw(), self.priority)
        {
            Ok(()) => true,
            // Not root and no CAP_SYS_NICE, or above RLIMIT_RTPRIO: measure anyway, with a
            // warning (cyclictest exits here).
            Err(Errno::EPERM) => false,
            Err(e) => {
                return Err(HostError::Invalid(format!(
                    "--priority: cannot set {} priority {} on CPU {cpu}: {e}",
                    self.policy.name(),
                    self.priority
                )))
            }
        };
        self.live
            .priority
            .store(if policy_applied { self.priority } else { 0 }, Relaxed);
        // Allocated on the measuring CPU, so its pages are local to it (and, with MCL_FUTURE,
        // already resident before the first wake-up).
        let mut histogram = LatencyHistogram::new();

        let clock_error = |e: Errno| HostError::Invalid(format!("CLOCK_MONOTONIC failed: {e}"));
        let start_ns = sys::monotonic_now_ns().map_err(clock_error)?;
        let stop_at_ns = match self.stop {
            Stop::Duration(d) => {
                Some(start_ns.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
            }
            _ => None,
        };
        let max_loops = match self.stop {
            Stop::Loops(n) => n,
            _ => u64::MAX,
        };
        let (mut loops, mut overruns, mut sum_ns) = (0u64, 0u64, 0u64);
        let (mut min_ns, mut max_ns) = (u64::MAX, 0u64);
        let mut worst: Option<WorstAt> = None;
        let mut next_ns = start_ns + self.interval_ns;
        let mut halted = false;
        loop {
            if self.halt.is_set() {
                halted = true;
                break;
            }
            match sys::sleep_until_ns(next_ns) {
                Ok(()) => {}
                // A signal handler ran on this thread (say the caller's Ctrl-C handler): sleep
                // again to the same deadline unless it asked us to stop.
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(HostError::Invalid(format!("clock_nanosleep failed: {e}"))),
            }
            let now_ns = sys::monotonic_now_ns().map_err(clock_error)?;
            // An absolute sleep never returns early; saturate anyway rather than wrap.
            let latency_ns = now_ns.saturating_sub(next_ns);
            histogram.record(latency_ns);
            let loop_index = loops;
            loops += 1;
            sum_ns = sum_ns.saturating_add(latency_ns);
            min_ns = min_ns.min(latency_ns);
            if worst.is_none() || latency_ns > max_ns {
                worst = Some(WorstAt {
                    loop_index,
                    expiry_mono_ns: next_ns,
                });
            }
            max_ns = max_ns.max(latency_ns);
            self.live.min_ns.store(min_ns, Relaxed);
            self.live.max_ns.store(max_ns, Relaxed);
            self.live.last_ns.store(latency_ns, Relaxed);
            self.live.sum_ns.store(sum_ns, Relaxed);
            self.live.loops.store(loops, Relaxed);

            if self.break_ns.is_some_and(|limit| latency_ns > limit) {
                // The first break of the run is the one reported.
                let _ = self.break_event.set(StopReason::Break {
                    cpu: self.cpu,
                    tid,
                    loop_index,
                    latency_ns,
                    expiry_mono_ns: next_ns,
                });
                self.halt.set();
                break;
            }
            if stop_at_ns.is_some_and(|stop| now_ns >= stop) || loops == max_loops {
                break;
            }
            // cyclictest: `next += interval; while (tsgreater(&now, &next)) next += interval;`
            // a wake-up after the next deadline skips the deadlines already past.
            next_ns += self.interval_ns;
            while now_ns > next_ns {
                next_ns += self.interval_ns;
                overruns += 1;
            }
            self.live.overruns.store(overruns, Relaxed);
        }
        Ok(ThreadEnd {
            result: CpuResult {
                cpu: self.cpu,
                tid,
                policy_applied,
                histogram,
                loops,
                overruns,
                worst,
            },
            halted,
        })
    }
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE)` for the run, `munlockall()` on drop.
///
/// Locking is skipped when `RLIMIT_MEMLOCK` would make it dangerous: with `MCL_FUTURE` and a
/// finite limit, any allocation past the limit fails, and Rust aborts the process on a failed
/// allocation. So it is done only with `CAP_IPC_LOCK` (which lifts the limit) or an unlimited
/// limit. The unlock also drops locks the process held before the run.
struct MemoryLock;

impl MemoryLock {
    fn acquire(warnings: &mut Vec<String>) -> Option<MemoryLock> {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if !has_effective_capability(&status, CAP_IPC_LOCK) {
            let why = match sys::memlock_limit_bytes() {
                Ok(None) => None,
                Ok(Some(bytes)) => Some(format!("RLIMIT_MEMLOCK is {} KiB", bytes / 1024)),
                Err(e) => Some(format!("RLIMIT_MEMLOCK unreadable: {e}")),
            };
            if let Some(why) = why {
                warnings.push(format!("{WARN_NO_MLOCK} (no CAP_IPC_LOCK and {why})"));
                return None;
            }
        }
        match sys::lock_all_memory() {
            Ok(()) => Some(MemoryLock),
            Err(e) => {
                warnings.push(format!("{WARN_NO_MLOCK} (mlockall: {e})"));
                None
            }
        }
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        // Nothing to report to: munlockall cannot fail once mlockall succeeded.
        let _ = sys::unlock_all_memory();
    }
}

/// Whether `CapEff` in a `/proc/<pid>/status` text has capability bit `bit`.
fn has_effective_capability(status: &str, bit: u32) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps >> bit & 1 == 1)
}

/// A PM QoS request on `/dev/cpu_dma_latency` (0 us unless `--latency`), held as long as this
/// value lives.
///
/// The kernel keeps the request only while the file descriptor is open and removes it when the
/// descriptor is closed, whoever closes it and however the process ends (Linux
/// `Documentation/power/pm_qos_interface.rst`: "When the process closes the file descriptor the
/// request is removed"; `cpu_latency_qos_release()` in `kernel/power/qos.c`). So dropping this,
/// on any path, restores the previous QoS state; nothing else needs saving. It is still recorded
/// in irqlab's state file ([`crate::state`]) while held, so that the account of what a crashed
/// irqlab held is complete.
struct DmaLatencyRequest {
    fd: Option<std::fs::File>,
    recorded: Option<crate::state::Recorded>,
}

impl DmaLatencyRequest {
    fn acquire(
        path: &Path,
        latency_us: i32,
        warnings: &mut Vec<String>,
    ) -> Option<DmaLatencyRequest> {
        // The record only completes the account of what irqlab holds (the kernel drops the
        // request with the descriptor, however irqlab ends), so a state directory that cannot
        // be written does not cost the request.
        let recorded = crate::state::record(crate::state::Change::PmQos {
            path: path.to_path_buf(),
            target_us: latency_us,
        })
        .ok();
        let opened = std::fs::OpenOptions::new().write(true).open(path);
        // The device takes the request as a binary s32 in microseconds (or as hex text).
        let written = opened.and_then(|mut f| f.write_all(&latency_us.to_ne_bytes()).map(|()| f));
        match written {
            Ok(fd) => Some(DmaLatencyRequest {
                fd: Some(fd),
                recorded,
            }),
            Err(e) => {
                if let Some(r) = recorded {
                    r.undone();
                }
                warnings.push(format!("{WARN_NO_DMA_LATENCY} ({}: {e})", path.display()));
                None
            }
        }
    }
}

impl Drop for DmaLatencyRequest {
    fn drop(&mut self) {
        // Closing the descriptor removes the request; then its record.
        drop(self.fd.take());
        if let Some(r) = self.recorded.take() {
            r.undone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_the_kernel_prints_them() {
        assert_eq!(parse_cpu_list("0-3,6\n"), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(parse_cpu_list(" 4, 1-2 ,2\n"), Ok(vec![1, 2, 4]));
        assert_eq!(parse_cpu_list("\n"), Ok(vec![]));
        assert!(parse_cpu_list("3-1").unwrap_err().contains("backwards"));
        assert!(parse_cpu_list("0,,1")
            .unwrap_err()
            .contains("not a CPU number"));
        assert!(parse_cpu_list("1-")
            .unwrap_err()
            .contains("not a CPU number"));
        assert!(parse_cpu_list("x").unwrap_err().contains("`x`"));
        assert!(parse_cpu_list("0-4000000000")
            .unwrap_err()
            .contains("above"));
    }

    #[test]
    fn cpu_lists_format_back() {
        assert_eq!(format_cpu_list(&[6, 0, 1, 2, 3]), "0-3,6");
        assert_eq!(format_cpu_list(&[0, 1]), "0-1");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[]), "");
        for text in ["0-3,6", "1,3,5-7", "0"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(text).unwrap()), text);
        }
    }

    fn message(opts: &TimerOptions) -> String {
        match opts.validate(&[0, 1]) {
            Err(HostError::Invalid(m)) => m,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn options_are_validated_with_the_flag_and_the_fix() {
        let good = TimerOptions::new(vec![1, 0], Stop::Loops(10));
        assert!(good.validate(&[0, 1]).is_ok());
        let with = |f: &dyn Fn(&mut TimerOptions)| {
            let mut o = good.clone();
            f(&mut o);
            message(&o)
        };
        assert_eq!(
            with(&|o| o.cpus = vec![0, 7]),
            "--cpus: CPU 7 is not online (online: 0-1)"
        );
        assert_eq!(
            with(&|o| o.cpus = vec![]),
            "--cpus: no CPU given; name at least one online CPU (online: 0-1)"
        );
        assert!(with(&|o| o.cpus = vec![1, 1]).contains("CPU 1 is listed twice"));
        assert_eq!(
            with(&|o| o.interval = Duration::ZERO),
            "--interval-us must be at least 1"
        );
        for p in [0, 100, -5] {
            let m = with(&|o| o.priority = p);
            assert!(
                m.starts_with(&format!("--priority: {p} is outside 1..=99")),
                "{m}"
            );
        }
        assert_eq!(
            with(&|o| o.stop = Stop::Loops(0)),
            "--loops must be at least 1"
        );
        assert!(with(&|o| o.stop = Stop::Duration(Duration::ZERO)).starts_with("--duration"));
        assert!(with(&|o| o.break_us = Some(0)).starts_with("--break-us"));
        assert!(with(&|o| o.interval = Duration::MAX).starts_with("--interval-us"));
        // Sub-microsecond intervals and endless runs are allowed.
        let mut fine = good.clone();
        fine.interval = Duration::from_nanos(500);
        fine.stop = Stop::UntilStopped;
        fine.break_us = Some(1);
        assert!(fine.validate(&[0, 1]).is_ok());
    }

    #[test]
    fn live_line_matches_cyclictest_print_stat() {
        let stat = LiveStat {
            cpu: 0,
            tid: 1234,
            priority: 95,
            interval_us: 1000,
            loops: 5000,
            overruns: 0,
            min_ns: Some(3_400),
            last_ns: Some(5_000),
            avg_ns: Some(4_999),
            max_ns: Some(20_100),
        };
        assert_eq!(
            stat.cyclictest_line(0),
            "T: 0 ( 1234) P:95 I:1000 C:   5000 Min:      3 Act:    5 Avg:    4 Max:      20"
        );
    }

    #[test]
    fn capability_bits_come_from_cap_eff() {
        let status = "Name:\tx\nCapPrm:\t0000000000000000\nCapEff:\t0000000000004000\n";
        assert!(has_effective_capability(status, CAP_IPC_LOCK));
        assert!(!has_effective_capability(status, 13));
        assert!(!has_effective_capability(
            "CapEff:\t0000000000000000\n",
            CAP_IPC_LOCK
        ));
        assert!(!has_effective_capability("", CAP_IPC_LOCK));
    }

    #[test]
    fn dma_latency_request_warns_when_the_device_is_missing() {
        let mut warnings = Vec::new();
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("cpu_dma_latency");
        assert!(DmaLatencyRequest::acquire(&missing, 0, &mut warnings).is_none());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(WARN_NO_DMA_LATENCY),
            "{}",
            warnings[0]
        );
        // A writable file takes the 4-byte request.
        std::fs::write(&missing, b"").unwrap();
        let held = DmaLatencyRequest::acquire(&missing, 0, &mut warnings);
        assert!(held.is_some());
        assert_eq!(std::fs::read(&missing).unwrap(), 0i32.to_ne_bytes());
        drop(held);
        // --latency 25: the request is the value given.
        let held = DmaLatencyRequest::acquire(&missing, 25, &mut warnings);
        assert!(held.is_some());
        assert_eq!(std::fs::read(&missing).unwrap(), 25i32.to_ne_bytes());
    }
}
