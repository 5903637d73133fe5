//! `irqlab sim SCENARIO --uncertainty N`: a what-if's quantities over draws of the ranges its
//! files declare, with the validation rows on its scenario. Small sample counts and few draws:
//! these check what the output says, not the model's numbers.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn irqlab() -> Command {
    let bin = std::env::var_os("IRQLAB_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_irqlab")));
    let mut c = Command::new(bin);
    c.current_dir(root());
    c
}

fn run(args: &[&str]) -> Output {
    irqlab().args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "irqlab {args:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The what-if's JSON result.
fn json(args: &[&str], dir: &Path, name: &str) -> serde_json::Value {
    let path = dir.join(name);
    let mut a: Vec<&str> = args.to_vec();
    let p = path.to_str().unwrap();
    a.extend(["--json", p]);
    ok(&a);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["kind"], "sim-uncertainty");
    v["result"].clone()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("irqlab-whatif-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn quantity<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["quantities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == name)
        .unwrap_or_else(|| panic!("no quantity {name}: {r}"))
}

const WS: &[&str] = &[
    "sim",
    "seed000/ws",
    "--samples",
    "300",
    "--uncertainty",
    "12",
    "--no-rows",
];

#[test]
fn the_band_holds_the_nominal_and_the_drivers_are_drawn_parameters() {
    let d = tmp("band");
    let r = json(WS, &d, "ws.json");
    assert_eq!(r["draws"], 12);
    let params: Vec<&str> = r["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap())
        .collect();
    assert!(params.len() > 10, "{params:?}");
    for name in ["isr_latency mean", "tasklet_latency mean"] {
        let q = quantity(&r, name);
        let nominal = q["nominal"].as_f64().unwrap();
        let (p5, p95) = (
            q["band"]["p5"].as_f64().unwrap(),
            q["band"]["p95"].as_f64().unwrap(),
        );
        // The ranges move the latency (a band, not a point) and the files' own values lie
        // inside what they draw.
        assert!(p5 < p95, "{name}: a band of one value {q}");
        assert!(
            p5 <= nominal && nominal <= p95,
            "{name}: {nominal} outside {p5}..{p95}"
        );
        assert_eq!(q["draws"], 12);
        let drivers = q["drivers"].as_array().unwrap();
        assert_eq!(drivers.len(), 3, "{q}");
        for dr in drivers {
            assert!(params.contains(&dr["parameter"].as_str().unwrap()), "{dr}");
            assert!(dr["rho"].as_f64().unwrap().abs() <= 1.0);
        }
    }
    // The plain run is irqlab sim's: the same numbers.
    let plain = ok(&["sim", "seed000/ws", "--samples", "300"]);
    let mean = quantity(&r, "isr_latency mean")["nominal"]
        .as_f64()
        .unwrap();
    let row = plain
        .lines()
        .find(|l| l.starts_with("isr_latency "))
        .unwrap();
    let shown: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        shown[3].replace(',', ""),
        format!("{}", mean.round() as u64)
    );
}

