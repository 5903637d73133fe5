//! Issue 37: what a crash between two applies, a tree given by a relative path, or a record
//! naming any process could still do to the host, each as a test that failed before its fix.
//!
//! - An `--apply` after a crashed `--apply` plans from the masks it writes over: it cleans up
//!   first, under the lock it holds until it has committed, then reads and plans; the masks are
//!   read back at the end and a difference is exit status 3, naming the IRQs.
//! - A second `--apply` waiting on the lock while the first is SIGKILLed sees the first as dead
//!   (its lock is released before it is a zombie), so no record of it is left to undo the
//!   second's plan later (a race: repeated).
//! - `--apply --root TREE` given as a relative path is restored from anywhere; a tree's records
//!   are kept in the tree, never in the host's `/run/irqlab`.
//! - `host --cleanup` never signals a group below 2 nor one without the dead irqlab's marker
//!   (run as PID 1 of a PID namespace of its own, where `kill(-1)` reaches nothing outside).
//! - A `--restore` killed halfway is finished by `host --cleanup`; a crashed apply's uncommitted
//!   record (`.affinity-applied.json.tmp`) is removed by it.
//!
//! The crashes are made with strace(1)'s fault injection at a chosen write of a tree's
//! `smp_affinity` (skipped, with the reason, where strace is missing). Every scenario writes
//! only a fake tree (`crates/host/tests/fake_host`) and a state directory of its own.

#[path = "../../host/tests/fake_host/mod.rs"]
mod fake_host;
mod hostenv;

use fake_host::FakeHost;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// `irqlab ARGS` on `h`'s tree, its state in `h`'s state directory.
fn irqlab(h: &FakeHost, args: &[&str]) -> Command {
    let mut c = Command::new(hostenv::irqlab());
    c.env("IRQLAB_STATE_DIR", h.state_dir()).args(args);
    c
}

/// `plan affinity --host --root TREE --restore`.
fn restore_args(h: &FakeHost) -> Vec<&str> {
    vec![
        "plan",
        "affinity",
        "--host",
        "--root",
        h.root().to_str().unwrap(),
        "--restore",
    ]
}

/// `--restore` on `h`'s tree, which must succeed.
fn restore(h: &FakeHost) {
    let out = irqlab(h, &restore_args(h)).output().unwrap();
    assert!(out.status.success(), "{}", show("restore", &out));
}

fn plan_args<'a>(h: &'a FakeHost, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "plan",
        "affinity",
        "--host",
        "--root",
        h.root().to_str().unwrap(),
        "--flow",
        "eth0:eth1",
    ];
    v.extend_from_slice(extra);
    v
}

