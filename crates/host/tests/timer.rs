//! `irqlab measure timer` on this host. Runs with or without root: without it the measurement
//! still runs and says what it could not do. Each run is short (0.3 s at most), and the
//! assertions leave wide margins, so a busy machine does not fail them.

use irqlab_host::timer::{
    measure_timer, online_cpus, LiveStat, Stop, StopReason, TimerOptions, WARN_NO_DMA_LATENCY,
    WARN_NO_FIFO, WARN_NO_MLOCK,
};
use irqlab_host::HostError;
use nix::sched::sched_getaffinity;
use nix::unistd::Pid;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The tests of this file take turns, so that what one checks after its run (memory unlocked,
/// no PM QoS request held) is not another's run in progress.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Locked memory of this process in kB (`VmLck`).
fn locked_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmLck:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Open file descriptors of this process on `/dev/cpu_dma_latency`.
fn qos_requests_held() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.as_os_str() == "/dev/cpu_dma_latency")
        .count()
}

/// CPU 0, or the first CPU this process may use when a cpuset excludes CPU 0.
fn test_cpu() -> u32 {
    let allowed = sched_getaffinity(Pid::from_raw(0)).unwrap();
    let online = online_cpus().unwrap();
    online
        .into_iter()
        .find(|&c| allowed.is_set(c as usize).unwrap_or(false))
        .expect("no online CPU in this process's affinity mask")
}

fn no_stop() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

#[test]
fn a_short_run_measures_one_wakeup_per_interval() {
    let _turn = one_at_a_time();
    let locked_before_kb = locked_kb();
    let cpu = test_cpu();
    let mut opts = TimerOptions::new(vec![cpu], Stop::Duration(Duration::from_millis(300)));
    opts.interval = Duration::from_millis(1);
    let mut reports: Vec<Vec<LiveStat>> = Vec::new();
    let mut during = None;
    let run = measure_timer(&opts, &no_stop(), &mut |live| {
        during.get_or_insert((locked_kb(), qos_requests_held()));
        reports.push(live.to_vec());
    })
    .unwrap();
    for w in &run.warnings {
        eprintln!("warning: {w}");
    }
    // Host and process settings are held during the run (when permitted) and undone after it.
    let (locked_during_kb, qos_during) = during.unwrap();
    let warned = |prefix: &str| run.warnings.iter().any(|w| w.starts_with(prefix));
    assert_eq!(locked_during_kb > 0, !warned(WARN_NO_MLOCK));
    assert_eq!(qos_during, usize::from(!warned(WARN_NO_DMA_LATENCY)));
    assert_eq!(locked_kb(), locked_before_kb);
    assert_eq!(qos_requests_held(), 0);

    assert_eq!(run.stopped_by, StopReason::Completed);
    assert_eq!(run.per_cpu.len(), 1);
    let result = &run.per_cpu[0];
    assert_eq!(result.cpu, cpu);
    // Deadlines 1 ms apart for 0.3 s: each passed deadline is a wake-up or, after a late one,
    // skipped and counted as an overrun. The run stops at the first wake-up at or after 0.3 s,
    // so the deadlines counted plus the latest wake-up's lateness reach 0.3 s (a stalled host
    // ends with one very late wake-up), and never more than the 300 there are.
    let deadlines = result.loops + result.overruns;
    let max_late_ns = result.histogram.max_ns().unwrap();
    assert!(
        result.loops > 0
            && deadlines <= 301
            && deadlines * 1_000_000 + max_late_ns + 1_000_000 >= 300_000_000,
        "loops {} + overruns {}, latest {max_late_ns} ns",
        result.loops,
        result.overruns
    );
    assert_eq!(result.histogram.count(), result.loops);
    let min_ns = result.histogram.min_ns().unwrap();
    let max_ns = result.histogram.max_ns().unwrap();
    assert!(min_ns > 0, "a wake-up cannot come before its deadline");
    assert!(min_ns <= max_ns);
    if !result.policy_applied {
        assert!(run.warnings.iter().any(|w| w == WARN_NO_FIFO));
    }
    assert!(
        run.duration >= Duration::from_millis(290),
        "{:?}",
        run.duration
    );

    // At least the final report, with this run's final figures.
    let last = reports.last().expect("progress is reported at the end");
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].cpu, cpu);
    assert_eq!(last[0].loops, result.loops);
    assert_eq!(last[0].max_ns, Some(max_ns));
    assert!(last[0].tid > 0);

    let text = irqlab_report::cyclictest::cyclictest_histogram(&[&result.histogram], 100);
    let rows = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    assert_eq!(rows.count(), 100);
    let field = |label: &str| -> u64 {
        let line = text.lines().find(|l| l.starts_with(label)).unwrap();
        line[label.len()..].trim().parse().unwrap()
    };
    assert_eq!(
        field("# Total:") + field("# Histogram Overflows:"),
        result.loops
    );
    assert_eq!(field("# Max Latencies:"), max_ns / 1000);
}

