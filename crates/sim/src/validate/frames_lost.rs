//! `kind = "frames_lost"` in an experiment's `[[check]]`: see [`FramesLost`].

use super::prelude::*;

/// Seed 003's "Lost Frames (%)" over a table's runs (every NIC together): none where the
/// table has 0.00, within a factor of two of the table's share elsewhere.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FramesLost {
    pub id: String,
    pub runs: Vec<String>,
    pub published_percent: Vec<f64>,
    pub published_text: String,
    pub source: String,
}

impl RowKind for FramesLost {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        (self.runs.len() != self.published_percent.len())
            .then_some("a frames_lost row gives one `published_percent` per run")
    }
    fn runs(&self) -> Vec<&str> {
        self.runs.iter().map(String::as_str).collect()
    }
    fn judged(&self) -> Judged {
        Judged::Share {
            pass_share: SHAPE_PASS_SHARE,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let FramesLost {
            id,
            runs: names,
            published_percent,
            published_text,
            source,
        } = self;
        let mut row = exp.row(id, format!("lost frames of {}", names.join(", ")), source);
        row.published_text = published_text.clone();
        row.published = published_percent
            .iter()
            .map(|p| format!("{p:.2}%"))
            .collect::<Vec<_>>()
            .join(" ");
        row.tolerance = "0 where 0, else x2".into();
        let mut ok = true;
        let mut seen = Vec::new();
        for (name, &published) in names.iter().zip(published_percent) {
            let (frames, lost) = (
                nic_sum(&runs[name], "_frames"),
                // What the generator would miss: frames dropped on arrival, and
                // frames routed to a port whose transmit ring was full.
                nic_sum(&runs[name], "_frames_lost")
                    + nic_sum(&runs[name], "_frames_tx_dropped"),
            );
            let got = 100.0 * lost as f64 / frames.max(1) as f64;
            ok &= if published == 0.0 {
                lost == 0
            } else {
                got >= published / 2.0 && got <= published * 2.0
            };
            seen.push(format!("{got:.2}%"));
        }
        row.simulated = seen.join(" ");
        set_holds(&mut row, ok);
        row.detail = format!("runs {}", names.join(", "));
        row
    }
}
