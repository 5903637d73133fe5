//! The verdict snapshot (DESIGN.md, "How a row is judged", 4): the class of every row under
//! `validate --uncertainty`, committed, so that a commit that changes a range, an estimate or a
//! mechanism and flips a class shows the flip in its diff (say why in the commit message).
//!
//! Classes, not figures: a band that moves inside its class is not a flip. Rows whose files
//! declare no ranges yet (seed 002) are undecided: a class drawn over no range would be a
//! nominal verdict in disguise.
//!
//! Two snapshots:
//! - `verdicts_short`, in `cargo test`: [`SHORT_DRAWS`] draws with the default seed. It runs every
//!   row (every row kind) through the whole machinery, planning, drawing, refitting seed 001's
//!   free parameter, judging, classing, and it holds every class the full run holds (pass,
//!   uninformative, tension, inconsistent, undecided); a class that moves is a diff here too.
//!   Its classes are of so few draws that they are not the project's verdicts.
//! - `verdicts`, the project's verdicts: `validate --uncertainty 200` with the default seed,
//!   exactly what a user sees, run by the release binary (`IRQLAB_BIN`) because seed 004's draws
//!   each run its 4,400-second timeline: `.ci/verdicts` builds it and runs this file's ignored
//!   test, and `.ci/run` runs `.ci/verdicts`.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// Draws of the short snapshot: few, so that `cargo test` stays short, and enough that its
/// classes include every class of the committed full run (checked by
/// [`every_class_of_the_full_run_is_exercised`]; 4 and 6 draws showed no tension).
const SHORT_DRAWS: u32 = 10;

/// Draws of the project's verdicts (README, docs/validation.md).
const FULL_DRAWS: u32 = 200;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each row's class under `validate --uncertainty draws`, one `id class` line per row.
fn classes(bin: &Path, draws: u32) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("verdicts.json");
    let out = Command::new(bin)
        .current_dir(repo_root())
        .args(["validate", "--uncertainty", &draws.to_string(), "--json"])
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
    v["result"]["uncertainty"]["rows"]
        .as_array()
        .expect("an uncertainty section")
        .iter()
        .map(|r| {
            // A calibration row (a value was chosen from it) says so after its class.
            let calibration = r["inferred"].as_array().is_some_and(|a| !a.is_empty());
            (
                r["id"].as_str().unwrap().to_string(),
                format!(
                    "{}{}",
                    r["class"].as_str().unwrap(),
                    if calibration { " calibration" } else { "" }
                ),
            )
        })
        .collect()
}

fn table(rows: &[(String, String)]) -> String {
    rows.iter()
        .map(|(id, class)| format!("{id:<16} {class}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The committed full snapshot's rows: `(id, class, calibration)`.
fn committed() -> Vec<(String, String, bool)> {
    let full = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/verdicts__verdicts.snap"),
    )
    .expect("the committed full snapshot");
    let body = full.splitn(3, "---").nth(2).expect("an insta snapshot");
    body.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.to_string(),
                w.next()?.to_string(),
                w.next() == Some("calibration"),
            ))
        })
        .collect()
}

/// README's "Where the model stands": the committed verdicts of `validate --uncertainty 200`,
/// one line per class, the calibration rows counted apart (DESIGN.md rule 4).
fn standing(rows: &[(String, String, bool)]) -> String {
    let classes = [
        ("pass", "consistent with the published value, and the band is narrow enough to say so"),
        ("consistent_but_uninformative", "consistent, but the band is too wide to say much: source its top drivers"),
        ("tension", "the published value lies outside the 5-95% band, or the calibration's fit ended at its bound"),
        ("inconsistent", "outside the 1-99% band"),
        ("undecided", "the draws cannot resolve it"),
    ];
    let mut out = String::from("| class | rows | what it means |\n|---|---|---|\n");
    for (class, meaning) in classes {
        let ids: Vec<String> = rows
            .iter()
            .filter(|(_, c, _)| c == class)
            .map(|(id, _, cal)| {
                if *cal {
                    format!("`{id}`*")
                } else {
                    format!("`{id}`")
                }
            })
            .collect();
        let label = if class == "consistent_but_uninformative" {
            "uninformative"
        } else {
            class
        };
        out.push_str(&format!(
            "| {label} ({}) | {} | {meaning} |\n",
            ids.len(),
            ids.join(", ")
        ));
    }
    let cal: Vec<String> = rows
        .iter()
        .filter(|(_, _, cal)| *cal)
        .map(|(id, _, _)| format!("`{id}`"))
        .collect();
    out.push_str(&format!(
        "| calibration ({}) | {} | * a value of the model was chosen from the row's published target: not evidence, whatever its class |\n",
        cal.len(),
        cal.join(", ")
    ));
    out
}

/// The README's table of where the model stands is the committed full snapshot's classes:
/// regenerated with `IRQLAB_README=update cargo test -p irqlab --test verdicts`.
#[test]
fn the_readme_shows_the_committed_verdicts() {
    let path = repo_root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- verdicts:begin -->\n", "<!-- verdicts:end -->");
    let i = readme.find(begin).expect("README has the verdicts block") + begin.len();
    let j = readme[i..].find(end).expect("the block ends") + i;
    let want = standing(&committed());
    if readme[i..j] != want {
        if std::env::var_os("IRQLAB_README").is_some_and(|v| v == "update") {
            std::fs::write(&path, format!("{}{want}{}", &readme[..i], &readme[j..])).unwrap();
        } else {
            panic!(
                "README's 'Where the model stands' is not the committed verdicts; run \
                 IRQLAB_README=update cargo test -p irqlab --test verdicts\n{want}"
            );
        }
    }
}

/// This build's binary, as `cargo test` built it.
fn test_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_irqlab"))
}

#[test]
fn verdict_classes_of_a_short_draw() {
    let rows = classes(&test_binary(), SHORT_DRAWS);
    every_class_of_the_full_run_is_exercised(&rows);
    insta::assert_snapshot!("verdicts_short", table(&rows));
}

/// The short draw is only worth its minutes if it takes every class the project's verdicts
/// hold: a short snapshot that held only passes would let a broken classing through.
fn every_class_of_the_full_run_is_exercised(rows: &[(String, String)]) {
    let full = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/verdicts__verdicts.snap"),
    )
    .expect("the committed full snapshot");
    // After insta's header (between two `---` lines): `id class` lines.
    let body = full.splitn(3, "---").nth(2).expect("an insta snapshot");
    let mut wanted: Vec<&str> = body
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    assert!(wanted.len() >= 3, "the full snapshot's classes: {wanted:?}");
    for class in wanted {
        assert!(
            rows.iter().any(|(_, c)| c == class),
            "no row of the {SHORT_DRAWS}-draw snapshot is classed {class}, which the full run \
             has: raise SHORT_DRAWS until it shows (and say so in the commit)\n{}",
            table(rows)
        );
    }
}

#[test]
#[ignore = "the project's verdicts, 200 draws: minutes with the release binary; run .ci/verdicts"]
fn verdict_classes_are_the_committed_ones() {
    let bin = std::env::var_os("IRQLAB_BIN").map_or_else(test_binary, PathBuf::from);
    eprintln!(
        "verdicts: validate --uncertainty {FULL_DRAWS} with {}",
        bin.display()
    );
    insta::assert_snapshot!("verdicts", table(&classes(&bin, FULL_DRAWS)));
}
