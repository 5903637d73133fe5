//! Background activity on any platform: process work that keeps a core busy between idle
//! gaps, broken by sections that hold interrupts off, with lengths drawn from distributions.
//!
//! A scenario's `[workload]` describes it once for every core; each core draws from its own
//! stream (`workload.cpuN`). The idle task runs it (`Step::Work` in its loop, before the
//! halt): while a busy stretch lasts, the core runs process code, which an interrupt cuts at the
//! next instruction boundary, and sections with interrupts off, which it does not; when the
//! stretch is spent the idle loop halts until the next stretch arrives. This is the shape of
//! seed 004's load phases (busy fraction, busy-stretch length, sections per busy second and
//! their mean length), which step 9 of the move to one machine makes instances of this.
//!
//! Sections hold interrupts off in one of two ways: `irqs-off` clears the processor's interrupt
//! flag (`cli` ... `sti`, `local_irq_save`), `spl-tty`, `spl-net`, `spl-bio` and `spl-high`
//! raise FreeBSD's `cpl` (`spltty()` ... `splx()`, `kernel/spl.rs`): interrupts of the class
//! are still taken, acknowledged and held in `ipending`, and `splx` replays them. Cache
//! pollution (`cold_fraction`): the chance that a cache line of kernel code was evicted since it
//! last ran, which the core's cold-code model charges as a line fill (`machine/core.rs`).
//!
//! Not yet here: preempt-off sections (they need the preemption models of seed 003).

use crate::engine::rng::Stream;
use crate::engine::SimDuration;
use rand::Rng;
use rand_distr::Distribution as _;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The scenario's `[workload]`: one load for the whole run, or `[[workload.phase]]`s that
/// follow the run's sample numbers (seed 004's "samples 1-1100: command-line work").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    /// The one load's busy fraction and stretch ([`WorkloadSpec`]); absent with phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_ms: Option<f64>,
    #[serde(default)]
    pub section: Vec<SectionSpec>,
    #[serde(default)]
    pub cold_fraction: f64,
    /// The load in stretches of the run, in sample order; empty: the one load above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase: Vec<PhaseSpec>,
}

impl WorkloadSection {
    /// The one load (a workload without phases; the check has its busy fraction and stretch).
    pub fn load(&self) -> WorkloadSpec {
        WorkloadSpec {
            busy_fraction: self.busy_fraction.unwrap_or(0.0),
            busy_ms: self.busy_ms.unwrap_or(0.0),
            section: self.section.clone(),
            cold_fraction: self.cold_fraction,
        }
    }
}

/// One stretch of the run's workload (`[[workload.phase]]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    pub name: String,
    /// The last sample (1-based, inclusive) taken under this load.
    pub until_sample: u64,
    pub busy_fraction: f64,
    pub busy_ms: f64,
    pub cold_fraction: f64,
    /// Interrupts per second of the scenario's adapter cards, by device name.
    #[serde(default)]
    pub rates: std::collections::BTreeMap<String, f64>,
    #[serde(default)]
    pub section: Vec<SectionSpec>,
}

impl PhaseSpec {
    /// The phase's last sample in a replication that runs `samples` of the run's `total`: a
    /// replication's share passes through every phase in proportion (a phase that ends at
    /// sample 1100 of 4400 ends at 275 of a quarter's 1100).
    pub fn until_in(&self, samples: u64, total: u64) -> u64 {
        (u128::from(self.until_sample) * u128::from(samples)).div_ceil(u128::from(total.max(1)))
            as u64
    }

    pub fn load(&self) -> WorkloadSpec {
        WorkloadSpec {
            busy_fraction: self.busy_fraction,
            busy_ms: self.busy_ms,
            section: self.section.clone(),
            cold_fraction: self.cold_fraction,
        }
    }
}

/// A load as the generator runs it: the whole run's, or one phase's.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Fraction of the time a core runs process work rather than idling (0 to 1), not counting
    /// the sections (as seed 004's phases count it).
    pub busy_fraction: f64,
    /// Mean length of a busy stretch in ms of process CPU time, sections not counted
    /// (exponential).
    pub busy_ms: f64,
    /// Sections process code runs with interrupts held off.
    #[serde(default)]
    pub section: Vec<SectionSpec>,
    /// Cache pollution: the chance that a cache line of the kernel's interrupt code was evicted
    /// since it last ran (0 to 1).
    #[serde(default)]
    pub cold_fraction: f64,
}

