//! The kernel's trace events, used without leaving a trace.
//!
//! irqlab never touches the global tracing state (the top-level `tracing_on`, `trace_clock`,
//! `buffer_size_kb`, enabled events and filters that another tool or a person may be using).
//! It creates its own tracing instance (`instances/irqlab-PID-START`, Linux 3.14+), which has its own
//! ring buffer, clock and event switches, and removes it at the end. If tracefs is not mounted it
//! mounts it at a private mount point and unmounts it afterwards; `/sys/kernel/tracing` is
//! left as it was. [`TraceInstance::close`] (and `Drop`) undo everything in
//! reverse order, so a normal exit, an error and a Ctrl-C (the caller turns SIGINT and SIGTERM
//! into a stop flag, see [`crate::signals`]) all leave the host as it was. This follows rtla,
//! which also works in its own instance (`tools/tracing/rtla/src/trace.c`).
//!
//! Both the private mount and the instance are recorded in irqlab's state file before they are
//! made ([`crate::state`]), so that if irqlab is killed outright the next start removes them.
//!
//! tracefs may be mounted several times (`/sys/kernel/tracing`, and the automount at
//! `/sys/kernel/debug/tracing` wherever debugfs is mounted), and every mount shows the same
//! instances: tracefs has a single superblock (`tracefs_get_tree()` calls `get_tree_single()`,
//! `fs/tracefs/inode.c`), and an instance is a kernel `trace_array` that outlives every mount
//! (`kernel/trace/trace.c`). So any mount will do, and an instance left by a crash can be removed
//! through any mount, or through a private mount made for the purpose.

use crate::error::HostError;
use crate::state::{self, Change, Recorded};
use std::path::{Path, PathBuf};

/// irqlab's own mount points are named `irqlab-tracefs-PID-START` in the temporary directory.
const PRIVATE_MOUNT_PREFIX: &str = "irqlab-tracefs-";

/// irqlab's instances are named `irqlab-PID-START`.
const INSTANCE_PREFIX: &str = "irqlab-";

/// `PID-START` of this process, the identity its state file carries (see [`crate::state`]):
/// instances are shared by the whole system and the temporary directory by every PID
/// namespace, so a name of the PID alone could be a live irqlab's elsewhere (another state
/// directory, another PID namespace) when a cleanup removes a dead one's.
fn own_tag() -> Result<String, HostError> {
    let me = state::ProcessId::current()?;
    Ok(format!("{}-{}", me.pid, me.start_time_ticks))
}

/// Where tracefs is mounted by convention since Linux 4.1.
pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// Where debugfs shows tracefs (an automount since Linux 4.1, the only place before).
pub const DEBUGFS_MOUNT: &str = "/sys/kernel/debug/tracing";

/// One trace event, `system/name` (`irq/irq_handler_entry`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EventName {
    pub system: &'static str,
    pub name: &'static str,
}

impl EventName {
    pub const fn new(system: &'static str, name: &'static str) -> Self {
        EventName { system, name }
    }
}

/// Hard IRQ handler and softirq events (`include/trace/events/irq.h`), which both measurements
/// read.
pub const IRQ_EVENTS: [EventName; 5] = [
    EventName::new("irq", "irq_handler_entry"),
    EventName::new("irq", "irq_handler_exit"),
    EventName::new("irq", "softirq_raise"),
    EventName::new("irq", "softirq_entry"),
    EventName::new("irq", "softirq_exit"),
];

/// The x86 local APIC timer interrupt (`arch/x86/include/asm/trace/irq_vectors.h`).
pub const LOCAL_TIMER_EVENTS: [EventName; 2] = [
    EventName::new("irq_vectors", "local_timer_entry"),
    EventName::new("irq_vectors", "local_timer_exit"),
];

impl std::fmt::Display for EventName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.system, self.name)
    }
}

/// A private tracing instance with a set of events enabled.
pub struct TraceInstance {
    mount: PathBuf,
    /// tracefs was not mounted and this instance mounted it.
    private_mount: Option<PrivateMount>,
    dir: PathBuf,
    /// The instance's entry in the state file, until it is removed.
    recorded: Option<Recorded>,
    closed: bool,
}

/// Where tracefs is mounted, from `/proc/mounts`: `/sys/kernel/tracing` if it is mounted there,
/// else `/sys/kernel/debug/tracing`, else any other mount point. Other irqlab processes' private
/// mounts are skipped: each goes away when its run ends.
pub fn find_mount() -> Option<PathBuf> {
    choose_mount(&tracefs_mounts())
}

