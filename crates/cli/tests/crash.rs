//! Issue 12, item 1: a measurement killed with SIGKILL leaves nothing behind. Its load dies with
//! it; what only a later process can remove (its tracing instance, its private tracefs mount) is
//! recorded in irqlab's state file, and the next start (`irqlab host --cleanup`, or the next
//! measurement) removes it and says so in one line. Afterwards the tracefs instances, the mounts
//! and the process table are as they were before the first run, with tracefs unmounted
//! beforehand and with it mounted. A crash beside a running measurement is cleaned up without
//! touching the running one.
//!
//! Each scenario runs in a mount namespace of its own with a state directory of its own (see
//! `hostenv`), and checks only what it owns: the killed irqlab's instance, mount point, state
//! file and load. Needs root and tracefs; skips with the reason otherwise (CI runs as root).

mod hostenv;

use hostenv::*;
use std::process::Stdio;

/// How the next start is made.
#[derive(Copy, Clone, PartialEq)]
enum NextStart {
    HostCleanup,
    Measurement,
}

/// `measure timer` with a load, until killed.
fn measure_with_load(state: &StateDir) -> Running {
    let mut c = state.irqlab(&[
        "measure",
        "timer",
        "--trace",
        "--cpus",
        "0",
        "--duration",
        "300s",
        "--buffer-kb",
        "512",
        "--load",
        load_command(),
    ]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    Running::new(c)
}

/// Whether this host has the PM QoS device `measure timer` holds a request on.
fn has_pm_qos() -> bool {
    std::path::Path::new("/dev/cpu_dma_latency").exists()
}

/// Wait until irqlab `pid` has recorded its load's leader, its instance and its PM QoS request
/// (it measures then); the load's group.
fn wait_for_setup(state: &StateDir, pid: i32) -> i32 {
    let ready = || {
        state
            .change_of(pid, "load_group")
            .is_some_and(|c| c["leader"].is_object())
            && state.change_of(pid, "trace_instance").is_some()
            && (!has_pm_qos() || state.change_of(pid, "pm_qos").is_some())
    };
    assert!(
        wait_until(60, ready),
        "irqlab {pid} did not set up: {:?}",
        state.changes_of(pid)
    );
    state.change_of(pid, "load_group").unwrap()["leader"]["pid"]
        .as_i64()
        .unwrap() as i32
}

/// The one line saying what was cleaned up after `pid`.
fn cleanup_line(stderr: &str, pid: i32) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cleaned up after"))
        .collect();
    assert_eq!(lines.len(), 1, "one cleanup line expected:\n{stderr}");
    let prefix = format!("irqlab: cleaned up after irqlab {pid} (ended without cleaning up): ");
    assert!(lines[0].starts_with(&prefix), "{}", lines[0]);
    lines[0].to_string()
}

