//! The `sysfs_tree` target's input: a small `/proc` and `/sys` tree as one byte string, so that
//! libFuzzer and the stable runner mutate a tree as they mutate any input, and so that trees
//! captured from real kernels are corpus files (`irqlab-fuzz pack DIR` writes one).
//!
//! The archive is a list of entries, each a header line and the file's bytes up to the next
//! header:
//!
//! ```text
//! == proc/interrupts
//!            CPU0       CPU1
//!   0:         44          0  IO-APIC   2-edge      timer
//! == sys/bus/pci/devices/0000:00:03.0/driver -> ../../drivers/virtio-pci
//! == sys/bus/pci/devices/0000:00:03.0/msi_irqs/
//! ```
//!
//! A header ending in `/` is an empty directory, one with ` -> TARGET` a symlink. Whatever the
//! bytes, unpacking writes only inside the directory it is given, and never makes a path that
//! leads out of it: names are relative, without `.` or `..`; no entry is made under a symlink;
//! a symlink's target climbs (`../`) no higher than its own directory's depth, then only names
//! descend, so it resolves inside the tree whatever links it passes. The readers then read
//! only files of the tree (no `/dev/zero` to read forever). Entries past [`MAX_ENTRIES`], or
//! deeper than [`MAX_DEPTH`], are dropped.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

const HEADER: &[u8] = b"== ";
pub const MAX_ENTRIES: usize = 512;
pub const MAX_DEPTH: usize = 16;

/// One entry of an archive.
#[derive(Debug, PartialEq, Eq)]
enum Entry<'a> {
    File(PathBuf, &'a [u8]),
    Dir(PathBuf),
    Link(PathBuf, PathBuf),
}

