//! `--load CMD`: a load that runs for exactly the measurement's duration. The command runs
//! under `sh -c` in its own process group, so stopping it stops everything it started
//! (stress-ng's workers, a `cvs update`'s children), on every exit path of the measurement.
//!
//! # The load dies with irqlab, even on SIGKILL
//!
//! irqlab's normal stop ([`Load::stop`], also on errors and Ctrl-C through `Drop`) signals the
//! group. SIGKILL leaves no chance to run it, so the group watches irqlab itself: the shell that
//! leads it first starts a watcher in the group, which blocks reading a pipe whose only write end
//! irqlab holds (close-on-exec, so no other program inherits it). When irqlab ends, however it
//! ends, the kernel closes its descriptors (exit(2)), the read sees end of file (pipe(7): "If all
//! file descriptors referring to the write end of a pipe have been closed, then an attempt to
//! read(2) from the pipe will see end-of-file"), and the watcher sends SIGTERM to its own group,
//! then SIGKILL two seconds later (`kill 0`: every process in the sender's group, kill(2)). It
//! ignores SIGTERM itself, so that it outlives the group's SIGTERM to send the SIGKILL.
//!
//! The watcher runs in a subshell that exits at once, so it is not a child of the leader: the
//! user's command keeps its own `$!` and `wait`, and the leader ends when the command ends (which
//! irqlab reports as a load that ended early); the watcher stays in the group, so the command's
//! background processes are still stopped with irqlab.
//!
//! Why not PR_SET_PDEATHSIG (prctl(2)): it reaches only the process that set it (the shell, not
//! stress-ng's workers), fires when the *thread* that spawned the child ends rather than the
//! process, and needs a getppid check against irqlab dying before the prctl call. A pipe has
//! none of these gaps and needs no code between fork and exec.
//!
//! A crash may still leave the group running if the watcher itself is killed; irqlab's state file
//! records the group's leader, and the next start kills the group if it still is the load's: its
//! members carry `IRQLAB_LOAD_OF=PID:START` (this irqlab's PID and start time) in their
//! environment, which every process of the load inherits. The recorded leader's PID and start
//! time alone are not trusted: they name a process, not a load (a record naming PID 1 would kill
//! every process). (A program may overwrite its environment in memory, as stress-ng's workers do
//! to set their process titles; the leader's shell or the watcher's is enough to find the group,
//! and the group holds the workers.) No group below 2 and never irqlab's own is signalled.

use crate::error::HostError;
use crate::state::{self, Change, ProcessId, Recorded};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that marks every process of a load with its irqlab's PID and start
/// time.
pub const LOAD_MARKER_ENV: &str = "IRQLAB_LOAD_OF";

/// The load's leader: keep the pipe from irqlab (its stdin) as fd 3, start the watcher on it,
/// close it, then run the command (`$1`) with stdin from /dev/null, as `sh -c CMD` would.
const LEADER_SCRIPT: &str = "exec 3<&0 </dev/null; \
    ( { trap '' TERM; read _ <&3; kill -TERM 0; sleep 2; kill -KILL 0; } & ); \
    exec 3<&-; eval \"$1\"";

/// A running load; dropping it stops it.
pub struct Load {
    cmd: String,
    child: Option<Child>,
    /// The write end of the watcher's pipe: the load stops when it closes.
    lifeline: Option<OwnedFd>,
    recorded: Option<Recorded>,
    started: Instant,
}

/// `IRQLAB_LOAD_OF`'s value for the loads of `owner`.
fn marker(owner: ProcessId) -> String {
    format!("{}:{}", owner.pid, owner.start_time_ticks)
}

