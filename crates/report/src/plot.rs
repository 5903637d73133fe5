//! SVG figures of a run's distributions (`--plot DIR`), read from the same [`RunReport`] every
//! other renderer reads:
//!
//! - `NAME-histogram.svg`: latency histogram with a logarithmic count axis, the view of
//!   OSADL's latency plots and of seed 002's post, where a tail of rare samples stays visible
//!   beside the bulk;
//! - `NAME-cumulative.svg`: the fraction of samples at or below each latency (seed 004, Fig. 4),
//!   on a logarithmic latency axis when a far tail would squeeze the body;
//! - `NAME-histogram-body.svg`: the histogram to the 99th percentile, finely binned, when a far
//!   tail squeezes the bulk into a few bars;
//! - `NAME-series.svg`: latency against sample number (seed 004, Fig. 2), when the run kept its
//!   series (simulations do): a dot per sample for short runs; for long ones, stretch by
//!   stretch, a pale bar from minimum to maximum and a dark one where the middle 80% lie.
//!
//! Every metric of the run is drawn on the same axes, so a run's ISR and tasklet latencies, or
//! a measurement's CPUs, compare at a glance; a comparison overlays its runs in all four. Each
//! legend has a strip of its own below the axes, so it never covers data, and each axis is
//! labelled at ticks chosen here, with as many decimals as their spacing needs.

use irqlab_stats::results::{
    HistogramData, NamedSeries, RunReport, UncertaintyReport, ValidationReport,
};
use irqlab_stats::series::{coarsen, SeriesPoint};
use irqlab_stats::uncertainty::{Band, Class};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

const WIDTH: u32 = 960;
/// The chart's height (caption, plotting area, axes); the legend's strip comes below it.
const CHART_HEIGHT: u32 = 600;
/// Bars across the histogram's range.
const BINS: u64 = 120;
/// At most this many bars in the body view (fine enough for one bar per counter count).
const BODY_BINS: u64 = 240;
const MARGIN: u32 = 16;
const Y_LABEL_AREA: u32 = 80;
const X_LABEL_AREA: u32 = 52;
/// Font sizes as plotters takes them (it writes `size / 1.24` px into the SVG).
const CAPTION_FONT: u32 = 22;
const LABEL_FONT: u32 = 15;
const LEGEND_FONT: u32 = 16;
/// One legend line.
const LEGEND_ROW: u32 = 22;
/// Above and below the legend's lines.
const LEGEND_PAD: u32 = 10;
/// The legend starts under the plotting area's left edge.
const LEGEND_LEFT: u32 = MARGIN + Y_LABEL_AREA;
/// A legend entry's mark, and the gap to its text.
const SWATCH: u32 = 28;
const SWATCH_GAP: u32 = 8;
/// Between legend columns.
const COLUMN_GAP: u32 = 28;

/// Errors drawing figures.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot create the plot directory {path}: {reason}")]
    Dir { path: String, reason: String },
    #[error("cannot draw {path}: {reason}")]
    Draw { path: String, reason: String },
    #[error("the run has no distribution to plot (no histograms in the result)")]
    Empty,
    /// The figure is drawn, but its file cannot be written (`crate::write_atomic`).
    #[error(transparent)]
    Write(#[from] crate::ReportError),
}

/// How a legend entry shows what it names.
#[derive(Clone, Copy, Debug)]
enum Swatch {
    Line(RGBColor),
    Dot(RGBColor),
    /// A stretch of samples: a pale bar (minimum to maximum) around a dark one (its bulk).
    Stretch(RGBColor),
}

/// One line of a legend.
#[derive(Clone, Debug)]
struct Entry {
    swatch: Swatch,
    label: String,
}

impl Entry {
    fn new(swatch: Swatch, label: impl Into<String>) -> Self {
        Entry {
            swatch,
            label: label.into(),
        }
    }
}

/// The legend's columns and lines: as many columns as the widest entry allows.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LegendLayout {
    columns: usize,
    column_width: u32,
    rows: usize,
}

/// The caption's font size: [`CAPTION_FONT`], smaller for a caption that would not fit the
/// figure's width (a long title and "histogram body, to the 99th percentile").
fn caption_font(caption: &str) -> u32 {
    // Mixed-case DejaVu Sans runs about 0.6 em a character.
    let em_per_size = 0.6 / 1.24;
    let fits = f64::from(WIDTH - 2 * MARGIN) / (caption.chars().count() as f64 * em_per_size);
    (fits.floor() as u32).clamp(12, CAPTION_FONT)
}

/// An upper estimate of a legend text's width in px. SVG leaves the font to the viewer and
/// plotters' own estimate (0.46 em per character) is short of DejaVu Sans' digits (0.64 em),
/// so a column laid out with it would run into the next.
fn text_width(text: &str) -> u32 {
    let px = f64::from(LEGEND_FONT) / 1.24;
    (text.chars().count() as f64 * px * 0.64).ceil() as u32
}

/// How many characters of legend text fit across the strip (by [`text_width`]'s estimate).
fn note_columns() -> usize {
    let usable = WIDTH - LEGEND_LEFT - MARGIN;
    (usable / text_width("0").max(1)) as usize
}

