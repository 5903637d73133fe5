//! Crash-safe host state: what this irqlab process sets up on the host is written down before it
//! is set up, so that the next irqlab can undo it if this one dies without cleaning up (SIGKILL,
//! the OOM killer, a panic in a thread that holds a guard, a closed terminal before the signal
//! handler is installed).
//!
//! # The record
//!
//! One JSON file per irqlab process, `DIR/PID-START.json`. START is the process's start time in
//! clock ticks after boot (`/proc/PID/stat` field 22, proc(5)): the kernel reuses PIDs, so a PID
//! alone cannot tell a dead irqlab from whatever got its number later; the PID, the start time
//! and the boot ID (`/proc/sys/kernel/random/boot_id`) together can. The file lists the
//! [`Change`]s the process holds: each is added by [`record`] *before* the change is made, and
//! removed by [`Recorded::undone`] once it has been undone, so at every instant the file lists at
//! least what exists. The file goes when its list is empty. Every write replaces the file whole
//! (a temporary file, then rename(2), which is atomic within a directory), so a reader never sees
//! half a record, even when the writer dies mid-write. The next start's recovery (the
//! `recovery` module) reads these files and undoes what a dead process held.
//!
//! A process is taken for ended when it is a zombie or has begun to exit (`PF_EXITING`): its
//! locks are released before it is a zombie, and an irqlab granted the lock it waited for must
//! not leave the dead one's record for later, where it would undo what this one then does.
//!
//! DIR for what irqlab does under a tree of files (`--root TREE`) is `TREE/run/irqlab`
//! ([`StateDir::for_root`]): a tree's records never mix with the host's. For the host, DIR is
//! `$IRQLAB_STATE_DIR` if set; else `/run/irqlab` for root (`/run` is a tmpfs emptied at
//! boot, where system tools keep runtime state); else `$XDG_RUNTIME_DIR/irqlab`; else
//! `irqlab-UID` in the temporary directory. It is created with mode 0700 and refused if it is a
//! symbolic link, belongs to another user, or others may write to it (a shared `/tmp`). A
//! default directory is removed again when its last file goes.

use crate::error::HostError;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The environment variable that puts irqlab's state files somewhere else.
pub const STATE_DIR_ENV: &str = "IRQLAB_STATE_DIR";

/// Version of the file's layout; a file of a later version is left to the irqlab that wrote it.
pub(crate) const FORMAT: u32 = 1;

/// One host change, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// tracefs mounted at `path`, a directory irqlab created for it.
    TracefsMount { path: PathBuf },
    /// The tracing instance `instances/NAME`, created through the tracefs mount `mount`.
    TraceInstance { mount: PathBuf, name: String },
    /// A `--load` command's process group. Recorded with `leader: None` before it starts; the
    /// leader (whose PID is the group ID) is filled in once it runs.
    LoadGroup {
        command: String,
        leader: Option<ProcessId>,
    },
    /// A PM QoS CPU latency request held through a file descriptor of `path`.
    PmQos { path: PathBuf, target_us: i32 },
    /// IRQ `irq`'s `smp_affinity` about to be changed; `old_mask` is what it read before, as the
    /// kernel printed it. `root` is the tree whose `proc/irq` was written (`/` but in tests).
    IrqAffinity {
        irq: u32,
        old_mask: String,
        #[serde(default = "slash", skip_serializing_if = "is_slash")]
        root: PathBuf,
    },
    /// `plan affinity --host --restore` under way: putting back the masks of the applied
    /// record of the tree `root`. Left by a restore that was killed, it has the next start
    /// finish the restore.
    AffinityRestore {
        #[serde(default = "slash", skip_serializing_if = "is_slash")]
        root: PathBuf,
    },
}

fn slash() -> PathBuf {
    PathBuf::from("/")
}

fn is_slash(p: &Path) -> bool {
    p == Path::new("/")
}

impl Change {
    /// What it is, in a few words, for messages.
    pub fn describe(&self) -> String {
        match self {
            Change::TracefsMount { path } => format!("private tracefs mount {}", path.display()),
            Change::TraceInstance { mount, name } => {
                format!(
                    "tracing instance {}",
                    mount.join("instances").join(name).display()
                )
            }
            Change::LoadGroup { command, leader } => match leader {
                Some(l) => format!("load process group {} ('{command}')", l.pid),
                None => format!("load '{command}'"),
            },
            Change::PmQos { path, target_us } => {
                format!("PM QoS request of {target_us} us on {}", path.display())
            }
            Change::IrqAffinity { irq, old_mask, .. } => {
                format!("IRQ {irq}'s smp_affinity (was {old_mask})")
            }
            Change::AffinityRestore { root } if is_slash(root) => {
                "a --restore of the applied affinity plan".into()
            }
            Change::AffinityRestore { root } => format!(
                "a --restore of the applied affinity plan of the tree {}",
                root.display()
            ),
        }
    }

