//! Seed 003's measurement: cyclictest's latencies. cyclictest is a program the modelled kernel
//! runs (`kernel/tasks.rs`: its loop, its system calls and its own arithmetic, `now - next`);
//! each loop hands its latency to this probe, which keeps the statistics the real tool keeps
//! in its own memory, per thread, past the warm-up.

use irqlab_stats::LatencyHistogram;

/// cyclictest's statistics, per thread.
#[derive(Debug, Default)]
pub struct CyclictestProbe {
    /// Loops of each thread before any is recorded (the run's warm-up).
    pub warmup: u64,
    threads: Vec<Thread>,
    /// Every thread's latencies per workload phase, each by its own loop's number past the
    /// warm-up.
    pub phases: super::ByPhase,
}

#[derive(Debug, Default)]
struct Thread {
    /// Samples the thread handed over, warm-up included.
    seen: u64,
    latency: LatencyHistogram,
}

impl CyclictestProbe {
    /// A probe that discards each thread's first `warmup` loops.
    pub fn new(warmup: u64) -> Self {
        CyclictestProbe {
            warmup,
            threads: Vec::new(),
            phases: super::ByPhase::default(),
        }
    }

    /// Thread `thread` measured `ns`.
    pub fn record(&mut self, thread: u8, ns: u64) {
        let i = usize::from(thread);
        if self.threads.len() <= i {
            self.threads.resize_with(i + 1, Thread::default);
        }
        let t = &mut self.threads[i];
        t.seen += 1;
        if t.seen > self.warmup {
            t.latency.record(ns);
            self.phases.record_at(t.seen - self.warmup, ns);
        }
    }

    /// Every thread's latencies in one histogram (cyclictest's summary over its threads).
    pub fn merged(&self) -> LatencyHistogram {
        let mut all = LatencyHistogram::new();
        for t in &self.threads {
            all.merge(&t.latency);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_warms_up_on_its_own_loops() {
        let mut p = CyclictestProbe::new(1);
        p.record(1, 9_000);
        p.record(0, 8_000);
        p.record(1, 3_000);
        p.record(0, 4_000);
        p.record(0, 5_000);
        let all = p.merged();
        assert_eq!(all.count(), 3);
        assert_eq!(all.min_ns(), Some(3_000));
        assert_eq!(all.max_ns(), Some(5_000));
    }
}
