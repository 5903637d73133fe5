//! Terminal renderings of runs and validations.

use crate::table::{group, opt, Table};
use irqlab_stats::results::{
    Metric, Quantity, RunReport, SamplesNeeded, UncertaintyReport, ValidationReport, ValidationRow,
    Verdict,
};
use irqlab_stats::uncertainty::Class;

/// A run: configuration, latency summary (ns), counters, and the analyzer trace if any. The
/// run's warnings are not part of it: they go to stderr (the CLI prints them).
pub fn run_text(r: &RunReport) -> String {
    let mut out = format!("{}\n", r.title);
    for (k, v) in &r.config {
        out.push_str(&format!("  {k}: {v}\n"));
    }
    if !r.metrics.is_empty() {
        out.push('\n');
        let mut t = Table::new(&[
            "metric", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "max", "(ns)",
        ]);
        for m in &r.metrics {
            t.row(metric_cells(m));
        }
        out.push_str(&t.render());
    }
    if !r.counters.is_empty() {
        out.push('\n');
        let mut c = Table::new(&["counter", "value"]);
        for k in &r.counters {
            c.row(vec![k.label(), group(k.value)]);
        }
        out.push_str(&c.render());
    }
    if !r.trace.is_empty() {
        out.push_str(&format!(
            "\nAnalyzer trace on the device's link (first {} packets; time of the first symbol):\n",
            r.trace.len()
        ));
        out.push_str(&trace_text(r));
    }
    if let Some(sp) = &r.spike {
        out.push_str(&crate::spike::spike_text(sp));
    }
    out
}

/// The trace in the columns of seed 000's Figure 7.
pub fn trace_text(r: &RunReport) -> String {
    let mut t = Table::new(&[
        "packet",
        "time (ns)",
        "dir",
        "TLP",
        "requester",
        "tag",
        "address",
        "payload",
    ]);
    for row in &r.trace {
        t.row(vec![
            row.packet.to_string(),
            format!("{:.1}", row.time_ns),
            row.direction.clone(),
            row.tlp_type.clone(),
            row.requester.clone(),
            row.tag.to_string(),
            row.address.map_or("-".into(), |a| format!("{a:08X}")),
            row.payload.map_or("-".into(), |p| format!("0x{p:08X}")),
        ]);
    }
    t.render()
}

/// Columns the default validation table and the notes under it fit in.
pub const VALIDATION_WIDTH: usize = 100;

/// A verdict as the table shows it.
fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::Undecided => "undecided",
    }
}

/// A row's verdict as the table shows it: "tension" for a row whose calibration's fit ended at
/// a bound of its range, and a `*` after a calibration row's (see [`CALIBRATION_NOTE`]).
fn row_verdict(r: &ValidationRow) -> String {
    let word = if r.fit_at_bound.is_some() {
        "tension"
    } else {
        verdict_word(r.verdict)
    };
    if r.calibration.is_empty() {
        word.to_string()
    } else {
        format!("{word}*")
    }
}

/// What a `*` after a verdict or a class means, under every table that has one.
pub const CALIBRATION_NOTE: &str = "* calibration, not evidence: a value of the model was chosen \
                                    from this row's published target";

/// A row's calibration in a sentence, or nothing.
fn calibration_line(keys: &[String]) -> Option<String> {
    (!keys.is_empty()).then(|| {
        format!(
            "calibration, not evidence: {} chosen from this row's published target",
            keys.join(", ")
        )
    })
}

/// One line per class, each with its count and its rows: `(label, rows)` in order, empty
/// classes included so that a reader sees every class; a row id list wraps under itself.
pub fn class_lines(classes: &[(&str, Vec<String>)]) -> String {
    let mut out = String::new();
    for (label, ids) in classes {
        let head = format!("{label:<13}{:>3}", ids.len());
        if ids.is_empty() {
            out.push_str(&head);
            out.push('\n');
        } else {
            out.push_str(&wrap(
                &ids.join(", "),
                &format!("{head}  "),
                &" ".repeat(head.len() + 2),
            ));
        }
    }
    out
}

/// "undecided (4,000,000 samples, needs at least 36,888,795)".
fn undecided_phrase(r: &ValidationRow) -> String {
    let samples = r.samples.map_or("too few samples".into(), |n| {
        format!("{} samples", group(n))
    });
    let needs = match r.needs {
        Some(SamplesNeeded::AtLeast { samples }) => format!(", needs at least {}", group(samples)),
        Some(SamplesNeeded::About { samples }) => format!(", needs about {}", group(samples)),
        Some(SamplesNeeded::Never) => {
            ", on a boundary of the published window: no sample count decides it".into()
        }
        None => String::new(),
    };
    format!("undecided ({samples}{needs})")
}

