//! `irqlab_host::affinity` on a fake `/sys` and `/proc` (see `fake_host`): what it reads, and
//! that applying records each IRQ before writing it, that a crash at each step leaves what the
//! module docs promise (the next start's cleanup rolls a partial apply back; a committed plan is
//! kept for `--restore`), that a stop signal or a failed step rolls back, and that restoring
//! puts every mask back byte for byte. One test does the crash on this host's own NIC queue
//! IRQs (root only; skipped with the reason otherwise).
//!
//! A crash is a real one: the test binary runs itself again as a child (an ignored test, given
//! its orders in the environment), which applies with a writer that SIGKILLs its own process at
//! the chosen step. The parent then plays the next irqlab start.

mod fake_host;

use fake_host::{FakeHost, MANAGED_IRQ};
use irqlab_host::affinity::{
    self, ApplyEnd, ApplyStep, MaskWrite, MaskWriter, ProcFiles, QueueRole, Refusal, Restored,
};
use irqlab_host::recovery::clean_up_after_dead_in;
use irqlab_host::state::StateDir;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

fn state_dir(h: &FakeHost) -> StateDir {
    StateDir::at(h.state_dir())
}

fn writes(list: &[(u32, &str)]) -> Vec<MaskWrite> {
    list.iter()
        .map(|&(irq, mask)| MaskWrite {
            irq,
            name: fake_host::IRQS
                .iter()
                .find(|(i, _, _)| *i == irq)
                .map_or(String::new(), |(_, n, _)| n.to_string()),
            mask: mask.into(),
        })
        .collect()
}

/// The state files of `dir`, by name.
fn state_files(dir: &StateDir) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.path())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The IRQ changes recorded in this directory's per-process files: (irq, old mask).
fn recorded(dir: &StateDir) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for name in state_files(dir) {
        if name == affinity::APPLIED_FILE || name.starts_with('.') {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(&name)).unwrap()).unwrap();
        for c in v["changes"].as_array().unwrap() {
            assert_eq!(c["kind"], "irq_affinity", "{c}");
            out.push((
                c["irq"].as_u64().unwrap(),
                c["old_mask"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// A writer that fails with `errno` for some IRQs, checks that each IRQ is recorded before it is
/// written, and can raise the stop flag or kill its process at a step.
struct Kernel<'a> {
    root: PathBuf,
    dir: StateDir,
    fail: Vec<(u32, i32)>,
    stop_at: Option<(ApplyStep, &'a AtomicBool)>,
    kill_at: Option<ApplyStep>,
    steps: Vec<ApplyStep>,
}

impl<'a> Kernel<'a> {
    fn new(h: &FakeHost) -> Kernel<'a> {
        Kernel {
            root: h.root().to_path_buf(),
            dir: state_dir(h),
            fail: Vec::new(),
            stop_at: None,
            kill_at: None,
            steps: Vec::new(),
        }
    }
}

fn irq_of(file: &Path) -> u32 {
    file.parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .parse()
        .unwrap()
}

impl MaskWriter for Kernel<'_> {
    fn write(&mut self, file: &Path, mask: &str) -> std::io::Result<()> {
        let irq = irq_of(file);
        if let Some(&(_, errno)) = self.fail.iter().find(|(i, _)| *i == irq) {
            return Err(std::io::Error::from_raw_os_error(errno));
        }
        ProcFiles.write(file, mask)
    }

    fn reached(&mut self, step: ApplyStep) {
        if let ApplyStep::Recorded { irq } = step {
            // Recorded before written: the record has the mask the file still holds.
            let old = std::fs::read_to_string(affinity::smp_affinity_file(&self.root, irq))
                .unwrap()
                .trim()
                .to_string();
            assert!(
                recorded(&self.dir).contains(&(u64::from(irq), old.clone())),
                "IRQ {irq} (still {old}) is not recorded: {:?}",
                recorded(&self.dir)
            );
        }
        self.steps.push(step);
        if let Some((at, flag)) = self.stop_at {
            if at == step {
                flag.store(true, Ordering::Relaxed);
            }
        }
        if self.kill_at == Some(step) {
            // What the OOM killer or kill -9 does: no destructor, no handler runs.
            nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL).unwrap();
        }
    }
}

#[test]
fn the_fake_host_reads_as_the_kernel_lays_it_out() {
    let h = FakeHost::standard();
    let host = affinity::read(h.root()).unwrap();
    let sockets: Vec<u32> = host.cpus.iter().map(|c| c.socket).collect();
    assert_eq!(sockets, [0, 0, 1, 1]);
    let l3 = host.cpus[2].last_level_cache().unwrap();
    assert_eq!((l3.level, l3.shared_cpus.to_vec()), (3, vec![2, 3]));
    assert_eq!(host.cpus[1].unified(2).unwrap().shared_cpus, [1]);
    // lo has no device; names sort as numbers.
    let names: Vec<&str> = host.nics.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["eth0", "eth1", "eth2"]);
    let eth2 = &host.nics[2];
    assert_eq!(
        (
            eth2.device.as_str(),
            eth2.virtio.as_deref(),
            eth2.driver.as_deref()
        ),
        ("0000:00:03.0", Some("virtio2"), Some("virtio_net"))
    );
    let roles = |n: usize| -> Vec<(u32, QueueRole)> {
        host.nics[n].irqs.iter().map(|i| (i.irq, i.role)).collect()
    };
    assert_eq!(
        roles(0),
        [
            (60, QueueRole::Other),
            (61, QueueRole::Rx(0)),
            (62, QueueRole::Tx(0)),
            (63, QueueRole::Rx(1)),
            (64, QueueRole::Tx(1)),
        ]
    );
    assert_eq!(
        roles(2),
        [
            (37, QueueRole::Other),
            (38, QueueRole::Rx(0)),
            (39, QueueRole::Tx(0)),
        ]
    );
    let managed = &host.nics[1].irqs[1];
    assert_eq!(managed.irq, MANAGED_IRQ);
    assert!(!managed.affinity.writable);
    assert!(host.nics[1].irqs[0].affinity.writable);
    assert_eq!(managed.affinity.mask.as_deref(), Some("f"));
    assert_eq!(managed.affinity.cpus, [0, 1, 2, 3]);
    assert_eq!(managed.affinity.effective_cpus, Some(vec![0]));
    assert_eq!(host.irqbalance_pid, None);
    h.process(4242, "irqbalance");
    assert_eq!(affinity::read(h.root()).unwrap().irqbalance_pid, Some(4242));
}

