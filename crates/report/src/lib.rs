//! Renderers for irqlab's results. Every renderer reads the one data model of
//! [`irqlab_stats::results`]: a run ([`RunReport`]) or a validation ([`ValidationReport`]).
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
pub mod plot;
pub mod spike;
pub mod sweep;
pub mod table;
pub mod text;

use std::io::Write;
use std::path::Path;

pub use activity::irq_activity_text;
pub use inventory::inventory_text;
pub use sweep::grid_text;
pub use text::{run_text, uncertainty_text, validation_text};

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
    /// A character device, a FIFO or a socket (`/dev/null`, `/dev/stdout` on a pipe or a
    /// terminal, a named pipe), or a link the user named to one: written in place, never
    /// replaced by a file.
    InPlace,
}

/// Look at what `path` is now, without following a link but to see where it leads. A link to
/// a regular file is refused rather than replaced (the user's link would silently become a
/// file) or followed (in a shared directory, another user could have planted it).
fn destination(path: &Path) -> Result<Destination, String> {
    use std::os::unix::fs::FileTypeExt;
    if is_stdout(path) {
        return Ok(Destination::Stdout);
    }
    let special = |t: std::fs::FileType| t.is_char_device() || t.is_fifo() || t.is_socket();
    let block = "it is a block device: irqlab does not write results onto a disk".to_string();
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Destination::New),
        Err(e) => return Err(os_reason(e)),
    };
    let t = m.file_type();
    if t.is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        return match std::fs::metadata(path) {
            Ok(to) if special(to.file_type()) => Ok(Destination::InPlace),
            Ok(to) if to.file_type().is_block_device() => Err(block),
            Ok(_) => Err(format!(
                "it is a symbolic link (to {target}): irqlab neither writes through a link nor \
                 replaces it; give the file itself, or - for standard output"
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
    if t.is_block_device() {
        return Err(block);
    }
    Ok(Destination::InPlace)
}

/// Write `contents` to `path` whole or not at all: into a temporary file beside it, then a
/// rename, so a crash or a full disk never leaves half a result (docs/architecture.md, output
/// contracts). The temporary file is created new (`O_CREAT | O_EXCL`, which follows no link),
/// and a new result never takes the place of something that appeared meanwhile. What is not a
/// regular file is not replaced: `-` is standard output; a character device, FIFO or socket
/// (`/dev/null`, `/dev/stdout`) is written in place; a symbolic link to a regular file, a
/// block device or a directory is refused ([`destination`]).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ReportError> {
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
        let to_create = match destination(path).map_err(refused)? {
            Destination::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(contents).map_err(err)?;
                return out.flush().map_err(err);
            }
            Destination::InPlace => {
                // Opened as named (the user's link to a device is the user's choice), never
                // created, never truncated: a device or a pipe takes the bytes as they come.
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(err)?;
                f.write_all(contents).map_err(err)?;
                return f.flush().map_err(err);
            }
            Destination::New => true,
            Destination::Regular => false,
        };
        check_writable(path)?;
        let dir = parent_dir(path);
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
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
    match destination(path).map_err(fail)? {
        Destination::Stdout | Destination::InPlace => return Ok(()),
        Destination::New | Destination::Regular => {}
    }
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
        assert_eq!(destination(Path::new("-")), Ok(Destination::Stdout));
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
