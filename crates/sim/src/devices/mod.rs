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
//! The machine holds them in one list ([`Device`]), in the fabric's order of ends, and their
//! timers come back to them through one event ([`Timer`]). Every device has the same shape of
//! interface to the machine: it answers an access that reaches it (`receive` for the endpoints,
//! [`Board::access`] for board devices) and reacts to its own timers; what it asks of the
//! machine (a TLP, a level on its line, its next timer) and what an instrument in it counted
//! (seed 002's round-trip counter) come back as values. What is kept of a measurement is the
//! probes' business (`probes/`), not the devices'.

pub mod counter_card;
pub mod exerciser;
pub mod gps;
pub mod irq_source;
pub mod nic;
pub mod parallel_port;
pub mod pit;
pub mod rtc;

use crate::engine::{SimDuration, SimTime, Stream};

/// What a board device asks of the machine.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Effects {
    /// Drive its interrupt line: (IRQ, level).
    pub line: Option<(u8, bool)>,
    /// Its timers to set: (when, which).
    pub timers: [Option<(SimTime, u8)>; 2],
    /// A pulse leaves it on the board's wire (the GPS receiver's output): the devices with an
    /// input on it take it, and the machine's observer hears it.
    pub pulse: Option<Pulse>,
}

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
    fn timer(mut self, at: SimTime, which: u8) -> Effects {
        let slot = self.timers.iter_mut().find(|t| t.is_none());
        *slot.expect("two timers at most") = Some((at, which));
        self
    }
}

/// A board device's answer to an access: the data of a read, after a delay of its own (wait
/// states), and the effects of the access.
#[derive(Copy, Clone, Debug, PartialEq)]
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

    /// The board device, if it is one.
    pub fn board_mut(&mut self) -> Option<&mut Board> {
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
