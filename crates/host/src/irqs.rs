//! `irqlab measure irqs`: hard IRQ handler time, softirq raise-to-run delay and run time, and
//! tasklet run time, per CPU, from the kernel's trace events:
//!
//! - `irq/irq_handler_entry`, `irq/irq_handler_exit` (one pair per action of a line);
//! - `irq/softirq_raise`, `irq/softirq_entry`, `irq/softirq_exit`;
//! - `irq/tasklet_entry`, `irq/tasklet_exit` (Linux 5.13+; optional);
//! - `irq_vectors/local_timer_entry`, `local_timer_exit` (x86; optional), shown as `LOC`.
//!
//! One reader thread per CPU drains that CPU's binary ring buffer while the measurement runs
//! and keeps its own statistics (no locks on the event path); the threads' results are joined
//! at the end. Events are paired per CPU: a hard IRQ handler runs to completion on the CPU that
//! entered it, and a softirq raised on a CPU runs on that CPU.

use crate::error::HostError;
use crate::readers::{CpuSink, Readers};
use crate::ringbuf::{self, Field, Format};
use crate::tracefs::{self, EventName, TraceInstance};
use irqlab_stats::activity::{IrqActivity, IrqActivityReport, SoftirqActivity, TaskletActivity};
use irqlab_stats::LatencyHistogram;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Softirq vector names (`include/linux/interrupt.h`, `softirq_to_name`).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

const REQUIRED: [EventName; 5] = tracefs::IRQ_EVENTS;
const OPTIONAL: [EventName; 4] = [
    EventName::new("irq", "tasklet_entry"),
    EventName::new("irq", "tasklet_exit"),
    tracefs::LOCAL_TIMER_EVENTS[0],
    tracefs::LOCAL_TIMER_EVENTS[1],
];

/// What to measure.
#[derive(Clone, Debug)]
pub struct IrqsOptions {
    pub duration: Duration,
    /// Ring buffer per CPU, in KiB.
    pub buffer_kb: u32,
}

/// Event IDs and the fields used, resolved once from the `format` files.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    irq_entry: Option<(u16, Field, Field)>, // irq, name
    irq_exit: Option<(u16, Field)>,         // irq
    softirq: [Option<(u16, Field)>; 3],     // raise, entry, exit: vec
    tasklet: [Option<(u16, Field)>; 2],     // entry, exit: func
    timer: [Option<u16>; 2],                // local_timer entry, exit
}

impl Decoder {
    /// From the format files of an instance (or a fixture directory laid out like `events/`).
    pub fn from_formats(
        format_path: impl Fn(EventName) -> std::path::PathBuf,
    ) -> Result<Self, HostError> {
        let read = |ev: EventName| -> Result<Option<Format>, HostError> {
            let p = format_path(ev);
            if p.exists() {
                Format::read(&p).map(Some)
            } else {
                Ok(None)
            }
        };
        let mut d = Decoder::default();
        if let Some(f) = read(REQUIRED[0])? {
            d.irq_entry = Some((f.id, f.field("irq")?, f.field("name")?));
        }
        if let Some(f) = read(REQUIRED[1])? {
            d.irq_exit = Some((f.id, f.field("irq")?));
        }
        for (i, ev) in REQUIRED[2..].iter().enumerate() {
            if let Some(f) = read(*ev)? {
                d.softirq[i] = Some((f.id, f.field("vec")?));
            }
        }
        for (i, ev) in OPTIONAL[..2].iter().enumerate() {
            if let Some(f) = read(*ev)? {
                d.tasklet[i] = Some((f.id, f.field("func")?));
            }
        }
        for (i, ev) in OPTIONAL[2..].iter().enumerate() {
            if let Some(f) = read(*ev)? {
                d.timer[i] = Some(f.id);
            }
        }
        Ok(d)
    }
}

#[derive(Default)]
struct IrqAcc {
    name: String,
    hist: LatencyHistogram,
    busy_ns: u64,
}

#[derive(Default)]
struct SoftirqAcc {
    delay: LatencyHistogram,
    run: LatencyHistogram,
    busy_ns: u64,
    /// First raise not yet served.
    raised_at: Option<u64>,
    entered_at: Option<u64>,
}

/// One CPU's accounting. Feed it that CPU's events in time order.
#[derive(Default)]
pub struct CpuAccount {
    /// Per IRQ, one accumulator per action: a shared line calls each handler, and
    /// `irq_handler_entry` names the one it calls.
    irqs: HashMap<i64, Vec<IrqAcc>>,
    /// Open handler entries: IRQ, index of the action, entry time (a stack: nested hard IRQs
    /// are possible on some configurations).
    open_irqs: Vec<(i64, usize, u64)>,
    timer: IrqAcc,
    timer_entered: Option<u64>,
    softirqs: [SoftirqAcc; 10],
    tasklets: HashMap<u64, (LatencyHistogram, Option<u64>)>,
    pub events: u64,
    pub unmatched: u64,
}

