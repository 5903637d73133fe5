//! Seed 003's threaded kernels (2.6.29-rt: IRQ threads, softirq threads, PREEMPT_RT) on the
//! flood scenario: where the handlers run, which priority gets the CPU under a flood that
//! saturates it, and the fast paths against the step-by-step reference.

use irqlab_sim::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const FLOOD: &str = "experiments/seed003/flood.toml";

/// The "threaded IRQs only" kernel: the -rt patch with kernel preemption but not PREEMPT_RT.
const THREADED: [&str; 2] = [
    "kernel.threads.enabled=true",
    "kernel.sched.preemption=preempt",
];
/// The PREEMPT_RT kernel: softirq handlers in threads stay preemptible.
const RT: [&str; 2] = ["kernel.threads.enabled=true", "kernel.sched.preemption=rt"];
/// cyclictest below the IRQ threads (the seed's LOW run; its priority is not given).
const LOW: &str = "cyclictest.priority=40";
/// Per-frame work that saturates the 800 MHz core at a 5 us gap on both ports (inside the
/// kernel file's range of 450-1800 instructions).
const HEAVY: &str = "kernel.net.rx_packet=1400";

fn load(gap_us: f64, extra: &[&str]) -> Scenario {
    let mut set = vec![
        format!("device.0.nic.gap_us={gap_us}"),
        format!("device.1.nic.gap_us={gap_us}"),
    ];
    set.extend(extra.iter().map(|s| s.to_string()));
    Scenario::load(repo().join(FLOOD), &set).expect("scenario loads")
}

fn flood(gap_us: f64, extra: &[&str], loops: u64) -> Outcome {
    load(gap_us, extra).run(3, loops, 0).expect("runs")
}

fn with<'a>(kernel: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    kernel.iter().chain(more).copied().collect()
}

#[test]
fn a_threaded_kernel_runs_the_handler_in_its_irq_thread_switching_to_it_per_interrupt() {
    // At a 10 us gap the host keeps up in both kernels and the controllers interrupt at the
    // same throttled rate. A threaded interrupt from idle adds the switch to its IRQ thread
    // and back (2); one that comes while the other port's thread runs adds only the switch
    // from that thread to its own (1). The two controllers' throttle timers run in step, so
    // half their interrupts come as such pairs: 1.5 per interrupt. And each IRQ thread wakes
    // sirq-net-rx, which runs when it is done (2.6.29.4-rt17: no IRQ thread runs NET_RX
    // itself): one switch more per interrupt, 2.5 in all.
    let vanilla = flood(10.0, &[], 1000);
    let threaded = flood(10.0, &THREADED, 1000);
    let irqs = |o: &Outcome| o.nics.iter().map(|n| n.interrupts).sum::<u64>();
    // Both stop with the traffic; the last interval may hold one interrupt more in one.
    assert!(irqs(&vanilla).abs_diff(irqs(&threaded)) <= 2);
    let extra = threaded.tasks.context_switches - vanilla.tasks.context_switches;
    let per_irq = extra as f64 / irqs(&threaded) as f64;
    assert!(
        (2.45..=2.55).contains(&per_irq),
        "{per_irq} more switches per interrupt"
    );
    for n in &threaded.nics {
        assert_eq!(n.dropped, 0, "{n:?}");
    }
}

#[test]
fn under_a_saturating_flood_a_task_below_the_irq_threads_never_runs_until_it_is_stopped() {
    // The FIFO-50 threads never sleep while NAPI polls (and when their class is throttled,
    // cyclictest at 40 is throttled with them), so cyclictest never completes a loop before it
    // is stopped with the traffic: the threaded LOW table printed no min and no avg at 5 us.
    let o = flood(5.0, &with(&THREADED, &[LOW, HEAVY]), 4000);
    assert_eq!(o.cyclictest.count(), 0);
    assert!(o.tasks.rt_throttles >= 1);
}

#[test]
fn above_the_irq_threads_preempt_rt_serves_cyclictest_where_threaded_irqs_only_hold_it_off() {
    // cyclictest at 80, woken from the timer's hard interrupt. Under PREEMPT_RT the IRQ
    // thread's softirq work is preemptible, so it runs within microseconds; with threaded IRQs
    // only the merged softirq loop holds the preempt count until no softirq is pending, which
    // under a saturating flood lasts hundreds of microseconds.
    let rt = flood(5.0, &with(&RT, &[HEAVY]), 1000);
    let threaded = flood(5.0, &with(&THREADED, &[HEAVY]), 1000);
    let rt_max = rt.cyclictest.max_ns().unwrap();
    let threaded_max = threaded.cyclictest.max_ns().unwrap();
    assert!(rt_max < 20_000, "PREEMPT_RT max {rt_max} ns");
    assert!(
        threaded_max > 300_000,
        "threaded-only max {threaded_max} ns"
    );
}

#[test]
fn every_irq_thread_wakes_sirq_net_rx_whatever_the_softirq_threads_priority() {
    // 2.6.29.4-rt17: `___do_softirq(same_prio_only = 1)` has no caller, so no IRQ thread runs
    // NET_RX itself: each interrupt wakes sirq-net-rx at 50 (rt13) as at 49 (rt21), and the
    // switches per interrupt are the same to within the order in which equal and lower
    // priorities run.
    let rt13 = flood(10.0, &THREADED, 1000);
    let rt21 = flood(
        10.0,
        &with(&THREADED, &["kernel.threads.softirq_priority=49"]),
        1000,
    );
    let irqs = |o: &Outcome| o.nics.iter().map(|n| n.interrupts).sum::<u64>() as f64;
    for o in [&rt13, &rt21] {
        let per_irq = o.tasks.context_switches as f64 / irqs(o);
        assert!(per_irq > 2.0, "{per_irq} switches per interrupt");
    }
    let (a, b) = (
        rt13.tasks.context_switches as f64,
        rt21.tasks.context_switches as f64,
    );
    assert!((a / b - 1.0).abs() < 0.02, "{a} against {b}");
}