/// A NIC without MSI takes its legacy `irq` line only while one of its handlers is on it. A
/// driver that enables MSI when the interface comes up (tg3, bnx2) leaves `irq` naming its INTx
/// line while the interface is down, and that line may be another device's: planning it would
/// move the SATA controller's interrupts.
#[test]
fn a_legacy_line_is_the_nics_only_while_its_handler_is_on_it() {
    let h = FakeHost::standard();
    let mut rows = fake_host::IRQS.to_vec();
    rows.push((16, "ahci", "0000:00:1f.2"));
    h.interrupts(&rows);
    h.irq(16, "f", "0-3", "0");
    h.file("sys/devices/pci0000:00/0000:00:19.0/irq", "16\n");
    h.nic("eth3", "pci0000:00/0000:00:19.0", "tg3");
    let eth3 = |host: &affinity::HostAffinity| {
        host.nics
            .iter()
            .find(|n| n.name == "eth3")
            .expect("eth3 is read")
            .irqs
            .iter()
            .map(|i| (i.irq, i.name.clone(), i.role))
            .collect::<Vec<_>>()
    };
    let host = affinity::read(h.root()).unwrap();
    assert_eq!(
        eth3(&host),
        [],
        "the SATA controller's line taken for eth3's"
    );
    // Up, on INTx, sharing the line: then it is eth3's (and the ahci's).
    rows.last_mut().unwrap().1 = "ahci, eth3";
    h.interrupts(&rows);
    let host = affinity::read(h.root()).unwrap();
    assert_eq!(
        eth3(&host),
        [(16, "ahci, eth3".to_string(), QueueRole::RxTx(0))]
    );
}

