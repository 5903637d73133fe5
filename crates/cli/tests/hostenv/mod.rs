//! What the host tests share: when they can run, a private mount namespace to run in, views of
//! tracefs, irqlab's state files, and guards that put back what a test set up even when an
//! assertion fails.
//!
//! A test that mounts or unmounts tracefs runs in a mount namespace of its own (unshare(1)
//! `--mount --propagation private`): it can unmount every tracefs mount, or add some, without
//! anyone else on the machine seeing it, and whatever it mounted goes with the namespace. What
//! is not per namespace is restored by guards: tracing instances (one set for the whole system,
//! whatever the mount), processes, files.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Set for a test binary run inside its private mount namespace.
const INNER_ENV: &str = "IRQLAB_TEST_IN_MOUNT_NS";

/// What `/dev/cpu_dma_latency` reads with no request held: `PM_QOS_CPU_LATENCY_DEFAULT_VALUE`
/// (`include/linux/pm_qos.h`, 2000 s in us).
pub const QOS_DEFAULT_US: i32 = 2_000_000_000;

/// The irqlab under test: this build's, or `$IRQLAB_BIN` (to show that a test fails with an
/// older binary).
pub fn irqlab() -> PathBuf {
    std::env::var_os("IRQLAB_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_irqlab")))
}

pub fn is_root() -> bool {
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

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Why the tests of tracefs and mounts cannot run here, if they cannot.
pub fn skip_reason() -> Option<String> {
    if !is_root() {
        return Some("not root".into());
    }
    let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fs.lines().any(|l| l.ends_with("tracefs")) {
        return Some("this kernel has no tracefs".into());
    }
    for program in ["unshare", "mount", "umount"] {
        if !have(program) {
            return Some(format!(
                "no {program}(8) to set up a private mount namespace"
            ));
        }
    }
    None
}

/// Run the `#[ignore]`d test `name` of this test binary in a private mount namespace, showing
/// its output; fail if it fails. Skips with the reason where it cannot run.
pub fn run_in_mount_namespace(name: &str) {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    run_inner(
        name,
        &["--mount", "--propagation", "private"],
        "1",
        "mount namespace",
    );
}

/// Why the tests in a PID namespace of their own cannot run here, if they cannot.
pub fn pid_namespace_skip_reason() -> Option<String> {
    if !is_root() {
        return Some("not root (a PID namespace of its own needs it)".into());
    }
    if !have("unshare") {
        return Some("no unshare(1) to set up a private PID namespace".into());
    }
    None
}

/// Run the `#[ignore]`d test `name` of this test binary as PID 1 of a PID namespace and a mount
/// namespace of its own (with its own `/proc`): a test that kills processes, or checks that
/// irqlab does not kill every process it may signal, can then reach no process outside it.
/// Skips with the reason where it cannot run.
pub fn run_in_pid_namespace(name: &str) {
    if let Some(why) = pid_namespace_skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    run_inner(
        name,
        &[
            "--mount",
            "--propagation",
            "private",
            "--pid",
            "--fork",
            "--mount-proc",
        ],
        "pid",
        "PID namespace",
    );
}

/// `unshare UNSHARE -- THIS-TEST-BINARY --exact --ignored NAME`, with [`INNER_ENV`] set to
/// `inner` so that the inner test knows where it runs; its output shown; fail if it fails.
fn run_inner(name: &str, unshare: &[&str], inner: &str, what: &str) {
    let out = Command::new("unshare")
        .args(unshare)
        .arg("--")
        .arg(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
            name,
        ])
        .env(INNER_ENV, inner)
        .output()
        .expect("unshare runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    eprintln!("--- {name}, in its own {what}:\n{stdout}{stderr}");
    assert!(out.status.success(), "{name} failed: {:?}", out.status);
    assert!(stdout.contains("1 passed"), "{name} did not run");
}

/// The start of each inner test of [`run_in_pid_namespace`]: true to go on; false (with the
/// reason printed) when run by hand outside its namespace.
pub fn inner_pid_may_run() -> bool {
    if std::env::var_os(INNER_ENV).is_some_and(|v| v == "pid") && std::process::id() == 1 {
        true
    } else {
        eprintln!("skipped: runs only as PID 1 of its own PID namespace (see hostenv)");
        false
    }
}

/// Whether this process runs in a private mount namespace set up by [`run_in_mount_namespace`]
/// (never change mounts otherwise).
pub fn inside_private_namespace() -> bool {
    let ns = |p: &str| std::fs::read_link(p).ok();
    std::env::var_os(INNER_ENV).is_some()
        && ns("/proc/self/ns/mnt").is_some()
        && ns("/proc/self/ns/mnt") != ns("/proc/1/ns/mnt")
}

/// The start of each inner test: true to go on; false (with the reason printed) when run by
/// hand outside its namespace.
pub fn inner_may_run() -> bool {
    if inside_private_namespace() {
        true
    } else {
        eprintln!("skipped: runs only inside its own mount namespace (see hostenv)");
        false
    }
}

/// Every tracefs mount point this process sees, in `/proc/self/mounts` order.
pub fn tracefs_mounts() -> Vec<PathBuf> {
    mounts_of_type("tracefs")
}

fn mounts_of_type(fstype: &str) -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == fstype).then(|| PathBuf::from(f[1]))
        })
        .collect()
}

