#!/bin/sh
# irqlab against the same chain written in SimPy, in one run: DESIGN.md's goal that the
# single-device MSI chain runs at least 100x its SimPy model (issue 41, item 2). Both simulate
# seed 000's workstation with MSI delivery (`irqlab sim seed000/ws --set delivery=msi`); the SimPy
# model, bench/simpy/msi_chain.py, makes the same transactions with the same costs (its header
# says what it models and simplifies) and prints the same mean latencies, shown here beside
# irqlab's so a reader can see it is the same chain.
#
# The rate is simulated interrupts per second of wall time, on one core (irqlab with
# --replications 1). irqlab's wall time is the whole process's (/usr/bin/time: start-up and
# reading the scenario included); SimPy's is its env.run() alone (Python's start-up, imports and
# reading the TOML files left out), so the ratio leans towards SimPy, never away from it.
#
# Each run times irqlab and then SimPy, back to back, so both meet the same load; the run is
# repeated RUNS times (default 3), every run is printed, and the medians. On a shared virtual
# machine other tenants take cycles at random, so one run's ratio may be off by tens of percent.
#
# SimPy is a peer tool for this comparison only, never a dependency of irqlab: without it the
# script stops with status 2 (pip install simpy).
#
# Usage: [RUNS=N] [IRQLAB_BIN=path] [SIMPY_FLAGS=--fold] bench/vs-simpy.sh [IRQLAB_SAMPLES]
#        [SIMPY_SAMPLES]
# Defaults: 2,000,000 interrupts for irqlab (about a second), 50,000 for SimPy (a few seconds).
# IRQLAB_BIN measures that binary instead of building this tree's; SIMPY_FLAGS passes flags to
# msi_chain.py (--fold: one timeout per run of instruction blocks instead of one per block).
set -eu
irqlab_samples=${1:-2000000}
simpy_samples=${2:-50000}
runs=${RUNS:-3}
case "$runs" in
    '' | *[!0-9]* | 0) echo "RUNS must be a whole number of runs, 1 or more (got '$runs')" >&2; exit 2 ;;
esac
for n in "$irqlab_samples" "$simpy_samples"; do
    case "$n" in
        '' | *[!0-9]* | 0) echo "sample counts must be whole numbers, 1 or more (got '$n')" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.."
if ! python3 -c 'import simpy' 2>/dev/null; then
    echo "bench/vs-simpy.sh needs SimPy to compare with (a peer tool, not an irqlab dependency):" >&2
    echo "  pip install simpy" >&2
    exit 2
fi
if [ -n "${IRQLAB_BIN:-}" ]; then
    bin=$IRQLAB_BIN
else
    cargo build --release -q
    bin=target/release/irqlab
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ "$i" -lt "$runs" ]; do
    /usr/bin/time -f "%e" -o "$tmp/time" "$bin" sim seed000/ws --set delivery=msi \
        --samples "$irqlab_samples" --replications 1 >"$tmp/irqlab.out"
    # The table's mean column (ns) of both latencies, and the wall time.
    isr=$(awk '$1 == "isr_latency" { print $4 }' "$tmp/irqlab.out")
    tasklet=$(awk '$1 == "tasklet_latency" { print $4 }' "$tmp/irqlab.out")
    echo "irqlab $(cat "$tmp/time") $isr $tasklet" >>"$tmp/rows"
    # shellcheck disable=SC2086 # SIMPY_FLAGS is a list of flags
    python3 bench/simpy/msi_chain.py --samples "$simpy_samples" ${SIMPY_FLAGS:-} >"$tmp/simpy.out"
    sed -n 's/^RESULT /simpy /p' "$tmp/simpy.out" >>"$tmp/rows"
    i=$((i + 1))
done
python3 - "$irqlab_samples" "$simpy_samples" "$tmp/rows" "${SIMPY_FLAGS:-}" <<'PY'
import statistics, sys
n_irqlab, n_simpy, flags = int(sys.argv[1]), int(sys.argv[2]), sys.argv[4]
irqlab, simpy = [], []
for line in open(sys.argv[3]):
    f = line.split()
    if f[0] == "irqlab":
        irqlab.append((float(f[1]), f[2], f[3]))
    else:
        kv = dict(x.split("=") for x in f[1:])
        simpy.append((float(kv["wall_s"]), kv["isr_mean_ns"], kv["tasklet_mean_ns"]))
print(f"seed000/ws --set delivery=msi on one core; SimPy flags: {flags or '(none)'}")
rates = []
for k, ((wi, ii, ti), (ws, si, st)) in enumerate(zip(irqlab, simpy), 1):
    ri, rs = n_irqlab / max(wi, 0.01), n_simpy / ws
    rates.append((ri, rs, ri / rs))
    print(f"run {k}: irqlab {n_irqlab:,} in {wi:.2f} s = {ri / 1e6:.2f} M interrupts/s "
          f"(mean isr {ii} ns, tasklet {ti} ns); SimPy {n_simpy:,} in {ws:.2f} s = "
          f"{rs / 1e3:.1f} k interrupts/s (mean isr {si} ns, tasklet {st} ns); ratio {ri / rs:.0f}x")
mi = statistics.median(r[0] for r in rates)
ms = statistics.median(r[1] for r in rates)
mr = statistics.median(r[2] for r in rates)
print(f"median of {len(rates)} runs: irqlab {mi / 1e6:.2f} M interrupts/s, SimPy "
      f"{ms / 1e3:.1f} k interrupts/s, ratio of the medians {mi / ms:.0f}x, "
      f"median ratio {mr:.0f}x (goal: 100x)")
PY
