//! The devices of a machine, each in a file named after it. Two kinds sit on its buses:
//!
//! - **PCIe endpoints** (`exerciser.rs`): the seed-000 exerciser, seed 002's round-trip card and
//!   the generic device are configurations of one card that sends TLPs (MSI, INTx messages,
//!   DMA) and answers the CPU's reads and writes.
//! - **Board devices** ([`Board`]): devices of a PC's board and its ISA/PCI slots that drive an
//!   interrupt line of the 8259 pair and answer port or memory accesses: the 8254's clock
//!   (`pit.rs`), the RTC (`rtc.rs`), the parallel port (`parallel_port.rs`) with a GPS
//!   receiver's pulse-per-second on its nACK pin (`gps.rs`), the counter card that timestamps
//!   (`counter_card.rs`), and cards that interrupt at a rate (`irq_source.rs`).
//!
//! The machine holds them in one list ([`Device`]), in the fabric's order of ends, and every
//! device has the same interface to it: `start` (its first timers), `timer` (one of its timers
//! fires: the machine's one device event carries [`Timer`]), `access` (a request reaches it:
//! a TLP, or a port or memory cycle of the board's buses) and `pulse` (the board's pulse wire
//! rises), plus `set_rate` for a workload phase. Each answers with [`Effects`], values the
//! machine applies in order: a TLP that leaves it with its time and where it goes upstream, a
//! timer, a level on its interrupt line, a pulse, an interrupt raised, a round trip its counter
//! timed. The list is the caller's (`out`), empty when the device is called, which fills it (a
//! board device builds its own and hands it over), so the hot path (every interrupt, every
//! register access) copies nothing. What is kept of a measurement is the probes' business (`probes/`),
//! not the devices'.

pub mod counter_card;
pub mod exerciser;
pub mod gps;
pub mod irq_source;
pub mod nic;
pub mod parallel_port;
pub mod pit;
pub mod rtc;

use crate::engine::{SimDuration, SimTime, Stream};
use crate::hw::pcie::{Bdf, Tlp, TlpKind};
use arrayvec::ArrayVec;

/// Where a card's TLP goes upstream; the machine finds the end that takes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Upstream {
    /// The CPUs: a completion to the core that asked, an MSI write to the cores it addresses.
    Cpu,
    /// The I/O hub: INTx messages, for its interrupt router.
    Hub,
    /// Host memory: DMA.
    Memory,
}

/// One thing a device asks of the machine.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Effect {
    /// A TLP leaves it (its PCIe core, or a board device's bus interface) at `at`, for `to`.
    Send { tlp: Tlp, at: SimTime, to: Upstream },
    /// Its timer `timer`, of generation `gen`, fires at `at` (at once if `at` has passed: a
    /// network controller's interrupt that became due while the core ran ahead).
    Timer { at: SimTime, timer: Timer, gen: u32 },
    /// Its timer `timer` is due at the time of the access that asked for it: then and there if
    /// the machine takes the access at an event, else at an event of its own at that time
    /// (a delivery made while a core runs ahead of the clock must not change what other
    /// devices see before it).
    Due(Timer),
    /// Drive its interrupt line: (IRQ of the 8259 pair, level).
    Line(u8, bool),
    /// A pulse leaves it on the board's wire (the GPS receiver's output): the devices with an
    /// input on it take it, and the machine's observer hears it.
    Pulse(Pulse),
    /// It raised its `n`th interrupt (the run's samples, if it is the measured device).
    Raised(u64),
    /// Its instrument stopped on a round trip (seed 002's counter, in ns: counts times the
    /// nominal period); the probe keeps it (`probes/round_trip.rs`).
    RoundTrip(u64),
}

/// What a device asks of the machine, in the order it asks: the machine does them in that
/// order (it matters where two fall at the same time, or where one decides whether another
/// may run ahead of the clock).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects(pub ArrayVec<Effect, 4>);

