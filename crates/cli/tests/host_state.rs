//! `irqlab measure irqs` and `measure timer` leave the host's tracing state as they found them:
//! after a normal run, after Ctrl-C (SIGINT) and after SIGTERM; with tracefs unmounted
//! beforehand; with it mounted and in use by someone else; and with tracefs mounted several
//! times while another tracer records.
//!
//! These hold on any machine, whatever is mounted and whoever else traces: each scenario runs in
//! a mount namespace of its own, where it sets up the mounts it needs (see `hostenv`), and
//! compares only the state it owns: the instance of "someone else's session" or of the
//! concurrent tracer it created, the mounts it sees, and what each irqlab it ran could have
//! left (its instance, its private mount point, its state file, its PM QoS request). Not the
//! global list of instances or the top-level settings, which other tracers on the machine
//! change. Needs root and tracefs; skips with the reason otherwise (CI runs as root).

mod hostenv;

use hostenv::*;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[derive(Copy, Clone)]
enum Ending {
    Normal,
    Signal(i32),
}

/// The two tracing measurements, and what their output always contains.
const MEASUREMENTS: [(&[&str], &str); 2] = [
    (
        &["measure", "irqs", "--buffer-kb", "512"],
        "Hard IRQ handlers",
    ),
    (
        &["measure", "timer", "--trace", "--buffer-kb", "512"],
        "thread_latency[cpu",
    ),
];

/// Run one measurement; for a signal ending, deliver it after 1 s of a 60 s run. Its PID.
fn run_one(state: &StateDir, args: &[&str], expect: &str, ending: Ending) -> i32 {
    let mut cmd = state.irqlab(args);
    cmd.arg("--duration")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (pid, out) = match ending {
        Ending::Normal => {
            cmd.arg("1s");
            let run = Running::new(cmd);
            (run.pid(), run.wait_with_output())
        }
        Ending::Signal(sig) => {
            cmd.arg("60s");
            let run = Running::new(cmd);
            std::thread::sleep(Duration::from_secs(1));
            let started = Instant::now();
            run.signal(sig);
            let pid = run.pid();
            let out = run.wait_with_output();
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "irqlab took {:?} to stop after signal {sig}",
                started.elapsed()
            );
            (pid, out)
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(expect), "{args:?}: {stdout}");
    pid
}

/// Nothing of what irqlab `pid` set up is left: its instance, its private mount point, its
/// record.
fn assert_nothing_left_by(pid: i32, state: &StateDir) {
    assert_eq!(left_by(pid), Vec::<PathBuf>::new(), "left by irqlab {pid}");
    assert!(
        state.changes_of(pid).is_empty(),
        "{:?}",
        state.changes_of(pid)
    );
}

/// The settings of a tracing instance that a tool sets.
fn settings(inst: &Instance) -> Vec<(String, String)> {
    let mut files = vec![
        "tracing_on",
        "trace_clock",
        "buffer_size_kb",
        "current_tracer",
        "set_event",
        "tracing_cpumask",
        "events/irq/enable",
        "events/irq/irq_handler_entry/enable",
        "events/irq/irq_handler_entry/filter",
        "events/irq/softirq_raise/enable",
        "events/sched/sched_switch/enable",
        "events/timer/hrtimer_start/enable",
    ];
    if inst.dir.join("buffer_percent").exists() {
        files.push("buffer_percent");
    }
    files
        .into_iter()
        .map(|f| (f.to_string(), inst.read(f)))
        .collect()
}

#[test]
fn tracing_state_is_unchanged_after_normal_exit_sigint_and_sigterm() {
    run_in_mount_namespace("inner_tracing_state_is_unchanged");
}

#[test]
#[ignore = "run in its own mount namespace by tracing_state_is_unchanged_after_normal_exit_sigint_and_sigterm"]
fn inner_tracing_state_is_unchanged() {
    if !inner_may_run() {
        return;
    }
    let state = StateDir::new();
    // 1. With tracefs unmounted: irqlab mounts it at a private mount point and unmounts it
    //    afterwards.
    unmount_all_tracefs();
    for ending in [Ending::Normal, Ending::Signal(2)] {
        for (args, expect) in MEASUREMENTS {
            let pid = run_one(&state, args, expect, ending);
            assert!(
                tracefs_mounts().is_empty(),
                "tracefs left mounted: {:?}",
                tracefs_mounts()
            );
            assert_nothing_left_by(pid, &state);
        }
    }

    // 2. With tracefs mounted, and someone else's session in an instance of its own: a
    //    non-default clock and buffer, an event enabled, tracing off. Nothing of it changes.
    let _mounted = Mounted::default_tracefs();
    let view = View::new();
    let session = Instance::new(&view, &format!("someone-else-{}", std::process::id()));
    for (f, v) in [
        ("trace_clock", "global"),
        ("buffer_size_kb", "1024"),
        ("events/sched/sched_switch/enable", "1"),
        ("tracing_on", "0"),
    ] {
        session.write(f, v);
    }
    let before = settings(&session);
    let mounts = tracefs_mounts();
    for ending in [Ending::Normal, Ending::Signal(2), Ending::Signal(15)] {
        for (args, expect) in MEASUREMENTS {
            let pid = run_one(&state, args, expect, ending);
            for (b, a) in before.iter().zip(&settings(&session)) {
                assert_eq!(b, a, "{} changed", b.0);
            }
            assert_eq!(tracefs_mounts(), mounts);
            assert_nothing_left_by(pid, &state);
            assert_no_qos_request_left();
        }
    }
}

