//! `irqlab validate`'s seed-002 rows, run in `cargo test` on a shortened run (the published
//! 256M samples take `irqlab validate --full`).
//!
//! As for seed 000, every row must pass except those in `KNOWN_GAPS`, and a listed row that
//! starts to pass fails this test until it is taken off the list.

mod common;

use irqlab_stats::results::Verdict;

/// Rows the model does not reproduce yet, and why (see the README's "Validation" section).
const KNOWN_GAPS: &[(&str, Verdict, &str)] = &[
    (
        "fpga-median",
        Verdict::Fail,
        "the nominal median round trip is 1.96 us, just under the published 2.0-2.5 us; over the \
         ranges of C1's exit time and HWP's clock (validate --uncertainty) its band is about \
         1.7-2.6 us and the row passes there: the nominal point sits low in it",
    ),
    (
        "fpga-extreme",
        Verdict::Undecided,
        "a rate of ~1e-8 (2 in 256M) is beyond the test's 400k round trips, and the Poisson \
         interval of a full 256M run still reaches across the window's ends unless the rate is \
         far off",
    ),
];

const ROWS: [&str; 3] = ["fpga-median", "fpga-tail", "fpga-extreme"];

#[test]
fn seed002_rows() {
    let report = common::validate_rows("fpga-*", Some(400_000), &ROWS);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("400,000 of the published 256,000,000")),
        "a shortened run says so: {:?}",
        report.notes
    );
    common::check_rows(&report, KNOWN_GAPS);
}
