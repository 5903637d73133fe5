//! End-to-end tests of the figures `--plot` and `irqlab plot` draw, read back from their SVG:
//! every figure written, legends below the plotting area (never over data), tick labels that
//! read differently on every axis, comparisons overlaying every figure with each run's label,
//! and long series drawn so the bulk stands apart from the extremes.
//!
//! Every command runs with the repository root as its working directory so the relative paths
//! in scenarios and in `experiments/` resolve as they do for a user.

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn irqlab() -> Command {
    let mut cmd = Command::cargo_bin("irqlab").expect("the irqlab binary is built");
    cmd.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    cmd
}

/// Runs `irqlab` with `args` and `dir` last, asserts it exits 0, and returns its stdout.
/// Run irqlab with `args` and `dir`; returns the lines of stderr that list the figures written.
fn run(args: &[&str], dir: &Path) -> String {
    let out = irqlab().args(args).arg(dir).output().expect("irqlab runs");
    assert!(
        out.status.success(),
        "irqlab {args:?} exited with {:?}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr)
        .expect("stderr is UTF-8")
        .lines()
        .filter(|l| l.starts_with("irqlab: wrote "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `irqlab validate ARGS --plot DIR`: the figures it drew, by name. Rows may fail on so short
/// a run (exit 1); the figures are drawn all the same.
fn validate_figures(args: &[&str]) -> BTreeMap<String, String> {
    let tmp = tempfile::tempdir().unwrap();
    let out = irqlab()
        .arg("validate")
        .args(args)
        .arg("--plot")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    svgs(tmp.path())
}

/// A text of an SVG as plotters writes it: anchor point, alignment and content.
#[derive(Debug)]
struct Text {
    x: f64,
    y: f64,
    anchor: String,
    rotated: bool,
    text: String,
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    tag[at..].split('"').next()
}

fn texts(svg: &str) -> Vec<Text> {
    svg.split("<text ")
        .skip(1)
        .map(|t| {
            let (tag, rest) = t.split_once('>').expect("a text tag");
            let tag = format!(" {tag}");
            Text {
                x: attr(&tag, " x").unwrap().parse().unwrap(),
                y: attr(&tag, " y").unwrap().parse().unwrap(),
                anchor: attr(&tag, "text-anchor").unwrap().to_string(),
                rotated: tag.contains("rotate("),
                text: rest.split("</text>").next().unwrap().trim().to_string(),
            }
        })
        .collect()
}

/// The figure's files in `dir`, by name.
fn svgs(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Checks what every figure must have and returns its legend's entries: tick labels distinct
/// along each axis (x labels share a line, y labels a column), and the legend (left-aligned
/// text) below the x axis' description, which is below the plotting area and its tick labels.
fn check_figure(name: &str, svg: &str) -> Vec<String> {
    let texts = texts(svg);
    let mut x_ticks: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    let mut y_ticks: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for t in texts.iter().filter(|t| !t.rotated) {
        match t.anchor.as_str() {
            "middle" => x_ticks.entry(t.y as i64).or_default().push(&t.text),
            "end" => y_ticks.entry(t.x as i64).or_default().push(&t.text),
            _ => {}
        }
    }
    let x_axis = x_ticks
        .values()
        .max_by_key(|v| v.len())
        .unwrap_or_else(|| panic!("{name}: no x tick labels"));
    let y_axis = y_ticks
        .values()
        .max_by_key(|v| v.len())
        .unwrap_or_else(|| panic!("{name}: no y tick labels"));
    for (axis, labels) in [("x", x_axis), ("y", y_axis)] {
        assert!(labels.len() >= 2, "{name}: {axis} axis labels {labels:?}");
        let mut distinct = labels.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            labels.len(),
            "{name}: {axis} axis repeats a label: {labels:?}"
        );
    }
    let x_desc = texts
        .iter()
        .find(|t| !t.rotated && (t.text == "sample number" || t.text.starts_with("latency (")))
        .unwrap_or_else(|| panic!("{name}: no x axis description in {texts:?}"));
    let tick_line = texts
        .iter()
        .find(|t| t.text == x_axis[0] && t.anchor == "middle")
        .unwrap()
        .y;
    assert!(x_desc.y > tick_line, "{name}");
    let legend: Vec<&Text> = texts.iter().filter(|t| t.anchor == "start").collect();
    assert!(!legend.is_empty(), "{name}: no legend");
    for t in &legend {
        assert!(
            t.y > x_desc.y + 10.0,
            "{name}: legend entry {:?} at y {} is not below the axes (description at {})",
            t.text,
            t.y,
            x_desc.y
        );
    }
    legend.iter().map(|t| t.text.clone()).collect()
}

#[test]
fn sim_draws_every_figure_with_its_legend_below_the_axes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "sim",
            "experiments/seed000/ws.toml",
            "--set",
            "delivery=xtpic",
            "--samples",
            "4000",
            "--plot",
        ],
        tmp.path(),
    );
    let figures = svgs(tmp.path());
    // Named after the scenario, the delivery and the tag of the flags (--set, --samples).
    let names: Vec<String> = figures
        .keys()
        .map(|n| {
            let (kind, rest) = n
                .strip_prefix("ws-xtpic-")
                .unwrap()
                .split_once('-')
                .unwrap();
            assert_eq!(kind.len(), 8, "a tag of the flags: {n}");
            rest.to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "cumulative.svg",
            "histogram-body.svg",
            "histogram.svg",
            "series.svg"
        ]
    );
    for (name, svg) in &figures {
        assert!(out.contains(name.as_str()), "{name} not reported in {out}");
        let legend = check_figure(name, svg);
        assert!(
            legend.iter().any(|l| l.starts_with("isr_latency")),
            "{name}: {legend:?}"
        );
    }
}

#[test]
fn long_series_tell_the_bulk_from_the_extremes() {
    // Seed 002's round trip with its spread mechanisms pinned (C1's exit, HWP's clock, the
    // tick's work): almost every sample at one value, rare ones from 0.9 to several us (the
    // tick, the PCH device, the desktop's interrupts-off sections).
    let tmp = tempfile::tempdir().unwrap();
    run(
        &[
            "sim",
            "experiments/seed002/fpga.toml",
            "--samples",
            "200000",
            "--set",
            "platform.cpu.idle_states.1.wake_sigma=0.0",
            "--set",
            "platform.cpu.frequency.low_hz=3.7e9",
            "--set",
            "platform.cpu.frequency.high_hz=3.7e9",
            "--set",
            "kernel.tick.handler_sigma=0.0",
            "--set",
            "kernel.tick.timer_softirq_sigma=0.0",
            "--plot",
        ],
        tmp.path(),
    );
    let (name, svg) = svgs(tmp.path())
        .into_iter()
        .find(|(n, _)| n.starts_with("fpga-msi-") && n.ends_with("-series.svg"))
        .expect("a series figure");
    let legend = check_figure(&name, &svg);
    assert!(
        legend
            .iter()
            .any(|l| l.starts_with("round_trip (200,000 samples, in stretches of")),
        "{legend:?}"
    );
    assert!(legend
        .iter()
        .any(|l| l.contains("dark where its middle 80% of samples lie")));
    // The stretches' bulk (opaque bars) is a thin line; their extremes (translucent) are tall.
    let bars: Vec<(f64, bool)> = svg
        .split("<rect ")
        .skip(2) // the background
        .map(|r| {
            let h: f64 = attr(r, "height").unwrap().parse().unwrap();
            (h, attr(r, "opacity") == Some("1"))
        })
        .collect();
    let dark: Vec<f64> = bars.iter().filter(|b| b.1).map(|b| b.0).collect();
    let pale: Vec<f64> = bars.iter().filter(|b| !b.1).map(|b| b.0).collect();
    assert!(dark.len() > 100, "{} bars", dark.len());
    let thin = dark.iter().filter(|&&h| h <= 2.0).count();
    assert!(thin * 10 >= dark.len() * 9, "{thin} of {} thin", dark.len());
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    assert!(median(pale) > 20.0 * median(dark));
}

#[test]
fn plot_compares_runs_in_every_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (name, set) in [
        ("idle", "device.0.switches=0"),
        ("switches", "device.0.switches=2"),
    ] {
        let json = dir.join(format!("{name}.json"));
        let out = irqlab()
            .args([
                "sim",
                "experiments/seed002/fpga.toml",
                "--samples",
                "200000",
                "--set",
                set,
                "--json",
            ])
            .arg(&json)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let figures_dir = dir.join("figures");
    let mut cmd = irqlab();
    cmd.arg("plot")
        .arg(dir.join("idle.json"))
        .arg(dir.join("switches.json"))
        .arg("--out")
        .arg(&figures_dir);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figures = svgs(&figures_dir);
    let names: Vec<&str> = figures.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "comparison-cumulative.svg",
            "comparison-histogram-body.svg",
            "comparison-histogram.svg",
            "comparison-series.svg"
        ]
    );
    for (name, svg) in &figures {
        let legend = check_figure(name, svg);
        for run in ["idle", "switches"] {
            assert!(
                legend
                    .iter()
                    .any(|l| l.starts_with(&format!("{run} round_trip"))),
                "{name}: no entry for {run} in {legend:?}"
            );
        }
    }
}