/// `text` in lines of at most `columns` characters, broken between words (a word longer than a
/// line gets a line of its own). A flag stays with its value (`--set delivery=msi`).
fn wrap_words(text: &str, columns: usize) -> Vec<String> {
    let mut units: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match units.last_mut() {
            Some(flag)
                if flag.starts_with("--") && !flag.contains(' ') && !word.starts_with("--") =>
            {
                flag.push(' ');
                flag.push_str(word);
            }
            _ => units.push(word.to_string()),
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for word in &units {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= columns => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The note a run's figures carry: its `--set` overrides (`irqlab sim`'s header lists them
/// under `overrides`), so that two figures of one scenario with other settings can be told
/// apart when they are looked at, not only by their file names.
fn run_note(r: &RunReport) -> Option<String> {
    r.config
        .iter()
        .find(|(k, _)| k == "overrides")
        .map(|(_, v)| format!("settings: {v}"))
}

impl LegendLayout {
    fn of(entries: &[Entry]) -> Self {
        let usable = WIDTH - LEGEND_LEFT - MARGIN;
        let column_width = entries
            .iter()
            .map(|e| SWATCH + SWATCH_GAP + text_width(&e.label) + COLUMN_GAP)
            .max()
            .unwrap_or(0);
        let columns = ((usable / column_width.max(1)) as usize).clamp(1, entries.len().max(1));
        LegendLayout {
            columns,
            column_width,
            rows: entries.len().div_ceil(columns),
        }
    }

    /// The legend strip's height: nothing for no entries.
    fn height(&self) -> u32 {
        if self.rows == 0 {
            0
        } else {
            self.rows as u32 * LEGEND_ROW + 2 * LEGEND_PAD
        }
    }
}

/// A figure at `path`: a white canvas with the chart's area on top and, in a strip of its own
/// below the chart's axes, the run's settings (its note) and the legend. A legend inside the
/// plotting area covers data wherever it is put (seed 000's XT-PIC peaks sat under it), so it
/// gets room of its own and the figure grows by its height.
struct Figure<'a> {
    path: &'a Path,
    chart: DrawingArea<SVGBackend<'a>, Shift>,
    legend_area: DrawingArea<SVGBackend<'a>, Shift>,
    legend: Vec<Entry>,
    /// The note's lines, wrapped to the strip's width, above the legend.
    note: Vec<String>,
}

impl<'a> Figure<'a> {
    fn new(svg: &'a mut String, path: &'a Path, legend: Vec<Entry>) -> Result<Self, PlotError> {
        Figure::with_note(svg, path, legend, None)
    }

    /// A figure whose strip also carries `note` (a simulation's `--set` overrides): which run
    /// a figure is of must be readable from the figure itself, not only from its file name.
    fn with_note(
        svg: &'a mut String,
        path: &'a Path,
        legend: Vec<Entry>,
        note: Option<&str>,
    ) -> Result<Self, PlotError> {
        let layout = LegendLayout::of(&legend);
        let note = note.map_or_else(Vec::new, |n| wrap_words(n, note_columns()));
        let note_height = match (note.len() as u32, layout.height()) {
            (0, _) => 0,
            (n, 0) => n * LEGEND_ROW + 2 * LEGEND_PAD,
            (n, _) => n * LEGEND_ROW,
        };
        // Drawn into memory, and written by `save` as every result is: whole or not at all,
        // through a new temporary file, never through a link planted at the figure's name
        // (plotters' own SVGBackend::new would File::create the path, following one).
        let root =
            SVGBackend::with_string(svg, (WIDTH, CHART_HEIGHT + note_height + layout.height()))
                .into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| draw_err(path)(e.to_string()))?;
        let (chart, legend_area) = root.split_vertically(CHART_HEIGHT);
        Ok(Figure {
            path,
            chart,
            legend_area,
            legend,
            note,
        })
    }

    /// Every figure's caption, margins and axis label areas, on the chart's area.
    fn frame(&self, caption: &str) -> ChartBuilder<'_, 'a, SVGBackend<'a>> {
        let mut b = ChartBuilder::on(&self.chart);
        b.caption(caption, ("sans-serif", caption_font(caption)))
            .margin(MARGIN)
            // Room for the last x label, centred on the axis' right end (`1,000,000`).
            .margin_right(40)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA);
        b
    }

    /// Draw the legend and write the file.
    fn finish(self) -> Result<(), PlotError> {
        let err = draw_err(self.path);
        let layout = LegendLayout::of(&self.legend);
        let area = &self.legend_area;
        let font = ("sans-serif", LEGEND_FONT)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (row, line) in self.note.iter().enumerate() {
            let y = (LEGEND_PAD + row as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
            area.draw(&Text::new(
                line.clone(),
                (LEGEND_LEFT as i32, y),
                font.clone(),
            ))
            .map_err(|e| err(e.to_string()))?;
        }
        let below_note = self.note.len();
        for (k, e) in self.legend.iter().enumerate() {
            let (col, row) = (k % layout.columns, below_note + k / layout.columns);
            let x = (LEGEND_LEFT + col as u32 * layout.column_width) as i32;
            let y = (LEGEND_PAD + row as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
            let s = SWATCH as i32;
            let drawn = match e.swatch {
                Swatch::Line(c) => area.draw(&PathElement::new(
                    vec![(x, y), (x + s, y)],
                    c.stroke_width(3),
                )),
                Swatch::Dot(c) => area.draw(&Circle::new((x + s / 2, y), 4, c.filled())),
                Swatch::Stretch(c) => area
                    .draw(&Rectangle::new(
                        [(x + s / 2 - 5, y - 9), (x + s / 2 + 5, y + 9)],
                        c.mix(0.3).filled(),
                    ))
                    .and_then(|_| {
                        area.draw(&Rectangle::new(
                            [(x + s / 2 - 5, y - 3), (x + s / 2 + 5, y + 3)],
                            c.filled(),
                        ))
                    }),
            };
            drawn.map_err(|e| err(e.to_string()))?;
            area.draw(&Text::new(
                e.label.clone(),
                (x + s + SWATCH_GAP as i32, y),
                font.clone(),
            ))
            .map_err(|e| err(e.to_string()))?;
        }
        area.present().map_err(|e| err(e.to_string()))
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A unit that keeps the axis numbers readable: ns below 10 us, us below 10 ms, else ms.
fn unit_for(max_ns: u64) -> (&'static str, f64) {
    if max_ns < 10_000 {
        ("ns", 1.0)
    } else if max_ns < 10_000_000 {
        ("us", 1e3)
    } else {
        ("ms", 1e6)
    }
}

fn palette(i: usize) -> RGBColor {
    [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ][i % 8]
}

/// A safe file-name stem from a title.
fn stem(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').chars().take(60).collect()
}

/// Draw the run's figures into `dir` (created if missing), named after `name`. Returns the
/// files written.
pub fn plot_run(r: &RunReport, dir: &Path, name: &str) -> Result<Vec<PathBuf>, PlotError> {
    // Each metric keeps its colour in every figure of the run.
    let hists: Vec<Colored> = r
        .histograms
        .iter()
        .filter(|h| !h.values.is_empty())
        .enumerate()
        .map(|(i, h)| (h, palette(i)))
        .collect();
    if hists.is_empty() {
        return Err(PlotError::Empty);
    }
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir {
        path: dir.display().to_string(),
        reason: e.to_string(),
    })?;
    let name = stem(name);
    let min_ns = hists.iter().map(|h| h.0.values[0].0).min().unwrap_or(0);
    let max_ns = hists
        .iter()
        .map(|h| h.0.values.last().map_or(0, |v| v.0))
        .max()
        .unwrap_or(1);
    let note = run_note(r);
    let note = note.as_deref();
    let hist_path = dir.join(format!("{name}-histogram.svg"));
    let caption = format!("{}: latency histogram", r.title);
    histogram(&hist_path, &caption, note, &hists, (min_ns, max_ns), BINS)?;
    let cum_path = dir.join(format!("{name}-cumulative.svg"));
    cumulative(&cum_path, &r.title, note, &hists, min_ns, max_ns)?;
    let mut files = vec![hist_path, cum_path];
    // A far tail squeezes the bulk into a few bars: then also draw the bulk (up to the 99th
    // percentile) finely, where a bus clock's quantum shows (seed 004, Fig. 3). Only each run's
    // headline (first) metric: a run's other metrics at this resolution hide it. Several runs
    // (a comparison, a validation's experiment) are overlaid when their bodies together are
    // still narrow beside the whole range.
    let mut heads: Vec<Colored> = Vec::new();
    for h in &hists {
        if !heads.iter().any(|x| x.0.run == h.0.run) {
            heads.push(*h);
        }
    }
    let body_max = heads
        .iter()
        .map(|h| percentile(&[h.0], 0.99))
        .max()
        .unwrap_or(0);
    let body_min = heads.iter().map(|h| h.0.values[0].0).min().unwrap_or(0);
    if body_max > body_min && max_ns - min_ns > 3 * (body_max - body_min) {
        let path = dir.join(format!("{name}-histogram-body.svg"));
        let caption = format!("{}: histogram body, to the 99th percentile", r.title);
        histogram(
            &path,
            &caption,
            note,
            &heads,
            (body_min, body_max),
            BODY_BINS,
        )?;
        files.push(path);
    }
    if !r.series.is_empty() {
        // A series in its metric's colour where the run has that histogram.
        let series: Vec<(&NamedSeries, RGBColor)> = r
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let color = hists
                    .iter()
                    .find(|h| {
                        h.0.metric == s.metric
                            && h.0.run == s.run
                            && h.0.cpu.is_none()
                            && h.0.phase.is_none()
                    })
                    .map_or(palette(hists.len() + i), |h| h.1);
                (s, color)
            })
            .collect();
        let path = dir.join(format!("{name}-series.svg"));
        sample_series(&path, &r.title, note, &series, &r.histograms)?;
        files.push(path);
    }
    Ok(files)
}

/// A metric's distribution and the colour it is drawn in.
type Colored<'a> = (&'a HistogramData, RGBColor);

/// Draw saved runs (`irqlab plot`): one run as [`plot_run`] does, named after its label;
/// several overlaid on the same axes as `comparison-*.svg` (histogram, cumulative, the body
/// view when a far tail squeezes the bulk, and the sample series of every run that kept one),
/// each metric labelled with its run's label (the file's name).
pub fn plot_runs(runs: &[(String, RunReport)], dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    match runs {
        [] => Err(PlotError::Empty),
        [(label, r)] => plot_run(r, dir, label),
        [(_, first), ..] => {
            let labels: Vec<&str> = runs.iter().map(|(l, _)| l.as_str()).collect();
            let mut merged = RunReport {
                title: format!("Comparison of {}", labels.join(", ")),
                // The runs' settings differ; each is its label's file.
                config: Vec::new(),
                histograms: Vec::new(),
                series: Vec::new(),
                ..first.clone()
            };
            for (label, r) in runs {
                merged
                    .histograms
                    .extend(r.histograms.iter().map(|h| HistogramData {
                        run: Some(label.clone()),
                        ..h.clone()
                    }));
                merged.series.extend(r.series.iter().map(|s| NamedSeries {
                    run: Some(label.clone()),
                    ..s.clone()
                }));
            }
            plot_run(&merged, dir, "comparison")
        }
    }
}

/// The value below which `q` of all the histograms' samples lie together.
fn percentile(hists: &[&HistogramData], q: f64) -> u64 {
    let mut all: Vec<(u64, u64)> = hists
        .iter()
        .flat_map(|h| h.values.iter().copied())
        .collect();
    all.sort_unstable();
    let total: u64 = all.iter().map(|v| v.1).sum();
    let want = (total as f64 * q).ceil() as u64;
    let mut acc = 0;
    for (v, c) in all {
        acc += c;
        if acc >= want {
            return v;
        }
    }
    0
}

/// Most stretches drawn across a series figure, about 1.4 px each: finer, neighbours overdraw
/// each other and the figure shows only the extremes of every few.
const MAX_COLUMNS: usize = 600;
/// A stretch's bulk, drawn dark: the samples ranked from its 10th to its 90th percentile.
const BULK: (f64, f64) = (0.1, 0.9);

