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
