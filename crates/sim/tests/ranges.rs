//! Every value a shipped file marks as an ESTIMATE has a range beside it, or says why it is not
//! drawn (DESIGN.md, "How a row is judged", 1): an estimate without a range would sit at its
//! point value in every draw of `validate --uncertainty`, and its rows would look surer than
//! they are.
//!
//! A value is marked when the comment lines right above it, or its own line's comment, say
//! ESTIMATE. Only numbers are checked, with those of inline tables (`rates = { ncr0 = 10.0 }`,
//! keyed `rates.ncr0`) and of the inline tables of a list, one per line (seed 004's `section =
//! [ ... ]`, keyed `section.0.mean_us`; marked by the list's own marks or the element's line): a
//! string or a list of bare numbers (a routing table, a part number) is a configuration, drawn
//! by no range.

use irqlab_sim::scenario::ranges::declared;
use std::path::Path;

/// The files whose ranges are declared: every shipped platform, kernel and scenario.
const CHECKED: &[&str] = &[
    "platforms/ws-2008-core2-ich9.toml",
    "platforms/soc-2008-ep80579.toml",
    "kernels/linux-2.6.18-i386-up.toml",
    "experiments/seed000/ws.toml",
    "experiments/seed000/soc.toml",
    "platforms/desktop-2017-i7-8700k-z370.toml",
    "kernels/linux-6.4-x86_64-smp.toml",
    "experiments/seed002/fpga.toml",
    "platforms/pc-1998-k6-233-tx97.toml",
    "kernels/freebsd-1998-07-i386.toml",
    "experiments/seed004/pps.toml",
    "kernels/linux-2.6.29-i386-up.toml",
    "experiments/seed003/idle.toml",
    "experiments/seed003/flood.toml",
    "platforms/server-2006-bensley-5000p.toml",
    "kernels/linux-2.4.21-i386-smp.toml",
    "experiments/seed001/forward.toml",
];

/// The value of `v = text` when it parses alone.
fn value_of(text: &str) -> Option<toml::Value> {
    toml::from_str::<toml::Table>(&format!("v = {}", text.trim()))
        .ok()
        .and_then(|mut t| t.remove("v"))
}

/// The dotted keys of the numbers in `v` under `key`: a number itself, or the numbers of an
/// inline table (tables nested in it too); a list's are not looked into.
fn numbers(key: &str, v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::Integer(_) | toml::Value::Float(_) => out.push(key.to_string()),
        toml::Value::Table(t) => {
            for (k, child) in t {
                numbers(&format!("{key}.{k}"), child, out);
            }
        }
        _ => {}
    }
}

/// The dotted keys of the numbers `text` marks as estimates (list elements of `[[x]]` tables by
/// their index), outside the `[range.*]` tables.
fn estimated_numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut table = String::new();
    let mut in_range = false;
    let mut arrays: std::collections::BTreeMap<String, usize> = Default::default();
    let mut marked = false;
    // Inside a list of inline tables, one per line: its key, whether it is marked, the index of
    // its next element.
    let mut list: Option<(String, bool, usize)> = None;
    for line in text.lines() {
        let l = line.trim();
        if let Some((key, list_marked, i)) = &mut list {
            if l.starts_with(']') {
                list = None;
                continue;
            }
            let (element, comment) = l.split_once('#').unwrap_or((l, ""));
            let element = element.trim().trim_end_matches(',');
            if element.starts_with('{') {
                if let (false, Some(v)) = (in_range, value_of(element)) {
                    if *list_marked || comment.contains("ESTIMATE") {
                        numbers(&format!("{key}.{i}"), &v, &mut out);
                    }
                }
                *i += 1;
            }
            continue;
        }
        if let Some(comment) = l.strip_prefix('#') {
            marked |= comment.contains("ESTIMATE");
            continue;
        }
        if l.is_empty() {
            marked = false;
            continue;
        }
        if let Some(name) = l.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")) {
            let i = arrays
                .entry(name.to_string())
                .and_modify(|i| *i += 1)
                .or_insert(0);
            table = format!("{name}.{i}");
            in_range = false;
            marked = false;
            continue;
        }
        if let Some(name) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            in_range = name == "range" || name.starts_with("range.");
            // A table inside the last element of an array of tables (`[device.nic]` after the
            // second `[[device]]`: `device.1.nic`).
            let within = arrays
                .iter()
                .find_map(|(a, i)| Some((a, i, name.strip_prefix(a.as_str())?.strip_prefix('.')?)));
            table = match within {
                Some((a, i, rest)) => format!("{a}.{i}.{rest}"),
                None => name.to_string(),
            };
            marked = false;
            continue;
        }
        let Some((key, rest)) = l.split_once('=') else {
            continue;
        };
        let (value, comment) = rest.split_once('#').unwrap_or((rest, ""));
        let key = key.trim();
        let key = if table.is_empty() {
            key.to_string()
        } else {
            format!("{table}.{key}")
        };
        let is_marked = marked || comment.contains("ESTIMATE");
        if value.trim() == "[" {
            list = Some((key, is_marked, 0));
        } else if let (false, true, Some(v)) = (in_range, is_marked, value_of(value)) {
            numbers(&key, &v, &mut out);
        }
        marked = false;
    }
    out
}

