//! `irqlab sweep`: the merged result of N shards is the unsharded run's, bit for bit (and a
//! sweep of draws is `validate --uncertainty N`'s); missing points name the shards to run
//! again; a point twice with other results, or results of another sweep, are refused. Small
//! draws and sample counts: seconds, not minutes. The same on a real Slurm cluster:
//! `tests/slurm.rs`.

use assert_cmd::Command;
use std::path::Path;

/// Run irqlab in `dir` (relative paths in messages stay short and stable): stdout, stderr
/// and the exit status.
fn irqlab(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = Command::cargo_bin("irqlab")
        .unwrap()
        .current_dir(dir)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("SLURM_ARRAY_TASK_COUNT")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

/// Run irqlab and insist on exit status `code`.
fn ok(dir: &Path, args: &[&str], code: i32) -> String {
    let (out, err, status) = irqlab(dir, args);
    assert_eq!(
        status, code,
        "irqlab {args:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}

/// The `result` of a JSON file exactly as written: the rest of the envelope records when and
/// how it was made (times, the command line), which differs between any two runs.
fn result_text(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let at = text.find("\n  \"result\": ").expect("an envelope");
    text[at..].to_string()
}

/// Give an edited shard's `result` the digest of its points again, as anyone who can write the
/// file can (the digest is no signature): only the merge's checks of consistency are left.
fn reseal(dir: &Path, manifest: &str, result: &mut serde_json::Value) {
    use irqlab_sim::sweep::{points_sha256, Manifest, ShardResults};
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(manifest)).unwrap()).unwrap();
    let m: Manifest = serde_json::from_value(m["result"].clone()).unwrap();
    let s: ShardResults = serde_json::from_value(result.clone()).unwrap();
    result["points_sha256"] = points_sha256(&m, s.shard, s.of, &s.points).into();
}

/// Run every shard of `of` of `manifest` into `out`.
fn run_shards(dir: &Path, manifest: &str, of: u32, out: &str) {
    for shard in 0..of {
        ok(
            dir,
            &[
                "sweep",
                "run",
                manifest,
                "--shard",
                &shard.to_string(),
                "--of",
                &of.to_string(),
                "--out",
                out,
            ],
            0,
        );
    }
}

/// A sweep of 5 draws over seed 000's workstation rows, run as 3 shards into `three` and as
/// one into `one`.
fn draws(dir: &Path) {
    ok(
        dir,
        &[
            "sweep",
            "plan",
            "--out",
            "m.json",
            "--only",
            "msi-ws-*",
            "--samples",
            "300",
            "--draws",
            "5",
        ],
        0,
    );
    run_shards(dir, "m.json", 3, "three");
    run_shards(dir, "m.json", 1, "one");
}

#[test]
fn draws_merged_from_three_shards_are_one_shard_and_validate_uncertainty_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    draws(d);
    // Nominal rows fail at these sample counts: exit 1, as validate.
    let three = ok(
        d,
        &["sweep", "merge", "m.json", "three", "--json", "three.json"],
        1,
    );
    let one = ok(
        d,
        &["sweep", "merge", "m.json", "one", "--json", "one.json"],
        1,
    );
    let validate = ok(
        d,
        &[
            "validate",
            "--only",
            "msi-ws-*",
            "--samples",
            "300",
            "--uncertainty",
            "5",
            "--json",
            "validate.json",
        ],
        1,
    );
    assert!(three.contains("Uncertainty: 5 draws"), "{three}");
    assert_eq!(three, one);
    assert_eq!(three, validate);
    assert_eq!(
        result_text(&d.join("three.json")),
        result_text(&d.join("one.json"))
    );
    assert_eq!(
        result_text(&d.join("three.json")),
        result_text(&d.join("validate.json"))
    );
}

