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
}