    /// [`Change::describe`] with a note in its parentheses.
    pub(crate) fn describe_noted(&self, note: &str) -> String {
        match self {
            Change::LoadGroup {
                command,
                leader: Some(l),
            } => format!("load process group {} ('{command}', {note})", l.pid),
            _ => format!("{} ({note})", self.describe()),
        }
    }

    /// Whether `self` and `other` name the same thing on the host (a dead irqlab's instance name
    /// may have been taken by a running irqlab that got the same PID).
    pub(crate) fn same_object(&self, other: &Change) -> bool {
        match (self, other) {
            (Change::TracefsMount { path: a }, Change::TracefsMount { path: b }) => a == b,
            (Change::TraceInstance { name: a, .. }, Change::TraceInstance { name: b, .. }) => {
                a == b
            }
            (
                Change::IrqAffinity {
                    irq: a, root: ra, ..
                },
                Change::IrqAffinity {
                    irq: b, root: rb, ..
                },
            ) => a == b && ra == rb,
            _ => false,
        }
    }
}

/// A process, told apart from a later process with the same PID by its start time.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessId {
    pub pid: i32,
    /// Clock ticks after boot (`/proc/PID/stat` field 22).
    pub start_time_ticks: u64,
}

impl ProcessId {
    /// This process.
    pub fn current() -> Result<ProcessId, HostError> {
        let pid = std::process::id() as i32;
        ProcessId::of(pid).ok_or_else(|| {
            HostError::Invalid(format!(
                "cannot read /proc/{pid}/stat: is /proc mounted? irqlab needs it to tell its own \
                 processes from others"
            ))
        })
    }

    /// The process that has `pid` now, if any (a zombie included).
    pub fn of(pid: i32) -> Option<ProcessId> {
        proc_stat(pid).map(|s| ProcessId {
            pid,
            start_time_ticks: s.start_time_ticks,
        })
    }

    /// Whether this very process still runs (a zombie has ended: its files are closed).
    pub fn is_running(&self) -> bool {
        proc_stat(self.pid)
            .is_some_and(|s| s.start_time_ticks == self.start_time_ticks && !s.has_ended())
    }
}

/// `PF_EXITING` in `/proc/PID/stat`'s flags (field 9; `include/linux/sched.h`): set by
/// `exit_signals()` at the start of `do_exit()` (`kernel/exit.c`), before `exit_files()` and
/// `exit_task_work()` close the process's files and so release its flock(2)s, and long before
/// `exit_notify()` makes it a zombie. Between the two a killed irqlab still reads as running
/// (state R or D) although its locks are gone: the next irqlab, granted the lock it waited for,
/// must see it as ended, or it leaves the dead process's record to be undone later, over what
/// it does itself.
const PF_EXITING: u32 = 0x0000_0004;

/// The fields of `/proc/PID/stat` irqlab uses (proc(5)).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProcStat {
    /// Field 3: R, S, D, Z (zombie), X (dead), ...
    pub state: char,
    /// Field 5: the process group ID.
    pub pgid: i32,
    /// Field 9: the kernel's `PF_*` flags of the process (its main thread).
    pub flags: u32,
    /// Field 22: start time, clock ticks after boot.
    pub start_time_ticks: u64,
}

impl ProcStat {
    /// A zombie, or a process on its way to be one ([`PF_EXITING`]): its files are closed or
    /// being closed, and it does nothing more.
    pub fn has_ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X') || self.flags & PF_EXITING != 0
    }
}

pub(crate) fn proc_stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parse a `/proc/PID/stat` line. The command name (field 2) is in parentheses and may itself
/// contain spaces and parentheses, so the fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3.
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        pgid: f.get(2)?.parse().ok()?,
        flags: f.get(6)?.parse().ok()?,
        start_time_ticks: f.get(19)?.parse().ok()?,
    })
}