/// The applied plan: recorded before each write, the managed IRQ and an IRQ the kernel refuses
/// named and skipped, the others set and read back; committed to the applied record, the
/// per-process record dropped; then restored byte for byte.
#[test]
fn apply_records_first_skips_refusals_and_restore_puts_back_byte_for_byte() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let before = h.snapshot();
    let stop = AtomicBool::new(false);
    let mut k = Kernel::new(&h);
    k.fail = vec![(64, libc::EIO), (70, libc::EINVAL)];
    let plan = writes(&[
        (61, "1"),
        (62, "1"),
        (63, "2"),
        (64, "2"),
        (70, "4"),
        (71, "8"),
    ]);
    let a = affinity::apply(h.root(), &dir, &plan, &stop, &mut k).unwrap();
    let set: Vec<u32> = a.set.iter().map(|s| s.irq).collect();
    assert_eq!(set, [61, 62, 63]);
    let not: Vec<(u32, String)> = a
        .not_set
        .iter()
        .map(|n| (n.irq, n.reason.to_string()))
        .collect();
    assert_eq!(
        not,
        [
            (
                64,
                "managed by the kernel (EIO): the driver spreads these queues itself".into()
            ),
            (70, "the mask has no online CPU (EINVAL)".into()),
            (
                71,
                "managed by the kernel (read-only smp_affinity): the driver spreads these \
                 queues itself"
                    .into()
            ),
        ]
    );
    // The read-only one is refused without being recorded or written.
    assert!(!k.steps.contains(&ApplyStep::Recorded { irq: 71 }));
    assert_eq!(a.set[0].old_mask, "f");
    assert_eq!(a.set[0].mask, "1");
    assert_eq!(h.mask(61), "1\n");
    assert_eq!(h.mask(63), "2\n");
    for irq in [64, 70, 71] {
        assert_eq!(h.mask(irq), "f\n", "IRQ {irq} was refused but changed");
    }
    let ApplyEnd::Committed { record } = &a.end else {
        panic!("{a:?}")
    };
    assert_eq!(k.steps.last(), Some(&ApplyStep::Committed));
    // Only the applied record is left: the per-process one was handed over.
    assert_eq!(state_files(&dir), [affinity::APPLIED_FILE]);
    let rec = affinity::applied(&dir).unwrap().unwrap();
    assert_eq!(&dir.path().join(affinity::APPLIED_FILE), record);
    assert_eq!(rec.irqs.len(), 3);
    assert!(rec.is_this_boot());
    // A second apply is refused while the plan is in force, and changes nothing.
    let after = h.snapshot();
    let e = affinity::apply(h.root(), &dir, &plan, &stop, &mut Kernel::new(&h)).unwrap_err();
    assert!(e.to_string().contains("--restore"), "{e}");
    assert_eq!(h.snapshot(), after);

    let Restored::Done { irqs, .. } = affinity::restore(&dir, &mut ProcFiles).unwrap() else {
        panic!("nothing restored")
    };
    let order: Vec<u32> = irqs.iter().map(|i| i.irq).collect();
    assert_eq!(order, [63, 62, 61], "last set, first restored");
    assert!(irqs.iter().all(|i| i.restored_mask.as_deref() == Some("f")));
    assert_eq!(h.snapshot(), before, "not every byte is back");
    assert!(state_files(&dir).is_empty());
    assert_eq!(
        affinity::restore(&dir, &mut ProcFiles).unwrap(),
        Restored::Nothing
    );
}

/// A stop signal between two writes rolls back what was written, last first, and leaves no
/// record.
#[test]
fn a_stop_signal_mid_apply_rolls_back() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let before = h.snapshot();
    let stop = AtomicBool::new(false);
    let mut k = Kernel::new(&h);
    k.stop_at = Some((ApplyStep::Written { irq: 62 }, &stop));
    let a = affinity::apply(
        h.root(),
        &dir,
        &writes(&[(61, "1"), (62, "1"), (63, "2")]),
        &stop,
        &mut k,
    )
    .unwrap();
    assert_eq!(
        a.end,
        ApplyEnd::Stopped {
            rolled_back: vec![62, 61]
        }
    );
    assert!(!k.steps.contains(&ApplyStep::Recorded { irq: 63 }));
    assert_eq!(h.snapshot(), before);
    assert!(state_files(&dir).is_empty(), "{:?}", state_files(&dir));
}

