//! Every JSON file irqlab writes shares one envelope: what it is (`kind`), which irqlab wrote
//! it, the command line, when it started and ended (UTC), the host for measurements, and the
//! settings as typed values (every `--set` override and the seed among them), around the
//! `result` itself. A result that cannot say how it was made cannot be reproduced, and is no
//! evidence. The layout is described by `schemas/irqlab-result.schema.json` in the
//! repository; its version is [`SCHEMA_VERSION`].

use crate::ReportError;
use irqlab_stats::results::{HostInfo, RunReport};
use serde::{Deserialize, Serialize};

/// Version of the envelope and of every result layout in it. Version 1 was a bare result with
/// a `schema_version` of its own; [`read_run`] still reads it.
pub const SCHEMA_VERSION: u32 = 2;

/// Which command wrote a file.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `irqlab sim`: a run report.
    Sim,
    /// `irqlab sim --uncertainty N`: a what-if report (the run's quantities over draws of the
    /// model's estimates).
    SimUncertainty,
    /// `irqlab validate`: a validation report.
    Validate,
    /// `irqlab measure timer`: a run report.
    MeasureTimer,
    /// `irqlab measure irqs`: an interrupt activity report.
    MeasureIrqs,
    /// `irqlab host`: an interrupt inventory.
    Host,
    /// `irqlab sweep plan`: a sweep's manifest of points.
    SweepPlan,
    /// `irqlab sweep run`: one shard's results, point by point.
    SweepShard,
    /// `irqlab sweep merge` of a what-if grid: a grid report. (The merge of uncertainty draws
    /// is a validation, `validate`.)
    Sweep,
    /// `irqlab plan affinity --host`: the host's CPUs and NICs, the affinity plan, and what
    /// `--apply` set.
    PlanAffinityHost,
}

impl Kind {
    /// The command that writes it, for messages: `irqlab sweep plan`.
    pub fn command(self) -> String {
        let name = serde_json::to_value(self)
            .ok()
            .and_then(|k| k.as_str().map(str::to_string))
            .unwrap_or_default();
        match self {
            Kind::SimUncertainty => "irqlab sim --uncertainty".into(),
            Kind::SweepShard => "irqlab sweep run".into(),
            Kind::Sweep => "irqlab sweep merge".into(),
            Kind::PlanAffinityHost => "irqlab plan affinity --host".into(),
            _ => format!("irqlab {}", name.replace('-', " ")),
        }
    }
}

/// How a result was made: everything of the envelope but the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Made {
    pub irqlab_version: String,
    /// The command line as the process received it, program name first.
    pub command_line: Vec<String>,
    /// RFC 3339, UTC.
    pub started_utc: String,
    /// RFC 3339, UTC: when the result was complete.
    pub ended_utc: String,
    /// The machine, for measurements and the inventory (a simulation does not depend on it).
    pub host: Option<HostInfo>,
    /// The command's settings as typed values: defaults filled in, overrides and seed included.
    pub settings: serde_json::Value,
}

/// A file: the envelope around one result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub schema_version: u32,
    pub kind: Kind,
    #[serde(flatten)]
    pub made: Made,
    pub result: T,
}

/// `result` in its envelope, as pretty JSON with a final newline.
pub fn to_json<T: Serialize>(kind: Kind, made: &Made, result: &T) -> Result<String, ReportError> {
    #[derive(Serialize)]
    struct Out<'a, T> {
        schema_version: u32,
        kind: Kind,
        #[serde(flatten)]
        made: &'a Made,
        result: &'a T,
    }
    Ok(serde_json::to_string_pretty(&Out {
        schema_version: SCHEMA_VERSION,
        kind,
        made,
        result,
    })? + "\n")
}

/// Why a file cannot be read back as a run.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("it is not JSON")]
    Json(#[from] serde_json::Error),
    #[error("it is not a run result of irqlab (no schema_version); write one with irqlab sim --json or irqlab measure timer --json")]
    NotIrqlab,
    #[error("it was written by `irqlab {0}`, which is not a run (plot the results of irqlab sim --json or irqlab measure timer --json)")]
    NotARun(String),
    #[error(
        "it has schema_version {0}, newer than this irqlab reads ({SCHEMA_VERSION}); update irqlab"
    )]
    Newer(u64),
    #[error("it is not a file irqlab wrote (no schema_version); {0}")]
    NotIrqlabFile(String),
    #[error("it was written by `{found}`; {expected}")]
    OtherKind { found: String, expected: String },
}