/// A pulse on the board's wire, as its source numbers it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Pulse {
    /// Pulses sent so far, this one included.
    pub number: u64,
    /// Half the source's period: when what changes between pulses (a workload's phase)
    /// changes after one.
    pub half_period: SimDuration,
}

impl Effects {
    /// One more, after those already asked for.
    #[inline]
    pub fn push(&mut self, e: Effect) {
        self.0.push(e);
    }

    /// A board device's own timer `which` at `at`.
    fn timer(mut self, at: SimTime, which: u8) -> Effects {
        self.push(Effect::Timer {
            at,
            timer: Timer::Own(which),
            gen: 0,
        });
        self
    }

    /// Drive the interrupt line `irq` to `level`.
    fn line(mut self, irq: u8, level: bool) -> Effects {
        self.push(Effect::Line(irq, level));
        self
    }
}

/// A board device's answer to an access: the data of a read, after a delay of its own (wait
/// states), and the effects of the access.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub data: u32,
    pub delay: SimDuration,
    pub effects: Effects,
}

/// A device of the machine, at its end of the fabric: the machine holds one list of them, in
/// the fabric's order of ends (the PCIe endpoints, then the board's devices), and names each by
/// its index there.
// A card is three times a board device's size; the list holds a handful of devices, and the
// card is the one on the hot path (every interrupt, every register access), so it is not boxed
// behind a second pointer.
#[allow(clippy::large_enum_variant)]
pub enum Device {
    /// A PCIe endpoint: the exerciser card in its configurations (`exerciser.rs`), with the
    /// network controller behind its function if it has one.
    Card(exerciser::Exerciser),
    /// A device of the board or of its ISA/PCI slots.
    Board(Board),
}

impl Device {
    /// Does it answer memory address `addr`?
    pub fn claims_mem(&self, addr: u64) -> bool {
        match self {
            Device::Card(c) => c.claims(addr),
            Device::Board(b) => b.claims_mem(addr),
        }
    }

    /// Does it answer port `port`? (A PCIe endpoint of these models has no I/O BAR.)
    pub fn claims_port(&self, port: u16) -> bool {
        match self {
            Device::Card(_) => false,
            Device::Board(b) => b.claims_port(port),
        }
    }

    /// Must a request from a core that runs on ahead of the clock reach it only at the
    /// request's event? A board device's effects (the 8259's inputs) reach the cores at once,
    /// and a network controller's state runs in time order (`nic.rs`: a store the core has gone
    /// on from must come after the core's earlier reads of its rings). Other cards take a
    /// request whenever nothing else can reach them first.
    #[inline]
    pub fn in_order(&self) -> bool {
        match self {
            Device::Board(_) => true,
            Device::Card(c) => c.nic.is_some(),
        }
    }

    /// Its first timers, from the machine's start at `now`.
    pub fn start(&mut self, now: SimTime, out: &mut Effects) {
        match self {
            Device::Card(c) => c.start(now, out),
            Device::Board(b) => *out = b.start(),
        }
    }

    /// Its timer `t` (of generation `gen`) fires at `now`; `running`: the run still takes
    /// samples (a card raises no interrupt and issues no DMA once it has them, so that the
    /// run drains).
    pub fn timer(&mut self, now: SimTime, t: Timer, gen: u32, running: bool, out: &mut Effects) {
        match (self, t) {
            (Device::Board(b), Timer::Own(which)) => *out = b.timer(now, which),
            (Device::Card(c), t) => c.timer(now, t, gen, running, out),
            (Device::Board(_), t) => unreachable!("a board device has no {t:?} timer"),
        }
    }

    /// A request `tlp` reaches it at `now`: what it does, its answer to a read (or an I/O
    /// write) among it.
    pub fn access(&mut self, now: SimTime, tlp: &Tlp, out: &mut Effects) {
        match self {
            Device::Card(c) => c.access(now, tlp, out),
            Device::Board(b) => {
                let write = match tlp.kind {
                    TlpKind::MemWrite | TlpKind::IoWrite => Some(tlp.data),
                    _ => None,
                };
                let a = b.access(now, tlp.addr, write);
                *out = a.effects;
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
                out.push(Effect::Send {
                    tlp: cpl,
                    at: now + a.delay,
                    to: Upstream::Cpu,
                });
            }
        }
    }

