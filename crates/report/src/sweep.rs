//! `irqlab sweep merge` of a what-if grid: one table, a row per cell and metric, the cell's
//! values in the first columns so that what changed reads across.

use crate::table::{group, Table};
use irqlab_stats::results::GridReport;

/// The grid's cells: per cell and metric the count and the latency summary (ns) of the cell's
/// points together. Counters are in the JSON (`--json`), per cell.
pub fn grid_text(g: &GridReport) -> String {
    let points = g.cells.len() as u64 * u64::from(g.repeat);
    let mut out = format!(
        "{}\n  scenario: {}\n  grid: {} cells ({}), {} point{} each of {} samples: {} runs\n",
        g.title,
        g.scenario,
        g.cells.len(),
        g.axes
            .iter()
            .map(|a| format!("{} x{}", a.key, a.values.len()))
            .collect::<Vec<_>>()
            .join(", "),
        g.repeat,
        if g.repeat == 1 { "" } else { "s" },
        group(g.samples),
        group(points),
    );
    if !g.set.is_empty() {
        out.push_str(&format!("  overrides: --set {}\n", g.set.join(" --set ")));
    }
    out.push('\n');
    let mut headers: Vec<&str> = g.axes.iter().map(|a| a.key.as_str()).collect();
    headers.extend([
        "metric", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "max", "(ns)",
    ]);
    let mut t = Table::new(&headers);
    for c in &g.cells {
        // The value of each axis, without its key (the header has it).
        let values: Vec<String> = c
            .set
            .iter()
            .map(|s| s.split_once('=').map_or(s.as_str(), |(_, v)| v).to_string())
            .collect();
        for m in &c.run.metrics {
            let mut row = values.clone();
            row.extend(crate::text::metric_cells(m));
            t.row(row);
        }
    }
    out.push_str(&t.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_stats::results::{GridAxis, GridCell, Metric, RunReport};
    use irqlab_stats::LatencyHistogram;

    fn cell(set: &[&str], latency_ns: u64) -> GridCell {
        let mut h = LatencyHistogram::new();
        h.record_n(latency_ns, 4);
        h.record(latency_ns * 3);
        GridCell {
            set: set.iter().map(|s| s.to_string()).collect(),
            seeds: vec![1, 7],
            run: RunReport {
                source: "s.toml".into(),
                title: "t".into(),
                config: vec![],
                metrics: vec![Metric::new("isr_latency", "ISR", h.summary())],
                counters: vec![],
                trace: vec![],
                spike: None,
                histograms: vec![],
                warnings: vec![],
                series: vec![],
            },
        }
    }

    #[test]
    fn a_grid_reads_one_row_per_cell_and_metric() {
        let g = GridReport {
            scenario: "seed000/ws".into(),
            title: "Seed 000, workstation".into(),
            set: vec!["platform.cpu.clock_hz=2e9".into()],
            samples: 1_000,
            repeat: 2,
            axes: vec![GridAxis {
                key: "delivery".into(),
                values: vec!["msi".into(), "xtpic".into()],
            }],
            cells: vec![
                cell(&["delivery=msi"], 900),
                cell(&["delivery=xtpic"], 6_000),
            ],
        };
        insta::assert_snapshot!(grid_text(&g));
    }
}
