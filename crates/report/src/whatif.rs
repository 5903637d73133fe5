//! `irqlab sim --uncertainty N`: a what-if's quantities with their bands, drivers and the
//! validation rows on its scenario.

use crate::table::{group, Table};
use crate::text::{run_text, wrap};
use irqlab_stats::results::{Quantity, Verdict, WhatIfQuantity, WhatIfReport, WhatIfRow};

/// The run's header, then each quantity's nominal value, 5-95% band and median over the draws,
/// its drivers, the counters no draw changed, and the rows that run on the scenario. A
/// scenario with nothing to draw prints the plain run and says so.
pub fn whatif_text(w: &WhatIfReport) -> String {
    let mut out;
    if w.draws == 0 {
        out = run_text(&w.nominal);
        let why = if w.pinned.is_empty() {
            format!(
                "{}'s files declare no ranges for their estimates",
                w.scenario
            )
        } else {
            format!(
                "every range {}'s files declare is pinned by --set ({})",
                w.scenario,
                w.pinned.join(", ")
            )
        };
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "Uncertainty: nothing to draw: {why}, so there is no band; the values above are \
                 the plain run's{}.",
                if w.fixed.is_empty() {
                    String::new()
                } else {
                    format!(" ({} estimates are declared fixed)", w.fixed.len())
                }
            ),
            "",
            "  ",
        ));
    } else {
        out = format!("{}\n", w.nominal.title);
        for (k, v) in &w.nominal.config {
            out.push_str(&format!("  {k}: {v}\n"));
        }
        out.push('\n');
        let mut head = format!(
            "Uncertainty: {} draws (Latin hypercube, draw seed {}) over {} parameters, each draw \
             with its own seed; {} estimates not drawn (fixed)",
            w.draws,
            w.draw_seed,
            w.parameters.len(),
            w.fixed.len()
        );
        if !w.pinned.is_empty() {
            head.push_str(&format!(
                "; pinned by --set, not drawn: {}",
                w.pinned.join(", ")
            ));
        }
        out.push_str(&wrap(&head, "", "  "));
        out.push('\n');
        out.push_str(&quantity_table(&w.quantities));
        out.push_str("\nDrivers (Spearman's rank correlation over the draws; top 3):\n");
        match w.chance_rho {
            Some(c) if c < 0.995 => out.push_str(&wrap(
                &format!(
                    "(with {} draws over {} parameters, chance alone reaches |rho| {:.2} for \
                     some parameter in 5% of what-ifs: a driver below it may be noise; more \
                     draws sharpen them)",
                    w.draws,
                    w.parameters.len(),
                    c
                ),
                "  ",
                "  ",
            )),
            _ => out.push_str(&wrap(
                &format!(
                    "({} draws are too few to tell a driver from chance among {} parameters: \
                     any |rho| can be chance; take 100 or more to rank them)",
                    w.draws,
                    w.parameters.len()
                ),
                "  ",
                "  ",
            )),
        }
        drivers(&mut out, &w.quantities);
        if !w.unchanged.is_empty() {
            out.push('\n');
            out.push_str(&wrap(
                &format!("The same in every draw: {}", w.unchanged.join(", ")),
                "",
                "  ",
            ));
        }
    }
    if !w.against.is_empty() {
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "Against --set {}: the what-if's run less this baseline's, each with the same \
                 drawn values and seed (positive: the what-if is higher):",
                w.against.join(" --set ")
            ),
            "",
            "  ",
        ));
        out.push('\n');
        out.push_str(&quantity_table(&w.differences));
        if w.draws > 0 {
            out.push_str("\nDrivers of the differences (top 3):\n");
            drivers(&mut out, &w.differences);
        }
    }
    out.push('\n');
    out.push_str(&rows_text(w.rows.as_deref(), &w.scenario, &w.set));
    out
}

/// Each quantity's nominal value, 5-95% band, median and draws.
fn quantity_table(quantities: &[WhatIfQuantity]) -> String {
    let mut t =
        Table::new(&["quantity", "nominal", "band 5-95%", "median", "draws"]).left_aligned();
    for q in quantities {
        let (band, median) = match &q.band {
            Some(b) => (
                format!("{} .. {}", show(q, b.p5), show(q, b.p95)),
                show(q, b.median),
            ),
            None => ("-".into(), "-".into()),
        };
        t.row(vec![
            q.name.clone(),
            q.nominal.map_or("-".into(), |v| show(q, v)),
            band,
            median,
            q.draws.to_string(),
        ]);
    }
    t.render()
}

