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
        let path = path.as_ref();
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

    /// The ranges its files declare beside their estimates.
    pub fn ranges(&self) -> Result<Vec<crate::scenario::ranges::Declared>, ScenarioError> {
        match self {
            Simulation::Pcie(s) => s.ranges(),
            Simulation::Pps(s) => s.ranges(),
        }
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
        if let Simulation::Pcie(_) = self {
            d.push(("delivery".to_string(), self.variant()));
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
