//! `irqlab measure timer` and `irqlab host` end to end: bad flags are refused before anything
//! changes (any user), and a short measurement gives the documented outputs (the split and the
//! spike account need root and tracefs; they are checked when available, and the reason is
//! printed when not).

mod hostenv;

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn irqlab() -> Command {
    let mut cmd = Command::cargo_bin("irqlab").expect("the irqlab binary is built");
    cmd.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    cmd
}

/// Exit 0, or fail showing stderr.
fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn root_with_tracefs() -> Result<(), String> {
    if !hostenv::is_root() {
        return Err("not root".into());
    }
    let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fs.lines().any(|l| l.ends_with("tracefs")) {
        return Err("no tracefs in this kernel".into());
    }
    Ok(())
}

#[test]
fn bad_timer_flags_are_refused_with_the_flag_named() {
    for (args, expect) in [
        (vec!["--cpus", "4095"], "--cpus: CPU 4095 is not online"),
        (vec!["--cpus", "1-0"], "--cpus"),
        (
            vec!["--interval-us", "0"],
            "'--interval-us <US>': 0 is not a whole number, 1 or more",
        ),
        (
            vec!["--priority", "100"],
            "--priority: 100 is outside 1..=99",
        ),
        (
            vec!["--loops", "0"],
            "'--loops <N>': 0 is not a whole number, 1 or more",
        ),
        (vec!["--duration", "0s"], "must be longer than zero"),
        (vec!["--duration", "soon"], "or a duration such as 2s"),
        (vec!["--trace-sched", "--no-trace"], "cannot be used with"),
        (vec!["--trace", "--no-trace"], "cannot be used with"),
    ] {
        irqlab()
            .args(["measure", "timer"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(expect));
    }
}

#[test]
fn a_short_timer_run_reports_per_cpu_latencies_and_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("timer.json");
    let hist = dir.path().join("timer.hist");
    let out = irqlab()
        .args([
            "measure",
            "timer",
            "--trace",
            "--cpus",
            "0",
            "--loops",
            "50",
            "--interval-us",
            "500",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--histogram-out")
        .arg(&hist)
        .args(["--histogram-max-us", "2000"])
        .output()
        .unwrap();
    assert_ok(&out);
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["kind"], "measure-timer");
    assert_eq!(r["settings"]["cpus"], serde_json::json!([0]));
    let metric = |name: &str| {
        r["result"]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name && m["cpu"] == 0)
            .cloned()
    };
    let thread = metric("thread_latency").expect("thread latency");
    assert_eq!(thread["summary"]["count"], 50);
    assert!(thread["summary"]["min_ns"].as_u64().unwrap() > 0);
    match root_with_tracefs() {
        Ok(()) => {
            let irq = metric("irq_latency").expect("the IRQ part, traced");
            let (irq_p50, thread_p50) = (
                irq["summary"]["p50_ns"].as_u64().unwrap(),
                thread["summary"]["p50_ns"].as_u64().unwrap(),
            );
            // The callback runs before the thread it wakes.
            assert!(
                irq_p50 <= thread_p50,
                "irq p50 {irq_p50} > thread p50 {thread_p50}"
            );
        }
        Err(why) => eprintln!("IRQ/thread split not checked: {why}"),
    }
    // cyclictest's histogram: a header, one line per microsecond 0..2000, then the summary.
    let text = std::fs::read_to_string(&hist).unwrap();
    assert!(
        text.starts_with("# Histogram\n"),
        "{}",
        &text[..40.min(text.len())]
    );
    let buckets = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert_eq!(buckets, 2000);
    // As in cyclictest, Total counts the wake-ups inside the histogram and Overflows the rest.
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no '{name}' line in:\n{text}"))
    };
    assert_eq!(
        field("# Total:") + field("# Histogram Overflows:"),
        50,
        "{text}"
    );
}

