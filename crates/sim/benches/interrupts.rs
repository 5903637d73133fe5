//! Simulated interrupts per second on one core, for each delivery method of seed 000's
//! workstation scenario (the project's target: at least 2 million per second for MSI).
//!
//! `cargo bench -p irqlab-sim --bench interrupts`; criterion prints "thrpt" in elements
//! (interrupts) per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use irqlab_sim::scenario::Scenario;
use std::path::Path;

const INTERRUPTS: u64 = 100_000;

fn bench(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/seed000/ws.toml");
    let mut g = c.benchmark_group("seed000-ws");
    g.throughput(Throughput::Elements(INTERRUPTS));
    g.sample_size(10);
    for delivery in ["msi", "ioapic", "xtpic"] {
        let s = Scenario::load(&path, &[format!("delivery={delivery}")]).expect("scenario");
        g.bench_function(delivery, |b| {
            b.iter(|| {
                let r = s.run(1, INTERRUPTS, 0).expect("run");
                assert_eq!(r.tasklet.count(), INTERRUPTS);
                r
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