/// A rollback that cannot put a mask back is an error that says how to by hand, and the change
/// stays recorded for the next start.
#[test]
fn a_failed_rollback_says_how_and_stays_recorded() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let stop = AtomicBool::new(false);
    struct Stuck<'a>(&'a AtomicBool);
    impl MaskWriter for Stuck<'_> {
        fn write(&mut self, file: &Path, mask: &str) -> std::io::Result<()> {
            if mask == "f" {
                // Putting back fails: say the vector space ran out.
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            ProcFiles.write(file, mask)
        }
        fn reached(&mut self, step: ApplyStep) {
            if step == (ApplyStep::Written { irq: 61 }) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
    }
    let e = affinity::apply(
        h.root(),
        &dir,
        &writes(&[(61, "1"), (62, "1")]),
        &stop,
        &mut Stuck(&stop),
    )
    .unwrap_err();
    assert!(matches!(e, irqlab_host::HostError::Restore(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("IRQ 61: could not put back f (no free interrupt vector")
            && msg.contains("echo f > ")
            && msg.contains("next irqlab start"),
        "{msg}"
    );
    assert_eq!(recorded(&dir), [(61, "f".to_string())]);
    assert_eq!(h.mask(61), "1\n");
}

/// An applied record of an earlier boot describes affinities the kernel has reset since: restore
/// discards it with a note and writes nothing; apply discards it and goes on.
#[test]
fn an_earlier_boots_record_is_discarded_not_restored() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let stop = AtomicBool::new(false);
    let plan = writes(&[(61, "1")]);
    affinity::apply(h.root(), &dir, &plan, &stop, &mut ProcFiles).unwrap();
    let path = dir.path().join(affinity::APPLIED_FILE);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["boot_id"] = "an-earlier-boot".into();
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let now = h.snapshot();
    let Restored::EarlierBoot { note } = affinity::restore(&dir, &mut ProcFiles).unwrap() else {
        panic!("restored a record of an earlier boot")
    };
    assert!(note.contains("before the last reboot"), "{note}");
    assert_eq!(h.snapshot(), now, "an earlier boot's masks were written");
    assert!(!path.exists());
    // Apply: discarded the same way, then applied.
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let a = affinity::apply(h.root(), &dir, &writes(&[(62, "1")]), &stop, &mut ProcFiles).unwrap();
    assert!(a.discarded.is_some_and(|d| d.contains("reboot")));
    assert!(matches!(a.end, ApplyEnd::Committed { .. }));
}

/// Apply leaves alone an IRQ whose number another device has taken since the plan read it (its
/// driver freed it between the two), and says so; the others are set.
#[test]
fn apply_leaves_an_irq_another_device_took_since_the_plan() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let stop = AtomicBool::new(false);
    let plan = writes(&[(61, "1"), (62, "1")]);
    let mut rows = fake_host::IRQS.to_vec();
    rows.iter_mut().find(|r| r.0 == 62).unwrap().1 = "nvme0q3";
    h.interrupts(&rows);
    let a = affinity::apply(h.root(), &dir, &plan, &stop, &mut Kernel::new(&h)).unwrap();
    assert_eq!(a.set.iter().map(|s| s.irq).collect::<Vec<_>>(), [61]);
    assert_eq!(
        a.not_set
            .iter()
            .map(|n| (n.irq, n.reason.to_string()))
            .collect::<Vec<_>>(),
        [(
            62,
            "now 'nvme0q3', another device's: left as it is".to_string()
        )]
    );
    assert_eq!((h.mask(61), h.mask(62)), ("1\n".into(), "f\n".into()));
    assert_eq!(affinity::applied(&dir).unwrap().unwrap().irqs.len(), 1);
}

/// Restore leaves alone an IRQ whose number another device has taken since, and says so.
#[test]
fn restore_leaves_an_irq_another_device_took() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let stop = AtomicBool::new(false);
    affinity::apply(
        h.root(),
        &dir,
        &writes(&[(61, "1"), (62, "1")]),
        &stop,
        &mut ProcFiles,
    )
    .unwrap();
    let mut rows = fake_host::IRQS.to_vec();
    rows.iter_mut().find(|r| r.0 == 62).unwrap().1 = "nvme0q3";
    h.interrupts(&rows);
    let Restored::Done { irqs, .. } = affinity::restore(&dir, &mut ProcFiles).unwrap() else {
        panic!()
    };
    let other = irqs.iter().find(|i| i.irq == 62).unwrap();
    assert!(
        other.note.as_deref().unwrap().contains("another device's"),
        "{other:?}"
    );
    assert_eq!(h.mask(62), "1\n");
    assert_eq!(h.mask(61), "f\n");
}

