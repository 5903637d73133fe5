#!/bin/sh
# irqlab's timer measurement against cyclictest (Debian rt-tests) on this host: the default
# (untraced) mode, --trace (the IRQ/thread split) and --trace-sched (the scheduling account),
# alternately with cyclictest, with the same interval, priority, CPUs and duration, for several
# rounds at each interval. The project's goal: the default mode's median within 5% of
# cyclictest's.
#
# Usage (root): bench/vs-cyclictest.sh [ROUNDS] [SECONDS] [INTERVALS_US] [PRIORITY]
#   ROUNDS        rounds per interval (default 9); each round runs every tool once, in an order
#                 that rotates from round to round so that no tool always follows another
#   SECONDS       length of each run (default 5)
#   INTERVALS_US  comma-separated intervals (default 1000,200)
#   PRIORITY      SCHED_FIFO priority (default 95)
# Environment:
#   IRQLAB=PATH         the irqlab binary (default: target/release/irqlab, else irqlab on PATH)
#   IRQLAB_BEFORE=PATH  also run this (older) binary's default mode, for before/after figures
#   CPUS=LIST           CPUs to measure on (default: all online)
#
# It does not build anything: build first with `cargo build --release`.
#
# Method. Every latency is read in nanoseconds: irqlab's JSON histograms, and cyclictest's
# `-N -h 1000000` histogram (1 ns buckets up to 1 ms; cyclictest's `-h` index is the latency in
# the unit of `-N`, rt-tests src/cyclictest/cyclictest.c, timerthread()). The samples of all
# CPUs are pooled. Each round gives a ratio irqlab/cyclictest for the median, the average and
# the 99th percentile, taken against the cyclictest run of the same round (the shared VM's noise
# drifts over minutes, so neighbours in time are compared); the table shows the median of those
# ratios over the rounds with their range (min-max). A wake-up later than 1 ms counts in the
# pool as 1 ms for both tools (cyclictest's overflow bucket keeps no value).
set -eu
rounds=${1:-9}
secs=${2:-5}
intervals=${3:-1000,200}
prio=${4:-95}
for v in "$rounds" "$secs" "$prio"; do
    case "$v" in '' | *[!0-9]* | 0) echo "ROUNDS, SECONDS and PRIORITY are whole numbers above 0 (got '$v')" >&2; exit 2 ;; esac
