//! Scenarios: TOML files that describe a platform, a kernel, the devices and the run, turned into
//! a built [`Machine`] and run.
//!
//! A scenario names its platform file (`platforms/`) and kernel file (`kernels/`) by path,
//! relative to itself. `--set key=value` overrides address the combined document: scenario keys
//! at the top (`delivery`, `device.0.read_turnaround_ns`), the platform under `platform.`
//! (`platform.cpu.clock_hz`) and the kernel under `kernel.` (`kernel.instructions.do_irq`).
//! Unknown keys and wrong types are refused with the file, line and column, or the flag.
//!
//! One file per role: [`files`] (the formats), [`read`] (reading with overrides and the origin
//! of every value), `check` (refusing what cannot be), `assemble` (parts into a machine);
//! this module loads, runs and replicates. A kernel family's model is checked and assembled by
//! its own module: Linux's by `check` and `assemble`, FreeBSD's (seed 004) by [`freebsd`].

mod assemble;
mod check;
pub mod error;
pub mod files;
pub mod freebsd;
pub mod ranges;
pub mod read;

pub(crate) use assemble::{cold_code, cpu_timing};
pub use error::{Origin, ScenarioError};
pub use files::*;
pub use read::{parse_file, Scenario};

use crate::kernel::Delivery;
use crate::machine::{Counters, Machine};
use crate::probes::analyzer::TraceRecord;
use crate::result::{Count, Measured, RunResult};
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;
use std::path::Path;

impl Scenario {
    /// The scenario's PCIe functions, in file order: under Linux every device is one
    /// (`Scenario::check`), so their indices are the `device.N` of the file.
    pub fn pcie_devices(&self) -> Vec<&files::DeviceSection> {
        self.file
            .device
            .iter()
            .filter_map(files::Device::pcie)
            .collect()
    }
}

/// What one run of the machine produced, in its own terms (the mechanism tests read these); the
/// rest of irqlab reads it as a [`RunResult`] ([`Outcome::into_result`]).
#[derive(Debug)]
pub struct Outcome {
    pub isr: LatencyHistogram,
    pub tasklet: LatencyHistogram,
    /// The measured card's own round-trip counter (seed 002's instrument); empty without one.
    pub round_trip: LatencyHistogram,
    /// cyclictest's latencies, all its threads together; empty without it.
    pub cyclictest: LatencyHistogram,
    pub tasks: TaskCounters,
    /// The network controllers, in device order.
    pub nics: Vec<NicCounters>,
    /// Does the measured card's driver schedule a tasklet (seed 000's driver)?
    pub has_tasklet: bool,
    /// The headline latency (round trip, or else ISR latency) sample by sample, bounded; from
    /// the first replication only.
    pub series: Option<(&'static str, SampleSeries)>,
    pub counters: Counters,
    pub trace: Vec<TraceRecord>,
    /// A run of fixed length (`duration_ms`), in microseconds; 0: the run counted samples.
    /// Replications add up.
    pub run_length_us: u64,
    /// The same latencies per workload phase, in phase order (none without phases).
    pub phases: Vec<PhaseOutcome>,
}

/// One workload phase's latencies (`[[workload.phase]]`), by the samples' numbers.
#[derive(Debug)]
pub struct PhaseOutcome {
    pub name: String,
    pub isr: LatencyHistogram,
    pub tasklet: LatencyHistogram,
    pub round_trip: LatencyHistogram,
    pub cyclictest: LatencyHistogram,
}

/// What the scheduler and the timers did (zero on a kernel without tasks).
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskCounters {
    pub context_switches: u64,
    pub hrtimers_expired: u64,
    /// Works the `events` threads ran (drivers' deferred work: e1000e's watchdog).
    pub works_run: u64,
    /// Times the real-time class was throttled (`sched_rt_runtime_us` used up) and the time,
    /// in microseconds, it spent throttled.
    pub rt_throttles: u64,
    pub rt_throttled_us: u64,
}

/// One network controller's counts: what `/proc/interrupts` and `ethtool -S` would show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NicCounters {
    pub name: String,
    /// Interrupts it asserted.
    pub interrupts: u64,
    /// Frames that arrived on its port, were dropped for a full packet buffer (MPC), and that
    /// the stack received.
    pub frames: u64,
    pub dropped: u64,
    pub received: u64,
    /// With forwarding: frames it put on the wire, and frames routed to it that found its
    /// transmit ring full.
    pub transmitted: u64,
    pub tx_dropped: u64,
    /// Of those, the frames on the wire before the traffic ended.
    pub transmitted_in_run: u64,
}

