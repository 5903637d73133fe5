//! Every JSON file irqlab writes validates against the schema that ships in the repository
//! (`schemas/irqlab-result.schema.json`): real outputs of every command, made here. The
//! measurements run where they can (a timer measurement needs no root; `measure irqs` needs
//! root and tracefs and is skipped with the reason otherwise).

mod hostenv;

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo_root().join("schemas/irqlab-result.schema.json"))
        .expect("the schema ships in the repository");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema")
}

/// Run irqlab with `args` plus `--json FILE` and return the file's JSON (any exit status: a
/// validation with failing rows still writes its file).
fn output(args: &[&str], dir: &Path, name: &str) -> serde_json::Value {
    let path = dir.join(name);
    let out = Command::cargo_bin("irqlab")
        .unwrap()
        .current_dir(repo_root())
        .args(args)
        .arg("--json")
        .arg(&path)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "irqlab {args:?} wrote no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(&text).expect("valid JSON")
}

/// The files of a sweep: manifests, shard results and merges, of draws and of a grid (seed
/// 004's, whose metrics have phases and a quantum).
fn sweep_outputs(dir: &Path) -> Vec<(&'static str, serde_json::Value)> {
    let irqlab = |args: &[&str]| {
        let out = Command::cargo_bin("irqlab")
            .unwrap()
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        // A merge of draws exits 1 when a nominal row fails; it still writes its file.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "irqlab {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    irqlab(&[
        "sweep",
        "plan",
        "--out",
        "draws.json",
        "--only",
        "msi-ws-*",
        "--samples",
        "200",
        "--draws",
        "3",
    ]);
    irqlab(&[
        "sweep",
        "plan",
        "--out",
        "grid.json",
        "--scenario",
        "seed004/pps",
        "--grid",
        "probe.jitter_ns=50,500",
        "--samples",
        "100",
    ]);
    for m in ["draws", "grid"] {
        irqlab(&[
            "sweep",
            "run",
            &format!("{m}.json"),
            "--shard",
            "0",
            "--of",
            "1",
            "--out",
            m,
        ]);
        irqlab(&[
            "sweep",
            "merge",
            &format!("{m}.json"),
            m,
            "--json",
            &format!("{m}-merged.json"),
        ]);
    }
    vec![
        ("sweep plan of draws", read("draws.json")),
        ("sweep run of draws", read("draws/shard-0-of-1.json")),
        ("sweep merge of draws", read("draws-merged.json")),
        ("sweep plan of a grid", read("grid.json")),
        ("sweep run of a grid", read("grid/shard-0-of-1.json")),
        ("sweep merge of a grid", read("grid-merged.json")),
    ]
}

fn assert_valid(v: &jsonschema::Validator, json: &serde_json::Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
}