    /// The board's pulse wire rises at `now`.
    pub fn pulse(&mut self, now: SimTime, out: &mut Effects) {
        if let Device::Board(b) = self {
            *out = b.pulse(now);
        }
    }

    /// Its timer `t`, due at `at`, falls in a stretch the machine skips up to `to` (a windowed
    /// run: `Machine::window`): when it fires instead, at or after `to`, or `None` if it no
    /// longer fires ([`Board::skip`]). Only board devices take part in a windowed run.
    pub fn skip(&mut self, t: Timer, at: SimTime, to: SimTime) -> Option<SimTime> {
        match (self, t) {
            (Device::Board(b), Timer::Own(which)) => b.skip(which, at, to),
            (d, t) => unreachable!(
                "a windowed run has board devices only, not a {t:?} timer of {}",
                if d.card().is_some() {
                    "a card"
                } else {
                    "a board device"
                }
            ),
        }
    }

    /// Raise interrupts at `per_s` from `now` on (a workload phase's rate; 0 stops them).
    pub fn set_rate(&mut self, now: SimTime, per_s: f64, out: &mut Effects) {
        match self {
            Device::Card(c) => c.change_rate(now, per_s, out),
            Device::Board(Board::IrqSource(s)) => *out = s.set_rate(now, per_s),
            Device::Board(_) => {}
        }
    }

    /// The PCIe endpoint, if it is one.
    pub fn card(&self) -> Option<&exerciser::Exerciser> {
        match self {
            Device::Card(c) => Some(c),
            Device::Board(_) => None,
        }
    }

    /// The PCIe endpoint, if it is one.
    pub fn card_mut(&mut self) -> Option<&mut exerciser::Exerciser> {
        match self {
            Device::Card(c) => Some(c),
            Device::Board(_) => None,
        }
    }

    /// The board device, if it is one.
    pub fn board(&self) -> Option<&Board> {
        match self {
            Device::Board(b) => Some(b),
            Device::Card(_) => None,
        }
    }
}

/// A device's timer, as the machine's one device event carries it (with the device's index).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Timer {
    /// A card's interrupt generator fires.
    Generate,
    /// A card's DMA stream (0 writes, 1 reads) issues its next request.
    Dma(u8),
    /// A card re-checks its INTx line after a clear write.
    CheckDeassert,
    /// A card raises an interrupt it held back for its previous one's service (a reaction to a
    /// delivery made while a core ran ahead: the run's sample count, which every device reads,
    /// must change in time order).
    Trigger,
    /// A card's network controller may assert its interrupt; the event's generation says
    /// whether the controller's timer is still the one it was set for.
    Nic,
    /// A board device's own timer (`Board::timer`'s `which`).
    Own(u8),
}

/// A device on the board or in an ISA/PCI slot.
#[derive(Clone, Debug)]
pub enum Board {
    Pit(pit::Pit),
    Rtc(rtc::Rtc),
    ParallelPort(parallel_port::ParallelPort),
    Gps(gps::Gps),
    CounterCard(counter_card::CounterCard),
    IrqSource(irq_source::IrqSource),
}

impl Board {
    /// Does it answer port `port`?
    pub fn claims_port(&self, port: u16) -> bool {
        let ports = match self {
            Board::Rtc(_) => rtc::PORTS,
            Board::ParallelPort(p) => (p.base, p.base + 2),
            Board::IrqSource(s) => match s.ports {
                Some(p) => p,
                None => return false,
            },
            _ => return false,
        };
        (ports.0..=ports.1).contains(&port)
    }