#[test]
fn a_parameter_pinned_by_set_is_not_drawn() {
    let d = tmp("pinned");
    let free = json(WS, &d, "free.json");
    // The strongest driver of the ISR's latency when it is drawn.
    let top = quantity(&free, "isr_latency mean")["drivers"][0]["parameter"]
        .as_str()
        .unwrap()
        .to_string();
    let set = format!("{top}={}", {
        let p = free["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["key"] == top.as_str())
            .unwrap();
        // A value inside its range, written as the file's type takes it.
        let v = p["nominal"].as_f64().unwrap();
        if v.fract() == 0.0 && !top.ends_with("_ns") {
            format!("{}", v as i64)
        } else {
            format!("{v:e}")
        }
    });
    let mut args = WS.to_vec();
    args.extend(["--set", &set]);
    let pinned = json(&args, &d, "pinned.json");
    assert_eq!(pinned["pinned"], serde_json::json!([top]));
    assert!(
        !pinned["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["key"] == top.as_str()),
        "{top} still drawn"
    );
    for q in pinned["quantities"].as_array().unwrap() {
        for dr in q["drivers"].as_array().unwrap() {
            assert_ne!(dr["parameter"], top.as_str(), "{q}");
        }
    }
    let text = ok(&args);
    assert!(
        text.contains(&format!("pinned by --set, not drawn: {top}")),
        "{text}"
    );
}

#[test]
fn the_same_draw_seed_gives_the_same_output_and_another_does_not() {
    let a = ok(WS);
    assert_eq!(a, ok(WS));
    let mut other = WS.to_vec();
    other.extend(["--draw-seed", "2"]);
    let b = ok(&other);
    assert_ne!(a, b);
    assert!(b.contains("draw seed 2"), "{b}");
}

#[test]
fn a_scenario_whose_files_declare_no_ranges_says_so_and_shows_no_band() {
    let d = tmp("noranges");
    // The shipped files with every [range.*] table taken out.
    let strip = |text: &str| -> String {
        let mut out = String::new();
        let mut skipping = false;
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with('[') {
                skipping = t.starts_with("[range");
            }
            if !skipping {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    };
    let scenario = ok(&["show", "seed000/ws"]);
    let platform_name = "ws-2008-core2-ich9";
    let kernel_name = "linux-2.6.18-i386-up";
    std::fs::write(d.join("p.toml"), strip(&ok(&["show", platform_name]))).unwrap();
    std::fs::write(d.join("k.toml"), strip(&ok(&["show", kernel_name]))).unwrap();
    let scenario = strip(&scenario)
        .replace(
            &format!("<shipped>/platforms/{platform_name}.toml"),
            "p.toml",
        )
        .replace(&format!("<shipped>/kernels/{kernel_name}.toml"), "k.toml");
    assert!(scenario.contains("\"p.toml\"") && scenario.contains("\"k.toml\""));
    let file = d.join("s.toml");
    std::fs::write(&file, scenario).unwrap();
    let f = file.to_str().unwrap();
    let out = ok(&["sim", f, "--samples", "300", "--uncertainty", "5"]);
    assert!(
        out.contains("Uncertainty: nothing to draw") && out.contains("declare no ranges"),
        "{out}"
    );
    assert!(!out.contains("band 5-95%"), "{out}");
    // A file of one's own is not the one the rows run.
    assert!(out.contains("no validation row runs"), "{out}");
    let r = json(
        &["sim", f, "--samples", "300", "--uncertainty", "5"],
        &d,
        "r.json",
    );
    assert_eq!(r["draws"], 0);
    assert_eq!(r["quantities"], serde_json::json!([]));
    assert!(r["parameters"].as_array().unwrap().is_empty());
}

#[test]
fn a_bad_number_of_draws_names_the_flag() {
    for bad in ["0", "1", "-3", "x"] {
        let out = run(&["sim", "seed000/ws", "--uncertainty", bad]);
        assert_eq!(out.status.code(), Some(2), "--uncertainty {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--uncertainty"), "--uncertainty {bad}: {err}");
        assert!(out.stdout.is_empty());
    }
    // Flags that need a distribution or a packet list of one run are refused with it.
    for (flag, v) in [("--trace", "4"), ("--plot", "/tmp/x")] {
        let out = run(&["sim", "seed000/ws", "--uncertainty", "4", flag, v]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(flag));
    }
    let out = run(&["sim", "seed000/ws", "--draw-seed", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--uncertainty"));
}

#[test]
fn the_rows_on_the_scenario_are_named_with_their_verdicts() {
    let d = tmp("rows");
    let r = json(
        &[
            "sim",
            "seed000/ws",
            "--samples",
            "300",
            "--uncertainty",
            "4",
        ],
        &d,
        "rows.json",
    );
    let rows = r["rows"].as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    // seed000/ws's runs are the workstation's: its rows, never the SoC's.
    assert!(ids.contains(&"msi-ws-ioapic"), "{ids:?}");
    assert!(!ids.iter().any(|i| i.contains("soc")), "{ids:?}");
    let text = ok(&[
        "sim",
        "seed000/ws",
        "--samples",
        "300",
        "--uncertainty",
        "4",
    ]);
    assert!(text.contains("Rows on this scenario"), "{text}");
    for row in rows {
        let id = row["id"].as_str().unwrap();
        let said = match row["verdict"].as_str().unwrap() {
            "pass" => format!("{id} passes"),
            "fail" => format!("{id} fails on this model"),
            _ => format!("{id} is undecided on this model"),
        };
        // A calibration row says so after its verdict, as validate's own outputs do.
        let said = if row["calibration"].as_array().is_some_and(|c| !c.is_empty()) {
            format!("{said} (calibration, not evidence): ")
        } else {
            format!("{said}: ")
        };
        assert!(text.contains(&said), "{said} not in {text}");
    }
    let skipped = ok(WS);
    assert!(skipped.contains("not judged (--no-rows)"), "{skipped}");
    // Seed 003's runs all set the clock and the fitted per-frame cost: a what-if that leaves
    // one out is told so; one it sets is not named again.
    let text = ok(&[
        "sim",
        "seed003/flood",
        "--samples",
        "200",
        "--uncertainty",
        "2",
        "--set",
        "kernel.net.rx_packet=1350",
    ]);
    assert!(
        text.contains("sets --set platform.cpu.clock_hz=800e6, which this run does not"),
        "{text}"
    );
}

#[test]
fn the_text_format() {
    let out = ok(&[
        "sim",
        "seed000/soc",
        "--samples",
        "200",
        "--uncertainty",
        "6",
        "--set",
        "delivery=xtpic",
        // The rows' verdicts move with the model; their sentences are checked above.
        "--no-rows",
    ]);
    insta::assert_snapshot!("whatif_soc_xtpic", out);
}

/// `sweep plan --scenario S --draws N`, its shards run apart and merged: the report
/// `sim S --uncertainty N` prints and writes, bit for bit, with `--set`, `--seed` and the rows.
#[test]
fn a_swept_what_if_merges_into_what_sim_prints() {
    let d = tmp("sweep");
    let dir = d.to_str().unwrap();
    let at = |name: &str| d.join(name).to_str().unwrap().to_string();
    let common = [
        "--samples",
        "300",
        "--set",
        "delivery=ioapic",
        "--seed",
        "5",
        "--draw-seed",
        "3",
    ];
    let mut sim: Vec<&str> = vec!["sim", "seed000/ws", "--uncertainty", "5"];
    sim.extend(common);
    let sim_json = at("sim.json");
    sim.extend(["--json", &sim_json]);
    let printed = ok(&sim);
    let manifest = at("m.json");
    let mut plan: Vec<&str> = vec![
        "sweep",
        "plan",
        "--scenario",
        "seed000/ws",
        "--draws",
        "5",
        "--out",
        &manifest,
    ];
    plan.extend(common);
    let planned = ok(&plan);
    assert!(planned.starts_with("7 points: 5 draws"), "{planned}");
    let results = format!("{dir}/results");
    // Three shards, the last run twice (a point found twice with one result counts once).
    for shard in ["0", "1", "2", "2"] {
        ok(&[
            "sweep", "run", &manifest, "--shard", shard, "--of", "3", "--out", &results,
        ]);
    }
    let merged_json = at("merged.json");
    let merged = ok(&[
        "sweep",
        "merge",
        &manifest,
        &results,
        "--json",
        &merged_json,
    ]);
    assert_eq!(merged, printed);
    let read = |p: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (a, b) = (read(&sim_json), read(&merged_json));
    assert_eq!(a["kind"], b["kind"]);
    assert_eq!(a["result"], b["result"]);
    assert!(a["result"]["rows"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
    // A missing shard is named, as for any sweep.
    std::fs::remove_file(format!("{results}/shard-1-of-3.json")).unwrap();
    let out = run(&["sweep", "merge", &manifest, &results]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--shard 1 --of 3"));
}

#[test]
fn a_what_if_sweep_refuses_what_only_validation_draws_take() {
    for extra in [
        &["--only", "msi-*"][..],
        &["--full"][..],
        &["--grid", "delivery=msi,ioapic"][..],
        &["--repeat", "2"][..],
    ] {
        let mut a = vec![
            "sweep",
            "plan",
            "--scenario",
            "seed000/ws",
            "--draws",
            "4",
            "--out",
            "/tmp/never-written.json",
        ];
        a.extend(extra);
        let out = run(&a);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(extra[0]),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `--against`: "how much does a switch add" as a difference with its band, each draw run on
/// both sides with the same values and seed.
#[test]
fn a_what_if_against_a_baseline_gives_the_difference_with_its_band() {
    let d = tmp("against");
    let base: &[&str] = &[
        "sim",
        "seed002/fpga",
        "--samples",
        "2000",
        "--uncertainty",
        "4",
        "--no-rows",
        "--set",
        "device.0.switches=1",
    ];
    let mut a = base.to_vec();
    a.extend(["--against", "device.0.switches=0"]);
    let r = json(&a, &d, "switch.json");
    assert_eq!(r["against"], serde_json::json!(["device.0.switches=0"]));
    let q = r["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "round_trip mean")
        .unwrap();
    // A switch's hop each way: the round trip is longer in the plain run and in every draw.
    assert!(q["nominal"].as_f64().unwrap() > 50.0, "{q}");
    assert!(q["band"]["p1"].as_f64().unwrap() > 50.0, "{q}");
    let text = ok(&a);
    assert!(
        text.contains("Against --set device.0.switches=0: the what-if's run less this baseline's"),
        "{text}"
    );
    // The baseline the same as the what-if: no difference anywhere.
    let mut same = base.to_vec();
    same.extend(["--against", "device.0.switches=1"]);
    let r = json(&same, &d, "same.json");
    for q in r["differences"].as_array().unwrap() {
        assert_eq!(q["unit"], "ns", "a counter that differs: {q}");
        assert_eq!(q["nominal"].as_f64(), Some(0.0), "{q}");
        assert_eq!(q["band"]["p1"].as_f64(), Some(0.0), "{q}");
        assert_eq!(q["band"]["p99"].as_f64(), Some(0.0), "{q}");
    }
    let out = run(&["sim", "seed002/fpga", "--against", "device.0.switches=0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--uncertainty"));
}