/// Every mount point where tracefs is visible now, in `/proc/mounts` order.
pub fn tracefs_mounts() -> Vec<PathBuf> {
    tracefs_mounts_in(&std::fs::read_to_string("/proc/mounts").unwrap_or_default())
}

/// The tracefs mount points of a `/proc/mounts` text. A later mount on the same point hides an
/// earlier one, so a point counts only if its last mount is tracefs.
fn tracefs_mounts_in(mounts: &str) -> Vec<PathBuf> {
    let mut last: Vec<(PathBuf, bool)> = Vec::new();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let point = PathBuf::from(unescape_mount_field(f[1]));
        let is_tracefs = f[2] == "tracefs";
        last.retain(|(p, _)| *p != point);
        last.push((point, is_tracefs));
    }
    last.into_iter()
        .filter_map(|(p, t)| t.then_some(p))
        .collect()
}

/// `/proc/mounts` writes a space, tab, newline and backslash in a path as `\ooo` octal
/// (`mangle()` in `fs/proc_namespace.c`).
fn unescape_mount_field(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // At most \377: one byte.
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d[0] <= b'3' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `path` is an irqlab private mount point.
fn is_private_mount(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(PRIVATE_MOUNT_PREFIX))
}

/// The mount to use among `points` (see [`find_mount`]).
fn choose_mount(points: &[PathBuf]) -> Option<PathBuf> {
    let usable: Vec<&PathBuf> = points.iter().filter(|p| !is_private_mount(p)).collect();
    [DEFAULT_MOUNT, DEBUGFS_MOUNT]
        .iter()
        .find_map(|pref| usable.iter().find(|p| p.as_path() == Path::new(pref)))
        .or_else(|| usable.first())
        .map(|p| p.to_path_buf())
}

/// Refuse early, with what to do, when not root.
pub fn require_root(what: &str) -> Result<(), HostError> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(HostError::NotRoot(format!(
            "{what} reads the kernel's trace events, which needs root: run it with sudo"
        )))
    }
}

impl TraceInstance {
    /// Mount tracefs if needed, create the instance, set its clock to CLOCK_MONOTONIC (`mono`,
    /// so event times compare with `clock_gettime`), size its buffer and enable `events`. Any
    /// failure undoes what was done before it.
    pub fn create(events: &[EventName], buffer_kb_per_cpu: u32) -> Result<Self, HostError> {
        require_root("this measurement")?;
        let (mount, private_mount) = match find_mount() {
            Some(m) => (m, None),
            None => {
                let p = PrivateMount::mount()?;
                (p.path.clone(), Some(p))
            }
        };
        let name = format!("{INSTANCE_PREFIX}{}", own_tag()?);
        let dir = mount.join("instances").join(&name);
        // Recorded before it exists, so that a crash from here on leaves a record of it.
        let recorded = state::record(Change::TraceInstance {
            mount: mount.clone(),
            name,
        })?;
        let mut inst = TraceInstance {
            mount,
            private_mount,
            dir: dir.clone(),
            recorded: Some(recorded),
            closed: false,
        };
        if let Err(e) = std::fs::create_dir(&dir) {
            let err = HostError::Invalid(format!(
                "cannot create the tracing instance {}: {e} (this kernel may predate tracing \
                 instances, Linux 3.14; or an instance of that name is left from a crash: \
                 remove it with irqlab host --cleanup, or rmdir)",
                dir.display()
            ));
            inst.dir = PathBuf::new(); // nothing to remove
            inst.close_quietly();
            return Err(err);
        }
        let setup = || -> Result<(), HostError> {
            inst.write("trace_clock", "mono")?;
            inst.write("buffer_size_kb", &buffer_kb_per_cpu.to_string())?;
            // Wake readers on any data, not only when the buffer is half full.
            if inst.dir.join("buffer_percent").exists() {
                inst.write("buffer_percent", "0")?;
            }
            for ev in events {
                let enable = inst.event_file(*ev, "enable");
                if !enable.exists() {
                    return Err(HostError::MissingEvent {
                        event: ev.to_string(),
                        available: available(&inst.dir.join("events").join(ev.system)),
                    });
                }
                write_file(&enable, "1")?;
            }
            inst.write("tracing_on", "1")
        };
        match setup() {
            Ok(()) => Ok(inst),
            Err(e) => {
                inst.close_quietly();
                Err(e)
            }
        }
    }