#[test]
fn every_estimate_in_the_checked_files_has_a_range() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut missing = Vec::new();
    let mut counted = 0;
    for rel in CHECKED {
        let path = root.join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let ranges: Vec<String> = declared(&path, &text, "")
            .unwrap_or_else(|e| panic!("{rel}: {e}"))
            .into_iter()
            .map(|d| d.key)
            .collect();
        for key in estimated_numbers(&text) {
            counted += 1;
            if !ranges.contains(&key) {
                missing.push(format!("{rel}: {key}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "estimates without a range (add [range.*] beside them, or {{ fixed = \"why\" }}):\n{}",
        missing.join("\n")
    );
    // The reading of the marks works: the workstation's halt exit and the kernel's counts are
    // among them.
    assert!(counted > 30, "only {counted} estimates found");
}

#[test]
fn the_mark_reader_finds_marked_numbers_only() {
    let text = "top = 1 # ESTIMATE\n[cpu]\n# an ESTIMATE\nx = 2.0\ny = 3.0\nname = \"a\" # ESTIMATE\n\
                pins = [1, 2] # ESTIMATE\n\
                [[device]]\n[[device]]\n# ESTIMATE\nz = 4\n[range.cpu]\n# ESTIMATE\nx = { fixed = \"w\" }\n";
    assert_eq!(estimated_numbers(text), ["top", "cpu.x", "device.1.z"]);
}

#[test]
fn the_mark_reader_looks_into_inline_tables_and_their_lists() {
    let text = "[[phase]]\nrates = { a = 1.0, b = 2 }  # ESTIMATE\nplain = { c = 3.0 }\n\
                # ESTIMATE: all of them\nsection = [\n  { mask = \"tty\", n = 1.0 },\n  { m = 2.0 },  # why\n]\n\
                other = [\n  { p = 1.0 },\n  { q = 2.0 },   # ESTIMATE\n]\n";
    assert_eq!(
        estimated_numbers(text),
        [
            "phase.0.rates.a",
            "phase.0.rates.b",
            "phase.0.section.0.n",
            "phase.0.section.1.m",
            "phase.0.other.1.q"
        ]
    );
}

/// Rule 4 kept by code: no shipped value lies outside the sourced range its file declares,
/// neither a file's own value (checked when the file loads), nor one a scenario's `set` gives
/// (every scenario `irqlab sim` runs by name), nor one an experiment's run sets (checked when an
/// experiment loads: `Experiment::load_dir` fails on any).
#[test]
fn no_shipped_value_lies_outside_its_range() {
    for (name, path) in irqlab_sim::shipped::scenarios() {
        let sim = irqlab_sim::scenario::Scenario::load(&path, &[]).unwrap();
        let outside = sim.outside_ranges().unwrap();
        assert!(outside.is_empty(), "{name}: {outside:?}");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    irqlab_sim::experiment::Experiment::load_dir(root.join("experiments")).unwrap();
}

/// An experiment file in a temporary directory whose run uses the shipped seed-001 scenario.
fn experiment(body: &str) -> Result<irqlab_sim::experiment::Experiment, String> {
    experiment_file(body, "")
}

/// As [`experiment`], with the run setting `set`.
fn experiment_with_set(set: &str) -> Result<irqlab_sim::experiment::Experiment, String> {
    experiment_file("", &format!("set = [{set:?}]"))
}

fn experiment_file(
    body: &str,
    run_set: &str,
) -> Result<irqlab_sim::experiment::Experiment, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = root.join("experiments/seed001/forward.toml");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.toml");
    std::fs::write(
        &path,
        format!(
            "id = \"e\"\ntitle = \"t\"\nseed_document = \"d\"\n{body}\n\
             [[run]]\nid = \"r\"\nscenario = {:?}\n{run_set}\n\
             [[check]]\nkind = \"throughput\"\nid = \"row\"\nrun = \"r\"\npublished_pps = 1e6\n\
             tolerance_rel = 0.1\npublished_text = \"t\"\nsource = \"s\"\n",
            scenario.display().to_string()
        ),
    )
    .unwrap();
    irqlab_sim::experiment::Experiment::load(&path).map_err(|e| e.to_string())
}

#[test]
fn a_run_value_outside_its_range_is_refused_when_the_experiment_loads() {
    // The audit's case: seed 001's free parameter set 4x above its sourced range.
    let err = experiment_with_set("kernel.net.forward=2000")
        .err()
        .expect("refused");
    assert!(err.contains("outside the range 300..515"), "{err}");
    assert!(err.contains("run r"), "{err}");
    assert!(experiment_with_set("kernel.net.forward=515").is_ok());
}

#[test]
fn a_calibration_searches_only_the_declared_range_that_names_its_row() {
    // The kernel declares forward's range with inferred_from = [swizzle-pps-swz-8port]: a
    // calibration on another row is refused, and bounds of the calibration's own are unknown.
    let err = experiment(
        "[calibration]\nparameter = \"kernel.net.forward\"\nrow = \"row\"\nstep = 5.0\n",
    )
    .err()
    .expect("refused");
    assert!(err.contains("inferred_from = [\"row\"]"), "{err}");
    let err = experiment(
        "[calibration]\nparameter = \"kernel.net.forward\"\nrow = \"row\"\nstep = 5.0\n\
         low = 300.0\nhigh = 12000.0\n",
    )
    .err()
    .expect("refused");
    assert!(err.contains("unknown field `low`"), "{err}");
    // An estimate with a range but no inferred_from is not a free parameter.
    let err =
        experiment("[calibration]\nparameter = \"kernel.net.xmit\"\nrow = \"row\"\nstep = 5.0\n")
            .err()
            .expect("refused");
    assert!(err.contains("needs a drawn range"), "{err}");
}

#[test]
fn an_inferred_value_names_its_rows_and_a_run_that_sets_it() {
    let err = experiment(
        "[[inferred]]\nkey = \"kernel.net.forward\"\ninferred_from = [\"row\"]\nbasis = \"b\"\n",
    )
    .err()
    .expect("refused");
    assert!(err.contains("no [[run]] sets it"), "{err}");
    let err = experiment(
        "[[inferred]]\nkey = \"kernel.net.forward\"\ninferred_from = [\"nope\"]\nbasis = \"b\"\n",
    )
    .err()
    .expect("refused");
    assert!(err.contains("names row 'nope'"), "{err}");
}

/// Every shipped row a value was chosen from is known as calibration, and the shipped
/// `[[inferred]]` and `inferred_from` labels name rows that exist.
#[test]
fn shipped_calibration_rows_are_labelled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let all = irqlab_sim::experiment::Experiment::load_dir(root.join("experiments")).unwrap();
    let rows: Vec<(&str, &Vec<String>)> = all
        .iter()
        .flat_map(|e| e.calibrations.iter().map(|(r, k)| (r.as_str(), k)))
        .collect();
    let find = |id: &str| {
        rows.iter()
            .find(|(r, _)| *r == id)
            .map(|(_, k)| (*k).clone())
    };
    assert_eq!(
        find("swizzle-pps-swz-8port"),
        Some(vec!["kernel.net.forward".to_string()])
    );
    assert!(find("rt-rt-hi-lost")
        .unwrap()
        .contains(&"kernel.net.rx_packet".to_string()));
    let thr = find("rt-thr-hi-serve").unwrap();
    assert!(
        thr.contains(&"kernel.sched.preemption".to_string()),
        "{thr:?}"
    );
    assert!(
        thr.contains(&"kernel.threads.hrtimer_wakeup".to_string()),
        "{thr:?}"
    );
}