/// The published value with the seed's words, as the wide table and the notes show it.
fn published_full(r: &ValidationRow) -> String {
    if r.published_text.is_empty() {
        r.published.clone()
    } else {
        format!("{} ({})", r.published, r.published_text)
    }
}

/// The validation: a table of every row, then what was compared for each row that does not
/// pass. The default table fits [`VALIDATION_WIDTH`] columns with the verdict near the left;
/// `wide` keeps every column in the table (metric and the seed's words), however wide.
pub fn validation_text(v: &ValidationReport, wide: bool) -> String {
    let mut out = if wide {
        let mut t = Table::new(&[
            "experiment",
            "row",
            "metric",
            "published",
            "simulated",
            "tolerance",
            "verdict",
        ])
        .left_aligned();
        for r in &v.rows {
            t.row(vec![
                r.experiment.clone(),
                r.id.clone(),
                r.metric.clone(),
                published_full(r),
                r.simulated.clone(),
                r.tolerance.clone(),
                row_verdict(r),
            ]);
        }
        t.render()
    } else {
        let mut t = Table::new(&[
            "experiment",
            "row",
            "verdict",
            "simulated",
            "published",
            "tolerance",
        ])
        .left_aligned();
        // The widest cells the table has room for in VALIDATION_WIDTH columns; a longer one
        // is clipped here and shown whole under the table (rows that do not pass) and with
        // --wide. A row id is what `--only` takes, so ids up to 24 characters stay whole and
        // the value columns give up the room (values are clipped, never an id): of each 9
        // characters, 5 from the simulated, 2 from the published and 2 from the tolerance.
        let id_width = id_width(v.rows.iter().map(|r| r.id.as_str()), 15);
        let extra = id_width - 15;
        let (simulated, published) = (24 - extra * 5 / 9, 17 - extra * 2 / 9);
        let tolerance = 14 - (extra - extra * 5 / 9 - extra * 2 / 9);
        for r in &v.rows {
            t.row(vec![
                clip(&r.experiment, 10),
                clip(&r.id, id_width),
                row_verdict(r),
                clip(&r.simulated, simulated),
                clip(&r.published, published),
                clip(&r.tolerance, tolerance),
            ]);
        }
        t.render()
    };
    if v.rows.iter().any(|r| !r.calibration.is_empty()) {
        out.push_str(&wrap(CALIBRATION_NOTE, "", "  "));
    }
    // Every row that does not pass, and every calibration row: what it compared.
    for r in v
        .rows
        .iter()
        .filter(|r| r.verdict != Verdict::Pass || !r.calibration.is_empty())
    {
        let verdict = match r.verdict {
            _ if r.fit_at_bound.is_some() => "TENSION (fit at its bound)".into(),
            Verdict::Undecided => undecided_phrase(r),
            Verdict::Pass => "pass".into(),
            Verdict::Fail => "FAIL".into(),
        };
        out.push('\n');
        out.push_str(&wrap(
            &format!("{}: {verdict}. {}", r.id, r.metric),
            "",
            "  ",
        ));
        let interval = r
            .interval
            .as_ref()
            .map_or(String::new(), |i| format!(" (95% interval {i})"));
        for line in [
            format!("simulated: {}{interval}", r.simulated),
            format!(
                "published: {}, tolerance {}",
                published_full(r),
                r.tolerance
            ),
            r.detail.clone(),
            format!("published in: {}", r.source),
        ]
        .into_iter()
        .chain(calibration_line(&r.calibration))
        .chain(r.fit_at_bound.as_ref().map(|p| {
            format!(
                "tension: fit at its bound: {p}'s calibration ended at a bound of its sourced \
                 range, so the range cannot give its row the published value; this row reads it"
            )
        })) {
            out.push_str(&wrap(&line, "  ", "    "));
        }
    }
    let ids = |f: &dyn Fn(&ValidationRow) -> bool| -> Vec<String> {
        v.rows
            .iter()
            .filter(|r| f(r))
            .map(|r| r.id.clone())
            .collect()
    };
    out.push('\n');
    out.push_str(&class_lines(&[
        ("pass", ids(&|r| r.verdict == Verdict::Pass)),
        (
            "tension",
            ids(&|r| r.verdict == Verdict::Fail && r.fit_at_bound.is_some()),
        ),
        (
            "fail",
            ids(&|r| r.verdict == Verdict::Fail && r.fit_at_bound.is_none()),
        ),
        ("undecided", ids(&|r| r.verdict == Verdict::Undecided)),
        ("calibration", ids(&|r| !r.calibration.is_empty())),
    ]));
    out.push_str(&format!(
        "\n{} of {} rows pass{}{}{}\n",
        v.passed(),
        v.rows.len(),
        match v.passed_calibration() {
            0 => String::new(),
            n => format!(" ({n} of them calibration, not evidence)"),
        },
        {
            let tension = v.rows.iter().filter(|r| r.fit_at_bound.is_some()).count();
            let fail = v.failed() - tension;
            match (tension, fail) {
                (0, 0) => String::new(),
                (0, f) => format!(", {f} fail"),
                (t, 0) => format!(", {t} in tension"),
                (t, f) => format!(", {t} in tension, {f} fail"),
            }
        },
        match v.undecided() {
            0 => String::new(),
            n => format!(", {n} undecided"),
        },
    ));
    out
}

