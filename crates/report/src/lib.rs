//! Renderers for irqlab's results. Every renderer reads the one data model of
//! [`irqlab_stats::results`]: a run ([`RunReport`](irqlab_stats::results::RunReport)) or a
//! validation ([`ValidationReport`](irqlab_stats::results::ValidationReport)).
//!
//! ```
//! use irqlab_report::table::Table;
//! let mut t = Table::new(&["metric", "p50 (ns)"]);
//! t.row(vec!["isr_latency".into(), "850".into()]);
//! assert!(t.render().contains("isr_latency"));
//! ```

#![forbid(unsafe_code)]

pub mod activity;
pub mod cyclictest;
pub mod inventory;
pub mod json;
pub mod plan;
pub mod plot;
pub mod spike;
pub mod sweep;
pub mod table;
pub mod text;
pub mod whatif;

use std::io::Write;
use std::path::Path;

pub use activity::irq_activity_text;
pub use inventory::inventory_text;
pub use sweep::grid_text;
pub use text::{run_text, uncertainty_text, validation_text};
pub use whatif::whatif_text;

/// Errors writing results.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {path}: {reason}")]
    Write { path: String, reason: String },
    #[error("cannot serialize the result: {0}")]
    Json(#[from] serde_json::Error),
}

/// The name that means standard output, as a destination (`--json -`).
pub const STDOUT: &str = "-";

/// Whether `path` names standard output (`-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == STDOUT
}

/// What a result's destination is, before anything is written to it.
#[derive(Debug, PartialEq, Eq)]
enum Destination {
    /// `-`.
    Stdout,
    /// Nothing there yet: a new file, created through a temporary one.
    New,
    /// A regular file: replaced whole (a result written again).
    Regular,
    /// A character device or a FIFO (`/dev/null`, a named pipe), or a link of this user's or
    /// root's to one (`/dev/stdout` on a pipe or a terminal): written in place, never replaced
    /// by a file.
    /// `via_link`: the path is that link; `dev`, `ino`: what it leads to, which the opened
    /// file must be.
    InPlace { via_link: bool, dev: u64, ino: u64 },
}

/// Look at what `path` is now, without following a link but to see where a link of this
/// user's leads. A link to a regular file is refused rather than replaced (the user's link
/// would silently become a file) or followed; so is another user's link to anything (in a
/// shared directory, it could have been planted to lead root's output into a device).
fn destination(path: &Path, in_place: bool) -> Result<Destination, String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if is_stdout(path) {
        return Ok(Destination::Stdout);
    }
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Destination::New),
        Err(e) => return Err(os_reason(e)),
    };
    let what = |t: std::fs::FileType| {
        if t.is_dir() {
            "a directory"
        } else if t.is_file() {
            "a regular file"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() {
            "a character device"
        } else {
            "a named pipe"
        }
    };
    let writable_in_place = |t: std::fs::FileType| t.is_char_device() || t.is_fifo();
    let t = m.file_type();
    if t.is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        let to = std::fs::metadata(path);
        let euid = nix::unistd::geteuid().as_raw();
        return match to {
            // This user's link, or the system's (root's: `/dev/stdout`), never one another user
            // could have planted.
            Ok(to)
                if in_place
                    && writable_in_place(to.file_type())
                    && (m.uid() == euid || m.uid() == 0) =>
            {
                Ok(Destination::InPlace {
                    via_link: true,
                    dev: to.dev(),
                    ino: to.ino(),
                })
            }
            Ok(to) => Err(format!(
                "it is a symbolic link (to {target}, {}{}): irqlab neither writes through a \
                 link nor replaces it; give {}",
                what(to.file_type()),
                if m.uid() == euid {
                    String::new()
                } else {
                    format!(", the link being user {}'s", m.uid())
                },
                if to.is_dir() {
                    "a file name in that directory"
                } else {
                    "the file itself, or - for standard output"
                }
            )),
            Err(_) => Err(format!(
                "it is a symbolic link (to {target}, which does not exist): irqlab neither \
                 writes through a link nor replaces it; give the file itself"
            )),
        };
    }
    if t.is_dir() {
        return Err("it is a directory; give a file name".into());
    }
    if t.is_file() {
        return Ok(Destination::Regular);
    }
    if in_place && writable_in_place(t) {
        return Ok(Destination::InPlace {
            via_link: false,
            dev: m.dev(),
            ino: m.ino(),
        });
    }
    Err(format!(
        "it is {}, which irqlab does not write {} into; give a file name",
        what(t),
        if in_place { "results" } else { "figures" }
    ))
}