#[test]
fn a_sleeper_deferred_to_the_hrtimer_softirq_waits_for_its_thread() {
    // The same kernel with the sleeper's hrtimer run in sirq-hrtimer: an extra switch per
    // loop and a later wake-up at the least.
    let hard = flood(10.0, &RT, 1000);
    let soft = flood(
        10.0,
        &with(&RT, &["kernel.threads.hrtimer_wakeup=softirq"]),
        1000,
    );
    assert!(soft.cyclictest.min_ns() > hard.cyclictest.min_ns());
    assert!(soft.tasks.context_switches > hard.tasks.context_switches);
}

#[test]
fn threaded_fast_paths_equal_the_reference() {
    for kernel in [&THREADED[..], &RT[..]] {
        for extra in [
            &[][..],
            &["kernel.threads.softirq_priority=49", LOW][..],
            &["kernel.threads.hrtimer_wakeup=softirq", HEAVY][..],
        ] {
            let s = load(6.0, &with(kernel, extra));
            let fast = s.run_with(4, 200, 0, false).unwrap();
            let strict = s.run_with(4, 200, 0, true).unwrap();
            let what = format!("{kernel:?} {extra:?}");
            assert_eq!(fast.cyclictest, strict.cyclictest, "{what}");
            assert_eq!(fast.nics, strict.nics, "{what}");
            assert_eq!(
                fast.tasks.context_switches, strict.tasks.context_switches,
                "{what}"
            );
        }
    }
}

#[test]
fn a_threaded_kernel_refuses_level_triggered_intx_and_says_what_to_use() {
    let set: Vec<String> = THREADED
        .iter()
        .map(|s| s.to_string())
        .chain(["delivery=ioapic".to_string()])
        .collect();
    let e = Scenario::load(repo().join(FLOOD), &set)
        .and_then(|s| s.run(1, 10, 0))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("delivery") && e.contains("msi"), "{e}");
}

#[test]
fn a_thread_priority_outside_sched_fifo_is_refused_with_the_range() {
    for key in [
        "kernel.threads.irq_priority",
        "kernel.threads.softirq_priority",
    ] {
        for bad in [0, 100] {
            let mut set: Vec<String> = THREADED.iter().map(|s| s.to_string()).collect();
            set.push(format!("{key}={bad}"));
            let e = Scenario::load(repo().join(FLOOD), &set)
                .and_then(|s| s.run(1, 10, 0))
                .expect_err("refused")
                .to_string();
            assert!(e.contains(key) && e.contains("1-99"), "{e}");
        }
    }
}

#[test]
fn past_its_bandwidth_the_rt_class_is_throttled_and_the_nic_loses_what_its_buffers_cannot_hold() {
    // PREEMPT_RT, cyclictest at 80 and both ports at 5 us: the IRQ and softirq threads want
    // more than 950 ms of every second (kernel/sched_rt.c `sched_rt_runtime_exceeded`), so the
    // whole class waits for the period's end, cyclictest with it (the table's max 50,153 us),
    // and the controllers drop what their ring and packet buffer cannot hold meanwhile.
    let o = flood(5.0, &with(&RT, &[HEAVY]), 4000);
    assert!(o.tasks.rt_throttles >= 1, "{:?}", o.tasks);
    let max = o.cyclictest.max_ns().unwrap();
    assert!((30_000_000..=51_000_000).contains(&max), "max {max} ns");
    for n in &o.nics {
        let lost = n.dropped as f64 / n.frames as f64;
        assert!((0.02..0.06).contains(&lost), "{n:?}");
    }
    // sched_rt_runtime_us = -1: no limit, no throttle, and at this gap the threads keep up.
    let o = flood(
        5.0,
        &with(&RT, &[HEAVY, "kernel.sched.rt_runtime_us=-1"]),
        4000,
    );
    assert_eq!(o.tasks.rt_throttles, 0);
    assert!(o.cyclictest.max_ns().unwrap() < 100_000);
    assert!(o.nics.iter().all(|n| n.dropped == 0), "{:?}", o.nics);
}

#[test]
fn on_the_threaded_only_kernel_a_sleeper_past_due_waits_for_the_tick_and_never_catches_up() {
    // Once cyclictest (at 80) is a whole interval late, its next expiry is already past when
    // it sleeps: 2.6.29.4-rt17 without PREEMPT_RT leaves that timer queued until the next
    // timer interrupt (the tick, 4 ms at HZ 250), so each loop adds 3.5 ms to the lag and it
    // never recovers. With mainline's behaviour (`past_due = run`) the same throttle costs one
    // 50 ms lag that cyclictest works off.
    let stuck = flood(5.0, &with(&THREADED, &[HEAVY]), 4000);
    let run = flood(
        5.0,
        &with(&THREADED, &[HEAVY, "kernel.threads.past_due=run"]),
        4000,
    );
    let stuck_max = stuck.cyclictest.max_ns().unwrap();
    let run_max = run.cyclictest.max_ns().unwrap();
    assert!(stuck.tasks.rt_throttles >= 1 && run.tasks.rt_throttles >= 1);
    assert!(stuck_max > 500_000_000, "next-event: max {stuck_max} ns");
    assert!(run_max < 60_000_000, "run: max {run_max} ns");
    assert!(
        stuck.cyclictest.count() < run.cyclictest.count() / 2,
        "one loop per tick once behind"
    );
}