#[test]
fn break_us_explains_the_late_wakeup() {
    if let Err(why) = root_with_tracefs() {
        eprintln!("skipped: {why}");
        return;
    }
    // 1 us is always exceeded: the run stops at once and accounts for that wake-up.
    irqlab()
        .args([
            "measure",
            "timer",
            "--cpus",
            "0",
            "--duration",
            "5s",
            "--break-us",
            "1",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("Stopped: wake-up 0 on CPU 0 was"))
        .stdout(predicate::str::contains(
            "timer callback wakes the measuring thread",
        ))
        .stdout(predicate::str::contains("Where its latency went"))
        .stdout(predicate::str::contains("Largest cause: "))
        .stdout(predicate::str::contains(
            "the measuring thread runs (reads the clock)",
        ));
}

/// Every traced run ends with the analysis of its worst wake-up (rtla timerlat's `--auto`):
/// the thread's worst latency, cut into stretches that add up to it, and its largest cause.
#[test]
fn a_traced_run_analyses_its_worst_wakeup() {
    if let Err(why) = root_with_tracefs() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("timer.json");
    let out = irqlab()
        .args([
            "measure",
            "timer",
            "--trace",
            "--duration",
            "1s",
            "--interval-us",
            "500",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "Worst wake-up: wake-up ",
        "Where its latency went, in us from the timer's expiry",
        "Largest cause: ",
        "What ran on that CPU",
        "the measuring thread runs (reads the clock)",
    ] {
        assert!(text.contains(part), "no '{part}' in:\n{text}");
    }
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let spike = &r["result"]["spike"];
    assert_eq!(spike["kind"], "worst", "{spike}");
    let latency = spike["latency_ns"].as_u64().unwrap();
    // The analysed wake-up is the thread's worst on its CPU.
    let max = r["result"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "thread_latency" && m["cpu"] == spike["cpu"])
        .map(|m| m["summary"]["max_ns"].as_u64().unwrap())
        .unwrap();
    let analysis = &spike["analysis"];
    let matched = analysis["notes"]
        .as_array()
        .is_none_or(|n| !n.iter().any(|n| n.as_str().unwrap().contains("not among")));
    if matched {
        assert_eq!(latency, max);
    }
    let parts = analysis["parts"].as_array().unwrap();
    let sum: u64 = parts
        .iter()
        .map(|p| p["duration_ns"].as_u64().unwrap())
        .sum();
    assert_eq!(
        sum, latency,
        "the stretches add up to the latency: {analysis}"
    );
    assert!(analysis["largest"]["duration_ns"].as_u64().unwrap() > 0);
    // --trace alone says what it leaves out; --trace-sched traces it.
    let note = |r: &serde_json::Value| {
        r["result"]["spike"]["analysis"]["notes"]
            .as_array()
            .is_some_and(|n| {
                n.iter()
                    .any(|n| n.as_str().unwrap().contains("--trace-sched"))
            })
    };
    assert!(note(&r), "{analysis}");
    let sched = dir.path().join("sched.json");
    let out = irqlab()
        .args([
            "measure",
            "timer",
            "--cpus",
            "0",
            "--duration",
            "1s",
            "--trace-sched",
            "--json",
        ])
        .arg(&sched)
        .output()
        .unwrap();
    assert_ok(&out);
    let r2: serde_json::Value = serde_json::from_slice(&std::fs::read(&sched).unwrap()).unwrap();
    assert_eq!(r2["settings"]["trace_sched"], true);
    assert!(!note(&r2), "{}", r2["result"]["spike"]);
    // The analysis closes the summary: nothing but warnings follows it.
    let tail = text.rsplit("What ran on that CPU").next().unwrap();
    assert!(
        tail.lines()
            .skip_while(|l| !l.is_empty() && !l.starts_with("warning:"))
            .all(|l| l.is_empty() || l.starts_with("warning:")),
        "{tail}"
    );
}

#[test]
fn host_inventory_on_a_captured_tree_and_as_json() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/tests/fixtures/hosts/firecracker-6.18");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("host.json");
    irqlab()
        .args(["host", "--root"])
        .arg(&root)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Interrupts on 6.18.44-fc-v669, CPUs 0-1",
        ))
        .stdout(predicate::str::contains("MSI-X"))
        .stdout(predicate::str::contains("0000:00:02.0 (virtio-pci)"))
        .stdout(predicate::str::contains("findings: none"));
    let inv: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(inv["schema_version"], 2);
    assert_eq!(inv["kind"], "host");
    let inv = &inv["result"];
    // 19 numbered lines and 16 per-CPU classes, hidden or not in the table.
    assert_eq!(inv["irqs"].as_array().unwrap().len(), 35);
    irqlab()
        .args(["host", "--interval", "0s"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--interval"));
    irqlab()
        .args(["host", "--root", "/nonexistent"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--root /nonexistent: no proc/ in it; give the root of a tree captured with",
        ));
}

/// Without root, `measure irqs` refuses with what to do, and `measure timer` measures anyway
/// with one warning per missing privilege. Run as root, the test drops to `nobody` with
/// setpriv(1); as another user it runs directly.
#[test]
fn without_root_the_measurements_say_what_is_missing() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_irqlab"));
    let as_nobody = |args: &[&str]| {
        if hostenv::is_root() {
            let mut c = std::process::Command::new("setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(&bin)
            .args(args);
            c
        } else {
            let mut c = std::process::Command::new(&bin);
            c.args(args);
            c
        }
    };
    if std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no setpriv(1) to drop root");
        return;
    }
    let out = as_nobody(&["measure", "irqs", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not root") && err.contains("sudo"), "{err}");

    let out = as_nobody(&[
        "measure", "timer", "--trace", "--cpus", "0", "--loops", "10",
    ])
    .output()
    .unwrap();
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    // Warnings go to stderr, the result to stdout.
    let warnings = String::from_utf8_lossy(&out.stderr);
    for missing in [
        "no IRQ/thread split",
        "memory not locked",
        "no /dev/cpu_dma_latency",
        "no SCHED_FIFO",
    ] {
        assert!(
            warnings.contains(&format!("irqlab: warning: {missing}")),
            "no warning '{missing}' in:\n{warnings}"
        );
        assert!(!text.contains(missing), "a warning on stdout:\n{text}");
    }
    assert!(text.contains("thread_latency[cpu0]"));
    // The header says what was held, not what was asked.
    assert!(
        text.contains("PM QoS request: none (0 us on /dev/cpu_dma_latency was refused)"),
        "{text}"
    );
    assert!(
        text.contains("priority: SCHED_OTHER (SCHED_FIFO 95 was refused)"),
        "{text}"
    );
    eprintln!(
        "checked as {}",
        if hostenv::is_root() {
            "nobody (setpriv)"
        } else {
            "this user"
        }
    );
}

#[test]
fn sim_plot_writes_both_figures() {
    let dir = tempfile::tempdir().unwrap();
    irqlab()
        .args(["sim", "experiments/seed000/ws.toml", "--plot"])
        .arg(dir.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("ws-msi-histogram.svg"));
    // Flags that change the result tag the names: the figures above are not overwritten.
    irqlab()
        .args([
            "sim",
            "experiments/seed000/ws.toml",
            "--samples",
            "500",
            "--plot",
        ])
        .arg(dir.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("ws-msi-").and(predicate::str::contains("-histogram.svg")))
        .stderr(predicate::str::contains("ws-msi-histogram.svg").not());
    for f in ["ws-msi-histogram.svg", "ws-msi-cumulative.svg"] {
        let svg = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(svg.starts_with("<svg"), "{f}");
        assert!(
            svg.contains("isr_latency") && svg.contains("tasklet_latency"),
            "{f}"
        );
    }
}

#[test]
fn validate_plot_draws_each_experiment() {
    let dir = tempfile::tempdir().unwrap();
    irqlab()
        .args([
            "validate",
            "--only",
            "msi-ws-ioapic",
            "--samples",
            "300",
            "--plot",
        ])
        .arg(dir.path())
        .assert()
        .stderr(predicate::str::contains("seed000-isr-"));
    // Named with a tag of --only and --samples: find each figure by its ends.
    let find = |prefix: &str, suffix: &str| {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with(prefix) && n.ends_with(suffix))
            .unwrap_or_else(|| panic!("no {prefix}*{suffix}"))
    };
    let svg =
        std::fs::read_to_string(dir.path().join(find("seed000-isr-", "-histogram.svg"))).unwrap();
    // Only the runs the selected row needs, each labelled.
    assert!(svg.contains("ws-msi isr_latency") && svg.contains("ws-ioapic isr_latency"));
    assert!(!svg.contains("soc-msi"));
    find("seed000-tasklet-", "-cumulative.svg");
}

#[test]
fn plot_draws_saved_results_overlaid() {
    let dir = tempfile::tempdir().unwrap();
    for (name, extra) in [("quiet", None), ("ticking", Some("kernel.tick.hz=1000"))] {
        let mut cmd = irqlab();
        cmd.args([
            "sim",
            "experiments/seed000/ws.toml",
            "--samples",
            "500",
            "--json",
        ])
        .arg(dir.path().join(format!("{name}.json")));
        if let Some(e) = extra {
            cmd.args(["--set", e]);
        }
        cmd.assert().success();
    }
    irqlab()
        .arg("plot")
        .arg(dir.path().join("quiet.json"))
        .arg(dir.path().join("ticking.json"))
        .arg("--out")
        .arg(dir.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("comparison-histogram.svg"));
    let svg = std::fs::read_to_string(dir.path().join("comparison-histogram.svg")).unwrap();
    assert!(svg.contains("quiet isr_latency") && svg.contains("ticking isr_latency"));
    // A file that is not a result is refused with what to do (`--plot`, as the other commands
    // name the figures' directory, is taken for `--out`).
    std::fs::write(dir.path().join("bad.json"), "{}").unwrap();
    irqlab()
        .arg("plot")
        .arg(dir.path().join("bad.json"))
        .arg("--plot")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a run result"));
}