/// Kill a measurement with a load, check what is left, make the next start, check that nothing
/// is. With `unmount_between`, every tracefs mount goes between the two: the instance outlives
/// it, and the next start must mount tracefs to remove it.
fn sigkill_then_next_start(next: NextStart, unmount_between: bool) {
    let state = StateDir::new();
    let mut mounts_before = tracefs_mounts();
    let unmounted = mounts_before.is_empty();

    let mut irqlab = measure_with_load(&state);
    let pid = irqlab.pid();
    let load_pgid = wait_for_setup(&state, pid);
    let (instance, private) = own_names(pid);
    // Every process of the load carries its irqlab's PID in its environment.
    let marker = format!("IRQLAB_LOAD_OF={pid}:");
    assert!(
        wait_until(10, || !live_processes_with_env(&marker).is_empty()),
        "the load is not running"
    );
    let load = live_processes_with_env(&marker);
    assert!(
        load.iter()
            .all(|p| proc_stat(*p).is_some_and(|s| s.pgid == load_pgid)),
        "the load's processes {load:?} are not all in its group {load_pgid}"
    );
    assert_eq!(
        tracefs_mounts().contains(&private),
        unmounted,
        "a private mount exactly when tracefs was not mounted"
    );

    irqlab.kill9();

    // The load dies with irqlab, by itself: its watcher sends SIGTERM, SIGKILL 2 s later.
    assert!(
        wait_until(20, || live_group_members(load_pgid).is_empty()
            && live_processes_with_env(&marker).is_empty()),
        "the load outlived irqlab: group {load_pgid}: {:?}, marked: {:?}",
        live_group_members(load_pgid),
        live_processes_with_env(&marker)
    );
    // What only a later start can remove is still there, and recorded.
    assert!(
        instance_exists(&instance),
        "no instance left by the SIGKILL: this test would test nothing"
    );
    assert_eq!(tracefs_mounts().contains(&private), unmounted);
    assert!(state.change_of(pid, "trace_instance").is_some());
    if unmount_between {
        unmount_all_tracefs();
        mounts_before = Vec::new();
    }

    let out = match next {
        NextStart::HostCleanup => state.irqlab(&["host", "--cleanup"]).output(),
        NextStart::Measurement => state
            .irqlab(&["measure", "irqs", "--duration", "1s", "--buffer-kb", "512"])
            .output(),
    }
    .expect("irqlab runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let line = cleanup_line(&stderr, pid);
    eprintln!("the next start said: {line}");
    for what in [
        "tracing instance ".to_string(),
        instance.clone(),
        format!("load process group {load_pgid}"),
    ] {
        assert!(line.contains(&what), "'{what}' not in: {line}");
    }
    assert_eq!(line.contains("PM QoS request"), has_pm_qos(), "{line}");
    assert_eq!(
        line.contains(&format!("private tracefs mount {}", private.display())),
        unmounted,
        "{line}"
    );
    assert_eq!(
        line.contains("tracefs was mounted to remove it"),
        unmount_between,
        "{line}"
    );
    if next == NextStart::Measurement {
        assert!(stdout.contains("Hard IRQ handlers"), "{stdout}");
    }

    // As before the first run.
    assert_eq!(tracefs_mounts(), mounts_before);
    assert!(!private.exists(), "{} left", private.display());
    assert!(!instance_exists(&instance), "instance {instance} left");
    assert!(live_group_members(load_pgid).is_empty());
    assert!(state.files().is_empty(), "{:?}", state.files());
    assert_no_qos_request_left();
    let out = state.irqlab(&["host", "--cleanup"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "irqlab: nothing to clean up\n"
    );
}

#[test]
fn sigkill_with_tracefs_unmounted_is_cleaned_up_by_host_cleanup() {
    run_in_mount_namespace("inner_sigkill_with_tracefs_unmounted");
}

#[test]
#[ignore = "run in its own mount namespace by sigkill_with_tracefs_unmounted_is_cleaned_up_by_host_cleanup"]
fn inner_sigkill_with_tracefs_unmounted() {
    if !inner_may_run() {
        return;
    }
    unmount_all_tracefs();
    sigkill_then_next_start(NextStart::HostCleanup, false);
}

#[test]
fn sigkill_with_tracefs_mounted_is_cleaned_up_by_the_next_measurement() {
    run_in_mount_namespace("inner_sigkill_with_tracefs_mounted");
}

#[test]
#[ignore = "run in its own mount namespace by sigkill_with_tracefs_mounted_is_cleaned_up_by_the_next_measurement"]
fn inner_sigkill_with_tracefs_mounted() {
    if !inner_may_run() {
        return;
    }
    let _mounted = Mounted::default_tracefs();
    sigkill_then_next_start(NextStart::Measurement, false);
}

#[test]
fn an_instance_left_without_a_mount_is_removed_through_one_made_for_it() {
    run_in_mount_namespace("inner_instance_left_without_a_mount");
}

#[test]
#[ignore = "run in its own mount namespace by an_instance_left_without_a_mount_is_removed_through_one_made_for_it"]
fn inner_instance_left_without_a_mount() {
    if !inner_may_run() {
        return;
    }
    let _mounted = Mounted::default_tracefs();
    sigkill_then_next_start(NextStart::HostCleanup, true);
}

#[test]
fn a_crash_beside_a_running_measurement_leaves_that_one_alone() {
    run_in_mount_namespace("inner_crash_beside_a_running_measurement");
}

#[test]
#[ignore = "run in its own mount namespace by a_crash_beside_a_running_measurement_leaves_that_one_alone"]
fn inner_crash_beside_a_running_measurement() {
    if !inner_may_run() {
        return;
    }
    let _mounted = Mounted::default_tracefs();
    let state = StateDir::new();
    let mut c = state.irqlab(&[
        "measure",
        "irqs",
        "--duration",
        "300s",
        "--buffer-kb",
        "512",
    ]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let survivor = Running::new(c);
    let mut victim = measure_with_load(&state);
    let (s, v) = (survivor.pid(), victim.pid());
    wait_for_setup(&state, v);
    assert!(wait_until(30, || state
        .change_of(s, "trace_instance")
        .is_some()));
    // Two measurements at once, each in its own instance.
    let (s_instance, v_instance) = (own_names(s).0, own_names(v).0);
    assert!(instance_exists(&s_instance) && instance_exists(&v_instance));

    victim.kill9();
    let out = state.irqlab(&["host", "--cleanup"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = cleanup_line(&stderr, v);
    assert!(!line.contains(&s_instance), "{line}");
    assert!(!instance_exists(&v_instance));
    // The running measurement keeps its instance and its record, and ends normally (Ctrl-C:
    // the results so far).
    assert!(
        instance_exists(&s_instance),
        "the running measurement's instance was removed"
    );
    assert!(state.change_of(s, "trace_instance").is_some());
    survivor.signal(2);
    let out = survivor.wait_with_output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Hard IRQ handlers"));
    assert!(!instance_exists(&s_instance));
    assert!(state.files().is_empty(), "{:?}", state.files());
}

/// `irqlab host --cleanup` on state files written by hand (any user: nothing on the host is
/// touched): the one line per dead irqlab, "nothing to clean up", an unreadable file named with
/// exit status 3, and the flag refused beside the inventory's.
#[test]
fn host_cleanup_says_what_it_did_in_one_line() {
    let state = StateDir::new();
    // A process that has ended: its PID and start time name nobody now.
    let mut child = std::process::Command::new("sleep")
        .arg("0.05")
        .spawn()
        .unwrap();
    let pid = child.id();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    child.wait().unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let record = serde_json::json!({
        "format": 1,
        "owner": {"pid": pid, "start_time_ticks": start},
        "boot_id": boot.trim(),
        "command": "irqlab measure timer",
        "changes": [
            {"id": 1, "kind": "pm_qos", "path": "/dev/cpu_dma_latency", "target_us": 0}
        ]
    });
    let file = state.path().join(format!("{pid}-{start}.json"));
    std::fs::write(&file, serde_json::to_vec(&record).unwrap()).unwrap();
    let out = state.irqlab(&["host", "--cleanup"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "irqlab: cleaned up after irqlab {pid} (ended without cleaning up): PM QoS request \
             of 0 us on /dev/cpu_dma_latency (released by the kernel when irqlab {pid} ended)\n"
        )
    );
    assert!(out.stdout.is_empty());
    assert!(!file.exists());
    let out = state.irqlab(&["host", "--cleanup"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "irqlab: nothing to clean up\n"
    );

    std::fs::write(&file, "{ half").unwrap();
    let out = state.irqlab(&["host", "--cleanup"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("unreadable state file {}", file.display()))
            && stderr.contains("by hand"),
        "{stderr}"
    );
    std::fs::remove_file(&file).unwrap();

    let out = state
        .irqlab(&["host", "--cleanup", "--json", "x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cleanup"));
}
