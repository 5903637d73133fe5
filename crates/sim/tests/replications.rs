//! Replications on all cores: one replication is the plain run; several split the samples,
//! merge exactly, and give the same result whatever the number of threads.

use irqlab_sim::scenario::{replication_seed, Scenario};
use std::path::PathBuf;

fn scenario(delivery: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../experiments/seed000/ws.toml");
    Scenario::load(&path, &[format!("delivery={delivery}")]).expect("scenario")
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool")
        .install(f)
}

#[test]
fn one_replication_is_the_plain_run() {
    let s = scenario("ioapic");
    let a = s.run(7, 3_000, 0).unwrap();
    let b = s.run_replicated(7, 3_000, 0, 1, None).unwrap();
    assert_eq!(a.isr.summary(), b.isr.summary());
    assert_eq!(a.tasklet.summary(), b.tasklet.summary());
    assert_eq!(a.counters.events, b.counters.events);
}

#[test]
fn replications_split_the_samples_and_merge_exactly() {
    let s = scenario("ioapic");
    let r = s.run_replicated(7, 10_001, 0, 3, None).unwrap();
    assert_eq!(r.isr.count(), 10_001);
    assert_eq!(r.counters.interrupts_generated, 10_001);
    // The three parts, run one by one with their seeds, merge to the same histogram.
    let mut merged = s.run(7, 3_334, 0).unwrap().isr;
    for (i, n) in [(1u64, 3_334u64), (2, 3_333)] {
        merged.merge(&s.run(replication_seed(7, i), n, 0).unwrap().isr);
    }
    assert_eq!(merged.summary(), r.isr.summary());
    // Other replication seeds draw other Poisson phases: not the same as one long run.
    let one = s.run(7, 10_001, 0).unwrap();
    assert_ne!(one.counters.simulated_ps, r.counters.simulated_ps);
}

#[test]
fn the_result_does_not_depend_on_the_number_of_threads() {
    let s = scenario("xtpic");
    let one = in_pool(1, || s.run_replicated(11, 6_000, 0, 4, None).unwrap());
    let two = in_pool(2, || s.run_replicated(11, 6_000, 0, 4, None).unwrap());
    assert_eq!(one.isr.summary(), two.isr.summary());
    assert_eq!(one.tasklet.summary(), two.tasklet.summary());
    assert_eq!(one.counters.events, two.counters.events);
    assert_eq!(one.counters.simulated_ps, two.counters.simulated_ps);
}

#[test]
fn progress_counts_interrupts_across_replications() {
    let s = scenario("msi");
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let samples = 4 * irqlab_sim::machine::PROGRESS_EVERY;
    s.run_replicated(3, samples, 0, 2, Some(counter.clone()))
        .unwrap();
    assert_eq!(counter.load(std::sync::atomic::Ordering::Relaxed), samples);
}
