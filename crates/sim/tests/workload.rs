//! The shared workload generator (`workload.rs`) on the one machine: process work that an
//! interrupt cuts at an instruction boundary, sections with interrupts off that it does not,
//! the same results step by step (reference mode), and the latency it adds coming from the
//! sections.

mod common;

use common::ws_text_with_absolute_paths;
use irqlab_sim::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workstation scenario with a `[workload]`, written to a temporary directory.
fn with_workload(dir: &Path, workload: &str) -> PathBuf {
    let text =
        ws_text_with_absolute_paths().replacen("[[device]]", &format!("{workload}\n[[device]]"), 1);
    let path = dir.join("ws-workload.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const LOAD: &str = r#"
[workload]
busy_fraction = 0.5
busy_ms = 2.0
section = [{ kind = "irqs-off", per_busy_s = 2000.0, mean_us = 10.0 }]
"#;

fn run(path: &Path, set: &[&str], samples: u64, reference: bool) -> Outcome {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    Scenario::load(path, &set)
        .expect("loads")
        .run_with(5, samples, 0, reference)
        .expect("runs")
}

#[test]
fn the_workload_runs_the_same_step_by_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_workload(dir.path(), LOAD);
    for d in ["msi", "ioapic", "xtpic"] {
        let set = [format!("delivery={d}")];
        let set: Vec<&str> = set.iter().map(|s| s.as_str()).collect();
        let fast = run(&path, &set, 3_000, false);
        let strict = run(&path, &set, 3_000, true);
        assert_eq!(fast.isr, strict.isr, "{d}");
        assert_eq!(fast.tasklet, strict.tasklet, "{d}");
        assert_eq!(
            fast.counters.workload_sections,
            strict.counters.workload_sections
        );
        assert!(fast.counters.workload_sections > 0);
    }
}

#[test]
fn busy_process_code_is_cut_and_sections_delay_by_at_most_their_length() {
    let dir = tempfile::tempdir().unwrap();
    // Process work with no sections: an interrupt cuts it at the next instruction boundary.
    // An idle core must first leave HLT, which a busy one need not, so the busy core answers
    // sooner; a cut that waited for the busy stretch (milliseconds) would show here.
    let busy = with_workload(
        dir.path(),
        "[workload]\nbusy_fraction = 1.0\nbusy_ms = 5.0\n",
    );
    let idle = run(
        &repo().join("experiments/seed000/ws.toml"),
        &["delivery=msi"],
        2_000,
        false,
    );
    let loaded = run(&busy, &["delivery=msi"], 2_000, false);
    let (i, l) = (idle.isr.max_ns().unwrap(), loaded.isr.max_ns().unwrap());
    assert!(l < i, "busy max {l} ns, idle max {i} ns");
    assert!(
        loaded.isr.min_ns().unwrap() + 10 > l,
        "no interrupt waited: {l} ns"
    );
    // Sections of exactly 20 us: no latency beyond one section's length over the busy core's.
    let fixed = with_workload(
        dir.path(),
        "[workload]\nbusy_fraction = 1.0\nbusy_ms = 5.0\n\
         section = [{ kind = \"irqs-off\", per_busy_s = 5000.0, distribution = \"fixed\", \
         mean_us = 20.0 }]\n",
    );
    let held = run(&fixed, &["delivery=msi"], 4_000, false);
    let max = held.isr.max_ns().unwrap();
    assert!(
        max > 10_000,
        "some interrupt waited inside a section: max {max} ns"
    );
    assert!(max <= l + 20_000, "max {max} ns beyond one 20 us section");
}

#[test]
fn a_workload_that_cannot_be_is_refused_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_workload(dir.path(), LOAD);
    let err = |set: &str| match Scenario::load(&path, &[set.to_string()]) {
        Ok(_) => panic!("{set} was accepted"),
        Err(e) => e.to_string(),
    };
    let e = err("workload.section.0.per_busy_s=200000");
    assert!(
        e.contains("workload.section") && e.contains("200%") && e.contains("lower per_busy_s"),
        "{e}"
    );
    let e = err("workload.busy_fraction=1.5");
    assert!(
        e.contains("workload.busy_fraction") && e.contains("0 to 1"),
        "{e}"
    );
    let e = err("workload.section.0.distribution=lognormal");
    assert!(
        e.contains("workload.section.0.sigma") && e.contains("sigma > 0"),
        "{e}"
    );
}