/// This boot's ID: a record from an earlier boot names processes that are all gone.
pub(crate) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Where the state files are.
#[derive(Clone, Debug)]
pub struct StateDir {
    path: PathBuf,
    /// A default location is removed again when empty; a directory the user named is not.
    remove_when_empty: bool,
    /// The tree of files (`--root TREE`) this directory keeps the records of, if it is a
    /// tree's own ([`StateDir::for_root`]): its records may only name IRQ masks of that tree.
    tree: Option<PathBuf>,
}

impl StateDir {
    /// The directory for this user (see the module docs).
    pub fn locate() -> StateDir {
        if let Some(dir) = std::env::var_os(STATE_DIR_ENV).filter(|d| !d.is_empty()) {
            return StateDir::at(PathBuf::from(dir));
        }
        StateDir::host_default()
    }

    /// The directory for what irqlab changes under `root`: the live system's
    /// ([`StateDir::locate`]) for `/`; for a tree of files standing in for it (`--root TREE`,
    /// tests and dry runs), `TREE/run/irqlab`, so that a tree's records and applied plan are
    /// never kept among the host's (where `host --cleanup` and the next `--apply` on the live
    /// system would act on them) and go with the tree. `$IRQLAB_STATE_DIR`, set, is used for
    /// both. `root` must be canonical ([`std::fs::canonicalize`]): records name it, and a later
    /// run from another directory must find the same tree.
    pub fn for_root(root: &Path) -> StateDir {
        if root == Path::new("/") {
            return StateDir::locate();
        }
        if let Some(dir) = std::env::var_os(STATE_DIR_ENV).filter(|d| !d.is_empty()) {
            return StateDir::at(PathBuf::from(dir));
        }
        StateDir {
            path: root.join("run/irqlab"),
            remove_when_empty: true,
            tree: Some(root.to_path_buf()),
        }
    }

    /// The tree this directory belongs to ([`StateDir::for_root`]); none for the host's.
    pub fn tree(&self) -> Option<&Path> {
        self.tree.as_deref()
    }

    fn host_default() -> StateDir {
        let euid = nix::unistd::geteuid();
        let path = if euid.is_root() && Path::new("/run").is_dir() {
            PathBuf::from("/run/irqlab")
        } else {
            // XDG_RUNTIME_DIR only if it is this user's (sudo may keep another user's).
            std::env::var_os("XDG_RUNTIME_DIR")
                .map(PathBuf::from)
                .filter(|d| {
                    d.is_absolute()
                        && std::fs::metadata(d)
                            .is_ok_and(|m| m.is_dir() && m.uid() == euid.as_raw())
                })
                .map(|d| d.join("irqlab"))
                .unwrap_or_else(|| std::env::temp_dir().join(format!("irqlab-{euid}")))
        };
        StateDir {
            path,
            remove_when_empty: true,
            tree: None,
        }
    }

    /// A directory of the caller's choosing (kept when empty).
    pub fn at(path: impl Into<PathBuf>) -> StateDir {
        StateDir {
            path: path.into(),
            remove_when_empty: false,
            tree: None,
        }
    }

    /// A directory removed again when empty, as [`StateDir::locate`]'s are (for tests, which
    /// must not use the real one).
    #[cfg(test)]
    pub(crate) fn removable(path: impl Into<PathBuf>) -> StateDir {
        StateDir {
            path: path.into(),
            remove_when_empty: true,
            tree: None,
        }
    }

