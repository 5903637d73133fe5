//! How a result was made, for the envelope every JSON file carries: the command line, the start
//! and end times in UTC, the settings as typed values, and for measurements the host.

use irqlab_report::json::{Kind, Made};
use irqlab_report::ReportError;
use serde::Serialize;
use std::path::Path;
use std::time::SystemTime;

/// This invocation: its command line and when it started.
pub struct Invocation {
    started: SystemTime,
    command_line: Vec<String>,
}

impl Invocation {
    pub fn now() -> Self {
        Invocation {
            started: SystemTime::now(),
            command_line: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// The start time as a compact UTC stamp for file names: `20261123T214012Z`.
    pub fn stamp(&self) -> String {
        let t = humantime::format_rfc3339_seconds(self.started).to_string();
        t.replace(['-', ':'], "")
    }

    /// The record of a result complete now, made with `settings` (on `host`, for measurements).
    pub fn made(
        &self,
        settings: &impl Serialize,
        host: Option<irqlab_stats::results::HostInfo>,
    ) -> Made {
        Made {
            irqlab_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line: self.command_line.clone(),
            started_utc: utc(self.started),
            ended_utc: utc(SystemTime::now()),
            host,
            settings: serde_json::to_value(settings).unwrap_or_default(),
        }
    }
}

/// RFC 3339 in UTC with milliseconds: `2026-11-23T21:40:12.345Z`.
fn utc(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// Write `result` in its envelope to `path`, whole or not at all, and say so on stderr.
pub fn write_json<T: Serialize>(
    path: &Path,
    kind: Kind,
    made: &Made,
    result: &T,
) -> Result<(), ReportError> {
    irqlab_report::write_atomic(
        path,
        irqlab_report::json::to_json(kind, made, result)?.as_bytes(),
    )?;
    crate::ui::wrote(&[path.to_path_buf()]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_rfc3339() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_795_000_000_123);
        assert_eq!(utc(t), "2026-11-18T11:06:40.123Z");
        let inv = Invocation {
            started: t,
            command_line: vec![],
        };
        assert_eq!(inv.stamp(), "20261118T110640Z");
    }
}
