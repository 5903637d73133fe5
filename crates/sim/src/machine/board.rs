//! The machine's side of the board devices (`devices/`): their timers, the levels they drive on
//! the 8259 pair's inputs, the pulse wire between the GPS receiver, the parallel port and the
//! counter card, the accesses that reach them, and the workload's phases, which change by
//! sample number (seed 004's load).

use super::fabric::Endpoint;
use super::{Ev, Machine};
use crate::devices::{Board, Effects, Pulse};
use crate::engine::SimTime;
use crate::hw::pcie::{Bdf, Tlp, TlpKind};
use crate::workload::WorkloadSpec;

/// One stretch of a run's workload, by sample number.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The last sample (1-based, inclusive) taken under it.
    pub until_sample: u64,
    pub work: WorkloadSpec,
    /// Interrupt rates of the board's sources (board index, per second).
    pub rates: Vec<(u8, f64)>,
}

impl Machine {
    /// Start the board devices' timers and the first phase.
    pub(super) fn start_board(&mut self) {
        for j in 0..self.board.len() {
            let e = self.board[j].start();
            self.apply(j, e, self.q.now());
        }
        if !self.phases.is_empty() {
            self.set_phase(0);
        }
    }

    /// Board device `j`'s timer `which` fires.
    pub(super) fn on_board_timer(&mut self, j: u8, which: u8) {
        let now = self.q.now();
        let e = self.board[usize::from(j)].timer(now, which);
        self.apply(usize::from(j), e, now);
    }

    /// Do what board device `j` asks at `at` (the clock's time, or ahead of it for an access
    /// delivered there: see `board_receives`).
    pub(super) fn apply(&mut self, j: usize, e: Effects, at: SimTime) {
        for (at, which) in e.timers.into_iter().flatten() {
            self.q.schedule_at(at, Ev::Board(j as u8, which));
        }
        if let Some((irq, level)) = e.line {
            self.ich.pics.set_irq(irq, level);
            self.update_intr_at(at);
        }
        if let Some(pulse) = e.pulse {
            debug_assert_eq!(at, self.q.now(), "pulses come from timers, at events");
            self.on_pulse(j, pulse);
        }
    }

    /// The pulse wire rises: every device with an input on it takes it; the observer hears
    /// the pulse, and the workload moves on to its next phase half the source's period after
    /// the pulse that ends the current one.
    fn on_pulse(&mut self, from: usize, pulse: Pulse) {
        let now = self.q.now();
        for j in 0..self.board.len() {
            if j != from {
                let e = self.board[j].pulse(now);
                self.apply(j, e, now);
            }
        }
        if let Some(o) = &mut self.observer {
            o.pulse(pulse.number);
        }
        let i = self.phase;
        if i + 1 < self.phases.len() && pulse.number == self.phases[i].until_sample {
            self.q
                .schedule_in(pulse.half_period, Ev::Phase(i as u8 + 1));
        }
    }

    /// The workload and the sources' rates of phase `i`.
    pub(super) fn set_phase(&mut self, i: usize) {
        self.phase = i;
        let now = self.q.now();
        let rates = self.phases[i].rates.clone();
        for (j, rate) in rates {
            if let Board::IrqSource(s) = &mut self.board[usize::from(j)] {
                let e = s.set_rate(now, rate);
                self.apply(usize::from(j), e, now);
            }
        }
        if i > 0 {
            let spec = self.phases[i].work.clone();
            for core in &mut self.cores {
                if let Some(w) = &mut core.work {
                    w.set_spec(spec.clone());
                }
            }
        }
    }

    /// A request reaches board device `j` at `at`: at its event, or ahead of the clock when
    /// nothing is scheduled before then and the core that sent it waits for the answer (see
    /// `advance`): its effects on the 8259's inputs reach the cores at `at`, and nothing else
    /// can see them in between.
    pub(super) fn board_receives(&mut self, k: u8, tlp: Tlp, at: SimTime) {
        let j = usize::from(k) - self.devices.len();
        let write = match tlp.kind {
            TlpKind::MemWrite | TlpKind::IoWrite => Some(tlp.data),
            _ => None,
        };
        let a = self.board[j].access(at, tlp.addr, write);
        self.apply(j, a.effects, at);
        let reply = match tlp.kind {
            TlpKind::MemRead | TlpKind::IoRead => TlpKind::CplD,
            TlpKind::IoWrite => TlpKind::Cpl,
            _ => return,
        };
        let cpl = Tlp {
            kind: reply,
            requester: tlp.requester,
            completer: Bdf::default(),
            tag: tlp.tag,
            addr: tlp.addr,
            len_dw: 1,
            data: a.data,
        };
        let to = self.core_of(&cpl);
        self.send_at(Endpoint::Device(k), to, cpl, at + a.delay, true);
    }

    /// The board device that answers port `port`, as an end of the machine (the hub's
    /// functions answer the rest: the 8259 pair, the DMA page registers).
    pub(super) fn decode_port(&self, port: u16) -> Endpoint {
        match self.board.iter().position(|b| b.claims_port(port)) {
            Some(j) => Endpoint::Device((self.devices.len() + j) as u8),
            None => Endpoint::Ich,
        }
    }

    /// Is the end device `k` a board device?
    pub(super) fn is_board(&self, k: u8) -> bool {
        usize::from(k) >= self.devices.len()
    }
}