    /// A tree's directory, as [`StateDir::for_root`] gives it without `$IRQLAB_STATE_DIR` (for
    /// tests, which must not depend on the environment).
    #[cfg(test)]
    pub(crate) fn of_tree(tree: &Path) -> StateDir {
        StateDir {
            path: tree.join("run/irqlab"),
            remove_when_empty: true,
            tree: Some(tree.to_path_buf()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn error(&self, cause: impl std::fmt::Display) -> HostError {
        HostError::StateDir {
            path: self.path.clone(),
            cause: cause.to_string(),
            env: STATE_DIR_ENV,
        }
    }

    /// Create the directory if needed, and check that it is safe to keep state in.
    pub(crate) fn create(&self) -> Result<(), HostError> {
        let made = if self.tree.is_some() {
            // A tree's `run` is made here, never through a link: recursive creation would
            // follow a `run` that is a link and make `irqlab` wherever it leads.
            self.check_tree_run(true)?;
            std::fs::DirBuilder::new().mode(0o700).create(&self.path)
        } else {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.path)
        };
        match made {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(self.error(e)),
        }
        let m = std::fs::symlink_metadata(&self.path).map_err(|e| self.error(e))?;
        self.check_safe(&m)
    }

    /// For a tree's directory (`TREE/run/irqlab`): that `TREE/run` is a directory of this
    /// user's that others cannot write to, not a link. Whoever wrote the tree could have made
    /// `run` a link to the host's `/run` (its records would then be the host's, and a cleanup
    /// of the tree would remove the host's files), or left it open for a swap. With `create`,
    /// a missing `run` is made (0700).
    fn check_tree_run(&self, create: bool) -> Result<(), HostError> {
        let (Some(tree), Some(run)) = (&self.tree, self.path.parent()) else {
            return Ok(());
        };
        let refuse = |why: String| {
            self.error(format!(
                "{} {why}: a tree's records are kept in the tree, in a directory only this user \
                 may write to",
                run.display()
            ))
        };
        if !run.starts_with(tree) {
            return Err(refuse(format!("is not in the tree {}", tree.display())));
        }
        if create {
            match std::fs::DirBuilder::new().mode(0o700).create(run) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(self.error(format!("creating {}: {e}", run.display()))),
            }
        }
        let m = match std::fs::symlink_metadata(run) {
            Ok(m) => m,
            Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.error(format!("{}: {e}", run.display()))),
        };
        if m.is_symlink() {
            return Err(refuse("is a symbolic link".into()));
        }
        if !m.is_dir() {
            return Err(refuse("is not a directory".into()));
        }
        if let Some(whose) = not_this_users(&m) {
            return Err(refuse(whose));
        }
        if m.mode() & 0o022 != 0 {
            return Err(refuse(format!(
                "may be written by others (mode {:o})",
                m.mode() & 0o7777
            )));
        }
        Ok(())
    }

    /// That the directory (its metadata `m`, not followed through a link) is this user's alone:
    /// a directory others can write to could hold records that make irqlab kill or remove what
    /// is not its own.
    fn check_safe(&self, m: &std::fs::Metadata) -> Result<(), HostError> {
        if !m.is_dir() {
            return Err(self.error("it is not a directory"));
        }
        if let Some(whose) = not_this_users(m) {
            return Err(self.error(whose));
        }
        if m.mode() & 0o022 != 0 {
            return Err(self.error(format!(
                "others may write to it (mode {:o})",
                m.mode() & 0o7777
            )));
        }
        Ok(())
    }

    /// Remove the directory if it is a default one and empty (a concurrent writer recreates it).
    /// Not while this process holds its lock through another handle ([`lock_dir`]): the holder
    /// removes it at its end.
    ///
    /// Only under the lock, taken without waiting here: removed by a process that does not hold
    /// it, the directory would vanish under one that does (an apply that has locked it and not
    /// yet written its first record), whose next record would create it anew for a third irqlab
    /// to lock, and two applies would run at once. A directory locked elsewhere is left for its
    /// holder, which removes it before it unlocks ([`LockedDir`]'s drop).
    pub(crate) fn remove_if_empty(&self) {
        if !self.remove_when_empty || is_locked_here(&self.path) {
            return;
        }
        if let Ok(Some(_lock)) = lock_dir_with(self, false) {
            let _ = std::fs::remove_dir(&self.path);
        }
    }

    /// The file of `owner`.
    pub(crate) fn file_of(&self, owner: ProcessId) -> PathBuf {
        self.path
            .join(format!("{}-{}.json", owner.pid, owner.start_time_ticks))
    }
}

/// The owner a state file's name gives: `PID-START.json` (or its temporary `.PID-START.json.tmp`).
pub(crate) fn owner_from_name(name: &str) -> Option<ProcessId> {
    let stem = name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".json.tmp"))
        .or_else(|| name.strip_suffix(".json"))?;
    let (pid, start) = stem.split_once('-')?;
    Some(ProcessId {
        pid: pid.parse().ok()?,
        start_time_ticks: start.parse().ok()?,
    })
}

/// A state file as stored.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) format: u32,
    pub(crate) owner: ProcessId,
    pub(crate) boot_id: String,
    /// The owner's command line, for messages.
    pub(crate) command: String,
    /// Each an [`Entry`]; kept as JSON so that a kind this version does not know survives a
    /// rewrite.
    pub(crate) changes: Vec<serde_json::Value>,
}