impl Outcome {
    /// Add another replication's result: histograms and counters add up; the trace and the
    /// series are the first replication's, whichever side holds them.
    fn absorb(&mut self, o: Outcome) {
        self.isr.merge(&o.isr);
        self.tasklet.merge(&o.tasklet);
        self.round_trip.merge(&o.round_trip);
        self.cyclictest.merge(&o.cyclictest);
        self.tasks.context_switches += o.tasks.context_switches;
        self.tasks.hrtimers_expired += o.tasks.hrtimers_expired;
        self.tasks.works_run += o.tasks.works_run;
        self.tasks.rt_throttles += o.tasks.rt_throttles;
        self.tasks.rt_throttled_us += o.tasks.rt_throttled_us;
        self.run_length_us += o.run_length_us;
        for (a, b) in self.phases.iter_mut().zip(&o.phases) {
            a.isr.merge(&b.isr);
            a.tasklet.merge(&b.tasklet);
            a.round_trip.merge(&b.round_trip);
            a.cyclictest.merge(&b.cyclictest);
        }
        for (a, b) in self.nics.iter_mut().zip(&o.nics) {
            a.interrupts += b.interrupts;
            a.frames += b.frames;
            a.dropped += b.dropped;
            a.received += b.received;
            a.transmitted += b.transmitted;
            a.transmitted_in_run += b.transmitted_in_run;
            a.tx_dropped += b.tx_dropped;
        }
        self.counters.merge(&o.counters);
        if self.trace.is_empty() {
            self.trace = o.trace;
        }
        if self.series.is_none() {
            self.series = o.series;
        }
    }

