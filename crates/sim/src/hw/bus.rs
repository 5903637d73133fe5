//! A clocked, pipelined bus shared by its agents: the front-side bus of seed 000's platforms, the
//! ring between a 2017 desktop's cores and its system agent. A transaction starts on a bus-clock
//! edge once the previous one's request phase is over, and reaches its target a fixed number of
//! clocks later (P6/NetBurst bus protocol: Shanley, "The Unabridged Pentium 4").

use crate::engine::{SimDuration, SimTime};

/// A shared bus's timing.
#[derive(Clone, Debug)]
pub struct BusTiming {
    pub bus_clock_hz: f64,
    /// Bus clocks a transaction holds the bus (arbitration + request phase); the next one can
    /// start after that (the bus is pipelined).
    pub request_phase_clocks: u32,
    /// Bus clocks from the start of the request phase until the target has the request (or, for
    /// data sent to the CPU, until the data phase ends).
    pub transaction_clocks: u32,
}

/// A clocked, pipelined bus shared by its agents (the FSB, the ring of a system agent):
/// transactions start on bus-clock edges, one request phase after another.
#[derive(Clone, Debug)]
pub struct SharedBus {
    pub timing: BusTiming,
    period: SimDuration,
    busy_until: SimTime,
}

impl SharedBus {
    pub fn new(timing: BusTiming) -> Self {
        let period = SimDuration::period_of(timing.bus_clock_hz);
        SharedBus {
            timing,
            period,
            busy_until: SimTime::ZERO,
        }
    }
    /// A transaction that wants the bus at `now`: returns when it has crossed.
    pub fn transact(&mut self, now: SimTime) -> SimTime {
        let start = now.max(self.busy_until).next_edge(self.period);
        self.busy_until = start + self.period * u64::from(self.timing.request_phase_clocks);
        start + self.period * u64::from(self.timing.transaction_clocks)
    }
}

/// What a packet asks of a bus that times cycles by their kind: most crossings are plain, an ISA
/// bus runs 8- and 16-bit I/O cycles of different lengths, and its bridge answers the 8259's
/// interrupt acknowledge without an ISA cycle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cycle {
    /// A byte access (and every transaction of buses that do not tell cycles apart).
    Narrow,
    /// A 16-bit I/O access (`inw`/`outw`).
    Wide,
    /// The interrupt-acknowledge cycle.
    IntAck,
}

impl Cycle {
    /// The cycle a packet needs: INTA for the interrupt acknowledge, else a byte access (a
    /// 16-bit one is asked for by the CPU's `inw`/`outw`).
    pub fn of(tlp: &crate::hw::pcie::Tlp) -> Cycle {
        if tlp.kind == crate::hw::pcie::TlpKind::IntAck {
            Cycle::IntAck
        } else {
            Cycle::Narrow
        }
    }
}

/// A crossing timed in the clocks of the bus it crosses, with no contention: it starts on the
/// next clock edge and takes a fixed number of clocks each way. A bridge's host-to-PCI and
/// PCI-to-host paths (the 430TX's: the CPU's cycle becomes a PCI address phase a few PCI clocks
/// later), a PCI target's decode (DEVSEL#), a host bus's edge synchronisation.
#[derive(Clone, Debug)]
pub struct ClockedCrossing {
    period: SimDuration,
    down: SimDuration,
    up: SimDuration,
}

impl ClockedCrossing {
    /// `down_clocks` away from the host bridge, `up_clocks` towards it.
    pub fn new(clock_hz: f64, down_clocks: u32, up_clocks: u32) -> Self {
        let period = SimDuration::period_of(clock_hz);
        ClockedCrossing {
            period,
            down: period * u64::from(down_clocks),
            up: period * u64::from(up_clocks),
        }
    }
    pub fn cross(&self, now: SimTime, down: bool) -> SimTime {
        now.next_edge(self.period) + if down { self.down } else { self.up }
    }
}

/// An ISA bus as its PCI-to-ISA bridge (the PIIX4) runs it. A CPU cycle starts on a SYSCLK edge
/// once the previous I/O's recovery time is over, and lasts `io8_clocks` or `io16_clocks`
/// SYSCLKs; the bridge then holds the next I/O off for the recovery time (PIIX4 datasheet
/// 8.1.2; the I/O recovery registers). The data of a read comes back within the cycle: a reply
/// crosses at no cost. The interrupt acknowledge is not an ISA cycle: the bridge pulses its
/// 8259s' INTA# internally for `intack_clocks` SYSCLKs, without waiting for the recovery time.
#[derive(Clone, Debug)]
pub struct IsaBus {
    sysclk: SimDuration,
    io8: SimDuration,
    io16: SimDuration,
    recovery8: SimDuration,
    recovery16: SimDuration,
    intack: SimDuration,
    /// When the last I/O's recovery time ends.
    free: SimTime,
    /// I/O cycles run.
    pub cycles: u64,
}

/// An ISA bus's timing in SYSCLKs.
#[derive(Clone, Debug, PartialEq)]
pub struct IsaTiming {
    /// SYSCLK: the bridge's PCI clock divided by `pci_clock_divisor`, so that its edges are PCI
    /// clock edges.
    pub pci_clock_hz: f64,
    pub pci_clock_divisor: u32,
    pub io8_clocks: u32,
    pub io16_clocks: u32,
    pub io8_recovery_clocks: f64,
    pub io16_recovery_clocks: f64,
    pub intack_clocks: u32,
}