/// A value of a row's quantity, short.
pub fn quantity_value(q: Option<Quantity>, v: f64) -> String {
    q.map_or_else(|| format!("{v}"), |q| q.show(v))
}

/// `validate --uncertainty`: each row's class, nominal value, band, median, the published
/// value (its interval from the seed's wording) and its percentile in the band; then per row
/// its drivers and why it has its class.
pub fn uncertainty_text(u: &UncertaintyReport) -> String {
    let mut out = format!(
        "\nUncertainty: {} draws (Latin hypercube, seed {}) over {} parameters; {} estimates not \
         drawn\n",
        u.draws,
        u.seed,
        u.parameters.len(),
        u.fixed.len()
    );
    for f in &u.fitted {
        out.push_str(&format!(
            "Fitted in each draw on {} ({}): {} 5-95% {}..{}, median {}\n",
            f.row, f.experiment, f.key, f.p5, f.p95, f.median
        ));
    }
    let mut t = Table::new(&[
        "row",
        "class",
        "nominal",
        "band 5-95%",
        "median",
        "published",
        "pct",
    ])
    .left_aligned();
    // Row ids stay whole up to 24 characters (what `--only` takes).
    let id_width = id_width(u.rows.iter().map(|r| r.id.as_str()), 16);
    for r in &u.rows {
        let v = |x: f64| quantity_value(r.quantity, x);
        let (band, median) = match (&r.band, r.holds_share, r.quantity) {
            (_, Some(share), _) => (format!("holds {:.0}%", share * 100.0), String::new()),
            (Some(b), None, _) => (format!("{}-{}", v(b.p5), v(b.p95)), v(b.median)),
            (None, None, _) => ("-".into(), String::new()),
        };
        let published = match r.published_interval {
            Some([lo, hi]) if lo == hi => v(lo),
            Some([lo, hi]) => format!("{}-{}", v(lo), v(hi)),
            None => clip(&r.published, 17),
        };
        let pct = match r.percentile {
            Some([a, b]) if (a - b).abs() < 0.5 => format!("{a:.0}"),
            Some([a, b]) => format!("{a:.0}-{b:.0}"),
            None => String::new(),
        };
        t.row(vec![
            clip(&r.id, id_width),
            if r.inferred.is_empty() {
                r.class.label().into()
            } else {
                format!("{}*", r.class.label())
            },
            clip(&r.nominal, 13),
            band,
            median,
            published,
            pct,
        ]);
    }
    out.push_str(&t.render());
    if u.rows.iter().any(|r| !r.inferred.is_empty()) {
        out.push_str(&wrap(CALIBRATION_NOTE, "", "  "));
    }
    for r in &u.rows {
        out.push('\n');
        out.push_str(&wrap(
            &format!("{} ({}): {}.", r.id, r.class.label(), r.detail),
            "",
            "  ",
        ));
        if !r.drivers.is_empty() {
            let d: Vec<String> = r
                .drivers
                .iter()
                .map(|d| format!("{} ({:+.2})", d.parameter, d.rho))
                .collect();
            out.push_str(&wrap(
                &format!("drivers (rank correlation): {}", d.join(", ")),
                "  ",
                "    ",
            ));
        }
        if !r.inferred.is_empty() {
            out.push_str(&wrap(
                &calibration_line(&r.inferred).unwrap_or_default(),
                "  ",
                "    ",
            ));
        }
    }
    out.push('\n');
    out.push_str(&class_lines(&uncertainty_classes(u)));
    let count = |c: Class| u.rows.iter().filter(|r| r.class == c).count();
    let classes: Vec<String> = [
        Class::Pass,
        Class::ConsistentButUninformative,
        Class::Tension,
        Class::Inconsistent,
        Class::Undecided,
    ]
    .into_iter()
    .filter(|&c| count(c) > 0)
    .map(|c| format!("{} {}", count(c), c.label()))
    .collect();
    let calibration = u
        .rows
        .iter()
        .filter(|r| r.class == Class::Pass && !r.inferred.is_empty())
        .count();
    out.push_str(&format!(
        "\n{} rows: {}{}\n",
        u.rows.len(),
        classes.join(", "),
        match calibration {
            0 => String::new(),
            n => format!(" ({n} of the passes calibration, not evidence)"),
        }
    ));
    out
}

