//! Tasks, the scheduler and high-resolution timers: cyclictest as a task on a kernel with
//! `[sched]` (seed 003's kernels). These tests pin where each cost sits on the wake-up path,
//! that the fast paths equal the step-by-step reference, and cyclictest's 2009 arithmetic.

use irqlab_sim::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const IDLE: &str = "experiments/seed003/idle.toml";

fn load(set: &[&str]) -> Scenario {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    Scenario::load(repo().join(IDLE), &set).expect("scenario loads")
}

fn run(set: &[&str], loops: u64) -> Outcome {
    load(set).run(3, loops, 0).expect("runs")
}

/// Nanoseconds per instruction at the seed's 800 MHz and the platform's 1.4 cycles per
/// instruction.
const NS_PER_INSTRUCTION: f64 = 1.4 / 0.8;

fn min_ns(o: &Outcome) -> f64 {
    o.cyclictest.min_ns().unwrap() as f64
}

#[test]
fn each_path_costs_the_wake_up_once_or_not_at_all() {
    // 1,000 more instructions in a path on the way from the timer's expiry to cyclictest's
    // clock read add 1,750 ns to the latency, once; paths before the sleep add nothing.
    let base = min_ns(&run(&[], 200));
    for (key, on_path) in [
        ("kernel.sched.schedule", true),
        ("kernel.sched.try_to_wake_up", true),
        ("kernel.sched.hrtimer_interrupt", true),
        ("kernel.sched.clock_gettime", true),
        ("kernel.sched.nanosleep", false),
        ("cyclictest.loop_instructions", false),
    ] {
        let k = load(&[]);
        let now = match key {
            "kernel.sched.schedule" => k.kernel.linux().sched.as_ref().unwrap().schedule,
            "kernel.sched.try_to_wake_up" => {
                k.kernel.linux().sched.as_ref().unwrap().try_to_wake_up
            }
            "kernel.sched.hrtimer_interrupt" => {
                k.kernel.linux().sched.as_ref().unwrap().hrtimer_interrupt
            }
            "kernel.sched.clock_gettime" => k.kernel.linux().sched.as_ref().unwrap().clock_gettime,
            "kernel.sched.nanosleep" => k.kernel.linux().sched.as_ref().unwrap().nanosleep,
            _ => k.file.cyclictest.as_ref().unwrap().loop_instructions,
        };
        let set = format!("{key}={}", now + 1000);
        let moved = min_ns(&run(&[set.as_str()], 200)) - base;
        let expected = if on_path {
            1000.0 * NS_PER_INSTRUCTION
        } else {
            0.0
        };
        assert!(
            (moved - expected).abs() < 2.0,
            "{key}: moved {moved} ns, expected {expected}"
        );
    }
}

#[test]
fn an_idle_loop_switches_twice_and_expires_one_timer_per_loop_and_per_tick() {
    let o = run(&[], 2000);
    let loops = 2000 + 10; // the warm-up loops run too
    assert_eq!(o.cyclictest.count(), 2000);
    // idle -> cyclictest at each wake-up, cyclictest -> idle at each sleep; four at the
    // start: idle -> cyclictest (FIFO first), cyclictest sleeps -> ksoftirqd and events/0,
    // which find nothing to do and sleep -> idle; and two for each wake-up of events/0 by the
    // NICs' watchdogs (idle -> events/0 -> idle), which runs one work, or both when the two
    // timers expire on the same second.
    let w = o.tasks.works_run;
    assert!(w >= 1, "the watchdogs ran within the second");
    let switches = (o.tasks.context_switches)
        .checked_sub(2 * loops + 4)
        .expect("at least the loops' switches");
    assert!(
        (w..=2 * w).contains(&switches) && switches.is_multiple_of(2),
        "{switches} switches beyond the loops' for {w} works"
    );
    // And the RT bandwidth's period timer, once a second (kernel/sched.c
    // `sched_rt_period_timer`): once in this run of just over a second.
    assert_eq!(o.tasks.hrtimers_expired, loops + o.counters.ticks + 1);
    // 250 Hz over loops x 500 us.
    let expected_ticks = loops as f64 * 500e-6 * 250.0;
    assert!((o.counters.ticks as f64 - expected_ticks).abs() <= 2.0);
}

#[test]
fn fast_paths_equal_the_reference_with_tasks_and_timers() {
    // Switches, wake-ups and the one-shot timer's programming happen in the core's loop, ahead
    // of the clock where nothing can intervene: every latency and count must equal the
    // step-by-step run's. The tick at 1000 Hz collides with cyclictest's wake-ups.
    let s = load(&["kernel.tick.hz=1000", "cyclictest.interval_us=333"]);
    let fast = s.run_with(5, 3000, 0, false).unwrap();
    let strict = s.run_with(5, 3000, 0, true).unwrap();
    assert_eq!(fast.cyclictest, strict.cyclictest);
    assert_eq!(fast.tasks.context_switches, strict.tasks.context_switches);
    let (mut f, mut r) = (fast.counters.clone(), strict.counters.clone());
    assert!(f.events < r.events, "the fast paths save events");
    (f.events, r.events) = (0, 0);
    assert_eq!(format!("{f:?}"), format!("{r:?}"));
    assert!(
        fast.cyclictest.max_ns() > fast.cyclictest.min_ns(),
        "the tick's collisions make a spread"
    );
}

#[test]
fn a_scenario_without_a_scheduler_refuses_cyclictest_and_names_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo().canonicalize().unwrap();
    let text = std::fs::read_to_string(repo().join(IDLE))
        .unwrap()
        .replace("../../platforms", &format!("{}/platforms", root.display()))
        .replace(
            "../../kernels/linux-2.6.29-i386-up.toml",
            &format!("{}/kernels/linux-2.6.18-i386-up.toml", root.display()),
        );
    let path = dir.path().join("idle.toml");
    std::fs::write(&path, text).unwrap();
    let e = Scenario::load(&path, &[]).err();
    let msg = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("[sched]") && msg.contains("linux-2.6.29"),
        "{msg}"
    );
}