impl IsaBus {
    pub fn new(t: &IsaTiming) -> Self {
        let sysclk = SimDuration::period_of(t.pci_clock_hz) * u64::from(t.pci_clock_divisor);
        let frac = |c: f64| SimDuration::from_ps((c * sysclk.as_ps() as f64).round() as u64);
        IsaBus {
            sysclk,
            io8: sysclk * u64::from(t.io8_clocks),
            io16: sysclk * u64::from(t.io16_clocks),
            recovery8: frac(t.io8_recovery_clocks),
            recovery16: frac(t.io16_recovery_clocks),
            intack: sysclk * u64::from(t.intack_clocks),
            free: SimTime::ZERO,
            cycles: 0,
        }
    }

    /// A crossing entering at `now`; returns when it has crossed.
    pub fn cross(&mut self, now: SimTime, down: bool, cycle: Cycle) -> SimTime {
        self.cross_cycle(now, down, cycle).1
    }

    /// A crossing entering at `now`: when its I/O cycle starts on the bus (what a logic
    /// analyzer on the bus sees; `None` for a reply, whose data rides in the cycle it answers,
    /// and for the interrupt acknowledge, which is the bridge's own), and when it has crossed.
    pub fn cross_cycle(
        &mut self,
        now: SimTime,
        down: bool,
        cycle: Cycle,
    ) -> (Option<SimTime>, SimTime) {
        if !down {
            return (None, now);
        }
        let (length, recovery) = match cycle {
            Cycle::IntAck => return (None, now.next_edge(self.sysclk) + self.intack),
            Cycle::Narrow => (self.io8, self.recovery8),
            Cycle::Wide => (self.io16, self.recovery16),
        };
        self.cycles += 1;
        let start = now.max(self.free).next_edge(self.sysclk);
        let end = start + length;
        self.free = end + recovery;
        (Some(start), end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_transactions_start_on_clock_edges_and_pipeline() {
        let mut f = SharedBus::new(BusTiming {
            bus_clock_hz: 333.333_333e6,
            request_phase_clocks: 2,
            transaction_clocks: 6,
        });
        let p = 3_000u64; // ps, rounded period of 333 MHz
        let a = f.transact(SimTime::from_ps(1));
        assert_eq!(a.as_ps(), p + 6 * p);
        // A second request at the same time waits for the request phase, not the whole
        // transaction.
        let b = f.transact(SimTime::from_ps(1));
        assert_eq!(b.as_ps(), 3 * p + 6 * p);
    }

    fn piix4() -> IsaBus {
        IsaBus::new(&IsaTiming {
            pci_clock_hz: 33.333e6,
            pci_clock_divisor: 4,
            io8_clocks: 6,
            io16_clocks: 3,
            io8_recovery_clocks: 3.5,
            io16_recovery_clocks: 3.5,
            intack_clocks: 2,
        })
    }

    #[test]
    fn isa_cycles_start_on_sysclk_edges_and_wait_for_the_recovery_time() {
        let mut isa = piix4();
        let sysclk = 120_000u64; // ps: 4 PCI clocks of 30 ns
        let a = isa.cross(SimTime::from_ps(1), true, Cycle::Narrow);
        assert_eq!(a.as_ps(), sysclk + 6 * sysclk);
        // The next 8-bit cycle, wanted at once, waits 3.5 SYSCLKs and then for an edge.
        let b = isa.cross(a, true, Cycle::Narrow);
        assert_eq!(b.as_ps(), a.as_ps() + 4 * sysclk + 6 * sysclk);
        // A 16-bit cycle is shorter; a reply crosses in the cycle it answers.
        let c = isa.cross(SimTime::from_ps(100 * sysclk), true, Cycle::Wide);
        assert_eq!(c.as_ps(), 103 * sysclk);
        assert_eq!(isa.cross(c, false, Cycle::Narrow), c);
        // INTA is the bridge's own: no recovery wait.
        let d = isa.cross(c, true, Cycle::IntAck);
        assert_eq!(d.as_ps(), c.as_ps() + 2 * sysclk);
    }

    #[test]
    fn an_isa_cycle_starts_on_its_edge_and_only_cpu_cycles_show_on_the_bus() {
        let mut isa = piix4();
        let sysclk = 120_000u64;
        let (start, end) = isa.cross_cycle(SimTime::from_ps(1), true, Cycle::Narrow);
        assert_eq!(start.map(SimTime::as_ps), Some(sysclk));
        assert_eq!(end.as_ps(), sysclk + 6 * sysclk);
        assert_eq!(isa.cross_cycle(end, false, Cycle::Narrow), (None, end));
        assert_eq!(isa.cross_cycle(end, true, Cycle::IntAck).0, None);
        assert_eq!(isa.cycles, 1);
    }

    #[test]
    fn a_clocked_crossing_starts_on_an_edge_and_takes_its_clocks_each_way() {
        let x = ClockedCrossing::new(33.333e6, 2, 3);
        assert_eq!(x.cross(SimTime::from_ps(1), true).as_ps(), 30_000 + 60_000);
        assert_eq!(
            x.cross(SimTime::from_ps(30_000), false).as_ps(),
            30_000 + 90_000
        );
    }
}