impl Record {
    /// Whether it was written in the boot `boot` (a record without a boot ID counts as this
    /// boot's).
    pub(crate) fn of_boot(&self, boot: &str) -> bool {
        self.boot_id.is_empty() || self.boot_id == boot
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) id: u64,
    #[serde(flatten)]
    pub(crate) change: Change,
}

/// Write `path` whole or not at all: a temporary file beside it, then rename(2).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    // A temporary a crashed writer left goes first (a link itself, not what it leads to); the
    // new one is created, never opened through a link.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?
        .write_all(bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// One process's state file: the changes it holds.
struct StateFile {
    dir: StateDir,
    path: PathBuf,
    owner: ProcessId,
    boot_id: String,
    command: String,
    entries: Vec<Entry>,
    next_id: u64,
}

impl StateFile {
    fn new(dir: StateDir, owner: ProcessId) -> StateFile {
        StateFile {
            path: dir.file_of(owner),
            dir,
            owner,
            boot_id: boot_id(),
            command: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            entries: Vec::new(),
            next_id: 0,
        }
    }

    fn add(&mut self, change: Change) -> Result<u64, HostError> {
        self.next_id += 1;
        let id = self.next_id;
        self.entries.push(Entry { id, change });
        self.save().inspect_err(|_| {
            self.entries.pop();
        })?;
        Ok(id)
    }

    fn update(&mut self, id: u64, change: Change) -> Result<(), HostError> {
        let Some(e) = self.entries.iter_mut().find(|e| e.id == id) else {
            return Ok(());
        };
        let old = std::mem::replace(&mut e.change, change);
        self.save().inspect_err(|_| {
            if let Some(e) = self.entries.iter_mut().find(|e| e.id == id) {
                e.change = old;
            }
        })
    }

    fn remove(&mut self, id: u64) -> Result<(), HostError> {
        self.entries.retain(|e| e.id != id);
        self.save()
    }

    fn save(&self) -> Result<(), HostError> {
        if self.entries.is_empty() {
            match std::fs::remove_file(&self.path) {
                Ok(()) => self.dir.remove_if_empty(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.dir.error(e)),
            }
            return Ok(());
        }
        let record = Record {
            format: FORMAT,
            owner: self.owner,
            boot_id: self.boot_id.clone(),
            command: self.command.clone(),
            changes: self
                .entries
                .iter()
                .map(|e| serde_json::to_value(e).expect("an entry serializes"))
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&record).expect("a record serializes");
        let write = || {
            self.dir.create()?;
            write_atomic(&self.path, &bytes).map_err(|e| self.dir.error(e))
        };
        // A concurrent irqlab may remove the empty directory between our creating it and
        // writing: create it again, once.
        write().or_else(|_| write())
    }
}

/// This process's state files, one per state directory (one in normal use: [`StateDir::locate`]'s;
/// tests name others), each created at its first change.
static OWN: Mutex<Vec<StateFile>> = Mutex::new(Vec::new());

fn with_own<T>(
    dir: &StateDir,
    f: impl FnOnce(&mut StateFile) -> Result<T, HostError>,
) -> Result<T, HostError> {
    let mut own = OWN.lock().unwrap_or_else(PoisonError::into_inner);
    let i = match own.iter().position(|file| file.dir.path() == dir.path()) {
        Some(i) => i,
        None => {
            own.push(StateFile::new(dir.clone(), ProcessId::current()?));
            own.len() - 1
        }
    };
    f(&mut own[i])
}

/// Record `change` in this process's state file. Call it *before* making the change; undo the
/// change on every path, then call [`Recorded::undone`].
pub fn record(change: Change) -> Result<Recorded, HostError> {
    record_in(&StateDir::locate(), change)
}

/// [`record`] in the state directory `dir`.
pub fn record_in(dir: &StateDir, change: Change) -> Result<Recorded, HostError> {
    with_own(dir, |f| f.add(change)).map(|id| Recorded {
        id,
        dir: dir.clone(),
    })
}

/// A change recorded in this process's state file. Dropping it keeps the record (a change whose
/// undoing failed, or was forgotten, is left for the next start to undo).
#[must_use = "call undone() once the change is undone, or keep() to leave it for the next start"]
#[derive(Debug)]
pub struct Recorded {
    id: u64,
    dir: StateDir,
}

impl Recorded {
    /// Replace the recorded change with what is known now (a load's process group, once it
    /// runs).
    pub fn update(&self, change: Change) -> Result<(), HostError> {
        with_own(&self.dir, |f| f.update(self.id, change))
    }

    /// The change is undone, or (an applied IRQ affinity) handed over to a record of its own:
    /// remove it from this process's record.
    pub fn undone(self) {
        if let Err(e) = with_own(&self.dir, |f| f.remove(self.id)) {
            // The host is restored; only the record of it is stale, and the next start will
            // find its objects gone.
            eprintln!("irqlab: warning: {e}");
        }
    }

    /// The change could not be undone: leave it recorded for the next start.
    pub fn keep(self) {}
}

/// Another irqlab process that holds host changes for a measurement now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Concurrent {
    pub owner: ProcessId,
    /// Its command line, as recorded.
    pub command: String,
}

