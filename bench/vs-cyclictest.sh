#!/bin/sh
# irqlab's timer measurement against cyclictest (Debian rt-tests), alternately, with the same
# interval, priority, CPUs and duration, for several rounds. Prints each run's per-CPU summary
# and the ratio of the averages (irqlab / cyclictest); the goal is 1 +- 0.15. On a host with
# heavy latency tails (a VM) the average follows the rare long stalls of the round it was taken
# in, so the ratio of medians (from cyclictest's histogram) is printed beside it.
#
# Usage (root): bench/vs-cyclictest.sh [ROUNDS] [SECONDS] [INTERVAL_US] [PRIORITY]
# IRQLAB_FLAGS="--no-trace" compares the bare measurement (the default also traces the timer
# interrupt for the IRQ/thread split).
set -eu
rounds=${1:-9}
secs=${2:-5}
interval=${3:-1000}
prio=${4:-95}
command -v cyclictest >/dev/null || { echo "needs cyclictest (apt install rt-tests)" >&2; exit 2; }
cd "$(dirname "$0")/.."
cargo build --release -q
cpus=$(cat /sys/devices/system/cpu/online)
n=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
    # shellcheck disable=SC2086
    ./target/release/irqlab measure timer --cpus "$cpus" --priority "$prio" \
        --interval-us "$interval" --duration "${secs}s" ${IRQLAB_FLAGS:-} \
        --json "$out/irqlab-$r.json" >/dev/null
    cyclictest -q -m -p "$prio" -i "$interval" -t "$n" -a "$cpus" -D "$secs" \
        -h 100000 --histfile="$out/cyclictest-$r.hist" >"$out/cyclictest-$r.txt"
done
python3 - "$out" "$rounds" <<'PY'
import json, re, sys
out, rounds = sys.argv[1], int(sys.argv[2])

def hist_p50(path):
    """Per-thread median (us) from cyclictest's --histfile."""
    rows = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        rows.append((int(f[0]), [int(x) for x in f[1:]]))
    nthreads = len(rows[0][1])
    meds = []
    for t in range(nthreads):
        total = sum(r[1][t] for r in rows)
        acc = 0
        for us, counts in rows:
            acc += counts[t]
            if acc * 2 >= total:
                meds.append(us)
                break
    return meds

rows = []
print(f"{'round':>5}  {'tool':<10}  {'CPU':>3}  {'min us':>7}  {'p50 us':>7}  {'avg us':>8}  {'max us':>9}")
for r in range(1, rounds + 1):
    rep = json.load(open(f"{out}/irqlab-{r}.json"))
    ia, ip = [], []
    for m in rep["result"]["metrics"]:
        if m["name"] != "thread_latency":
            continue
        s = m["summary"]
        cpu = m["cpu"]
        ia.append(s["mean_ns"] / 1000)
        ip.append(s["p50_ns"] / 1000)
        print(f"{r:>5}  {'irqlab':<10}  {cpu:>3}  {s['min_ns']/1000:>7.1f}  {s['p50_ns']/1000:>7.1f}  {s['mean_ns']/1000:>8.1f}  {s['max_ns']/1000:>9.1f}")
    hist = f"{out}/cyclictest-{r}.hist"
    meds = hist_p50(hist)
    summary = {}
    for line in open(hist):
        m = re.match(r"# (Min|Avg|Max) Latencies:(.*)", line)
        if m:
            summary[m.group(1)] = [int(x) for x in m.group(2).split()]
    ca, cp = [], []
    for t, p50 in enumerate(meds):
        mn, avg, mx = summary["Min"][t], summary["Avg"][t], summary["Max"][t]
        ca.append(avg)
        cp.append(p50)
        print(f"{r:>5}  {'cyclictest':<10}  {t:>3}  {mn:>7.1f}  {p50:>7.1f}  {avg:>8.1f}  {mx:>9.1f}")
    rows.append((sum(ia) / len(ia), sum(ca) / len(ca), sum(ip) / len(ip), sum(cp) / len(cp)))
mean = lambda v: sum(v) / len(v)
med = lambda v: sorted(v)[len(v) // 2]
ia, ca, ip, cp = (list(x) for x in zip(*rows))
print(f"\naverages, mean over rounds: irqlab {mean(ia):.1f} us, cyclictest {mean(ca):.1f} us; ratio {mean(ia) / mean(ca):.3f}")
print(f"averages, median over rounds: irqlab {med(ia):.1f} us, cyclictest {med(ca):.1f} us; ratio {med(ia) / med(ca):.3f}")
print(f"medians, median over rounds: irqlab {med(ip):.1f} us, cyclictest {med(cp):.1f} us; ratio {med(ip) / med(cp):.3f}")
PY