done
command -v cyclictest >/dev/null || { echo "needs cyclictest (apt install rt-tests)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 2; }
cd "$(dirname "$0")/.."
if [ -n "${IRQLAB:-}" ]; then
    bin=$IRQLAB
elif [ -x target/release/irqlab ]; then
    bin=target/release/irqlab
elif command -v irqlab >/dev/null; then
    bin=$(command -v irqlab)
else
    echo "no irqlab binary: build it with 'cargo build --release' (or set IRQLAB=PATH)" >&2
    exit 2
fi
[ -x "$bin" ] || { echo "IRQLAB=$bin is not an executable" >&2; exit 2; }
if [ -n "${IRQLAB_BEFORE:-}" ] && [ ! -x "$IRQLAB_BEFORE" ]; then
    echo "IRQLAB_BEFORE=$IRQLAB_BEFORE is not an executable" >&2
    exit 2
fi
cpus=${CPUS:-$(cat /sys/devices/system/cpu/online)}
echo "irqlab: $bin ($("$bin" --version)); cyclictest: $(cyclictest --help 2>&1 | head -1)"
echo "kernel $(uname -r), CPUs $cpus, $rounds rounds of $secs s per tool, priority $prio"
exec python3 - "$bin" "${IRQLAB_BEFORE:-}" "$cpus" "$rounds" "$secs" "$intervals" "$prio" <<'PY'
import json, os, statistics, subprocess, sys, tempfile

irqlab, before, cpus, rounds, secs, intervals, prio = sys.argv[1:]
rounds, secs, prio = int(rounds), int(secs), int(prio)
intervals = [int(i) for i in intervals.split(",") if i]
HIST_NS = 1_000_000  # cyclictest's HIST_MAX: with -N, 1 ns buckets up to 1 ms

def ncpus(spec):
    n = 0
    for part in spec.split(","):
        a, _, b = part.partition("-")
        n += int(b or a) - int(a) + 1
    return n

def summary(pairs):
    """Median, average and p99 (ns) of (value, count) pairs; values above HIST_NS count as it."""
    pairs = sorted((min(v, HIST_NS), c) for v, c in pairs if c)
    total = sum(c for _, c in pairs)
    if total == 0:
        return None
    def quantile(q):
        rank, acc = q * total, 0
        for v, c in pairs:
            acc += c
            if acc >= rank:
                return v
        return pairs[-1][0]
    return {"p50": quantile(0.5), "avg": sum(v * c for v, c in pairs) / total,
            "p99": quantile(0.99), "n": total}

def run_irqlab(binary, flags, interval, out):
    path = os.path.join(out, "irqlab.json")
    subprocess.run([binary, "measure", "timer", "--cpus", cpus, "--priority", str(prio),
                    "--interval-us", str(interval), "--duration", f"{secs}s", "--json", path]
                   + flags, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = json.load(open(path))
    pairs = []
    for h in rep["result"]["histograms"]:
        if h["metric"] == "thread_latency":
            pairs += [tuple(p) for p in h["values"]]
            pairs.append((HIST_NS + 1, h.get("overflows", 0)))
    return summary(pairs)

def run_cyclictest(interval, out):
    path = os.path.join(out, "cyclictest.hist")
    subprocess.run(["cyclictest", "-q", "-m", "-N", "-p", str(prio), "-i", str(interval),
                    "-t", str(ncpus(cpus)), "-a", cpus, "-D", str(secs), "-h", str(HIST_NS),
                    f"--histfile={path}"], check=True, stdout=subprocess.DEVNULL)
    pairs, overflows = [], 0
    with open(path) as f:
        for line in f:
            if line.startswith("# Histogram Overflows:"):
                overflows = sum(int(x) for x in line.split(":")[1].split())
            if line[0] == "#":
                continue
            fields = line.split()
            if len(fields) > 1:
                c = sum(int(x) for x in fields[1:])
                if c:
                    pairs.append((int(fields[0]), c))
    os.unlink(path)
    pairs.append((HIST_NS + 1, overflows))
    return summary(pairs)

tools = [("cyclictest", None), ("irqlab", (irqlab, [])), ("irqlab --trace", (irqlab, ["--trace"])),
         ("irqlab --trace-sched", (irqlab, ["--trace-sched"]))]
if before:
    tools.append(("before", (before, [])))
results = {}  # (interval, tool) -> list of summaries per round
with tempfile.TemporaryDirectory() as out:
    for interval in intervals:
        print(f"\ninterval {interval} us")
        print(f"{'round':>5}  {'tool':<20}  {'p50 us':>7}  {'avg us':>7}  {'p99 us':>7}  {'wake-ups':>9}")
        for r in range(rounds):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            for name, how in order:
                s = run_cyclictest(interval, out) if how is None else run_irqlab(*how, interval, out)
                results.setdefault((interval, name), [None] * rounds)[r] = s
                if s:
                    print(f"{r + 1:>5}  {name:<20}  {s['p50'] / 1e3:>7.2f}  {s['avg'] / 1e3:>7.2f}  "
                          f"{s['p99'] / 1e3:>7.2f}  {s['n']:>9}", flush=True)

print("\nratios to cyclictest in the same round: median over rounds [min-max]")
print(f"{'interval':>8}  {'tool':<20}  {'rounds':>6}  {'median':<19}  {'average':<19}  {'p99':<19}")
for interval in intervals:
    ct = results[(interval, "cyclictest")]
    for name, how in tools:
        if how is None:
            continue
        cells = []
        rows = [(s, c) for s, c in zip(results[(interval, name)], ct) if s and c]
        for key in ("p50", "avg", "p99"):
            ratios = [s[key] / c[key] for s, c in rows]
            cells.append(f"{statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}]")
        print(f"{interval:>8}  {name:<20}  {len(rows):>6}  {cells[0]:<19}  {cells[1]:<19}  {cells[2]:<19}")
PY
