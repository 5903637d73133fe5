//! The interconnect between the CPU, the hubs and the devices, as a set of hops a transaction
//! crosses one after another, each with its own timing and contention:
//!
//! ```text
//!   CPU --FSB-- MCH (root complex) --PCIe link k-- device k
//!                 |
//!                DMI
//!                 |
//!                ICH (8259 pair, IO-APIC, PIRQ router)
//! ```
//!
//! Seed 000, "Intel Architecture Overview": the MCH routes all requests between the FSB, its PCIe
//! ports and DMI; the ICH hangs off DMI. An SoC of the time (EP80579) has the same blocks on one
//! die, so the same hops serve it with other parameters.

use super::pcie::{Dir, Link};
use crate::engine::{SimDuration, SimTime};

/// Front-side bus timing.
#[derive(Clone, Debug)]
pub struct FsbTiming {
    pub bus_clock_hz: f64,
    /// Bus clocks a transaction holds the bus (arbitration + request phase); the next one can
    /// start after that (the bus is pipelined).
    pub request_phase_clocks: u32,
    /// Bus clocks from the start of the request phase until the target has the request (or, for
    /// data sent to the CPU, until the data phase ends).
    pub transaction_clocks: u32,
}

/// The front-side bus: one shared, pipelined bus; transactions start on bus-clock edges.
#[derive(Clone, Debug)]
pub struct Fsb {
    pub timing: FsbTiming,
    period: SimDuration,
    busy_until: SimTime,
}

impl Fsb {
    pub fn new(timing: FsbTiming) -> Self {
        let period = SimDuration::period_of(timing.bus_clock_hz);
        Fsb {
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

/// One hop of a route.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Hop {
    Fsb,
    /// Through the MCH's core, from one of its ports to another.
    Mch,
    /// The PCIe link below root port `k`.
    Link(u8, Dir),
    Dmi(Dir),
    /// Through the ICH's internal fabric, between DMI and one of its functions.
    Ich,
}

/// Where a transaction ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Cpu,
    Device(u8),
    Ich,
    /// Host memory behind the root complex (a device's DMA).
    Memory,
}

/// A fixed sequence of hops (at most 4 in this topology).
#[derive(Copy, Clone, Debug)]
pub struct Route {
    hops: [Hop; 4],
    len: u8,
}

impl Route {
    fn of(hops: &[Hop]) -> Route {
        let mut r = Route {
            hops: [Hop::Fsb; 4],
            len: hops.len() as u8,
        };
        r.hops[..hops.len()].copy_from_slice(hops);
        r
    }
    pub fn hop(&self, i: u8) -> Option<Hop> {
        (i < self.len).then(|| self.hops[usize::from(i)])
    }
    /// Hop `i`, which the caller knows to be on the route (`i < len()`).
    pub fn at(&self, i: u8) -> Hop {
        debug_assert!(i < self.len, "hop {i} of a {}-hop route", self.len);
        self.hops[usize::from(i) & 3]
    }
    pub fn len(&self) -> u8 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The path between two endpoints. Devices reach the ICH through the MCH (INTx messages are
    /// forwarded over DMI), and the ICH reaches the CPU through the MCH (the IO-APIC's interrupt
    /// write, completions of port I/O).
    pub fn between(from: Endpoint, to: Endpoint) -> Route {
        use Dir::{Down, Up};
        use Endpoint::*;
        match (from, to) {
            (Cpu, Device(k)) => Route::of(&[Hop::Fsb, Hop::Mch, Hop::Link(k, Down)]),
            (Device(k), Cpu) => Route::of(&[Hop::Link(k, Up), Hop::Mch, Hop::Fsb]),
            (Device(k), Ich) => Route::of(&[Hop::Link(k, Up), Hop::Mch, Hop::Dmi(Down), Hop::Ich]),
            (Cpu, Ich) => Route::of(&[Hop::Fsb, Hop::Mch, Hop::Dmi(Down), Hop::Ich]),
            (Ich, Cpu) => Route::of(&[Hop::Ich, Hop::Dmi(Up), Hop::Mch, Hop::Fsb]),
            (Ich, Device(k)) => Route::of(&[Hop::Ich, Hop::Dmi(Up), Hop::Mch, Hop::Link(k, Down)]),
            (Device(k), Memory) => Route::of(&[Hop::Link(k, Up), Hop::Mch]),
            // An IPI: an interrupt message on the host bus, from one core's Local APIC to the
            // others' (SDM vol. 3, 10.6).
            (Cpu, Cpu) => Route::of(&[Hop::Fsb]),
            (Memory, Device(k)) => Route::of(&[Hop::Mch, Hop::Link(k, Down)]),
            (a, b) => panic!("no route from {a:?} to {b:?} in this topology"),
        }
    }
}

/// The hubs and buses with their state.
#[derive(Clone, Debug)]
pub struct Fabric {
    pub fsb: Fsb,
    /// MCH core crossing latency (port to port).
    pub mch_crossing: SimDuration,
    pub dmi: Link,
    /// ICH internal crossing latency (DMI to function and back).
    pub ich_crossing: SimDuration,
    /// One link per root port with a device.
    pub links: Vec<Link>,
    /// From a device's read request reaching the root complex to its data leaving it (memory
    /// controller and DRAM, coherency); only DMA reads use it.
    pub memory_read: SimDuration,
}

/// The outcome of crossing one hop.
#[derive(Copy, Clone, Debug)]
pub struct Crossing {
    /// When the packet reaches the next hop.
    pub arrival: SimTime,
    /// For PCIe links: when its first symbol went on the wire (what an analyzer timestamps).
    pub wire_start: Option<SimTime>,
}

impl Fabric {
    /// A hop that only delays (no queue, no state): crossing it needs no event of its own.
    pub fn pure_delay(&self, hop: Hop) -> Option<SimDuration> {
        match hop {
            Hop::Mch => Some(self.mch_crossing),
            Hop::Ich => Some(self.ich_crossing),
            _ => None,
        }
    }

    /// Cross `hop` with a packet of `wire_bytes` (PCIe framing included) entering at `now`.
    pub fn cross(&mut self, hop: Hop, now: SimTime, wire_bytes: u32) -> Crossing {
        let (arrival, wire_start) = match hop {
            Hop::Fsb => (self.fsb.transact(now), None),
            Hop::Mch => (now + self.mch_crossing, None),
            Hop::Ich => (now + self.ich_crossing, None),
            Hop::Dmi(d) => (self.dmi.transmit(now, d, wire_bytes).arrival, None),
            Hop::Link(k, d) => {
                let t = self.links[usize::from(k)].transmit(now, d, wire_bytes);
                (t.arrival, Some(t.start))
            }
        };
        Crossing {
            arrival,
            wire_start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsb_transactions_start_on_clock_edges_and_pipeline() {
        let mut f = Fsb::new(FsbTiming {
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

    #[test]
    fn routes_are_symmetric_in_length() {
        for (a, b) in [
            (Endpoint::Cpu, Endpoint::Device(0)),
            (Endpoint::Cpu, Endpoint::Ich),
        ] {
            assert_eq!(Route::between(a, b).len(), Route::between(b, a).len());
        }
        assert_eq!(
            Route::between(Endpoint::Device(0), Endpoint::Ich).hop(2),
            Some(Hop::Dmi(Dir::Down))
        );
    }
}