#[test]
fn validate_keeps_legends_off_its_overlaid_runs() {
    // Seed 000's six runs: XT-PIC's peaks sat under the legend's box at the top right.
    let figures = validate_figures(&["--only", "ws", "--samples", "1000"]);
    // Named with a tag of --only and --samples.
    let (name, isr) = figures
        .iter()
        .find(|(n, _)| n.starts_with("seed000-isr-") && n.ends_with("-histogram.svg"))
        .expect("seed 000's ISR histogram");
    let legend = check_figure(name, isr);
    for run in ["ws-msi", "ws-ioapic", "ws-xtpic"] {
        assert!(
            legend
                .iter()
                .any(|l| l.starts_with(&format!("{run} isr_latency"))),
            "{legend:?}"
        );
    }
    for (name, svg) in &figures {
        check_figure(name, svg);
    }
}

#[test]
fn uncertainty_draws_a_forest_of_the_rows_with_values() {
    let figures = validate_figures(&[
        "--only",
        "msi-soc-*",
        "--samples",
        "500",
        "--uncertainty",
        "12",
    ]);
    let (name, svg) = figures
        .iter()
        .find(|(n, _)| n.starts_with("uncertainty-forest"))
        .expect("the forest figure");
    let texts: Vec<String> = texts(svg).into_iter().map(|t| t.text).collect();
    // One labelled line per ratio row, with its class; the axis says what it shows.
    for row in ["msi-soc-ioapic (", "msi-soc-xtpic ("] {
        assert!(
            texts.iter().any(|t| t.starts_with(row)),
            "{name}: no line for {row} in {texts:?}"
        );
    }
    assert!(
        texts
            .iter()
            .any(|t| t == "simulated / published (log scale)"),
        "{name}: {texts:?}"
    );
    assert!(
        texts.iter().any(|t| t == "nominal run"),
        "{name}: {texts:?}"
    );
}