// ---- crashes -----------------------------------------------------------------------------------

const CHILD_ENV: &str = "IRQLAB_TEST_AFFINITY_CHILD";

/// Run `child_applies_and_is_killed` in a new process of this test binary, applying `plan`
/// under `root` with state in `dir`, killed at `at`.
fn crash_at(root: &Path, dir: &StateDir, plan: &[(u32, &str)], at: &str) {
    let spec = serde_json::json!({
        "root": root,
        "dir": dir.path(),
        "plan": plan,
        "at": at,
    });
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "--ignored",
            "--nocapture",
            "child_applies_and_is_killed",
        ])
        .env(CHILD_ENV, spec.to_string())
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "the child was not killed at {at}: {out:?}"
    );
}

/// The child of the crash tests (does nothing when run by hand).
#[test]
#[ignore = "run by the crash tests in a process of its own"]
fn child_applies_and_is_killed() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        eprintln!("skipped: the crash tests run this in a process of its own");
        return;
    };
    let spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
    let root = PathBuf::from(spec["root"].as_str().unwrap());
    let dir = StateDir::at(spec["dir"].as_str().unwrap());
    let plan: Vec<MaskWrite> = spec["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| MaskWrite {
            irq: p[0].as_u64().unwrap() as u32,
            name: String::new(),
            mask: p[1].as_str().unwrap().into(),
        })
        .collect();
    let at = match spec["at"].as_str().unwrap().split_once(':') {
        Some(("recorded", n)) => ApplyStep::Recorded {
            irq: n.parse().unwrap(),
        },
        Some(("written", n)) => ApplyStep::Written {
            irq: n.parse().unwrap(),
        },
        _ => ApplyStep::Committed,
    };
    struct Killer(ApplyStep);
    impl MaskWriter for Killer {
        fn write(&mut self, file: &Path, mask: &str) -> std::io::Result<()> {
            ProcFiles.write(file, mask)
        }
        fn reached(&mut self, step: ApplyStep) {
            if step == self.0 {
                nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL).unwrap();
            }
        }
    }
    let stop = AtomicBool::new(false);
    let _ = affinity::apply(&root, &dir, &plan, &stop, &mut Killer(at));
    panic!("not killed at {at:?}");
}

/// Killed after writing two of three IRQs: its record lists both (and the masks are changed);
/// the next start's cleanup puts them back, byte for byte, and removes the record.
#[test]
fn a_crash_mid_apply_is_rolled_back_by_the_next_start() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let before = h.snapshot();
    crash_at(
        h.root(),
        &dir,
        &[(61, "1"), (62, "1"), (63, "2")],
        "written:62",
    );
    assert_eq!(
        recorded(&dir),
        [(61, "f".to_string()), (62, "f".to_string())]
    );
    assert_eq!(
        (h.mask(61), h.mask(62), h.mask(63)),
        ("1\n".into(), "1\n".into(), "f\n".into())
    );
    assert!(!dir.path().join(affinity::APPLIED_FILE).exists());
    let cleanups = clean_up_after_dead_in(&dir).unwrap();
    assert_eq!(cleanups.len(), 1);
    let c = &cleanups[0];
    assert!(c.failed.is_empty(), "{c:?}");
    assert_eq!(
        c.undone,
        [
            "IRQ 62's smp_affinity put back to f",
            "IRQ 61's smp_affinity put back to f"
        ]
    );
    assert_eq!(h.snapshot(), before);
    assert!(state_files(&dir).is_empty(), "{:?}", state_files(&dir));
}

/// Killed after recording an IRQ but before writing it: the cleanup finds its mask as it was.
#[test]
fn a_crash_between_record_and_write_leaves_nothing_changed() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let before = h.snapshot();
    crash_at(h.root(), &dir, &[(61, "1"), (62, "1")], "recorded:62");
    assert_eq!(h.mask(62), "f\n");
    let c = clean_up_after_dead_in(&dir).unwrap();
    assert!(c[0].failed.is_empty(), "{c:?}");
    assert_eq!(h.snapshot(), before);
}