    /// Does it answer memory address `addr`?
    pub fn claims_mem(&self, addr: u64) -> bool {
        match self {
            Board::CounterCard(c) => (c.base..c.base + counter_card::WINDOW).contains(&addr),
            Board::IrqSource(s) => s.mem.is_some_and(|b| (b..b + 0x1000).contains(&addr)),
            _ => false,
        }
    }

    /// Its first timers, from the machine's start.
    pub fn start(&mut self) -> Effects {
        match self {
            Board::Pit(p) => p.start(),
            Board::Rtc(r) => r.start(),
            Board::Gps(g) => g.start(),
            // A source starts with its phase's rate (`IrqSource::set_rate`).
            _ => Effects::default(),
        }
    }

    /// Timer `which` fires at `now`.
    pub fn timer(&mut self, now: SimTime, which: u8) -> Effects {
        match self {
            Board::Pit(p) => p.timer(now, which),
            Board::Rtc(r) => r.timer(now),
            Board::ParallelPort(p) => p.timer(now, which),
            Board::Gps(g) => g.timer(now, which),
            Board::IrqSource(s) => s.timer(now, which),
            Board::CounterCard(_) => Effects::default(),
        }
    }

    /// Its timer `which`, due at `at`, falls in a stretch the machine skips up to `to`: when
    /// it fires instead (at or after `to`), or `None` if it no longer fires. The machine skips
    /// only where nothing is pending but these timers (no line high that the 8259 has not
    /// taken, no handler under way), so only the devices' own clocks and processes are kept:
    /// - the 8254's and the RTC's edges stay on their grid (`at` plus whole periods), so that
    ///   their phase against the pulse is the one the whole timeline has;
    /// - an edge that takes a line down (the 8254's falling edge, the end of the parallel
    ///   port's pulse) comes at `to`: the line is low there, as it would be after the skipped
    ///   periods' interrupts were taken;
    /// - a card's next request is a Poisson process's: drawn afresh from `to`, which its
    ///   memorylessness makes exact;
    /// - the GPS pulse ends every skip (the machine skips to a window before it), so it never
    ///   falls inside one.
    pub fn skip(&mut self, which: u8, at: SimTime, to: SimTime) -> Option<SimTime> {
        let on_grid = |period: SimDuration| {
            let p = period.as_ps().max(1);
            let periods = (to.since(at).as_ps()).div_ceil(p);
            at + SimDuration::from_ps(periods * p)
        };
        match self {
            Board::Pit(p) if which == pit::RISE => Some(on_grid(p.period)),
            Board::Pit(_) => Some(to),
            Board::ParallelPort(_) if which == parallel_port::DROP => Some(to),
            Board::ParallelPort(_) => {
                unreachable!("the port's raise fires before the pulse's sample, so before a skip")
            }
            Board::Rtc(r) => Some(on_grid(r.period)),
            Board::IrqSource(s) => s.skip(which, to),
            Board::Gps(_) => unreachable!("the pulse ends a skip, it never falls inside one"),
            Board::CounterCard(_) => None,
        }
    }

    /// The board's pulse wire changes (the GPS receiver's output rises).
    pub fn pulse(&mut self, now: SimTime) -> Effects {
        match self {
            Board::ParallelPort(p) => p.ack(now),
            Board::CounterCard(c) => {
                c.latch_now(now);
                Effects::default()
            }
            _ => Effects::default(),
        }
    }

    /// A read (`write: None`) or write of `addr` (a port or a memory address) reaches it at
    /// `now`.
    pub fn access(&mut self, now: SimTime, addr: u64, write: Option<u32>) -> Answer {
        let quiet = |data| Answer {
            data,
            delay: SimDuration::ZERO,
            effects: Effects::default(),
        };
        match self {
            Board::Rtc(r) => r.access(addr as u16, write),
            Board::ParallelPort(p) => quiet(p.status()),
            Board::CounterCard(c) => Answer {
                data: c.read(now),
                delay: c.data_delay,
                effects: Effects::default(),
            },
            Board::IrqSource(s) => s.access(),
            Board::Pit(_) | Board::Gps(_) => quiet(0xFF),
        }
    }
}