#[test]
fn several_tracefs_mounts_and_a_concurrent_tracer() {
    run_in_mount_namespace("inner_several_mounts_and_a_concurrent_tracer");
}

#[test]
#[ignore = "run in its own mount namespace by several_tracefs_mounts_and_a_concurrent_tracer"]
fn inner_several_mounts_and_a_concurrent_tracer() {
    if !inner_may_run() {
        return;
    }
    // tracefs at /sys/kernel/tracing, under debugfs (its automount), and at a point of its own.
    let _default = Mounted::default_tracefs();
    let debug = std::path::Path::new("/sys/kernel/debug");
    let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    let _debugfs = (fs.contains("\tdebugfs\n")
        && debug.is_dir()
        && !std::fs::read_to_string("/proc/self/mounts")
            .unwrap_or_default()
            .contains(" /sys/kernel/debug debugfs "))
    .then(|| Mounted::new("debugfs", debug));
    let _ = std::fs::read_dir(debug.join("tracing")); // mounts it, where debugfs is
    let third = tempfile::tempdir().unwrap();
    let _third = Mounted::new("tracefs", third.path());
    let mounts = tracefs_mounts();
    eprintln!("tracefs mounts: {mounts:?}");
    assert!(
        mounts.contains(&"/sys/kernel/tracing".into()) && mounts.contains(&third.path().into()),
        "{mounts:?}"
    );
    // The third, under debugfs, where this kernel has debugfs.
    if fs.contains("\tdebugfs\n") {
        assert!(
            mounts.contains(&debug.join("tracing")),
            "no tracefs under debugfs: {mounts:?}"
        );
    }

    // A concurrent tracer: an instance of its own recording scheduler and IRQ events, its
    // buffer drained all along by a reader.
    let view = View::new();
    let tracer = Instance::new(&view, &format!("concurrent-tracer-{}", std::process::id()));
    for f in ["events/sched/sched_switch/enable", "events/irq/enable"] {
        tracer.write(f, "1");
    }
    tracer.write("tracing_on", "1");
    let traced = tempfile::NamedTempFile::new().unwrap();
    let mut cat = std::process::Command::new("cat");
    cat.arg(tracer.dir.join("trace_pipe"))
        .stdout(traced.reopen().unwrap());
    let reader = Running::new(cat);
    let before = settings(&tracer);
    let read_so_far = || traced.as_file().metadata().unwrap().len();
    assert!(
        wait_until(5, || read_so_far() > 0),
        "the concurrent tracer reads nothing"
    );
    let read_before = read_so_far();

    // Two measurements at once, beside it.
    let state = StateDir::new();
    let start = |args: &[&str]| {
        let mut c = state.irqlab(args);
        c.args(["--duration", "2s", "--buffer-kb", "512"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Running::new(c)
    };
    // The second starts once the first measures, so each sees the other (issue 37: they ran
    // without telling each other).
    let irqs = start(&["measure", "irqs"]);
    assert!(wait_until(20, || state
        .change_of(irqs.pid(), "trace_instance")
        .is_some()));
    let timer = start(&["measure", "timer", "--trace", "--cpus", "0"]);
    let pids = [irqs.pid(), timer.pid()];
    assert!(wait_until(20, || pids
        .iter()
        .all(|p| state.change_of(*p, "trace_instance").is_some())));
    // Both chose /sys/kernel/tracing among the mounts, and mounted nothing of their own.
    for p in pids {
        assert_eq!(
            state.change_of(p, "trace_instance").unwrap()["mount"],
            "/sys/kernel/tracing"
        );
    }
    assert_eq!(tracefs_mounts(), mounts);
    for ((run, expect), other) in [(irqs, "Hard IRQ handlers"), (timer, "thread_latency[cpu0]")]
        .into_iter()
        .zip([pids[1], pids[0]])
    {
        let out = run.wait_with_output();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains(expect), "{stdout}");
        assert!(
            stderr.contains(&format!(
                "warning: another irqlab measured at the same time (pid {other}: "
            )),
            "not told of irqlab {other}: {stderr}"
        );
    }

    // The tracer recorded all along, and its settings are its own.
    assert_eq!(settings(&tracer), before);
    assert_eq!(tracer.read("tracing_on").trim(), "1");
    assert!(
        wait_until(5, || read_so_far() > read_before),
        "the concurrent tracer read nothing while irqlab measured"
    );
    drop(reader);
    assert_eq!(tracefs_mounts(), mounts);
    for p in pids {
        assert_nothing_left_by(p, &state);
    }
    assert_no_qos_request_left();
}
