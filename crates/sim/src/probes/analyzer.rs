//! The PCIe analyzer on the exerciser's link, and the latency probe that reads its log.
//!
//! Seed 000, "Event Observation": the latency is measured on the PCIe link, from the interrupt
//! packet (Assert_INTx or the MSI write) to the ISR's signature write and to the tasklet's
//! signature write crossing the same link. The analyzer timestamps each TLP when its first
//! symbol goes on the wire. Probes observe; nothing in the model reads them.

use crate::engine::SimTime;
use crate::hw::msi;
use crate::hw::pcie::{Dir, MsgCode, Tlp, TlpKind};
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;
use serde::Serialize;

/// One logged TLP.
#[derive(Clone, Debug, Serialize)]
pub struct TraceRecord {
    /// Packet number (counting every TLP on the link).
    pub packet: u64,
    pub time_ps: u64,
    pub dir: Dir,
    #[serde(flatten)]
    pub tlp: Tlp,
}

/// Logs the first `capacity` TLPs crossing the link (memory stays bounded on long runs).
#[derive(Clone, Debug, Default)]
pub struct Analyzer {
    pub capacity: usize,
    pub records: Vec<TraceRecord>,
    pub packets: u64,
}

impl Analyzer {
    pub fn new(capacity: usize) -> Self {
        Analyzer {
            capacity,
            records: Vec::with_capacity(capacity.min(4096)),
            packets: 0,
        }
    }

    /// The logged packets in time order (a packet crossed ahead of the clock may have been
    /// logged before one that went on the wire earlier), taken out of the analyzer.
    pub fn take_trace(&mut self) -> Vec<TraceRecord> {
        let mut trace = std::mem::take(&mut self.records);
        trace.sort_by_key(|r| (r.time_ps, r.packet));
        trace
    }

    pub fn observe(&mut self, time: SimTime, dir: Dir, tlp: &Tlp) {
        self.packets += 1;
        if self.records.len() < self.capacity {
            self.records.push(TraceRecord {
                packet: self.packets,
                time_ps: time.as_ps(),
                dir,
                tlp: *tlp,
            });
        }
    }
}

/// Turns the analyzer's view into ISR and tasklet latencies.
#[derive(Debug)]
pub struct LatencyProbe {
    pub isr_signature_addr: u64,
    /// `None` for a driver without a tasklet: a sample ends with the ISR's write.
    pub tasklet_signature_addr: Option<u64>,
    /// Samples still to discard before recording (the run's warm-up).
    pub warmup: u64,
    /// The interrupt packet of the measurement in progress.
    start: Option<SimTime>,
    isr_seen: bool,
    pub isr: LatencyHistogram,
    pub tasklet: LatencyHistogram,
    /// Both per workload phase, by their number past the warm-up.
    pub isr_phases: super::ByPhase,
    pub tasklet_phases: super::ByPhase,
    /// The ISR latencies in order (bounded), when asked for.
    pub series: Option<SampleSeries>,
    /// Interrupt packets seen while a measurement was still open (the interrupts came too fast
    /// for the one-at-a-time method); those samples are not recorded.
    pub overlapped: u64,
}

impl LatencyProbe {
    pub fn new(isr_signature_addr: u64, tasklet_signature_addr: Option<u64>) -> Self {
        LatencyProbe {
            isr_signature_addr,
            tasklet_signature_addr,
            warmup: 0,
            start: None,
            isr_seen: false,
            isr: LatencyHistogram::new(),
            tasklet: LatencyHistogram::new(),
            isr_phases: super::ByPhase::default(),
            tasklet_phases: super::ByPhase::default(),
            series: None,
            overlapped: 0,
        }
    }

    /// Samples completed (ISR and, with a tasklet, the tasklet seen).
    pub fn completed(&self) -> u64 {
        if self.tasklet_signature_addr.is_some() {
            self.tasklet.count()
        } else {
            self.isr.count()
        }
    }

    pub fn observe(&mut self, time: SimTime, dir: Dir, tlp: &Tlp) {
        let is_interrupt = dir == Dir::Up
            && match tlp.kind {
                TlpKind::Msg(MsgCode::AssertIntx(_)) => true,
                TlpKind::MemWrite => msi::is_interrupt_address(tlp.addr),
                _ => false,
            };
        if is_interrupt {
            if self.start.is_some() {
                self.overlapped += 1;
            }
            self.start = Some(time);
            self.isr_seen = false;
            return;
        }
        if dir != Dir::Down || tlp.kind != TlpKind::MemWrite {
            return;
        }
        let Some(start) = self.start else { return };
        if time < start {
            // A signature of an earlier interrupt, observed after a newer interrupt packet that
            // is still queued on the link (two interrupts within one TLP time). That newer packet
            // already counted the earlier sample as overlapped.
            return;
        }
        let ns = time.since(start).as_ns_rounded();
        let warming = self.warmup > 0;
        if tlp.addr == self.isr_signature_addr && !self.isr_seen {
            self.isr_seen = true;
            if !warming {
                self.isr.record(ns);
                self.isr_phases.record(ns);
                if let Some(s) = &mut self.series {
                    s.record(ns);
                }
            }
            if self.tasklet_signature_addr.is_none() {
                self.start = None;
                self.warmup = self.warmup.saturating_sub(1);
            }
        } else if Some(tlp.addr) == self.tasklet_signature_addr && self.isr_seen {
            if !warming {
                self.tasklet.record(ns);
                self.tasklet_phases.record(ns);
            }
            self.start = None;
            self.warmup = self.warmup.saturating_sub(1);
        }
    }
}
