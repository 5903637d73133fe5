//! The reader of a tracing instance's binary per-CPU ring buffers: one thread drains every
//! CPU's `trace_pipe_raw` into that CPU's own sink, with no locks on the event path.
//!
//! The reader is an observer on the host it measures, so it is built to cost little there:
//!
//! - **One thread for all CPUs**, not one per CPU: each pass reads every buffer, so a pass is
//!   one wake-up on one CPU instead of one on each.
//! - **Passes sized to the buffer.** The kernel keeps what is written until it is read (the
//!   buffer is a ring of pages per CPU, `kernel/trace/ring_buffer.c`), so the reader only has
//!   to come back before a buffer fills. After each pass it measures the busiest CPU's data
//!   rate and sleeps until that CPU would have filled a quarter of its buffer, between
//!   [`MIN_PERIOD`] and [`MAX_PERIOD`]: a quiet host sees one wake-up a second instead of the
//!   fifty per CPU a fixed 20 ms poll costs, and a burst shortens the next sleep at once.
//! - **Placed off the measured CPUs** when the caller names CPUs for it
//!   ([`Readers::start_on`]): a timer measurement passes the online CPUs it does not measure,
//!   so the reader's wake-ups and page copies land elsewhere.
//!
//! Blocking reads were considered and not used: `read()` on `trace_pipe_raw` waits for any data
//! at all (`tracing_buffers_read()` calls `wait_on_pipe(iter, 0)` in `kernel/trace/trace.c`;
//! only `splice()` honours `buffer_percent`), so it would wake the reader for nearly every
//! event, and each wake-up is an `irq_work` interrupt on the writing CPU
//! (`rb_wakeups()` in `ring_buffer.c`).

use crate::error::HostError;
use crate::ringbuf;
use crate::tracefs::TraceInstance;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The shortest sleep between passes: the old fixed poll period, reached only under a burst.
pub const MIN_PERIOD: Duration = Duration::from_millis(20);
/// The longest sleep between passes: bounds how stale a live view could be, and how long a
/// burst after a quiet second has before the reader notices it.
pub const MAX_PERIOD: Duration = Duration::from_secs(1);
/// The sleep before the first pass, before any rate is known.
const FIRST_PERIOD: Duration = Duration::from_millis(100);
/// A pass is planned to come when the busiest buffer is this full (1/4): room for the rate to
/// quadruple before anything is overwritten.
const FILL_TARGET_DIV: u64 = 4;
/// Size of one ring-buffer page as `trace_pipe_raw` returns it (`buffer_subbuf_size_kb`
/// defaults to the page size; irqlab does not change it).
const PAGE_BYTES: usize = 4096;

/// Read what is available from a non-blocking per-CPU raw reader into `page` (one page per
/// read). `Ok(0)` means nothing is ready.
pub fn read_page(f: &mut std::fs::File, page: &mut [u8]) -> Result<usize, std::io::Error> {
    match f.read(page) {
        Ok(n) => Ok(n),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// What a per-CPU reader feeds its events to.
pub trait CpuSink: Send + 'static {
    /// One data event: its timestamp (ns, the instance's `mono` clock) and its record.
    fn event(&mut self, ts: u64, rec: &[u8]);
    /// The kernel lost events before the next page: forget anything half paired (an entry
    /// waiting for its exit), or it would pair with an event after the gap.
    fn lost(&mut self);
}

/// What the reader thread hands back: each CPU's sink, or why it stopped.
type Drained<S> = Result<Vec<(u32, S)>, String>;

/// The reader thread draining every CPU's ring buffer into that CPU's sink. Dropping it (on any
/// error path) stops and joins the thread, so the instance can then be removed.
pub struct Readers<S: CpuSink> {
    draining: Arc<AtomicBool>,
    handle: Option<JoinHandle<Drained<S>>>,
}

/// One CPU's reader state.
struct CpuReader<S> {
    cpu: u32,
    file: std::fs::File,
    sink: S,
}

impl<S: CpuSink> Readers<S> {
    /// Open every CPU's reader first (a failure leaves no thread behind), then start the
    /// reader thread wherever the scheduler puts it.
    pub fn start(
        inst: &TraceInstance,
        cpus: &[u32],
        sink: impl FnMut(u32) -> S,
    ) -> Result<Self, HostError> {
        Self::start_on(inst, cpus, &[], sink)
    }

    /// As [`Readers::start`], with the reader thread kept on `reader_cpus` (empty: anywhere).
    /// A CPU set the kernel refuses (outside the process's cpuset, offline) leaves the thread
    /// unpinned: placement is an optimisation, not a condition of the measurement.
    pub fn start_on(
        inst: &TraceInstance,
        cpus: &[u32],
        reader_cpus: &[u32],
        mut sink: impl FnMut(u32) -> S,
    ) -> Result<Self, HostError> {
        let mut readers = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            readers.push(CpuReader {
                cpu,
                file: inst.open_cpu_raw(cpu)?,
                sink: sink(cpu),
            });
        }
        let buffer_bytes = buffer_bytes_per_cpu(inst);
        let draining = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&draining);
        let pin = reader_cpus.to_vec();
        let handle = std::thread::Builder::new()
            .name("irqlab-trace".into())
            .spawn(move || {
                if !pin.is_empty() {
                    pin_current_thread_to(&pin);
                }
                read_loop(readers, buffer_bytes, &flag)
            })
            .map_err(|e| HostError::Invalid(format!("cannot start the trace reader: {e}")))?;
        Ok(Readers {
            draining,
            handle: Some(handle),
        })
    }

    /// Drain what is left and return each CPU's sink, in the order of `cpus`. Stop the
    /// instance first, so the buffers stop filling.
    pub fn finish(mut self) -> Result<Vec<(u32, S)>, HostError> {
        let handle = self.handle.take().expect("finish is called once");
        self.draining.store(true, Ordering::Release);
        handle.thread().unpark();
        match handle.join() {
            Ok(Ok(sinks)) => Ok(sinks),
            Ok(Err(e)) => Err(HostError::Invalid(e)),
            Err(_) => Err(HostError::Invalid("the trace reader panicked".into())),
        }
    }
}

