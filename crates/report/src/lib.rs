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
pub mod inventory;
pub mod json;
pub mod plot;
pub mod spike;
pub mod table;
pub mod text;

use std::io::Write;
use std::path::Path;

pub use activity::irq_activity_text;
pub use inventory::inventory_text;
pub use text::{run_text, validation_text};

/// Errors writing results.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {path}: {reason}")]
    Write { path: String, reason: String },
    #[error("cannot serialize the result: {0}")]
    Json(#[from] serde_json::Error),
}

/// Write `contents` to `path` whole or not at all: into a temporary file beside it, then a
/// rename, so a crash or a full disk never leaves half a result (DESIGN.md, output contracts).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ReportError> {
    // Report the OS's reason, not the temporary file's name that tempfile attaches.
    let err = |e: std::io::Error| ReportError::Write {
        path: path.display().to_string(),
        reason: match e.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
            None => e.kind().to_string(),
        },
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
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuse early a result path whose directory does not exist, so that a measurement is not
/// run only to be lost at the end.
pub fn check_writable(path: &Path) -> Result<(), ReportError> {
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(ReportError::Write {
            path: path.display().to_string(),
            reason: format!("the directory {} does not exist", dir.display()),
        });
    }
    if path.is_dir() {
        return Err(ReportError::Write {
            path: path.display().to_string(),
            reason: "it is a directory; give a file name".into(),
        });
    }
    Ok(())
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
