//! The machine's side of its devices (`devices/`), one list of them named by their end of the
//! fabric, with one event for all their timers ([`Timer`]): the PCIe cards' generators, DMA
//! streams and network controllers, whose TLPs leave on their links; the board devices' timers,
//! the levels they drive on the 8259 pair's inputs, the pulse wire between the GPS receiver,
//! the parallel port and the counter card, and the accesses that reach them; and the workload's
//! phases, which change by the number of the run's samples (seed 004's load, or any scenario's
//! `[[workload.phase]]`s).

use super::fabric::Endpoint;
use super::{Ev, Machine, PROGRESS_EVERY};
use crate::devices::exerciser::Exerciser;
use crate::devices::{Board, Device, Effects, Pulse, Timer};
use crate::engine::{SimDuration, SimTime};
use crate::hw::pcie::{Bdf, Tlp, TlpKind};
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
    /// PCIe device k (the caller knows it is one).
    #[inline]
    pub(super) fn card(&self, k: u8) -> &Exerciser {
        super::card(&self.devices, k)
    }

    /// PCIe device k (the caller knows it is one).
    #[inline]
    pub(super) fn card_mut(&mut self, k: u8) -> &mut Exerciser {
        super::card_mut(&mut self.devices, k)
    }

    /// Board device k (the caller knows it is one).
    fn board_mut(&mut self, k: usize) -> &mut Board {
        (self.devices[k].board_mut())
            .unwrap_or_else(|| unreachable!("device {k} is a PCIe endpoint, not on the board"))
    }

    /// Start the devices: the cards' network controllers, generators and DMA streams, the board
    /// devices' timers, and the first phase.
    pub(super) fn start_devices(&mut self) {
        for k in 0..self.devices.len() {
            let k8 = k as u8;
            match &mut self.devices[k] {
                Device::Card(d) => {
                    if d.nic.is_some() {
                        self.nic_changed(k8, SimTime::ZERO);
                    }
                    let d = self.card_mut(k8);
                    if d.cfg.generates {
                        let gap = d.first_gap();
                        let gen = d.generator_gen;
                        self.q
                            .schedule_in(gap, Ev::Device(k8, Timer::Generate, gen));
                    }
                    for stream in 0..2u8 {
                        let d = self.card_mut(k8);
                        let c = &d.cfg;
                        if [&c.dma_writes, &c.dma_reads][usize::from(stream)].is_some() {
                            let gap = d.next_dma_gap(stream);
                            self.q
                                .schedule_in(gap, Ev::Device(k8, Timer::Dma(stream), 0));
                        }
                    }
                }
                Device::Board(b) => {
                    let e = b.start();
                    self.apply(k, e, self.q.now());
                }
            }
        }
        if !self.phases.is_empty() {
            self.set_phase(0);
        }
    }

    /// Device k's timer `t` (of generation `gen`) fires.
    pub(super) fn on_device_timer(&mut self, k: u8, t: Timer, gen: u32) {
        match t {
            Timer::Generate => self.on_generate(k, gen),
            Timer::Dma(stream) => self.on_dma(k, stream),
            Timer::CheckDeassert => {
                if let Some(tlp) = self.card_mut(k).check_deassert() {
                    self.send(Endpoint::Device(k), Endpoint::Ich, tlp, SimDuration::ZERO);
                }
            }
            Timer::Trigger => {
                if self.wants_more() {
                    self.raise(k);
                }
            }
            Timer::Nic => self.on_nic(k, gen),
            Timer::Own(which) => {
                let now = self.q.now();
                let e = self.board_mut(usize::from(k)).timer(now, which);
                self.apply(usize::from(k), e, now);
            }
        }
    }

    /// Do what board device `j` asks at `at` (the clock's time, or ahead of it for an access
    /// delivered there: see `board_receives`).
    pub(super) fn apply(&mut self, j: usize, e: Effects, at: SimTime) {
        for (at, which) in e.timers.into_iter().flatten() {
            self.q
                .schedule_at(at, Ev::Device(j as u8, Timer::Own(which), 0));
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
        for j in 0..self.devices.len() {
            if j == from {
                continue;
            }
            if let Device::Board(b) = &mut self.devices[j] {
                let e = b.pulse(now);
                self.apply(j, e, now);
            }
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
            match &mut self.devices[usize::from(j)] {
                Device::Board(Board::IrqSource(s)) => {
                    let e = s.set_rate(now, rate);
                    self.apply(usize::from(j), e, now);
                }
                // The first phase's rates are the cards' own (set as assembled).
                Device::Card(d) if i > 0 => {
                    let plan_afresh = d.set_rate(rate);
                    if plan_afresh {
                        let (gap, gen) = (d.next_gap(), d.generator_gen);
                        self.q.schedule_in(gap, Ev::Device(j, Timer::Generate, gen));
                    }
                }
                _ => {}
            }
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

    /// A request reaches board device `j` at `at`: at its event, or ahead of the clock when
    /// nothing is scheduled before then and the core that sent it waits for the answer (see
    /// `advance`): its effects on the 8259's inputs reach the cores at `at`, and nothing else
    /// can see them in between.
    pub(super) fn board_receives(&mut self, k: u8, tlp: Tlp, at: SimTime) {
        let j = usize::from(k);
        let write = match tlp.kind {
            TlpKind::MemWrite | TlpKind::IoWrite => Some(tlp.data),
            _ => None,
        };
        let a = self.board_mut(j).access(at, tlp.addr, write);
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
        match self.devices.iter().position(|d| d.claims_port(port)) {
            Some(k) => Endpoint::Device(k as u8),
            None => Endpoint::Ich,
        }
    }

    /// Is the end device `k` a board device?
    pub(super) fn is_board(&self, k: u8) -> bool {
        matches!(self.devices[usize::from(k)], Device::Board(_))
    }

    /// After an access to device k's network controller (or its timer) at `at`: a line the
    /// controller no longer asserts is deasserted, and the event for its next interrupt is
    /// moved to when that is due.
    pub(super) fn nic_changed(&mut self, k: u8, at: SimTime) {
        let d = self.card_mut(k);
        let Some(nic) = &d.nic else { return };
        let next = nic.next_interrupt();
        if let Some(tlp) = d.nic_deassert() {
            let delay = d.cfg.deassert_delay;
            self.send_at(Endpoint::Device(k), Endpoint::Ich, tlp, at + delay, true);
        }
        let d = self.card_mut(k);
        if next != d.nic_timer.0 {
            d.nic_timer = (next, d.nic_timer.1.wrapping_add(1));
            if let Some(t) = next {
                let g = d.nic_timer.1;
                self.q
                    .schedule_at(t.max(self.q.now()), Ev::Device(k, Timer::Nic, g));
            }
        }
    }

    /// Device k's network controller: its next interrupt may be due.
    pub(super) fn on_nic(&mut self, k: u8, gen: u32) {
        let now = self.q.now();
        if self.card(k).nic_timer.1 != gen || !self.wants_more() {
            return;
        }
        let d = self.card_mut(k);
        d.nic_timer.0 = None;
        let nic = d.nic.as_mut().expect("a controller's event");
        if nic.assert_due(now) {
            if let Some(tlp) = d.signal() {
                let delay = d.cfg.core_tx;
                let dest = self.interrupt_dest(&tlp);
                self.send_at(Endpoint::Device(k), dest, tlp, now + delay, true);
            }
        }
        self.nic_changed(k, now);
    }

    pub(super) fn on_generate(&mut self, k: u8, gen: u32) {
        let d = self.card(k);
        // Planned before a phase gave the card a new rate, or at a rate of 0.
        if gen != d.generator_gen || !d.cfg.generates {
            return;
        }
        if self.wants_more() {
            self.raise(k);
            // A card that counts its interval from the service write schedules its next
            // interrupt when that write arrives.
            if !self.card(k).cfg.interval_from_service {
                let gap = self.card_mut(k).next_gap();
                self.q.schedule_in(gap, Ev::Device(k, Timer::Generate, gen));
            }
        }
    }

    /// A DMA request leaves the card (after its PCIe core's pipeline), and the next is planned.
    pub(super) fn on_dma(&mut self, k: u8, stream: u8) {
        if !self.wants_more() {
            return;
        }
        let dev = self.card_mut(k);
        let tlp = dev.dma_request(stream);
        let delay = dev.cfg.core_tx;
        let gap = dev.next_dma_gap(stream);
        self.send(Endpoint::Device(k), Endpoint::Memory, tlp, delay);
        self.q
            .schedule_in(gap, Ev::Device(k, Timer::Dma(stream), 0));
    }

    pub(super) fn raise(&mut self, k: u8) {
        self.raise_at(k, self.q.now(), true);
    }

    /// Device k raises an interrupt at `at` (now, or later while the core runs ahead of the
    /// clock); `early` as for [`Self::send_at`].
    pub(super) fn raise_at(&mut self, k: u8, at: SimTime, early: bool) {
        if let Some((tlp, delay)) = self.card_mut(k).trigger_at(at) {
            if k == self.probed_device {
                let n = self.card(k).generated;
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
            let dest = self.interrupt_dest(&tlp);
            self.send_at(Endpoint::Device(k), dest, tlp, at + delay, early);
        }
    }

    /// Where a device's interrupt goes: an MSI write to the cores, INTx messages to the hub.
    fn interrupt_dest(&self, tlp: &crate::hw::pcie::Tlp) -> Endpoint {
        if tlp.kind == TlpKind::MemWrite {
            self.core_of(tlp)
        } else {
            Endpoint::Ich
        }
    }
}