fn show(what: &str, out: &Output) -> String {
    let text = format!(
        "{what}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    text
}

/// The masks the plan of `h` sets: (IRQ, mask), from its `echo MASK > /proc/irq/N/...` lines.
fn planned(h: &FakeHost) -> Vec<(u32, String)> {
    let out = irqlab(h, &plan_args(h, &[])).output().unwrap();
    assert!(out.status.success(), "{}", show("plan", &out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (mask, file) = l.strip_prefix("  echo ")?.split_once(" > ")?;
            let irq = file
                .strip_prefix("/proc/irq/")?
                .strip_suffix("/smp_affinity")?;
            Some((irq.parse().ok()?, mask.to_string()))
        })
        .collect()
}

fn mask_of(h: &FakeHost, irq: u32) -> String {
    h.mask(irq).trim().to_string()
}

/// The IRQs of `plan` whose mask in the tree is not the planned one.
fn not_as_planned(h: &FakeHost, plan: &[(u32, String)]) -> Vec<(u32, String, String)> {
    plan.iter()
        .filter(|(irq, mask)| mask_of(h, *irq) != *mask)
        .map(|(irq, mask)| (*irq, mask.clone(), mask_of(h, *irq)))
        .collect()
}

fn state_files(h: &FakeHost) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(h.state_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Why strace-made crashes cannot run here, if they cannot.
fn strace_skip_reason() -> Option<&'static str> {
    let ok = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (!ok).then_some("no strace(1) to crash irqlab at a chosen write (apt-get install strace)")
}

/// `irqlab ARGS` under strace, with `inject` (strace's `-e inject=write:...`) at the writes of
/// the `smp_affinity` files of `irqs` in `h`'s tree.
fn under_strace(h: &FakeHost, irqs: &[u32], inject: &str, args: &[&str]) -> Command {
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=write", "-e"])
        .arg(format!("inject=write:{inject}"));
    for irq in irqs {
        c.arg("-P")
            .arg(h.path(&format!("proc/irq/{irq}/smp_affinity")));
    }
    c.arg(hostenv::irqlab())
        .args(args)
        .env("IRQLAB_STATE_DIR", h.state_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The PID of the irqlab whose state file is in `h`'s state directory (`PID-START.json`).
fn recorded_pid(h: &FakeHost) -> Option<i32> {
    state_files(h).iter().find_map(|n| {
        let (pid, rest) = n.split_once('-')?;
        rest.ends_with(".json").then(|| pid.parse().ok())?
    })
}

/// Issue 37, item 1: an `--apply` SIGKILLed after its first mask write leaves that IRQ with the
/// planned mask and its record; the next `--apply` must not take that IRQ for "already as
/// planned" and then have its own start-up cleanup put the old mask back under it. Afterwards
/// every mask is the plan's, only the applied record is left, and `--restore` puts back the
/// masks from before the crashed apply, byte for byte.
#[test]
fn an_apply_after_a_crashed_apply_plans_from_the_masks_it_writes_over() {
    if let Some(why) = strace_skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let h = FakeHost::standard();
    let before = h.snapshot();
    let plan = planned(&h);
    let irqs: Vec<u32> = plan.iter().map(|p| p.0).collect();
    let out = under_strace(
        &h,
        &irqs,
        "signal=SIGKILL:when=2",
        &plan_args(&h, &["--apply"]),
    )
    .output()
    .unwrap();
    show("the apply killed at its first write", &out);
    assert_eq!(
        not_as_planned(&h, &plan).len(),
        plan.len() - 1,
        "the killed apply wrote one mask"
    );
    assert!(recorded_pid(&h).is_some(), "{:?}", state_files(&h));

    let out = irqlab(&h, &plan_args(&h, &["--apply"])).output().unwrap();
    let text = show("the next apply", &out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("cleaned up after irqlab"),
        "the crash was not cleaned up first: {text}"
    );
    assert_eq!(
        not_as_planned(&h, &plan),
        vec![],
        "reported applied, not in force: {text}"
    );
    assert_eq!(state_files(&h), vec!["affinity-applied.json"]);
    restore(&h);
    assert_eq!(h.snapshot(), before, "the masks from before are not back");
}

/// Issue 37, item 1: a second `--apply` that waits on the lock while the first (stalled by
/// strace at its first write) is SIGKILLed. The first's lock goes with its files, before it is
/// a zombie; the second must take it for dead all the same, or its record stays and a later
/// cleanup undoes an IRQ the second committed. Repeated: it was a race (1 in 5).
#[test]
fn a_second_apply_waiting_on_the_lock_while_the_first_is_killed_leaves_only_its_own_plan() {
    if let Some(why) = strace_skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    for round in 0..5 {
        let h = FakeHost::standard();
        let before = h.snapshot();
        let plan = planned(&h);
        let irqs: Vec<u32> = plan.iter().map(|p| p.0).collect();
        let mut first = hostenv::Running::new(under_strace(
            &h,
            &irqs,
            "delay_enter=3000000:when=1",
            &plan_args(&h, &["--apply"]),
        ));
        assert!(
            hostenv::wait_until(20, || recorded_pid(&h).is_some()),
            "round {round}: the first apply recorded nothing"
        );
        let pid = recorded_pid(&h).unwrap();
        let mut second_cmd = irqlab(&h, &plan_args(&h, &["--apply"]));
        second_cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let second = hostenv::Running::new(second_cmd);
        // Waiting on the lock by now (or still starting: either way it plans after the kill).
        std::thread::sleep(Duration::from_millis(300));
        let killed = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success(), "round {round}: kill -KILL {pid}");
        let out = second.wait_with_output();
        first.kill9();
        let text = show(&format!("round {round}: the second apply"), &out);
        assert!(out.status.success(), "round {round}: {text}");
        assert_eq!(not_as_planned(&h, &plan), vec![], "round {round}: {text}");
        assert_eq!(
            state_files(&h),
            vec!["affinity-applied.json"],
            "round {round}: the killed apply's record is left beside the committed plan"
        );
        let out = irqlab(&h, &["host", "--cleanup"]).output().unwrap();
        show(&format!("round {round}: host --cleanup"), &out);
        assert!(out.status.success());
        assert_eq!(
            not_as_planned(&h, &plan),
            vec![],
            "round {round}: a cleanup undid the committed plan"
        );
        restore(&h);
        assert_eq!(h.snapshot(), before, "round {round}");
    }
}

/// Issue 37, item 1: the masks are read back after the apply, the ones it did not need to write
/// too; one that is not the plan's (here: changed while the apply stalled, as irqbalance
/// would) is exit status 3, naming the IRQ, not "Applied".
#[test]
fn a_mask_that_is_not_the_plans_after_the_apply_is_exit_3_naming_the_irq() {
    if let Some(why) = strace_skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let h = FakeHost::standard();
    let plan = planned(&h);
    // One IRQ already has its planned mask: the apply does not write it.
    let (kept, kept_mask) = plan.last().unwrap().clone();
    h.irq(kept, &kept_mask, "", "");
    let written: Vec<u32> = plan.iter().map(|p| p.0).filter(|i| *i != kept).collect();
    let apply = hostenv::Running::new(under_strace(
        &h,
        &written,
        "delay_enter=1500000:when=1",
        &plan_args(&h, &["--apply"]),
    ));
    assert!(hostenv::wait_until(20, || recorded_pid(&h).is_some()));
    std::fs::write(h.path(&format!("proc/irq/{kept}/smp_affinity")), "f\n").unwrap();
    let out = apply.wait_with_output();
    let text = show("the apply", &out);
    // strace passes the traced program's exit status on.
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains(&format!("the plan is not in force: IRQ {kept} has f")),
        "{text}"
    );
    restore(&h);
}

/// Issue 37, item 2: `--apply --root TREE` with TREE relative is restored from another
/// directory through another spelling of the path; the record names the canonical tree and is
/// kept in the tree (`TREE/run/irqlab`), not in the host's `/run/irqlab`; a later apply is not
/// refused.
#[test]
fn an_apply_on_a_relative_tree_is_restored_and_kept_in_the_tree() {
    let h = FakeHost::standard();
    let before = h.snapshot();
    let host_dir = Path::new("/run/irqlab");
    let listing = |d: &Path| -> Option<Vec<PathBuf>> {
        std::fs::read_dir(d)
            .ok()
            .map(|r| r.flatten().map(|e| e.path()).collect())
    };
    let host_before = listing(host_dir);
    // Whatever the test finds, a host directory it made goes (an old irqlab made one).
    struct RemoveIfNew(bool);
    impl Drop for RemoveIfNew {
        fn drop(&mut self) {
            if self.0 {
                let _ = std::fs::remove_dir_all("/run/irqlab");
            }
        }
    }
    let _guard = RemoveIfNew(host_before.is_none());
    let parent = h.root().parent().unwrap();
    let name = h.root().file_name().unwrap().to_str().unwrap();
    let run = |cwd: &Path, root: &str, flag: &str| -> String {
        let out = Command::new(hostenv::irqlab())
            .env_remove("IRQLAB_STATE_DIR")
            .current_dir(cwd)
            .args(["plan", "affinity", "--host", "--root", root, flag])
            .args(if flag == "--apply" {
                &["--flow", "eth0:eth1"][..]
            } else {
                &[]
            })
            .output()
            .unwrap();
        let text = show(&format!("--root {root} {flag} in {}", cwd.display()), &out);
        assert!(out.status.success(), "{text}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let applied = run(parent, name, "--apply");
    assert!(applied.contains("Applied: "), "{applied}");
    let record = h.path("run/irqlab/affinity-applied.json");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).expect("the record is in the tree"))
            .unwrap();
    assert_eq!(
        json["root"].as_str().map(PathBuf::from),
        Some(h.root().canonicalize().unwrap()),
        "the record's tree"
    );
    assert_eq!(
        listing(host_dir),
        host_before,
        "the host's state directory holds the tree's plan"
    );
    let spelled = format!("{}/./{name}", parent.display());
    let restored = run(Path::new("/"), &spelled, "--restore");
    assert!(restored.starts_with("Restored the masks"), "{restored}");
    assert_eq!(h.snapshot(), before, "not every byte is back");
    // Applied and restored again: nothing refuses it.
    run(parent, name, "--apply");
    run(parent, &format!("./{name}"), "--restore");
    assert_eq!(h.snapshot(), before);
    assert_eq!(listing(host_dir), host_before);
}

/// A record as irqlab writes it: owner `dead` (a process that has ended), `changes`.
fn write_record(dir: &Path, dead: (i32, u64), changes: serde_json::Value) {
    std::fs::create_dir_all(dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let record = serde_json::json!({
        "format": 1,
        "owner": {"pid": dead.0, "start_time_ticks": dead.1},
        "boot_id": boot.trim(),
        "command": "irqlab measure timer --load x",
        "changes": changes,
    });
    std::fs::write(
        dir.join(format!("{}-{}.json", dead.0, dead.1)),
        serde_json::to_vec(&record).unwrap(),
    )
    .unwrap();
}

/// `/proc/PID/stat`'s start time (field 22).
fn start_time(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// A process that has ended: its PID and start time name nobody.
fn dead_process() -> (i32, u64) {
    let mut c = Command::new("sleep").arg("0.01").spawn().unwrap();
    let id = (c.id() as i32, start_time(c.id() as i32));
    c.wait().unwrap();
    id
}

/// Issue 37, item 5: a record whose load "leader" is PID 1 (init), or any live process that
/// is not the dead irqlab's load, has nothing signalled: before, PID 1 became `kill(-1,
/// SIGKILL)` and every process died. Runs as PID 1 of a PID namespace of its own.
#[test]
fn a_record_naming_init_or_a_stranger_as_its_load_kills_nothing() {
    hostenv::run_in_pid_namespace("inner_a_record_naming_init_or_a_stranger_kills_nothing");
}

#[test]
#[ignore = "run by a_record_naming_init_or_a_stranger_as_its_load_kills_nothing, as PID 1"]
fn inner_a_record_naming_init_or_a_stranger_kills_nothing() {
    if !hostenv::inner_pid_may_run() {
        return;
    }
    use std::os::unix::process::CommandExt;
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("irqlab");
    // A bystander in this process's group, and a stranger leading a group of its own.
    let mut bystander = Command::new("sleep").arg("30").spawn().unwrap();
    let mut stranger = Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let stranger_pid = stranger.id() as i32;
    let leader = |pid: i32| serde_json::json!({"pid": pid, "start_time_ticks": start_time(pid)});
    write_record(
        &dir,
        dead_process(),
        serde_json::json!([
            {"id": 1, "kind": "load_group", "command": "x", "leader": leader(1)},
        ]),
    );
    write_record(
        &dir,
        dead_process(),
        serde_json::json!([
            {"id": 1, "kind": "load_group", "command": "x", "leader": leader(stranger_pid)},
        ]),
    );
    let out = Command::new(hostenv::irqlab())
        .env("IRQLAB_STATE_DIR", &dir)
        .args(["host", "--cleanup"])
        .output()
        .unwrap();
    let text = show("host --cleanup", &out);
    std::thread::sleep(Duration::from_millis(200));
    let bystander_alive = bystander.try_wait().unwrap().is_none();
    let stranger_alive = stranger.try_wait().unwrap().is_none();
    let _ = bystander.kill();
    let _ = stranger.kill();
    let _ = bystander.wait();
    let _ = stranger.wait();
    assert!(
        bystander_alive,
        "a record naming PID 1 killed every process: {text}"
    );
    assert!(
        stranger_alive,
        "a record naming a stranger killed it: {text}"
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("already ended"), "{text}");
}

/// Issue 37, item 5: for `--root TREE`, an `smp_affinity` in the tree that is a symbolic link
/// (to a file of the host, here a file standing for one) is not written through.
#[test]
fn an_apply_does_not_write_through_a_link_in_the_tree() {
    let h = FakeHost::standard();
    let plan = planned(&h);
    let (irq, _) = plan[0].clone();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "secret\n").unwrap();
    let file = h.path(&format!("proc/irq/{irq}/smp_affinity"));
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(outside.path(), &file).unwrap();
    let out = irqlab(&h, &plan_args(&h, &["--apply"])).output().unwrap();
    let text = show("the apply", &out);
    assert_eq!(
        std::fs::read_to_string(outside.path()).unwrap(),
        "secret\n",
        "written through the link: {text}"
    );
    assert!(
        text.contains(&format!("Not set: IRQ {irq}")) && text.contains("symbolic link"),
        "{text}"
    );
    restore(&h);
}

/// Issue 37, item 8: a `--restore` killed after its first mask leaves the others applied;
/// `host --cleanup` finishes it and says so (it said "nothing to clean up").
#[test]
fn a_restore_killed_halfway_is_finished_by_the_cleanup() {
    if let Some(why) = strace_skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let h = FakeHost::standard();
    let before = h.snapshot();
    let plan = planned(&h);
    let out = irqlab(&h, &plan_args(&h, &["--apply"])).output().unwrap();
    assert!(out.status.success(), "{}", show("apply", &out));
    let irqs: Vec<u32> = plan.iter().map(|p| p.0).collect();
    let out = under_strace(&h, &irqs, "signal=SIGKILL:when=2", &restore_args(&h))
        .output()
        .unwrap();
    show("the restore killed at its second write", &out);
    assert_ne!(
        h.snapshot(),
        before,
        "the killed restore put everything back"
    );
    let out = irqlab(&h, &["host", "--cleanup"]).output().unwrap();
    let text = show("host --cleanup", &out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("finished"), "{text}");
    assert_eq!(h.snapshot(), before, "the restore was not finished: {text}");
    assert_eq!(state_files(&h), Vec::<String>::new());
}

/// Issue 37, item 8: an apply that died between writing its applied record's temporary file and
/// renaming it leaves `.affinity-applied.json.tmp`; `host --cleanup` removes it and says so.
#[test]
fn a_crashed_applys_temporary_record_is_removed_by_the_cleanup() {
    let h = FakeHost::standard();
    let dir = h.state_dir();
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dir.join(".affinity-applied.json.tmp"), "{\"format\": 1, ").unwrap();
    let out = irqlab(&h, &["host", "--cleanup"]).output().unwrap();
    let text = show("host --cleanup", &out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(".affinity-applied.json.tmp"), "{text}");
    assert_eq!(state_files(&h), Vec::<String>::new());
}

/// Red-team finding: a tree whose `run` is a symbolic link (to a directory standing for the
/// host's `/run`). The apply is refused and makes nothing where the link leads; a cleanup of
/// the tree removes nothing there.
#[test]
fn a_trees_run_that_is_a_link_is_refused_and_nothing_is_made_or_removed_through_it() {
    let h = FakeHost::standard();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), h.path("run")).unwrap();
    let tree = h.root().to_str().unwrap();
    let out = Command::new(hostenv::irqlab())
        .env_remove("IRQLAB_STATE_DIR")
        .args([
            "plan", "affinity", "--host", "--root", tree, "--nic", "eth2", "--apply",
        ])
        .output()
        .unwrap();
    let text = show("apply with run a link", &out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("is a symbolic link"), "{text}");
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "made through the link: {text}"
    );
    // What a cleanup of the tree would remove, where the link leads.
    let planted = elsewhere.path().join("irqlab");
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(planted.join(".affinity-applied.json.tmp"), "{").unwrap();
    let out = Command::new(hostenv::irqlab())
        .env_remove("IRQLAB_STATE_DIR")
        .args(["host", "--cleanup", "--root", tree])
        .output()
        .unwrap();
    let text = show("cleanup with run a link", &out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        planted.join(".affinity-applied.json.tmp").exists(),
        "removed through the link: {text}"
    );
}

