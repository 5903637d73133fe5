//! `kind = "quantile_range"` in an experiment's `[[check]]`: see [`QuantileRange`].

use super::prelude::*;

/// A quantile of one run's distribution lies in a published range.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuantileRange {
    pub id: String,
    pub run: String,
    pub metric: LatencyMetric,
    pub quantile: f64,
    pub low_ns: u64,
    pub high_ns: u64,
    /// The published statistic's sample count. Required for a minimum or maximum
    /// (`quantile` 0 or 1): an extreme of fewer samples is not comparable with it.
    #[serde(default)]
    pub published_samples: Option<u64>,
    pub published_text: String,
    pub source: String,
}

impl RowKind for QuantileRange {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        if self.published_samples.is_none() && (self.quantile == 0.0 || self.quantile == 1.0) {
            return Some(
                "a minimum or maximum needs `published_samples`, the published sample count it \
                 was taken over: an extreme of fewer samples is not comparable with it",
            );
        }
        if !(0.0..=1.0).contains(&self.quantile) {
            return Some("`quantile` is a fraction from 0 (the minimum) to 1 (the maximum)");
        }
        None
    }
    fn runs(&self) -> Vec<&str> {
        vec![self.run.as_str()]
    }
    fn judged(&self) -> Judged {
        Judged::Value {
            published: (self.low_ns as f64, self.high_ns as f64),
            point: None,
            window: (self.high_ns - self.low_ns) as f64,
            scale: Scale::Linear,
            quantity: Quantity::Nanoseconds,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let QuantileRange {
            id,
            run,
            metric,
            quantile,
            low_ns,
            high_ns,
            published_samples,
            published_text,
            source,
        } = self;
        let h = metric.of(&runs[run]);
        let q = h.quantile_ns(*quantile).ok().flatten();
        let label = quantile_label(*quantile);
        let mut row = exp.row(id, format!("{label} {} of {run}", metric.name()), source);
        row.published = us_range(*low_ns, *high_ns);
        row.published_text = published_text.clone();
        row.simulated =
            q.map_or("no samples".into(), |v| format!("{:.2} us", v as f64 / 1e3));
        row.value = q.map(|v| v as f64);
        row.tolerance = "range".into();
        row.samples = Some(h.count());
        let (low, high) = (*low_ns as f64, *high_ns as f64);
        let (interval, decision) = match (q, published_samples) {
            (None, _) => (None, Decision::Undecided(Needs::AtLeast(1))),
            // An extreme: comparable over at least the published sample count.
            (Some(v), Some(need)) if *quantile == 0.0 || *quantile == 1.0 => {
                if h.count() < *need {
                    (None, Decision::Undecided(Needs::AtLeast(*need)))
                } else {
                    let i = Interval {
                        lo: v as f64,
                        hi: v as f64,
                    };
                    (Some(i), decided(decide::against(i, low, high)))
                }
            }
            (Some(v), _) => quantile_decision(h, *quantile, v, low, high),
        };
        row.interval = interval.map(|i| us_interval(i.lo, i.hi));
        judge(&mut row, decision);
        row.detail = format!(
            "{label} of {} samples: {} ns; published range {low_ns}..{high_ns} ns",
            h.count(),
            q.map_or("-".into(), |v| v.to_string())
        );
        row
    }
}