/// An exponential gap with mean `1 / rate_per_s`.
pub(crate) fn poisson_gap(rng: &mut Stream, rate_per_s: f64) -> SimDuration {
    crate::engine::exponential(rng, SimDuration::from_ps((1e12 / rate_per_s) as u64))
}

#[cfg(test)]
mod tests {
    //! Board devices behind the one interface: an access answered as the card's are (a
    //! completion among the effects), after what the access did to the device's line.
    use super::*;

    fn io(kind: TlpKind, port: u64, data: u32) -> Tlp {
        Tlp {
            kind,
            requester: Bdf::default(),
            completer: Bdf::default(),
            tag: 3,
            addr: port,
            len_dw: 1,
            data,
        }
    }

    #[test]
    fn the_rtc_drops_its_line_on_the_read_of_register_c_then_answers() {
        let period = SimDuration::from_ns(7_812_500);
        let mut d = Device::Board(Board::Rtc(rtc::Rtc::new(8, period, SimTime::ZERO)));
        let mut e = Effects::default();
        d.start(SimTime::ZERO, &mut e);
        assert!(
            matches!(
                e.0[..],
                [Effect::Timer {
                    timer: Timer::Own(0),
                    ..
                }]
            ),
            "{e:?}"
        );
        let mut e = Effects::default();
        d.timer(SimTime::ZERO, Timer::Own(0), 0, true, &mut e);
        let rearm = Effect::Timer {
            at: SimTime::ZERO + period,
            timer: Timer::Own(0),
            gen: 0,
        };
        assert_eq!(e.0[..], [rearm, Effect::Line(8, true)]);

        let mut e = Effects::default();
        d.access(SimTime::ZERO, &io(TlpKind::IoWrite, 0x70, 0x0C), &mut e);
        // An I/O write is completed without data, and changes no line.
        assert!(matches!(e.0[..], [Effect::Send { tlp, .. }] if tlp.kind == TlpKind::Cpl));
        let mut e = Effects::default();
        let t = SimTime::ZERO + SimDuration::from_ns(10);
        d.access(t, &io(TlpKind::IoRead, 0x71, 0), &mut e);
        match e.0[..] {
            [Effect::Line(8, false), Effect::Send { tlp, at, to }] => {
                assert_eq!(
                    (tlp.kind, tlp.tag, to, at),
                    (TlpKind::CplD, 3, Upstream::Cpu, t)
                );
                assert_eq!(tlp.data, rtc::PERIODIC_FLAG | 0x80);
            }
            _ => panic!("the line drops, then the answer leaves: {e:?}"),
        }
    }

    /// The 8254's rising edge: its next two edges, then its line, in the order the machine
    /// did them when they were fields (timers first).
    #[test]
    fn the_pit_plans_its_edges_before_it_raises_its_line() {
        let pit = pit::Pit::new(0, 1_193_182.0, 100, 0.0);
        let p = pit.period;
        let mut d = Device::Board(Board::Pit(pit));
        let mut e = Effects::default();
        let now = SimTime::ZERO + SimDuration::from_ns(1_000);
        d.timer(now, Timer::Own(0), 0, true, &mut e);
        let edge = |at, which| Effect::Timer {
            at,
            timer: Timer::Own(which),
            gen: 0,
        };
        let half = SimDuration::from_ps(p.as_ps() / 2);
        let expected = [edge(now + p, 0), edge(now + half, 1), Effect::Line(0, true)];
        assert_eq!(e.0[..], expected);
        let mut e = Effects::default();
        d.timer(now + half, Timer::Own(1), 0, true, &mut e);
        assert_eq!(e.0[..], [Effect::Line(0, false)]);
    }