    /// Enable those of `events` this kernel has; the others are skipped (optional events).
    pub fn enable_if_present(&self, events: &[EventName]) -> Result<(), HostError> {
        for ev in events {
            let enable = self.event_file(*ev, "enable");
            if enable.exists() {
                write_file(&enable, "1")?;
            }
        }
        Ok(())
    }

    /// The instance's directory (`.../instances/irqlab-PID-START`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The mount point in use.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    /// `events/SYSTEM/NAME/FILE` in the instance.
    fn event_file(&self, ev: EventName, file: &str) -> PathBuf {
        self.dir
            .join("events")
            .join(ev.system)
            .join(ev.name)
            .join(file)
    }

    /// `events/SYSTEM/NAME/format`.
    pub fn format_path(&self, ev: EventName) -> PathBuf {
        self.event_file(ev, "format")
    }

    /// The binary per-CPU ring buffer reader, opened non-blocking.
    pub fn open_cpu_raw(&self, cpu: u32) -> Result<std::fs::File, HostError> {
        use std::os::unix::fs::OpenOptionsExt;
        let p = self
            .dir
            .join("per_cpu")
            .join(format!("cpu{cpu}"))
            .join("trace_pipe_raw");
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .map_err(|e| HostError::io(&p, e))
    }

    /// Events the ring buffer of `cpu` overwrote or dropped (`per_cpu/cpuN/stats`).
    pub fn lost_events(&self, cpu: u32) -> Result<u64, HostError> {
        let p = self
            .dir
            .join("per_cpu")
            .join(format!("cpu{cpu}"))
            .join("stats");
        let text = std::fs::read_to_string(&p).map_err(|e| HostError::io(&p, e))?;
        Ok(text
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                matches!(k.trim(), "overrun" | "dropped events")
                    .then(|| v.trim().parse::<u64>().ok())
                    .flatten()
            })
            .sum())
    }

    /// Stop recording (the buffer keeps what it has for the readers to drain).
    pub fn stop(&self) -> Result<(), HostError> {
        self.write("tracing_on", "0")
    }

    fn write(&self, file: &str, value: &str) -> Result<(), HostError> {
        write_file(&self.dir.join(file), value)
    }

    /// Undo everything: stop, remove the instance (its events and buffer go with it), unmount
    /// tracefs if this instance mounted it. Readers must be closed first (an open
    /// `trace_pipe_raw` keeps the instance busy).
    pub fn close(mut self) -> Result<(), HostError> {
        self.close_inner()
    }

    fn close_quietly(&mut self) {
        if let Err(e) = self.close_inner() {
            eprintln!("irqlab: warning: {e}");
        }
    }

    fn close_inner(&mut self) -> Result<(), HostError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let removed = if self.dir.as_os_str().is_empty() || !self.dir.exists() {
            Ok(())
        } else {
            let _ = self.write("tracing_on", "0");
            remove_instance_dir(&self.dir)
        };
        match removed {
            Ok(()) => {
                if let Some(r) = self.recorded.take() {
                    r.undone();
                }
                match self.private_mount.take() {
                    Some(m) => m.unmount(),
                    None => Ok(()),
                }
            }
            Err(e) => {
                // Both stay recorded, for irqlab host --cleanup or the next start.
                if let Some(r) = self.recorded.take() {
                    r.keep();
                }
                Err(HostError::Restore(match self.private_mount.take() {
                    // The instance is still there: keep the mount so that it can be removed.
                    Some(m) => {
                        let mount = m.keep();
                        format!(
                            "could not remove the tracing instance {}: {e}; tracefs stays \
                             mounted at {} so you can: rmdir {} && umount {} (or run irqlab \
                             host --cleanup once this irqlab has ended)",
                            self.dir.display(),
                            mount.display(),
                            self.dir.display(),
                            mount.display()
                        )
                    }
                    None => format!(
                        "could not remove the tracing instance {}: {e}; remove it with rmdir, \
                         or run irqlab host --cleanup once this irqlab has ended",
                        self.dir.display()
                    ),
                }))
            }
        }
    }
}

/// rmdir a tracing instance. It fails with EBUSY while a reader still holds one of its files;
/// they are closed by now, but give the kernel a moment to drop its references.
fn remove_instance_dir(dir: &Path) -> Result<(), std::io::Error> {
    let mut result = std::fs::remove_dir(dir);
    for _ in 0..50 {
        match &result {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                result = std::fs::remove_dir(dir);
            }
            _ => break,
        }
    }
    result
}

