//! e1000e's watchdog: a timer-wheel timer every two seconds whose work runs in `events/0`
//! and reads the 35 statistics registers across the PCIe link. On an idle machine it is the
//! one process-context stretch of kernel code; whether cyclictest waits for it is the kernel's
//! preemption model.

use irqlab_sim::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(set: &[&str], seed: u64, strict: bool) -> Outcome {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let s = Scenario::load(repo().join("experiments/seed003/idle.toml"), &set).expect("loads");
    // 2.5 s: every watchdog expires at least once.
    s.run_with(seed, 5000, 0, strict).expect("runs")
}

const RT: [&str; 2] = ["kernel.threads.enabled=true", "kernel.sched.preemption=rt"];

fn max_us(o: &Outcome) -> f64 {
    o.cyclictest.max_ns().unwrap() as f64 / 1e3
}

#[test]
fn the_watchdog_reads_every_statistics_register_and_interrupts_without_traffic() {
    let o = run(&[], 1, false);
    let works = o.tasks.works_run;
    assert!(works >= 2, "both adapters' watchdogs ran: {works}");
    // Each work reads 35 registers; each ICS interrupt then reads ICR, and its poll's
    // e1000_irq_enable reads STATUS.
    let interrupts: u64 = o.nics.iter().map(|n| n.interrupts).sum();
    assert_eq!(interrupts, works, "one ICS interrupt per watchdog run");
    assert_eq!(o.counters.mmio_reads, 35 * works + 2 * interrupts);
}

#[test]
fn a_wake_up_inside_the_watchdog_waits_for_it_without_kernel_preemption_and_not_with_rt() {
    // The run's seed draws cyclictest's phase against the whole seconds the watchdog runs on;
    // find one whose wake-up falls inside the work.
    let (seed, vanilla) = (1..60)
        .map(|s| (s, run(&[], s, false)))
        .find(|(_, o)| max_us(o) > 20.0)
        .expect("some phase puts a wake-up inside the watchdog's reads");
    // PREEMPT_NONE: cyclictest gets the CPU when events/0 sleeps, after its 35 (or 70) reads
    // of about a microsecond each.
    assert!(max_us(&vanilla) < 150.0, "max {} us", max_us(&vanilla));
    // PREEMPT_RT at the same phase: the wake-up preempts events/0 at once.
    let rt = run(&RT, seed, false);
    assert!(max_us(&rt) < 10.0, "max {} us", max_us(&rt));
    assert!(rt.tasks.works_run >= 2);
    // The fast paths equal the reference in both, with the watchdog in the way.
    for set in [&[][..], &RT[..]] {
        let (fast, strict) = (run(set, seed, false), run(set, seed, true));
        assert_eq!(fast.cyclictest, strict.cyclictest, "{set:?}");
        assert_eq!(fast.counters.mmio_reads, strict.counters.mmio_reads);
    }
}