/// Red-team finding: a tree copied with its applied record says so, and which file to remove,
/// rather than sending the user back and forth between the two trees.
#[test]
fn a_record_copied_with_its_tree_is_named_as_such() {
    let h = FakeHost::standard();
    let tree = h.root().to_str().unwrap().to_string();
    let run = |root: &str, args: &[&str]| {
        Command::new(hostenv::irqlab())
            .env_remove("IRQLAB_STATE_DIR")
            .args(["plan", "affinity", "--host", "--root", root])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&tree, &["--nic", "eth2", "--apply"]);
    assert!(out.status.success(), "{}", show("apply", &out));
    let copy = tempfile::tempdir().unwrap();
    let copied = copy.path().join("tree");
    let cp = Command::new("cp")
        .args(["-a", &tree])
        .arg(&copied)
        .status()
        .unwrap();
    assert!(cp.success());
    let out = run(copied.to_str().unwrap(), &["--restore"]);
    let text = show("restore of the copy", &out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("it was copied with the tree"), "{text}");
    assert!(text.contains("remove the file"), "{text}");
    let out = run(&tree, &["--restore"]);
    assert!(out.status.success(), "{}", show("restore", &out));
}

/// Red-team finding: a FIFO where a tree's `smp_affinity` belongs hung the plan for ever; it
/// reads as no mask.
#[test]
fn a_fifo_in_a_tree_does_not_hang_the_plan() {
    let h = FakeHost::standard();
    let file = h.path("proc/irq/38/smp_affinity");
    std::fs::remove_file(&file).unwrap();
    let made = Command::new("mkfifo").arg(&file).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no mkfifo(1)");
        return;
    }
    let mut c = irqlab(
        &h,
        &[
            "plan",
            "affinity",
            "--host",
            "--root",
            h.root().to_str().unwrap(),
            "--nic",
            "eth2",
        ],
    );
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut run = hostenv::Running::new(c);
    let ended = hostenv::wait_until(20, || {
        hostenv::proc_stat(run.pid()).is_none_or(|s| s.state == 'Z')
    });
    if !ended {
        run.kill9();
    }
    assert!(ended, "the plan hung on a FIFO in the tree");
}