/// tracefs mounted at a mount point of irqlab's own (a new directory in the temporary
/// directory), not at `/sys/kernel/tracing`, so that nothing another process sees changes, and
/// two irqlab runs never unmount each other's view. Recorded before it is made; dropping it
/// unmounts it.
struct PrivateMount {
    path: PathBuf,
    recorded: Option<Recorded>,
}

impl PrivateMount {
    fn mount() -> Result<PrivateMount, HostError> {
        let path = std::env::temp_dir().join(format!("{PRIVATE_MOUNT_PREFIX}{}", own_tag()?));
        let recorded = state::record(Change::TracefsMount { path: path.clone() })?;
        if let Err(e) = std::fs::create_dir(&path) {
            recorded.undone();
            return Err(HostError::NoTracefs {
                reason: format!(
                    "it is not mounted, and irqlab cannot create its mount point {}: {e}; mount \
                     it as root with: mount -t tracefs nodev /sys/kernel/tracing",
                    path.display()
                ),
            });
        }
        if let Err(e) = nix::mount::mount(
            Some("nodev"),
            &path,
            Some("tracefs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        ) {
            let _ = std::fs::remove_dir(&path);
            recorded.undone();
            return Err(HostError::NoTracefs {
                reason: format!(
                    "it is not mounted, and mounting it failed: {e}; mount it as root with: \
                     mount -t tracefs nodev /sys/kernel/tracing"
                ),
            });
        }
        Ok(PrivateMount {
            path,
            recorded: Some(recorded),
        })
    }

    /// Unmount, remove the mount point, and the record of both.
    fn unmount(mut self) -> Result<(), HostError> {
        self.release()
    }

    /// Leave it mounted (and recorded), for whoever removes what is still in it.
    fn keep(mut self) -> PathBuf {
        if let Some(r) = self.recorded.take() {
            r.keep();
        }
        self.path.clone()
    }

    /// Unmount it unless that was done, or it is kept.
    fn release(&mut self) -> Result<(), HostError> {
        let Some(recorded) = self.recorded.take() else {
            return Ok(());
        };
        match unmount_private(&self.path) {
            Ok(()) => {
                recorded.undone();
                Ok(())
            }
            Err(e) => {
                recorded.keep();
                Err(HostError::Restore(format!(
                    "could not unmount tracefs from {} (irqlab mounted it): {e}; unmount it \
                     with umount {}",
                    self.path.display(),
                    self.path.display()
                )))
            }
        }
    }
}

impl Drop for PrivateMount {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            eprintln!("irqlab: warning: {e}");
        }
    }
}

/// Unmount irqlab's own mount point and remove it. Lazily (MNT_DETACH), in case the kernel still
/// holds a reference: the mount leaves the namespace now, and nobody else uses the point.
fn unmount_private(path: &Path) -> Result<(), nix::Error> {
    nix::mount::umount2(path, nix::mount::MntFlags::MNT_DETACH)?;
    let _ = std::fs::remove_dir(path);
    Ok(())
}

/// Remove the tracing instance `name` that a dead irqlab created through `mount`: through that
/// mount if it still is one, else through any tracefs mount, else through a private mount made
/// for this (see the module docs: the instance outlives its mount). `Ok(Some(what))` says what
/// was removed, `Ok(None)` that it was gone already.
pub(crate) fn remove_leftover_instance(mount: &Path, name: &str) -> Result<Option<String>, String> {
    // A state file names irqlab's own instances only; never follow it anywhere else.
    if !name.starts_with(INSTANCE_PREFIX) || name.contains('/') || name.contains("..") {
        return Err(format!(
            "the tracing instance '{name}' in the state file is not irqlab's: left as is"
        ));
    }
    let mounts = tracefs_mounts();
    let view = if mounts.iter().any(|m| m == mount) {
        Some(mount.to_path_buf())
    } else {
        choose_mount(&mounts)
    };
    // A private mount is unmounted on return (dropped), after the instance is gone.
    let (view, private) = match view {
        Some(v) => (v, None),
        None => {
            let p = PrivateMount::mount()
                .map_err(|e| format!("could not look for the tracing instance {name}: {e}"))?;
            (p.path.clone(), Some(p))
        }
    };
    let dir = view.join("instances").join(name);
    if !dir.exists() {
        return Ok(None);
    }
    let _ = write_file(&dir.join("tracing_on"), "0");
    remove_instance_dir(&dir).map_err(|e| {
        format!(
            "could not remove the tracing instance {}: {e}; as root: rmdir {}",
            dir.display(),
            dir.display()
        )
    })?;
    Ok(Some(match private {
        // Its path will not exist in a moment: name the instance only.
        Some(_) => format!("tracing instance {name} (tracefs was mounted to remove it)"),
        None => format!("tracing instance {}", dir.display()),
    }))
}