/// One kind of section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SectionSpec {
    /// What the section holds off: `irqs-off` (`local_irq_save` ... `restore`, `cli` ...
    /// `sti`), or a FreeBSD `spl` class (`spl-tty`, `spl-net`, `spl-bio`, `spl-high`).
    pub kind: SectionKind,
    /// How many per second of busy CPU time (a Poisson process over busy time).
    pub per_busy_s: f64,
    /// The length's distribution.
    #[serde(default)]
    pub distribution: LengthDistribution,
    /// Mean length in microseconds.
    pub mean_us: f64,
    /// For `lognormal`: the standard deviation of the length's logarithm.
    #[serde(default)]
    pub sigma: f64,
}

#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SectionKind {
    IrqsOff,
    SplTty,
    SplNet,
    SplBio,
    SplHigh,
}

impl SectionKind {
    /// The `spl` class the section raises `cpl` to, if it is an `spl` section.
    pub fn spl(self) -> Option<SplClass> {
        match self {
            SectionKind::IrqsOff => None,
            SectionKind::SplTty => Some(SplClass::Tty),
            SectionKind::SplNet => Some(SplClass::Net),
            SectionKind::SplBio => Some(SplClass::Bio),
            SectionKind::SplHigh => Some(SplClass::High),
        }
    }
}

/// FreeBSD's interrupt classes as `spl` raises them (`spltty`, `splimp`/`splnet`, `splbio`,
/// `splhigh`/`splclock`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SplClass {
    Tty = 0,
    Net = 1,
    Bio = 2,
    High = 3,
}

#[derive(Copy, Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LengthDistribution {
    /// Memoryless: most sections short, a few long.
    #[default]
    Exponential,
    /// Always `mean_us`.
    Fixed,
    /// Lengths whose logarithm is normal with `sigma`, scaled to the mean: the long right tail
    /// measured irqs-off sections have.
    Lognormal,
}

/// What the idle task's `Work` step does next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Process code with interrupts on, for this long.
    Busy(SimDuration),
    /// `cli`: a section starts.
    Cli,
    /// Code with interrupts off, for this long.
    Held(SimDuration),
    /// `sti`: the section ends.
    Sti,
    /// Kernel code of process context with interrupts on (a system call's work inside an
    /// `spl` section), for this long.
    Syscall(SimDuration),
    /// `splXXX()`: raise `cpl` by the class's mask (saving the old value).
    Spl(SplClass),
    /// `splx()`: restore `cpl`, replaying what it held off.
    Splx,
    /// The kernel instructions of an `spl` call.
    Code(u32),
    /// The stretch is spent: idle until the next one arrives, after this gap (`None`: no more
    /// work).
    Rest(Option<SimDuration>),
}

/// One core's generator.
#[derive(Clone, Debug)]
pub struct WorkState {
    spec: WorkloadSpec,
    rng: Stream,
    /// Sections per picosecond of busy time, all kinds together.
    section_rate_per_ps: f64,
    queue: VecDeque<Piece>,
    /// CPU time left in the current busy stretch.
    busy_left_ps: u64,
    working: bool,
    /// A busy stretch arrived while the core was not in its idle loop.
    pub pending: bool,
    /// The run has its samples: no new stretches.
    pub stopped: bool,
    /// Idle with no stretch to come: the load's busy fraction is 0 (until a phase brings one,
    /// [`WorkState::set_spec`]).
    unloaded: bool,
    /// Sections run.
    pub sections: u64,
    /// Instructions of an `splXXX()` or `splx()` call (the kernel's, for `spl` sections).
    pub spl_call_instructions: u32,
}

