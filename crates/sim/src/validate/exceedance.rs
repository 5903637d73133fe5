//! `kind = "exceedance"` in an experiment's `[[check]]`: see [`Exceedance`].

use super::prelude::*;

/// The share of one run's samples above `threshold_ns` (or at or above it, `inclusive`)
/// lies between `low` and `high`; or, where the seed gives a count of rare samples
/// (`published_count` in `published_samples`), the rate lies inside that count's Poisson
/// 95% interval.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exceedance {
    pub id: String,
    pub run: String,
    pub metric: LatencyMetric,
    pub threshold_ns: u64,
    #[serde(default)]
    pub inclusive: bool,
    #[serde(default)]
    pub low: f64,
    #[serde(default)]
    pub high: Option<f64>,
    #[serde(default)]
    pub published_count: Option<u64>,
    #[serde(default)]
    pub published_samples: Option<u64>,
    pub published_text: String,
    pub source: String,
}

impl RowKind for Exceedance {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        if self.published_count.is_some() != self.published_samples.is_some()
            || self.high.is_some() == self.published_count.is_some()
        {
            return Some(
                "an exceedance row takes either `high` (and `low`), or `published_count` \
                 with `published_samples`",
            );
        }
        None
    }
    fn runs(&self) -> Vec<&str> {
        vec![self.run.as_str()]
    }
    fn judged(&self) -> Judged {
        let (lo, hi, counted) = rate_window(
            self.low,
            self.high,
            self.published_count,
            self.published_samples,
        );
        Judged::Value {
            published: (lo, hi),
            point: counted.map(|(k, of, _)| k as f64 / of as f64),
            window: Scale::Log.width(lo, hi),
            scale: Scale::Log,
            quantity: Quantity::Probability,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let Exceedance {
            id,
            run,
            metric,
            threshold_ns,
            inclusive,
            low,
            high,
            published_count,
            published_samples,
            published_text,
            source,
        } = self;
        let h = metric.of(&runs[run]);
        let n = h.count();
        let (low, high, counted) =
            rate_window(*low, *high, *published_count, *published_samples);
        let (low, high) = (&low, &high);
        let above: u64 = h
            .iter_buckets(1)
            .filter(|&(v, _)| {
                if *inclusive {
                    v >= *threshold_ns
                } else {
                    v > *threshold_ns
                }
            })
            .map(|(_, c)| c)
            .sum::<u64>()
            // Samples beyond the histogram's 10 s range exceed any threshold it has.
            + h.overflows();
        let p = above as f64 / n.max(1) as f64;
        let op = if *inclusive { ">=" } else { ">" };
        let t_us = *threshold_ns as f64 / 1e3;
        let mut row = exp.row(
            id,
            format!("P({} {op} {t_us} us) of {run}", metric.name()),
            source,
        );
        row.published = published_text.clone();
        row.simulated = format!("{} of {}", thousands(above), thousands(n));
        row.value = (n > 0).then_some(p);
        row.tolerance = match counted {
            Some((_, of, i)) => format!("{:.2}-{:.1}/{}M", i.lo, i.hi, of as f64 / 1e6),
            None if *low > 0.0 => format!("{low:.0e}..{high:.0e}"),
            None => format!("<= {high:.0e}"),
        };
        row.samples = Some(n);
        let (i, decision) = decide::decide_rate(above, n, *low, *high);
        row.interval = Some(format!("{:.1e}..{:.1e}", i.lo, i.hi));
        judge(&mut row, decision);
        row.detail = format!(
            "{above} of {n} samples {op} {threshold_ns} ns: {p:.3e}, expected {low:.3e} .. \
             {high:.3e}{}",
            counted.map_or(String::new(), |(k, of, i)| format!(
                " (the Poisson 95% interval of {k} in {of}: {:.3}..{:.3} counts)",
                i.lo, i.hi
            ))
        );
        row
    }
}

/// An exceedance row's window of rates: `low..high` as written, or, where the seed gives a
/// count of rare samples (`published_count` in `published_samples`), that count's Poisson 95%
/// interval as a rate, with the count, the samples and the interval in counts.
fn rate_window(
    low: f64,
    high: Option<f64>,
    published_count: Option<u64>,
    published_samples: Option<u64>,
) -> (f64, f64, Option<(u64, u64, Interval)>) {
    match (published_count, published_samples, high) {
        (Some(k), Some(of), _) => {
            let i = decide::poisson_interval(k as f64);
            (i.lo / of as f64, i.hi / of as f64, Some((k, of, i)))
        }
        (_, _, Some(high)) => (low, high, None),
        _ => unreachable!("checked when the experiment loads"),
    }
}
