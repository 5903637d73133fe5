//! A windowed run: the machine simulates only a window before each pulse of the board's wire
//! and the pulse's own service, and skips the time between (seed 004's draws: a pulse a
//! second, and a sample depends only on what the machine does in the milliseconds before it).
//!
//! A skip starts where nothing is under way that the skip could cut: the last pulse has its
//! sample, no transaction is in flight, no interrupt is requested or in service in the 8259s,
//! `cpl` and `ipending` are clear, and each core either runs its workload's process code or
//! is halted in its idle loop. What is pending then is the devices' timers, the workload's
//! own events and the next phase. The skip ends `window` before the next pulse, and keeps, of
//! what it passes over, exactly what the rest of the run can tell:
//!
//! - the clocks' edges stay on their grid (`Board::skip`), so the 8254's and the RTC's phase
//!   against each pulse is the whole timeline's;
//! - the interrupt sources' next requests are drawn afresh from the skip's end, exact for a
//!   Poisson process;
//! - each core's workload ends the skip busy or idle as the two-state chain of its exponential
//!   stretches and gaps gives it over the skipped time ([`WorkState::busy_after`]), with a
//!   fresh stretch or gap from there ([`WorkState::resume`]), phase by phase where a phase
//!   changes inside the skip.
//!
//! What the window itself must cover is what a sample remembers beyond these: a section or a
//! handler under way (tens of microseconds). One thing it does not cover: the chain's busy
//! fraction is the load's, in process time, while in the whole timeline a stretch's sections
//! and the interrupts that cut it lengthen it in time by a few percent (seed 004: ~1-3%), so
//! with stretches of 100-500 ms, which a 20 ms window cannot forget, the core is busy at a
//! pulse with the load's fraction where the whole timeline's is up to ~1 percentage point
//! nearer 1. `crates/sim/tests/seed004.rs` holds a windowed run's samples against the whole
//! timeline's; `workload.rs`'s tests hold the chain against the generator.
//!
//! [`WorkState::busy_after`]: crate::workload::WorkState::busy_after
//! [`WorkState::resume`]: crate::workload::WorkState::resume

use super::core::CpuState;
use super::{Ev, Machine};
use crate::devices::{Board, Timer};
use crate::engine::SimTime;

impl Machine {
    /// The last pulse (`pulse`) has its sample: skip to the window before the next one if the
    /// machine is at rest; else try again after the next event.
    pub(super) fn try_skip(&mut self, pulse: u64) {
        let Some(window) = self.window else { return };
        if !self.at_rest() {
            return;
        }
        // One skip per pulse, whether or not there is room for it.
        self.skipped_after = pulse;
        let next_pulse = self.q.pending().find_map(|(t, e)| match *e {
            Ev::Device(k, Timer::Own(_), _)
                if matches!(self.devices[usize::from(k)].board(), Some(Board::Gps(_))) =>
            {
                Some(t)
            }
            _ => None,
        });
        let now = self.q.now();
        let Some(to) = next_pulse
            .and_then(|t| t.as_ps().checked_sub(window.as_ps()))
            .map(SimTime::from_ps)
            .filter(|&to| to > now)
        else {
            return;
        };
        // Each core's workload: busy now, or halted in its idle loop (`at_rest`).
        let halted: Vec<bool> = (self.cores.iter())
            .map(|c| c.state == CpuState::Halted)
            .collect();
        let mut busy: Vec<bool> = self.cores.iter().map(|c| c.busy.is_some()).collect();
        let mut from = now;
        loop {
            // A phase that begins inside the skip splits it: its rates and load from then on.
            let phase = (self.q.pending())
                .filter_map(|(t, e)| match *e {
                    Ev::Phase(i) if t < to => Some((t, i)),
                    _ => None,
                })
                .min_by_key(|&(t, _)| t);
            let end = phase.map_or(to, |(t, _)| t);
            for (c, core) in self.cores.iter_mut().enumerate() {
                if let Some(w) = &mut core.work {
                    busy[c] = w.busy_after(busy[c], end.since(from));
                }
            }
            self.skip_over(end, phase.map(|(_, i)| i));
            from = end;
            match phase {
                Some((_, i)) => self.set_phase(usize::from(i)),
                None => break,
            }
        }
        // The workload goes on from the state the chain ended in.
        for c in 0..self.cores.len() {
            let core = &mut self.cores[c];
            let Some(w) = &mut core.work else { continue };
            if halted[c] {
                // Halted in the idle loop: the next stretch arrives at once or after a gap.
                let at = match w.resume(busy[c], false) {
                    None if busy[c] => Some(to),
                    None => None,
                    Some(gap) => Some(to + gap),
                };
                if let Some(at) = at {
                    self.q.schedule_at(at, Ev::WorkArrives(c as u8));
                }
            } else {
                // In a busy run: it ends here, and the loop takes its next piece (a fresh
                // stretch's, or the gap), as when a run ends (`busy_done`).
                w.resume(busy[c], true);
                core.busy = None;
                core.busy_gen = core.busy_gen.wrapping_add(1);
                core.state = CpuState::Running;
                self.q.schedule_at(to, Ev::CpuResume(c as u8));
            }
        }
        self.skipped += to.since(now);
    }