/// Latency against sample number (seed 004, Fig. 2). Up to [`MAX_COLUMNS`] samples are drawn
/// one dot each. A longer series is drawn stretch by stretch: a pale bar from the stretch's
/// minimum to its maximum, so every spike shows, and over it a dark bar where its middle 80%
/// of samples lie, so a run whose samples are all 1,964 ns but for rare outliers reads as a
/// line at 1,964 ns with spikes, not as a band of wide variation (seed 002's round trip).
fn sample_series(
    path: &Path,
    title: &str,
    note: Option<&str>,
    series: &[(&NamedSeries, RGBColor)],
    hists: &[HistogramData],
) -> Result<(), PlotError> {
    let err = draw_err(path);
    // Each series' stretches as drawn, merged pairwise to at most MAX_COLUMNS, with their size.
    let drawn: Vec<(Vec<SeriesPoint>, u64)> = series
        .iter()
        .map(|(s, _)| {
            let (mut pts, mut stride) = (s.series.points.clone(), s.series.stride);
            while pts.len() > MAX_COLUMNS {
                pts = coarsen(&pts);
                stride *= 2;
            }
            (pts, stride)
        })
        .collect();
    let max_ns = drawn
        .iter()
        .flat_map(|d| d.0.iter().map(|p| p.max_ns))
        .max()
        .unwrap_or(1);
    let min_ns = drawn
        .iter()
        .flat_map(|d| d.0.iter().map(|p| p.min_ns))
        .min()
        .unwrap_or(0);
    let samples = series
        .iter()
        .map(|(s, _)| s.series.samples)
        .max()
        .unwrap_or(1)
        .max(1);
    let (unit, scale) = unit_for(max_ns);
    let pad = ((max_ns - min_ns) / 20).max(1);
    let mut entries: Vec<Entry> = series
        .iter()
        .zip(&drawn)
        .map(|(&(s, color), (_, stride))| {
            let mut label = if *stride == 1 {
                format!("{} ({} samples)", series_label(s), count(s.series.samples))
            } else {
                format!(
                    "{} ({} samples, in stretches of {})",
                    series_label(s),
                    count(s.series.samples),
                    count(*stride)
                )
            };
            // A replicated run keeps the first replication's series only: say so.
            let total: u64 = hists
                .iter()
                .find(|h| h.metric == s.metric && h.run == s.run && h.phase.is_none())
                .map_or(0, |h| h.values.iter().map(|v| v.1).sum());
            if total > s.series.samples {
                label.push_str(&format!(", the first replication's of {}", count(total)));
            }
            let swatch = if *stride == 1 {
                Swatch::Dot(color)
            } else {
                Swatch::Stretch(color)
            };
            Entry::new(swatch, label)
        })
        .collect();
    if drawn.iter().any(|d| d.1 > 1) {
        entries.push(Entry::new(
            Swatch::Stretch(RGBColor(100, 100, 100)),
            format!(
                "each stretch: dark where its middle {:.0}% of samples lie, pale from its \
                 minimum to its maximum",
                100.0 * (BULK.1 - BULK.0)
            ),
        ));
    }
    let mut svg = String::new();
    let fig = Figure::with_note(&mut svg, path, entries, note)?;
    let (y_lo, y_hi) = (
        min_ns.saturating_sub(pad) as f64 / scale,
        (max_ns + pad) as f64 / scale,
    );
    let xt = Ticks::linear(0.0, samples as f64, MAX_TICKS, 1.0);
    let yt = Ticks::linear(y_lo, y_hi, MAX_TICKS, 1.0 / scale);
    let mut chart = fig
        .frame(&format!("{title}: sample series"))
        .build_cartesian_2d(xt.axis(0.0, samples as f64), yt.axis(y_lo, y_hi))
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT + 1))
        .x_desc("sample number")
        .x_label_formatter(&|v| xt.label(v))
        .y_desc(format!("latency ({unit})"))
        .y_label_formatter(&|v| yt.label(v))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    // A bar at least 2 px tall, so a stretch of one value (859 to 862 ns on a 3 us axis)
    // shows as a line rather than vanishing.
    let px = f64::from(chart.plotting_area().dim_in_pixel().1.max(1));
    let min_h = 2.0 * (y_hi - y_lo) / px;
    let bar = |first: u64, n: u64, lo_ns: u64, hi_ns: u64, style: ShapeStyle| {
        let (lo, hi) = (lo_ns as f64 / scale, hi_ns as f64 / scale);
        let grow = ((min_h - (hi - lo)) / 2.0).max(0.0);
        Rectangle::new(
            [(first as f64, lo - grow), ((first + n) as f64, hi + grow)],
            style,
        )
    };
    // All extremes first, then all bulks: no run's pale bars cover another's bulk.
    for (&(_, color), (pts, stride)) in series.iter().zip(&drawn) {
        if *stride > 1 {
            let pale = color.mix(0.3).filled();
            chart
                .draw_series(
                    pts.iter()
                        .map(|p| bar(p.first, p.count, p.min_ns, p.max_ns, pale)),
                )
                .map_err(|e| err(e.to_string()))?;
        }
    }
    for (&(_, color), (pts, stride)) in series.iter().zip(&drawn) {
        if *stride > 1 {
            chart
                .draw_series(pts.iter().map(|p| {
                    let (lo, _) = p.quantile_range(BULK.0);
                    let (_, hi) = p.quantile_range(BULK.1);
                    bar(p.first, p.count, lo, hi, color.filled())
                }))
                .map_err(|e| err(e.to_string()))?;
        } else {
            chart
                .draw_series(pts.iter().map(|p| {
                    Circle::new((p.first as f64, p.min_ns as f64 / scale), 2, color.filled())
                }))
                .map_err(|e| err(e.to_string()))?;
        }
    }
    drop(chart);
    fig.finish()?;
    save(path, &svg)
}

/// A series' legend name: its run (in a comparison) and metric.
fn series_label(s: &NamedSeries) -> String {
    match &s.run {
        Some(r) => format!("{r} {}", s.metric),
        None => s.metric.clone(),
    }
}

/// Draw each experiment's runs overlaid, ISR and tasklet latency separately:
/// `EXPERIMENT-isr[-TAG]-histogram.svg`, `EXPERIMENT-isr[-TAG]-cumulative.svg` and the same for
/// `tasklet`; `tag` tells apart validations made with other flags. No file written (rows of
/// counts and rates only) is an empty list.
pub fn plot_validation(
    v: &ValidationReport,
    dir: &Path,
    tag: Option<&str>,
) -> Result<Vec<PathBuf>, PlotError> {
    let mut files = Vec::new();
    for e in &v.experiments {
        // One figure per metric, the experiment's runs overlaid (workload phases left out).
        for (metric, kind) in [
            ("isr_latency", "isr"),
            ("tasklet_latency", "tasklet"),
            ("round_trip", "round-trip"),
            ("pps_latency", "pps"),
        ] {
            let histograms: Vec<HistogramData> = e
                .histograms
                .iter()
                .filter(|h| h.metric == metric && h.phase.is_none() && !h.values.is_empty())
                .cloned()
                .collect();
            if histograms.is_empty() {
                continue;
            }
            let r = RunReport {
                source: e.experiment.clone(),
                title: e.title.clone(),
                config: Vec::new(),
                metrics: Vec::new(),
                counters: Vec::new(),
                trace: Vec::new(),
                spike: None,
                histograms,
                warnings: Vec::new(),
                series: Vec::new(),
            };
            let name = match tag {
                Some(t) => format!("{}-{kind}-{t}", e.experiment),
                None => format!("{}-{kind}", e.experiment),
            };
            files.extend(plot_run(&r, dir, &name)?);
        }
    }
    if let Some(u) = &v.uncertainty {
        let name = match tag {
            Some(t) => format!("uncertainty-forest-{t}.svg"),
            None => "uncertainty-forest.svg".to_string(),
        };
        let path = dir.join(name);
        if forest(u, &path)? {
            files.push(path);
        }
    }
    // Rows of counts and rates (seed 001's) have no distribution: nothing to draw is not an
    // error of the validation (the caller says so).
    Ok(files)
}