/// A line per quantity with its drivers.
fn drivers(out: &mut String, quantities: &[WhatIfQuantity]) {
    for q in quantities {
        let d: Vec<String> = q
            .drivers
            .iter()
            .map(|d| format!("{} ({:+.2})", d.parameter, d.rho))
            .collect();
        let d = if d.is_empty() {
            "none (it does not vary)".to_string()
        } else {
            d.join(", ")
        };
        out.push_str(&wrap(&format!("{}: {d}", q.name), "  ", "    "));
    }
}

/// The validation rows on the scenario, one sentence each.
/// `set`: the what-if's own overrides (a key it sets is not named again).
pub fn rows_text(rows: Option<&[WhatIfRow]>, scenario: &str, set: &[String]) -> String {
    let Some(rows) = rows else {
        return "Rows on this scenario: not judged (--no-rows); irqlab validate judges them.\n"
            .into();
    };
    if rows.is_empty() {
        return wrap(
            &format!(
                "Rows on this scenario: no validation row runs {scenario}'s file, so nothing \
                 published checks this model here."
            ),
            "",
            "  ",
        );
    }
    let failing = rows.iter().filter(|r| r.verdict != Verdict::Pass).count();
    let mut out = wrap(
        &format!(
            "Rows on this scenario ({} of {} do not pass; validate's verdicts on the files as \
             shipped, without this run's --set):",
            failing,
            rows.len()
        ),
        "",
        "  ",
    );
    // Rows that do not pass first: they qualify the answer.
    let mut ordered: Vec<&WhatIfRow> = rows.iter().filter(|r| r.verdict != Verdict::Pass).collect();
    ordered.extend(rows.iter().filter(|r| r.verdict == Verdict::Pass));
    for r in ordered {
        out.push_str(&wrap(&row_sentence(r), "  ", "    "));
    }
    // What every row's runs set beyond the scenario file: a what-if without it is not the
    // configuration the rows validate.
    let common: Vec<&String> = rows[0]
        .set
        .iter()
        .filter(|f| rows.iter().all(|r| r.set.contains(f)))
        .filter(|f| {
            let key = |s: &str| s.split_once('=').map(|(k, _)| k.trim().to_string());
            !set.iter().any(|s| key(s) == key(f))
        })
        .collect();
    if !common.is_empty() {
        let flags: Vec<&str> = common.iter().map(|f| f.as_str()).collect();
        out.push_str(&wrap(
            &format!(
                "Every one of these rows' runs sets --set {}, which this run does not: the \
                 configuration they validate has it, the scenario file alone does not.",
                flags.join(" --set ")
            ),
            "",
            "  ",
        ));
    }
    out
}

/// How a row's verdict reads beside a what-if's answer.
pub fn row_sentence(r: &WhatIfRow) -> String {
    let said = match r.verdict {
        _ if r.fit_at_bound.is_some() => {
            "is in tension on this model (its calibration's fit ends at a bound of its range)"
        }
        Verdict::Pass => "passes",
        Verdict::Fail => "fails on this model",
        Verdict::Undecided => "is undecided on this model",
    };
    let said = if r.calibration.is_empty() {
        said.to_string()
    } else {
        format!("{said} (calibration, not evidence)")
    };
    // A shape or sequence row's "holds" says less than what it compared.
    let simulated =
        if matches!(r.simulated.as_str(), "holds" | "does not hold") && !r.detail.is_empty() {
            format!("{} ({})", r.simulated, r.detail)
        } else {
            r.simulated.clone()
        };
    format!(
        "{} {said}: {simulated} against {} published",
        r.id, r.published
    )
}

/// A quantity's value: a latency in us, a counter whole.
fn show(q: &WhatIfQuantity, v: f64) -> String {
    if q.unit == "ns" {
        Quantity::Nanoseconds.show(v)
    } else if v.round() < 0.0 {
        format!("-{}", group(-v.round() as u64))
    } else {
        group(v.round().max(0.0) as u64)
    }
}
