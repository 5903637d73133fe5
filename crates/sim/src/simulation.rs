//! A scenario file, whichever kernel it runs, loaded and run into the neutral [`RunResult`]:
//! the one entry point of the CLI and the validation runner ([`Scenario::simulate`]).
//!
//! Every scenario has one schema (`scenario/files.rs`): its kernel file's `family` says whose
//! interrupt path runs it (Linux's, `scenario/assemble.rs`; FreeBSD 1998's, `scenario/freebsd/`), and each
//! family's model checks and assembles its own parts of the one machine. The rest of irqlab
//! asks a [`Scenario`] what its run is of and gets a [`RunResult`].

use crate::result::RunResult;
use crate::scenario::files::Family;
use crate::scenario::{Scenario, ScenarioError};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

impl Scenario {
    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn title(&self) -> &str {
        &self.file.title
    }

    /// The numbers this run has (its files', its scenario's `set`, the overrides) that lie
    /// outside the sourced range their files declare for them: `(key, value, range, file)`.
    /// A what-if may go there on purpose; a shipped file may not (DESIGN.md rule 4, checked
    /// when an experiment loads and by a test over every shipped scenario).
    pub fn outside_ranges(
        &self,
    ) -> Result<
        Vec<(
            String,
            f64,
            crate::scenario::ranges::Range,
            std::path::PathBuf,
        )>,
        ScenarioError,
    > {
        let settings = self.settings()?;
        let mut out = Vec::new();
        for d in self.ranges()? {
            let crate::scenario::ranges::Spread::Drawn(range) = d.spread else {
                continue;
            };
            let value = settings
                .iter()
                .find(|(k, _)| k == &d.key)
                .and_then(|(_, v)| v.as_float().or(v.as_integer().map(|i| i as f64)));
            if let Some(v) = value.filter(|v| !(range.low..=range.high).contains(v)) {
                out.push((d.key, v, range, d.file));
            }
        }
        Ok(out)
    }

    /// The scenario's seed and sample count.
    pub fn seed(&self) -> u64 {
        self.file.seed
    }
    pub fn samples(&self) -> u64 {
        self.file.samples
    }

    /// Interrupts simulated for `samples` in any number of replications (what a progress bar
    /// counts): every model splits the samples among its replications.
    pub fn interrupts(&self, samples: u64) -> u64 {
        samples
    }

    /// Every latency metric (`RunResult::metrics`' names) a run of this scenario can give, so
    /// that a sweep's merge can refuse a shard whose metric was renamed.
    pub fn metric_names(&self) -> &'static [&'static str] {
        match &self.file.probe {
            Some(p) => match p.kind {
                crate::scenario::files::ProbeKind::Pps => &["pps_latency"],
            },
            None => &[
                "round_trip",
                "cyclictest_latency",
                "isr_latency",
                "tasklet_latency",
            ],
        }
    }

    /// Has the run a measured device on a link for the analyzer to watch (`--trace`): a PCIe
    /// device's serial link, or the ISA bus of FreeBSD's PC (the parallel port's)?
    pub fn has_analyzer(&self) -> bool {
        match self.kernel.family() {
            Family::Linux => !self.pcie_devices().is_empty(),
            Family::Freebsd => true,
        }
    }

    /// The variant a figure's name carries: the probe, or the delivery method.
    pub fn variant(&self) -> String {
        match &self.file.probe {
            Some(p) => format!("{:?}", p.kind).to_lowercase(),
            None => format!("{:?}", self.file.delivery).to_lowercase(),
        }
    }

    /// What the run is of, for the report's header: the platform (name and file), the kernel and
    /// the delivery method.
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut d = vec![
            (
                "platform".to_string(),
                format!("{} ({})", self.platform.name, self.platform_path.display()),
            ),
            ("kernel".to_string(), self.kernel.name().to_string()),
        ];
        if self.kernel.family() == Family::Linux {
            d.push(("delivery".to_string(), self.variant()));
            d.extend(kernel_and_load(self));
        }
        // A windowed run counts its windows only: the header says so (docs/sim.md).
        if let Some(ms) = (self.file.probe.as_ref())
            .map(|p| p.window_ms)
            .filter(|&ms| ms > 0.0)
        {
            d.push((
                "window".to_string(),
                format!("{ms} ms before each pulse; the rest of each second is skipped"),
            ));
        }
        d
    }

    /// Run `samples` with `seed` in `replications` on all cores, merged; the first `trace`
    /// analyzer packets kept. `progress` counts interrupts as they are simulated. Every model
    /// splits the samples among the replications and keeps the first replication's series.
    pub fn simulate(
        &self,
        seed: u64,
        samples: u64,
        trace: usize,
        replications: u32,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<RunResult, ScenarioError> {
        Ok(match self.kernel.family() {
            Family::Linux => self
                .run_replicated(seed, samples, trace, replications, progress)?
                .into_result(self.file.warmup_samples),
            Family::Freebsd => crate::scenario::freebsd::run_replicated(
                self,
                seed,
                samples,
                trace,
                replications,
                progress,
            )?,
        })
    }
}

/// The settings of a PCIe-era scenario that decide what its run is of, besides the platform
/// and the delivery, as they stand after every `--set`: the kernel's preemption model and
/// interrupt threads (where it runs tasks), the traffic its network controllers are offered,
/// and cyclictest's priority and interval. Absent what a scenario does not have.
fn kernel_and_load(s: &Scenario) -> Vec<(String, String)> {
    use crate::kernel::costs::HrtimerWakeup;
    let mut d = Vec::new();
    if let Some(sched) = &s.kernel.linux().sched {
        d.push(("preemption".into(), sched.preemption.describe().into()));
    }
    if let Some(t) = &s.kernel.linux().threads {
        let threads = if t.enabled {
            format!(
                "IRQ threads at SCHED_FIFO {}, softirq threads at {}; hrtimer wake-ups in {}",
                t.irq_priority,
                t.softirq_priority,
                match t.hrtimer_wakeup {
                    HrtimerWakeup::Hardirq => "the hard interrupt",
                    HrtimerWakeup::Softirq => "the sirq-hrtimer thread",
                }
            )
        } else {
            "no (handlers in hard IRQ, softirqs on irq_exit)".into()
        };
        d.push(("threaded interrupts".into(), threads));
    }
    let nics: Vec<_> = (s.pcie_devices().into_iter())
        .filter_map(|dev| dev.nic.as_ref().map(|n| (&dev.name, n)))
        .collect();
    if !nics.is_empty() {
        let offered: Vec<String> = nics
            .iter()
            .filter(|(_, n)| n.gap_us > 0.0)
            .map(|(name, n)| {
                let rate = (1e6 / n.gap_us).round() as u64;
                let route = n
                    .forward_to
                    .as_ref()
                    .map_or(String::new(), |to| format!(", forwarded to {to}"));
                format!(
                    "{name} {} B every {} us ({} frames/s{route})",
                    n.frame_bytes,
                    n.gap_us,
                    irqlab_stats::thousands(rate)
                )
            })
            .collect();
        let traffic = if offered.is_empty() {
            "none".to_string()
        } else {
            offered.join("; ")
        };
        d.push(("traffic".into(), traffic));
    }
    if let Some(c) = &s.file.cyclictest {
        let policy = if c.priority == 0 {
            "SCHED_OTHER".to_string()
        } else {
            format!("SCHED_FIFO {}", c.priority)
        };
        d.push((
            "cyclictest".into(),
            format!("{policy}, every {} us", c.interval_us),
        ));
    }
    d
}