impl WorkState {
    /// A generator; a core that is always busy (`busy_fraction` 1) starts with work pending.
    pub fn new(spec: WorkloadSpec, rng: Stream) -> WorkState {
        let section_rate_per_ps = spec.section.iter().map(|s| s.per_busy_s * 1e-12).sum();
        let spec_unloaded = spec.busy_fraction <= 0.0;
        WorkState {
            pending: !spec_unloaded,
            spec,
            rng,
            section_rate_per_ps,
            queue: VecDeque::new(),
            busy_left_ps: 0,
            working: false,
            stopped: false,
            unloaded: spec_unloaded,
            sections: 0,
            spl_call_instructions: 0,
        }
    }

    /// The workload changes (a phase begins): the stretch under way goes on, with the new
    /// sections; the next stretch and idle gap follow the new busy fraction. A core that had
    /// no load gets its first stretch after an idle gap of the new load: the gap is returned,
    /// for the machine to schedule its arrival.
    pub fn set_spec(&mut self, spec: WorkloadSpec) -> Option<SimDuration> {
        self.section_rate_per_ps = spec.section.iter().map(|s| s.per_busy_s * 1e-12).sum();
        self.spec = spec;
        let f = self.spec.busy_fraction;
        if !self.unloaded || self.stopped || f <= 0.0 {
            return None;
        }
        self.unloaded = false;
        Some(self.idle_gap())
    }

    /// The idle gap before the next busy stretch, drawn so that the stretches make the busy
    /// fraction (none for a core always busy; the caller handles a load of 0).
    fn idle_gap(&mut self) -> SimDuration {
        let f = self.spec.busy_fraction;
        if f >= 1.0 {
            return SimDuration::ZERO;
        }
        let idle_ps = self.spec.busy_ms * 1e9 * (1.0 - f) / f;
        SimDuration::from_ps(self.exponential(idle_ps))
    }

    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    fn exponential(&mut self, mean_ps: f64) -> u64 {
        let u: f64 = self.rng.gen();
        (-(1.0 - u).ln() * mean_ps).round() as u64
    }

    fn length(&mut self, s: &SectionSpec) -> u64 {
        let mean_ps = s.mean_us * 1e6;
        let ps = match s.distribution {
            LengthDistribution::Exponential => self.exponential(mean_ps) as f64,
            LengthDistribution::Fixed => mean_ps,
            LengthDistribution::Lognormal => {
                // E[X] = exp(mu + sigma^2 / 2): mu from the mean.
                let mu = mean_ps.ln() - s.sigma * s.sigma / 2.0;
                rand_distr::LogNormal::new(mu, s.sigma)
                    .expect("sigma checked >= 0")
                    .sample(&mut self.rng)
            }
        };
        (ps.round() as u64).max(1)
    }

    /// Is the core busy `dt` from now, if it is busy now (`busy`)? A stretch's length and the
    /// gap after it are exponential (`next_piece`, `idle_gap`), so busy and idle are the two
    /// states of a Markov chain that leaves busy at rate a = 1 / busy_ms and idle at rate
    /// b = a f / (1 - f), whose busy fraction is f: P(busy after dt) = f + (1 - f) e^-(a+b)dt
    /// from busy, f (1 - e^-(a+b)dt) from idle. A windowed run draws the state a skip ends in
    /// with it (`Machine::window`); the stretch's sections and the interrupts that cut it make
    /// a stretch a little longer in time than its drawn process time, which the window before
    /// the next sample leaves to the run itself.
    pub fn busy_after(&mut self, busy: bool, dt: SimDuration) -> bool {
        let f = self.spec.busy_fraction;
        if self.stopped || self.unloaded || f <= 0.0 {
            return false;
        }
        if f >= 1.0 {
            return true;
        }
        let a_per_ps = 1.0 / (self.spec.busy_ms * 1e9);
        let b_per_ps = a_per_ps * f / (1.0 - f);
        let decay = (-(a_per_ps + b_per_ps) * dt.as_ps() as f64).exp();
        let p_busy = if busy {
            f + (1.0 - f) * decay
        } else {
            f * (1.0 - decay)
        };
        self.rng.gen::<f64>() < p_busy
    }