impl CpuAccount {
    /// Account one record at `ts` (ns).
    pub fn on_event(&mut self, d: &Decoder, ts: u64, rec: &[u8]) {
        let id = ringbuf::record_type(rec);
        self.events += 1;
        if let Some((eid, irq, name)) = &d.irq_entry {
            if id == *eid {
                let n = irq.int(rec);
                let action = name.str(rec);
                let accs = self.irqs.entry(n).or_default();
                let k = match accs.iter().position(|a| a.name == action) {
                    Some(k) => k,
                    None => {
                        accs.push(IrqAcc {
                            name: action.to_string(),
                            ..IrqAcc::default()
                        });
                        accs.len() - 1
                    }
                };
                self.open_irqs.push((n, k, ts));
                return;
            }
        }
        if let Some((xid, irq)) = &d.irq_exit {
            if id == *xid {
                let n = irq.int(rec);
                match self.open_irqs.iter().rposition(|(i, _, _)| *i == n) {
                    Some(pos) => {
                        let (_, k, start) = self.open_irqs.remove(pos);
                        let acc = &mut self.irqs.get_mut(&n).expect("entered")[k];
                        let dt = ts.saturating_sub(start);
                        acc.hist.record(dt);
                        acc.busy_ns += dt;
                    }
                    None => self.unmatched += 1,
                }
                return;
            }
        }
        for (k, ev) in d.softirq.iter().enumerate() {
            let Some((sid, vec)) = ev else { continue };
            if id != *sid {
                continue;
            }
            let Some(s) = usize::try_from(vec.int(rec))
                .ok()
                .and_then(|v| self.softirqs.get_mut(v))
            else {
                return;
            };
            match k {
                0 => {
                    s.raised_at.get_or_insert(ts);
                }
                1 => {
                    if let Some(r) = s.raised_at.take() {
                        s.delay.record(ts.saturating_sub(r));
                    }
                    s.entered_at = Some(ts);
                }
                _ => match s.entered_at.take() {
                    Some(e) => {
                        let dt = ts.saturating_sub(e);
                        s.run.record(dt);
                        s.busy_ns += dt;
                    }
                    None => self.unmatched += 1,
                },
            }
            return;
        }
        for (k, ev) in d.tasklet.iter().enumerate() {
            let Some((tid, func)) = ev else { continue };
            if id != *tid {
                continue;
            }
            let f = func.int(rec) as u64;
            let t = self.tasklets.entry(f).or_default();
            if k == 0 {
                t.1 = Some(ts);
            } else if let Some(e) = t.1.take() {
                t.0.record(ts.saturating_sub(e));
            } else {
                self.unmatched += 1;
            }
            return;
        }
        if Some(id) == d.timer[0] {
            self.timer_entered = Some(ts);
        } else if Some(id) == d.timer[1] {
            match self.timer_entered.take() {
                Some(e) => {
                    let dt = ts.saturating_sub(e);
                    self.timer.hist.record(dt);
                    self.timer.busy_ns += dt;
                }
                None => self.unmatched += 1,
            }
        }
    }

    /// Events were lost: forget half-paired entries and raises.
    pub fn forget_open(&mut self) {
        self.open_irqs.clear();
        self.timer_entered = None;
        for s in &mut self.softirqs {
            s.raised_at = None;
            s.entered_at = None;
        }
        for t in self.tasklets.values_mut() {
            t.1 = None;
        }
    }

    /// Turn into report rows for CPU `cpu` over `secs`.
    fn into_rows(
        self,
        cpu: u32,
        secs: f64,
        symbols: &dyn Fn(u64) -> String,
        out: &mut IrqActivityReport,
    ) {
        let pct = |busy_ns: u64| 100.0 * busy_ns as f64 / (secs * 1e9);
        let mut irqs: Vec<(i64, IrqAcc)> = self
            .irqs
            .into_iter()
            .flat_map(|(n, accs)| accs.into_iter().map(move |a| (n, a)))
            .collect();
        irqs.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
        for (n, acc) in irqs.into_iter().filter(|(_, a)| a.hist.count() > 0) {
            out.irqs.push(IrqActivity {
                irq: n.to_string(),
                name: acc.name,
                cpu,
                count: acc.hist.count(),
                rate_per_s: acc.hist.count() as f64 / secs,
                cpu_percent: pct(acc.busy_ns),
                handler: acc.hist.summary(),
            });
        }
        if self.timer.hist.count() > 0 {
            out.irqs.push(IrqActivity {
                irq: "LOC".into(),
                name: "local timer".into(),
                cpu,
                count: self.timer.hist.count(),
                rate_per_s: self.timer.hist.count() as f64 / secs,
                cpu_percent: pct(self.timer.busy_ns),
                handler: self.timer.hist.summary(),
            });
        }
        for (v, s) in self.softirqs.into_iter().enumerate() {
            if s.run.count() == 0 {
                continue;
            }
            out.softirqs.push(SoftirqActivity {
                vector: v as u32,
                name: SOFTIRQ_NAMES[v].into(),
                cpu,
                count: s.run.count(),
                rate_per_s: s.run.count() as f64 / secs,
                cpu_percent: pct(s.busy_ns),
                raise_to_entry: s.delay.summary(),
                runtime: s.run.summary(),
            });
        }
        let mut tasklets: Vec<_> = self.tasklets.into_iter().collect();
        tasklets.sort_by_key(|(f, _)| *f);
        for (f, (h, _)) in tasklets.into_iter().filter(|(_, (h, _))| h.count() > 0) {
            out.tasklets.push(TaskletActivity {
                function: symbols(f),
                cpu,
                count: h.count(),
                runtime: h.summary(),
            });
        }
        out.events += self.events;
        out.unmatched += self.unmatched;
    }
}