/// Write `contents` to `path` whole or not at all: into a temporary file beside it, then a
/// rename, so a crash or a full disk never leaves half a result (docs/architecture.md, output
/// contracts). The temporary file is created new (`O_CREAT | O_EXCL`, which follows no link),
/// and a new result never takes the place of something that appeared meanwhile. What is not a
/// regular file is not replaced: `-` is standard output; a character device or FIFO
/// (`/dev/null`, a named pipe), or this user's link to one (`/dev/stdout`), is written in
/// place; anything else that is not a regular file is refused (`destination`).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ReportError> {
    write_to(path, contents, true)
}

/// [`write_atomic`] for a file that only a file can take (a figure): a new or a regular file,
/// never a device, a FIFO or anything through a link.
pub fn write_file_atomic(path: &Path, contents: &[u8]) -> Result<(), ReportError> {
    write_to(path, contents, false)
}

fn write_to(path: &Path, contents: &[u8], in_place: bool) -> Result<(), ReportError> {
    // Report the OS's reason, not the temporary file's name that tempfile attaches.
    let err = |e: std::io::Error| ReportError::Write {
        path: path.display().to_string(),
        reason: os_reason(e),
    };
    let refused = |reason: String| ReportError::Write {
        path: path.display().to_string(),
        reason,
    };
    for _ in 0..10 {
        let to_create = match destination(path, in_place).map_err(refused)? {
            Destination::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(contents).map_err(err)?;
                return out.flush().map_err(err);
            }
            Destination::InPlace { via_link, dev, ino } => {
                let mut f = open_in_place(path, via_link, dev, ino).map_err(refused)?;
                f.write_all(contents).map_err(err)?;
                return f.flush().map_err(err);
            }
            Destination::New => true,
            Destination::Regular => false,
        };
        check_dir(path)?;
        let dir = parent_dir(path);
        // Named as irqlab's, should a crash leave it.
        let mut tmp = tempfile::Builder::new()
            .prefix(".irqlab-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(err)?;
        tmp.write_all(contents).map_err(err)?;
        tmp.as_file().sync_all().map_err(err)?;
        // A temporary file is private (0600); a result is an ordinary file.
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(err)?;
        if !to_create {
            tmp.persist(path).map_err(|e| err(e.error))?;
            return Ok(());
        }
        match tmp.persist_noclobber(path) {
            Ok(_) => return Ok(()),
            // Something took the name since it was looked at: look again.
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(err(e.error)),
        }
    }
    Err(refused(
        "something else keeps taking its name while irqlab writes it".into(),
    ))
}

/// Open a device or FIFO [`destination`] found, checking that what was opened is what was
/// looked at (a name swapped for a link or a file meanwhile is refused, before a byte is
/// written): never created, never truncated, not through a link unless the user's own link was
/// the destination. A FIFO is opened without waiting: no reader is an error, not a hang.
fn open_in_place(path: &Path, via_link: bool, dev: u64, ino: u64) -> Result<std::fs::File, String> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if !via_link {
        flags |= libc::O_NOFOLLOW;
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => "it is a named pipe that no process reads: start the reader \
                                  first"
                .to_string(),
            Some(libc::ELOOP) => "it became a symbolic link while irqlab looked at it".into(),
            _ => os_reason(e),
        })?;
    let m = f.metadata().map_err(os_reason)?;
    let t = m.file_type();
    if m.dev() != dev || m.ino() != ino || !(t.is_char_device() || t.is_fifo()) {
        return Err("it was replaced by something else while irqlab looked at it".into());
    }
    // Written as a blocking file from here: a pipe's reader may take its time.
    let fd = f.as_raw_fd();
    let now = fcntl(fd, FcntlArg::F_GETFL).map_err(|e| e.to_string())?;
    fcntl(
        fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(now) - OFlag::O_NONBLOCK),
    )
    .map_err(|e| e.to_string())?;
    Ok(f)
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuse early a result path whose directory does not exist or cannot be written, so that a
/// run or a measurement is not made only to be lost at the end.
pub fn check_writable(path: &Path) -> Result<(), ReportError> {
    let fail = |reason: String| ReportError::Write {
        path: path.display().to_string(),
        reason,
    };
    match destination(path, true).map_err(fail)? {
        Destination::Stdout | Destination::InPlace { .. } => Ok(()),
        Destination::New | Destination::Regular => check_dir(path),
    }
}

