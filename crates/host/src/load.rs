//! `--load CMD`: a load that runs for exactly the measurement's duration. The command runs
//! under `sh -c` in its own process group, so stopping it stops everything it started
//! (stress-ng's workers, a `cvs update`'s children), on every exit path of the measurement.

use crate::HostError;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running load; dropping it stops it.
pub struct Load {
    cmd: String,
    child: Option<Child>,
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
        let child = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| HostError::Invalid(format!("--load: cannot start sh -c '{cmd}': {e}")))?;
        let mut load = Load {
            cmd: cmd.to_string(),
            child: Some(child),
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
        let mut child = self.child.take()?;
        let pgid = Pid::from_raw(child.id() as i32);
        // The shell may have ended with children still running in its group (`cmd &`): the
        // group is stopped either way; its id is not reused while any member lives.
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
}