/// The irqlab processes other than this one that are measuring now, as their state files in
/// `dir` say (a tracing instance, a private tracefs mount, a load, a PM QoS request): two
/// measurements at once each add their timer threads, trace events and load to the other's
/// latencies, and neither would know it.
pub fn measuring_now(dir: &StateDir) -> Vec<Concurrent> {
    let me = std::process::id() as i32;
    let boot = boot_id();
    let Ok(entries) = std::fs::read_dir(dir.path()) else {
        return Vec::new();
    };
    let mut found: Vec<Concurrent> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                return None;
            }
            let owner = owner_from_name(&name)?;
            if owner.pid == me || !owner.is_running() {
                return None;
            }
            let record: Record = serde_json::from_str(&read_own_file(&e.path()).ok()?).ok()?;
            let measuring = record.of_boot(&boot)
                && record.owner == owner
                && record.changes.iter().any(|c| {
                    matches!(
                        serde_json::from_value::<Entry>(c.clone()).map(|e| e.change),
                        Ok(Change::TraceInstance { .. }
                            | Change::TracefsMount { .. }
                            | Change::LoadGroup { .. }
                            | Change::PmQos { .. })
                    )
                });
            measuring.then_some(Concurrent {
                owner,
                command: record.command,
            })
        })
        .collect();
    found.sort_by_key(|c| c.owner.pid);
    found
}

/// The state directories whose lock this process holds (one entry per [`DirLock`]).
static LOCKED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn is_locked_here(path: &Path) -> bool {
    LOCKED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .any(|p| p == path)
}

/// An exclusive flock(2) on a state directory ([`lock_dir`]); released when dropped. While it
/// is held, this process does not remove the directory ([`StateDir::remove_if_empty`]).
#[derive(Debug)]
pub(crate) struct DirLock {
    _flock: Flock<std::fs::File>,
    path: PathBuf,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let mut held = LOCKED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = held.iter().position(|p| *p == self.path) {
            held.remove(i);
        }
    }
}

/// An exclusive flock(2) on the state directory, held until dropped: the recovery holds it while
/// it reads and undoes records, `plan affinity --host` while it applies or restores (so two
/// irqlab processes never undo, apply or restore the same thing at once). None if the
/// directory does not exist.
pub(crate) fn lock_dir(dir: &StateDir) -> Result<Option<DirLock>, HostError> {
    lock_dir_with(dir, true)
}

/// [`lock_dir`], waiting for the lock or not (`wait`: none if another holds it).
fn lock_dir_with(dir: &StateDir, wait: bool) -> Result<Option<DirLock>, HostError> {
    // Another irqlab may remove the directory (empty, under its lock) between our opening it
    // and our lock being granted: the lock is then on a directory no path names, and a third
    // irqlab could lock the one created after it. So the path must still name the directory
    // locked; else lock again.
    for _ in 0..100 {
        let Some(flock) = lock_once(dir, wait)? else {
            return Ok(None);
        };
        let locked = flock.metadata().map_err(|e| dir.error(e))?;
        match std::fs::symlink_metadata(dir.path()) {
            Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {
                LOCKED
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(dir.path().to_path_buf());
                return Ok(Some(DirLock {
                    _flock: flock,
                    path: dir.path().to_path_buf(),
                }));
            }
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(dir.error(e)),
        }
    }
    Err(dir.error("cannot lock it: it was removed and created again 100 times while irqlab waited"))
}

/// A state directory created if missing and locked (`lock_dir`) for a whole sequence of
/// steps, such as `plan affinity --host --apply`'s clean up, read, plan, write and commit: no
/// other irqlab cleans up, applies or restores in between. The directory is removed again when
/// the lock is dropped, if it is a default one and empty.
#[derive(Debug)]
pub struct LockedDir {
    dir: StateDir,
    lock: Option<DirLock>,
}

