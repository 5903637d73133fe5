//! `kind = "trace_sequence"` in an experiment's `[[check]]`: see [`TraceSequence`].

use super::prelude::*;
use crate::report::trace_rows;

/// For each sequence: the analyzer's packets for one interrupt of `run`, from the interrupt
/// packet on, match `expected` ("TYPE" or "TYPE ADDRESS", an address ending in `*` matching
/// a prefix).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSequence {
    pub id: String,
    pub sequences: Vec<ExpectedTrace>,
    pub source: String,
}

impl RowKind for TraceSequence {
    fn id(&self) -> &str {
        &self.id
    }
    fn runs(&self) -> Vec<&str> {
        self.sequences.iter().map(|s| s.run.as_str()).collect()
    }
    fn judged(&self) -> Judged {
        Judged::Share {
            pass_share: SHAPE_PASS_SHARE,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let TraceSequence {
            id,
            sequences,
            source,
        } = self;
        let mut ok = true;
        let mut notes = Vec::new();
        for seq in sequences {
            let got = interrupt_sequence(&runs[&seq.run], seq.expected.len());
            let same = got.len() == seq.expected.len()
                && got
                    .iter()
                    .zip(&seq.expected)
                    .all(|(g, e)| packet_matches(g, e));
            ok &= same;
            notes.push(format!(
                "{}: expected [{}], simulated [{}]",
                seq.run,
                seq.expected.join(", "),
                got.join(", ")
            ));
        }
        let runs: Vec<&str> = sequences.iter().map(|s| s.run.as_str()).collect();
        let mut row = exp.row(
            id,
            format!("analyzer packets of one interrupt: {}", runs.join(", ")),
            source,
        );
        let lens: Vec<String> = sequences
            .iter()
            .map(|s| s.expected.len().to_string())
            .collect();
        row.published = format!("{} in order", lens.join(" and "));
        row.published_text = "packets of Figure 7".into();
        row.simulated = if ok { "same order" } else { "different order" }.into();
        row.tolerance = "exact".into();
        set_holds(&mut row, ok);
        row.detail = notes.join("; ");
        row
    }
}

/// One expected analyzer sequence.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedTrace {
    pub run: String,
    pub expected: Vec<String>,
}

/// "TYPE ADDRESS" strings of the packets from the first interrupt packet on.
fn interrupt_sequence(r: &RunResult, n: usize) -> Vec<String> {
    let rows = trace_rows(&r.trace);
    let start = rows.iter().position(|row| {
        row.direction == "up"
            && (row.tlp_type.starts_with("Msg Assert")
                || (row.tlp_type.starts_with("MWr")
                    && row.address.is_some_and(|a| a >> 20 == 0xFEE)))
    });
    let Some(start) = start else { return vec![] };
    rows[start..]
        .iter()
        .take(n)
        .map(|row| match row.address {
            Some(a) => format!("{} {a:08X}", row.tlp_type),
            None => row.tlp_type.clone(),
        })
        .collect()
}

fn packet_matches(got: &str, expected: &str) -> bool {
    match expected.strip_suffix('*') {
        Some(prefix) => got.starts_with(prefix),
        None => got == expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_patterns() {
        assert!(packet_matches("MWr(32) FEE00000", "MWr(32) FEE*"));
        assert!(!packet_matches("MWr(32) F9000040", "MWr(32) FEE*"));
        assert!(packet_matches("CplD", "CplD"));
    }
}
