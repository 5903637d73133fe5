//! Shared by the test files: running a seed's rows, the known-gaps ratchet, the workstation
//! scenario to extend. (Each test file compiles this module and uses part of it.)
#![allow(dead_code)]

use irqlab_sim::experiment::{validate_dir, ValidateOptions};
use irqlab_stats::results::{ValidationReport, Verdict};
use std::path::Path;

/// `irqlab validate --only PATTERN` over the repository's experiments (`--samples` if given);
/// the rows must come out as `rows`, docs/validation.md's, in order.
pub fn validate_rows(pattern: &str, samples: Option<u64>, rows: &[&str]) -> ValidationReport {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let report = validate_dir(
        &dir,
        &ValidateOptions {
            only: Some(pattern.into()),
            samples,
            ..Default::default()
        },
    )
    .expect("experiments load and run");
    let ids: Vec<&str> = report.rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids, rows,
        "the rows of docs/validation.md for {pattern}, in order"
    );
    report
}

/// Every row must be filled in and pass, except those in `known_gaps` (id, the verdict it has,
/// what is missing), which must have exactly that verdict (fail, or undecided on the samples
/// the test runs): a listed row whose verdict changes, say one that starts to pass, fails the
/// test until the list is updated, so every flip shows in the commit that caused it.
pub fn check_rows(report: &ValidationReport, known_gaps: &[(&str, Verdict, &str)]) {
    let mut problems = Vec::new();
    for row in &report.rows {
        assert!(!row.published.is_empty() && !row.simulated.is_empty() && !row.source.is_empty());
        let gap = known_gaps.iter().find(|(id, _, _)| *id == row.id);
        match gap {
            None if row.verdict == Verdict::Pass => {}
            None => problems.push(format!(
                "{} does not pass ({:?}): {}",
                row.id, row.verdict, row.detail
            )),
            Some((_, expected, why)) if *expected == row.verdict => {
                println!(
                    "known gap {} ({:?}): {} ({why})",
                    row.id, row.verdict, row.detail
                )
            }
            Some((_, expected, _)) => problems.push(format!(
                "{} is now {:?}, listed as {expected:?}: update KNOWN_GAPS ({})",
                row.id, row.verdict, row.detail
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The workstation scenario's text with its platform and kernel paths made absolute, to be
/// extended and written to a temporary directory.
pub fn ws_text_with_absolute_paths() -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let abs = |rel: &str| format!("{:?}", repo.join("experiments/seed000").join(rel));
    std::fs::read_to_string(repo.join("experiments/seed000/ws.toml"))
        .unwrap()
        .replace(
            "\"../../platforms/ws-2008-core2-ich9.toml\"",
            &abs("../../platforms/ws-2008-core2-ich9.toml"),
        )
        .replace(
            "\"../../kernels/linux-2.6.18-i386-up.toml\"",
            &abs("../../kernels/linux-2.6.18-i386-up.toml"),
        )
}

/// The scenario's `[[device]]` table, without the `[range.device.0]` table of its ranges that
/// follows it: a copy is a second device, and the ranges stay the first's.
pub fn device_table(text: &str) -> &str {
    let start = text.find("[[device]]").expect("a device table");
    let end = text[start..]
        .find("[range.")
        .map_or(text.len(), |i| start + i);
    &text[start..end]
}
