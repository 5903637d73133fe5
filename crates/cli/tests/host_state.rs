//! `irqlab measure irqs` and `measure timer` leave the host's tracing state (and the timer's
//! `/dev/cpu_dma_latency` request) as they found them: after a normal run,
//! after Ctrl-C (SIGINT) and after SIGTERM, with tracefs unmounted beforehand and with tracefs
//! mounted and configured by someone else. Needs root and tracefs; skips with the reason
//! otherwise (CI runs as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MOUNT: &str = "/sys/kernel/tracing";

fn irqlab() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_irqlab"))
}

fn is_root() -> bool {
    // /proc/self/status: "Uid:\treal\teffective\t..."
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn tracefs_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("tracefs"))
        .map(str::to_string)
        .collect()
}

fn skip_reason() -> Option<String> {
    if !is_root() {
        return Some("not root".into());
    }
    let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fs.lines().any(|l| l.ends_with("tracefs")) {
        return Some("this kernel has no tracefs".into());
    }
    if !Path::new(MOUNT).is_dir() {
        return Some(format!("no {MOUNT} mount point"));
    }
    None
}

/// Every global setting a tracing tool could touch, plus the list of instances.
fn global_state(mount: &Path) -> Vec<(String, String)> {
    let mut files = vec![
        "tracing_on".to_string(),
        "trace_clock".into(),
        "buffer_size_kb".into(),
        "current_tracer".into(),
        "set_event".into(),
        "tracing_cpumask".into(),
        "events/irq/enable".into(),
        "events/irq/filter".into(),
        "events/irq/irq_handler_entry/enable".into(),
        "events/irq/irq_handler_entry/filter".into(),
        "events/irq/softirq_raise/enable".into(),
        "events/irq_vectors/local_timer_entry/enable".into(),
        "events/sched/sched_switch/enable".into(),
    ];
    if mount.join("buffer_percent").exists() {
        files.push("buffer_percent".into());
    }
    let mut state: Vec<(String, String)> = files
        .into_iter()
        .map(|f| {
            let v = std::fs::read_to_string(mount.join(&f)).unwrap_or_else(|e| format!("<{e}>"));
            (f, v)
        })
        .collect();
    let mut instances: Vec<String> = std::fs::read_dir(mount.join("instances"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    instances.sort();
    state.push(("instances/".into(), instances.join(",")));
    state
}

/// The current PM QoS CPU latency target: reading /dev/cpu_dma_latency returns it (an i32).
fn cpu_dma_latency() -> Option<i32> {
    let b = std::fs::read("/dev/cpu_dma_latency").ok()?;
    Some(i32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

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
        &["measure", "timer", "--buffer-kb", "512"],
        "thread_latency[cpu",
    ),
];

/// Run both measurements; for a signal ending, deliver it after 1 s of a 60 s run.
fn run_measure(ending: Ending) {
    for (args, expect) in MEASUREMENTS {
        run_one(args, expect, &ending);
    }
}

fn run_one(args: &[&str], expect: &str, ending: &Ending) {
    let mut cmd = Command::new(irqlab());
    cmd.args(args)
        .arg("--duration")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match ending {
        Ending::Normal => {
            let out = cmd.arg("1s").output().expect("irqlab runs");
            assert!(
                out.status.success(),
                "stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains(expect), "{args:?}: {stdout}");
        }
        Ending::Signal(sig) => {
            let sig = *sig;
            let child = cmd.arg("60s").spawn().expect("irqlab starts");
            std::thread::sleep(Duration::from_secs(1));
            let started = Instant::now();
            let status = Command::new("kill")
                .args([format!("-{sig}"), child.id().to_string()])
                .status()
                .expect("kill runs");
            assert!(status.success());
            let out = child.wait_with_output().expect("irqlab ends");
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "irqlab took {:?} to stop after signal {sig}",
                started.elapsed()
            );
            assert!(
                out.status.success(),
                "after signal {sig}: {:?}, stderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.contains(expect),
                "{args:?}, results so far: {stdout}"
            );
        }
    }
}

/// Puts the global tracing state set up by the test back, even if an assertion fails.
struct Restore {
    mount: PathBuf,
    saved: Vec<(String, String)>,
    unmount: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        for (f, v) in self.saved.iter().rev() {
            let v = match f.as_str() {
                // `trace_clock` reads as "[local] global ..."; write back the selected one.
                "trace_clock" => v
                    .split_whitespace()
                    .find(|w| w.starts_with('['))
                    .map(|w| w.trim_matches(['[', ']']).to_string())
                    .unwrap_or_default(),
                _ => v.trim().to_string(),
            };
            let _ = std::fs::write(self.mount.join(f), v);
        }
        if self.unmount {
            let _ = Command::new("umount").arg(&self.mount).status();
        }
    }
}

#[test]
fn tracing_state_is_unchanged_after_normal_exit_sigint_and_sigterm() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    // 1. With tracefs unmounted (if it is): irqlab mounts it at a private mount point and
    //    unmounts it afterwards.
    if tracefs_mounts().is_empty() {
        for ending in [Ending::Normal, Ending::Signal(2)] {
            run_measure(ending);
            assert!(
                tracefs_mounts().is_empty(),
                "tracefs left mounted: {:?}",
                tracefs_mounts()
            );
            let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
                .unwrap()
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("irqlab-tracefs-")
                })
                .map(|e| e.path())
                .collect();
            assert!(leftovers.is_empty(), "mount points left: {leftovers:?}");
        }
    } else {
        eprintln!("tracefs already mounted: the unmounted case is not exercised");
    }

    // 2. With tracefs mounted and configured by someone else: nothing of theirs changes.
    let unmount = tracefs_mounts().is_empty();
    if unmount {
        let ok = Command::new("mount")
            .args(["-t", "tracefs", "nodev", MOUNT])
            .status()
            .expect("mount runs")
            .success();
        assert!(ok, "could not mount tracefs for the test");
    }
    let mount = PathBuf::from(MOUNT);
    let restore = Restore {
        mount: mount.clone(),
        saved: [
            "trace_clock",
            "tracing_on",
            "events/sched/sched_switch/enable",
        ]
        .iter()
        .map(|f| {
            (
                f.to_string(),
                std::fs::read_to_string(mount.join(f)).unwrap_or_default(),
            )
        })
        .collect(),
        unmount,
    };
    // Someone else's session: a non-default clock, an event enabled, tracing off. (Not the
    // buffer size: a fresh kernel reads "7 (expanded: 1408)", a state no write restores.)
    for (f, v) in [
        ("trace_clock", "global"),
        ("events/sched/sched_switch/enable", "1"),
        ("tracing_on", "0"),
    ] {
        std::fs::write(mount.join(f), v).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let before = global_state(&mount);
    let qos_before = cpu_dma_latency();
    for ending in [Ending::Normal, Ending::Signal(2), Ending::Signal(15)] {
        run_measure(ending);
        let after = global_state(&mount);
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(b, a, "{} changed", b.0);
        }
        assert_eq!(tracefs_mounts().len(), 1, "mounts: {:?}", tracefs_mounts());
        assert_eq!(
            cpu_dma_latency(),
            qos_before,
            "the PM QoS request was left in place"
        );
    }
    drop(restore);
}
