//! `kind = "cyclictest_shape"` in an experiment's `[[check]]`: see [`CyclictestShape`].

use super::prelude::*;

/// Seed 003's cyclictest columns over a table's runs, matched by shape: every run starved
/// (the lag of 2009's cyclictest grows for the whole run: its maximum at least half the
/// run's loops times the interval, its average 0.45-0.55 of its maximum), or every run
/// served with its average and maximum inside the bounds given.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CyclictestShape {
    pub id: String,
    pub runs: Vec<String>,
    pub expect: ShapeExpect,
    /// cyclictest's interval (`-i`), for the length of a run's loops.
    pub interval_us: f64,
    #[serde(default)]
    pub min_low_us: Option<f64>,
    #[serde(default)]
    pub min_high_us: Option<f64>,
    #[serde(default)]
    pub avg_low_us: Option<f64>,
    #[serde(default)]
    pub avg_high_us: Option<f64>,
    #[serde(default)]
    pub max_low_us: Option<f64>,
    #[serde(default)]
    pub max_high_us: Option<f64>,
    /// A served table's own averages and maxima, one per run, where the table's series
    /// moves (DESIGN.md rule 5): each run's within `factor` of its own published value,
    /// so that a constant cannot pass a rising series.
    #[serde(default)]
    pub published_avg_us: Vec<f64>,
    #[serde(default)]
    pub published_max_us: Vec<f64>,
    #[serde(default)]
    pub factor: Option<f64>,
    pub published_text: String,
    pub source: String,
}

impl RowKind for CyclictestShape {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        let CyclictestShape {
            runs,
            published_avg_us,
            published_max_us,
            factor,
            expect,
            ..
        } = self;
        ((!published_avg_us.is_empty() && published_avg_us.len() != runs.len())
            || (!published_max_us.is_empty() && published_max_us.len() != runs.len())
            || ((!published_avg_us.is_empty() || !published_max_us.is_empty())
                && (*expect != ShapeExpect::Served || !factor.is_some_and(|f| f > 1.0))))
        .then_some(
            "a served cyclictest_shape row's published_avg_us and published_max_us give \
             one value per run, with a factor > 1",
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
        let CyclictestShape {
            id,
            runs: names,
            expect,
            interval_us,
            min_low_us,
            min_high_us,
            avg_low_us,
            avg_high_us,
            max_low_us,
            max_high_us,
            published_avg_us,
            published_max_us,
            factor,
            published_text,
            source,
        } = self;
        let mut row = exp.row(id, format!("cyclictest of {}", names.join(", ")), source);
        let f = factor.unwrap_or(1.0);
        let near = |v: f64, published: &[f64], k: usize| {
            published.get(k).is_none_or(|&p| v >= p / f && v <= p * f)
        };
        row.published_text = published_text.clone();
        row.tolerance = "shape".into();
        let mut ok = true;
        let mut seen = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let Some(h) = runs[name].metric(CYCLICTEST).filter(|h| !h.is_empty()) else {
                ok = false;
                seen.push(format!("{name}: no samples"));
                continue;
            };
            let min = h.min_ns().unwrap_or(0) as f64 / 1e3;
            let avg = h.mean_ns().unwrap_or(0.0) / 1e3;
            let max = h.max_ns().unwrap_or(0) as f64 / 1e3;
            let run_us = h.count() as f64 * interval_us;
            let starved = max >= 0.5 * run_us && (0.45..=0.55).contains(&(avg / max));
            let holds = match expect {
                ShapeExpect::Starved => starved,
                ShapeExpect::Served => {
                    let inside = |v: f64, lo: &Option<f64>, hi: &Option<f64>| {
                        lo.is_none_or(|l| v >= l) && hi.is_none_or(|h| v <= h)
                    };
                    !starved
                        && inside(min, min_low_us, min_high_us)
                        && inside(avg, avg_low_us, avg_high_us)
                        && inside(max, max_low_us, max_high_us)
                        && near(avg, published_avg_us, k)
                        && near(max, published_max_us, k)
                }
            };
            ok &= holds;
            seen.push(format!(
                "{name}: min {min:.0} avg {avg:.0} max {max:.0} us{}",
                if starved { " (starved)" } else { "" }
            ));
        }
        row.published = match expect {
            ShapeExpect::Starved => "starved".into(),
            ShapeExpect::Served => {
                let b = |lo: &Option<f64>, hi: &Option<f64>| match (lo, hi) {
                    (Some(l), Some(h)) => format!("{l}-{h}"),
                    (None, Some(h)) => format!("<= {h}"),
                    (Some(l), None) => format!(">= {l}"),
                    (None, None) => "any".into(),
                };
                let min = match (min_low_us, min_high_us) {
                    (None, None) => String::new(),
                    _ => format!("min {} us, ", b(min_low_us, min_high_us)),
                };
                let each = |v: &[f64], window: String| {
                    if v.is_empty() {
                        window
                    } else {
                        let list: Vec<String> =
                            v.iter().map(|x| thousands(x.round() as u64)).collect();
                        format!("{} (each x{f})", list.join(", "))
                    }
                };
                format!(
                    "{min}avg {} us, max {} us",
                    each(published_avg_us, b(avg_low_us, avg_high_us)),
                    each(published_max_us, b(max_low_us, max_high_us))
                )
            }
        };
        row.simulated = if ok { "holds" } else { "does not hold" }.into();
        set_holds(&mut row, ok);
        row.detail = seen.join("; ");
        row
    }
}

/// The simulated cyclictest's metric.
const CYCLICTEST: &str = "cyclictest_latency";

/// What a seed-003 table says of cyclictest in a set of runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeExpect {
    Starved,
    Served,
}
