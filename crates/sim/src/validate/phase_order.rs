//! `kind = "phase_order"` in an experiment's `[[check]]`: see [`PhaseOrder`].

use super::prelude::*;

/// A quantile of one workload phase exceeds the same quantile of another (seed 004).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseOrder {
    pub id: String,
    pub run: String,
    pub quantile: f64,
    pub heavier: String,
    pub lighter: String,
    pub published_text: String,
    pub source: String,
}

impl RowKind for PhaseOrder {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        (!(self.quantile > 0.0 && self.quantile < 1.0)).then_some(
            "a phase_order row's `quantile` is strictly between 0 and 1 (two extremes have \
             no interval to compare by)",
        )
    }
    fn runs(&self) -> Vec<&str> {
        vec![self.run.as_str()]
    }
    fn judged(&self) -> Judged {
        Judged::Share {
            pass_share: SHAPE_PASS_SHARE,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let PhaseOrder {
            id,
            run,
            quantile,
            heavier,
            lighter,
            published_text,
            source,
        } = self;
        let label = quantile_label(*quantile);
        let mut row = exp.row(
            id,
            format!("{label} of phase {heavier} > {label} of phase {lighter} ({run})"),
            source,
        );
        row.published = "holds".into();
        row.published_text = published_text.clone();
        row.tolerance = "exact".into();
        // The phases of the run's headline metric.
        let r = &runs[run];
        let headline = r.metrics.first().map_or("", |m| m.name.as_str());
        let phase = |name: &str| r.phase(headline, Some(name)).filter(|h| !h.is_empty());
        match (phase(heavier), phase(lighter)) {
            (Some(hh), Some(hl)) => {
                let q = |h: &LatencyHistogram| {
                    h.quantile_ns(*quantile).ok().flatten().unwrap_or(0)
                };
                let (h, l) = (q(hh), q(hl));
                row.simulated = format!(
                    "{} ({:.2} vs {:.2} us)",
                    if h > l { "holds" } else { "does not hold" },
                    h as f64 / 1e3,
                    l as f64 / 1e3
                );
                row.samples = Some(hh.count().min(hl.count()));
                row.holds = Some(h > l);
                let decision = match (
                    quantile_interval(hh, *quantile),
                    quantile_interval(hl, *quantile),
                ) {
                    (Some(ih), Some(il)) => {
                        row.interval = Some(format!(
                            "{} vs {}",
                            us_interval(ih.lo, ih.hi),
                            us_interval(il.lo, il.hi)
                        ));
                        if ih.lo > il.hi {
                            Decision::Pass
                        } else if ih.hi < il.lo {
                            Decision::Fail
                        } else {
                            let half = ((ih.hi - ih.lo) + (il.hi - il.lo)) / 2.0;
                            Decision::Undecided(decide::extrapolate(
                                hh.count().min(hl.count()),
                                half,
                                (h as f64 - l as f64).abs(),
                            ))
                        }
                    }
                    _ => Decision::Undecided(decide::quantile_min_samples(*quantile)),
                };
                judge(&mut row, decision);
                row.detail = format!(
                    "{label}: {heavier} {h} ns ({} samples), {lighter} {l} ns ({} samples)",
                    hh.count(),
                    hl.count()
                );
            }
            _ => {
                row.simulated = "no samples".into();
                row.detail = format!(
                    "run {run} has no samples in phase '{heavier}' or '{lighter}' (or \
                     no workload phases)"
                );
            }
        }
        row
    }
}