/// The forest figure of `validate --uncertainty`: one line per row with a value, on one log
/// axis of simulated / published (the published point, or the middle of its interval), so
/// ratios, latencies and rates share it: the 1-99% band pale, the 5-95% band dark, the median a
/// white tick, the nominal run a dot, and the published interval shaded. Shape rows have no value
/// and are left to the table. Returns whether any row could be drawn.
fn forest(u: &UncertaintyReport, path: &Path) -> Result<bool, PlotError> {
    let err = draw_err(path);
    struct Line {
        label: String,
        band: Band,
        nominal: Option<f64>,
        published: (f64, f64),
    }
    let lines: Vec<Line> = u
        .rows
        .iter()
        .filter_map(|r| {
            let band = r.band?;
            let [lo, hi] = r.published_interval?;
            let reference = if lo > 0.0 { (lo * hi).sqrt() } else { hi };
            if reference <= 0.0 || reference.is_nan() || r.class == Class::Undecided {
                return None;
            }
            let k = |x: f64| x / reference;
            Some(Line {
                // A calibration row says so here as in every output.
                label: if r.inferred.is_empty() {
                    format!("{} ({})", r.id, r.class.label())
                } else {
                    format!("{} ({}; calibration, not evidence)", r.id, r.class.label())
                },
                band: Band {
                    p1: k(band.p1),
                    p5: k(band.p5),
                    median: k(band.median),
                    p95: k(band.p95),
                    p99: k(band.p99),
                },
                nominal: r.nominal_value.map(k),
                published: (k(lo), k(hi)),
            })
        })
        .collect();
    if lines.is_empty() {
        return Ok(false);
    }
    // The axis: every positive figure drawn, a little beyond; zeros (a rate of 0 in a draw) sit
    // at its left edge.
    let shown = lines.iter().flat_map(|l| {
        [l.band.p1, l.band.p99, l.published.0, l.published.1]
            .into_iter()
            .chain(l.nominal)
    });
    let positive: Vec<f64> = shown.filter(|x| *x > 0.0 && x.is_finite()).collect();
    let lo = positive.iter().copied().fold(f64::INFINITY, f64::min) / 1.3;
    let hi = positive.iter().copied().fold(0.0, f64::max) * 1.3;
    let at = |x: f64| x.clamp(lo, hi);
    let band_color = RGBColor(31, 119, 180);
    let entries = vec![
        Entry::new(
            Swatch::Stretch(band_color),
            "draws: 5-95% (dark) and 1-99% (pale)",
        ),
        Entry::new(Swatch::Dot(RGBColor(214, 39, 40)), "nominal run"),
        Entry::new(
            Swatch::Line(RGBColor(44, 160, 44)),
            "published value (its interval shaded)",
        ),
    ];
    let mut svg = String::new();
    let fig = Figure::new(&mut svg, path, entries)?;
    let n = lines.len();
    let caption = format!(
        "validate --uncertainty: {} draws, simulated / published",
        u.draws
    );
    let mut chart = ChartBuilder::on(&fig.chart)
        .caption(&caption, ("sans-serif", caption_font(&caption)))
        .margin(MARGIN)
        .margin_right(40)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(260)
        .build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
            -0.5f64..(n as f64 - 0.5),
        )
        .map_err(|e| err(e.to_string()))?;
    let labels: Vec<String> = lines.iter().map(|l| l.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|y| {
            let i = y.round();
            if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                labels[n - 1 - i as usize].clone()
            } else {
                String::new()
            }
        })
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT + 1))
        .x_desc("simulated / published (log scale)")
        .x_label_formatter(&|v| sig_number(v, false))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    let pale = band_color.mix(0.3);
    for (i, l) in lines.iter().enumerate() {
        // The first row at the top.
        let y = (n - 1 - i) as f64;
        let shapes = [
            Rectangle::new(
                [(at(l.published.0), y - 0.4), (at(l.published.1), y + 0.4)],
                RGBColor(44, 160, 44).mix(0.25).filled(),
            ),
            Rectangle::new(
                [(at(l.band.p1), y - 0.06), (at(l.band.p99), y + 0.06)],
                pale.filled(),
            ),
            Rectangle::new(
                [(at(l.band.p5), y - 0.14), (at(l.band.p95), y + 0.14)],
                band_color.filled(),
            ),
        ];
        chart.draw_series(shapes).map_err(|e| err(e.to_string()))?;
        chart
            .draw_series([PathElement::new(
                vec![(at(l.band.median), y - 0.2), (at(l.band.median), y + 0.2)],
                WHITE.stroke_width(3),
            )])
            .map_err(|e| err(e.to_string()))?;
        if let Some(x) = l.nominal {
            chart
                .draw_series([Circle::new((at(x), y), 5, RGBColor(214, 39, 40).filled())])
                .map_err(|e| err(e.to_string()))?;
        }
    }
    // Where simulated equals published.
    chart
        .draw_series([PathElement::new(
            vec![(1.0, -0.5), (1.0, n as f64 - 0.5)],
            RGBColor(44, 160, 44).stroke_width(1),
        )])
        .map_err(|e| err(e.to_string()))?;
    drop(chart);
    fig.finish()?;
    save(path, &svg)?;
    Ok(true)
}

/// Write a drawn figure to `path`, whole or not at all, as a new or a regular file only
/// ([`crate::write_file_atomic`]): a link, a device or a FIFO planted at a figure's
/// predictable name is refused, never written through.
fn save(path: &Path, svg: &str) -> Result<(), PlotError> {
    Ok(crate::write_file_atomic(path, svg.as_bytes())?)
}

fn draw_err(path: &Path) -> impl Fn(String) -> PlotError + '_ {
    move |reason| PlotError::Draw {
        path: path.display().to_string(),
        reason,
    }
}

/// `n` linear bins of `width` ns from `lo`: (bin start ns, count) for one metric. Values above
/// `max_ns` are left out (a body view); the last bin holds the rest up to it.
fn binned(h: &HistogramData, lo: f64, width: f64, n: usize, max_ns: u64) -> Vec<(f64, u64)> {
    let mut bins = vec![0u64; n];
    for &(v, c) in h.values.iter().filter(|v| v.0 <= max_ns) {
        let i = (((v as f64 - lo) / width).floor().max(0.0) as usize).min(n - 1);
        bins[i] += c;
    }
    bins.into_iter()
        .enumerate()
        .map(|(i, c)| (lo + i as f64 * width, c))
        .collect()
}

/// The smallest of 1, 2, 5, 10, 20, 50, ... at or above `x`.
fn nice_ceil(x: f64) -> f64 {
    let mut step = 1.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * step >= x * (1.0 - 1e-12) {
                return m * step;
            }
        }
        step *= 10.0;
    }
}

/// The histogram over `[min_ns, max_ns]` in at most `bins` bars.
fn histogram(
    path: &Path,
    caption: &str,
    note: Option<&str>,
    hists: &[Colored],
    (min_ns, max_ns): (u64, u64),
    bins: u64,
) -> Result<(), PlotError> {
    let err = draw_err(path);
    let (unit, scale) = unit_for(max_ns);
    // Bins are a whole number of the data's own quantum (a 250 MHz counter's 4 ns, a 90.112 MHz
    // counter's 11.1 ns), or they would alias against it; at least 1 ns.
    let quantum = hists
        .iter()
        .find_map(|h| h.0.quantum_ns)
        .unwrap_or_else(|| {
            hists
                .iter()
                .flat_map(|h| h.0.values.iter().map(|v| v.0))
                .fold(0, gcd)
                .clamp(1, 1000) as f64
        });
    let span = (max_ns - min_ns) as f64;
    // A round number of quanta (1, 2 or 5 times a power of ten), so the axis can say "per
    // 40 ns bin" rather than "per 74.66 us bin": between bins / 2.5 and `bins` bars.
    let width = nice_ceil(span / bins as f64 / quantum) * quantum;
    // Edges half a quantum off the data's grid, so no value sits on one.
    let lo = (min_ns as f64 - quantum / 2.0 - width).max(0.0);
    let n = ((max_ns as f64 - lo) / width).ceil() as usize + 2;
    let series: Vec<Vec<(f64, u64)>> = hists
        .iter()
        .map(|h| binned(h.0, lo, width, n, max_ns))
        .collect();
    let top = series
        .iter()
        .flat_map(|s| s.iter().map(|b| b.1))
        .max()
        .unwrap_or(1)
        .max(1);
    let entries = hists
        .iter()
        .zip(&series)
        .map(|(&(h, color), s)| {
            let shown: u64 = s.iter().map(|b| b.1).sum();
            let total: u64 = h.values.iter().map(|v| v.1).sum();
            let label = format!(
                "{} ({}{} samples)",
                h.label(),
                if shown < total {
                    format!("{} of ", count(shown))
                } else {
                    String::new()
                },
                count(total),
            );
            Entry::new(Swatch::Line(color), label)
        })
        .collect();
    let mut svg = String::new();
    let fig = Figure::with_note(&mut svg, path, entries, note)?;
    let x_hi = lo + width * n as f64;
    let xt = Ticks::linear(lo / scale, x_hi / scale, MAX_TICKS, 1.0 / scale);
    let mut chart = fig
        .frame(caption)
        .build_cartesian_2d(
            xt.axis(lo / scale, x_hi / scale),
            (0.5f64..(top as f64 * 2.0))
                .log_scale()
                .with_key_points(count_ticks(top as f64 * 2.0)),
        )
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT + 1))
        .x_desc(format!("latency ({unit})"))
        .x_label_formatter(&|v| xt.label(v))
        .y_desc(format!(
            "samples per {} bin (log scale)",
            fmt_width(width, unit, scale)
        ))
        .y_label_formatter(&|v| tick_label(*v, 0, top >= 5_000))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    for (s, h) in series.iter().zip(hists) {
        // Steps: each bin drawn flat across its width, so one-bin spikes show as bars.
        let mut pts = Vec::with_capacity(s.len() * 2 + 2);
        for &(start, c) in s {
            let y = if c == 0 { 0.5 } else { c as f64 };
            pts.push((start / scale, y));
            pts.push(((start + width) / scale, y));
        }
        line(&mut chart, pts, h.1).map_err(&err)?;
    }
    drop(chart);
    fig.finish()?;
    save(path, &svg)
}