/// Unmount every tracefs (and debugfs, whose `tracing` would mount it again) in this
/// namespace. Only inside a private namespace.
pub fn unmount_all_tracefs() {
    assert!(
        inside_private_namespace(),
        "refusing to unmount outside a test namespace"
    );
    for _ in 0..4 {
        let mut points = tracefs_mounts();
        points.extend(mounts_of_type("debugfs"));
        if points.is_empty() {
            return;
        }
        for p in points.iter().rev() {
            // A mount below one unmounted first is gone with it: quietly.
            let _ = Command::new("umount")
                .arg("-l")
                .arg(p)
                .stderr(Stdio::null())
                .status();
        }
    }
    assert!(
        tracefs_mounts().is_empty(),
        "tracefs still mounted: {:?}",
        tracefs_mounts()
    );
}

/// A mount this test made; unmounted (and its directory removed, if the test made it) on drop.
pub struct Mounted {
    pub point: PathBuf,
    remove_dir: bool,
}

impl Mounted {
    /// Mount `fstype` at `point` (created if missing). Only inside a private namespace.
    pub fn new(fstype: &str, point: &Path) -> Mounted {
        assert!(
            inside_private_namespace(),
            "refusing to mount outside a test namespace"
        );
        let remove_dir = !point.exists();
        if remove_dir {
            std::fs::create_dir_all(point).unwrap();
        }
        let guard = Mounted {
            point: point.to_path_buf(),
            remove_dir,
        };
        let ok = Command::new("mount")
            .args(["-t", fstype, "nodev"])
            .arg(point)
            .status()
            .expect("mount runs")
            .success();
        assert!(ok, "could not mount {fstype} at {}", point.display());
        guard
    }

    /// tracefs at `/sys/kernel/tracing`, unless it is mounted there already.
    pub fn default_tracefs() -> Option<Mounted> {
        let point = Path::new("/sys/kernel/tracing");
        (!tracefs_mounts().iter().any(|m| m == point)).then(|| Mounted::new("tracefs", point))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.point).status();
        if self.remove_dir {
            let _ = std::fs::remove_dir(&self.point);
        }
    }
}

/// A directory to look at tracefs through: a mount this process sees, or a temporary one. Every
/// mount shows the same instances (tracefs has one superblock).
pub struct View {
    pub root: PathBuf,
    _mounted: Option<(Mounted, tempfile::TempDir)>,
}

impl View {
    pub fn new() -> View {
        if let Some(m) = tracefs_mounts().into_iter().next() {
            return View {
                root: m,
                _mounted: None,
            };
        }
        let dir = tempfile::tempdir().unwrap();
        let m = Mounted::new("tracefs", dir.path());
        View {
            root: dir.path().to_path_buf(),
            _mounted: Some((m, dir)),
        }
    }

    pub fn instance(&self, name: &str) -> PathBuf {
        self.root.join("instances").join(name)
    }
}

/// Whether a tracing instance exists, looked at through any mount (mounting one for the look,
/// and unmounting it again, if none is mounted).
pub fn instance_exists(name: &str) -> bool {
    View::new().instance(name).exists()
}

/// A tracing instance this test created; removed on drop.
pub struct Instance {
    pub dir: PathBuf,
}

impl Instance {
    pub fn new(view: &View, name: &str) -> Instance {
        let dir = view.instance(name);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Instance { dir }
    }

    pub fn write(&self, file: &str, value: &str) {
        std::fs::write(self.dir.join(file), value).unwrap_or_else(|e| panic!("{file}: {e}"));
    }

    pub fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file)).unwrap_or_else(|e| format!("<{e}>"))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(16) => {
                    // EBUSY: a reader is still closing.
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => break,
            }
        }
    }
}

/// A process this test started; killed (with its process group, if it leads one) on drop.
pub struct Running {
    child: Option<Child>,
}

