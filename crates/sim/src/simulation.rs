//! A scenario file, whichever model it runs on, loaded and run into the neutral [`RunResult`]:
//! the one entry point of the CLI and the validation runner.
//!
//! Every scenario runs on the one machine, and every platform file has one schema. Seed 004's
//! scenario and kernel files still have formats of their own (`pps/`: the pulse, cards with
//! FreeBSD's interrupt classes, load phases; FreeBSD's costs), told apart by the scenario's
//! `model` key, and this is the only place that knows: it picks the assembler.

use crate::result::RunResult;
use crate::scenario::{Scenario, ScenarioError};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A loaded, overridden and checked scenario.
pub enum Simulation {
    Pcie(Box<Scenario>),
    Pps(Box<crate::pps::PpsScenario>),
}

impl Simulation {
    /// Load `path` and apply `overrides` (`key=value` strings).
    pub fn load(path: impl AsRef<Path>, overrides: &[String]) -> Result<Simulation, ScenarioError> {
        // A thin generic shell over a non-generic body: the body (file parsing, deserialization)
        // is compiled once, in this crate, rather than again in every crate that calls it.
        Simulation::load_path(path.as_ref(), overrides)
    }

    fn load_path(path: &Path, overrides: &[String]) -> Result<Simulation, ScenarioError> {
        let text = crate::scenario::read(path, None)?;
        Ok(if crate::pps::is_pps_scenario(&text) {
            Simulation::Pps(Box::new(crate::pps::PpsScenario::load(path, overrides)?))
        } else {
            Simulation::Pcie(Box::new(Scenario::load(path, overrides)?))
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        match self {
            Simulation::Pcie(s) => &s.path,
            Simulation::Pps(s) => &s.path,
        }
    }

    pub fn title(&self) -> &str {
        match self {
            Simulation::Pcie(s) => &s.file.title,
            Simulation::Pps(s) => &s.file.title,
        }
    }

    /// Every key `--set` takes, with its value in this run (`Configured::settings`).
    pub fn settings(&self) -> Result<Vec<(String, toml::Value)>, ScenarioError> {
        match self {
            Simulation::Pcie(s) => s.settings(),
            Simulation::Pps(s) => s.settings(),
        }
    }

    /// The ranges its files declare beside their estimates.
    pub fn ranges(&self) -> Result<Vec<crate::scenario::ranges::Declared>, ScenarioError> {
        match self {
            Simulation::Pcie(s) => s.ranges(),
            Simulation::Pps(s) => s.ranges(),
        }
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
        match self {
            Simulation::Pcie(s) => s.file.seed,
            Simulation::Pps(s) => s.file.seed,
        }
    }
    pub fn samples(&self) -> u64 {
        match self {
            Simulation::Pcie(s) => s.file.samples,
            Simulation::Pps(s) => s.file.samples,
        }
    }

    /// Interrupts simulated for `samples` in `replications` (what a progress bar counts): the
    /// PCIe model splits the samples among its replications; each seed-004 replication runs the
    /// whole pulse timeline, whose phases are set by sample number.
    pub fn interrupts(&self, samples: u64, replications: u32) -> u64 {
        match self {
            Simulation::Pcie(_) => samples,
            Simulation::Pps(_) => samples.saturating_mul(u64::from(replications.max(1))),
        }
    }

    /// Every latency metric (`RunResult::metrics`' names) a run of this model can give, so
    /// that a sweep's merge can refuse a shard whose metric was renamed.
    pub fn metric_names(&self) -> &'static [&'static str] {
        match self {
            Simulation::Pcie(_) => &[
                "round_trip",
                "cyclictest_latency",
                "isr_latency",
                "tasklet_latency",
            ],
            Simulation::Pps(_) => &["pps_latency"],
        }
    }

    /// Does the run count frames for a fixed length (`duration_ms`) rather than latency
    /// samples?
    pub fn counts_frames(&self) -> bool {
        match self {
            Simulation::Pcie(s) => s.counts_frames(),
            Simulation::Pps(_) => false,
        }
    }

    /// Does the platform have a PCIe link for the analyzer to watch (`--trace`)?
    pub fn has_analyzer(&self) -> bool {
        matches!(self, Simulation::Pcie(_))
    }

    /// The variant a figure's name carries: the delivery method, or the model.
    pub fn variant(&self) -> String {
        match self {
            Simulation::Pcie(s) => format!("{:?}", s.file.delivery).to_lowercase(),
            Simulation::Pps(_) => "pps".into(),
        }
    }

    /// What the run is of, for the report's header: the platform (name and file), the kernel and
    /// the delivery method.
    pub fn describe(&self) -> Vec<(String, String)> {
        let (platform, path, kernel) = match self {
            Simulation::Pcie(s) => (&s.platform.name, &s.platform_path, &s.kernel.name),
            Simulation::Pps(s) => (&s.platform.name, &s.platform_path, &s.kernel.name),
        };
        let mut d = vec![
            (
                "platform".to_string(),
                format!("{platform} ({})", path.display()),
            ),
            ("kernel".to_string(), kernel.clone()),
        ];
        if let Simulation::Pcie(s) = self {
            d.push(("delivery".to_string(), self.variant()));
            d.extend(kernel_and_load(s));
        }
        d
    }

    /// Settings the run cannot honour.
    pub fn warnings(&self) -> Vec<String> {
        match self {
            Simulation::Pcie(s) => s.warnings(),
            Simulation::Pps(_) => Vec::new(),
        }
    }

    /// Run `samples` with `seed` in `replications` on all cores, merged; the first `trace`
    /// analyzer packets kept. `progress` counts interrupts as they are simulated.
    pub fn run(
        &self,
        seed: u64,
        samples: u64,
        trace: usize,
        replications: u32,
        progress: Option<Arc<AtomicU64>>,
    ) -> Result<RunResult, ScenarioError> {
        Ok(match self {
            Simulation::Pcie(s) => s
                .run_replicated(seed, samples, trace, replications, progress)?
                .into_result(s.file.warmup_samples),
            Simulation::Pps(s) => s
                .run_replicated(seed, samples, replications, progress)?
                .into_result(),
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
    if let Some(sched) = &s.kernel.sched {
        d.push(("preemption".into(), sched.preemption.describe().into()));
    }
    if let Some(t) = &s.kernel.threads {
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
    let nics: Vec<_> = s
        .file
        .device
        .iter()
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
