//! What cyclictest users reach for in `irqlab measure timer`: `--policy fifo|rr|other`,
//! `-q/--quiet`, `-D/--duration` in bare seconds, `--latency US` for /dev/cpu_dma_latency, and
//! cyclictest's short flags. Runs as any user.

use assert_cmd::Command;
use std::path::PathBuf;

fn irqlab() -> Command {
    let mut cmd = Command::cargo_bin("irqlab").unwrap();
    cmd.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    cmd
}

#[test]
fn bad_cyclictest_style_flags_are_refused_with_the_flag_named() {
    for (args, expect) in [
        (
            &["--policy", "batch"][..],
            "not a policy; use fifo, rr or other",
        ),
        (
            &["--policy", "other", "--priority", "5"],
            "SCHED_OTHER has no priority",
        ),
        (
            &["--policy", "rr", "--priority", "0"],
            "outside 1..=99, the SCHED_RR priorities",
        ),
        (&["--latency", "-1"], "--latency: -1 us is negative"),
        (&["-D", "-5"], "positive number of seconds"),
    ] {
        let out = irqlab()
            .args(["measure", "timer", "--loops", "5"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn sched_other_bare_seconds_quiet_and_latency_run_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let out = irqlab()
        .args(["measure", "timer", "--cpus", "0", "-q"])
        .args([
            "--policy",
            "other",
            "-D",
            "0.3",
            "--interval-us",
            "1000",
            "--latency",
            "25",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("priority: SCHED_OTHER\n"), "{stdout}");
    assert!(stdout.contains("PM QoS request: 25 us"), "{stdout}");
    // SCHED_OTHER needs no privilege: nothing was refused.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("no SCHED_"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let s = &v["settings"];
    assert_eq!(s["policy"], "other");
    assert_eq!(s["priority"], 0);
    assert_eq!(s["latency_us"], 25);
    assert_eq!(s["duration_s"], 0.3);
    // Untraced by default, as cyclictest: no IRQ/thread split, no analysis, no trace warning.
    assert_eq!(s["trace"], false);
    assert_eq!(s["trace_sched"], false);
    let metrics = v["result"]["metrics"].as_array().unwrap();
    assert!(
        metrics.iter().all(|m| m["name"] != "irq_latency"),
        "{metrics:?}"
    );
    assert!(v["result"].get("spike").is_none_or(|s| s.is_null()));
    // (Only warnings: a cleanup line after a crashed run elsewhere on this host may name one.)
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("irqlab: warning:") && l.contains("trace")),
        "{stderr}"
    );
    // 0.3 s at 1 ms is about 300 periods (the thread stops at its first wake-up past it). A
    // SCHED_OTHER thread on a busy machine may wake after the next deadline, which then counts
    // as an overrun instead of a wake-up (cyclictest's rule), so the periods are both together.
    let counter = |name: &str| {
        v["result"]["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["value"]
            .as_u64()
            .unwrap()
    };
    let (wakeups, overruns) = (counter("wakeups"), counter("overruns"));
    assert!(
        (250..=301).contains(&(wakeups + overruns)),
        "{wakeups} wake-ups, {overruns} overruns"
    );
}

#[test]
fn cyclictest_short_flags_mean_what_they_mean_there() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    // -a CPUs, -p priority, -i interval (us), -l loops, -q quiet.
    irqlab()
        .args(["measure", "timer", "-a", "0", "-p", "90", "-i", "500"])
        .args(["-l", "20", "-q", "--json"])
        .arg(&json)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let s = &v["settings"];
    assert_eq!(s["cpus"], serde_json::json!([0]));
    assert_eq!(s["priority"], 90);
    assert_eq!(s["interval_us"], 500);
    assert_eq!(s["loops"], 20);
    // `measure irqs -D` is its --duration too: a bad value is refused under that name.
    let out = irqlab()
        .args(["measure", "irqs", "-D", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--duration <DURATION>"), "{stderr}");
}

/// A negative value reaches the flag's parser (clap read `-1` as an unknown flag: "unexpected
/// argument '-1'", naming neither the flag nor what it takes), for every numeric flag of
/// measure timer, measure irqs, host, sim and sweep: the error names the flag and its range.
#[test]
fn negative_values_name_their_flag_and_what_it_takes() {
    for (args, expect) in [
        (
            &["measure", "timer", "--loops", "5", "--priority", "-1"][..],
            "--priority: -1 is outside 1..=99",
        ),
        (
            &["measure", "timer", "--loops", "-5"],
            "'--loops <N>': -5 is not a whole number, 1 or more",
        ),
        (
            &["measure", "timer", "--interval", "-1"],
            "'--interval-us <US>': -1 is not a whole number, 1 or more",
        ),
        (
            &["measure", "timer", "--break-us", "-1"],
            "'--break-us <US>': -1 is not a whole number, 1 or more",
        ),
        (
            &["measure", "timer", "--buffer-kb", "-1"],
            "'--buffer-kb <KIB>': -1 is not in 1..",
        ),
        (
            &["measure", "timer", "--histogram-max-us", "-1"],
            "'--histogram-max-us <US>': -1 is not a whole number from 1 to 1000000",
        ),
        (
            &["measure", "timer", "-D", "-1s"],
            "'--duration <DURATION>': -1s is negative",
        ),
        (&["measure", "timer", "--cpus", "-1"], "'--cpus <LIST>'"),
        (
            &["measure", "irqs", "-D", "-1s"],
            "'--duration <DURATION>': -1s is negative",
        ),
        (
            &["measure", "irqs", "-D", "1", "--buffer-kb", "-4"],
            "'--buffer-kb <KIB>': -4 is not in 1..",
        ),
        (
            &["host", "--interval", "-1s"],
            "'--interval <DURATION>': -1s is negative",
        ),
        (
            &["sim", "seed000/ws", "--seed", "-1"],
            "'--seed <SEED>': -1 is not a whole number, 0 or more",
        ),
        (
            &["sim", "seed000/ws", "--samples", "-5"],
            "'--samples <N>': expected a whole number",
        ),
        (
            &["sim", "seed000/ws", "--trace", "-1"],
            "'--trace <N>': -1 is not a whole number, 0 or more",
        ),
        (
            &["sim", "seed000/ws", "--replications", "-2"],
            "'--replications <N>': -2 is not in 1..=4096",
        ),
        (
            &["sim", "seed000/ws", "--histogram-max-us", "-3"],
            "'--histogram-max-us <US>': -3 is not a whole number from 1",
        ),
        (
            &["sweep", "plan", "--out", "m.json", "--draws", "-3"],
            "'--draws <N>': -3 is not in 2..=100000",
        ),
        (
            &[
                "sweep",
                "plan",
                "--out",
                "m.json",
                "--draws",
                "3",
                "--draw-seed",
                "-1",
            ],
            "'--draw-seed <SEED>': -1 is not a whole number",
        ),
        (
            &[
                "sweep",
                "plan",
                "--out",
                "m.json",
                "--scenario",
                "seed000/ws",
                "--grid",
                "delivery=msi",
                "--repeat",
                "-1",
            ],
            "'--repeat <N>': -1 is not in 1..=4096",
        ),
        (
            &[
                "sweep",
                "plan",
                "--out",
                "m.json",
                "--scenario",
                "seed000/ws",
                "--grid",
                "delivery=msi",
                "--seed",
                "-1",
            ],
            "'--seed <SEED>': -1 is not a whole number",
        ),
        (
            &[
                "sweep", "run", "m.json", "--out", "d", "--of", "2", "--shard", "-1",
            ],
            "'--shard <I>': -1 is not a whole number, 0 or more",
        ),
        (
            &["sweep", "run", "m.json", "--out", "d", "--of", "-2"],
            "'--of <N>': -2 is not in 1..",
        ),
    ] {
        let out = irqlab().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("unexpected argument"),
            "{args:?}: {stderr}"
        );
    }
}

/// `--cpus 0,0` measured CPU 0 once: the list was merged before the "listed twice" check.
#[test]
fn a_cpu_listed_twice_is_refused_and_named() {
    for (list, cpu) in [("0,0", 0), ("0-2,1", 1), ("1,0-1", 1)] {
        let out = irqlab()
            .args(["measure", "timer", "--loops", "5", "--cpus", list])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{list}: {stderr}");
        assert!(
            stderr.contains("'--cpus <LIST>'")
                && stderr.contains(&format!("CPU {cpu} is listed twice")),
            "{list}: {stderr}"
        );
    }
}