/// A CPU's reader state.
struct IrqSink {
    decoder: Decoder,
    acc: CpuAccount,
}

impl CpuSink for IrqSink {
    fn event(&mut self, ts: u64, rec: &[u8]) {
        self.acc.on_event(&self.decoder, ts, rec);
    }
    fn lost(&mut self) {
        self.acc.forget_open();
    }
}

/// The address of a kernel text symbol (root sees real addresses; others see zeros).
pub(crate) fn kernel_symbol(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    text.lines()
        .filter_map(text_symbol)
        .find(|(_, n)| *n == name)
        .map(|(a, _)| a)
}

/// Names for tasklet function addresses from `/proc/kallsyms`, sorted by address.
fn kallsyms() -> Vec<(u64, String)> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let mut v: Vec<(u64, String)> = text
        .lines()
        .filter_map(text_symbol)
        .map(|(a, n)| (a, n.to_string()))
        .collect();
    v.sort_unstable();
    v
}

/// A kallsyms line of a text symbol with a real address (root sees them; others see zeros).
fn text_symbol(line: &str) -> Option<(u64, &str)> {
    let mut it = line.split_whitespace();
    let addr = u64::from_str_radix(it.next()?, 16).ok()?;
    let kind = it.next()?;
    let name = it.next()?;
    (addr != 0 && matches!(kind, "t" | "T")).then_some((addr, name))
}

/// Run the measurement. `stop` ends it early (Ctrl-C); the report then covers the time run.
pub fn measure_irqs(
    opts: &IrqsOptions,
    stop: &Arc<AtomicBool>,
) -> Result<IrqActivityReport, HostError> {
    if opts.duration.is_zero() {
        return Err(HostError::Invalid(
            "--duration must be longer than zero".into(),
        ));
    }
    if opts.buffer_kb == 0 {
        return Err(HostError::Invalid("--buffer-kb must be at least 1".into()));
    }
    tracefs::require_root("irqlab measure irqs")?;
    let cpus = crate::timer::online_cpus()?;
    // Rates and CPU shares are over the time the trace recorded: from before tracing is turned
    // on (the last step of creating the instance) to after it is turned off. The measuring
    // period alone would leave out the setup, which matters when Ctrl-C comes early.
    let traced_from = Instant::now();
    let inst = TraceInstance::create(&REQUIRED, opts.buffer_kb)?;
    // The optional events this kernel has (tasklet events are 5.13+, local_timer x86 only).
    inst.enable_if_present(&OPTIONAL)?;
    let decoder = Decoder::from_formats(|ev| inst.format_path(ev))?;
    let readers = Readers::start(&inst, &cpus, |_| IrqSink {
        decoder: decoder.clone(),
        acc: CpuAccount::default(),
    })?;
    let started = Instant::now();
    while started.elapsed() < opts.duration && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(
            Duration::from_millis(50).min(opts.duration.saturating_sub(started.elapsed())),
        );
    }
    let stop_result = inst.stop();
    let secs = traced_from.elapsed().as_secs_f64();
    let stopped_early = (started.elapsed() < opts.duration)
        .then(|| crate::signals::received().unwrap_or("a signal").to_string());
    let drained = readers.finish();
    let lost: Vec<u64> = cpus
        .iter()
        .map(|&c| inst.lost_events(c).unwrap_or(0))
        .collect();
    // Readers are joined: remove the instance, unmount if irqlab mounted tracefs.
    inst.close()?;
    stop_result?;
    let mut accounts: Vec<(u32, CpuAccount)> =
        drained?.into_iter().map(|(c, s)| (c, s.acc)).collect();
    let syms = if accounts.iter().any(|(_, a)| !a.tasklets.is_empty()) {
        kallsyms()
    } else {
        Vec::new()
    };
    let symbol = |addr: u64| -> String {
        match syms.binary_search_by_key(&addr, |(a, _)| *a) {
            Ok(i) => syms[i].1.clone(),
            Err(_) => format!("0x{addr:x}"),
        }
    };
    let mut report = IrqActivityReport {
        kernel: crate::pci::read_trimmed(std::path::Path::new("/proc/sys/kernel/osrelease")),
        duration_s: secs,
        stopped_by: stopped_early,
        cpus: cpus.clone(),
        irqs: Vec::new(),
        softirqs: Vec::new(),
        tasklets: Vec::new(),
        events: 0,
        lost_events: lost,
        unmatched: 0,
    };
    accounts.sort_by_key(|(c, _)| *c);
    for (cpu, acc) in accounts {
        acc.into_rows(cpu, secs, &symbol, &mut report);
    }
    Ok(report)
}
