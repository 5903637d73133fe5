//! Issue 37, items 3 and 4: where results are written. A destination that is not a regular file
//! is never turned into one: a character device or a FIFO is written in place (`/dev/null`,
//! `/dev/full`'s "no space" reported), `-` is standard output (the text then goes to stderr), a
//! symbolic link is refused, never followed nor replaced; and figures are written the same way,
//! so a link planted at a figure's predictable name in a shared directory is not followed.
//!
//! Device nodes are made in a temporary directory (mknod(1), as root; skipped with the reason
//! otherwise), never the host's `/dev`.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The irqlab under test: this build's, or `$IRQLAB_BIN`.
fn irqlab() -> Command {
    let bin = std::env::var_os("IRQLAB_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_irqlab")));
    let mut c = Command::new(bin);
    c.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    c
}

fn show(what: &str, out: &Output) -> String {
    let text = format!(
        "{what}: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    text
}

/// `irqlab host --json PATH` (the inventory: quick, and the same writer as every --json).
fn host_json(path: &Path) -> Output {
    irqlab()
        .args(["host", "--json"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A character device node at `path` (major, minor), if this user may make one.
fn mknod(path: &Path, major: u32, minor: u32) -> bool {
    Command::new("mknod")
        .arg(path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// `--json` to a character device: written in place, the device stays a device. /dev/full's
/// "No space left on device" is the error, exit 2; /dev/null takes it.
#[test]
fn a_device_is_written_in_place_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (null, full) = (dir.path().join("null"), dir.path().join("full"));
    if !mknod(&null, 1, 3) || !mknod(&full, 1, 7) {
        eprintln!("skipped: cannot make device nodes here (mknod needs root)");
        return;
    }
    let out = host_json(&null);
    let text = show("--json null", &out);
    assert!(out.status.success(), "{text}");
    assert!(
        std::fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_char_device(),
        "the null device became a file: {text}"
    );
    let out = host_json(&full);
    let text = show("--json full", &out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert!(
        std::fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_char_device(),
        "the full device became a file: {text}"
    );
    // Nothing else was left in the directory (no temporary file).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

/// `--json FIFO`: a reader gets the JSON; the FIFO stays a FIFO.
#[test]
fn a_fifo_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no mkfifo(1)");
        return;
    }
    // The reader: cat(1), killed if it still waits once irqlab has ended (the FIFO was
    // replaced by a file, or never opened), rather than hanging the test.
    let mut reader = Command::new("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = host_json(&fifo);
    let text = show("--json fifo", &out);
    for _ in 0..100 {
        if reader.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = reader.kill();
    let got = String::from_utf8(reader.wait_with_output().unwrap().stdout).unwrap();
    assert!(out.status.success(), "{text}");
    let json: serde_json::Value = serde_json::from_str(&got).expect("the reader got JSON");
    assert_eq!(json["kind"], "host");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

/// `--json -` is standard output, holding the JSON alone (the inventory's text goes to stderr);
/// two flags cannot both take it.
#[test]
fn a_dash_is_standard_output() {
    let out = host_json(Path::new("-"));
    let text = show("--json -", &out);
    assert!(out.status.success(), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is the JSON alone");
    assert_eq!(json["kind"], "host");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("IRQ"),
        "the inventory's text is not on stderr: {text}"
    );
    let out = irqlab()
        .args([
            "sim",
            "experiments/seed000/ws.toml",
            "--samples",
            "1000",
            "--json",
            "-",
            "--histogram-out",
            "-",
        ])
        .output()
        .unwrap();
    let text = show("two outputs on -", &out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--histogram-out -: standard output already takes --json"));
    assert!(out.stdout.is_empty(), "{text}");
}

/// A symbolic link as `--json`: refused with a clear error, whether it leads to a regular file
/// (another user's, planted) or nowhere; the link and its target are as they were. A link to a
/// device (`/dev/stdout` on a pipe) is written through, and stays a link.
#[test]
fn a_link_is_refused_not_followed_or_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "root's\n").unwrap();
    let link = dir.path().join("result.json");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let out = host_json(&link);
    let text = show("--json link", &out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's\n");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let dangling = dir.path().join("dangling.json");
    let nowhere = dir.path().join("nowhere");
    std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
    let out = host_json(&dangling);
    assert_eq!(out.status.code(), Some(2), "{}", show("dangling", &out));
    assert!(!nowhere.exists(), "a dangling link was followed");
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    // A link to a device: /dev/stdout, here on a pipe.
    let to_stdout = dir.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &to_stdout).unwrap();
    let out = host_json(&to_stdout);
    let text = show("--json link to stdout", &out);
    assert!(out.status.success(), "{text}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"kind\": \"host\""));
    assert!(std::fs::symlink_metadata(&to_stdout)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// `--plot DIR`: a link planted at a figure's name (in a shared directory; `measure timer`'s
/// are named by the second, so predictable) is not followed: the file it leads to keeps its
/// bytes and its mode, the run says which figure it refused, and no temporary file is left.
#[test]
fn a_link_planted_at_a_figures_name_is_not_followed() {
    let args = [
        "sim",
        "experiments/seed000/ws.toml",
        "--samples",
        "1000",
        "--plot",
    ];
    // The names the figures take.
    let clean = tempfile::tempdir().unwrap();
    let out = irqlab().args(args).arg(clean.path()).output().unwrap();
    assert!(out.status.success(), "{}", show("sim --plot", &out));
    let names: Vec<String> = std::fs::read_dir(clean.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.is_empty());

    let shared = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    let secret = victim.path().join("secret");
    std::fs::write(&secret, "root's\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    for n in &names {
        std::os::unix::fs::symlink(&secret, shared.path().join(n)).unwrap();
    }
    let out = irqlab().args(args).arg(shared.path()).output().unwrap();
    let text = show("sim --plot into planted links", &out);
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "root's\n",
        "{text}"
    );
    assert_eq!(
        std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    for n in &names {
        assert!(std::fs::symlink_metadata(shared.path().join(n))
            .unwrap()
            .file_type()
            .is_symlink());
    }
    assert_eq!(
        std::fs::read_dir(shared.path()).unwrap().count(),
        names.len(),
        "a temporary file was left"
    );
}

/// Red-team finding: `-` where only files or a directory can go is refused naming the flag
/// (`plot --out -` made a directory named `-`; `sweep plan --out -` mixed the manifest with
/// text on stdout).
#[test]
fn a_dash_where_a_file_or_directory_must_go_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = irqlab()
        .current_dir(dir.path())
        .args(["plot", "--out", "-", "nothing.json"])
        .output()
        .unwrap();
    let text = show("plot --out -", &out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--out -: figures are files in a directory"),
        "{text}"
    );
    assert!(
        !dir.path().join("-").exists(),
        "a directory named - was made"
    );
    let out = irqlab()
        .args([
            "sweep", "plan", "--out", "-", "--draws", "2", "--only", "msi-*",
        ])
        .output()
        .unwrap();
    let text = show("sweep plan --out -", &out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--out -: the manifest is a file"), "{text}");
}