    /// In the neutral result: the latencies measured (the card's own round-trip counter if it
    /// has one, the analyzer's ISR latency, the tasklet latency for a driver with a tasklet) and
    /// the counters, in the order the reports list them. `warmup`: interrupts run first and not
    /// recorded.
    pub fn into_result(self, warmup: u64) -> RunResult {
        let c = &self.counters;
        let has_tasklet = self.has_tasklet;
        let completed = self
            .tasklet
            .count()
            .max(self.round_trip.count())
            .max(if has_tasklet { 0 } else { self.isr.count() })
            .max(self.cyclictest.count());
        let mut counters = vec![
            Count::always("interrupts_raised", c.interrupts_generated),
            Count::if_nonzero("warmup_samples_not_recorded", warmup),
            Count::always("samples_completed", completed),
        ];
        if has_tasklet {
            counters.push(Count::always(
                "samples_overlapped_dropped",
                c.overlapped_samples,
            ));
        }
        counters.extend([
            Count::always("triggers_held_for_previous", c.held_triggers),
            Count::always("unhandled_interrupts", c.unhandled_interrupts),
            Count::always("spurious_8259_interrupts", c.spurious_interrupts),
            Count::always("cpu_port_ios", c.port_ios),
            Count::always("cpu_interrupt_acknowledges", c.interrupt_acknowledges),
            Count::always("cpu_mmio_reads", c.mmio_reads),
            Count::if_nonzero("local_timer_ticks", c.ticks),
            Count::always("tlps_on_device_link", c.packets_on_link),
            Count::always("events_simulated", c.events),
            Count::always("simulated_time_us", c.simulated_ps / 1_000_000),
            Count::if_nonzero("smis", c.smis),
            Count::if_nonzero("workload_irqs_off_sections", c.workload_sections),
        ]);
        counters.extend(c.idle_entries.iter().map(|(name, n)| {
            Count::if_nonzero(format!("idle_entries_{}", name.to_lowercase()), *n)
        }));
        // Per CPU, as /proc/interrupts lists them, when the run has more than one.
        if c.interrupts_per_cpu.len() > 1 {
            counters.extend(
                c.interrupts_per_cpu
                    .iter()
                    .enumerate()
                    .map(|(cpu, n)| Count::always(format!("interrupts_taken_cpu{cpu}"), *n)),
            );
        }
        counters.push(Count::if_nonzero(
            "context_switches",
            self.tasks.context_switches,
        ));
        counters.push(Count::if_nonzero(
            "hrtimers_expired",
            self.tasks.hrtimers_expired,
        ));
        counters.push(Count::if_nonzero("works_run", self.tasks.works_run));
        counters.push(Count::if_nonzero("rt_throttles", self.tasks.rt_throttles));
        counters.push(Count::if_nonzero(
            "rt_throttled_us",
            self.tasks.rt_throttled_us,
        ));
        for n in &self.nics {
            counters.extend([
                Count::always(format!("{}_interrupts", n.name), n.interrupts),
                Count::always(format!("{}_frames", n.name), n.frames),
                Count::always(format!("{}_frames_received", n.name), n.received),
                Count::always(format!("{}_frames_lost", n.name), n.dropped),
            ]);
            counters.extend([
                Count::if_nonzero(format!("{}_frames_transmitted", n.name), n.transmitted),
                Count::if_nonzero(format!("{}_frames_tx_dropped", n.name), n.tx_dropped),
            ]);
            if self.run_length_us > 0 {
                counters.push(Count::if_nonzero(
                    format!("{}_frames_transmitted_in_run", n.name),
                    n.transmitted_in_run,
                ));
            }
        }
        // A run of fixed length (`duration_ms`): its length, which a rate divides by, and the
        // rate the frames on the wire make (what `validate`'s throughput rows compare).
        counters.push(Count::if_nonzero("run_length_us", self.run_length_us));
        let frames: u64 = self.nics.iter().map(|n| n.transmitted_in_run).sum();
        if let Some(rate) = (frames * 1_000_000).checked_div(self.run_length_us) {
            counters.push(Count::if_nonzero("frames_transmitted_per_s", rate));
        }
        counters.push(Count::if_nonzero("link_replays", c.link_replays));
        counters.push(Count::if_nonzero("dma_requests", c.dma_requests));
        // The metrics the run has, each for the whole run and then for each phase.
        let cyclictest = !self.cyclictest.is_empty();
        // A run of fixed length counts frames: the ISR's latency is a sample only where the
        // measured device's driver writes its signature.
        let fixed_length = self.run_length_us > 0;
        let shown = [
            !self.round_trip.is_empty(),
            cyclictest,
            (!cyclictest && !fixed_length) || !self.isr.is_empty(),
            has_tasklet,
        ];
        let metric = |m: usize, phase: Option<&str>, h: LatencyHistogram| {
            let (name, description) = [
                (
                    "round_trip",
                    "the card's counter: MSI raised to the ISR's write reaching its register \
                     (4 ns counts at 250 MHz, the register access included)",
                ),
                (
                    "cyclictest_latency",
                    "cyclictest's own arithmetic: clock_gettime after the wake-up minus the \
                     absolute time it asked clock_nanosleep for",
                ),
                (
                    "isr_latency",
                    "interrupt TLP on the device's link to the ISR's write on it",
                ),
                (
                    "tasklet_latency",
                    "interrupt TLP to the tasklet's signature write",
                ),
            ][m];
            Measured {
                name: name.into(),
                description: description.into(),
                phase: phase.map(str::to_string),
                histogram: h,
                quantum_ns: None,
            }
        };
        let mut metrics = Vec::new();
        let whole = [self.round_trip, self.cyclictest, self.isr, self.tasklet];
        for (m, h) in whole.into_iter().enumerate() {
            if shown[m] {
                metrics.push(metric(m, None, h));
            }
        }
        for p in self.phases {
            let each = [p.round_trip, p.cyclictest, p.isr, p.tasklet];
            for (m, h) in each.into_iter().enumerate() {
                if shown[m] {
                    metrics.push(metric(m, Some(&p.name), h));
                }
            }
        }
        RunResult {
            metrics,
            counters,
            series: self.series.map(|(name, s)| (name.to_string(), s)),
            trace: self.trace,
            counts: None,
        }
    }
}