    /// Move the clock to `end` over what is pending: the devices' timers due before it fire at
    /// or after it as each device says (`Device::skip`); the workload's own events go (the
    /// caller draws its state again); phase `phase`'s event at `end` goes too (the caller
    /// begins it).
    fn skip_over(&mut self, end: SimTime, phase: Option<u8>) {
        let mut keep = Vec::new();
        for (t, ev) in self.q.drain() {
            match ev {
                Ev::Device(k, timer, g) if t < end => {
                    let d = &mut self.devices[usize::from(k)];
                    if let Some(at) = d.skip(timer, t, end) {
                        debug_assert!(at >= end);
                        keep.push((at, Ev::Device(k, timer, g)));
                    }
                }
                Ev::BusyDone(..) | Ev::WorkArrives(_) => {}
                Ev::Phase(i) if Some(i) == phase && t == end => {}
                ev => {
                    debug_assert!(t >= end, "{ev:?} at {t} inside a skip to {end}");
                    keep.push((t, ev));
                }
            }
        }
        self.q.jump_to(end);
        // Stable: what falls at one time keeps the order it had.
        keep.sort_by_key(|&(t, _)| t);
        for (t, ev) in keep {
            self.q.schedule_at(t, ev);
        }
    }

    /// Is the machine at rest, with nothing under way that a skip could cut? See the module's
    /// doc: the pending events are the devices' (board devices only), the workload's and the
    /// next phase; no packet is in flight; the 8259s have nothing requested or in service;
    /// `cpl` and `ipending` are clear; each core runs process code with interrupts on or is
    /// halted, with nothing parked and no interrupt waiting.
    fn at_rest(&self) -> bool {
        let now = self.q.now();
        if self.last_inline > now || self.packets.iter().any(|p| p.live) {
            return false;
        }
        let pics = &self.ich.pics;
        if (pics.master.irr | pics.master.isr | pics.slave.irr | pics.slave.isr) != 0 {
            return false;
        }
        if let Some(spl) = &self.kernel.spl {
            if self.kernel.var(spl.cpl) != 0 || self.kernel.var(spl.ipending) != 0 {
                return false;
            }
        }
        let cores_rest = self.cores.iter().all(|c| {
            let running = c.busy.is_some() && c.ctx.irqs_enabled;
            let halted = c.state == CpuState::Halted && !c.work.as_ref().is_some_and(|w| w.pending);
            // Only the idle task's own frame: kernel code that runs with `cpl` clear and
            // interrupts on (the statistics clock's `statclock` under `rtcintr`, whose class
            // mask is 0) is a busy run too, but not the workload's.
            (running || halted) && c.ctx.stack.len() == 1 && c.ctx.parked.is_empty() && !c.intr_line
        });
        cores_rest
            && self.q.pending().all(|(_, e)| match *e {
                Ev::Device(k, Timer::Own(_), _) => self.devices[usize::from(k)].board().is_some(),
                Ev::BusyDone(..) | Ev::WorkArrives(_) | Ev::Phase(_) => true,
                _ => false,
            })
    }
}