#[test]
fn a_latency_above_break_us_stops_every_thread() {
    let _turn = one_at_a_time();
    // Two CPUs when there are two, to see the other thread stop too.
    let allowed = sched_getaffinity(Pid::from_raw(0)).unwrap();
    let mut cpus: Vec<u32> = online_cpus()
        .unwrap()
        .into_iter()
        .filter(|&c| allowed.is_set(c as usize).unwrap_or(false))
        .take(2)
        .collect();
    if cpus.is_empty() {
        cpus.push(test_cpu());
    }
    let mut opts = TimerOptions::new(cpus.clone(), Stop::Duration(Duration::from_millis(300)));
    opts.interval = Duration::from_millis(1);
    // No wake-up on Linux takes under 1 us from deadline to user space, so the first breaks.
    opts.break_us = Some(1);
    let run = measure_timer(&opts, &no_stop(), &mut |_| {}).unwrap();

    let StopReason::Break {
        cpu,
        loop_index,
        latency_ns,
        expiry_mono_ns,
        ..
    } = run.stopped_by
    else {
        panic!("expected a break, got {:?}", run.stopped_by);
    };
    assert!(cpus.contains(&cpu));
    assert!(latency_ns > 1_000);
    assert!(expiry_mono_ns > 0);
    let breaking = run.per_cpu.iter().find(|r| r.cpu == cpu).unwrap();
    // The breaking wake-up is recorded and is that thread's last.
    assert_eq!(breaking.loops, loop_index + 1);
    assert!(breaking.histogram.max_ns().unwrap() >= latency_ns);
    // Every thread stopped long before the 300 loops of the full duration.
    for r in &run.per_cpu {
        assert!(r.loops < 150, "CPU {} ran {} loops", r.cpu, r.loops);
    }
}

#[test]
fn a_loop_count_and_the_stop_flag_end_the_run() {
    let _turn = one_at_a_time();
    let cpu = test_cpu();
    let mut opts = TimerOptions::new(vec![cpu], Stop::Loops(20));
    opts.interval = Duration::from_micros(500);
    let run = measure_timer(&opts, &no_stop(), &mut |_| {}).unwrap();
    assert_eq!(run.stopped_by, StopReason::Completed);
    assert_eq!(run.per_cpu[0].loops, 20);

    // A flag already set (Ctrl-C before the first wake-up): nothing is measured.
    opts.stop = Stop::UntilStopped;
    let stop = Arc::new(AtomicBool::new(true));
    let run = measure_timer(&opts, &stop, &mut |_| {}).unwrap();
    assert_eq!(run.stopped_by, StopReason::Signal);
    assert_eq!(run.per_cpu[0].loops, 0);
    assert!(run.per_cpu[0].histogram.is_empty());
}

#[test]
fn an_offline_cpu_is_refused_before_anything_changes() {
    let _turn = one_at_a_time();
    let opts = TimerOptions::new(vec![test_cpu(), 60_000], Stop::Loops(1));
    match measure_timer(&opts, &no_stop(), &mut |_| panic!("must not start")) {
        Err(HostError::Invalid(m)) => {
            assert!(
                m.starts_with("--cpus: CPU 60000 is not online (online: "),
                "{m}"
            )
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}
