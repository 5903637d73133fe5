//! Seed 004's measurement, as the seed made it: the counter card latches the counter on the
//! pulse's edge in hardware; the driver's handler (`ppsintr`) reads the counter through
//! `nanotime()` and `pps_event()` stores it with a new sequence number; user space fetches both
//! (`time_pps_fetch`). The latency of a pulse is the stored count minus the latched one, modulo
//! the counter's 22 bits. The probe reads the kernel's PPS state after every event, as that
//! program would read it, and the card's latch; it measures nothing the machine does not do.

use crate::devices::counter_card::CounterCard;
use crate::kernel::program::Var;
use crate::kernel::Kernel;
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;

pub struct PpsProbe {
    /// The counter card it reads (the machine's device index).
    pub card: usize,
    /// The kernel's `pps_info`: the assert timestamp (counter counts) and sequence number.
    pub stamp: Var,
    pub sequence: Var,
    seen: u64,
    /// The last pulse's number and whether its timestamp has been taken.
    pulse: u64,
    sampled: bool,
    pub target: u64,
    pub samples: u64,
    pub missed: u64,
    pub latency: LatencyHistogram,
    /// The latencies per workload phase, by the pulse's number.
    pub phases: super::ByPhase,
    /// Every sample in counts.
    pub counts: Vec<u64>,
    pub series: SampleSeries,
    /// Counts samples for a progress display.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl PpsProbe {
    pub fn new(
        card: usize,
        stamp: Var,
        sequence: Var,
        phase_until: Vec<u64>,
        target: u64,
    ) -> PpsProbe {
        PpsProbe {
            card,
            stamp,
            sequence,
            seen: 0,
            pulse: 0,
            sampled: true,
            phases: super::ByPhase::new(phase_until),
            target,
            samples: 0,
            missed: 0,
            latency: LatencyHistogram::new(),
            counts: Vec::with_capacity(target.min(1 << 20) as usize),
            series: SampleSeries::new(super::SERIES_POINTS),
            progress: None,
        }
    }

    /// Read the kernel's PPS state: a new event is the pulse's timestamp.
    #[inline]
    pub fn poll(&mut self, kernel: &Kernel, card: &CounterCard) {
        let seq = kernel.var(self.sequence);
        if seq == self.seen {
            return;
        }
        self.seen = seq;
        if self.sampled || self.pulse == 0 {
            return;
        }
        self.sampled = true;
        let counts = kernel.var(self.stamp).wrapping_sub(card.latch) & card.mask;
        let ns = (counts as f64 * card.count_ns()).round() as u64;
        self.samples += 1;
        self.latency.record(ns);
        self.phases.record_at(self.pulse, ns);
        self.counts.push(counts);
        self.series.record(ns);
        if let Some(p) = &self.progress {
            p.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

impl super::Observer for PpsProbe {
    /// Pulse `n` left the receiver; the previous one never got its timestamp if it is still
    /// waiting.
    fn pulse(&mut self, n: u64) {
        if !self.sampled {
            self.missed += 1;
        }
        self.pulse = n;
        self.sampled = false;
    }
    #[inline]
    fn observe(&mut self, kernel: &Kernel, devices: &[crate::devices::Device]) {
        use crate::devices::{Board, Device};
        if let Device::Board(Board::CounterCard(card)) = &devices[self.card] {
            self.poll(kernel, card);
        }
    }
    fn done(&self) -> bool {
        self.samples >= self.target
    }
    fn settled(&self) -> Option<u64> {
        (self.sampled && self.pulse > 0).then_some(self.pulse)
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}
