//! `kind = "throughput"` in an experiment's `[[check]]`: see [`Throughput`].

use super::prelude::*;

/// Seed 001's Table 4: the frames a forwarding run of fixed length (`duration_ms`) put on
/// the wire in its time, every port together, per second, within `tolerance_rel` of the
/// published rate. `calibration`: the row a free parameter was inferred from (not
/// evidence; its class is reported, and says so).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Throughput {
    pub id: String,
    pub run: String,
    pub published_pps: f64,
    pub tolerance_rel: f64,
    /// A split flow's row (RX on one core, TX on another): its penalty per frame and busy
    /// core against an unsplit row, beside the published one.
    #[serde(default)]
    pub split: Option<SplitPenalty>,
    pub published_text: String,
    pub source: String,
}

impl RowKind for Throughput {
    fn id(&self) -> &str {
        &self.id
    }
    fn runs(&self) -> Vec<&str> {
        let mut runs = vec![self.run.as_str()];
        runs.extend(self.split.as_ref().map(|s| s.unsplit_run.as_str()));
        runs
    }
    fn judged(&self) -> Judged {
        Judged::Value {
            // Table 4's figures are exact counts: the band must hold the figure itself.
            published: (self.published_pps, self.published_pps),
            point: Some(self.published_pps),
            window: 2.0 * self.tolerance_rel * self.published_pps,
            scale: Scale::Linear,
            quantity: Quantity::PacketsPerSecond,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, runs: &BTreeMap<String, RunResult>) -> ValidationRow {
        let Throughput {
            id,
            run,
            published_pps,
            tolerance_rel,
            split,
            published_text,
            source,
        } = self;
        let r = &runs[run];
        let count = |name: &str| {
            r.counters
                .iter()
                .find(|c| c.name == name)
                .map_or(0, |c| c.value)
        };
        let frames = nic_sum(r, "_frames_transmitted_in_run");
        let length_us = count("run_length_us");
        let mut row = exp.row(id, format!("frames forwarded per second, {run}"), source);
        row.published_text = published_text.clone();
        row.published = format!("{} pps", thousands(published_pps.round() as u64));
        row.tolerance = format!("±{:.0}%", tolerance_rel * 100.0);
        if length_us == 0 {
            row.simulated = "no rate".into();
            row.verdict = Verdict::Fail;
            row.detail =
                format!("run {run} has no fixed length (duration_ms): a rate needs one");
            return row;
        }
        let pps = frames as f64 / (length_us as f64 * 1e-6);
        let err = pps / published_pps - 1.0;
        let ok = err.abs() <= *tolerance_rel;
        row.simulated = format!("{} pps", thousands(pps.round() as u64));
        row.value = Some(pps);
        set_holds(&mut row, ok);
        // Whether it is a calibration row is the experiment's to say (`mark`).
        row.detail = format!(
            "{} frames on the wire in {:.1} ms, {:+.1}% from the published rate",
            thousands(frames),
            length_us as f64 / 1e3,
            err * 100.0,
        );
        if let Some(s) = split {
            let u = &runs[&s.unsplit_run];
            let u_us = u
                .counters
                .iter()
                .find(|c| c.name == "run_length_us")
                .map_or(0, |c| c.value);
            let u_pps = nic_sum(u, "_frames_transmitted_in_run") as f64
                / (u_us.max(1) as f64 * 1e-6);
            row.detail += &format!(
                "; split penalty {:.0} ns a frame per busy core against {} (published \
                 {:.0} ns; {})",
                s.ns(pps, u_pps),
                s.unsplit_run,
                s.ns(*published_pps, s.unsplit_published_pps),
                s.published_text
            );
        }
        row
    }
}

/// A split flow's penalty (seed 001, Table 4): per busy core, `1/pps_split - 1/pps_unsplit`
/// in nanoseconds a frame, the row's against `unsplit_run`'s, simulated and published.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitPenalty {
    /// Cores the split row's flows keep busy.
    pub busy_cores: u32,
    /// The unsplit run, its busy cores and its published rate.
    pub unsplit_run: String,
    pub unsplit_busy_cores: u32,
    pub unsplit_published_pps: f64,
    /// What the source's rows give for it, in words ("113-137 ns over Table 4's split rows").
    pub published_text: String,
}

impl SplitPenalty {
    /// Nanoseconds a frame per busy core: the split rate's against the unsplit rate's.
    pub fn ns(&self, pps: f64, unsplit_pps: f64) -> f64 {
        (f64::from(self.busy_cores) / pps - f64::from(self.unsplit_busy_cores) / unsplit_pps) * 1e9
    }
}
