//! `irqlab measure timer` and `irqlab measure irqs`: measurements on this host.

use crate::args::{IrqsArgs, TimerArgs};
use crate::made::{write_json, Invocation};
use crate::ui::{print, LiveLines};
use anyhow::{Context, Result};
use irqlab_report as report;
use irqlab_report::json::Kind;
use serde::Serialize;

/// The settings of a timer measurement, as its JSON records them.
#[derive(Serialize)]
struct TimerSettings<'a> {
    cpus: &'a [u32],
    policy: irqlab_host::timer::Policy,
    priority: i32,
    /// The PM QoS request on /dev/cpu_dma_latency, us.
    latency_us: i32,
    interval_us: u64,
    /// `--duration`, in seconds.
    duration_s: Option<f64>,
    loops: Option<u64>,
    break_us: Option<u64>,
    load: Option<&'a str>,
    trace: bool,
    trace_sched: bool,
    buffer_kb: u32,
    histogram_max_us: u64,
}

pub fn timer(a: TimerArgs, inv: &Invocation) -> Result<()> {
    use irqlab_host::timer::{self, Stop, TimerOptions};
    let TimerArgs {
        cpus,
        policy,
        priority,
        interval_us,
        duration,
        latency,
        quiet,
        loops,
        break_us,
        load,
        trace,
        trace_sched,
        no_trace: _,
        buffer_kb,
        json,
        histogram_out,
        plot,
        histogram_max_us,
    } = a;
    let cpus = match cpus {
        Some(list) => timer::parse_cpu_list(&list).map_err(|e| anyhow::anyhow!("--cpus: {e}"))?,
        None => timer::online_cpus()?,
    };
    let stop_after = match (duration, loops) {
        (Some(d), _) => Stop::Duration(d),
        (None, Some(n)) => Stop::Loops(n),
        (None, None) => Stop::UntilStopped,
    };
    let mut opts = TimerOptions::new(cpus.clone(), stop_after);
    opts.policy = policy;
    opts.priority = match (policy.is_realtime(), priority) {
        (_, Some(p)) => p,
        (true, None) => timer::DEFAULT_PRIORITY,
        (false, None) => 0,
    };
    opts.latency_us = latency;
    opts.interval = std::time::Duration::from_micros(interval_us);
    opts.break_us = break_us;
    // --break-us accounts for its wake-up with the scheduler's events; either traces.
    let trace_sched = trace_sched || break_us.is_some();
    let m = irqlab_host::timer_report::MeasureTimer {
        timer: opts,
        trace: trace || trace_sched,
        trace_sched,
        buffer_kb,
        load: load.clone(),
    };
    super::check_outputs(json.as_deref(), plot.as_deref())?;
    if let Some(p) = &histogram_out {
        super::check_output("--histogram-out", p)?;
    }
    m.timer.validate(&timer::online_cpus()?)?;
    super::host::clean_up_before_measuring();
    let mut beside = Concurrent::default();
    beside.look();
    let stop = irqlab_host::signals::stop_flag().context("installing signal handlers")?;
    let mut live = LiveLines::new(!quiet);
    let mut measured = irqlab_host::timer_report::run(&m, &stop, &mut |s| {
        live.show(s);
        beside.look();
    })?;
    live.finish();
    beside.look();
    measured.report.warnings.extend(beside.warning());
    let made = inv.made(
        &TimerSettings {
            cpus: &cpus,
            policy,
            priority: m.timer.priority,
            latency_us: latency,
            interval_us,
            duration_s: duration.map(|d| d.as_secs_f64()),
            loops,
            break_us,
            load: load.as_deref(),
            trace: m.trace,
            trace_sched: m.trace_sched,
            buffer_kb,
            histogram_max_us,
        },
        Some(irqlab_host::host_info::collect(std::path::Path::new("/"))),
    );
    // The result first: a file that cannot be written must not hide it.
    print(&report::run_text(&measured.report))?;
    super::warn_all(&measured.report.warnings);
    if let Some(path) = &json {
        write_json(path, Kind::MeasureTimer, &made, &measured.report).with_context(|| "--json")?;
    }
    if let Some(path) = &histogram_out {
        let hists: Vec<&irqlab_stats::LatencyHistogram> =
            measured.thread_histograms.iter().map(|(_, h)| h).collect();
        let text = report::cyclictest::cyclictest_histogram(&hists, histogram_max_us);
        report::write_atomic(path, text.as_bytes()).with_context(|| "--histogram-out")?;
        crate::ui::wrote(std::slice::from_ref(path));
    }
    if let Some(dir) = &plot {
        // A measurement is never repeated exactly: its figures are named by its start time, so
        // no later run overwrites them.
        let name = format!("timer-{}", inv.stamp());
        crate::ui::wrote(
            &report::plot::plot_run(&measured.report, dir, &name).with_context(|| "--plot")?,
        );
    }
    Ok(())
}

/// The settings of an interrupt activity measurement, as its JSON records them.
#[derive(Serialize)]
struct IrqsSettings {
    duration_s: f64,
    buffer_kb: u32,
}

pub fn irqs(a: IrqsArgs, inv: &Invocation) -> Result<()> {
    let IrqsArgs {
        duration,
        buffer_kb,
        json,
    } = a;
    super::check_outputs(json.as_deref(), None)?;
    super::host::clean_up_before_measuring();
    let mut beside = Concurrent::default();
    beside.look();
    let stop = irqlab_host::signals::stop_flag().context("installing signal handlers")?;
    let opts = irqlab_host::irqs::IrqsOptions {
        duration,
        buffer_kb,
    };
    let r = irqlab_host::irqs::measure_irqs(&opts, &stop)?;
    beside.look();
    print(&report::irq_activity_text(&r))?;
    if let Some(w) = beside.warning() {
        crate::ui::warning(&w);
    }
    if let Some(path) = &json {
        let made = inv.made(
            &IrqsSettings {
                duration_s: duration.as_secs_f64(),
                buffer_kb,
            },
            Some(irqlab_host::host_info::collect(std::path::Path::new("/"))),
        );
        write_json(path, Kind::MeasureIrqs, &made, &r).with_context(|| "--json")?;
    }
    Ok(())
}

/// The other irqlab measurements seen at this one's start and end (`state::measuring_now`):
/// each adds its threads, trace events and load to the other's latencies, so each is told.
#[derive(Default)]
struct Concurrent(Vec<irqlab_host::state::Concurrent>);

impl Concurrent {
    fn look(&mut self) {
        for c in irqlab_host::state::measuring_now(&irqlab_host::state::StateDir::locate()) {
            if !self.0.contains(&c) {
                self.0.push(c);
            }
        }
    }

    /// The warning, if another measurement ran beside this one.
    fn warning(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            format!(
                "another irqlab measured at the same time ({}): its timer threads, trace events \
                 and load add to this measurement's latencies, and this one's to its; measure \
                 one at a time for figures you compare",
                self.0
                    .iter()
                    .map(|c| format!("pid {}: '{}'", c.owner.pid, c.command))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
    }
}