/// Split an archive into entries; malformed ones are dropped.
fn entries(data: &[u8]) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
    // Each entry starts at the archive's start or after a newline, with "== ".
    let mut starts = Vec::new();
    if data.starts_with(HEADER) {
        starts.push(0);
    }
    for (i, w) in data.windows(HEADER.len() + 1).enumerate() {
        if w[0] == b'\n' && &w[1..] == HEADER {
            starts.push(i + 1);
        }
    }
    for (k, &start) in starts.iter().enumerate() {
        // Each entry ends with a newline of the archive's, not the file's: the one before the
        // next header, or the archive's last byte.
        let end = match starts.get(k + 1) {
            Some(&next) => next - 1,
            None => data.len() - usize::from(data.ends_with(b"\n")),
        };
        let entry = &data[start + HEADER.len()..end.max(start + HEADER.len())];
        let (header, body) = match entry.iter().position(|&b| b == b'\n') {
            Some(n) => (&entry[..n], &entry[n + 1..]),
            None => (entry, &entry[entry.len()..]),
        };
        let parsed = if let Some(at) = find(header, b" -> ") {
            // The name first: `link_target` measures its depth, and a name that is not a
            // relative path (empty, say) has none.
            relative(&header[..at])
                .and_then(|p| link_target(&p, &header[at + 4..]).map(|t| Entry::Link(p, t)))
        } else if let Some(dir) = header.strip_suffix(b"/") {
            relative(dir).map(Entry::Dir)
        } else {
            relative(header).map(|p| Entry::File(p, body))
        };
        out.extend(parsed);
        if out.len() == MAX_ENTRIES {
            break;
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A relative path of plain names, at most [`MAX_DEPTH`] deep.
fn relative(bytes: &[u8]) -> Option<PathBuf> {
    let path = Path::new(OsStr::from_bytes(bytes));
    let mut depth = 0;
    for c in path.components() {
        match c {
            Component::Normal(n) if !n.is_empty() => depth += 1,
            _ => return None,
        }
    }
    (depth > 0 && depth <= MAX_DEPTH).then(|| path.to_path_buf())
}

/// A symlink's target: some `..` (no more than the link's directory is deep), then names.
/// `link` is the link's own path, relative ([`relative`]); one without a name has no target.
fn link_target(link: &Path, target: &[u8]) -> Option<PathBuf> {
    let depth = link.components().count().checked_sub(1)?;
    let path = Path::new(OsStr::from_bytes(target));
    let (mut up, mut names) = (0, 0);
    for c in path.components() {
        match c {
            Component::ParentDir if names == 0 => up += 1,
            Component::Normal(_) => names += 1,
            Component::CurDir => {}
            _ => return None,
        }
    }
    (up <= depth && names <= MAX_DEPTH).then(|| path.to_path_buf())
}

/// Whether `path` under `root` passes through an existing symlink (an entry must not be made
/// through one: it would land elsewhere than its name says).
fn through_link(root: &Path, path: &Path) -> bool {
    let mut at = root.to_path_buf();
    path.components().any(|c| {
        at.push(c);
        at.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// Write the archive's files, directories and symlinks under `root` (an empty directory).
/// What cannot be made (a file where a directory is wanted, say) is skipped.
pub fn unpack(data: &[u8], root: &Path) {
    let all = entries(data);
    // Files and directories first, then links, so that none is made through a link.
    for e in &all {
        match e {
            Entry::File(p, body) if !through_link(root, p) => {
                let full = root.join(p);
                if let Some(parent) = full.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::fs::write(full, body);
            }
            Entry::Dir(p) if !through_link(root, p) => {
                let _ = std::fs::create_dir_all(root.join(p));
            }
            _ => {}
        }
    }
    for e in &all {
        if let Entry::Link(p, target) = e {
            if !through_link(root, p) {
                let full = root.join(p);
                if let Some(parent) = full.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::os::unix::fs::symlink(target, full);
            }
        }
    }
}

/// The archive of the tree under `root`: its regular files, empty directories and symlinks
/// (whose targets are kept as they are; [`unpack`] drops those that leave the tree), sorted by
/// path.
pub fn pack(root: &Path) -> std::io::Result<Vec<u8>> {
    let mut found = Vec::new();
    walk(root, Path::new(""), &mut found)?;
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (path, kind) in found {
        out.extend_from_slice(HEADER);
        out.extend_from_slice(path.as_os_str().as_bytes());
        match kind {
            Packed::File(body) => {
                out.push(b'\n');
                out.extend_from_slice(&body);
            }
            Packed::Dir => out.push(b'/'),
            Packed::Link(t) => {
                out.extend_from_slice(b" -> ");
                out.extend_from_slice(t.as_os_str().as_bytes());
            }
        }
        out.push(b'\n');
    }
    Ok(out)
}

enum Packed {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<(PathBuf, Packed)>) -> std::io::Result<()> {
    let mut empty = true;
    for e in std::fs::read_dir(root.join(rel))? {
        let e = e?;
        empty = false;
        let p = rel.join(e.file_name());
        let t = e.file_type()?;
        if t.is_symlink() {
            out.push((p.clone(), Packed::Link(std::fs::read_link(root.join(&p))?)));
        } else if t.is_dir() {
            walk(root, &p, out)?;
        } else if t.is_file() {
            out.push((p.clone(), Packed::File(std::fs::read(root.join(&p))?)));
        }
    }
    if empty && !rel.as_os_str().is_empty() {
        out.push((rel.to_path_buf(), Packed::Dir));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_unpacks_files_links_and_empty_directories() {
        let a = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(a.path().join("sys/x/msi_irqs")).unwrap();
        std::fs::create_dir_all(a.path().join("proc")).unwrap();
        std::fs::write(
            a.path().join("proc/interrupts"),
            "CPU0\n 0: 1 XT-PIC timer\n",
        )
        .unwrap();
        std::fs::write(a.path().join("proc/no_newline"), "3").unwrap();
        std::fs::write(a.path().join("proc/empty"), "").unwrap();
        std::os::unix::fs::symlink("../proc", a.path().join("sys/p")).unwrap();
        let packed = pack(a.path()).unwrap();
        let b = tempfile::tempdir().unwrap();
        unpack(&packed, b.path());
        assert_eq!(pack(b.path()).unwrap(), packed);
        let read = |p: &str| std::fs::read_to_string(b.path().join(p)).unwrap();
        assert_eq!(read("proc/interrupts"), "CPU0\n 0: 1 XT-PIC timer\n");
        assert_eq!(read("proc/no_newline"), "3");
        assert_eq!(read("proc/empty"), "");
        assert_eq!(read("sys/p/no_newline"), "3");
        assert!(b.path().join("sys/x/msi_irqs").is_dir());
    }

    #[test]
    fn nothing_is_written_or_linked_outside_the_tree() {
        let a = tempfile::tempdir().unwrap();
        let root = a.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let archive = b"== ../escape\nx\n== /abs\nx\n== ./dot\nx\n\
== sys/up -> ../../..\n== sys/l -> ..\n== sys/l/through\nx\n\
== a/b/c/l -> ../../..\n== a/b/c/m -> l/..\n== sys/abs -> /etc\n==  -> ..\n== ok/f\nfine\n";
        unpack(archive, &root);
        // Only `ok/f`, the `a/b/c` directories and the two links that stay inside were made.
        assert_eq!(std::fs::read_dir(a.path()).unwrap().count(), 1);
        assert!(!root.join("sys/up").exists() && !root.join("sys/abs").exists());
        assert!(!root.join("a/b/c/m").exists());
        assert!(!root.join("through").exists() && !root.join("dot").exists());
        assert_eq!(std::fs::read_to_string(root.join("ok/f")).unwrap(), "fine");
        assert_eq!(
            std::fs::canonicalize(root.join("a/b/c/l")).unwrap(),
            std::fs::canonicalize(&root).unwrap()
        );
    }
}
