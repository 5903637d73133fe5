//! cyclictest's `--histogram` text format, for measured and simulated runs alike: the one
//! renderer that `irqlab measure timer --histogram-out` and `irqlab sim --histogram-out` write
//! with, so that a simulated run and one measured on a real box plot side by side with the
//! same scripts.

use irqlab_stats::LatencyHistogram;
use std::fmt::Write as _;

/// The most rows cyclictest's histogram has (`HIST_MAX`); larger `--histogram` values are
/// clamped to it, and so are ours.
pub const CYCLICTEST_HIST_MAX_US: u64 = 1_000_000;

/// The comment line naming the histogram's bucket size (irqlab's addition to the format).
pub const BUCKET_COMMENT: &str =
    "# Bucket size: 1 us (row N counts latencies from N us to N+1 us)\n";

/// Renders histograms in cyclictest's `--histogram=US` text format, one column per histogram
/// in the order given (cyclictest's thread order), so existing plotting scripts (OSADL's among
/// them) read it unchanged.
///
/// This follows `print_hist()` in rt-tests `src/cyclictest/cyclictest.c` (checked against
/// commit 26e1a036 of igaw/rt-tests):
///
/// ```text
/// fprintf(fd, "# Histogram\n");
/// (irqlab adds one comment line here: BUCKET_COMMENT)
/// for (i = 0; i < histogram; i++) {
///         fprintf(fd, "%06d ", i);
///         ... fprintf(fd, "%06lu", curr_latency); if (j < nthreads - 1) fprintf(fd, "\t");
///         fprintf(fd, "\n");
/// }
/// fprintf(fd, "# Total:");            ... fprintf(fd, " %09llu", log_entries[j]);
/// fprintf(fd, "# Min Latencies:");    ... fprintf(fd, " %05lu", par[j]->stats->min);
/// fprintf(fd, "# Avg Latencies:");    ... fprintf(fd, " %05lu", avg / cycles);
/// fprintf(fd, "# Max Latencies:");    ... fprintf(fd, " %05lu", par[j]->stats->max);
/// fprintf(fd, "# Histogram Overflows:"); ... fprintf(fd, " %05lu", hist_overflow);
/// fprintf(fd, "# Histogram Overflow at cycle number:\n");
/// for each thread: fprintf(fd, "# Thread %d:", i); <cycle numbers> " # %05lu others" "\n"
/// fprintf(fd, "\n");
/// ```
///
/// Row `i` counts latencies in `[i, i + 1)` us (cyclictest truncates to whole microseconds);
/// a latency of `max_us` or more is an overflow (`diff >= histogram`), and `max_us` is clamped
/// to [`CYCLICTEST_HIST_MAX_US`] as cyclictest clamps it. `# Total` counts the rows only.
/// Min, avg and max are exact nanoseconds rounded down to microseconds; cyclictest averages
/// per-sample truncated microseconds, so its `Avg` can read up to 1 us lower.
///
/// Two details differ because the data is not kept: the overflowed cycle numbers are not
/// recorded (memory must not grow with the run), so every overflow is listed as
/// `# NNNNN others`; and a thread without samples shows min 0 (cyclictest shows its initial
/// 1000000). cyclictest's `-H` summary column and `--smi` line are not produced. The 1 us rows
/// are exact up to about 1 ms and within one row above (see
/// [`LatencyHistogram::iter_buckets`]).
pub fn cyclictest_histogram(histograms: &[&LatencyHistogram], max_us: u64) -> String {
    let rows = max_us.min(CYCLICTEST_HIST_MAX_US);
    let n = histograms.len();
    let mut out = String::with_capacity((rows as usize + 12) * (8 + 7 * n));
    let mut buckets: Vec<_> = histograms
        .iter()
        .map(|h| h.iter_buckets(1000).peekable())
        .collect();
    let mut totals = vec![0u64; n];
    // Writing to a String cannot fail; the results are ignored below for that reason.
    out.push_str("# Histogram\n");
    // cyclictest's rows are always 1 us wide and say so nowhere; a comment line (which every
    // reader of the format skips, OSADL's `grep -v -e "^#"` among them) makes the file
    // self-describing.
    out.push_str(BUCKET_COMMENT);
    for row in 0..rows {
        let _ = write!(out, "{row:06} ");
        for (j, column) in buckets.iter_mut().enumerate() {
            // Buckets start at multiples of 1000 ns and ascend, one per row at most.
            let count = column
                .next_if(|&(start_ns, _)| start_ns / 1000 == row)
                .map_or(0, |(_, count)| count);
            totals[j] += count;
            let _ = write!(out, "{count:06}");
            if j + 1 < n {
                out.push('\t');
            }
        }
        out.push('\n');
    }
    let line = |out: &mut String, label: &str, values: &mut dyn Iterator<Item = String>| {
        out.push_str(label);
        for v in values {
            out.push(' ');
            out.push_str(&v);
        }
        out.push('\n');
    };
    let us = |ns: Option<u64>| ns.unwrap_or(0) / 1000;
    let overflows: Vec<u64> = histograms
        .iter()
        .zip(&totals)
        .map(|(h, total)| h.count() - total)
        .collect();
    line(
        &mut out,
        "# Total:",
        &mut totals.iter().map(|t| format!("{t:09}")),
    );
    line(
        &mut out,
        "# Min Latencies:",
        &mut histograms.iter().map(|h| format!("{:05}", us(h.min_ns()))),
    );
    line(
        &mut out,
        "# Avg Latencies:",
        &mut histograms.iter().map(|h| {
            // Truncated like cyclictest's `(long)(avg / cycles)`.
            format!("{:05}", h.mean_ns().map_or(0, |m| (m / 1000.0) as u64))
        }),
    );
    line(
        &mut out,
        "# Max Latencies:",
        &mut histograms.iter().map(|h| format!("{:05}", us(h.max_ns()))),
    );
    line(
        &mut out,
        "# Histogram Overflows:",
        &mut overflows.iter().map(|o| format!("{o:05}")),
    );
    out.push_str("# Histogram Overflow at cycle number:\n");
    for (j, overflow) in overflows.iter().enumerate() {
        let _ = write!(out, "# Thread {j}:");
        if *overflow > 0 {
            let _ = write!(out, " # {overflow:05} others");
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_text_matches_cyclictest_print_hist() {
        let mut a = LatencyHistogram::new();
        // Rows 1 and 2; 5000 ns is an overflow at --histogram=5 (diff >= histogram), and
        // 12 s is beyond the histogram's own range: both count as overflows.
        for ns in [1_500, 2_200, 2_999, 5_000, 12_000_000_000] {
            a.record(ns);
        }
        let mut b = LatencyHistogram::new();
        for ns in [0, 400, 4_999] {
            b.record(ns);
        }
        let expected = "\
# Histogram
# Bucket size: 1 us (row N counts latencies from N us to N+1 us)
000000 000000\t000002
000001 000001\t000000
000002 000002\t000000
000003 000000\t000000
000004 000000\t000001
# Total: 000000003 000000003
# Min Latencies: 00001 00000
# Avg Latencies: 2400002 00001
# Max Latencies: 12000000 00004
# Histogram Overflows: 00002 00000
# Histogram Overflow at cycle number:
# Thread 0: # 00002 others
# Thread 1:

";
        assert_eq!(cyclictest_histogram(&[&a, &b], 5), expected);
    }

    #[test]
    fn histogram_text_of_one_empty_thread() {
        let empty = LatencyHistogram::new();
        assert_eq!(
            cyclictest_histogram(&[&empty], 2),
            "# Histogram\n# Bucket size: 1 us (row N counts latencies from N us to N+1 us)\n\
             000000 000000\n000001 000000\n# Total: 000000000\n\
             # Min Latencies: 00000\n# Avg Latencies: 00000\n# Max Latencies: 00000\n\
             # Histogram Overflows: 00000\n# Histogram Overflow at cycle number:\n\
             # Thread 0:\n\n"
        );
    }
}