impl Scenario {
    /// Settings the run cannot honour.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.kernel.family() != files::Family::Linux {
            return w;
        }
        let tick = self.kernel.linux().tick.as_ref().is_some_and(|t| t.hz > 0);
        if !tick && self.kernel.linux().idle.is_some() {
            w.push(
                "kernel.tick.hz is 0 with a cpuidle kernel: with no timer at all the idle \
                 governor expects endless idle periods, and after any irregular one it picks the \
                 deepest state"
                    .to_string(),
            );
        }
        if tick && self.file.delivery == Delivery::Xtpic {
            w.push(
                "kernel.tick.hz is not modelled in XT-PIC mode (the tick comes from the PIT on \
                 IRQ 0 there): this run has no tick"
                    .to_string(),
            );
        }
        let nics: Vec<&files::DeviceSection> = self
            .pcie_devices()
            .into_iter()
            .filter(|d| d.nic.is_some())
            .collect();
        // A run that counts frames has nothing to count without traffic (an idle run of
        // network controllers, seed 003's, is a run of samples and means it).
        if self.counts_frames()
            && !nics.is_empty()
            && nics
                .iter()
                .all(|d| d.nic.as_ref().is_some_and(|n| n.gap_us == 0.0))
        {
            // The example offers the first controller's port traffic and, where there is a
            // second, routes it there.
            let index = |d: &files::DeviceSection| {
                self.pcie_devices()
                    .into_iter()
                    .position(|e| std::ptr::eq(e, d))
                    .unwrap_or(0)
            };
            let first = index(nics[0]);
            let route = nics.get(1).map_or(String::new(), |d| {
                format!(" --set device.{first}.nic.forward_to={}", d.name)
            });
            w.push(format!(
                "no network controller is offered traffic (every device.N.nic.gap_us is 0): \
                 give a port frames{}, e.g. --set device.{first}.nic.gap_us=0.672{route} \
                 (experiments/seed001.toml's runs show the flows)",
                if route.is_empty() { "" } else { " and a route" }
            ));
        }
        w
    }

    /// A run of fixed length (`duration_ms`) counts frames; it has no latency samples unless it
    /// runs cyclictest.
    pub fn counts_frames(&self) -> bool {
        self.file.duration_ms > 0.0 && self.file.cyclictest.is_none()
    }

    /// Load `path` and apply `overrides` (`key=value` strings).
    pub fn load(path: impl AsRef<Path>, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        // A thin generic shell over a non-generic body: the body (file parsing, deserialization)
        // is compiled once, in this crate, rather than again in every crate that calls it.
        Scenario::load_path(path.as_ref(), overrides)
    }

    fn load_path(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        let s = Scenario::read_all(path, overrides)?;
        s.check()?;
        Ok(s)
    }

    /// Build and run: `samples` interrupts from the measured device, the first `trace` TLPs on
    /// its link kept.
    pub fn run(&self, seed: u64, samples: u64, trace: usize) -> Result<Outcome, ScenarioError> {
        self.run_with(seed, samples, trace, false)
    }

    /// Split `samples` over `replications` independent runs and run them on all cores, merging
    /// their histograms and counters: memory stays that of one run per core. Replication 0
    /// uses `seed` itself (so one replication is [`Scenario::run`]); replication r > 0 a seed
    /// derived from `seed` and r. The result depends on the replication count, never on the
    /// number of cores or threads. `progress` counts interrupts raised, across replications.
    pub fn run_replicated(
        &self,
        seed: u64,
        samples: u64,
        trace: usize,
        replications: u32,
        progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<Outcome, ScenarioError> {
        let share = |i: u64| share(samples, replications, i);
        let merged = replicate(
            seed,
            replications,
            |i, s| {
                if share(i) == 0 {
                    return Ok(None);
                }
                // The first replication keeps the trace and the series.
                let mut m = if i == 0 {
                    self.build_keeping(s, share(i), samples, trace, true)?
                } else {
                    self.build_keeping(s, share(i), samples, 0, false)?
                };
                m.progress = progress.clone();
                self.finish(m, share(i)).map(Some)
            },
            Outcome::absorb,
        )?;
        Ok(merged.expect("at least one sample"))
    }

    /// [`Scenario::run`], optionally in the machine's step-by-step reference mode.
    pub fn run_with(
        &self,
        seed: u64,
        samples: u64,
        trace: usize,
        strict: bool,
    ) -> Result<Outcome, ScenarioError> {
        let mut m = self.build(seed, samples, trace)?;
        m.strict = strict;
        self.finish(m, samples)
    }

    /// Run a built machine and collect its result.
    fn finish(&self, mut m: Machine, samples: u64) -> Result<Outcome, ScenarioError> {
        let counters = m.run();
        if counters.truncated {
            return Err(ScenarioError::Runaway {
                path: self.path.clone(),
                events: counters.events,
                completed: (m.probe.completed())
                    .max(m.round_trip.histogram.count())
                    .max(m.kernel.cyclic.first().map_or(0, |t| t.loops)),
                requested: samples,
            });
        }
        let trace = m.analyzer.take_trace();
        let cyclictest = m.cyclictest.merged();
        let tasks = TaskCounters {
            context_switches: m.sched.switches,
            hrtimers_expired: m.kernel.hrtimers.expired,
            works_run: m.kernel.deferred.runs,
            rt_throttles: m.sched.rt_throttles,
            rt_throttled_us: m.sched.rt_throttled_time.as_ps() / 1_000_000,
        };
        let netdev = |k: usize| (m.kernel.net.devs.iter()).find(|x| usize::from(x.device) == k);
        let nics = (m.devices.iter().enumerate())
            .filter_map(|(k, d)| d.card().map(|d| (k, d)))
            .filter_map(|(k, d)| d.nic.as_ref().map(|n| (k, d, n)))
            .map(|(k, d, n)| NicCounters {
                name: d.cfg.name.clone(),
                interrupts: n.interrupts,
                frames: n.arrived,
                dropped: n.dropped,
                received: netdev(k).map_or(0, |x| x.received),
                transmitted: n.transmitted(),
                tx_dropped: netdev(k).map_or(0, |x| x.tx_dropped),
                transmitted_in_run: n.transmitted_in_run,
            })
            .collect();
        let names =
            (self.file.workload.iter()).flat_map(|w| w.phase.iter().map(|p| p.name.clone()));
        let phases = names
            .enumerate()
            .map(|(i, name)| {
                let take = |b: &mut crate::probes::ByPhase| std::mem::take(&mut b.histograms[i]);
                PhaseOutcome {
                    name,
                    isr: take(&mut m.probe.isr_phases),
                    tasklet: take(&mut m.probe.tasklet_phases),
                    round_trip: take(&mut m.round_trip.phases),
                    cyclictest: take(&mut m.cyclictest.phases),
                }
            })
            .collect();
        let round_trip = std::mem::take(&mut m.round_trip.histogram);
        let device_series = m.round_trip.series.take();
        Ok(Outcome {
            isr: std::mem::take(&mut m.probe.isr),
            tasklet: std::mem::take(&mut m.probe.tasklet),
            round_trip,
            cyclictest,
            tasks,
            nics,
            has_tasklet: m.probe.tasklet_signature_addr.is_some(),
            series: match (device_series, m.probe.series.take()) {
                (Some(s), _) if s.samples > 0 => Some(("round_trip", s)),
                (_, Some(s)) if s.samples > 0 => Some(("isr_latency", s)),
                _ => None,
            },
            counters,
            trace,
            run_length_us: (self.file.duration_ms * 1e3).round() as u64,
            phases,
        })
    }
}