    /// A windowed run's skip: the clocks' edges stay on their grid (the first at or after the
    /// skip's end), a falling edge comes at the end, a source's request is drawn afresh after
    /// it (and a stale one is dropped), the counter card has no timer to move.
    #[test]
    fn a_skip_keeps_the_clocks_on_their_grid_and_draws_the_sources_afresh() {
        let ns = |n: u64| SimTime::ZERO + SimDuration::from_ns(n);
        let pit = pit::Pit::new(0, 1_193_182.0, 100, 0.0);
        let p = pit.period;
        let mut b = Board::Pit(pit);
        let at = ns(3_000);
        let to = at + p * 5 + SimDuration::from_ns(7);
        assert_eq!(b.skip(pit::RISE, at, to), Some(at + p * 6));
        assert_eq!(
            b.skip(pit::RISE, at, at + p * 2),
            Some(at + p * 2),
            "an edge at the end"
        );
        assert_eq!(b.skip(1, at, to), Some(to), "the falling edge at the end");

        let period = SimDuration::from_ns(7_812_500);
        let mut b = Board::Rtc(rtc::Rtc::new(8, period, SimTime::ZERO));
        assert_eq!(b.skip(0, at, to), Some(at + period * 7));

        let rng = crate::engine::RngStreams::new(1).stream("src");
        let mut s = irq_source::IrqSource::new("src".into(), 5, Some((0x300, 0x301)), None, rng);
        let Effect::Timer {
            timer: Timer::Own(first),
            ..
        } = s.set_rate(at, 100.0).0[0]
        else {
            panic!("a rate plans a request");
        };
        let Effect::Timer {
            timer: Timer::Own(now),
            ..
        } = s.set_rate(at, 200.0).0[0]
        else {
            panic!("a rate plans a request");
        };
        let mut b = Board::IrqSource(s);
        assert_eq!(
            b.skip(first, at, to),
            None,
            "a timer of the older rate is stale"
        );
        let next = b.skip(now, at, to).expect("the current rate's request");
        assert!(next > to, "{next} after {to}");
        let mut again = Vec::new();
        for _ in 0..2000 {
            again.push(b.skip(now, at, to).expect("drawn").since(to).as_ps() as f64);
        }
        let mean_ms = again.iter().sum::<f64>() / again.len() as f64 / 1e9;
        assert!(
            (mean_ms / 5.0 - 1.0).abs() < 0.1,
            "gaps of mean 5 ms at 200/s: {mean_ms}"
        );

        let mut card = Board::CounterCard(counter_card::CounterCard {
            base: 0,
            counter_hz: 90.112e6,
            mask: (1 << 22) - 1,
            phase: 0.0,
            data_delay: SimDuration::ZERO,
            latch: 0,
        });
        assert_eq!(card.skip(0, at, to), None);
    }

    /// A card of the board's slots with wait states answers after them, after its line drops.
    #[test]
    fn a_source_answers_after_its_wait_states() {
        let rng = crate::engine::RngStreams::new(1).stream("src");
        let mut s = irq_source::IrqSource::new("src".into(), 5, Some((0x300, 0x301)), None, rng);
        s.data_delay = SimDuration::from_ns(750);
        let mut d = Device::Board(Board::IrqSource(s));
        let mut e = Effects::default();
        d.set_rate(SimTime::ZERO, 1000.0, &mut e);
        let Effect::Timer { at, timer, .. } = e.0[0] else {
            panic!("a rate plans the first request: {e:?}");
        };
        let mut e = Effects::default();
        d.timer(at, timer, 0, true, &mut e);
        assert_eq!(e.0.last(), Some(&Effect::Line(5, true)));
        let mut e = Effects::default();
        d.access(at, &io(TlpKind::IoRead, 0x300, 0), &mut e);
        match e.0[..] {
            [Effect::Line(5, false), Effect::Send { tlp, at: t, .. }] => {
                assert_eq!(
                    (tlp.kind, t),
                    (TlpKind::CplD, at + SimDuration::from_ns(750))
                );
            }
            _ => panic!("the line drops, then the answer leaves after its wait: {e:?}"),
        }
    }
}
