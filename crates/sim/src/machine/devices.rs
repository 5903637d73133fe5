//! The machine's side of its devices (`devices/`): one list of them, named by their end of the
//! fabric, with one interface ([`crate::devices::Device`]: `start`, `timer`, `access`, `pulse`, and
//! `set_rate` for a workload phase) and one event for all their timers ([`Timer`]). A device never
//! calls the machine: it writes what it asks for into a list of [`Effect`]s (a TLP that leaves it,
//! a timer, a level on an 8259 input, a pulse on the board's wire, an interrupt raised, a round
//! trip its counter timed), and `Machine::apply` does them, in the device's order, here: the
//! routing of a TLP to its end, the run-ahead rules (what may happen ahead of the clock), the
//! probes and the workload's phases, which change by the number of the run's samples (seed 004's
//! pulses, the measured card's interrupts, or cyclictest's loops).

use super::fabric::Endpoint;
use super::{Ev, Machine, PROGRESS_EVERY};
use crate::devices::{Effect, Effects, Pulse, Timer, Upstream};
use crate::engine::SimTime;
use crate::hw::pcie::Tlp;
use crate::workload::WorkloadSpec;

/// One stretch of a run's workload, by sample number.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The last sample (1-based, inclusive) taken under it, numbered as the run's source
    /// numbers them: the pulses, the measured card's interrupts, or cyclictest's first thread's
    /// loops (warm-up included).
    pub until_sample: u64,
    pub work: WorkloadSpec,
    /// Interrupt rates of devices (device index, per second): the board's interrupt sources,
    /// or PCIe cards that raise interrupts of their own (from the second phase on: the first
    /// phase's rates are the cards' own, as assembled).
    pub rates: Vec<(u8, f64)>,
}

/// The phase that begins once sample `n` is behind, if `n` was the last of phase `current`.
#[inline]
pub(super) fn next_phase(phases: &[Phase], current: usize, n: u64) -> Option<u8> {
    (current + 1 < phases.len() && n == phases[current].until_sample).then(|| current as u8 + 1)
}

impl Machine {
    /// Start the devices (their first timers) and the first phase.
    pub(super) fn start_devices(&mut self) {
        let now = self.q.now();
        for k in 0..self.devices.len() {
            let mut e = Effects::default();
            self.devices[k].start(now, &mut e);
            self.apply(k as u8, &e, now, true);
        }
        if !self.phases.is_empty() {
            self.set_phase(0);
        }
    }

    /// Device k's timer `t` (of generation `gen`) fires.
    pub(super) fn on_device_timer(&mut self, k: u8, t: Timer, gen: u32) {
        self.device_timer(k, t, gen, self.q.now());
    }

    /// Device k's timer `t` (of generation `gen`) is due at `at` (now, or ahead of the clock
    /// for one due at an access delivered there: [`Effect::Due`]).
    #[inline(never)]
    fn device_timer(&mut self, k: u8, t: Timer, gen: u32, at: SimTime) {
        let running = self.wants_more();
        let mut e = Effects::default();
        self.devices[usize::from(k)].timer(at, t, gen, running, &mut e);
        self.apply(k, &e, at, true);
    }

    /// A request reaches device k at `at`: at its event, or ahead of the clock (see
    /// `advance`); `early` as for [`Self::send_at`].
    #[inline(never)]
    pub(super) fn device_access(&mut self, k: u8, tlp: Tlp, at: SimTime, early: bool) {
        let mut e = Effects::default();
        self.devices[usize::from(k)].access(at, &tlp, &mut e);
        self.apply(k, &e, at, early);
    }