impl Load {
    /// Start `cmd` with `sh -c`, its output discarded.
    pub fn start(cmd: &str) -> Result<Load, HostError> {
        if cmd.trim().is_empty() {
            return Err(HostError::Invalid(
                "--load: empty command; give a shell command such as 'stress-ng --cpu 2'".into(),
            ));
        }
        let owner = ProcessId::current()?;
        let recorded = state::record(Change::LoadGroup {
            command: cmd.to_string(),
            leader: None,
        })?;
        let (read_end, write_end) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
            Ok(p) => p,
            Err(e) => {
                recorded.undone();
                return Err(HostError::Invalid(format!(
                    "--load: cannot create the pipe that stops the load with irqlab: {e}"
                )));
            }
        };
        let spawned = Command::new("sh")
            .arg("-c")
            .arg(LEADER_SCRIPT)
            .arg("irqlab-load")
            .arg(cmd)
            .env(LOAD_MARKER_ENV, marker(owner))
            .stdin(Stdio::from(read_end))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                recorded.undone();
                return Err(HostError::Invalid(format!(
                    "--load: cannot start sh -c '{cmd}': {e}"
                )));
            }
        };
        // The leader is a zombie at worst (not waited for yet), so its stat is there.
        let leader = ProcessId::of(child.id() as i32);
        let mut load = Load {
            cmd: cmd.to_string(),
            child: Some(child),
            lifeline: Some(write_end),
            recorded: Some(recorded),
            started: Instant::now(),
        };
        if let Some(r) = &load.recorded {
            r.update(Change::LoadGroup {
                command: cmd.to_string(),
                leader,
            })?; // on error, dropping the load stops it
        }
        // A mistyped command dies at once: say so before measuring without the load.
        std::thread::sleep(Duration::from_millis(100));
        if let Some(Ok(Some(status))) = load.child.as_mut().map(Child::try_wait) {
            if !status.success() {
                load.stop_inner();
                return Err(HostError::Invalid(format!(
                    "--load: '{cmd}' exited at once ({status}{}); check the command",
                    if status.code() == Some(127) {
                        ": command not found"
                    } else {
                        ""
                    }
                )));
            }
        }
        Ok(load)
    }

    /// Stop the load's whole process group: SIGTERM, then SIGKILL after two seconds. Returns a
    /// warning if it had already ended by itself (then it did not load the whole measurement).
    pub fn stop(mut self) -> Option<String> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Option<String> {
        let warning = self.stop_group();
        // Every process of the group has been sent SIGKILL: nothing is left to watch.
        drop(self.lifeline.take());
        if let Some(r) = self.recorded.take() {
            r.undone();
        }
        warning
    }

    fn stop_group(&mut self) -> Option<String> {
        let mut child = self.child.take()?;
        let pgid = Pid::from_raw(child.id() as i32);
        // The shell may have ended with children still running in its group (`cmd &`), and
        // the watcher runs there until SIGKILL: the group is stopped either way; its id is not
        // reused while any member lives.
        let ended_early = match child.try_wait() {
            Ok(Some(status)) => Some(format!(
                "the --load command '{}' ended by itself ({status}) before the measurement's \
                 {:.1} s were over: part of the measurement ran without load",
                self.cmd,
                self.started.elapsed().as_secs_f64()
            )),
            _ => None,
        };
        let _ = killpg(pgid, Signal::SIGTERM);
        if ended_early.is_some() {
            std::thread::sleep(Duration::from_millis(100));
            let _ = killpg(pgid, Signal::SIGKILL);
            return ended_early;
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                // The shell is gone; make sure its group is too.
                let _ = killpg(pgid, Signal::SIGKILL);
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = killpg(pgid, Signal::SIGKILL);
        let _ = child.wait();
        None
    }

    /// Close irqlab's end of the watcher's pipe, as irqlab's death would.
    #[cfg(test)]
    fn cut_lifeline(&mut self) {
        drop(self.lifeline.take());
    }
}

/// The process groups of the load of the dead irqlab `owner` that still run: the groups of the
/// processes that carry `owner`'s marker in their environment, which irqlab set when it started
/// the load and every process of the load inherits (the leader's shell, the watcher in its
/// group, the command). The recorded `leader` is not enough by itself: a PID and a start time
/// name a process, not a load, and a record is only a file (one naming PID 1 would have
/// `killpg(1)`, which is `kill(-1)`: every process there is). A leader that no longer carries
/// the marker (a command exec'd in its place that rewrote its environment) is found through the
/// watcher, which does. Never a group below 2, nor irqlab's own.
fn leftover_groups(owner: ProcessId, leader: Option<ProcessId>) -> Vec<i32> {
    let marker = format!("{LOAD_MARKER_ENV}={}", marker(owner));
    let own_group = nix::unistd::getpgrp().as_raw();
    let own_pid = std::process::id() as i32;
    let mut groups = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return groups;
    };
    let mut pids: Vec<i32> = procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect();
    // The recorded leader first, so that its group is found even if the scan is long.
    if let Some(l) = leader {
        pids.retain(|p| *p != l.pid);
        pids.insert(0, l.pid);
    }
    for pid in pids {
        let Some(stat) = state::proc_stat(pid) else {
            continue;
        };
        if stat.has_ended()
            || stat.pgid < 2
            || stat.pgid == own_group
            || pid == own_pid
            || groups.contains(&stat.pgid)
        {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if environ
            .split(|b| *b == 0)
            .any(|var| var == marker.as_bytes())
        {
            groups.push(stat.pgid);
        }
    }
    groups
}

