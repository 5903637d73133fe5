//! Shared by the validation tests: the known-gaps ratchet.

use irqlab_stats::results::{ValidationReport, Verdict};

/// Every row must be filled in and pass, except those in `known_gaps` (id, what is missing),
/// which must fail: a listed row that starts to pass fails the test until it is taken off the
/// list, so the list only shrinks.
pub fn check_rows(report: &ValidationReport, known_gaps: &[(&str, &str)]) {
    let mut problems = Vec::new();
    for row in &report.rows {
        assert!(!row.published.is_empty() && !row.simulated.is_empty() && !row.source.is_empty());
        let gap = known_gaps.iter().find(|(id, _)| *id == row.id);
        match (row.verdict, gap) {
            (Verdict::Pass, None) => {}
            (Verdict::Fail, Some((_, why))) => {
                println!("known gap {}: {} ({why})", row.id, row.detail)
            }
            (Verdict::Fail, None) => problems.push(format!("{} fails: {}", row.id, row.detail)),
            (Verdict::Pass, Some(_)) => problems.push(format!(
                "{} now passes: take it off KNOWN_GAPS ({})",
                row.id, row.detail
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
