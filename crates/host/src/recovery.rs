//! Recovery: what an irqlab process that died without cleaning up left on the host, undone by
//! the next start (`irqlab host --cleanup`, and before every measurement or apply). The record it
//! reads is [`crate::state`]'s; how each kind of change is undone belongs to the module that makes
//! it, so this one only walks the records and hands each change to its owner.
//!
//! [`clean_up_after_dead`] reads every file of the directory, under an exclusive flock(2) on the
//! directory so that two irqlab processes starting together do not undo the same thing twice. A
//! file whose process still runs is left alone (two measurements at once each keep their own). A
//! file whose process is gone has its changes undone in reverse order; what cannot be undone
//! stays in the file, with how to do it by hand, for the next start to try again.
//!
//! How each change is undone:
//! - [`Change::TraceInstance`]: rmdir of `instances/NAME` (Linux `Documentation/trace/ftrace.rst`,
//!   "Instances"). An instance outlives every mount of tracefs, so it is removed through any mount
//!   (see [`crate::tracefs`]).
//! - [`Change::TracefsMount`]: umount of irqlab's private mount point, then rmdir.
//! - [`Change::LoadGroup`]: SIGKILL to the load's process group, but only if it still is the
//!   load's (see [`crate::load`]); normally the load is already gone, since it dies with irqlab.
//! - [`Change::PmQos`]: nothing. The kernel removes a `/dev/cpu_dma_latency` request when its file
//!   descriptor is closed, which exit(2) does for any ending, SIGKILL included
//!   (`cpu_latency_qos_release()` in `kernel/power/qos.c`). It is recorded so that the account of
//!   what irqlab held is complete.
//! - [`Change::IrqAffinity`]: the old mask written back to `/proc/irq/N/smp_affinity` and read
//!   back, unless the dead process had committed its plan: `irqlab plan affinity --host --apply`
//!   records each IRQ before writing it, and on success moves the old masks into the state
//!   directory's applied record (`affinity-applied.json`, see [`crate::affinity`] for the order
//!   of the steps) before dropping its own records. A leftover whose owner wrote the applied
//!   record is kept as applied (`--restore` puts it back), so a crash between the two steps
//!   neither undoes a committed plan nor loses its old masks.
//!
//! A record from an earlier boot (its boot ID differs) names nothing that still exists but a
//! private mount point's directory, if the temporary directory outlived the reboot: only that is
//! removed. (IRQ affinities are reset at boot too.)
//!
//! Every file in the directory whose name is not `PID-START.json` (the applied affinity record)
//! is left alone by the recovery.

use crate::error::HostError;
use crate::state::{
    boot_id, owner_from_name, read_own_file, write_atomic, Change, Entry, LockedDir, ProcessId,
    Record, StateDir, FORMAT,
};
use std::path::{Path, PathBuf};

/// What an irqlab process that ended without cleaning up had left, and what became of it.
#[derive(Debug)]
pub struct Cleanup {
    /// The dead process; none for a file no process's record names (a crashed apply's
    /// uncommitted applied record).
    pub owner: Option<ProcessId>,
    /// Its command line, as recorded.
    pub command: String,
    /// What was undone, or found gone already, in the order undone.
    pub undone: Vec<String>,
    /// What could not be undone, each with how to do it by hand. It stays recorded, and the
    /// next start tries again.
    pub failed: Vec<String>,
}

impl Cleanup {
    /// What was undone, in one line: `cleaned up after irqlab PID (ended without cleaning up):
    /// ...`; none if nothing was (what was not is in [`Cleanup::failed`]).
    pub fn summary(&self) -> Option<String> {
        (!self.undone.is_empty()).then(|| match self.owner {
            Some(owner) => format!(
                "cleaned up after irqlab {} (ended without cleaning up): {}",
                owner.pid,
                self.undone.join(", ")
            ),
            None => format!("cleaned up: {}", self.undone.join(", ")),
        })
    }
}

/// Undo what dead irqlab processes left, as recorded in this user's state directory.
pub fn clean_up_after_dead() -> Result<Vec<Cleanup>, HostError> {
    clean_up_after_dead_in(&StateDir::locate())
}

/// Undo what dead irqlab processes left, as recorded in `dir` (see the module docs).
pub fn clean_up_after_dead_in(dir: &StateDir) -> Result<Vec<Cleanup>, HostError> {
    match LockedDir::if_exists(dir)? {
        Some(locked) => clean_up_locked(&locked),
        None => Ok(Vec::new()),
    }
}

