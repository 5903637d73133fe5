//! What a simulation produced, in one neutral form: named latency distributions, named counters,
//! a sample series, the analyzer's log, and (for an instrument that counts) the samples
//! themselves. The validation rows, the reports and the CLI read only this, whichever platform,
//! kernel and devices produced it; nothing downstream branches on the model.

use crate::probes::analyzer::TraceRecord;
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;

/// One measured latency distribution.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Machine name: `isr_latency`, `tasklet_latency`, `round_trip`, `pps_latency`.
    pub name: String,
    /// What it spans, for people.
    pub description: String,
    /// The workload phase its samples were taken in; `None`: the whole run.
    pub phase: Option<String>,
    pub histogram: LatencyHistogram,
    /// The instrument's count period in ns when it counts (seed 004's 90.112 MHz counter): the
    /// histogram's quantum.
    pub quantum_ns: Option<f64>,
}

/// When a counter is shown.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Shown {
    Always,
    /// Only when it counted something (an SMI counter on a run without SMIs says nothing).
    IfNonzero,
}

/// A named count of events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Count {
    pub name: String,
    pub value: u64,
    pub shown: Shown,
}

impl Count {
    pub fn always(name: impl Into<String>, value: u64) -> Count {
        Count {
            name: name.into(),
            value,
            shown: Shown::Always,
        }
    }
    pub fn if_nonzero(name: impl Into<String>, value: u64) -> Count {
        Count {
            name: name.into(),
            value,
            shown: Shown::IfNonzero,
        }
    }
}

/// Every sample of a counting instrument, in order and in counts: what an estimator that needs
/// the samples themselves reads (the box-width estimator of `irqlab_stats::boxwidth`).
#[derive(Clone, Debug)]
pub struct Counts {
    /// The metric they are samples of.
    pub metric: String,
    pub values: Vec<u64>,
    /// Nanoseconds per count.
    pub count_ns: f64,
}

/// The result of one run (all its replications merged).
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// The headline metric first.
    pub metrics: Vec<Measured>,
    pub counters: Vec<Count>,
    /// The headline metric sample by sample, bounded (the first replication's).
    pub series: Option<(String, SampleSeries)>,
    /// The analyzer's packets, in time order (the first replication's).
    pub trace: Vec<TraceRecord>,
    /// The first replication's samples in counts, when the instrument counts.
    pub counts: Option<Counts>,
}

impl RunResult {
    /// Add a later replication's result: each metric's histogram (by name and phase) and each
    /// counter (by name) add up; the series, the trace and the samples stay this one's (the
    /// first replication's).
    pub fn absorb(&mut self, o: RunResult) {
        for m in o.metrics {
            match (self.metrics.iter_mut()).find(|a| a.name == m.name && a.phase == m.phase) {
                Some(a) => a.histogram.merge(&m.histogram),
                None => self.metrics.push(m),
            }
        }
        for c in o.counters {
            match self.counters.iter_mut().find(|a| a.name == c.name) {
                Some(a) => a.value += c.value,
                None => self.counters.push(c),
            }
        }
    }

    /// The whole-run distribution of metric `name`.
    pub fn metric(&self, name: &str) -> Option<&LatencyHistogram> {
        self.phase(name, None)
    }

    /// Metric `name` in workload phase `phase` (`None`: the whole run).
    pub fn phase(&self, name: &str, phase: Option<&str>) -> Option<&LatencyHistogram> {
        self.metrics
            .iter()
            .find(|m| m.name == name && m.phase.as_deref() == phase)
            .map(|m| &m.histogram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counters add up by name across replications, also those a replication lists only when
    /// they counted something: added by position, one replication's `en0_coalesced` once
    /// shifted the other's `ed0_interrupts` into it (seed 004's merge, before this one).
    #[test]
    fn replications_add_counters_by_name_and_metrics_by_phase() {
        let metric = |phase: Option<&str>, ns: &[u64]| {
            let mut histogram = LatencyHistogram::new();
            for &v in ns {
                histogram.record(v);
            }
            Measured {
                name: "m".into(),
                description: String::new(),
                phase: phase.map(str::to_string),
                histogram,
                quantum_ns: None,
            }
        };
        let mut a = RunResult {
            metrics: vec![metric(None, &[10]), metric(Some("idle"), &[10])],
            counters: vec![Count::always("a", 1), Count::always("b", 2)],
            ..RunResult::default()
        };
        let b = RunResult {
            metrics: vec![metric(Some("idle"), &[20, 30]), metric(None, &[20, 30])],
            counters: vec![
                Count::always("a", 10),
                Count::if_nonzero("coalesced", 5),
                Count::always("b", 20),
            ],
            ..RunResult::default()
        };
        a.absorb(b);
        let value = |n: &str| a.counters.iter().find(|c| c.name == n).unwrap().value;
        assert_eq!((value("a"), value("b"), value("coalesced")), (11, 22, 5));
        assert_eq!(a.metric("m").unwrap().count(), 3);
        assert_eq!(a.phase("m", Some("idle")).unwrap().count(), 3);
    }
}