#[test]
fn every_output_validates_against_the_shipped_schema() {
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fixture = repo_root().join("crates/host/tests/fixtures/hosts/firecracker-6.18");
    let fixture = fixture.to_str().unwrap();
    let mut outputs = vec![
        (
            "sim with a trace",
            output(
                &[
                    "sim",
                    "seed000/ws",
                    "--set",
                    "delivery=xtpic",
                    "--samples",
                    "200",
                    "--trace",
                    "8",
                ],
                d,
                "sim.json",
            ),
        ),
        (
            "sim of seed 004",
            output(&["sim", "seed004/pps", "--samples", "100"], d, "pps.json"),
        ),
        (
            "validate",
            output(&["validate", "--samples", "300"], d, "validate.json"),
        ),
        (
            "validate --uncertainty",
            output(
                &[
                    "validate",
                    "--only",
                    "msi-*",
                    "--samples",
                    "300",
                    "--uncertainty",
                    "8",
                ],
                d,
                "uncertainty.json",
            ),
        ),
        (
            // A rate row, and a free parameter fitted in each draw ([calibration]).
            "validate --uncertainty, fitted",
            output(
                &[
                    "validate",
                    "--only",
                    "swizzle-pps-noswz-split",
                    "--uncertainty",
                    "4",
                ],
                d,
                "uncertainty-fitted.json",
            ),
        ),
        (
            "host on a captured tree",
            output(&["host", "--root", fixture], d, "host-fixture.json"),
        ),
        ("host", output(&["host"], d, "host.json")),
        (
            "measure timer",
            output(
                &[
                    "measure",
                    "timer",
                    "--cpus",
                    "0",
                    "--loops",
                    "20",
                    "--interval-us",
                    "500",
                ],
                d,
                "timer.json",
            ),
        ),
    ];
    if hostenv::is_root() {
        outputs.push((
            "measure timer traced, with its worst wake-up",
            output(
                &[
                    "measure",
                    "timer",
                    "--trace",
                    "--loops",
                    "200",
                    "--interval-us",
                    "500",
                ],
                d,
                "timer-traced.json",
            ),
        ));
        outputs.push((
            "measure timer with the scheduling account and its worst wake-up",
            output(
                &[
                    "measure",
                    "timer",
                    "--loops",
                    "200",
                    "--interval-us",
                    "500",
                    "--trace-sched",
                ],
                d,
                "timer-sched.json",
            ),
        ));
        outputs.push((
            "measure irqs",
            output(
                &["measure", "irqs", "--duration", "1s", "--buffer-kb", "256"],
                d,
                "irqs.json",
            ),
        ));
    } else {
        eprintln!("measure irqs not checked: not root");
    }
    outputs.extend(sweep_outputs(d));
    for (what, json) in &outputs {
        assert_valid(&v, json, what);
    }
    // The parts the schema describes are there to be checked: a trace, a series, a worst
    // wake-up's analysis (root), undecided rows with what they need.
    assert!(outputs[0].1["result"]["trace"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    assert!(outputs[0].1["result"]["series"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    assert!(outputs[2].1["result"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["verdict"] == "undecided" && r["needs"].is_object()));
    if let Some((_, sched)) = outputs.iter().find(|(w, _)| w.contains("worst wake-up")) {
        assert!(
            sched["result"]["spike"]["analysis"]["parts"].is_array(),
            "{}",
            sched["result"]
        );
    }
    // The schema can fail: a file without its settings, or a validation dressed as a run.
    let mut broken = outputs[0].1.clone();
    broken.as_object_mut().unwrap().remove("settings");
    assert!(!v.is_valid(&broken));
    let mut broken = outputs[2].1.clone();
    broken["kind"] = "sim".into();
    assert!(!v.is_valid(&broken));
    let mut broken = outputs[0].1.clone();
    broken["result"]["metrics"][0]["summary"]["count"] = (-1).into();
    assert!(!v.is_valid(&broken));
    // A shard without its manifest's fingerprint, a manifest dressed as a shard.
    let sweep = |what: &str| &outputs.iter().find(|(w, _)| *w == what).unwrap().1;
    let mut broken = sweep("sweep run of a grid").clone();
    broken["result"]["manifest_fingerprint"] = "".into();
    assert!(!v.is_valid(&broken));
    let mut broken = sweep("sweep plan of draws").clone();
    broken["kind"] = "sweep-shard".into();
    assert!(!v.is_valid(&broken));
}

/// `sim --uncertainty N --json`: with rows and without (`--no-rows`: rows null), and a
/// scenario's what-if with a `--set` that pins a drawn parameter.
#[test]
fn a_what_if_validates_against_the_shipped_schema() {
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let with_rows = output(
        &[
            "sim",
            "seed000/ws",
            "--samples",
            "200",
            "--uncertainty",
            "4",
        ],
        d,
        "whatif.json",
    );
    let pinned = output(
        &[
            "sim",
            "seed003/flood",
            "--samples",
            "100",
            "--uncertainty",
            "3",
            "--no-rows",
            "--set",
            "kernel.net.rx_packet=1350",
            "--against",
            "kernel.sched.preemption=rt",
        ],
        d,
        "whatif-pinned.json",
    );
    for (what, out) in [("with rows", &with_rows), ("pinned, no rows", &pinned)] {
        assert_eq!(out["kind"], "sim-uncertainty");
        let errors: Vec<String> = v
            .iter_errors(out)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{what}: {errors:#?}");
    }
    // Its sweep: the manifest, a shard's results, and the merge (a what-if again).
    let irqlab = |args: &[&str]| {
        let out = Command::cargo_bin("irqlab")
            .unwrap()
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "irqlab {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    irqlab(&[
        "sweep",
        "plan",
        "--out",
        "wm.json",
        "--scenario",
        "seed000/ws",
        "--samples",
        "200",
        "--draws",
        "3",
    ]);
    irqlab(&[
        "sweep", "run", "wm.json", "--shard", "0", "--of", "1", "--out", "wr",
    ]);
    irqlab(&["sweep", "merge", "wm.json", "wr", "--json", "wmerged.json"]);
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join(name)).unwrap()).unwrap()
    };
    for name in ["wm.json", "wr/shard-0-of-1.json", "wmerged.json"] {
        let out = read(name);
        let errors: Vec<String> = v
            .iter_errors(&out)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    assert!(with_rows["result"]["rows"].is_array());
    assert!(pinned["result"]["rows"].is_null());
    assert_eq!(pinned["result"]["pinned"][0], "kernel.net.rx_packet");
    assert!(pinned["result"]["differences"].is_array());
    // The schema can fail: a what-if dressed as a run, a quantity in another unit.
    let mut broken = with_rows.clone();
    broken["kind"] = "sim".into();
    assert!(!v.is_valid(&broken));
    let mut broken = with_rows.clone();
    broken["result"]["quantities"][0]["unit"] = "us".into();
    assert!(!v.is_valid(&broken));
}