#[test]
fn a_grid_merged_from_shards_is_one_shard_bit_for_bit_and_a_cell_is_irqlab_sim() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = ok(
        d,
        &[
            "sweep",
            "plan",
            "--out",
            "g.json",
            "--scenario",
            "seed000/ws",
            "--grid",
            "delivery=msi,xtpic",
            "--grid",
            "platform.cpu.clock_hz=2e9,3e9",
            "--samples",
            "500",
            "--repeat",
            "2",
        ],
        0,
    );
    assert!(
        plan.starts_with("8 points: 4 cells x 2 points of 500 samples"),
        "{plan}"
    );
    run_shards(d, "g.json", 3, "three");
    run_shards(d, "g.json", 1, "one");
    let three = ok(
        d,
        &["sweep", "merge", "g.json", "three", "--json", "3.json"],
        0,
    );
    let one = ok(
        d,
        &["sweep", "merge", "g.json", "one", "--json", "1.json"],
        0,
    );
    assert_eq!(three, one);
    assert_eq!(
        result_text(&d.join("3.json")),
        result_text(&d.join("1.json"))
    );
    // Two points of 500 samples per cell, their histograms added.
    assert!(
        three
            .lines()
            .any(|l| l.starts_with("xtpic     3e9") && l.contains("isr_latency      1,000")),
        "{three}"
    );

    // A cell of one point runs with the scenario's own seed: it is `irqlab sim` with the
    // cell's --set flags.
    ok(
        d,
        &[
            "sweep",
            "plan",
            "--out",
            "c.json",
            "--scenario",
            "seed000/ws",
            "--grid",
            "delivery=xtpic",
            "--samples",
            "500",
        ],
        0,
    );
    run_shards(d, "c.json", 1, "c");
    let cell = ok(d, &["sweep", "merge", "c.json", "c"], 0);
    let sim = ok(
        d,
        &[
            "sim",
            "seed000/ws",
            "--set",
            "delivery=xtpic",
            "--samples",
            "500",
        ],
        0,
    );
    let metrics = |text: &str, strip: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains("_latency "))
            .map(|l| l.trim_start_matches(strip).to_string())
            .collect()
    };
    let from_sim = metrics(&sim, "");
    assert_eq!(from_sim.len(), 2, "{sim}");
    assert_eq!(metrics(&cell, "xtpic     "), from_sim, "{cell}");
}

