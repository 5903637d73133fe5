//! `irqlab measure timer` as a whole: the trace (for the IRQ/thread split and the analysis of
//! the worst wake-up) around the measuring threads, an optional load, and the result in the
//! [`RunReport`] data model that simulated runs use too, so the same renderers show both.

use crate::error::HostError;
use crate::load::Load;
use crate::timer::{self, LiveStat, StopReason, TimerOptions, TimerRun};
use crate::timer_trace::{TimerTrace, TimerTraceResult, TraceDetail};
use irqlab_stats::results::{Counter, HistogramData, Metric, RunReport, Spike, SpikeKind};
use irqlab_stats::LatencyHistogram;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Everything `measure timer` takes.
#[derive(Clone, Debug)]
pub struct MeasureTimer {
    pub timer: TimerOptions,
    /// Trace the timer interrupt for the IRQ/thread split (needs root and tracefs; without them
    /// the run goes on with a warning).
    pub trace: bool,
    /// Also trace the scheduler and the interrupt handlers, so the analysis of the worst
    /// wake-up attributes all of it (costlier: see [`TraceDetail`]). A break (`--break-us`)
    /// always does.
    pub trace_sched: bool,
    /// Ring buffer per CPU for the trace, KiB.
    pub buffer_kb: u32,
    /// A shell command run for the measurement's duration.
    pub load: Option<String>,
}

/// The report, and the thread-latency histograms per CPU (for cyclictest-format output).
pub struct MeasuredTimer {
    pub report: RunReport,
    pub thread_histograms: Vec<(u32, LatencyHistogram)>,
}

/// How far before the expiry the account of a wake-up looks (one interval, within 0.1-1 ms).
fn account_window_ns(opts: &TimerOptions) -> u64 {
    (opts.interval.as_nanos() as u64).clamp(100_000, 1_000_000)
}