/// One metric's line.
fn line<'a, DB: DrawingBackend + 'a, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'a, DB, CT>,
    pts: Vec<(f64, f64)>,
    color: RGBColor,
) -> Result<(), String> {
    chart
        .draw_series(LineSeries::new(pts, color.stroke_width(2)))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Numbers in text without needless decimals: `1000`, `2.5`.
fn axis_number(v: &f64) -> String {
    if (v.fract()).abs() < 1e-9 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Most labelled ticks on a linear axis.
const MAX_TICKS: usize = 10;

/// A linear axis' labelled values: the multiples of one step (1, 2 or 5 times a power of ten)
/// within the range, and the decimals that step needs. Plotters picks its own key points and
/// hands the formatter one value at a time, so a formatter cannot know how many decimals keep
/// neighbours apart (a series axis from 857.9 to 863.1 ns read `862, 862, 861`); choosing the
/// ticks here fixes both.
#[derive(Clone, Debug, PartialEq)]
struct Ticks {
    values: Vec<f64>,
    decimals: usize,
    /// Whole parts grouped in thousands: when any label reaches 10,000, all of them are, so
    /// `5,000` and `10,000` stand side by side rather than `5000` and `10,000`.
    grouped: bool,
}

impl Ticks {
    /// At most `max` ticks in `lo..=hi`, at least `min_step` apart (1 ns for latencies, one
    /// sample for sample numbers: finer ticks would fall between the data's own values).
    fn linear(lo: f64, hi: f64, max: usize, min_step: f64) -> Ticks {
        let span = (hi - lo).abs().max(min_step).max(f64::MIN_POSITIVE);
        let count = |step: f64| ((hi / step + 1e-9).floor() - (lo / step - 1e-9).ceil()) as i64 + 1;
        let mut exp = (span / max.max(2) as f64).log10().floor() as i32 - 1;
        let step = 'found: loop {
            for m in [1.0, 2.0, 5.0] {
                let step = m * 10f64.powi(exp);
                if step >= min_step * (1.0 - 1e-9) && count(step) <= max as i64 {
                    break 'found step;
                }
            }
            exp += 1;
        };
        // The decimals that write the step exactly (0.5 needs one, 0.25 cannot occur).
        let decimals = (0..12)
            .find(|&d| {
                let scaled = step * 10f64.powi(d as i32);
                (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
            })
            .unwrap_or(12);
        let first = (lo / step - 1e-9).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        let values: Vec<f64> = (first..=last).map(|k| k as f64 * step).collect();
        Ticks {
            grouped: values.iter().any(|v| v.abs() >= 10_000.0),
            values,
            decimals,
        }
    }

    fn label(&self, v: &f64) -> String {
        tick_label(*v, self.decimals, self.grouped)
    }

    /// A linear axis from `lo` to `hi` labelled at these ticks.
    fn axis(&self, lo: f64, hi: f64) -> LinearAxis {
        LinearAxis {
            inner: (lo..hi).into(),
            ticks: self.values.clone(),
        }
    }
}

/// A linear axis with chosen ticks. Plotters' `with_key_points` would do, but its linear f64
/// axis then loses the formatter `configure_mesh` needs.
#[derive(Clone)]
struct LinearAxis {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for LinearAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold grid lines at the ticks only; no finer unlabelled grid.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// `v` with `decimals` decimals, its whole part grouped in thousands if `grouped` (`200,000`,
/// `1964`, `0.25`).
fn tick_label(v: f64, decimals: usize, grouped: bool) -> String {
    let s = format!("{:.*}", decimals, v);
    let s = if s
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        s.trim_start_matches('-').to_string() // no "-0"
    } else {
        s
    };
    let (sign, rest) = s.strip_prefix('-').map_or(("", s.as_str()), |r| ("-", r));
    let (whole, frac) = rest
        .split_once('.')
        .map_or((rest, None), |(w, f)| (w, Some(f)));
    if !grouped || whole.len() < 4 {
        return s;
    }
    let mut out = sign.to_string();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// A count as text writes it: `1964`, `20,000`.
fn count(n: u64) -> String {
    tick_label(n as f64, 0, n >= 10_000)
}

/// A logarithmic count axis' labels: the powers of ten up to `top` (with 2 and 5 when there
/// are fewer than three), grouped in thousands.
fn count_ticks(top: f64) -> Vec<f64> {
    let decades: Vec<f64> = (0..=top.log10().floor().max(0.0) as i32)
        .map(|d| 10f64.powi(d))
        .collect();
    if decades.len() >= 3 {
        return decades;
    }
    decades
        .iter()
        .flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * d))
        .filter(|v| *v <= top)
        .collect()
}

fn fmt_width(width_ns: f64, unit: &str, scale: f64) -> String {
    format!("{} {unit}", axis_number(&(width_ns / scale)))
}

/// A tail this many times the minimum compresses a linear axis' body into its first few pixels;
/// past it, the cumulative figure's latency axis is logarithmic.
const LOG_AXIS_SPAN: u64 = 5;

fn cumulative(
    path: &Path,
    title: &str,
    note: Option<&str>,
    hists: &[Colored],
    min_ns: u64,
    max_ns: u64,
) -> Result<(), PlotError> {
    let err = draw_err(path);
    let (unit, scale) = unit_for(max_ns);
    let caption = format!("{title}: cumulative distribution");
    // The curves: a step at every recorded value, in percent of all samples (overflows too).
    let curves: Vec<(Vec<(f64, f64)>, RGBColor)> = hists
        .iter()
        .map(|&(h, color)| {
            let total: u64 = h.values.iter().map(|v| v.1).sum::<u64>() + h.overflows;
            let mut acc = 0u64;
            let mut pts = vec![(h.values[0].0 as f64 / scale, 0.0)];
            for &(v, c) in &h.values {
                let x = v as f64 / scale;
                pts.push((x, 100.0 * acc as f64 / total as f64));
                acc += c;
                pts.push((x, 100.0 * acc as f64 / total as f64));
            }
            (pts, color)
        })
        .collect();
    let entries = hists
        .iter()
        .map(|&(h, color)| Entry::new(Swatch::Line(color), h.label()))
        .collect();
    let mut svg = String::new();
    let fig = Figure::with_note(&mut svg, path, entries, note)?;
    if min_ns > 0 && max_ns > LOG_AXIS_SPAN * min_ns {
        // A far tail (seed 004's clock collisions, seed 002's rare 10 us samples): a log axis
        // keeps the body, where most samples lie, as wide as the tail.
        let lo = min_ns as f64 * 0.95 / scale;
        let hi = max_ns as f64 * 1.05 / scale;
        let chart = fig
            .frame(&caption)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
                percent_axis(),
            )
            .map_err(|e| err(e.to_string()))?;
        cumulative_curves(
            chart,
            format!("latency ({unit}, logarithmic)"),
            // Grouped as the linear axes are: all labels once one reaches 10,000.
            &|v| sig_number(v, hi >= 10_000.0),
            curves,
        )
        .map_err(&err)?;
    } else {
        let pad = ((max_ns - min_ns) / 50).max(1);
        let (lo, hi) = (
            min_ns.saturating_sub(pad) as f64 / scale,
            (max_ns + pad) as f64 / scale,
        );
        let xt = Ticks::linear(lo, hi, MAX_TICKS, 1.0 / scale);
        let chart = fig
            .frame(&caption)
            .build_cartesian_2d(xt.axis(lo, hi), percent_axis())
            .map_err(|e| err(e.to_string()))?;
        cumulative_curves(chart, format!("latency ({unit})"), &|v| xt.label(v), curves)
            .map_err(&err)?;
    }
    fig.finish()?;
    save(path, &svg)
}

/// The cumulative figures' share axis, 0 to 100% labelled every 10%.
fn percent_axis() -> LinearAxis {
    Ticks::linear(0.0, 100.0, 11, 1.0).axis(0.0, 100.0)
}