/// Killed after the commit but before dropping its per-process record: the cleanup keeps the
/// plan (it was committed), and --restore still puts the old masks back.
#[test]
fn a_crash_after_the_commit_keeps_the_plan_for_restore() {
    let h = FakeHost::standard();
    let dir = state_dir(&h);
    let before = h.snapshot();
    crash_at(h.root(), &dir, &[(61, "1"), (38, "4")], "committed");
    assert_eq!(recorded(&dir).len(), 2);
    assert!(dir.path().join(affinity::APPLIED_FILE).exists());
    let c = clean_up_after_dead_in(&dir).unwrap();
    assert!(c[0].failed.is_empty(), "{c:?}");
    assert!(
        c[0].undone.iter().all(|u| u.contains("kept for --restore")),
        "{c:?}"
    );
    assert_eq!((h.mask(61), h.mask(38)), ("1\n".into(), "4\n".into()));
    assert_eq!(state_files(&dir), [affinity::APPLIED_FILE]);
    assert!(matches!(
        affinity::restore(&dir, &mut ProcFiles).unwrap(),
        Restored::Done { .. }
    ));
    assert_eq!(h.snapshot(), before);
}

/// The same crash on this host's own NIC queue IRQs: a new mask is seen, and the next start
/// puts the old one back. Root only.
#[test]
fn a_crash_mid_apply_on_this_host_is_rolled_back() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: not root (writing /proc/irq/N/smp_affinity needs root)");
        return;
    }
    let host = affinity::read(Path::new("/")).unwrap();
    let online: Vec<u32> = host.cpus.iter().map(|c| c.cpu).collect();
    // Queue IRQs that can be moved, each given a mask of one online CPU it does not have now.
    let plan: Vec<(u32, String, String)> = host
        .nics
        .iter()
        .flat_map(|n| &n.irqs)
        .filter(|i| i.role.queue().is_some() && i.affinity.writable)
        .filter_map(|i| {
            let old = i.affinity.mask.clone()?;
            let cpu = online.iter().find(|&&c| i.affinity.cpus != [c])?;
            Some((i.irq, old, format!("{:x}", 1u64 << cpu)))
        })
        .filter(|(_, _, m)| m.len() <= 8)
        .take(2)
        .collect();
    if plan.is_empty() || online.len() < 2 {
        eprintln!("skipped: no NIC queue IRQ that can be moved here (or one CPU)");
        return;
    }
    // Whatever happens below, the masks are put back when the test ends.
    struct PutBack(Vec<(u32, String)>);
    impl Drop for PutBack {
        fn drop(&mut self) {
            for (irq, old) in &self.0 {
                let _ = ProcFiles.write(&affinity::smp_affinity_file(Path::new("/"), *irq), old);
            }
        }
    }
    let _guard = PutBack(plan.iter().map(|(i, o, _)| (*i, o.clone())).collect());
    let tmp = tempfile::tempdir().unwrap();
    let dir = StateDir::at(tmp.path().join("state"));
    let last = plan.last().unwrap().0;
    let list: Vec<(u32, &str)> = plan.iter().map(|(i, _, m)| (*i, m.as_str())).collect();
    crash_at(Path::new("/"), &dir, &list, &format!("written:{last}"));
    for (irq, old, new) in &plan {
        let now = affinity::read_mask(Path::new("/"), *irq);
        eprintln!("IRQ {irq}: was {old}, after the crash {:?}", now.mask);
        assert_eq!(now.mask.as_deref(), Some(new.as_str()), "IRQ {irq}");
    }
    let c = clean_up_after_dead_in(&dir).unwrap();
    assert!(c[0].failed.is_empty(), "{c:?}");
    for (irq, old, _) in &plan {
        let now = affinity::read_mask(Path::new("/"), *irq);
        eprintln!("IRQ {irq}: after the next start's cleanup {:?}", now.mask);
        assert_eq!(now.mask.as_deref(), Some(old.as_str()), "IRQ {irq}");
    }
    assert!(state_files(&dir).is_empty());
}

#[test]
fn refusals_print_as_the_kernel_means_them() {
    assert_eq!(
        Refusal::Managed { how: "EIO".into() }.to_string(),
        "managed by the kernel (EIO): the driver spreads these queues itself"
    );
}
