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

/// Three phases on the workstation: no load, an always-busy core with 20 us sections at a
/// tenth of the card's rate, no load again.
const PHASES: &str = r#"
[[workload.phase]]
name = "quiet"
until_sample = 1000
busy_fraction = 0.0
busy_ms = 1.0
cold_fraction = 0.0

[[workload.phase]]
name = "loaded"
until_sample = 2000
busy_fraction = 1.0
busy_ms = 5.0
cold_fraction = 0.0
rates = { exerciser = 1000.0 }
section = [{ kind = "irqs-off", per_busy_s = 5000.0, distribution = "fixed", mean_us = 20.0 }]

[[workload.phase]]
name = "quiet-again"
until_sample = 3000
busy_fraction = 0.0
busy_ms = 1.0
cold_fraction = 0.0
rates = { exerciser = 10000.0 }
"#;

#[test]
fn linux_phases_follow_the_measured_cards_samples_with_their_load_and_rate() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_workload(dir.path(), PHASES);
    let set = ["delivery=msi", "samples=3000"];
    let o = run(&path, &set, 3_000, false);
    let names: Vec<&str> = o.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["quiet", "loaded", "quiet-again"]);
    // Each phase holds its own samples, by number: none is dropped on this card (one at a
    // time), so each has exactly its thousand and together they are the run's.
    for p in &o.phases {
        assert_eq!(p.isr.count(), 1_000, "{}", p.name);
        assert_eq!(p.tasklet.count(), 1_000, "{}", p.name);
    }
    assert_eq!(o.isr.count(), 3_000);
    // Only the loaded phase has sections: an interrupt that falls in one waits up to 20 us.
    let max = |i: usize| o.phases[i].isr.max_ns().unwrap();
    assert!(max(1) > 10_000, "loaded max {} ns", max(1));
    assert!(max(0) < 10_000, "quiet max {} ns", max(0));
    assert!(o.counters.workload_sections > 0);
    // The rates: 1,000 interrupts at 1,000/s take a second; the quiet phases, at the card's
    // own 10,000/s and then 10,000/s again, a tenth of that each.
    let simulated_s = o.counters.simulated_ps as f64 * 1e-12;
    assert!(
        (1.0..1.4).contains(&simulated_s),
        "simulated {simulated_s} s"
    );
    // Step by step, the same.
    let strict = run(&path, &set, 3_000, true);
    for (a, b) in o.phases.iter().zip(&strict.phases) {
        assert_eq!(a.isr, b.isr, "{}", a.name);
    }
    // In the neutral result, each metric for the whole run and then for each phase.
    let r = o.into_result(0);
    let listed: Vec<(String, Option<String>)> = (r.metrics.iter())
        .map(|m| (m.name.clone(), m.phase.clone()))
        .collect();
    assert_eq!(listed.len(), 8, "{listed:?}");
    assert_eq!(
        listed[2],
        ("isr_latency".to_string(), Some("quiet".to_string()))
    );
}

#[test]
fn replications_run_every_phase_in_proportion() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_workload(dir.path(), PHASES);
    let set = ["delivery=msi".to_string(), "samples=3000".to_string()];
    let s = Scenario::load(&path, &set).unwrap();
    let o = s.run_replicated(5, 3_000, 0, 3, None).unwrap();
    // Each replication's thousand pass through the phases at its 334th and 667th sample
    // (rounded up): a phase ends within a sample per replication of where the run's does.
    let counts: Vec<u64> = o.phases.iter().map(|p| p.isr.count()).collect();
    assert_eq!(counts, [1_002, 999, 999]);
}

#[test]
fn cyclictest_phases_follow_its_loops() {
    let text = std::fs::read_to_string(repo().join("experiments/seed003/idle.toml")).unwrap();
    let dir = repo().join("experiments/seed003");
    let start = text.find("[workload]").unwrap();
    let end = text.find("# The same two 82572EI").unwrap();
    let phases = r#"
[[workload.phase]]
name = "idle"
until_sample = 500
busy_fraction = 0.0
busy_ms = 1.0
cold_fraction = 0.0

[[workload.phase]]
name = "busy"
until_sample = 1000
busy_fraction = 1.0
busy_ms = 2.0
cold_fraction = 0.0
section = [{ kind = "irqs-off", per_busy_s = 20000.0, distribution = "fixed", mean_us = 30.0 }]
"#;
    let text = format!("{}{phases}\n{}", &text[..start], &text[end..]);
    let text = (text.replace("\"../../", &format!("\"{}/../../", dir.display())))
        .replace("samples = 20000", "samples = 1000");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("idle-phases.toml");
    std::fs::write(&path, text).unwrap();
    let o = Scenario::load(&path, &[])
        .expect("loads")
        .run(1, 1_000, 0)
        .expect("runs");
    let counts: Vec<u64> = o.phases.iter().map(|p| p.cyclictest.count()).collect();
    assert_eq!(counts, [500, 500]);
    let max = |i: usize| o.phases[i].cyclictest.max_ns().unwrap();
    assert!(
        max(1) > max(0) + 10_000,
        "idle {} ns, busy {} ns",
        max(0),
        max(1)
    );
}

#[test]
fn phases_that_cannot_be_are_refused_with_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_workload(dir.path(), PHASES);
    let err = |set: &[&str]| {
        let mut set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        set.insert(0, "samples=3000".into());
        match Scenario::load(&path, &set) {
            Ok(_) => panic!("{set:?} was accepted"),
            Err(e) => e.to_string(),
        }
    };
    let other = tempfile::tempdir().unwrap();
    let misnamed = with_workload(other.path(), &PHASES.replace("exerciser =", "nosuch ="));
    let e = match Scenario::load(&misnamed, &["samples=3000".to_string()]) {
        Ok(_) => panic!("a rate for no device was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("workload.phase.1.rates.nosuch") && e.contains("the devices are: exerciser"),
        "{e}"
    );
    // Each refusal names its key and says why.
    for (set, key, why) in [
        (
            "workload.phase.1.rates.exerciser=0",
            "workload.phase.1.rates.exerciser",
            "measured device",
        ),
        (
            "workload.phase.1.until_sample=900",
            "workload.phase.1.until_sample",
            "sample order",
        ),
        (
            "workload.phase.2.name=quiet",
            "workload.phase.2.name",
            "two phases",
        ),
        (
            "workload.cold_fraction=0.5",
            "workload.cold_fraction",
            "each phase gives its own load",
        ),
        (
            "workload.phase.1.section.0.mean_us=300",
            "workload.phase.1.section",
            "150%",
        ),
        (
            "samples=200000",
            "workload.phase.2.until_sample",
            "before the run's 200000",
        ),
    ] {
        let e = err(&[set]);
        assert!(e.contains(key) && e.contains(why), "{set}: {e}");
    }
}