impl Running {
    pub fn new(mut cmd: Command) -> Running {
        Running {
            child: Some(cmd.spawn().expect("the process starts")),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    /// Send `signal` (a number, as kill(1) takes it).
    pub fn signal(&self, signal: i32) {
        let ok = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok, "kill -{signal} {}", self.pid());
    }

    /// SIGKILL, and reap it.
    pub fn kill9(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Wait for it to end by itself, with its output (if piped).
    pub fn wait_with_output(mut self) -> std::process::Output {
        self.child
            .take()
            .expect("running")
            .wait_with_output()
            .expect("it ends")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(c) = &mut self.child else { return };
        if let Ok(None) = c.try_wait() {
            let pid = c.id() as i32;
            if proc_stat(pid).is_some_and(|s| s.pgid == pid) {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{pid}")])
                    .status();
            }
            self.kill9();
        }
    }
}

/// State (field 3), process group (field 5) and start time (field 22, clock ticks after boot)
/// from `/proc/PID/stat`.
pub struct Stat {
    pub state: char,
    pub pgid: i32,
    pub start_time_ticks: u64,
}

pub fn proc_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some(Stat {
        state: f.first()?.chars().next()?,
        pgid: f.get(2)?.parse().ok()?,
        start_time_ticks: f.get(19)?.parse().ok()?,
    })
}

/// The tracing instance and the private mount point irqlab `pid` (running) names its own:
/// `irqlab-PID-START` and `irqlab-tracefs-PID-START` in the temporary directory.
pub fn own_names(pid: i32) -> (String, PathBuf) {
    let start = proc_stat(pid)
        .unwrap_or_else(|| panic!("irqlab {pid} is not running"))
        .start_time_ticks;
    (
        format!("irqlab-{pid}-{start}"),
        std::env::temp_dir().join(format!("irqlab-tracefs-{pid}-{start}")),
    )
}

/// The tracing instances and private mount points that irqlab `pid` named its own (by the
/// `PID-` of their names; it may have ended).
pub fn left_by(pid: i32) -> Vec<PathBuf> {
    let of = |dir: &Path, prefix: String| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut left = of(
        &View::new().root.join("instances"),
        format!("irqlab-{pid}-"),
    );
    left.extend(of(&std::env::temp_dir(), format!("irqlab-tracefs-{pid}-")));
    left
}

fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Processes of group `pgid` that have not ended (zombies excluded: they wait for their parent
/// to reap them, nothing runs).
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|p| proc_stat(*p).is_some_and(|s| s.pgid == pgid && !matches!(s.state, 'Z' | 'X')))
        .collect()
}

/// Processes whose environment has a variable starting with `prefix` (`NAME=value...`),
/// zombies excluded.
pub fn live_processes_with_env(prefix: &str) -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|p| proc_stat(*p).is_some_and(|s| !matches!(s.state, 'Z' | 'X')))
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .unwrap_or_default()
                .split(|b| *b == 0)
                .any(|v| v.starts_with(prefix.as_bytes()))
        })
        .collect()
}

/// Poll `done` every 50 ms for up to `secs`.
pub fn wait_until(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if done() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// irqlab's state directory for one test (`IRQLAB_STATE_DIR`), so that no other irqlab on the
/// machine cleans up after this test's crashes, or this test after theirs. On drop, whatever a
/// failed test left recorded there is undone (`irqlab host --cleanup`).
pub struct StateDir {
    dir: tempfile::TempDir,
}

impl StateDir {
    pub fn new() -> StateDir {
        StateDir {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `irqlab ARGS` keeping its state here.
    pub fn irqlab(&self, args: &[&str]) -> Command {
        let mut c = Command::new(irqlab());
        c.args(args).env("IRQLAB_STATE_DIR", self.path());
        c
    }

    /// The state files in it.
    pub fn files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.path())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    /// The changes recorded by the irqlab process `pid`, if it has a file.
    pub fn changes_of(&self, pid: i32) -> Vec<serde_json::Value> {
        self.files()
            .into_iter()
            .filter(|f| {
                f.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{pid}-")))
            })
            .filter_map(|f| std::fs::read(f).ok())
            .filter_map(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .flat_map(|r| r["changes"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// The recorded change of `kind` of the irqlab process `pid`.
    pub fn change_of(&self, pid: i32, kind: &str) -> Option<serde_json::Value> {
        self.changes_of(pid).into_iter().find(|c| c["kind"] == kind)
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        if !self.files().is_empty() {
            let _ = self.irqlab(&["host", "--cleanup"]).status();
        }
    }
}

/// The PM QoS CPU latency target now: reading `/dev/cpu_dma_latency` returns it (an i32).
pub fn cpu_dma_latency() -> Option<i32> {
    let b = std::fs::read("/dev/cpu_dma_latency").ok()?;
    Some(i32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

/// Processes holding `/dev/cpu_dma_latency` open (each open is a request).
pub fn qos_holders() -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|p| {
            std::fs::read_dir(format!("/proc/{p}/fd")).is_ok_and(|d| {
                d.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|t| t == Path::new("/dev/cpu_dma_latency"))
                })
            })
        })
        .collect()
}

/// After irqlab ended, no PM QoS request of its remains: the target is back at the default
/// unless another process holds a request (another measurement on this shared machine).
///
/// The holders are read before and after the target: a concurrent test's measurement that
/// closes its request between the two reads would otherwise look like a request nobody holds.
pub fn assert_no_qos_request_left() {
    let before = qos_holders();
    let value = cpu_dma_latency();
    let mut holders = qos_holders();
    holders.extend(before);
    if value.is_some() && holders.is_empty() {
        assert_eq!(
            value,
            Some(QOS_DEFAULT_US),
            "a PM QoS request was left in place"
        );
    } else {
        eprintln!("PM QoS target {value:?}, held by {holders:?}: not checked");
    }
}

/// The load to run: stress-ng's CPU workers if installed (a leader with worker children), else
/// a shell with two children.
pub fn load_command() -> &'static str {
    if have("stress-ng") {
        "stress-ng --cpu 1"
    } else {
        "sleep 600 & sleep 600"
    }
}
