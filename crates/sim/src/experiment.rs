//! Published experiments and their validation: `experiments/*.toml` name the runs (a scenario
//! and its overrides), the published values with their source, and the tolerance of each row.
//! `irqlab validate` runs them and compares.

use crate::report::trace_rows;
use crate::scenario::{parse_file, RunResult, Scenario, ScenarioError};
use irqlab_stats::results::{
    ExperimentRuns, HistogramData, ValidationReport, ValidationRow, Verdict, SCHEMA_VERSION,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An experiment file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub id: String,
    pub title: String,
    /// The seed document (in `../shared/seeds/`) the published values come from.
    pub seed_document: String,
    pub run: Vec<RunSpec>,
    pub check: Vec<Check>,
}

/// A run: a scenario file (relative to the experiment file) and its overrides.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub id: String,
    pub scenario: String,
    #[serde(default)]
    pub set: Vec<String>,
}

/// One expected analyzer sequence.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedTrace {
    pub run: String,
    pub expected: Vec<String>,
}

/// Which latency a row compares.
#[derive(Copy, Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LatencyMetric {
    IsrLatency,
    TaskletLatency,
}

/// One validation row.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// mean(metric of numerator) / mean(metric of denominator) against a published ratio.
    Ratio {
        id: String,
        metric: LatencyMetric,
        numerator: String,
        denominator: String,
        published: f64,
        published_text: String,
        tolerance_rel: f64,
        source: String,
    },
    /// For each group (baseline first): every run's tasklet latency exceeds its ISR latency, and
    /// each run's tasklet ratio to the baseline is within `tolerance_rel` of its ISR ratio.
    TaskletProportional {
        id: String,
        groups: Vec<Vec<String>>,
        tolerance_rel: f64,
        published_text: String,
        source: String,
    },
    /// For each sequence: the analyzer's packets for one interrupt of `run`, from the interrupt
    /// packet on, match `expected` ("TYPE" or "TYPE ADDRESS", an address ending in `*` matching
    /// a prefix).
    TraceSequence {
        id: String,
        sequences: Vec<ExpectedTrace>,
        source: String,
    },
}

impl Check {
    pub fn id(&self) -> &str {
        match self {
            Check::Ratio { id, .. }
            | Check::TaskletProportional { id, .. }
            | Check::TraceSequence { id, .. } => id,
        }
    }
    fn runs(&self) -> Vec<&str> {
        match self {
            Check::Ratio {
                numerator,
                denominator,
                ..
            } => vec![numerator, denominator],
            Check::TaskletProportional { groups, .. } => {
                groups.iter().flatten().map(String::as_str).collect()
            }
            Check::TraceSequence { sequences, .. } => {
                sequences.iter().map(|s| s.run.as_str()).collect()
            }
        }
    }
}

/// Does `id` match `pattern` (`*` matches any run of characters; no `*` means substring)?
pub fn matches_pattern(id: &str, pattern: &str) -> bool {
    if !pattern.contains('*') {
        return id.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = id;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(p) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            match rest.find(p) {
                Some(k) => rest = &rest[k + p.len()..],
                None => return false,
            }
        }
    }
    true
}

/// A loaded experiment.
pub struct Experiment {
    pub path: PathBuf,
    pub file: ExperimentFile,
}

/// How to run the experiments.
#[derive(Clone, Debug, Default)]
pub struct ValidateOptions {
    /// Only rows whose id matches.
    pub only: Option<String>,
    /// Override every scenario's sample count.
    pub samples: Option<u64>,
}

const TRACE_PACKETS: usize = 64;

impl Experiment {
    pub fn load(path: impl AsRef<Path>) -> Result<Experiment, ScenarioError> {
        let path = path.as_ref().to_owned();
        let text = std::fs::read_to_string(&path).map_err(|cause| ScenarioError::Io {
            path: path.clone(),
            named_by: None,
            cause,
        })?;
        let file: ExperimentFile = parse_file(&path, &text)?;
        for c in &file.check {
            for r in c.runs() {
                if !file.run.iter().any(|s| s.id == r) {
                    return Err(ScenarioError::Invalid {
                        origin: crate::scenario::Origin::File {
                            path: path.clone(),
                            line: 1,
                            column: 1,
                        },
                        key: format!("check {}", c.id()),
                        message: format!("names run '{r}', which no [[run]] defines"),
                    });
                }
            }
        }
        Ok(Experiment { path, file })
    }

