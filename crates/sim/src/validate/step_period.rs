//! `kind = "step_period"` in an experiment's `[[check]]`: see [`StepPeriod`].

use super::prelude::*;

/// The bus-clock quantum of one run's sample histogram (the width of its flat-topped
/// boxes between "fence posts", seed 004) against a published bus clock; searched between
/// `search_min_ns` and `search_max_ns` ([`irqlab_stats::boxwidth`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepPeriod {
    pub id: String,
    pub run: String,
    pub published_ns: f64,
    pub tolerance_rel: f64,
    pub search_min_ns: f64,
    pub search_max_ns: f64,
    /// `validate --uncertainty`: the share of draws (each its own seed) that must fall
    /// within the tolerance. Absent: 0.9, as every shape row.
    #[serde(default)]
    pub pass_share: Option<f64>,
    pub published_text: String,
    pub source: String,
}

impl RowKind for StepPeriod {
    fn id(&self) -> &str {
        &self.id
    }
    fn runs(&self) -> Vec<&str> {
        vec![self.run.as_str()]
    }
    fn judged(&self) -> Judged {
        Judged::Share {
            pass_share: self.pass_share.unwrap_or(SHAPE_PASS_SHARE),
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let StepPeriod {
            id,
            run,
            published_ns,
            tolerance_rel,
            search_min_ns,
            search_max_ns,
            published_text,
            source,
            ..
        } = self;
        let mut row = exp.row(
            id,
            format!("histogram box width (bus-clock quantum) of {run}"),
            source,
        );
        row.published = format!("{published_ns:.0} ns = {:.2} MHz", 1e3 / published_ns);
        row.published_text = published_text.clone();
        let counts = runs[run].counts.as_ref();
        row.samples = counts.and_then(|c| runs[run].metric(&c.metric).map(|h| h.count()));
        row.tolerance = format!("±{:.0}%", tolerance_rel * 100.0);
        // The box-width estimator (irqlab_stats::boxwidth), chosen on synthetic data and
        // committed before it judged seed 004 (DESIGN.md, "How a row is judged", 4).
        let found = counts.and_then(|c| {
            irqlab_stats::boxwidth::box_width(
                &c.values,
                c.count_ns,
                *search_min_ns,
                *search_max_ns,
            )
        });
        match found {
            Some(f) => {
                let err = f.width_ns / published_ns - 1.0;
                row.simulated =
                    format!("{:.0} ns = {:.2} MHz", f.width_ns, 1e3 / f.width_ns);
                let within = err.abs() <= *tolerance_rel;
                row.value = Some(f.width_ns);
                set_holds(&mut row, within);
                row.detail = format!(
                    "{} significant step edges; box width {:.1} ns ({:+.1}% from \
                     {published_ns} ns), a minimum {:.1} noise sigmas deep (relative \
                     depth {:.2}){}",
                    f.edges,
                    f.width_ns,
                    err * 100.0,
                    f.depth_sigmas,
                    f.depth,
                    f.runner_up.map_or(String::new(), |r| format!(
                        "; runner-up {:.1} ns, relative depth {:.2}",
                        r.width_ns, r.depth
                    ))
                );
            }
            None => {
                row.simulated = "no box width".into();
                row.detail = "the histogram has no autocorrelation minimum of its edges \
                              that stands out of its counting noise"
                    .into();
            }
        }
        row
    }
}
