//! Seed 001's 8-port swizzled forwarding (Table 4's 2.84 Mpps row) for one simulated second, on
//! one core (issue 16's target: under 10 s of wall time). Its sets are the experiment's run
//! `forward-swz-8port`, read from experiments/seed001.toml.
//!
//! `cargo bench -p irqlab-sim --bench forwarding`; criterion prints "thrpt" in elements
//! (frames forwarded) per second of wall time.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use irqlab_sim::experiment::ExperimentFile;
use irqlab_sim::scenario::Scenario;
use std::path::Path;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("experiments/seed001.toml")).expect("reads");
    let file: ExperimentFile = toml::from_str(&text).expect("parses");
    let run = (file.run.iter())
        .find(|r| r.id == "forward-swz-8port")
        .expect("the 8-port run");
    let mut set = run.set.clone();
    set.push("duration_ms=1000".into());
    let s = Scenario::load(root.join("experiments/seed001/forward.toml"), &set).expect("loads");
    let frames = |r: &irqlab_sim::scenario::Outcome| -> u64 {
        r.nics.iter().map(|n| n.transmitted_in_run).sum()
    };
    let expected = frames(&s.run(1, 1, 0).expect("runs"));
    let mut g = c.benchmark_group("seed001-forwarding");
    g.throughput(Throughput::Elements(expected));
    g.sample_size(10);
    g.bench_function("8port-1s", |b| {
        b.iter(|| {
            let r = s.run(1, 1, 0).expect("runs");
            assert_eq!(frames(&r), expected);
            r
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
