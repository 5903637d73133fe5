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

use crate::HostError;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    started: Instant,
}

impl Load {
    /// Start `cmd` with `sh -c`, its output discarded.
    pub fn start(cmd: &str) -> Result<Load, HostError> {
        if cmd.trim().is_empty() {
            return Err(HostError::Invalid(
                "--load: empty command; give a shell command such as 'stress-ng --cpu 2'".into(),
            ));
        }
        let (read_end, write_end) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| {
                HostError::Invalid(format!(
                    "--load: cannot create the pipe that stops the load with irqlab: {e}"
                ))
            })?;
        let spawned = Command::new("sh")
            .arg("-c")
            .arg(LEADER_SCRIPT)
            .arg("irqlab-load")
            .arg(cmd)
            .stdin(Stdio::from(read_end))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        let child = spawned
            .map_err(|e| HostError::Invalid(format!("--load: cannot start sh -c '{cmd}': {e}")))?;
        let mut load = Load {
            cmd: cmd.to_string(),
            child: Some(child),
            lifeline: Some(write_end),
            started: Instant::now(),
        };
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
            .filter(|p| {
                // Field 5 of /proc/PID/stat, counted from the `)` that ends the command name.
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                let f: Vec<&str> = stat[stat.rfind(')').map_or(0, |i| i + 1)..]
                    .split_whitespace()
                    .collect();
                f.get(2) == Some(&pgid.to_string().as_str()) && alive(*p)
            })
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
}
