//! `kind = "ratio"` in an experiment's `[[check]]`: see [`Ratio`].

use super::prelude::*;

/// mean(metric of numerator) / mean(metric of denominator) against a published ratio.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ratio {
    pub id: String,
    pub metric: LatencyMetric,
    pub numerator: String,
    pub denominator: String,
    pub published: f64,
    pub published_text: String,
    pub tolerance_rel: f64,
    pub source: String,
}

impl RowKind for Ratio {
    fn id(&self) -> &str {
        &self.id
    }
    fn runs(&self) -> Vec<&str> {
        vec![self.numerator.as_str(), self.denominator.as_str()]
    }
    fn judged(&self) -> Judged {
        Judged::Value {
            // The published value is a point unless its words give an interval (DESIGN.md:
            // "published value (or interval, from the seed's wording) inside the 5-95%
            // band"); the tolerance sets the width test's window, not the value.
            published: wording_interval(&self.published_text)
                .unwrap_or((self.published, self.published)),
            point: Some(self.published),
            window: 2.0 * self.tolerance_rel * self.published,
            scale: Scale::Linear,
            quantity: Quantity::Ratio,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let mean = |r: &str, m: LatencyMetric| m.of(&runs[r]).mean_ns().unwrap_or(f64::NAN);
        let Ratio {
            id,
            metric,
            numerator,
            denominator,
            published,
            published_text,
            tolerance_rel,
            source,
        } = self;
        let (hn, hd) = (metric.of(&runs[numerator]), metric.of(&runs[denominator]));
        let (n, d) = (mean(numerator, *metric), mean(denominator, *metric));
        let ratio = n / d;
        let err = ratio / published - 1.0;
        let name = metric.name();
        let mut row = exp.row(id, format!("{name} {numerator} / {denominator}"), source);
        // One published window everywhere (DESIGN.md): the seed's words where they give
        // an interval ("almost 3x" = 2.7-3.0), as the uncertainty run judges it, else
        // the point with the row's tolerance.
        let (low, high) = match wording_interval(published_text) {
            Some(w) => {
                row.published = format!("{:.2}x-{:.2}x", w.0, w.1);
                row.tolerance = "as worded".into();
                w
            }
            None => {
                row.published = format!("{published:.1}x");
                row.tolerance = format!("±{:.0}%", tolerance_rel * 100.0);
                (
                    published * (1.0 - tolerance_rel),
                    published * (1.0 + tolerance_rel),
                )
            }
        };
        row.published_text = published_text.clone();
        row.simulated = format!("{ratio:.2}x");
        row.value = Some(ratio);
        row.samples = Some(hn.count().min(hd.count()));
        let (interval, decision) =
            decide::decide_ratio(mean_sample(hn), mean_sample(hd), low, high);
        row.interval = interval.map(|i| format!("{:.2}x..{:.2}x", i.lo, i.hi));
        judge(&mut row, decision);
        row.detail = format!(
            "mean {name}: {numerator} {n:.0} ns, {denominator} {d:.0} ns; ratio {ratio:.3} \
             is {:+.1}% from the published {published}",
            err * 100.0
        );
        row
    }
}