/// That the directory a new or replaced result goes into exists and takes files.
fn check_dir(path: &Path) -> Result<(), ReportError> {
    let fail = |reason: String| ReportError::Write {
        path: path.display().to_string(),
        reason,
    };
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(fail(format!(
            "the directory {} does not exist",
            dir.display()
        )));
    }
    probe_dir(dir).map_err(fail)
}

/// Refuse early a figure directory that cannot be made or written: it must be a directory, or
/// not exist yet below a directory that can be written (it is created when the figures are
/// drawn).
pub fn check_plot_dir(dir: &Path) -> Result<(), ReportError> {
    let fail = |reason: String| ReportError::Write {
        path: dir.display().to_string(),
        reason,
    };
    if dir.exists() {
        if !dir.is_dir() {
            return Err(fail(
                "it is a file; give a directory for the figures".into(),
            ));
        }
        return probe_dir(dir).map_err(fail);
    }
    let mut up = dir;
    loop {
        up = match up.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if up.exists() {
            if !up.is_dir() {
                return Err(fail(format!("{} is a file, not a directory", up.display())));
            }
            return probe_dir(up).map_err(fail);
        }
    }
}

/// Whether a file can be created in `dir`: by creating (and at once removing) a temporary one,
/// the only test that holds for permissions, read-only mounts and full quotas alike.
fn probe_dir(dir: &Path) -> Result<(), String> {
    tempfile::tempfile_in(dir).map(drop).map_err(|e| {
        // procfs and sysfs answer a new file's creation with ENOENT: the directory is there,
        // it just takes no files, which "No such file or directory" would hide.
        let reason = if e.kind() == std::io::ErrorKind::NotFound && dir.is_dir() {
            "it takes no new files (a kernel file system such as /proc or /sys?); choose \
             another directory"
                .to_string()
        } else {
            os_reason(e)
        };
        format!("cannot write in {}: {reason}", dir.display())
    })
}

/// A file found in a directory listing (not named by the user), as [`read_listed`] found it.
#[derive(Debug, PartialEq, Eq)]
pub enum Listed {
    /// A regular file's bytes, as many as its size when opened.
    Bytes(Vec<u8>),
    /// A symbolic link: not followed.
    Link,
    /// A regular file with other names (hard links): not read, since it may be another user's
    /// file linked in (where `fs.protected_hardlinks` is off, anyone may link any file).
    OtherNames,
    /// Larger than the reader's limit: not read.
    TooLarge { bytes: u64 },
    /// Not a regular file (a directory, a named pipe, a device, a socket): not opened, or
    /// opened without waiting and closed unread.
    NotRegular,
}

/// Read a file that a directory listing found, such as a shard beside others in a results
/// directory that jobs on other machines wrote, and that another user may have written into:
///
/// - the entry itself, never through a symbolic link (in a shared directory another user could
///   plant one to lead a merge run as root to any file), and not a file with other names (a
///   hard link planted to the same end);
/// - only a regular file (a named pipe would block the read, a device never end);
/// - at most `max_bytes` (a sparse file of any size costs its writer nothing), and no further
///   than its size when opened (a file still growing is an error, not a read without end); the
///   memory is asked for before the read, and a refusal is an error, not an abort.
///
/// The checks are made on the opened file, so a name swapped since the listing changes nothing.
/// The directory's own path is resolved as given: whoever can swap it could have given a
/// directory of their own, whose entries meet the same checks.
pub fn read_listed(path: &Path, max_bytes: u64) -> std::io::Result<Listed> {
    // A look first, so that nothing but a regular file is even opened.
    let m = std::fs::symlink_metadata(path)?;
    if m.file_type().is_symlink() {
        return Ok(Listed::Link);
    }
    if !m.is_file() {
        return Ok(Listed::NotRegular);
    }
    read_opened(path, max_bytes)
}