/// Run the measurement.
pub fn run(
    m: &MeasureTimer,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&[LiveStat]),
) -> Result<MeasuredTimer, HostError> {
    // Refuse bad options before anything on the host changes.
    m.timer.validate(&timer::online_cpus()?)?;
    let mut warnings = Vec::new();
    // The load first: if starting the trace fails, dropping the load stops it.
    let load = m.load.as_deref().map(Load::start).transpose()?;
    let trace = if m.trace {
        let detail = if m.trace_sched || m.timer.break_us.is_some() {
            TraceDetail::Scheduler
        } else {
            TraceDetail::Timer
        };
        match TimerTrace::start(
            &m.timer.cpus,
            m.buffer_kb,
            account_window_ns(&m.timer),
            detail,
        ) {
            Ok(t) => Some(t),
            Err(e @ (HostError::NotRoot(_) | HostError::NoTracefs { .. })) => {
                warnings.push(format!(
                    "no IRQ/thread split and no analysis of the worst wake-up: {e}"
                ));
                None
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let run = timer::measure_timer(&m.timer, stop, progress);
    // Stop tracing first, so the events around a late wake-up are not pushed out of the
    // per-CPU window while the load is being stopped.
    let traced = trace.map(TimerTrace::finish).transpose();
    if let Some(w) = load.and_then(Load::stop) {
        warnings.push(w);
    }
    let traced = traced?;
    let run = run?;
    for c in &run.per_cpu {
        if traced.is_some()
            && c.loops > 0
            && traced
                .as_ref()
                .and_then(|t| t.irq_latency(c.cpu, c.tid))
                .is_none()
        {
            warnings.push(format!(
                "no IRQ latency for CPU {}: its timer expiries were not seen in the trace \
                 (did the kernel migrate the timer to another CPU?)",
                c.cpu
            ));
        }
    }
    if let Some(t) = &traced {
        warnings.extend(t.idle_warnings());
    }
    warnings.extend(run.warnings.iter().cloned());
    Ok(build(m, &run, traced.as_ref(), warnings))
}

/// The worst wake-up of the run (the CPU whose thread saw the largest latency), analysed from
/// the window its CPU's trace kept.
fn worst_wakeup(opts: &TimerOptions, run: &TimerRun, t: &TimerTraceResult) -> Option<Spike> {
    let c = run
        .per_cpu
        .iter()
        .filter(|c| c.loops > 0)
        .max_by_key(|c| c.histogram.max_ns())?;
    let worst_ns = c.histogram.max_ns()?;
    let w = t.worst_of(
        c.cpu,
        c.tid,
        worst_ns,
        c.worst.map(|at| at.expiry_mono_ns),
        opts.interval.as_nanos() as u64,
        account_window_ns(opts),
    )?;
    let mut analysis = w.account.analysis;
    // The thread counted its own wake-ups; the trace's index counts periods from its first
    // sleep (overruns included), and only when that sleep is in the trace.
    let loop_index = c.worst.map(|at| at.loop_index).or(w.loop_index);
    if loop_index.is_none() {
        analysis.notes.push(
            "its index in the run is unknown (the thread's first sleep is not in the trace); \
             0 is shown"
                .into(),
        );
    }
    Some(Spike {
        kind: SpikeKind::Worst,
        cpu: c.cpu,
        loop_index: loop_index.unwrap_or(0),
        latency_ns: w.latency_ns,
        irq_latency_ns: w.account.irq_latency_ns,
        events: w.account.events,
        analysis: Some(analysis),
    })
}

fn build(
    m: &MeasureTimer,
    run: &TimerRun,
    traced: Option<&TimerTraceResult>,
    warnings: Vec<String>,
) -> MeasuredTimer {
    let opts = &m.timer;
    let mut metrics = Vec::new();
    let mut counters = Vec::new();
    let mut histograms = Vec::new();
    for c in &run.per_cpu {
        let cpu = Some(c.cpu);
        histograms.push(HistogramData {
            cpu,
            ..HistogramData::of("thread_latency", &c.histogram)
        });
        metrics.push(Metric {
            cpu,
            ..Metric::new(
                "thread_latency",
                "timer expiry (absolute clock_nanosleep, CLOCK_MONOTONIC) to the measuring \
                 thread running: cyclictest's latency",
                c.histogram.summary(),
            )
        });
        if let Some(h) = traced.and_then(|t| t.irq_latency(c.cpu, c.tid)) {
            histograms.push(HistogramData {
                cpu,
                ..HistogramData::of("irq_latency", h)
            });
            metrics.push(Metric {
                cpu,
                ..Metric::new(
                    "irq_latency",
                    "timer expiry to its hrtimer callback running in the timer interrupt \
                     (trace events hrtimer_start, hrtimer_expire_entry)",
                    h.summary(),
                )
            });
        }
        counters.push(Counter {
            cpu,
            ..Counter::new("wakeups", c.loops)
        });
        counters.push(Counter {
            cpu,
            ..Counter::new("overruns", c.overruns)
        });
    }
    if let Some(t) = traced {
        counters.push(Counter::new(
            "trace_events",
            t.per_cpu.iter().map(|(_, c)| c.events).sum(),
        ));
        counters.push(Counter::new(
            "trace_events_lost",
            t.lost_events.iter().sum(),
        ));
    }
    let spike = match (run.stopped_by, traced) {
        (
            StopReason::Break {
                cpu,
                tid,
                loop_index,
                latency_ns,
                expiry_mono_ns,
            },
            _,
        ) => {
            let account = traced.and_then(|t| {
                t.account_of(
                    cpu,
                    tid,
                    expiry_mono_ns,
                    latency_ns,
                    account_window_ns(opts),
                )
            });
            Some(Spike {
                kind: SpikeKind::Break,
                cpu,
                loop_index,
                latency_ns,
                irq_latency_ns: account.as_ref().and_then(|a| a.irq_latency_ns),
                events: account.as_ref().map_or(Vec::new(), |a| a.events.clone()),
                analysis: account.map(|a| a.analysis),
            })
        }
        (_, Some(t)) => worst_wakeup(opts, run, t),
        (_, None) => None,
    };
    let stopped = match run.stopped_by {
        StopReason::Completed => "completed".to_string(),
        StopReason::Signal => format!(
            "stopped by {}",
            crate::signals::received().unwrap_or("a signal")
        ),
        StopReason::Break { .. } => {
            format!("stopped above --break-us {}", opts.break_us.unwrap_or(0))
        }
    };
    let mut config = vec![
        (
            "kernel".to_string(),
            crate::pci::read_trimmed(std::path::Path::new("/proc/sys/kernel/osrelease"))
                .unwrap_or_else(|| "?".into()),
        ),
        ("cpus".into(), timer::format_cpu_list(&opts.cpus)),
        (
            "interval".into(),
            format!("{} us", opts.interval.as_micros()),
        ),
        (
            "priority".into(),
            match opts.policy {
                timer::Policy::Other => "SCHED_OTHER".to_string(),
                p if run.per_cpu.iter().all(|c| c.policy_applied) => {
                    format!("{} {}", p.name(), opts.priority)
                }
                p => format!("SCHED_OTHER ({} {} was refused)", p.name(), opts.priority),
            },
        ),
        (
            "PM QoS request".into(),
            if run.pm_qos_held {
                format!("{} us on /dev/cpu_dma_latency", opts.latency_us)
            } else {
                format!(
                    "none ({} us on /dev/cpu_dma_latency was refused)",
                    opts.latency_us
                )
            },
        ),
        (
            "duration".into(),
            format!("{:.1} s, {stopped}", run.duration.as_secs_f64()),
        ),
    ];
    if let Some(l) = &m.load {
        config.push(("load".into(), l.clone()));
    }
    MeasuredTimer {
        report: RunReport {
            source: "host".into(),
            title: "Timer wake-up latency on this host (cyclictest's method)".into(),
            config,
            metrics,
            counters,
            trace: Vec::new(),
            spike,
            histograms,
            warnings,
            series: Vec::new(),
        },
        thread_histograms: run
            .per_cpu
            .iter()
            .map(|c| (c.cpu, c.histogram.clone()))
            .collect(),
    }
}