    /// All `*.toml` directly in `dir`, sorted by name.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Vec<Experiment>, ScenarioError> {
        let dir = dir.as_ref();
        let io = |cause| ScenarioError::Io {
            path: dir.to_owned(),
            named_by: Some("--experiments".into()),
            cause,
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
            .collect();
        paths.sort();
        paths.into_iter().map(Experiment::load).collect()
    }

    /// Run what the selected rows need and compare.
    /// Returns the rows and the runs' distributions.
    pub fn validate(
        &self,
        opts: &ValidateOptions,
    ) -> Result<(Vec<ValidationRow>, ExperimentRuns), ScenarioError> {
        let checks: Vec<&Check> = self
            .file
            .check
            .iter()
            .filter(|c| {
                opts.only
                    .as_deref()
                    .is_none_or(|p| matches_pattern(c.id(), p))
            })
            .collect();
        let dir = self.path.parent().unwrap_or(Path::new("."));
        // The runs the selected rows need, in the file's order, each once.
        let needed: Vec<&RunSpec> = self
            .file
            .run
            .iter()
            .filter(|spec| checks.iter().any(|c| c.runs().contains(&spec.id.as_str())))
            .collect();
        // Independent runs: on all cores, each exactly as it would run alone.
        use rayon::prelude::*;
        let results: BTreeMap<String, RunResult> = needed
            .par_iter()
            .map(|spec| -> Result<(String, RunResult), ScenarioError> {
                let scenario = Scenario::load(dir.join(&spec.scenario), &spec.set)?;
                let samples = opts.samples.unwrap_or(scenario.file.samples);
                let result = scenario.run(scenario.file.seed, samples, TRACE_PACKETS)?;
                Ok((spec.id.clone(), result))
            })
            .collect::<Result<_, _>>()?;
        let rows = checks.iter().map(|c| self.evaluate(c, &results)).collect();
        let mut histograms = Vec::new();
        for spec in &needed {
            let r = &results[&spec.id];
            histograms.push(HistogramData::of(&format!("{} isr", spec.id), &r.isr));
            histograms.push(HistogramData::of(
                &format!("{} tasklet", spec.id),
                &r.tasklet,
            ));
        }
        Ok((
            rows,
            ExperimentRuns {
                experiment: self.file.id.clone(),
                title: self.file.title.clone(),
                histograms,
            },
        ))
    }

    fn row(&self, id: &str, metric: String, source: &str) -> ValidationRow {
        ValidationRow {
            id: id.to_string(),
            experiment: self.file.id.clone(),
            metric,
            published: String::new(),
            simulated: String::new(),
            tolerance: String::new(),
            verdict: Verdict::Fail,
            source: source.to_string(),
            detail: String::new(),
        }
    }