/// Unmount and remove a private mount point a dead irqlab left. `Ok(true)` when something was
/// there.
pub(crate) fn remove_leftover_mount(path: &Path) -> Result<bool, String> {
    if !is_private_mount(path) {
        return Err(format!(
            "the mount point {} in the state file is not irqlab's: left as is",
            path.display()
        ));
    }
    if tracefs_mounts().iter().any(|m| m == path) {
        unmount_private(path).map_err(|e| {
            format!(
                "could not unmount tracefs from {}: {e}; as root: umount {} && rmdir {}",
                path.display(),
                path.display(),
                path.display()
            )
        })?;
        return Ok(true);
    }
    // Not mounted (here: it may have been in another mount namespace): only the directory.
    match std::fs::remove_dir(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!(
            "could not remove the mount point {}: {e}; check it is empty and not mounted, then \
             rmdir it",
            path.display()
        )),
    }
}

impl Drop for TraceInstance {
    fn drop(&mut self) {
        self.close_quietly();
    }
}

fn write_file(path: &Path, value: &str) -> Result<(), HostError> {
    std::fs::write(path, value).map_err(|e| HostError::io(path, e))
}

/// The events a trace system offers, for an error message.
fn available(system: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(system)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        "none (the whole system is missing)".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn every_visible_tracefs_mount_is_found() {
        // /sys/kernel/tracing, the debugfs automount, a point with a space, a tracefs mount
        // hidden by a later mount on the same point, and a later tracefs on a point that had
        // something else.
        let mounts = "sysfs /sys sysfs rw 0 0\n\
                      nodev /sys/kernel/tracing tracefs rw,relatime 0 0\n\
                      debugfs /sys/kernel/debug debugfs rw 0 0\n\
                      tracefs /sys/kernel/debug/tracing tracefs rw 0 0\n\
                      nodev /mnt/my\\040trace tracefs rw 0 0\n\
                      nodev /mnt/hidden tracefs rw 0 0\n\
                      tmpfs /mnt/hidden tmpfs rw 0 0\n\
                      tmpfs /mnt/over tmpfs rw 0 0\n\
                      nodev /mnt/over tracefs rw 0 0\n";
        assert_eq!(
            tracefs_mounts_in(mounts),
            paths(&[
                "/sys/kernel/tracing",
                "/sys/kernel/debug/tracing",
                "/mnt/my trace",
                "/mnt/over"
            ])
        );
        assert_eq!(unescape_mount_field(r"a\134b\011c\012"), "a\\b\tc\n");
        // Not an escape: kept as written.
        assert_eq!(unescape_mount_field(r"a\9b\"), r"a\9b\");
    }

    #[test]
    fn the_usual_mount_is_preferred_and_other_irqlabs_private_mounts_are_skipped() {
        let private = "/tmp/irqlab-tracefs-4242";
        assert_eq!(
            choose_mount(&paths(&[private, "/mnt/t", DEBUGFS_MOUNT, DEFAULT_MOUNT])),
            Some(PathBuf::from(DEFAULT_MOUNT))
        );
        assert_eq!(
            choose_mount(&paths(&[private, "/mnt/t", DEBUGFS_MOUNT])),
            Some(PathBuf::from(DEBUGFS_MOUNT))
        );
        assert_eq!(
            choose_mount(&paths(&[private, "/mnt/t"])),
            Some(PathBuf::from("/mnt/t"))
        );
        assert_eq!(choose_mount(&paths(&[private])), None);
        assert_eq!(choose_mount(&[]), None);
    }

    #[test]
    fn a_state_file_cannot_point_leftover_removal_elsewhere() {
        for name in ["trace", "irqlab-1/../../x", "irqlab-../x"] {
            let e = remove_leftover_instance(Path::new(DEFAULT_MOUNT), name).unwrap_err();
            assert!(e.contains("not irqlab's"), "{e}");
        }
        let e = remove_leftover_mount(Path::new("/sys/kernel/tracing")).unwrap_err();
        assert!(e.contains("not irqlab's"), "{e}");
        // A private mount point that is gone already.
        assert_eq!(
            remove_leftover_mount(&std::env::temp_dir().join("irqlab-tracefs-0-gone")),
            Ok(false)
        );
    }
}
