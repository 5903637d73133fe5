//! `irqlab validate`'s seed-000 rows, run in `cargo test` at the published sample counts.
//!
//! Every row must pass, except the rows listed in `KNOWN_GAPS`: rows the model does not yet
//! reproduce, each with what is missing. The list is a ratchet: a listed row that starts to pass
//! fails this test until it is taken off the list, so the list only shrinks.

mod common;

use irqlab_stats::results::Verdict;

/// Rows the model does not reproduce yet, and why (see the README's "Validation" section).
const KNOWN_GAPS: &[(&str, Verdict, &str)] = &[
    (
        "msi-ws-xtpic",
        Verdict::Fail,
        "XT-PIC/MSI is ~18% high on the workstation: with ~1 us per ICH port I/O (Linux tsc.c) \
         the five 8259 accesses and the INTA cycle cost more than the seed's 6.8x allows; the \
         board's line sharing and idle-exit time are unknown",
    ),
    (
        "msi-soc-ioapic",
        Verdict::Fail,
        "IO-APIC/MSI is ~26% low on the SoC: the model has no IO-APIC-only cost beyond the DMI \
         detour and the status read; a shared line (one more status read) would close it, but \
         which devices shared the EP80579's line is not documented",
    ),
    (
        "msi-soc-xtpic",
        Verdict::Fail,
        "XT-PIC/MSI is ~3% below the seed's 'just over 6x' (6.0-6.6x) on the SoC: the row passed \
         while it was read as 6.2x ±10%; one window per row (the seed's words) now judges it. \
         The same missing IO-APIC-only and shared-line costs as msi-soc-ioapic",
    ),
];

const ROWS: [&str; 6] = [
    "msi-ws-ioapic",
    "msi-ws-xtpic",
    "msi-soc-ioapic",
    "msi-soc-xtpic",
    "msi-tasklet",
    "msi-trace",
];

#[test]
fn seed000_rows() {
    let report = common::validate_rows("msi-*", None, &ROWS);
    common::check_rows(&report, KNOWN_GAPS);
}
