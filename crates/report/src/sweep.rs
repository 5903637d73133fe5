//! `irqlab sweep`'s text. `sweep plan`: what was planned and the commands that run and merge
//! it; `sweep run`: the points a shard ran; `sweep merge` of a what-if grid: one table, a row
//! per cell and metric, the cell's values in the first columns so that what changed reads
//! across, and its figures' runs; a merge that cannot finish: the commands that run the shards
//! again. The manifests are `irqlab_sim::sweep`'s, so these take plain values from them.

use crate::table::{group, Table};
use irqlab_stats::results::{GridReport, RunReport};

/// `1 point`, `2 points`.
pub fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What a manifest of draws holds: `draws` draws of `parameters` parameters, and the nominal
/// validation.
pub fn planned_draws(draws: usize, parameters: usize) -> String {
    format!(
        "{} draws over {} and the nominal validation",
        draws,
        count(parameters, "parameter")
    )
}

/// What a manifest of a grid holds: `cells` cells of `repeat` points each, of `samples`
/// samples.
pub fn planned_grid(cells: usize, repeat: usize, samples: u64) -> String {
    format!(
        "{} x {} of {} samples",
        count(cells, "cell"),
        count(repeat, "point"),
        irqlab_stats::thousands(samples)
    )
}

/// What a manifest of a what-if holds: `draws` draws of `parameters` parameters of
/// `scenario`, the plain run, and with `rows` the validation rows on it.
pub fn planned_whatif(draws: usize, parameters: usize, scenario: &str, rows: bool) -> String {
    format!(
        "{} draws over {} of {}, the plain run{}",
        draws,
        count(parameters, "parameter"),
        scenario,
        if rows {
            " and the validation rows on it"
        } else {
            ""
        }
    )
}

/// `sweep plan`'s summary: the manifest's `points` and `what` they are (`planned_*`), then the
/// commands that run its shards and merge them, for the manifest file `manifest`.
pub fn planned_text(points: usize, what: &str, manifest: &str) -> String {
    let m = manifest;
    format!(
        "{}: {what}\nrun shard I of N (I = 0 .. N-1): irqlab sweep run {m} --shard I --of N --out \
         DIR\nthen: irqlab sweep merge {m} DIR\n",
        count(points, "point")
    )
}

/// `sweep run`'s summary: shard `shard` of `of` ran `points` of the manifest's `total`.
pub fn shard_text(shard: u32, of: u32, points: usize, total: usize) -> String {
    format!("shard {shard} of {of}: {points} of {total} points\n")
}

/// The runs a merged grid's figures draw, each with its label: the cell's `--set` values, or
/// `grid` for a grid of one cell.
pub fn grid_plot_runs(g: &GridReport) -> Vec<(String, RunReport)> {
    if g.cells.len() == 1 {
        vec![("grid".into(), g.cells[0].run.clone())]
    } else {
        g.cells
            .iter()
            .map(|c| (c.set.join(" "), c.run.clone()))
            .collect()
    }
}

/// `irqlab sweep run` of shard `I` of `N` into `results`, for the manifest file `manifest`.
fn run_again(manifest: &str, shard: u32, of: u32, results: &str) -> String {
    format!("  irqlab sweep run {manifest} --shard {shard} --of {of} --out {results}")
}

/// A merge that refused shards' results: its `message`, then the commands that run the
/// shards `again` (`(I, N)`).
pub fn rejected_hint(message: &str, again: &[(u32, u32)], manifest: &str, results: &str) -> String {
    let commands: Vec<String> = again
        .iter()
        .map(|&(s, of)| run_again(manifest, s, of, results))
        .collect();
    format!("{message}:\n{}", commands.join("\n"))
}

/// A merge with points missing: its `message`, then the commands that run the `shards` of
/// `of` again (and the Slurm job array that does), or, where no shard result was found
/// (`of` unknown), how to run them all.
pub fn missing_hint(
    message: &str,
    shards: &[u32],
    of: Option<u32>,
    manifest: &str,
    results: &str,
) -> String {
    let (m, r) = (manifest, results);
    match of {
        Some(of) => {
            let commands: Vec<String> = shards.iter().map(|&s| run_again(m, s, of, r)).collect();
            let array: Vec<String> = shards.iter().map(u32::to_string).collect();
            format!(
                "{message}; run {} again:\n{}\n(in a Slurm job array: sbatch --array={} with the \
                 job script, which must give --of {of})",
                if shards.len() == 1 { "it" } else { "them" },
                commands.join("\n"),
                array.join(",")
            )
        }
        None => format!(
            "{message} (no shard results in {r}); run irqlab sweep run {m} --shard I --of N --out \
             {r} for I = 0 .. N-1"
        ),
    }
}

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
    fn a_plan_says_what_it_holds_and_how_to_run_it() {
        assert_eq!(count(1, "point"), "1 point");
        assert_eq!(count(0, "cell"), "0 cells");
        let what = planned_grid(2, 3, 20_000);
        assert_eq!(what, "2 cells x 3 points of 20,000 samples");
        assert_eq!(
            planned_text(6, &what, "m.json"),
            "6 points: 2 cells x 3 points of 20,000 samples\nrun shard I of N (I = 0 .. N-1): \
             irqlab sweep run m.json --shard I --of N --out DIR\nthen: irqlab sweep merge m.json \
             DIR\n"
        );
        assert_eq!(
            planned_draws(4, 1),
            "4 draws over 1 parameter and the nominal validation"
        );
        assert_eq!(
            planned_whatif(2, 3, "s.toml", true),
            "2 draws over 3 parameters of s.toml, the plain run and the validation rows on it"
        );
        assert_eq!(
            planned_whatif(2, 3, "s.toml", false),
            "2 draws over 3 parameters of s.toml, the plain run"
        );
        assert_eq!(shard_text(1, 3, 4, 12), "shard 1 of 3: 4 of 12 points\n");
    }

    #[test]
    fn a_failed_merge_names_the_shards_to_run_again() {
        assert_eq!(
            rejected_hint("refused", &[(0, 2), (1, 2)], "m.json", "out"),
            "refused:\n  irqlab sweep run m.json --shard 0 --of 2 --out out\n  irqlab sweep run \
             m.json --shard 1 --of 2 --out out"
        );
        assert_eq!(
            missing_hint("missing", &[2], Some(3), "m.json", "out"),
            "missing; run it again:\n  irqlab sweep run m.json --shard 2 --of 3 --out out\n(in a \
             Slurm job array: sbatch --array=2 with the job script, which must give --of 3)"
        );
        assert!(missing_hint("m", &[0, 1], Some(2), "m.json", "out").contains("run them again"));
        assert_eq!(
            missing_hint("none", &[], None, "m.json", "out"),
            "none (no shard results in out); run irqlab sweep run m.json --shard I --of N --out \
             out for I = 0 .. N-1"
        );
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