    /// Do what device k asks, in its order, at `at` (the clock's time, or ahead of it for an
    /// access delivered there); `early` as for [`Self::send_at`], for what it sends.
    // Inlined into each caller (the access, the timer): one call fewer per effect list, which is
    // most of what the list costs on seed 002's round trip (`bench/instructions.sh`).
    #[inline(always)]
    pub(super) fn apply(&mut self, k: u8, e: &Effects, at: SimTime, early: bool) {
        for effect in &e.0 {
            match *effect {
                Effect::Send { tlp, at: t, to } => {
                    let to = match to {
                        Upstream::Cpu => self.core_of(&tlp),
                        Upstream::Hub => Endpoint::Ich,
                        Upstream::Memory => Endpoint::Memory,
                    };
                    self.send_at(Endpoint::Device(k), to, tlp, t, early);
                }
                Effect::Timer { at: t, timer, gen } => {
                    let t = t.max(self.q.now());
                    self.q.schedule_at(t, Ev::Device(k, timer, gen));
                }
                // While the core runs ahead, another device's delivery may still come before
                // `at` and read the sample count that a raise would change: due at an event.
                Effect::Due(timer) if !early => {
                    self.q.schedule_at(at, Ev::Device(k, timer, 0));
                }
                Effect::Due(timer) => self.device_timer(k, timer, 0, at),
                Effect::Line(irq, level) => {
                    self.ich.pics.set_irq(irq, level);
                    self.update_intr_at(at);
                }
                Effect::Pulse(pulse) => {
                    debug_assert_eq!(at, self.q.now(), "pulses come from timers, at events");
                    self.on_pulse(usize::from(k), pulse);
                }
                Effect::Raised(n) if k == self.probed_device => {
                    if let Some(p) = &self.progress {
                        if n.is_multiple_of(PROGRESS_EVERY) {
                            p.fetch_add(PROGRESS_EVERY, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                    // The card's interrupts are the run's samples unless cyclictest's are.
                    if !self.phases.is_empty() && self.kernel.cyclic.is_empty() {
                        self.sample_behind(n - 1, at);
                    }
                }
                Effect::RoundTrip(ns) if k == self.probed_device => self.round_trip.record(ns),
                Effect::Raised(_) | Effect::RoundTrip(_) => {}
            }
        }
    }

    /// The pulse wire rises: every device with an input on it takes it; the observer hears
    /// the pulse, and the workload moves on to its next phase half the source's period after
    /// the pulse that ends the current one.
    fn on_pulse(&mut self, from: usize, pulse: Pulse) {
        let now = self.q.now();
        for j in 0..self.devices.len() {
            if j == from {
                continue;
            }
            let mut e = Effects::default();
            self.devices[j].pulse(now, &mut e);
            self.apply(j as u8, &e, now, true);
        }
        if let Some(o) = &mut self.observer {
            o.pulse(pulse.number);
        }
        self.sample_behind(pulse.number, self.q.now() + pulse.half_period);
    }

    /// Sample `n` of the run's source is behind (a pulse sent, the measured card's interrupt
    /// before the one now raised, cyclictest's loop): if it was the current phase's last, the
    /// next phase begins at `at`, before the next sample is taken.
    #[inline]
    pub(super) fn sample_behind(&mut self, n: u64, at: SimTime) {
        if let Some(next) = next_phase(&self.phases, self.phase, n) {
            self.q.schedule_at(at, Ev::Phase(next));
        }
    }

    /// The workload and the devices' rates of phase `i`.
    pub(super) fn set_phase(&mut self, i: usize) {
        self.phase = i;
        let now = self.q.now();
        let rates = self.phases[i].rates.clone();
        for (j, rate) in rates {
            // The first phase's rates are the cards' own (set as assembled).
            if i == 0 && self.devices[usize::from(j)].card().is_some() {
                continue;
            }
            let mut e = Effects::default();
            self.devices[usize::from(j)].set_rate(now, rate, &mut e);
            self.apply(j, &e, now, true);
        }
        if i > 0 {
            let spec = self.phases[i].work.clone();
            for c in 0..self.cores.len() {
                if let Some(w) = &mut self.cores[c].work {
                    if let Some(gap) = w.set_spec(spec.clone()) {
                        self.q.schedule_in(gap, Ev::WorkArrives(c as u8));
                    }
                }
            }
        }
    }

    /// The board device that answers port `port`, as an end of the machine (the hub's
    /// functions answer the rest: the 8259 pair, the DMA page registers).
    pub(super) fn decode_port(&self, port: u16) -> Endpoint {
        match self.devices.iter().position(|d| d.claims_port(port)) {
            Some(k) => Endpoint::Device(k as u8),
            None => Endpoint::Ich,
        }
    }
}