    fn evaluate(&self, check: &Check, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let mean = |r: &str, m: LatencyMetric| {
            let res = &runs[r];
            match m {
                LatencyMetric::IsrLatency => res.isr.mean_ns(),
                LatencyMetric::TaskletLatency => res.tasklet.mean_ns(),
            }
            .unwrap_or(f64::NAN)
        };
        match check {
            Check::Ratio {
                id,
                metric,
                numerator,
                denominator,
                published,
                published_text,
                tolerance_rel,
                source,
            } => {
                let (n, d) = (mean(numerator, *metric), mean(denominator, *metric));
                let ratio = n / d;
                let err = ratio / published - 1.0;
                let name = match metric {
                    LatencyMetric::IsrLatency => "ISR latency",
                    LatencyMetric::TaskletLatency => "tasklet latency",
                };
                let mut row = self.row(id, format!("{name} {numerator} / {denominator}"), source);
                row.published = format!("{published:.1}x ({published_text})");
                row.simulated = format!("{ratio:.2}x");
                row.tolerance = format!("±{:.0}%", tolerance_rel * 100.0);
                row.verdict = if err.abs() <= *tolerance_rel {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                row.detail = format!(
                    "mean {name}: {numerator} {n:.0} ns, {denominator} {d:.0} ns; ratio {ratio:.3} \
                     is {:+.1}% from the published {published}",
                    err * 100.0
                );
                row
            }
            Check::TaskletProportional {
                id,
                groups,
                tolerance_rel,
                published_text,
                source,
            } => {
                let mut ok = true;
                let mut notes = Vec::new();
                for g in groups {
                    let base = &g[0];
                    for r in g {
                        let (i, t) = (
                            mean(r, LatencyMetric::IsrLatency),
                            mean(r, LatencyMetric::TaskletLatency),
                        );
                        if t.partial_cmp(&i) != Some(std::cmp::Ordering::Greater) {
                            ok = false;
                            notes
                                .push(format!("{r}: tasklet {t:.0} ns is not above ISR {i:.0} ns"));
                        }
                        if r != base {
                            let ri = i / mean(base, LatencyMetric::IsrLatency);
                            let rt = t / mean(base, LatencyMetric::TaskletLatency);
                            let dev = rt / ri - 1.0;
                            if dev.abs() > *tolerance_rel {
                                ok = false;
                            }
                            notes.push(format!(
                                "{r}/{base}: ISR {ri:.2}x, tasklet {rt:.2}x ({:+.0}%)",
                                dev * 100.0
                            ));
                        }
                    }
                }
                let mut row = self.row(
                    id,
                    "tasklet latency > ISR latency; tasklet ratios track ISR ratios".into(),
                    source,
                );
                row.published = format!("holds ({published_text})");
                row.simulated = if ok { "holds" } else { "does not hold" }.into();
                row.tolerance = format!("ratios ±{:.0}%", tolerance_rel * 100.0);
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                row.detail = notes.join("; ");
                row
            }
            Check::TraceSequence {
                id,
                sequences,
                source,
            } => {
                let mut ok = true;
                let mut notes = Vec::new();
                for seq in sequences {
                    let got = interrupt_sequence(&runs[&seq.run], seq.expected.len());
                    let same = got.len() == seq.expected.len()
                        && got
                            .iter()
                            .zip(&seq.expected)
                            .all(|(g, e)| packet_matches(g, e));
                    ok &= same;
                    notes.push(format!(
                        "{}: expected [{}], simulated [{}]",
                        seq.run,
                        seq.expected.join(", "),
                        got.join(", ")
                    ));
                }
                let runs: Vec<&str> = sequences.iter().map(|s| s.run.as_str()).collect();
                let mut row = self.row(
                    id,
                    format!("analyzer packets of one interrupt: {}", runs.join(", ")),
                    source,
                );
                let lens: Vec<String> = sequences
                    .iter()
                    .map(|s| s.expected.len().to_string())
                    .collect();
                row.published = format!("{} packets in order", lens.join(" and "));
                row.simulated = if ok { "same order" } else { "different order" }.into();
                row.tolerance = "exact".into();
                row.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
                row.detail = notes.join("; ");
                row
            }
        }
    }
}

/// "TYPE ADDRESS" strings of the packets from the first interrupt packet on.
fn interrupt_sequence(r: &RunResult, n: usize) -> Vec<String> {
    let rows = trace_rows(&r.trace);
    let start = rows.iter().position(|row| {
        row.direction == "up"
            && (row.tlp_type.starts_with("Msg Assert")
                || (row.tlp_type.starts_with("MWr")
                    && row.address.is_some_and(|a| a >> 20 == 0xFEE)))
    });
    let Some(start) = start else { return vec![] };
    rows[start..]
        .iter()
        .take(n)
        .map(|row| match row.address {
            Some(a) => format!("{} {a:08X}", row.tlp_type),
            None => row.tlp_type.clone(),
        })
        .collect()
}

fn packet_matches(got: &str, expected: &str) -> bool {
    match expected.strip_suffix('*') {
        Some(prefix) => got.starts_with(prefix),
        None => got == expected,
    }
}

/// Validate every experiment in `dir`.
pub fn validate_dir(
    dir: impl AsRef<Path>,
    opts: &ValidateOptions,
) -> Result<ValidationReport, ScenarioError> {
    let mut rows = Vec::new();
    let mut experiments = Vec::new();
    for e in Experiment::load_dir(dir)? {
        let (r, runs) = e.validate(opts)?;
        if !r.is_empty() {
            rows.extend(r);
            experiments.push(runs);
        }
    }
    Ok(ValidationReport {
        schema_version: SCHEMA_VERSION,
        rows,
        experiments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches_pattern("msi-ws-ioapic", "ws"));
        assert!(matches_pattern("msi-ws-ioapic", "msi-ws-*"));
        assert!(matches_pattern("msi-ws-ioapic", "*ioapic"));
        assert!(!matches_pattern("msi-soc-ioapic", "msi-ws-*"));
        assert!(matches_pattern("msi-soc-xtpic", "msi-*-xtpic"));
    }

    #[test]
    fn packet_patterns() {
        assert!(packet_matches("MWr(32) FEE00000", "MWr(32) FEE*"));
        assert!(!packet_matches("MWr(32) F9000040", "MWr(32) FEE*"));
        assert!(packet_matches("CplD", "CplD"));
    }
}