    /// A skip ends with the core busy (`busy`) or idle: the stretch under way and the sections
    /// drawn ahead in it are dropped, since what is left of each is, by the exponential laws
    /// they are drawn from, a fresh draw. Busy: a new stretch is pending (`next_piece` or the
    /// machine's arrival takes it up). Idle: the gap before the next stretch, for the machine
    /// to schedule (`in_loop`: the core is in its work loop, which gets the gap as its next
    /// piece, `Rest`, instead). `None`: no gap to schedule.
    pub fn resume(&mut self, busy: bool, in_loop: bool) -> Option<SimDuration> {
        self.queue.clear();
        self.busy_left_ps = 0;
        self.working = false;
        self.pending = busy && !self.stopped;
        if busy || self.stopped || self.unloaded || self.spec.busy_fraction <= 0.0 {
            // Idle under no load: as `next_piece` leaves it, so that a phase that brings load
            // back schedules its first stretch (`set_spec`).
            self.unloaded |= !busy && !self.stopped && self.spec.busy_fraction <= 0.0;
            if in_loop && !self.pending {
                self.queue.push_back(Piece::Rest(None));
            }
            return None;
        }
        let gap = self.idle_gap();
        if in_loop {
            self.queue.push_back(Piece::Rest(Some(gap)));
            return None;
        }
        Some(gap)
    }