impl LockedDir {
    /// Create `dir` if needed and lock it, waiting for another irqlab that holds it.
    pub fn acquire(dir: &StateDir) -> Result<LockedDir, HostError> {
        // The directory may be removed (empty) by another irqlab between its creation and the
        // lock.
        for _ in 0..100 {
            dir.create()?;
            if let Some(lock) = lock_dir(dir)? {
                return Ok(LockedDir {
                    dir: dir.clone(),
                    lock: Some(lock),
                });
            }
        }
        Err(dir.error("it is removed as soon as it is created: cannot lock it"))
    }

    /// Lock `dir` if it exists; none if it does not (nothing is recorded there).
    pub fn if_exists(dir: &StateDir) -> Result<Option<LockedDir>, HostError> {
        Ok(lock_dir(dir)?.map(|lock| LockedDir {
            dir: dir.clone(),
            lock: Some(lock),
        }))
    }

    pub fn dir(&self) -> &StateDir {
        &self.dir
    }
}

impl Drop for LockedDir {
    fn drop(&mut self) {
        // Removed while still locked, then unlocked: an irqlab waiting for the lock is granted
        // it on a directory no path names, sees so (`lock_dir`) and makes a new one. Unlocked
        // first, the directory could be removed under the irqlab granted the lock meanwhile.
        if self.dir.remove_when_empty {
            let _ = std::fs::remove_dir(self.dir.path());
        }
        drop(self.lock.take());
    }
}

fn lock_once(dir: &StateDir, wait: bool) -> Result<Option<Flock<std::fs::File>>, HostError> {
    dir.check_tree_run(false)?;
    // Not followed through a symbolic link, and checked on the handle itself: the same checks
    // as before writing to it (a record read is a record acted on).
    let handle = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir.path())
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // O_NOFOLLOW with O_DIRECTORY: ENOTDIR for a link (ELOOP on some kernels).
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            let link = std::fs::symlink_metadata(dir.path()).is_ok_and(|m| m.is_symlink());
            return Err(dir.error(if link {
                "it is a symbolic link"
            } else {
                "it is not a directory"
            }));
        }
        Err(e) => return Err(dir.error(e)),
    };
    dir.check_safe(&handle.metadata().map_err(|e| dir.error(e))?)?;
    let how = if wait {
        FlockArg::LockExclusive
    } else {
        FlockArg::LockExclusiveNonblock
    };
    match Flock::lock(handle, how) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) if !wait => Ok(None),
        Err((_, e)) => Err(dir.error(format!("cannot lock it: {e}"))),
    }
}

/// Whose a file is, when it is not this (effective) user's.
fn not_this_users(m: &std::fs::Metadata) -> Option<String> {
    let euid = nix::unistd::geteuid().as_raw();
    (m.uid() != euid).then(|| format!("it belongs to user {}, not to this user ({euid})", m.uid()))
}