/// [`read_listed`] past its first look: open the entry without following a link or waiting,
/// and check what was opened.
fn read_opened(path: &Path, max_bytes: u64) -> std::io::Result<Listed> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => f,
        // Swapped for a link, or for a socket (which open(2) refuses), since the look.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(Listed::Link),
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => return Ok(Listed::NotRegular),
        Err(e) => return Err(e),
    };
    let m = f.metadata()?;
    if !m.is_file() {
        return Ok(Listed::NotRegular);
    }
    if m.nlink() > 1 {
        return Ok(Listed::OtherNames);
    }
    if m.len() > max_bytes {
        return Ok(Listed::TooLarge { bytes: m.len() });
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(m.len() as usize)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    f.take(m.len() + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != m.len() {
        return Err(std::io::Error::other(
            "it changed size while irqlab read it (is a job still writing it?)",
        ));
    }
    Ok(Listed::Bytes(bytes))
}

fn os_reason(e: std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
        None => e.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_file_is_read_as_itself_and_only_if_regular() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let read = |name: &str| read_listed(&d.join(name), 100).unwrap();
        std::fs::write(d.join("a.json"), "{}").unwrap();
        assert_eq!(read("a.json"), Listed::Bytes(b"{}".to_vec()));
        std::os::unix::fs::symlink(d.join("a.json"), d.join("link.json")).unwrap();
        assert_eq!(read("link.json"), Listed::Link);
        // A dangling link is a link too, not an error.
        std::os::unix::fs::symlink(d.join("gone"), d.join("dangling.json")).unwrap();
        assert_eq!(read("dangling.json"), Listed::Link);
        std::fs::create_dir(d.join("dir.json")).unwrap();
        assert_eq!(read("dir.json"), Listed::NotRegular);
        nix::unistd::mkfifo(&d.join("pipe.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(read("pipe.json"), Listed::NotRegular);
        assert!(read_listed(&d.join("absent.json"), 100).is_err());
        // Larger than the limit: its size said, nothing read; at the limit, read.
        std::fs::write(d.join("big.json"), [b' '; 101]).unwrap();
        assert_eq!(read("big.json"), Listed::TooLarge { bytes: 101 });
        std::fs::write(d.join("full.json"), [b' '; 100]).unwrap();
        assert_eq!(read("full.json"), Listed::Bytes(vec![b' '; 100]));
        // A sparse file of a terabyte costs its writer nothing on disk: refused by its size,
        // never asked for in memory.
        let sparse = std::fs::File::create(d.join("sparse.json")).unwrap();
        sparse.set_len(1 << 40).unwrap();
        assert_eq!(read("sparse.json"), Listed::TooLarge { bytes: 1 << 40 });
        // A file with a second name: either could be another user's file linked in.
        std::fs::hard_link(d.join("a.json"), d.join("other-name.json")).unwrap();
        assert_eq!(read("a.json"), Listed::OtherNames);
        assert_eq!(read("other-name.json"), Listed::OtherNames);
    }

    /// What the first look passes may be swapped before the open: the open and the checks on
    /// the opened file alone refuse a link, a named pipe (without waiting for a writer) and a
    /// socket.
    #[test]
    fn an_entry_swapped_after_the_look_is_checked_where_it_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let opened = |name: &str| read_opened(&d.join(name), 100).unwrap();
        std::fs::write(d.join("a.json"), "{}").unwrap();
        std::os::unix::fs::symlink(d.join("a.json"), d.join("link.json")).unwrap();
        assert_eq!(opened("link.json"), Listed::Link);
        nix::unistd::mkfifo(&d.join("pipe.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(opened("pipe.json"), Listed::NotRegular);
        let _socket = std::os::unix::net::UnixListener::bind(d.join("socket.json")).unwrap();
        assert_eq!(opened("socket.json"), Listed::NotRegular);
        std::fs::create_dir(d.join("dir.json")).unwrap();
        assert_eq!(opened("dir.json"), Listed::NotRegular);
        assert_eq!(opened("a.json"), Listed::Bytes(b"{}".to_vec()));
    }

    #[test]
    fn atomic_write_replaces_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn destinations_are_checked_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(check_plot_dir(dir.path()).is_ok());
        assert!(check_plot_dir(&dir.path().join("new/deeper")).is_ok());
        let e = check_plot_dir(&file).unwrap_err().to_string();
        assert!(e.contains("is a file"), "{e}");
        let e = check_plot_dir(&file.join("sub")).unwrap_err().to_string();
        assert!(e.contains("is a file, not a directory"), "{e}");
        assert!(check_writable(&dir.path().join("x.json")).is_ok());
        // Nothing was left behind by the probes.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // A directory without write permission (root bypasses permissions: then skip).
        use std::os::unix::fs::PermissionsExt;
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        if std::fs::write(ro.join("t"), "").is_err() {
            let e = check_writable(&ro.join("x.json")).unwrap_err().to_string();
            assert!(e.contains("cannot write in"), "{e}");
            assert!(check_plot_dir(&ro.join("plots")).is_err());
        }
        // procfs takes no files and says ENOENT of a directory that exists.
        if Path::new("/proc/self").is_dir() {
            let e = check_writable(Path::new("/proc/x.json"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("takes no new files"), "{e}");
        }
    }

    #[test]
    fn what_is_not_a_regular_file_is_never_replaced_by_one() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "kept").unwrap();
        // A link to a regular file, and one to nothing: refused, both left as they are.
        for (name, to) in [
            ("link", target.clone()),
            ("dangling", dir.path().join("none")),
        ] {
            let link = dir.path().join(name);
            std::os::unix::fs::symlink(&to, &link).unwrap();
            let e = write_atomic(&link, b"x").unwrap_err().to_string();
            assert!(e.contains("symbolic link"), "{e}");
            assert!(check_writable(&link).is_err());
            assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        assert!(!dir.path().join("none").exists());
        // A directory.
        let e = write_atomic(dir.path(), b"x").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        // A link to a character device is written through, and stays a link.
        let null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        write_atomic(&null, b"x").unwrap();
        assert!(std::fs::symlink_metadata(&null).unwrap().is_symlink());
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // Only the files made above: no temporary was left.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
        assert_eq!(destination(Path::new("-"), true), Ok(Destination::Stdout));
    }

    /// Red-team findings: another user's link to a device (planted in a shared directory) is
    /// not written through; a figure goes into no device, FIFO or link; a FIFO nobody reads is
    /// an error, not a hang.
    #[test]
    fn links_of_others_devices_for_figures_and_fifos_without_readers_are_refused() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        let e = write_file_atomic(&null, b"x").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let e = write_file_atomic(Path::new("/dev/null"), b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not write figures into"), "{e}");
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::lchown(&null, Some(65534), None).unwrap();
            let e = write_atomic(&null, b"x").unwrap_err().to_string();
            assert!(e.contains("the link being user 65534's"), "{e}");
        }
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let (tx, rx) = std::sync::mpsc::channel();
            let f = fifo.clone();
            std::thread::spawn(move || {
                let _ = tx.send(write_atomic(&f, b"x").map_err(|e| e.to_string()));
            });
            let r = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("a FIFO without a reader hung the write");
            let e = r.unwrap_err();
            assert!(e.contains("no process reads"), "{e}");
            assert!(std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo());
        }
    }

    #[test]
    fn atomic_write_into_a_missing_directory_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no/such/dir/out.json");
        let e = write_atomic(&p, b"x").unwrap_err().to_string();
        assert!(e.contains("no/such/dir/out.json"), "{e}");
        assert!(e.contains("does not exist"), "{e}");
        // Results are readable like any file, not private like a temporary.
        use std::os::unix::fs::PermissionsExt;
        let ok = dir.path().join("r.json");
        write_atomic(&ok, b"{}").unwrap();
        let mode = std::fs::metadata(&ok).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
}