    /// The next piece of the core's process work.
    pub fn next_piece(&mut self) -> Piece {
        if let Some(p) = self.queue.pop_front() {
            return p;
        }
        if self.stopped {
            self.working = false;
            self.pending = false;
            return Piece::Rest(None);
        }
        if !self.working {
            if !self.pending {
                return Piece::Rest(None);
            }
            self.pending = false;
            self.working = true;
            self.busy_left_ps = self.exponential(self.spec.busy_ms * 1e9).max(1);
        }
        let gap = if self.section_rate_per_ps > 0.0 {
            self.exponential(1.0 / self.section_rate_per_ps)
        } else {
            u64::MAX
        };
        if gap >= self.busy_left_ps {
            // The stretch ends in process code; the next one comes after an idle gap that
            // makes the busy fraction.
            let left = std::mem::take(&mut self.busy_left_ps);
            self.working = false;
            let f = self.spec.busy_fraction;
            let rest = if f <= 0.0 {
                // No load any more (a phase took it away): idle until one brings it back.
                self.unloaded = true;
                None
            } else {
                // Always busy: the next stretch is due at once.
                self.pending |= f >= 1.0;
                Some(self.idle_gap())
            };
            self.queue.push_back(Piece::Rest(rest));
            return Piece::Busy(SimDuration::from_ps(left.max(1)));
        }
        self.busy_left_ps -= gap;
        // Which kind of section: by rate.
        let mut x = self.rng.gen::<f64>() * self.section_rate_per_ps;
        let mut pick = self.spec.section.len() - 1;
        for (i, s) in self.spec.section.iter().enumerate() {
            let r = s.per_busy_s * 1e-12;
            if x < r {
                pick = i;
                break;
            }
            x -= r;
        }
        let s = self.spec.section[pick].clone();
        let held = SimDuration::from_ps(self.length(&s));
        self.sections += 1;
        match s.kind.spl() {
            None => {
                self.queue
                    .extend([Piece::Cli, Piece::Held(held), Piece::Sti]);
            }
            Some(class) => {
                let call = Piece::Code(self.spl_call_instructions);
                self.queue.extend([
                    call,
                    Piece::Spl(class),
                    Piece::Syscall(held),
                    Piece::Splx,
                    call,
                ]);
            }
        }
        Piece::Busy(SimDuration::from_ps(gap.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::RngStreams;

    fn spec(busy_fraction: f64) -> WorkloadSpec {
        WorkloadSpec {
            busy_fraction,
            busy_ms: 1.0,
            cold_fraction: 0.0,
            section: vec![SectionSpec {
                kind: SectionKind::IrqsOff,
                per_busy_s: 10_000.0,
                distribution: LengthDistribution::Exponential,
                mean_us: 5.0,
                sigma: 0.0,
            }],
        }
    }

    /// Walk the generator for `stretches` busy stretches: busy time, idle time, held time and
    /// the number of sections.
    fn walk(w: &mut WorkState, stretches: u32) -> (f64, f64, f64, u64) {
        let (mut busy, mut idle, mut held, mut n) = (0.0, 0.0, 0.0, 0);
        let mut done = 0;
        while done < stretches {
            match w.next_piece() {
                Piece::Busy(d) => busy += d.as_ps() as f64,
                Piece::Held(d) => {
                    held += d.as_ps() as f64;
                    n += 1;
                }
                Piece::Rest(Some(d)) => {
                    idle += d.as_ps() as f64;
                    w.pending = true; // the next stretch arrives
                    done += 1;
                }
                Piece::Rest(None) => panic!("work stopped"),
                Piece::Syscall(d) => {
                    held += d.as_ps() as f64;
                    n += 1;
                }
                Piece::Cli | Piece::Sti | Piece::Spl(_) | Piece::Splx | Piece::Code(_) => {}
            }
        }
        (busy, idle, held, n)
    }

    #[test]
    fn the_busy_fraction_and_the_section_rate_come_out_as_specified() {
        let mut w = WorkState::new(spec(0.25), RngStreams::new(3).stream("workload.cpu0"));
        let (busy, idle, held, n) = walk(&mut w, 4000);
        // Both count process time without the sections in it.
        let f = busy / (busy + idle);
        assert!((f - 0.25).abs() < 0.01, "busy fraction {f}");
        let per_s = n as f64 / (busy * 1e-12);
        assert!(
            (per_s / 10_000.0 - 1.0).abs() < 0.03,
            "{per_s} sections per busy s"
        );
        let mean_us = held / n as f64 / 1e6;
        assert!(
            (mean_us / 5.0 - 1.0).abs() < 0.03,
            "mean section {mean_us} us"
        );
    }

    #[test]
    fn a_section_is_cli_held_sti_and_a_stopped_generator_rests_for_good() {
        let mut w = WorkState::new(spec(1.0), RngStreams::new(1).stream("workload.cpu0"));
        let mut saw = Vec::new();
        while saw.len() < 4 {
            saw.push(w.next_piece());
            if matches!(saw[0], Piece::Rest(_)) {
                saw.clear();
            }
        }
        assert!(matches!(saw[0], Piece::Busy(_)), "{saw:?}");
        assert_eq!(saw[1], Piece::Cli);
        assert!(matches!(saw[2], Piece::Held(_)));
        assert_eq!(saw[3], Piece::Sti);
        w.stopped = true;
        let mut last = w.next_piece();
        for _ in 0..4 {
            last = w.next_piece();
        }
        assert_eq!(last, Piece::Rest(None));
    }

    /// The chain's law: from either state, the share of draws that end busy after dt is
    /// f + (1 - f) e^-(a+b)dt or f (1 - e^-(a+b)dt); long after, the busy fraction.
    #[test]
    fn the_state_after_a_skip_follows_the_stretches_chain() {
        let mut w = WorkState::new(spec(0.25), RngStreams::new(5).stream("workload.cpu0"));
        // busy_ms 1: a = 1/ms, b = 1/3 per ms, a + b = 4/3 per ms.
        let n = 40_000;
        for (from_busy, dt_us) in [
            (true, 500u64),
            (false, 500),
            (true, 20_000),
            (false, 20_000),
        ] {
            let dt = SimDuration::from_ns(dt_us * 1000);
            let busy = (0..n).filter(|_| w.busy_after(from_busy, dt)).count() as f64 / n as f64;
            let decay = (-(4.0 / 3.0) * dt_us as f64 / 1000.0).exp();
            let want = if from_busy {
                0.25 + 0.75 * decay
            } else {
                0.25 * (1.0 - decay)
            };
            let se = (want * (1.0 - want) / n as f64).sqrt();
            assert!(
                (busy - want).abs() < 5.0 * se + 1e-9,
                "{from_busy} {dt_us}: {busy} vs {want}"
            );
        }
        // Always busy, never busy.
        let mut always = WorkState::new(spec(1.0), RngStreams::new(1).stream("w"));
        assert!(always.busy_after(false, SimDuration::from_ns(1)));
        let mut never = WorkState::new(spec(0.0), RngStreams::new(1).stream("w"));
        assert!(!never.busy_after(true, SimDuration::from_ns(1_000_000_000)));
    }

    /// The chain's law against the generator itself, not against its formula: a load without
    /// sections (so that wall time is process time) walked into a timeline of busy and idle
    /// stretches, read at pairs of times `dt` apart on a grid wider than the chain's memory.
    /// The share busy at the second time, given each state at the first, is `busy_after`'s,
    /// within 0.025: the rate a in place of a + b misses by 0.036 (from idle at 500 us), the
    /// two states' formulas swapped by 0.5.
    #[test]
    fn busy_after_is_the_generators_own_law() {
        let mut s = spec(0.3);
        s.section.clear();
        let mut w = WorkState::new(s.clone(), RngStreams::new(11).stream("workload.cpu0"));
        // (end of the stretch in ps, busy), in time order.
        let mut timeline: Vec<(u64, bool)> = Vec::new();
        let mut t = 0u64;
        while t < 100_000_000_000_000 {
            match w.next_piece() {
                Piece::Busy(d) => t += d.as_ps(),
                Piece::Rest(Some(g)) => {
                    timeline.push((t, true));
                    t += g.as_ps();
                    timeline.push((t, false));
                    w.pending = true;
                }
                p => panic!("a load without sections gives {p:?}"),
            }
        }
        let busy_at = |x: u64| timeline[timeline.partition_point(|&(end, _)| end <= x)].1;
        let mut chain = WorkState::new(s, RngStreams::new(12).stream("chain"));
        for dt_us in [500u64, 2_000] {
            let dt = dt_us * 1_000_000;
            let (mut n, mut busy) = ([0u64; 2], [0u64; 2]);
            let mut x = 0;
            while x + dt < t - 10_000_000_000 {
                let from = usize::from(busy_at(x));
                n[from] += 1;
                busy[from] += u64::from(busy_at(x + dt));
                x += 3_000_000_000; // 3 ms: over four times the chain's 0.7 ms memory
            }
            for from in [0, 1] {
                let seen = busy[from] as f64 / n[from] as f64;
                let d = SimDuration::from_ps(dt);
                let m = 40_000;
                let law =
                    (0..m).filter(|_| chain.busy_after(from == 1, d)).count() as f64 / m as f64;
                assert!(
                    (seen - law).abs() < 0.025,
                    "dt {dt_us} us from {}: the generator {seen:.3} ({} samples), busy_after {law:.3}",
                    if from == 1 { "busy" } else { "idle" },
                    n[from]
                );
            }
        }
    }

    /// After a skip, a busy core starts a fresh stretch; an idle one in its loop gets its gap
    /// as the next piece, and a halted one hands it to the machine.
    #[test]
    fn a_skip_ends_in_a_fresh_stretch_or_a_gap() {
        let mut w = WorkState::new(spec(0.5), RngStreams::new(2).stream("workload.cpu0"));
        assert!(matches!(w.next_piece(), Piece::Busy(_)));
        assert_eq!(w.resume(true, true), None);
        assert!(w.pending);
        assert!(matches!(w.next_piece(), Piece::Busy(_)));
        assert_eq!(w.resume(false, true), None);
        assert!(matches!(w.next_piece(), Piece::Rest(Some(_))));
        assert!(w.resume(false, false).is_some());
        assert!(!w.pending);
        // A skip that ends idle under a phase with no load leaves the core waiting for one:
        // the next phase's load brings its first stretch.
        w.set_spec(spec(0.0));
        assert_eq!(w.resume(false, false), None);
        assert!(
            w.set_spec(spec(0.5)).is_some(),
            "the load's first stretch is scheduled"
        );
    }

    #[test]
    fn lognormal_sections_keep_their_mean() {
        let mut s = spec(0.5);
        s.section[0].distribution = LengthDistribution::Lognormal;
        s.section[0].sigma = 1.0;
        let mut w = WorkState::new(s, RngStreams::new(9).stream("workload.cpu0"));
        let (_, _, held, n) = walk(&mut w, 4000);
        let mean_us = held / n as f64 / 1e6;
        assert!(
            (mean_us / 5.0 - 1.0).abs() < 0.05,
            "mean section {mean_us} us"
        );
    }
}
