//! The verdict snapshot (DESIGN.md, "How a row is judged", 4): the class of every row under
//! `validate --uncertainty`, committed, so that a commit that changes a range, an estimate or a
//! mechanism and flips a class shows the flip in its diff (say why in the commit message).
//!
//! Classes, not figures: a band that moves inside its class is not a flip. The draws are those
//! of `irqlab validate --uncertainty 200` with the default seed, so the snapshot is exactly what
//! a user sees. Rows whose files declare no ranges yet (seed 002) are undecided: a class drawn
//! over no range would be a nominal verdict in disguise. Seed 004's draws each run its whole
//! 4,400-second timeline, so this test takes minutes, not seconds.

use assert_cmd::Command;
use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn verdict_classes_are_the_committed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("verdicts.json");
    let out = Command::cargo_bin("irqlab")
        .expect("the irqlab binary is built")
        .current_dir(repo_root())
        .args(["validate", "--uncertainty", "200", "--json"])
        .arg(&json)
        .output()
        .expect("irqlab runs");
    // The nominal verdicts decide the exit code, and rows fail nominally.
    assert!(
        json.exists(),
        "no JSON written; stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["result"]["uncertainty"]["rows"]
        .as_array()
        .expect("an uncertainty section");
    let table: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{:<16} {}",
                r["id"].as_str().unwrap(),
                r["class"].as_str().unwrap()
            )
        })
        .collect();
    insta::assert_snapshot!("verdicts", table.join("\n"));
}
