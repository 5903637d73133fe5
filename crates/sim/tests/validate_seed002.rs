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
        "the median round trip is 1.96 us, just under the published 2.0-2.5 us: the core's clock \
         is taken at its 3.7 GHz base, and HWP's choice for a lightly loaded core is not known \
         (at 2.0 GHz the median is 2.17 us)",
    ),
    (
        "fpga-tail",
        // Decided by the full run (9 of 256M, a rate of 3.5e-8 with an interval below 1e-7);
        // the test's 400k samples are too few to show any rate below 9.2e-6.
        Verdict::Undecided,
        "too few round trips exceed 5 us (9 in the full 256M run, 3.5e-8): the tick (2.35 us, \
         sized from traced local-timer durations) or a PCH device's interrupt (~2.5 us) \
         colliding with a round trip adds at most ~2.5 us to 1.96 us; the post's 7 us needs a \
         longer interrupts-off stretch than the model knows",
    ),
    (
        "fpga-extreme",
        Verdict::Undecided,
        "no round trip reaches 10 us, in 400k nor in the full 256M: the rate's interval then \
         reaches from 0 across the lower end of the window the post's 2 in 256M give (0.24-7.2 \
         counts); the tick or PCH device colliding with a round trip adds at most ~2.5 us, and \
         the longer interrupts-off stretch the post's tail needs is not modelled",
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