/// The result of kind `kind` from a file irqlab wrote, with how it was made. `wanted` says
/// what the file should be, for the message when it is not (`give the manifest irqlab sweep
/// plan wrote`).
pub fn read_result<T: serde::de::DeserializeOwned>(
    text: &str,
    kind: Kind,
    wanted: &str,
) -> Result<(Made, T), ReadError> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    match v.get("schema_version").and_then(serde_json::Value::as_u64) {
        None => return Err(ReadError::NotIrqlabFile(wanted.into())),
        Some(n) if n > u64::from(SCHEMA_VERSION) => return Err(ReadError::Newer(n)),
        Some(_) => {}
    }
    let e: Envelope<serde_json::Value> = serde_json::from_value(v)?;
    if e.kind != kind {
        return Err(ReadError::OtherKind {
            found: e.kind.command(),
            expected: wanted.into(),
        });
    }
    Ok((e.made, serde_json::from_value(e.result)?))
}

/// A run from a file written by `sim --json` or `measure timer --json`: the envelope of schema
/// 2, or a bare run report of schema 1 (irqlab before the envelope).
pub fn read_run(text: &str) -> Result<(Option<Made>, RunReport), ReadError> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    let version = v.get("schema_version").and_then(serde_json::Value::as_u64);
    match version {
        Some(n) if n > u64::from(SCHEMA_VERSION) => Err(ReadError::Newer(n)),
        None => Err(ReadError::NotIrqlab),
        Some(1) => Ok((None, serde_json::from_value(v)?)),
        Some(_) => {
            let e: Envelope<serde_json::Value> = serde_json::from_value(v)?;
            match e.kind {
                Kind::Sim | Kind::MeasureTimer => {
                    Ok((Some(e.made), serde_json::from_value(e.result)?))
                }
                other => Err(ReadError::NotARun(
                    other.command().trim_start_matches("irqlab ").into(),
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made() -> Made {
        Made {
            irqlab_version: "0.1.0".into(),
            command_line: vec!["irqlab".into(), "sim".into(), "x.toml".into()],
            started_utc: "2026-11-23T21:00:00.000Z".into(),
            ended_utc: "2026-11-23T21:00:01.000Z".into(),
            host: None,
            settings: serde_json::json!({"seed": 1, "overrides": ["delivery=msi"]}),
        }
    }

    fn run() -> RunReport {
        RunReport {
            source: "x.toml".into(),
            title: "t".into(),
            config: vec![],
            metrics: vec![],
            counters: vec![],
            trace: vec![],
            spike: None,
            histograms: vec![],
            warnings: vec![],
            series: vec![],
        }
    }

    #[test]
    fn a_run_reads_back_from_its_envelope() {
        let text = to_json(Kind::Sim, &made(), &run()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema_version"], 2);
        assert_eq!(v["kind"], "sim");
        assert_eq!(v["settings"]["seed"], 1);
        assert_eq!(v["result"]["title"], "t");
        let (m, r) = read_run(&text).unwrap();
        assert_eq!(m, Some(made()));
        assert_eq!(r, run());
    }

    #[test]
    fn other_kinds_and_newer_files_are_refused_by_name() {
        let text = to_json(Kind::MeasureIrqs, &made(), &serde_json::json!({})).unwrap();
        let e = read_run(&text).unwrap_err().to_string();
        assert!(e.contains("irqlab measure irqs"), "{e}");
        let e = read_run(r#"{"schema_version": 9}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("newer"), "{e}");
        assert!(read_run("{").is_err());
        let e = read_run("{}").unwrap_err().to_string();
        assert!(e.contains("not a run result of irqlab"), "{e}");
    }

    #[test]
    fn a_result_of_another_kind_is_refused_by_its_command() {
        let text = to_json(Kind::SweepShard, &made(), &serde_json::json!({"x": 1})).unwrap();
        let (m, v) = read_result::<serde_json::Value>(&text, Kind::SweepShard, "w").unwrap();
        assert_eq!((m, v), (made(), serde_json::json!({"x": 1})));
        let e = read_result::<serde_json::Value>(&text, Kind::SweepPlan, "give the manifest")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "it was written by `irqlab sweep run`; give the manifest");
        let e = read_result::<serde_json::Value>("{}", Kind::SweepPlan, "give the manifest")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a file irqlab wrote"), "{e}");
        assert_eq!(Kind::Sweep.command(), "irqlab sweep merge");
        assert_eq!(
            Kind::PlanAffinityHost.command(),
            "irqlab plan affinity --host"
        );
        assert_eq!(
            serde_json::to_value(Kind::PlanAffinityHost).unwrap(),
            "plan-affinity-host"
        );
    }

    #[test]
    fn schema_1_files_still_read() {
        let mut v = serde_json::to_value(run()).unwrap();
        v["schema_version"] = 1.into();
        let (m, r) = read_run(&v.to_string()).unwrap();
        assert_eq!(m, None);
        assert_eq!(r, run());
    }
}