/// The rows of each class over the draws, in the order the classes are read, with the
/// calibration rows (a value of the model was chosen from them) counted apart as well: the
/// summary `validate --uncertainty` ends with, and the README's "Where the model stands".
pub fn uncertainty_classes(u: &UncertaintyReport) -> Vec<(&'static str, Vec<String>)> {
    let ids = |f: &dyn Fn(&irqlab_stats::results::UncertaintyRow) -> bool| -> Vec<String> {
        u.rows
            .iter()
            .filter(|r| f(r))
            .map(|r| r.id.clone())
            .collect()
    };
    vec![
        ("pass", ids(&|r| r.class == Class::Pass)),
        (
            "uninformative",
            ids(&|r| r.class == Class::ConsistentButUninformative),
        ),
        ("tension", ids(&|r| r.class == Class::Tension)),
        ("inconsistent", ids(&|r| r.class == Class::Inconsistent)),
        ("undecided", ids(&|r| r.class == Class::Undecided)),
        ("calibration", ids(&|r| !r.inferred.is_empty())),
    ]
}

/// A table's row-id column: as wide as its longest id, at least `min` and at most 24.
fn id_width<'a>(ids: impl Iterator<Item = &'a str>, min: usize) -> usize {
    ids.map(|id| id.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(min, 24)
}

/// `s` cut to `n` characters, the last one an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('…')).collect()
    }
}

/// `1 CPU`, `2 CPUs`: a count and its noun, singular or plural.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` as lines of at most [`VALIDATION_WIDTH`] columns, broken at spaces: the first line
/// starts with `first`, the others with `rest`. A word longer than a line stays whole.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > VALIDATION_WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A metric's cells in the latency table: its label, count, min, mean, p50, p90, p99, p99.9,
/// max and the unit column (empty: the header names it). The run table and a sweep grid's rows
/// share them.
pub(crate) fn metric_cells(m: &Metric) -> Vec<String> {
    let s = &m.summary;
    vec![
        m.label(),
        group(s.count),
        opt(s.min_ns),
        s.mean_ns.map_or("-".into(), |m| group(m.round() as u64)),
        opt(s.p50_ns),
        opt(s.p90_ns),
        opt(s.p99_ns),
        opt(s.p999_ns),
        opt(s.max_ns),
        String::new(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_table_fits_100_columns_however_long_the_cells() {
        let long = "x".repeat(300);
        let row = ValidationRow {
            id: long.clone(),
            experiment: long.clone(),
            metric: long.clone(),
            published: long.clone(),
            published_text: long.clone(),
            simulated: long.clone(),
            value: None,
            holds: None,
            interval: Some(long.clone()),
            tolerance: long.clone(),
            verdict: Verdict::Undecided,
            samples: Some(12_345),
            needs: Some(SamplesNeeded::AtLeast { samples: 999_999 }),
            source: long.clone(),
            detail: format!("{long} {long}"),
            calibration: Vec::new(),
            fit_at_bound: None,
        };
        let v = ValidationReport {
            rows: vec![row],
            experiments: vec![],
            notes: vec![],
            uncertainty: None,
        };
        let text = validation_text(&v, false);
        let table: Vec<&str> = text.lines().take(3).collect();
        for l in &table {
            assert!(l.chars().count() <= VALIDATION_WIDTH, "{l}");
        }
        assert!(table[2].contains("undecided"));
        assert!(text.contains("undecided (12,345 samples, needs at least 999,999)"));
        // Under the table the whole value is kept; --wide keeps it in the table.
        assert!(text.contains(&long));
        assert!(validation_text(&v, true)
            .lines()
            .nth(2)
            .unwrap()
            .contains(&long));
        assert!(text.ends_with("0 of 1 rows pass, 1 undecided\n"), "{text}");
    }

    #[test]
    fn wrapping_keeps_lines_within_the_width_and_every_word() {
        let text = "a ".repeat(80) + &"x".repeat(120) + " tail";
        let w = wrap(&text, "  ", "    ");
        for l in w.lines() {
            assert!(
                l.chars().count() <= VALIDATION_WIDTH || !l.trim().contains(' '),
                "{l}"
            );
        }
        assert!(w.starts_with("  a a"));
        assert!(w.lines().nth(1).unwrap().starts_with("    "));
        let words: Vec<&str> = w.split_whitespace().collect();
        assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
    }
}