/// Labelled values for a logarithmic axis from `lo` to `hi`: the 1-2-3-4-5-6-8 steps of each
/// decade, thinned to 1-2-5 or to the decades when that would crowd the axis.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    const MAX_TICKS: usize = 14;
    let decades = lo.log10().floor() as i32..=hi.log10().ceil() as i32;
    let within = |mantissas: &[f64]| -> Vec<f64> {
        decades
            .clone()
            .flat_map(|d| mantissas.iter().map(move |m| m * 10f64.powi(d)))
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    [
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0][..],
        &[1.0, 2.0, 5.0],
        &[1.0],
    ]
    .into_iter()
    .map(within)
    .find(|t| t.len() <= MAX_TICKS)
    .unwrap_or_else(|| {
        // More decades than labels: every k-th decade.
        let all = within(&[1.0]);
        let k = all.len().div_ceil(MAX_TICKS);
        all.into_iter().step_by(k).collect()
    })
}

/// A log axis' labels: three significant figures, so that ticks a decade or more below the
/// axis unit stay distinct (`0.002`, `0.005` ms) instead of rounding to `0`.
fn sig_number(v: &f64, grouped: bool) -> String {
    if *v <= 0.0 || *v >= 100.0 {
        return tick_label(*v, 0, grouped);
    }
    let decimals = (2 - v.log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The cumulative figure's mesh and curves, on a linear or a logarithmic latency axis.
fn cumulative_curves<'a, X>(
    mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, LinearAxis>>,
    x_desc: String,
    x_label: &dyn Fn(&f64) -> String,
    curves: Vec<(Vec<(f64, f64)>, RGBColor)>,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT + 1))
        .x_desc(x_desc)
        .x_label_formatter(x_label)
        .y_desc("samples at or below (%)")
        .y_label_formatter(&|v| tick_label(*v, 0, false))
        .draw()
        .map_err(|e| e.to_string())?;
    for (pts, color) in curves {
        line(&mut chart, pts, color)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_stats::series::SampleSeries;
    use irqlab_stats::LatencyHistogram;

    /// A text of an SVG: its anchor point and content.
    #[derive(Debug)]
    struct SvgText {
        x: f64,
        y: f64,
        text: String,
    }

    fn attr(tag: &str, name: &str) -> Option<f64> {
        let tag = format!(" {tag}");
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[at..].split('"').next()?.parse().ok()
    }

    fn svg_texts(svg: &str) -> Vec<SvgText> {
        svg.split("<text ")
            .skip(1)
            .map(|t| {
                let (tag, rest) = t.split_once('>').unwrap();
                SvgText {
                    x: attr(tag, "x").unwrap(),
                    y: attr(tag, "y").unwrap(),
                    text: rest.split("</text>").next().unwrap().trim().to_string(),
                }
            })
            .collect()
    }

    /// The plotting area (x0, y0, x1, y1) in px, from its axis lines: the longest vertical and
    /// horizontal black lines.
    fn plot_area(svg: &str) -> (f64, f64, f64, f64) {
        let mut v = (0.0, 0.0, 0.0);
        let mut h = (0.0, 0.0, 0.0);
        for tag in svg.split("<polyline ").skip(1) {
            let tag = tag.split("/>").next().unwrap();
            if !tag.contains(r##"stroke="#000000""##) {
                continue;
            }
            let pts: Vec<(f64, f64)> = tag
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            if let [(x0, y0), (x1, y1)] = pts[..] {
                if x0 == x1 && (y1 - y0).abs() > v.2 - v.1 {
                    v = (x0, y0.min(y1), y0.max(y1));
                }
                if y0 == y1 && (x1 - x0).abs() > h.2 - h.1 {
                    h = (y0, x0.min(x1), x0.max(x1));
                }
            }
        }
        (h.1, v.1, h.2, v.2)
    }

    /// Every label in `labels` is in the figure's legend, below the plotting area and the
    /// x axis' description (the text starting with `x_desc`), inside the figure's width; returns how many legend lines there are.
    fn assert_legend_outside(svg: &str, x_desc: &str, labels: &[String]) -> usize {
        let texts = svg_texts(svg);
        let (x0, _, x1, bottom) = plot_area(svg);
        assert!(x1 - x0 > 600.0, "plotting area {x0}..{x1}");
        let desc = texts
            .iter()
            .find(|t| t.text.starts_with(x_desc))
            .unwrap_or_else(|| panic!("no {x_desc} in {texts:?}"));
        assert!(desc.y > bottom);
        let mut rows: Vec<i64> = Vec::new();
        for label in labels {
            let t = texts
                .iter()
                .find(|t| &t.text == label)
                .unwrap_or_else(|| panic!("no legend entry {label} in {texts:?}"));
            // Its line's top edge (the text is centred on y) below the description's text.
            let top = t.y - f64::from(LEGEND_ROW) / 2.0;
            assert!(top > desc.y + 10.0, "{label} at {} over the chart", t.y);
            let right = t.x + f64::from(text_width(label));
            assert!(
                t.x >= 0.0 && right <= f64::from(WIDTH),
                "{label}: {}..{right}",
                t.x
            );
            rows.push(t.y as i64);
        }
        let height = attr(svg.split("<svg ").nth(1).unwrap(), "height").unwrap();
        assert!(rows.iter().all(|&y| (y as f64) < height));
        rows.sort_unstable();
        rows.dedup();
        rows.len()
    }

    fn histogram_of(values: impl IntoIterator<Item = u64>) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        values.into_iter().for_each(|v| h.record(v));
        h
    }

    fn run_with(histograms: Vec<HistogramData>, series: Vec<NamedSeries>) -> RunReport {
        RunReport {
            source: "test".into(),
            title: "Round trip".into(),
            config: vec![],
            metrics: vec![],
            counters: vec![],
            trace: vec![],
            spike: None,
            histograms,
            warnings: vec![],
            series,
        }
    }

    #[test]
    fn legends_sit_below_the_plotting_area_in_every_figure() {
        // Seed 002's shape: a peak with a far tail (all four figures) and a second metric.
        let values = |base: u64| {
            (0..20_000u64).map(move |i| {
                if i % 997 == 0 {
                    base * 3
                } else {
                    base + i % 3 * 4
                }
            })
        };
        let mut series = SampleSeries::new(64);
        values(1964).for_each(|v| series.record(v));
        let r = run_with(
            vec![
                HistogramData::of("round_trip", &histogram_of(values(1964))),
                HistogramData::of("isr_latency", &histogram_of(values(1500))),
            ],
            vec![NamedSeries {
                metric: "round_trip".into(),
                run: None,
                series,
            }],
        );
        let dir = tempfile::tempdir().unwrap();
        let files = plot_run(&r, dir.path(), "legend").unwrap();
        assert_eq!(files.len(), 4, "{files:?}");
        for f in &files {
            let svg = std::fs::read_to_string(f).unwrap();
            let name = f.file_name().unwrap().to_string_lossy();
            let texts = svg_texts(&svg);
            let legend: Vec<String> = texts
                .iter()
                .filter(|t| {
                    (t.text.starts_with("round_trip") || t.text.starts_with("isr_latency"))
                        && !t.text.contains(": ") // a caption
                })
                .map(|t| t.text.clone())
                .collect();
            assert!(!legend.is_empty(), "{name}: no legend");
            let x_desc = if name.ends_with("-series.svg") {
                "sample number"
            } else {
                "latency ("
            };
            assert_legend_outside(&svg, x_desc, &legend);
        }
        // Many runs (validate's seed 000): the legend takes columns and lines of its own.
        let many: Vec<HistogramData> = [
            "ws-msi",
            "ws-ioapic",
            "ws-xtpic",
            "soc-msi",
            "soc-ioapic",
            "soc-xtpic",
        ]
        .iter()
        .enumerate()
        .map(|(i, run)| HistogramData {
            run: Some(run.to_string()),
            ..HistogramData::of(
                "isr_latency",
                &histogram_of((0..100).map(|k| 800 + 1000 * i as u64 + k)),
            )
        })
        .collect();
        let labels: Vec<String> = many.iter().map(|h| h.label()).collect();
        let files = plot_run(&run_with(many, vec![]), dir.path(), "many").unwrap();
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        let rows = assert_legend_outside(&svg, "latency (", &labels);
        assert!((2..=6).contains(&rows), "{rows} lines");
    }

    #[test]
    fn a_runs_figures_carry_its_overrides_above_the_legend() {
        let set = "--set device.0.nic.gap_us=6 --set device.1.nic.gap_us=6 --set \
                   kernel.threads.enabled=true --set kernel.sched.preemption=rt --set \
                   cyclictest.priority=40 --set kernel.threads.hrtimer_wakeup=softirq";
        let mut r = run_with(
            vec![HistogramData::of(
                "round_trip",
                &histogram_of((0..1000u64).map(|i| 1000 + i % 50)),
            )],
            vec![],
        );
        r.config = vec![
            ("random seed".into(), "1".into()),
            ("overrides".into(), set.into()),
        ];
        let dir = tempfile::tempdir().unwrap();
        let note = wrap_words(&format!("settings: {set}"), note_columns());
        assert!(note.len() >= 2, "a long note wraps: {note:?}");
        // Between flags, never between a flag and its value.
        assert!(
            note[1..].iter().all(|l| l.starts_with("--set ")),
            "{note:?}"
        );
        assert!(note.iter().all(|l| !l.ends_with("--set")), "{note:?}");
        for f in plot_run(&r, dir.path(), "noted").unwrap() {
            let svg = std::fs::read_to_string(&f).unwrap();
            // Every line of the note, outside the chart, each on a line of its own.
            assert_eq!(assert_legend_outside(&svg, "latency (", &note), note.len());
            let texts = svg_texts(&svg);
            let last = texts
                .iter()
                .find(|t| t.text == note[note.len() - 1])
                .unwrap();
            let legend = texts
                .iter()
                .find(|t| t.text.starts_with("round_trip") && !t.text.contains(": "))
                .unwrap();
            assert!(last.y < legend.y, "the legend under the note");
        }
        // Several runs compared have several settings: no one run's note.
        let files = plot_runs(
            &[("a".into(), r.clone()), ("b".into(), r.clone())],
            dir.path(),
        )
        .unwrap();
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(!svg.contains("settings:"), "{}", files[0].display());
    }

    #[test]
    fn bins_put_every_sample_somewhere() {
        let h = HistogramData {
            values: vec![(100, 5), (150, 7), (10_000, 1)],
            ..HistogramData::of("x", &irqlab_stats::LatencyHistogram::new())
        };
        let b = binned(&h, 50.0, 100.0, 121, 10_000);
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), 13);
        assert_eq!(b[0], (50.0, 5));
        assert_eq!(b[1], (150.0, 7));
        assert_eq!(b[99].1, 1); // 10,000 ns falls in bin (10,000 - 50) / 100
    }

    /// A simulated run read back from its JSON: seed 002's shape, a peak at `peak_ns` and a
    /// far tail, with its series.
    fn saved_run(peak_ns: u64) -> RunReport {
        let values: Vec<u64> = (0..50_000u64)
            .map(|i| {
                if i % 499 == 0 {
                    peak_ns * 4
                } else {
                    peak_ns + i % 2 * 4
                }
            })
            .collect();
        let mut series = SampleSeries::new(256);
        values.iter().for_each(|&v| series.record(v));
        let r = run_with(
            vec![
                HistogramData::of("round_trip", &histogram_of(values.iter().copied())),
                HistogramData::of("isr_latency", &histogram_of(values.iter().map(|v| v / 2))),
            ],
            vec![NamedSeries {
                metric: "round_trip".into(),
                run: None,
                series,
            }],
        );
        serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap()
    }

    #[test]
    fn series_ranges_survive_json_in_one_line_a_point() {
        let mut series = SampleSeries::new(2);
        for v in [1964, 1964, 4320, 1964, 900, 1000] {
            series.record(v);
        }
        let json = serde_json::to_string_pretty(&series).unwrap();
        assert!(json.contains(r#""values": "1964:3 4320:1""#), "{json}");
        let back: SampleSeries = serde_json::from_str(&json).unwrap();
        assert_eq!(back, series);
        // Merged ranges, and a point from a file written before ranges were kept.
        let point: irqlab_stats::series::SeriesPoint = serde_json::from_str(
            r#"{"first":0,"count":9,"min_ns":5,"max_ns":9,"values":"5-7:4 9:5"}"#,
        )
        .unwrap();
        assert_eq!(point.quantile_range(0.5), (9, 9));
        let old: irqlab_stats::series::SeriesPoint =
            serde_json::from_str(r#"{"first":0,"count":4,"min_ns":5,"max_ns":9}"#).unwrap();
        assert_eq!(old.quantile_range(0.5), (5, 9));
        let bad = serde_json::from_str::<irqlab_stats::series::SeriesPoint>(
            r#"{"first":0,"count":4,"min_ns":5,"max_ns":9,"values":"5-9"}"#,
        );
        assert!(bad.unwrap_err().to_string().contains("lo[-hi]:count"));
    }

    #[test]
    fn comparisons_overlay_every_figure_with_every_runs_label() {
        let runs = vec![
            ("msi".to_string(), saved_run(1964)),
            ("ioapic".to_string(), saved_run(2100)),
        ];
        let dir = tempfile::tempdir().unwrap();
        let files = plot_runs(&runs, dir.path()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "comparison-histogram.svg",
                "comparison-cumulative.svg",
                "comparison-histogram-body.svg",
                "comparison-series.svg"
            ]
        );
        for f in &files {
            let svg = std::fs::read_to_string(f).unwrap();
            let texts = svg_texts(&svg);
            assert!(
                texts[0].text.starts_with("Comparison of msi, ioapic: "),
                "{:?}",
                texts[0]
            );
            for run in ["msi", "ioapic"] {
                // The headline metric of each run in every figure; the body view has only it.
                let entry = texts
                    .iter()
                    .find(|t| t.text.starts_with(&format!("{run} round_trip")))
                    .unwrap_or_else(|| panic!("{f:?} has no entry for {run}: {texts:?}"));
                assert!(entry.y > f64::from(CHART_HEIGHT), "{f:?}: {entry:?}");
            }
            let isr = texts
                .iter()
                .any(|t| t.text.starts_with("ioapic isr_latency"));
            let name = f.file_name().unwrap().to_string_lossy();
            assert_eq!(
                isr,
                name.ends_with("-histogram.svg") || name.ends_with("-cumulative.svg"),
                "{name}"
            );
        }
        // Colours follow the run and metric through the figures: each run's headline in the
        // same colour in the histogram, its body view and its series.
        let colour_of = |file: &str, label: &str| -> String {
            let svg = std::fs::read_to_string(dir.path().join(file)).unwrap();
            let at = svg.find(label).unwrap();
            // The swatch: the element drawn just before the entry's text.
            let before = &svg[..svg[..at].rfind("<text").unwrap()];
            let swatch = &before[before.rfind('<').unwrap()..];
            let colour = swatch
                .find("stroke=\"#")
                .or_else(|| swatch.find("fill=\"#"))
                .unwrap();
            swatch[colour..].split('"').nth(1).unwrap().to_string()
        };
        for run in ["msi", "ioapic"] {
            let label = format!("{run} round_trip");
            let c = colour_of("comparison-histogram.svg", &label);
            assert_eq!(c, colour_of("comparison-histogram-body.svg", &label));
            assert_eq!(c, colour_of("comparison-series.svg", &label));
        }
    }

    /// A bar's top and height, in px.
    type Bar = (f64, f64);

    /// The bars of an SVG filled with `colour`, dark (opaque) and pale.
    fn bars(svg: &str, colour: &str) -> (Vec<Bar>, Vec<Bar>) {
        let (mut dark, mut pale) = (Vec::new(), Vec::new());
        for tag in svg.split("<rect ").skip(1) {
            let tag = tag.split("/>").next().unwrap();
            if !tag.contains(&format!("fill=\"{colour}\"")) {
                continue;
            }
            let bar = (attr(tag, "y").unwrap(), attr(tag, "height").unwrap());
            if attr(tag, "opacity") == Some(1.0) {
                dark.push(bar);
            } else {
                pale.push(bar);
            }
        }
        (dark, pale)
    }

    #[test]
    fn long_series_show_where_most_samples_lie() {
        // Seed 002's round trip: every sample 1,964 ns but one in 500 anywhere from 0.9 to
        // 4.5 us. Every stretch's minimum and maximum span the outliers; its bulk is 1,964.
        let mut series = SampleSeries::new(4096);
        let mut x = 7u64;
        for i in 0..1_000_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            series.record(if i % 500 == 3 {
                900 + (x >> 33) % 3600
            } else {
                1964
            });
        }
        let r = run_with(
            vec![],
            vec![NamedSeries {
                metric: "round_trip".into(),
                run: None,
                series,
            }],
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.svg");
        let colour = palette(0);
        sample_series(&path, "t", None, &[(&r.series[0], colour)], &[]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let hex = format!("#{:02X}{:02X}{:02X}", colour.0, colour.1, colour.2);
        let (dark, pale) = bars(&svg, &hex);
        // At most MAX_COLUMNS stretches (and the legend's swatch).
        assert!(
            dark.len() <= MAX_COLUMNS + 1 && dark.len() > MAX_COLUMNS / 2,
            "{}",
            dark.len()
        );
        assert_eq!(pale.len(), dark.len());
        // The bulk: a line 2 px thick, all stretches at the same height; the extremes tall.
        let (_, y0, _, y1) = plot_area(&svg);
        let data = |b: &&(f64, f64)| b.0 < y1;
        assert!(
            dark.iter()
                .filter(data)
                .all(|b| b.1 <= 2.0 && b.0 == dark[0].0),
            "{dark:?}"
        );
        let tall = pale
            .iter()
            .filter(data)
            .filter(|b| b.1 > (y1 - y0) / 10.0)
            .count();
        assert!(tall * 10 > pale.len() * 9, "{tall} of {}", pale.len());
        // And the legend says which is which.
        let texts = svg_texts(&svg);
        assert!(texts.iter().any(|t| t
            .text
            .starts_with("round_trip (1,000,000 samples, in stretches of")));
        assert!(texts
            .iter()
            .any(|t| t.text.contains("dark where its middle 80% of samples lie")));
        // A short series: one dot per sample at its value.
        let mut short = SampleSeries::new(4096);
        (0..100).for_each(|i| short.record(1000 + i));
        let s = NamedSeries {
            metric: "isr_latency".into(),
            run: None,
            series: short,
        };
        sample_series(&path, "t", None, &[(&s, colour)], &[]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert_eq!(svg.matches("<circle").count(), 101); // and the legend's
        assert!(!svg.contains("middle 80%"));
    }

    #[test]
    fn figures_carry_title_units_and_legend() {
        use irqlab_stats::results::RunReport;
        let mut h = irqlab_stats::LatencyHistogram::new();
        for ns in [2_000, 2_100, 2_200, 2_250, 6_900] {
            h.record(ns);
        }
        let r = RunReport {
            source: "test".into(),
            title: "Round trip".into(),
            config: vec![],
            metrics: vec![],
            counters: vec![],
            trace: vec![],
            spike: None,
            histograms: vec![HistogramData::of("round_trip", &h)],
            warnings: vec![],
            series: Vec::new(),
        };
        let dir = tempfile::tempdir().unwrap();
        let files = plot_run(&r, dir.path(), "My run").unwrap();
        assert_eq!(files.len(), 2);
        assert!(files[0].ends_with("my-run-histogram.svg"));
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.contains("Round trip: latency histogram"));
        assert!(svg.contains("latency (ns)"));
        assert!(svg.contains("samples per 50 ns bin (log scale)"));
        assert!(svg.contains("round_trip (5 samples)"));
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        assert!(svg.contains("samples at or below (%)"));
        // 2.0 to 6.9 us: within LOG_AXIS_SPAN, a linear latency axis.
        assert!(svg.contains("latency (ns)"), "linear axis");
        // A tail at 60 us, 30 times the minimum: the cumulative axis turns logarithmic.
        let mut tail = h.clone();
        tail.record(60_000);
        let r = RunReport {
            histograms: vec![HistogramData::of("round_trip", &tail)],
            ..r
        };
        let files = plot_run(&r, dir.path(), "tail").unwrap();
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        assert!(svg.contains("latency (us, logarithmic)"));
        let empty = RunReport {
            histograms: vec![],
            ..r
        };
        assert!(matches!(
            plot_run(&empty, dir.path(), "x"),
            Err(PlotError::Empty)
        ));
    }

    #[test]
    fn log_ticks_label_each_decade_without_crowding() {
        assert_eq!(
            log_ticks(3.2, 116.0),
            vec![4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 80.0, 100.0]
        );
        // Four decades at 1-2-3-4-5-6-8 would be 28 labels: 1-2-5 instead.
        assert_eq!(log_ticks(1.0, 10_000.0).len(), 13);
        assert_eq!(
            log_ticks(1.0, 1e9),
            vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]
        );
        // Thirty decades: every third.
        assert_eq!(log_ticks(1.0, 1e29).len(), 10);
    }

    #[test]
    fn log_labels_below_the_unit_stay_distinct() {
        // A 0.9 us body under a 15 ms tail, labelled in ms.
        let labels: Vec<String> = log_ticks(0.0009, 15.0)
            .iter()
            .map(|v| sig_number(v, false))
            .collect();
        assert_eq!(labels[..3], ["0.001", "0.002", "0.005"]);
        assert_eq!(labels.last().map(String::as_str), Some("10"));
        let mut distinct = labels.clone();
        distinct.dedup();
        assert_eq!(distinct, labels);
        assert_eq!(sig_number(&1.5, false), "1.5");
        assert_eq!(sig_number(&250.0, false), "250");
        assert_eq!(sig_number(&8000.0, true), "8,000");
    }

    #[test]
    fn tick_labels_are_distinct_on_every_axis() {
        let labels = |t: &Ticks| -> Vec<String> { t.values.iter().map(|v| t.label(v)).collect() };
        // The series axis that read 862, 862, 861: 857.9 to 863.1 ns.
        let t = Ticks::linear(857.9, 863.1, MAX_TICKS, 1.0);
        assert_eq!(labels(&t), ["858", "859", "860", "861", "862", "863"]);
        // One value throughout (861 to 863 after padding): whole ns, never 861.5.
        assert_eq!(
            labels(&Ticks::linear(861.0, 863.0, MAX_TICKS, 1.0)),
            ["861", "862", "863"]
        );
        // In us, a 4 ns quantum wide: decimals from the step.
        let t = Ticks::linear(1.9, 1.97, MAX_TICKS, 0.001);
        assert_eq!(labels(&t)[..3], ["1.90", "1.91", "1.92"]);
        // Sample numbers grouped in thousands.
        let t = Ticks::linear(0.0, 1e6, MAX_TICKS, 1.0);
        assert_eq!(
            labels(&t),
            ["0", "200,000", "400,000", "600,000", "800,000", "1,000,000"]
        );
        let t = Ticks::linear(0.0, 20_000.0, MAX_TICKS, 1.0);
        assert_eq!(labels(&t)[1..3], ["5,000", "10,000"]);
        // Latencies below 10,000 stay as the text tables write them.
        assert_eq!(
            labels(&Ticks::linear(0.0, 4500.0, MAX_TICKS, 1.0))[2],
            "1000"
        );
        assert_eq!(labels(&Ticks::linear(0.0, 100.0, 11, 1.0)).len(), 11);
        // Any range, any unit: between 2 and MAX_TICKS ticks inside it, no two labels alike.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..20_000 {
            let min_step = [1.0, 1e-3, 1e-6][(next() * 3.0) as usize];
            let span = min_step * 2.0 * 10f64.powf(next() * 9.0);
            let lo = next() * 10f64.powf(next() * 8.0) * min_step * 1000.0;
            let hi = lo + span;
            let t = Ticks::linear(lo, hi, MAX_TICKS, min_step);
            let l = labels(&t);
            assert!((2..=MAX_TICKS).contains(&l.len()), "{lo}..{hi}: {l:?}");
            assert!(t
                .values
                .iter()
                .all(|v| (lo - 1e-9 * hi..=hi * (1.0 + 1e-9)).contains(v)));
            let mut distinct = l.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(
                distinct.len(),
                l.len(),
                "{lo}..{hi} step >= {min_step}: {l:?}"
            );
        }
    }

    #[test]
    fn long_captions_shrink_to_fit() {
        let short = "Round trip: latency histogram";
        assert_eq!(caption_font(short), CAPTION_FONT);
        let long = "Seed 004: PPS on the ISA parallel port, K6/233, FreeBSD 1998-07: histogram \
                    body, to the 99th percentile";
        let size = caption_font(long);
        assert!(size < CAPTION_FONT);
        let px = long.chars().count() as f64 * f64::from(size) / 1.24 * 0.6;
        assert!(px <= f64::from(WIDTH - 2 * MARGIN), "{px}");
    }

    #[test]
    fn bins_are_round_numbers_of_quanta() {
        assert_eq!(nice_ceil(0.3), 1.0);
        assert_eq!(nice_ceil(1.0), 1.0);
        assert_eq!(nice_ceil(7.5), 10.0);
        assert_eq!(nice_ceil(74_663.0), 100_000.0);
        assert_eq!(nice_ceil(2.0), 2.0);
        assert_eq!(nice_ceil(2.1), 5.0);
    }

    #[test]
    fn count_axis_labels() {
        assert_eq!(count_ticks(2_000_000.0).len(), 7);
        assert_eq!(tick_label(1_000_000.0, 0, true), "1,000,000");
        assert_eq!(tick_label(1000.0, 0, true), "1,000");
        assert_eq!(tick_label(1964.0, 0, false), "1964");
        assert_eq!(tick_label(-0.0001, 2, false), "0.00");
        assert_eq!(tick_label(-12_345.5, 1, true), "-12,345.5");
        // A short histogram: 1, 2, 5 and 10, not a lone 1.
        assert_eq!(count_ticks(16.0), [1.0, 2.0, 5.0, 10.0]);
    }

    #[test]
    fn axis_numbers() {
        assert_eq!(axis_number(&1000.0), "1000");
        assert_eq!(axis_number(&2.5), "2.5");
        assert_eq!(axis_number(&0.25), "0.25");
    }

    #[test]
    fn stems_are_file_safe() {
        assert_eq!(
            stem("Seed 000, workstation: exerciser"),
            "seed-000-workstation-exerciser"
        );
    }
}