/// [`clean_up_after_dead_in`] under a lock the caller holds (and goes on holding: `plan
/// affinity --host --apply` cleans up, then reads and plans, then writes, under one lock).
pub fn clean_up_locked(locked: &LockedDir) -> Result<Vec<Cleanup>, HostError> {
    let dir = locked.dir();
    let boot = boot_id();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .map_err(|e| dir.error(e))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();

    // What running irqlab processes hold is theirs, even where a name repeats a dead one's.
    let mut held_by_running: Vec<Change> = Vec::new();
    let mut dead: Vec<(PathBuf, ProcessId, Result<Record, String>)> = Vec::new();
    let mut cleanups = Vec::new();
    for name in names {
        if name == APPLIED_TMP {
            // Only an apply or a restore writes it, under the lock we hold: its writer died
            // between writing it and renaming it (the commit); the apply was rolled back with
            // the writer's own record.
            let path = dir.path().join(&name);
            let removed = std::fs::remove_file(&path);
            cleanups.push(Cleanup {
                owner: None,
                command: "?".into(),
                undone: match &removed {
                    Ok(()) => vec![format!(
                        "removed {}, the uncommitted record of a crashed apply",
                        path.display()
                    )],
                    Err(_) => Vec::new(),
                },
                failed: match removed {
                    Ok(()) => Vec::new(),
                    Err(e) => vec![format!("could not remove {}: {e}", path.display())],
                },
            });
            continue;
        }
        let Some(owner) = owner_from_name(&name) else {
            continue;
        };
        let path = dir.path().join(&name);
        if name.starts_with('.') {
            // A temporary file its writer did not rename: the writer died mid-write.
            if !owner.is_running() {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        let record = read_own_file(&path)
            .and_then(|t| serde_json::from_str::<Record>(&t).map_err(|e| e.to_string()))
            .and_then(|r| {
                if r.format > FORMAT {
                    Err(format!(
                        "written by a newer irqlab (format {}); clean up with that version",
                        r.format
                    ))
                } else {
                    Ok(r)
                }
            });
        let running = owner.is_running() && record.as_ref().map_or(true, |r| r.of_boot(&boot));
        match (running, record) {
            (true, Ok(r)) => held_by_running.extend(
                r.changes
                    .into_iter()
                    .filter_map(|v| serde_json::from_value::<Entry>(v).ok())
                    .map(|e| e.change),
            ),
            (true, Err(_)) => {}
            (false, record) => dead.push((path, owner, record)),
        }
    }
    for (path, owner, record) in dead {
        cleanups.push(match record {
            Ok(r) => undo_record(locked, &path, r, &held_by_running, &boot),
            Err(cause) => Cleanup {
                owner: Some(owner),
                command: "?".into(),
                undone: Vec::new(),
                failed: vec![format!(
                    "unreadable state file {}: {cause}; undo what it lists by hand, then delete \
                     it",
                    path.display()
                )],
            },
        });
    }
    Ok(cleanups)
}

/// The temporary file of the applied record (`state::write_atomic`'s name for it).
const APPLIED_TMP: &str = ".affinity-applied.json.tmp";

/// Undo a dead process's changes, last first, and rewrite its file with what remains.
fn undo_record(
    locked: &LockedDir,
    path: &Path,
    mut record: Record,
    held_by_running: &[Change],
    boot: &str,
) -> Cleanup {
    let mut cleanup = Cleanup {
        owner: Some(record.owner),
        command: record.command.clone(),
        undone: Vec::new(),
        failed: Vec::new(),
    };
    let same_boot = record.of_boot(boot);
    let mut remaining = Vec::new();
    for value in std::mem::take(&mut record.changes).into_iter().rev() {
        let change = match serde_json::from_value::<Entry>(value.clone()) {
            Ok(e) => e.change,
            Err(_) => {
                cleanup.failed.push(format!(
                    "a change this irqlab does not know ({value}), left in {}",
                    path.display()
                ));
                remaining.push(value);
                continue;
            }
        };
        if held_by_running.iter().any(|h| h.same_object(&change)) {
            // The leftover must be gone (the name could not have been taken otherwise).
            cleanup
                .undone
                .push(change.describe_noted("gone; its name is now a running irqlab's"));
            continue;
        }
        if !same_boot && !matches!(change, Change::TracefsMount { .. }) {
            cleanup
                .undone
                .push(change.describe_noted("gone with the reboot since"));
            continue;
        }
        if let Some(outside) = outside_tree(locked.dir(), &change) {
            cleanup.failed.push(outside);
            remaining.push(value);
            continue;
        }
        match undo(&change, record.owner, locked) {
            Ok(done) => cleanup.undone.push(done),
            Err(e) => {
                cleanup.failed.push(e);
                remaining.push(value);
            }
        }
    }
    remaining.reverse();
    let written = if remaining.is_empty() {
        std::fs::remove_file(path)
    } else {
        record.changes = remaining;
        write_atomic(
            path,
            &serde_json::to_vec_pretty(&record).expect("a record serializes"),
        )
    };
    if let Err(e) = written {
        cleanup.failed.push(format!(
            "could not update the state file {}: {e}",
            path.display()
        ));
    }
    cleanup
}

/// Undo one change of the dead process `owner`, recorded in the state directory `dir`: what was
/// done, or what was not and how to do it by hand.
fn undo(change: &Change, owner: ProcessId, locked: &LockedDir) -> Result<String, String> {
    match change {
        Change::TraceInstance { mount, name } => {
            match crate::tracefs::remove_leftover_instance(mount, name)? {
                Some(removed) => Ok(removed),
                None => Ok(change.describe_noted("already gone")),
            }
        }
        Change::TracefsMount { path } => Ok(if crate::tracefs::remove_leftover_mount(path)? {
            change.describe()
        } else {
            change.describe_noted("already gone")
        }),
        Change::LoadGroup { leader, .. } => Ok(if crate::load::kill_leftover(owner, *leader)? {
            change.describe()
        } else {
            change.describe_noted("already ended")
        }),
        Change::PmQos { .. } => Ok(change.describe_noted(&format!(
            "released by the kernel when irqlab {} ended",
            owner.pid
        ))),
        Change::IrqAffinity {
            irq,
            old_mask,
            root,
        } => crate::affinity::undo_leftover(locked.dir().path(), owner, *irq, old_mask, root),
        Change::AffinityRestore { .. } => crate::affinity::finish_restore(locked, owner),
    }
}

/// Why a record in a tree's own directory ([`StateDir::for_root`]) is not acted on: it names
/// something outside the tree. Whoever wrote the tree could have written the record too; the
/// only changes irqlab makes for a tree are its IRQ masks.
fn outside_tree(dir: &StateDir, change: &Change) -> Option<String> {
    let tree = dir.tree()?;
    let inside = match change {
        Change::IrqAffinity { root, .. } | Change::AffinityRestore { root } => root == tree,
        _ => false,
    };
    (!inside).then(|| {
        format!(
            "{} is recorded in the tree {}'s directory {} but is not the tree's: left as is",
            change.describe(),
            tree.display(),
            dir.path().display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{dead_process, state_dir, write_record};
    use std::os::unix::process::CommandExt;

    #[test]
    fn what_a_dead_process_left_is_undone_and_a_live_ones_is_not() {
        let (_t, dir) = state_dir();
        let qos = Change::PmQos {
            path: "/dev/cpu_dma_latency".into(),
            target_us: 0,
        };
        let dead = dead_process();
        let dead_file = write_record(&dir, dead, std::slice::from_ref(&qos));
        // Same PID, other start time: a PID reused by a later process is not the owner.
        let reused = ProcessId {
            pid: std::process::id() as i32,
            start_time_ticks: 1,
        };
        let reused_file = write_record(&dir, reused, std::slice::from_ref(&qos));
        let me = ProcessId::current().unwrap();
        let live_file = write_record(&dir, me, std::slice::from_ref(&qos));
        std::fs::write(dir.path().join(".1-1.json.tmp"), "{").unwrap();

        let mut cleanups = clean_up_after_dead_in(&dir).unwrap();
        cleanups.sort_by_key(|c| c.owner.unwrap().start_time_ticks);
        assert_eq!(cleanups.len(), 2, "{cleanups:?}");
        let owners: Vec<ProcessId> = cleanups.iter().filter_map(|c| c.owner).collect();
        assert!(owners.contains(&dead) && owners.contains(&reused));
        for c in &cleanups {
            assert!(c.failed.is_empty(), "{c:?}");
            assert_eq!(c.undone.len(), 1);
            let line = c.summary().unwrap();
            assert!(
                line.starts_with(&format!(
                    "cleaned up after irqlab {} (",
                    c.owner.unwrap().pid
                )) && line.contains("PM QoS request of 0 us on /dev/cpu_dma_latency (released"),
                "{line}"
            );
        }
        assert!(!dead_file.exists() && !reused_file.exists());
        assert!(live_file.exists(), "a running process's record was touched");
        assert!(!dir.path().join(".1-1.json.tmp").exists());
        // Nothing is left to do.
        std::fs::remove_file(&live_file).unwrap();
        assert!(clean_up_after_dead_in(&dir).unwrap().is_empty());
    }

    #[test]
    fn what_cannot_be_undone_stays_recorded_with_the_way_to_do_it_by_hand() {
        let (_t, dir) = state_dir();
        let dead = dead_process();
        // A private mount point that cannot be removed (something is in it).
        let point = tempfile::Builder::new()
            .prefix("irqlab-tracefs-test-")
            .tempdir_in(std::env::temp_dir())
            .unwrap();
        std::fs::write(point.path().join("x"), "").unwrap();
        let mount = Change::TracefsMount {
            path: point.path().to_path_buf(),
        };
        let unknown = serde_json::json!({"id": 9, "kind": "from_the_future", "x": 1});
        let path = write_record(&dir, dead, std::slice::from_ref(&mount));
        let mut r: Record = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        r.changes.push(unknown.clone());
        std::fs::write(&path, serde_json::to_vec(&r).unwrap()).unwrap();

        let cleanups = clean_up_after_dead_in(&dir).unwrap();
        assert_eq!(cleanups.len(), 1);
        let c = &cleanups[0];
        assert!(c.undone.is_empty() && c.summary().is_none(), "{c:?}");
        assert_eq!(c.failed.len(), 2, "{c:?}");
        assert!(c.failed[0].contains("does not know"), "{}", c.failed[0]);
        assert!(
            c.failed[1].contains("check it is empty and not mounted, then rmdir it"),
            "{}",
            c.failed[1]
        );
        // Both stay, in their order, for the next start.
        let r: Record = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(r.changes.len(), 2);
        assert_eq!(r.changes[1], unknown);
        let again = clean_up_after_dead_in(&dir).unwrap();
        assert_eq!(again[0].failed.len(), 2);
    }

    #[test]
    fn records_others_could_have_written_are_not_acted_on() {
        use std::os::unix::fs::PermissionsExt;
        let (t, dir) = state_dir();
        let dead = dead_process();
        // A load "leader" that is this test's own child: acting on the record would kill it.
        let mut victim = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let leader = ProcessId::of(victim.id() as i32).unwrap();
        let load = Change::LoadGroup {
            command: "sleep 30".into(),
            leader: Some(leader),
        };
        write_record(&dir, dead, std::slice::from_ref(&load));
        // A directory others may write to is refused before any record is read.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = clean_up_after_dead_in(&dir).unwrap_err().to_string();
        assert!(e.contains("others may write to it"), "{e}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        // So is a symbolic link to a good directory.
        let link = StateDir::at(t.path().join("link"));
        std::os::unix::fs::symlink(dir.path(), link.path()).unwrap();
        let e = clean_up_after_dead_in(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        // A record that is a link, or (as root) another user's, is left as is.
        let file = dir.file_of(dead);
        let target = t.path().join("elsewhere.json");
        std::fs::rename(&file, &target).unwrap();
        std::os::unix::fs::symlink(&target, &file).unwrap();
        let c = clean_up_after_dead_in(&dir).unwrap();
        assert!(c[0].undone.is_empty() && c[0].failed.len() == 1, "{c:?}");
        std::fs::remove_file(&file).unwrap();
        if nix::unistd::geteuid().is_root() {
            std::fs::rename(&target, &file).unwrap();
            std::os::unix::fs::chown(&file, Some(65534), None).unwrap();
            let c = clean_up_after_dead_in(&dir).unwrap();
            assert!(c[0].failed[0].contains("belongs to user 65534"), "{c:?}");
            std::fs::remove_file(&file).unwrap();
        }
        assert!(
            victim.try_wait().unwrap().is_none(),
            "a record irqlab did not write killed a process"
        );
        victim.kill().unwrap();
        victim.wait().unwrap();
    }

    #[test]
    fn a_record_from_an_earlier_boot_only_has_its_mount_point_removed() {
        let (_t, dir) = state_dir();
        let dead = dead_process();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let point = tempfile::Builder::new()
            .prefix("irqlab-tracefs-test-")
            .tempdir_in(std::env::temp_dir())
            .unwrap()
            .keep();
        let changes = [
            Change::TracefsMount {
                path: point.clone(),
            },
            Change::TraceInstance {
                mount: "/sys/kernel/tracing".into(),
                name: "irqlab-1-1".into(),
            },
            // The same PID and start time after a reboot are another process.
            Change::LoadGroup {
                command: "sleep 30".into(),
                leader: ProcessId::of(child.id() as i32),
            },
        ];
        let path = write_record(&dir, dead, &changes);
        let mut r: Record = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        r.boot_id = "an-earlier-boot".into();
        std::fs::write(&path, serde_json::to_vec(&r).unwrap()).unwrap();
        let c = clean_up_after_dead_in(&dir).unwrap();
        assert!(c[0].failed.is_empty(), "{c:?}");
        assert_eq!(c[0].undone.len(), 3, "{c:?}");
        assert_eq!(
            c[0].undone
                .iter()
                .filter(|u| u.contains("gone with the reboot"))
                .count(),
            2,
            "{c:?}"
        );
        assert!(!point.exists(), "the mount point's directory stays");
        assert!(child.try_wait().unwrap().is_none(), "a process was killed");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn an_instance_name_now_held_by_a_running_irqlab_is_left_alone() {
        let (_t, dir) = state_dir();
        let dead = dead_process();
        let me = ProcessId::current().unwrap();
        let name = format!("irqlab-{}", me.pid);
        let instance = |mount: &str| Change::TraceInstance {
            mount: mount.into(),
            name: name.clone(),
        };
        write_record(&dir, dead, &[instance("/nonexistent/tracefs")]);
        let live = write_record(&dir, me, &[instance("/sys/kernel/tracing")]);
        let cleanups = clean_up_after_dead_in(&dir).unwrap();
        assert_eq!(cleanups.len(), 1);
        assert!(
            cleanups[0].undone[0].contains("now a running irqlab's"),
            "{:?}",
            cleanups[0]
        );
        assert!(live.exists());
    }

    /// A tree's own directory (`--root TREE`) holds only the tree's IRQ masks: a record there
    /// naming a load, or the host's masks, is not acted on.
    #[test]
    fn a_trees_records_act_on_nothing_outside_the_tree() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().canonicalize().unwrap();
        let dir = StateDir::of_tree(&tree);
        let dead = dead_process();
        let mut victim = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let changes = [
            Change::LoadGroup {
                command: "sleep 30".into(),
                leader: ProcessId::of(victim.id() as i32),
            },
            Change::IrqAffinity {
                irq: 4_000_000,
                old_mask: "1".into(),
                root: "/".into(),
            },
        ];
        let path = write_record(&dir, dead, &changes);
        let c = clean_up_after_dead_in(&dir).unwrap();
        assert_eq!(c.len(), 1);
        assert!(c[0].undone.is_empty(), "{c:?}");
        assert_eq!(c[0].failed.len(), 2, "{c:?}");
        assert!(
            c[0].failed.iter().all(|f| f.contains("is not the tree's")),
            "{c:?}"
        );
        assert!(path.exists(), "kept for the user to look at");
        assert!(
            victim.try_wait().unwrap().is_none(),
            "a tree's record killed a process"
        );
        victim.kill().unwrap();
        victim.wait().unwrap();
    }

    #[test]
    fn an_unreadable_record_is_named_and_kept() {
        let (_t, dir) = state_dir();
        let dead = dead_process();
        dir.create().unwrap();
        let path = dir.file_of(dead);
        std::fs::write(&path, "{ not json").unwrap();
        let cleanups = clean_up_after_dead_in(&dir).unwrap();
        assert_eq!(cleanups.len(), 1);
        assert!(
            cleanups[0].failed[0].contains("unreadable state file"),
            "{:?}",
            cleanups[0]
        );
        assert!(path.exists());
    }
}