/// Replication `i`'s share of `samples` split among `replications` (every model splits them so):
/// the first `samples % replications` take one more.
pub(crate) fn share(samples: u64, replications: u32, i: u64) -> u64 {
    let r = u64::from(replications.max(1));
    samples / r + u64::from(i < samples % r)
}

/// A replication's seed: SplitMix64 of the run's seed and the replication index, so that
/// replications draw unrelated streams.
pub fn replication_seed(seed: u64, replication: u64) -> u64 {
    let mut z = seed ^ replication.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Run `replications` independent replications on all cores and merge them as they finish, in
/// replication order (`absorb(earlier, later)`), so memory is that of one run per thread. `run`
/// gets the replication's index and seed: replication 0 the run's own seed (so one replication
/// is the plain run), replication r > 0 [`replication_seed`]; it returns `None` for a
/// replication with nothing to do. The result depends on the replication count, never on the
/// number of cores or threads.
pub(crate) fn replicate<R: Send>(
    seed: u64,
    replications: u32,
    run: impl Fn(u64, u64) -> Result<Option<R>, ScenarioError> + Sync,
    absorb: impl Fn(&mut R, R) + Sync,
) -> Result<Option<R>, ScenarioError> {
    use rayon::prelude::*;
    (0..u64::from(replications.max(1)))
        .into_par_iter()
        .map(|i| {
            let s = if i == 0 {
                seed
            } else {
                replication_seed(seed, i)
            };
            run(i, s)
        })
        .try_reduce(
            || None,
            |a, b| {
                Ok(match (a, b) {
                    (Some(mut a), Some(b)) => {
                        absorb(&mut a, b);
                        Some(a)
                    }
                    (a, b) => a.or(b),
                })
            },
        )
}