/// Kill what is left of the load of the dead irqlab `owner` (see the module docs). `Ok(true)` if
/// something was left, `Err` with what to do if it outlives SIGKILL.
pub(crate) fn kill_leftover(owner: ProcessId, leader: Option<ProcessId>) -> Result<bool, String> {
    let mut found = false;
    for _ in 0..100 {
        let groups = leftover_groups(owner, leader);
        if groups.is_empty() {
            return Ok(found);
        }
        found = true;
        for g in groups {
            // leftover_groups never gives one below 2 (killpg(1) would be kill(-1)); checked
            // again where the signal goes.
            if g >= 2 {
                let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let groups = leftover_groups(owner, leader);
    Err(format!(
        "the load's process groups {groups:?} still run after SIGKILL (processes in \
         uninterruptible sleep?); as root: kill -KILL -- -PGID for each"
    ))
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ")
    }

    #[test]
    fn stopping_kills_the_whole_group() {
        // A shell that starts a grandchild: both must go.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let load =
            Load::start(&format!("sleep 30 & echo $! > {}; wait", pidfile.display())).unwrap();
        let mut grandchild = None;
        for _ in 0..100 {
            if let Ok(s) = std::fs::read_to_string(&pidfile) {
                if let Ok(p) = s.trim().parse::<i32>() {
                    grandchild = Some(p);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let grandchild = grandchild.expect("the load started its child");
        assert!(alive(grandchild));
        assert_eq!(load.stop(), None);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!alive(grandchild), "pid {grandchild} survived");
    }

    #[test]
    fn children_of_a_shell_that_already_ended_are_stopped_too() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let load = Load::start(&format!("sleep 30 & echo $! > {}", pidfile.display())).unwrap();
        std::thread::sleep(Duration::from_millis(300)); // the shell has exited by now
        let child: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(child));
        assert!(load.stop().is_some(), "the shell ended early: a warning");
        std::thread::sleep(Duration::from_millis(50));
        assert!(!alive(child), "pid {child} survived its shell");
    }

    #[test]
    fn a_load_that_ends_early_is_reported() {
        let load = Load::start("true").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let w = load.stop().expect("a warning");
        assert!(w.contains("ended by itself"), "{w}");
        assert!(Load::start("  ").is_err());
        let e = Load::start("nosuchcommand-irqlab --x")
            .err()
            .expect("refused");
        assert!(e.to_string().contains("command not found"), "{e}");
    }

    /// Poll up to `secs` for the processes in `pids` to end.
    fn all_end_within(pids: &[i32], secs: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if !pids.iter().any(|p| alive(*p)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The live processes of group `pgid`.
    fn group_members(pgid: i32) -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| state::proc_stat(*p).is_some_and(|s| s.pgid == pgid && !s.has_ended()))
            .collect()
    }

    #[test]
    fn the_load_stops_when_irqlab_goes_away() {
        // As if irqlab died: its end of the pipe closes and nothing else runs (no stop, no
        // Drop signalling the group).
        let mut load = Load::start("sleep 30 & sleep 40").unwrap();
        let pgid = load.child.as_ref().unwrap().id() as i32;
        let members = group_members(pgid);
        // The leader, the watcher, and the two sleeps.
        assert!(members.len() >= 4, "{members:?}");
        load.cut_lifeline();
        assert!(
            all_end_within(&members, 10),
            "still running: {:?}",
            group_members(pgid)
        );
        let _ = load.child.as_mut().unwrap().wait();
    }

    /// A process group like a load's, started outside [`Load`] with `owner`'s marker.
    fn fake_leftover(owner: ProcessId) -> (Child, i32) {
        let child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30"])
            .env(LOAD_MARKER_ENV, marker(owner))
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        (child, pgid)
    }

    /// A process with the dead irqlab's marker in irqlab's own process group (an irqlab started
    /// from within a load, say) must not have irqlab kill its own group; nor may a record
    /// naming init (PID 1, whose group `killpg` would turn into every process) be signalled.
    #[test]
    fn neither_irqlabs_own_group_nor_a_group_below_2_is_a_leftover() {
        let dead = ProcessId {
            pid: 999_997,
            start_time_ticks: 1,
        };
        let mut child = Command::new("sleep")
            .arg("30")
            .env(LOAD_MARKER_ENV, marker(dead))
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let init = ProcessId::of(1);
        let groups = leftover_groups(dead, init);
        let own = nix::unistd::getpgrp().as_raw();
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            !groups.contains(&own),
            "irqlab's own group {own}: {groups:?}"
        );
        assert!(groups.iter().all(|g| *g >= 2), "{groups:?}");
    }

    #[test]
    fn a_leftover_load_is_killed_only_if_it_is_the_dead_irqlabs() {
        let dead = ProcessId {
            pid: 999_999,
            start_time_ticks: 1,
        };
        // Found by its marker, without a recorded leader (irqlab died before recording it).
        let (mut child, pgid) = fake_leftover(dead);
        std::thread::sleep(Duration::from_millis(100));
        let members = group_members(pgid);
        assert_eq!(kill_leftover(dead, None), Ok(true));
        assert!(all_end_within(&members, 5), "{:?}", group_members(pgid));
        let _ = child.wait();

        // Another irqlab's load (another marker) with a recorded leader whose start time does
        // not match: a reused group ID, left alone.
        let other = ProcessId {
            pid: 999_998,
            start_time_ticks: 1,
        };
        let (mut child, pgid) = fake_leftover(other);
        let reused = ProcessId {
            pid: pgid,
            start_time_ticks: 1,
        };
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(kill_leftover(dead, Some(reused)), Ok(false));
        assert!(alive(pgid));
        // With the right start time it is still not the dead irqlab's load: a PID and a start
        // time name a process, and the record is only a file. Its own irqlab's marker makes
        // it the load.
        let leader = ProcessId::of(pgid).unwrap();
        assert_eq!(kill_leftover(dead, Some(leader)), Ok(false));
        assert!(
            alive(pgid),
            "a group without the dead irqlab's marker was killed"
        );
        assert_eq!(kill_leftover(other, Some(leader)), Ok(true));
        let _ = child.wait();
        assert!(group_members(pgid).is_empty());
    }
}