/// The text of a state file, if it is a regular file of this user's (not followed through a
/// symbolic link).
pub(crate) fn read_own_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| e.to_string())?;
    let m = f.metadata().map_err(|e| e.to_string())?;
    if !m.is_file() {
        return Err("not a regular file: left as is".into());
    }
    if let Some(whose) = not_this_users(&m) {
        return Err(format!("{whose}: left as is"));
    }
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok(text)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        // A command name with spaces and parentheses, as a process may choose.
        let line = "4242 (a) b (c) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                state: 'S',
                pgid: 4240,
                flags: 4194560,
                start_time_ticks: 987654
            })
        );
        // Killed and exiting, its files closing, not yet a zombie: ended.
        let exiting = line.replace(" 4194560 ", " 4194564 ");
        assert!(parse_stat(&exiting).unwrap().has_ended());
        assert!(!parse_stat(line).unwrap().has_ended());
        assert_eq!(parse_stat("4242 (cut short) S 1"), None);
        let me = ProcessId::current().unwrap();
        assert!(me.is_running());
        assert!(!ProcessId {
            start_time_ticks: me.start_time_ticks + 1,
            ..me
        }
        .is_running());
    }

    #[test]
    fn file_names_give_their_owner() {
        let p = ProcessId {
            pid: 12,
            start_time_ticks: 34,
        };
        assert_eq!(owner_from_name("12-34.json"), Some(p));
        assert_eq!(owner_from_name(".12-34.json.tmp"), Some(p));
        assert_eq!(owner_from_name("12.json"), None);
        assert_eq!(owner_from_name("notes.txt"), None);
    }

    /// A process that has ended (and been reaped), so its PID and start time name nobody.
    pub(crate) fn dead_process() -> ProcessId {
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .unwrap();
        let id = ProcessId::of(child.id() as i32).expect("the child runs");
        child.wait().unwrap();
        assert!(!id.is_running());
        id
    }

    pub(crate) fn state_dir() -> (tempfile::TempDir, StateDir) {
        let t = tempfile::tempdir().unwrap();
        let d = StateDir::at(t.path().join("state"));
        (t, d)
    }

    /// Red-team finding: a directory emptied by a process that does not hold its lock was
    /// removed under the holder (an apply between its lock and its first record), whose next
    /// record made a new one for a third irqlab to lock: two applies at once. Now only a
    /// holder removes it, before it unlocks.
    #[test]
    fn the_directory_is_never_removed_under_a_holder_of_its_lock() {
        let t = tempfile::tempdir().unwrap();
        let dir = StateDir::removable(t.path().join("state"));
        dir.create().unwrap();
        // Another process holds the lock: flock(1) on the directory, as lock_dir takes it.
        // `-o`: flock itself holds it (not the sleep it starts), in a group of its own so that
        // both go together.
        use std::os::unix::process::CommandExt;
        let mut holder = std::process::Command::new("flock")
            .arg("-o")
            .arg(dir.path())
            .args(["sleep", "30"])
            .process_group(0)
            .spawn()
            .unwrap();
        // Wait until it holds it.
        for _ in 0..200 {
            if lock_dir_with(&dir, false).unwrap().is_none() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        dir.remove_if_empty();
        let kept = dir.path().is_dir();
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(holder.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        holder.wait().unwrap();
        assert!(kept, "removed while another process held its lock");
        // Unlocked, and empty: removed; and a holder of ours removes it as it unlocks.
        dir.remove_if_empty();
        assert!(!dir.path().exists());
        let locked = LockedDir::acquire(&dir).unwrap();
        assert!(dir.path().is_dir());
        drop(locked);
        assert!(!dir.path().exists());
    }

    #[test]
    fn a_state_file_lists_what_is_held_and_goes_when_nothing_is() {
        let (_t, dir) = state_dir();
        let me = ProcessId::current().unwrap();
        let mut f = StateFile::new(dir.clone(), me);
        let a = f
            .add(Change::PmQos {
                path: "/dev/cpu_dma_latency".into(),
                target_us: 0,
            })
            .unwrap();
        let b = f
            .add(Change::LoadGroup {
                command: "stress-ng --cpu 1".into(),
                leader: None,
            })
            .unwrap();
        let leader = ProcessId {
            pid: 77,
            start_time_ticks: 5,
        };
        f.update(
            b,
            Change::LoadGroup {
                command: "stress-ng --cpu 1".into(),
                leader: Some(leader),
            },
        )
        .unwrap();
        let path = dir
            .path()
            .join(format!("{}-{}.json", me.pid, me.start_time_ticks));
        let r: Record = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(r.owner, me);
        assert_eq!(r.changes.len(), 2);
        assert_eq!(r.changes[1]["kind"], "load_group");
        assert_eq!(r.changes[1]["leader"]["pid"], 77);
        // The directory is private to this user.
        let mode = std::fs::metadata(dir.path()).unwrap().mode();
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        f.remove(a).unwrap();
        f.remove(b).unwrap();
        assert!(!path.exists());
        // A directory the caller named is kept.
        assert!(dir.path().is_dir());
    }

    #[test]
    fn an_unsafe_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        let e = StateDir::at(&open).create().unwrap_err();
        assert!(e.to_string().contains("others may write"), "{e}");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(t.path(), &link).unwrap();
        let e = StateDir::at(&link).create().unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    pub(crate) fn write_record(dir: &StateDir, owner: ProcessId, changes: &[Change]) -> PathBuf {
        dir.create().unwrap();
        let record = Record {
            format: FORMAT,
            owner,
            boot_id: boot_id(),
            command: "irqlab measure timer".into(),
            changes: changes
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    serde_json::to_value(Entry {
                        id: i as u64 + 1,
                        change: c.clone(),
                    })
                    .unwrap()
                })
                .collect(),
        };
        let path = dir.file_of(owner);
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
        path
    }
}
