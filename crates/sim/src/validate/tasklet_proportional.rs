//! `kind = "tasklet_proportional"` in an experiment's `[[check]]`: see [`TaskletProportional`].

use super::prelude::*;

/// For each group (baseline first): every run's tasklet latency exceeds its ISR latency, and
/// each run's tasklet ratio to the baseline is within `tolerance_rel` of its ISR ratio.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskletProportional {
    pub id: String,
    pub groups: Vec<Vec<String>>,
    pub tolerance_rel: f64,
    pub published_text: String,
    pub source: String,
}

impl RowKind for TaskletProportional {
    fn id(&self) -> &str {
        &self.id
    }
    fn runs(&self) -> Vec<&str> {
        self.groups.iter().flatten().map(String::as_str).collect()
    }
    fn judged(&self) -> Judged {
        Judged::Share {
            pass_share: SHAPE_PASS_SHARE,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let mean = |r: &str, m: LatencyMetric| m.of(&runs[r]).mean_ns().unwrap_or(f64::NAN);
        let TaskletProportional {
            id,
            groups,
            tolerance_rel,
            published_text,
            source,
        } = self;
        let mut ok = true;
        let mut notes = Vec::new();
        for g in groups {
            let base = &g[0];
            for r in g {
                let (i, t) = (
                    mean(r, LatencyMetric::IsrLatency),
                    mean(r, LatencyMetric::TaskletLatency),
                );
                if t.partial_cmp(&i) != Some(std::cmp::Ordering::Greater) {
                    ok = false;
                    notes
                        .push(format!("{r}: tasklet {t:.0} ns is not above ISR {i:.0} ns"));
                }
                if r != base {
                    let ri = i / mean(base, LatencyMetric::IsrLatency);
                    let rt = t / mean(base, LatencyMetric::TaskletLatency);
                    let dev = rt / ri - 1.0;
                    if dev.abs() > *tolerance_rel {
                        ok = false;
                    }
                    notes.push(format!(
                        "{r}/{base}: ISR {ri:.2}x, tasklet {rt:.2}x ({:+.0}%)",
                        dev * 100.0
                    ));
                }
            }
        }
        let mut row = exp.row(
            id,
            "tasklet latency > ISR latency; tasklet ratios track ISR ratios".into(),
            source,
        );
        row.published = "holds".into();
        row.published_text = published_text.clone();
        row.simulated = if ok { "holds" } else { "does not hold" }.into();
        row.tolerance = format!("ratios ±{:.0}%", tolerance_rel * 100.0);
        set_holds(&mut row, ok);
        row.detail = notes.join("; ");
        row
    }
}