impl<S: CpuSink> Drop for Readers<S> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.draining.store(true, Ordering::Release);
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// The instance's `buffer_size_kb` (per CPU), in bytes; 1 MiB if unreadable.
fn buffer_bytes_per_cpu(inst: &TraceInstance) -> u64 {
    std::fs::read_to_string(inst.dir().join("buffer_size_kb"))
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(1 << 20, |kb| kb * 1024)
}

/// Keeps the calling thread on `cpus`; silently leaves it where it is if the kernel refuses.
fn pin_current_thread_to(cpus: &[u32]) {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        if set.set(c as usize).is_err() {
            return;
        }
    }
    let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
}

/// The sleep before the next pass: until the busiest CPU, writing at the rate just seen, fills
/// `1 / FILL_TARGET_DIV` of its buffer, within [`MIN_PERIOD`, `MAX_PERIOD`].
pub fn next_period(busiest_bytes: u64, elapsed: Duration, buffer_bytes: u64) -> Duration {
    let target = buffer_bytes / FILL_TARGET_DIV;
    if busiest_bytes == 0 {
        return MAX_PERIOD;
    }
    // time to fill = target / rate = target * elapsed / bytes
    let ns = (u128::from(target) * elapsed.as_nanos()) / u128::from(busiest_bytes);
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)).clamp(MIN_PERIOD, MAX_PERIOD)
}

fn read_loop<S: CpuSink>(
    mut readers: Vec<CpuReader<S>>,
    buffer_bytes: u64,
    draining: &AtomicBool,
) -> Drained<S> {
    let mut page = vec![0u8; PAGE_BYTES];
    // A pass reads at most the whole buffer per CPU, so a CPU writing as fast as it is read
    // cannot keep the reader from the others (or from stopping).
    let max_pages = (buffer_bytes as usize / PAGE_BYTES).max(1) + 1;
    let mut period = FIRST_PERIOD;
    let mut last_pass = Instant::now();
    loop {
        let due = last_pass + period;
        while !draining.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= due {
                break;
            }
            // `finish` unparks the thread, so stopping does not wait for the period.
            std::thread::park_timeout(due - now);
        }
        // Read the flag before the pass: a pass that starts after it was set (and so after
        // tracing stopped) drains everything, and is the last.
        let last = draining.load(Ordering::Acquire);
        let mut busiest = 0u64;
        for r in &mut readers {
            let mut bytes = 0u64;
            for _ in 0..max_pages {
                let n =
                    read_page(&mut r.file, &mut page).map_err(|e| format!("cpu{}: {e}", r.cpu))?;
                if n == 0 {
                    break;
                }
                bytes += n as u64;
                if ringbuf::lost_before(&page[..n]) {
                    r.sink.lost();
                }
                let sink = &mut r.sink;
                ringbuf::parse_page(&page[..n], |ts, rec| sink.event(ts, rec))
                    .map_err(|e| format!("cpu{}: malformed ring-buffer page: {e}", r.cpu))?;
            }
            busiest = busiest.max(bytes);
        }
        if last {
            return Ok(readers.into_iter().map(|r| (r.cpu, r.sink)).collect());
        }
        period = next_period(busiest, last_pass.elapsed(), buffer_bytes);
        last_pass = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_follows_the_busiest_buffer() {
        let mib4 = 4 << 20;
        // Quiet: nothing read, the longest sleep.
        assert_eq!(next_period(0, Duration::from_millis(100), mib4), MAX_PERIOD);
        // 1 MiB in 1 s fills a quarter of 4 MiB in 1 s.
        assert_eq!(
            next_period(1 << 20, Duration::from_secs(1), mib4),
            Duration::from_secs(1)
        );
        // 4 MiB/s: a quarter in 250 ms.
        assert_eq!(
            next_period(1 << 20, Duration::from_millis(250), mib4),
            Duration::from_millis(250)
        );
        // A burst (a quarter read in 1 ms) is clamped to the shortest sleep.
        assert_eq!(
            next_period(1 << 20, Duration::from_millis(1), mib4),
            MIN_PERIOD
        );
        // A small buffer at a modest rate: 64 KiB/s into 64 KiB, a quarter in 250 ms.
        assert_eq!(
            next_period(16 << 10, Duration::from_millis(250), 64 << 10),
            Duration::from_millis(250)
        );
    }
}