#[test]
fn missing_points_name_the_shards_to_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    draws(d);
    std::fs::remove_file(d.join("three/shard-1-of-3.json")).unwrap();
    let (out, err, code) = irqlab(d, &["sweep", "merge", "m.json", "three"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    insta::assert_snapshot!("missing", err);
    // Running the named shard again completes the sweep.
    run_shards(d, "m.json", 3, "three");
    ok(d, &["sweep", "merge", "m.json", "three"], 1);

    std::fs::create_dir(d.join("empty")).unwrap();
    let (_, err, code) = irqlab(d, &["sweep", "merge", "m.json", "empty"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!("none", err);
}

#[test]
fn a_point_twice_merges_once_unless_its_results_differ() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    draws(d);
    // The same points from 3 shards and from 1: each point twice, the same results.
    std::fs::copy(
        d.join("one/shard-0-of-1.json"),
        d.join("three/shard-0-of-1.json"),
    )
    .unwrap();
    let both = ok(d, &["sweep", "merge", "m.json", "three"], 1);
    assert_eq!(both, ok(d, &["sweep", "merge", "m.json", "one"], 1));

    // Draw 1's first row with another value, sealed again (as another irqlab build or other
    // files would have made it): not the same point.
    let path = d.join("three/shard-1-of-3.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let value = &mut v["result"]["points"][0]["rows"][0]["value"];
    *value = (value.as_f64().unwrap() * 1.5).into();
    reseal(d, "m.json", &mut v["result"]);
    std::fs::write(
        d.join("three/shard-1-of-3-edited.json"),
        serde_json::to_string(&v).unwrap(),
    )
    .unwrap();
    let (_, err, code) = irqlab(d, &["sweep", "merge", "m.json", "three"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!("conflict", err);
}

#[test]
fn results_of_another_sweep_are_refused_and_other_files_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    draws(d);
    // The same sweep with another draw seed: other points, another manifest.
    ok(
        d,
        &[
            "sweep",
            "plan",
            "--out",
            "other.json",
            "--only",
            "msi-ws-*",
            "--samples",
            "300",
            "--draws",
            "5",
            "--draw-seed",
            "2",
        ],
        0,
    );
    let (_, err, code) = irqlab(d, &["sweep", "merge", "other.json", "one"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("one/shard-0-of-1.json: its points belong to another sweep"),
        "{err}"
    );
    // A merged result written beside the shards is not a shard: skipped, said so.
    ok(
        d,
        &[
            "sweep",
            "merge",
            "m.json",
            "one",
            "--json",
            "one/merged.json",
        ],
        1,
    );
    let (_, err, code) = irqlab(d, &["sweep", "merge", "m.json", "one"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "irqlab: note: skipped one/merged.json: it was written by `irqlab validate`; not a \
             shard's result"
        ),
        "{err}"
    );
    // A shard's result is no manifest.
    let (_, err, code) = irqlab(
        d,
        &[
            "sweep",
            "run",
            "one/shard-0-of-1.json",
            "--shard",
            "0",
            "--of",
            "1",
            "--out",
            "x",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "it was written by `irqlab sweep run`; give the manifest irqlab sweep plan wrote"
        ),
        "{err}"
    );
}

#[test]
fn the_shard_comes_from_slurm_array_task_id() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "sweep",
            "plan",
            "--out",
            "g.json",
            "--scenario",
            "seed000/ws",
            "--grid",
            "delivery=msi,ioapic,xtpic",
            "--samples",
            "100",
        ],
        0,
    );
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut c = Command::cargo_bin("irqlab").unwrap();
        c.current_dir(d)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("SLURM_ARRAY_TASK_COUNT");
        for (k, v) in env {
            c.env(k, v);
        }
        c.args(["sweep", "run", "g.json", "--out", "r"]).args(args);
        c.output().unwrap()
    };
    let out = run(
        &[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "shard 1 of 2: 1 of 3 points\n"
    );
    assert!(d.join("r/shard-1-of-2.json").is_file());
    // --of beats the task count (a task run again alone has a count of 1).
    let out = run(
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
        ],
        &["--of", "3"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(d.join("r/shard-2-of-3.json").is_file());
    let out = run(
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--shard 2 --of 1: the shard index runs from 0 to N-1")
            && err.contains("needs --of N in the job script"),
        "{err}"
    );
    let out = run(&[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "--shard: not given, and SLURM_ARRAY_TASK_ID is not set; pass --shard I (0 to N-1)"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_grid_flags_are_refused_by_name_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut errors = Vec::new();
    for grid in [
        &["delivery=msi,msix"][..],
        &["delivery"],
        &["platform.cpu.clok_hz=1e9,2e9"],
        &["platform.cpu.clock_hz=fast"],
        &["delivery=msi,,xtpic"],
        &["delivery=msi,msi"],
        &["delivery=msi", "delivery=xtpic"],
    ] {
        let mut args = vec![
            "sweep",
            "plan",
            "--out",
            "g.json",
            "--scenario",
            "seed000/ws",
        ];
        for g in grid {
            args.extend(["--grid", g]);
        }
        let (out, err, code) = irqlab(d, &args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty());
        errors.push(err);
    }
    assert!(!d.join("g.json").exists(), "nothing written");
    insta::assert_snapshot!("grid_errors", errors.concat());
}

#[test]
fn every_sweep_help_states_the_exit_statuses() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        &["sweep"][..],
        &["sweep", "plan"],
        &["sweep", "run"],
        &["sweep", "merge"],
    ] {
        let out = ok(dir.path(), &[cmd, &["--help"]].concat(), 0);
        assert!(
            out.contains("Exit status: 0"),
            "irqlab {cmd:?} --help:\n{out}"
        );
    }
}

#[test]
fn a_free_parameter_fitted_in_each_draw_comes_through_shards_as_through_validate() {
    // Seed 001's [calibration]: every draw bisects kernel.net.forward on the 8-port row before
    // the held-out row runs; the merged sweep reports the fitted values as validate does.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let only = "swizzle-pps-swz-split";
    ok(
        d,
        &[
            "sweep", "plan", "--out", "m.json", "--only", only, "--draws", "2",
        ],
        0,
    );
    run_shards(d, "m.json", 2, "two");
    let merged = irqlab(
        d,
        &["sweep", "merge", "m.json", "two", "--json", "merged.json"],
    );
    let validate = irqlab(
        d,
        &[
            "validate",
            "--only",
            only,
            "--uncertainty",
            "2",
            "--json",
            "validate.json",
        ],
    );
    assert_eq!(merged.2, validate.2, "{}\n{}", merged.1, validate.1);
    assert!(
        merged.0.contains("Fitted in each draw"),
        "the merge reports the fitted parameter:\n{}",
        merged.0
    );
    assert_eq!(merged.0, validate.0);
    assert_eq!(
        result_text(&d.join("merged.json")),
        result_text(&d.join("validate.json"))
    );
}

/// A grid of 2 cells x 2 points of 500 samples (seed 000's workstation: isr_latency and
/// tasklet_latency), run as 2 shards into `good`: shard 0 holds points 0 (cell 0) and 2
/// (cell 1), shard 1 points 1 and 3.
fn grid_of_two_shards(dir: &Path) {
    ok(
        dir,
        &[
            "sweep",
            "plan",
            "--out",
            "g.json",
            "--scenario",
            "seed000/ws",
            "--grid",
            "delivery=msi,xtpic",
            "--samples",
            "500",
            "--repeat",
            "2",
        ],
        0,
    );
    run_shards(dir, "g.json", 2, "good");
}

/// An edit of a shard's `result`.
type Edit = fn(&mut serde_json::Value);

/// The edits issue 37 made to shard results, each to shard 0's JSON `result` (`metrics[0]` is
/// isr_latency, `metrics[1]` tasklet_latency; `points[0]` is cell 0's, `points[1]` cell 1's),
/// with what the merge says of it once the digest is made again to match (`None`: nothing; the
/// edit keeps every histogram whole, and only the digest, or running the shard again, tells).
fn tamperings() -> Vec<(&'static str, Edit, Option<&'static str>)> {
    fn hist(r: &mut serde_json::Value, point: usize, metric: usize) -> &mut serde_json::Value {
        &mut r["points"][point]["metrics"][metric]["histogram"]
    }
    fn times(v: &mut serde_json::Value, by: u64) {
        *v = (v.as_u64().unwrap() * by).into();
    }
    vec![
        ("sum-x10", |r| {
            let s = &mut hist(r, 0, 0)["sum_ns"];
            *s = (s.as_str().unwrap().parse::<u128>().unwrap() * 10)
                .to_string()
                .into();
        }, Some("DIR/shard-0-of-2.json: point 0: isr_latency: sum_ns ")),
        ("min-below-the-counts", |r| {
            let m = &mut hist(r, 0, 0)["min_ns"];
            *m = (m.as_u64().unwrap() / 2).into();
        }, Some("DIR/shard-0-of-2.json: point 0: isr_latency: min_ns ")),
        ("max-beyond-the-counts", |r| times(&mut hist(r, 0, 0)["max_ns"], 3), Some("DIR/shard-0-of-2.json: point 0: isr_latency: max_ns ")),
        ("overflows", |r| hist(r, 0, 0)["overflows"] = 3.into(), Some("DIR/shard-0-of-2.json: point 0: isr_latency: overflows 3, but max_ns ")),
        ("v2-byte-flipped", |r| {
            use base64::Engine;
            let b64 = base64::engine::general_purpose::STANDARD;
            let h = &mut hist(r, 0, 0)["hdr_v2_base64"];
            let mut bytes = b64.decode(h.as_str().unwrap()).unwrap();
            // A count in the payload (the 40-byte header is cookie, length and bounds).
            let at = 40 + (bytes.len() - 40) / 2;
            bytes[at] ^= 0x04;
            *h = b64.encode(bytes).into();
        }, Some("DIR/shard-0-of-2.json: point 0: isr_latency: ")),
        ("metrics-swapped", |r| {
            let m = r["points"][0]["metrics"].as_array_mut().unwrap();
            let isr = m[0]["histogram"].take();
            m[0]["histogram"] = m[1]["histogram"].take();
            m[1]["histogram"] = isr;
        }, None),
        ("cells-swapped", |r| {
            let a = hist(r, 0, 0).take();
            *hist(r, 0, 0) = hist(r, 1, 0).take();
            *hist(r, 1, 0) = a;
        }, None),
        ("metric-renamed", |r| {
            r["points"][0]["metrics"][0]["name"] = "irq_latency".into()
        }, Some("DIR/shard-0-of-2.json: point 0: irq_latency is no metric of this model's (those are round_trip, cyclictest_latency, isr_latency, tasklet_latency)")),
        ("metric-removed", |r| {
            // Cell 0's tasklet_latency: 500 samples merged instead of 1,000.
            r["points"][0]["metrics"].as_array_mut().unwrap().remove(1);
        }, Some(
                "DIR/shard-1-of-2.json: point 1 of cell 0 (delivery=msi) has other metrics \
                 isr_latency, tasklet_latency; point 0 has isr_latency (in DIR/shard-0-of-2.json)",
            )),
        ("count-changed", |r| {
            // Every metric of the point with 250 samples of a value it has, not 500.
            for m in r["points"][0]["metrics"].as_array_mut().unwrap() {
                let mut h = irqlab_stats::LatencyHistogram::new();
                h.record_n(m["histogram"]["min_ns"].as_u64().unwrap(), 250);
                m["histogram"] = serde_json::to_value(h.to_serialized()).unwrap();
            }
        }, Some("DIR/shard-0-of-2.json: point 0: its metrics hold at most 250 samples, but the point ran 500")),
    ]
}

/// Copy the shards in `good` to `to`, shard 0's result edited by `edit`, and its digest made
/// again to match if `reseal`.
fn tampered_copy(d: &Path, to: &str, edit: Edit, reseal: bool) {
    std::fs::create_dir(d.join(to)).unwrap();
    for shard in ["shard-0-of-2.json", "shard-1-of-2.json"] {
        let text = std::fs::read_to_string(d.join("good").join(shard)).unwrap();
        let text = if shard == "shard-0-of-2.json" {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            edit(&mut v["result"]);
            if reseal {
                self::reseal(d, "g.json", &mut v["result"]);
            }
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            text
        };
        std::fs::write(d.join(to).join(shard), text).unwrap();
    }
}

/// Merge the shards in `results` into `{results}.merged.json`: exit status 2 with nothing on
/// standard output and no file written; the error.
fn refused(d: &Path, results: &str) -> String {
    let out = format!("{results}.merged.json");
    let (stdout, err, code) = irqlab(d, &["sweep", "merge", "g.json", results, "--json", &out]);
    assert_eq!(code, 2, "{results}: merged\n{stdout}\n{err}");
    assert!(stdout.is_empty(), "{results}: {stdout}");
    assert!(!d.join(&out).exists(), "{results}: nothing written");
    assert!(
        err.contains(&format!(
            "delete it and run its shard again:\n  irqlab sweep run g.json --shard 0 --of 2 --out \
             {results}"
        )) || err.contains("--shard 1 --of 2"),
        "{results}: the shard to run again\n{err}"
    );
    err
}

#[test]
fn an_edited_shard_is_named_with_its_reason_and_nothing_is_merged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    grid_of_two_shards(d);
    let good = ok(d, &["sweep", "merge", "g.json", "good"], 0);
    for (name, edit, sealed_reason) in tamperings() {
        // As edited: the points' digest is not the one the file carries.
        tampered_copy(d, name, edit, false);
        let err = refused(d, name);
        assert!(
            err.contains(&format!(
                "{name}/shard-0-of-2.json: its points are not those irqlab sweep run wrote"
            )),
            "{name}: {err}"
        );
        assert!(!err.contains("shard-1-of-2.json:"), "{name}: {err}");
        // With the digest made again: what the checks of consistency find.
        let sealed = format!("sealed-{name}");
        tampered_copy(d, &sealed, edit, true);
        match sealed_reason {
            Some(reason) => {
                let err = refused(d, &sealed);
                let reason = reason.replace("DIR", &sealed);
                assert!(err.contains(&reason), "{sealed}: {reason}\n{err}");
                assert!(!err.contains("its points are not those"), "{sealed}: {err}");
            }
            // The limit the sweep docs state: whole histograms swapped pass the checks.
            None => assert_ne!(ok(d, &["sweep", "merge", "g.json", &sealed], 0), good),
        }
    }

    // Several at once: each named, and no other.
    std::fs::create_dir(d.join("several")).unwrap();
    for (from, file) in [
        ("sum-x10", "shard-0-of-2.json"),
        ("sealed-metric-renamed", "shard-0-of-2.json"),
    ] {
        std::fs::copy(
            d.join(from).join(file),
            d.join("several").join(format!("{from}.json")),
        )
        .unwrap();
    }
    std::fs::copy(
        d.join("good/shard-1-of-2.json"),
        d.join("several/shard-1-of-2.json"),
    )
    .unwrap();
    let err = refused(d, "several");
    assert!(
        err.contains("2 shard results failed the merge's checks"),
        "{err}"
    );
    assert!(
        err.contains("several/sum-x10.json: its points are not"),
        "{err}"
    );
    assert!(
        err.contains("several/sealed-metric-renamed.json: point 0: irq_latency is no metric"),
        "{err}"
    );
    assert!(!err.contains("several/shard-1-of-2.json"), "{err}");

    // A shard of an irqlab before the digest: run it again.
    let path = d.join("good/shard-0-of-2.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["result"].as_object_mut().unwrap().remove("points_sha256");
    std::fs::create_dir(d.join("old")).unwrap();
    std::fs::write(d.join("old/shard-0-of-2.json"), v.to_string()).unwrap();
    std::fs::copy(
        d.join("good/shard-1-of-2.json"),
        d.join("old/shard-1-of-2.json"),
    )
    .unwrap();
    let err = refused(d, "old");
    assert!(
        err.contains(
            "old/shard-0-of-2.json: it has no points_sha256, so an irqlab older than this \
             merge's wrote it"
        ),
        "{err}"
    );

    // Points moved to the file of another shard: the digest binds them to their shard.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["result"]["shard"] = 1.into();
    std::fs::create_dir(d.join("moved")).unwrap();
    std::fs::write(d.join("moved/shard-1-of-2.json"), v.to_string()).unwrap();
    let err = refused(d, "moved");
    assert!(
        err.contains("moved/shard-1-of-2.json: its points are not those irqlab sweep run wrote")
            && err.contains("point 0 is not one of shard 1 of 2's"),
        "{err}"
    );
}

/// A shard directory may be shared with other users and the merge run as root (never trust a
/// shard an attacker could have written): an entry is read as itself, never through a symbolic
/// link or another name of a file, only if it is a regular file (a named pipe would block the
/// merge), only up to a bound (a sparse file costs its writer nothing), and its name is shown,
/// not obeyed by the terminal.
#[test]
fn links_and_pipes_among_the_shards_are_not_followed_or_opened() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    grid_of_two_shards(d);
    let good = ok(d, &["sweep", "merge", "g.json", "good"], 0);
    // A file the user did not put there for the merge: a link would have the merge read it
    // (and quote it in an error); so would a link to a shard of this very sweep, which would
    // count its points twice.
    std::fs::write(d.join("private.txt"), "not for the merge to read").unwrap();
    std::os::unix::fs::symlink(d.join("private.txt"), d.join("good/planted.json")).unwrap();
    std::fs::hard_link(d.join("private.txt"), d.join("good/linked.json")).unwrap();
    let shard = std::fs::read_dir(d.join("good"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("shard-0-of-2"))
        .expect("shard 0's result");
    std::os::unix::fs::symlink(&shard, d.join("good/again.json")).unwrap();
    // A name that would clear the screen and start a line of its own.
    std::os::unix::fs::symlink(&shard, d.join("good/\x1b[2J\nirqlab: all well.json")).unwrap();
    let pipe = std::process::Command::new("mkfifo")
        .arg(d.join("good/pipe.json"))
        .status();
    if !pipe.is_ok_and(|s| s.success()) {
        eprintln!("no mkfifo(1): the named pipe is left out");
    }
    let (out, err, code) = irqlab(d, &["sweep", "merge", "g.json", "good"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, good);
    for link in ["good/again.json", "good/planted.json"] {
        assert!(
            err.contains(&format!(
                "skipped {link}: a symbolic link; irqlab reads the shards' own files, never \
                 through a link"
            )),
            "{err}"
        );
    }
    assert!(
        err.contains(
            "skipped good/linked.json: the file has other names (hard links), so it may be \
             another's file linked in; copy a shard in rather than linking it"
        ),
        "{err}"
    );
    assert!(
        err.contains("skipped good/\\x1B[2J\\x0Airqlab: all well.json: a symbolic link"),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "{err}");
    assert!(!err.contains("not for the merge"), "{err}");
    assert!(!err.contains("pipe.json"), "{err}");
    // A terabyte that costs its writer nothing on disk: refused by its size, never read.
    let sparse = std::fs::File::create(d.join("good/huge.json")).unwrap();
    sparse.set_len(1 << 40).unwrap();
    let (_, err, code) = irqlab(d, &["sweep", "merge", "g.json", "good"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "good/huge.json: 1099511627776 bytes, more than the 256 MiB a shard's result may have"
        ),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_utf8_is_named_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    grid_of_two_shards(d);
    let good = ok(d, &["sweep", "merge", "g.json", "good"], 0);
    std::fs::write(d.join("good/notes.json"), b"\xff\xfe{}").unwrap();
    // A name that is not UTF-8 either.
    use std::os::unix::ffi::OsStrExt;
    let odd = std::ffi::OsStr::from_bytes(b"odd-\xff.json");
    std::fs::write(d.join("good").join(odd), b"\xff").unwrap();
    let (out, err, code) = irqlab(d, &["sweep", "merge", "g.json", "good"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, good);
    assert!(
        err.contains("skipped good/notes.json: not UTF-8 text, so not a shard's result"),
        "{err}"
    );
    assert!(
        err.contains("skipped good/odd-\\xFF.json: not UTF-8 text"),
        "{err}"
    );
}
