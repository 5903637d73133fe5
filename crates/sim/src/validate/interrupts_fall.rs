//! `kind = "interrupts_fall"` in an experiment's `[[check]]`: see [`InterruptsFall`].

use super::prelude::*;

/// Seed 003's "IRQs" columns, compared step by step: over runs in the order of a rising
/// packet rate, each NIC's interrupt rate from one run to the next (its ratio) within
/// `step_factor` of the published count's ratio in that NIC's column (DESIGN.md rule 5: a
/// flat step where the table falls is a fail). The published counts are one run each of
/// the same length, so their ratio is a ratio of rates; the model's are rates over its runs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptsFall {
    pub id: String,
    pub runs: Vec<String>,
    /// NIC name -> its published count in each run, in `runs`' order.
    pub published: BTreeMap<String, Vec<f64>>,
    pub step_factor: f64,
    pub published_text: String,
    pub source: String,
}

impl RowKind for InterruptsFall {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        let InterruptsFall {
            runs,
            published,
            step_factor,
            ..
        } = self;
        (published.is_empty()
            || runs.len() < 2
            || published
                .values()
                .any(|v| v.len() != runs.len() || v.iter().any(|&x| x <= 0.0))
            || step_factor.partial_cmp(&1.0) != Some(std::cmp::Ordering::Greater))
        .then_some(
            "an interrupts_fall row gives two or more runs, one published count (> 0) per \
             run for each NIC (`published = { eth0 = [...] }`) and a step_factor > 1",
        )
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
        let InterruptsFall {
            id,
            runs: names,
            published,
            step_factor,
            published_text,
            source,
        } = self;
        let mut row = exp.row(
            id,
            format!("interrupts per NIC over {}", names.join(", ")),
            source,
        );
        row.published_text = published_text.clone();
        row.tolerance = format!("each step's ratio within x{step_factor}");
        let ratios =
            |v: &[f64]| -> Vec<f64> { v.windows(2).map(|w| w[1] / w[0]).collect() };
        let show = |v: &[f64]| -> String {
            v.iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut ok = true;
        let (mut sim_text, mut pub_text, mut detail) = (vec![], vec![], vec![]);
        for (nic, counts) in published {
            // The model's rates (interrupts per simulated second), so that runs of
            // different lengths compare.
            let rates: Vec<f64> = names
                .iter()
                .map(|n| {
                    let r = &runs[n];
                    let get = |name: &str| {
                        r.counters
                            .iter()
                            .find(|c| c.name == name)
                            .map_or(0, |c| c.value)
                    };
                    let us = get("simulated_time_us").max(1) as f64;
                    get(&format!("{nic}_interrupts")) as f64 / (us * 1e-6)
                })
                .collect();
            let (sim, publ) = (ratios(&rates), ratios(counts));
            let mut off = Vec::new();
            for (k, (s, p)) in sim.iter().zip(&publ).enumerate() {
                let inside =
                    s.is_finite() && *s >= p / step_factor && *s <= p * step_factor;
                if !inside {
                    ok = false;
                    off.push(format!(
                        "{} -> {}: {s:.2} against {p:.2}",
                        names[k],
                        names[k + 1]
                    ));
                }
            }
            sim_text.push(format!("{nic} {}", show(&sim)));
            pub_text.push(format!("{nic} {}", show(&publ)));
            detail.push(format!(
                "{nic}: interrupts/s {} (steps {}; published counts {}, steps {}){}",
                rates
                    .iter()
                    .map(|r| thousands(r.round() as u64))
                    .collect::<Vec<_>>()
                    .join(", "),
                show(&sim),
                counts
                    .iter()
                    .map(|c| thousands(c.round() as u64))
                    .collect::<Vec<_>>()
                    .join(", "),
                show(&publ),
                if off.is_empty() {
                    String::new()
                } else {
                    format!("; outside x{step_factor}: {}", off.join(", "))
                }
            ));
        }
        row.simulated = format!("steps {}", sim_text.join("; "));
        row.published = format!("steps {}", pub_text.join("; "));
        set_holds(&mut row, ok);
        row.detail = detail.join("; ");
        row
    }
}
