//! Per-CPU readers of a tracing instance's binary ring buffers: one thread per CPU drains its
//! CPU's `trace_pipe_raw` into a sink of its own, with no locks on the event path.

use crate::ringbuf;
use crate::tracefs::TraceInstance;
use crate::HostError;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

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

/// One reader thread per CPU draining that CPU's ring buffer into its own sink, with no locks
/// on the event path. Dropping it (on any error path) stops and joins the threads, so the
/// instance can then be removed.
pub struct Readers<S: CpuSink> {
    draining: Arc<AtomicBool>,
    handles: Vec<(u32, JoinHandle<Result<S, String>>)>,
}

impl<S: CpuSink> Readers<S> {
    /// Open every CPU's reader first (a failure leaves no thread behind), then start them.
    pub fn start(
        inst: &TraceInstance,
        cpus: &[u32],
        mut sink: impl FnMut(u32) -> S,
    ) -> Result<Self, HostError> {
        let files = cpus
            .iter()
            .map(|&c| inst.open_cpu_raw(c).map(|f| (c, f)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut readers = Readers {
            draining: Arc::new(AtomicBool::new(false)),
            handles: Vec::with_capacity(files.len()),
        };
        for (cpu, file) in files {
            let s = sink(cpu);
            let draining = Arc::clone(&readers.draining);
            let h = std::thread::Builder::new()
                .name(format!("irqlab-trace{cpu}"))
                .spawn(move || read_loop(cpu, file, s, &draining))
                .map_err(|e| HostError::Invalid(format!("cannot start a trace reader: {e}")))?;
            readers.handles.push((cpu, h));
        }
        Ok(readers)
    }

    /// Drain what is left and return each CPU's sink. Stop the instance first, so the buffers
    /// stop filling.
    pub fn finish(mut self) -> Result<Vec<(u32, S)>, HostError> {
        self.draining.store(true, Ordering::Release);
        let mut out = Vec::with_capacity(self.handles.len());
        let mut err = None;
        for (cpu, h) in std::mem::take(&mut self.handles) {
            match h.join() {
                Ok(Ok(s)) => out.push((cpu, s)),
                Ok(Err(e)) => err = Some(e),
                Err(_) => err = Some(format!("the trace reader of CPU {cpu} panicked")),
            }
        }
        match err {
            Some(e) => Err(HostError::Invalid(e)),
            None => Ok(out),
        }
    }
}

impl<S: CpuSink> Drop for Readers<S> {
    fn drop(&mut self) {
        self.draining.store(true, Ordering::Release);
        for (_, h) in std::mem::take(&mut self.handles) {
            let _ = h.join();
        }
    }
}

fn read_loop<S: CpuSink>(
    cpu: u32,
    mut file: std::fs::File,
    mut sink: S,
    draining: &AtomicBool,
) -> Result<S, String> {
    let mut page = vec![0u8; 4096];
    loop {
        let n = read_page(&mut file, &mut page).map_err(|e| format!("cpu{cpu}: {e}"))?;
        if n == 0 {
            if draining.load(Ordering::Acquire) {
                return Ok(sink);
            }
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        if ringbuf::lost_before(&page[..n]) {
            sink.lost();
        }
        ringbuf::parse_page(&page[..n], |ts, rec| sink.event(ts, rec))
            .map_err(|e| format!("cpu{cpu}: malformed ring-buffer page: {e}"))?;
    }
}
