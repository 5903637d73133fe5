#!/bin/sh
# What tracing the timer costs on this kernel, irqlab aside: cyclictest alone against cyclictest
# with a tracing instance recording the events `irqlab measure timer --trace` records
# (hrtimer_start and hrtimer_expire_entry, filtered in the kernel on hrtimer_wakeup), and with
# those `--trace-sched` adds, alternately, and the ratio of their medians round by round. Every
# traced event between a timer's expiry and the thread running adds to the latency measured; this
# is why irqlab's default measurement is untraced.
#
# Usage (root): bench/trace-cost.sh [ROUNDS] [SECONDS] [INTERVAL_US]
# It works in a private mount namespace and its own tracing instance, which it removes on any
# exit; the host's tracing state is not touched.
set -eu
rounds=${1:-10}
secs=${2:-4}
interval=${3:-1000}
for v in "$rounds" "$secs" "$interval"; do
    case "$v" in '' | *[!0-9]* | 0) echo "ROUNDS, SECONDS and INTERVAL_US are whole numbers above 0 (got '$v')" >&2; exit 2 ;; esac
done
command -v cyclictest >/dev/null || { echo "needs cyclictest (apt install rt-tests)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (tracefs)" >&2; exit 2; }
if [ -z "${TRACE_COST_IN_NS:-}" ]; then
    TRACE_COST_IN_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi
mnt=$(mktemp -d)
inst="$mnt/instances/irqlab-trace-cost-$$"
out=$(mktemp -d)
cleanup() {
    [ -d "$inst" ] && { echo 0 > "$inst/tracing_on"; rmdir "$inst"; }
    umount "$mnt" 2>/dev/null; rmdir "$mnt"; rm -rf "$out"
}
trap cleanup EXIT INT TERM
mount -t tracefs nodev "$mnt"
# A run killed outright (SIGKILL skips the trap) leaves its instance recording; remove any whose
# shell is gone before measuring, since a recording instance slows every timer on the machine.
for old in "$mnt"/instances/irqlab-trace-cost-*; do
    [ -d "$old" ] || continue
    kill -0 "${old##*-}" 2>/dev/null && continue
    echo 0 > "$old/tracing_on"; rmdir "$old" && echo "removed a stale instance: ${old##*/}" >&2
done
wakeup=0x$(awk '$3 == "hrtimer_wakeup" { print $1; exit }' /proc/kallsyms)
cpus=$(cat /sys/devices/system/cpu/online)
n=$(nproc)
# cyclictest in ns (-N, 1 ns buckets up to 1 ms): the pooled median of all CPUs, in us.
median() {
    python3 - "$1" <<'PY'
import sys
counts = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    f = line.split()
    n = sum(int(x) for x in f[1:])
    if n:
        counts[int(f[0])] = n
total, acc = sum(counts.values()), 0
for v in sorted(counts):
    acc += counts[v]
    if acc * 2 >= total:
        print(f"{v / 1000:.2f}")
        break
PY
}
run() { cyclictest -q -m -N -p 95 -i "$interval" -t "$n" -a "$cpus" -D "$secs" -h 1000000 --histfile="$out/$1.hist" >/dev/null; median "$out/$1.hist"; }
trace() { # $1: timer | sched
    mkdir "$inst"
    echo mono > "$inst/trace_clock"; echo 4096 > "$inst/buffer_size_kb"
    for e in hrtimer_start hrtimer_expire_entry; do
        [ "$1" = timer ] || [ "$e" = hrtimer_start ] && echo "function == $wakeup" > "$inst/events/timer/$e/filter"
        echo 1 > "$inst/events/timer/$e/enable"
    done
    if [ "$1" = sched ]; then
        for e in sched/sched_switch irq_vectors/local_timer_exit irq/irq_handler_entry irq/irq_handler_exit irq/softirq_entry irq/softirq_exit; do
            [ -d "$inst/events/$e" ] && echo 1 > "$inst/events/$e/enable"
        done
    fi
    echo 1 > "$inst/tracing_on"
}
untrace() { echo 0 > "$inst/tracing_on"; rmdir "$inst"; }
printf '%5s  %9s  %9s  %9s\n' round alone timer sched
for r in $(seq 1 "$rounds"); do
    a=$(run alone)
    trace timer; t=$(run timer); untrace
    trace sched; s=$(run sched); untrace
    printf '%5s  %9s  %9s  %9s\n' "$r" "$a" "$t" "$s"
done | tee "$out/rounds"
python3 - "$out/rounds" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines() if l.strip()]
t = [float(r[2]) / float(r[1]) for r in rows]
s = [float(r[3]) / float(r[1]) for r in rows]
print(f"\nratio to cyclictest alone in the same round, median over {len(rows)} rounds [min-max]:")
print(f"  timer events (--trace):               {statistics.median(t):.3f} [{min(t):.2f}-{max(t):.2f}]")
print(f"  and the scheduler (--trace-sched):    {statistics.median(s):.3f} [{min(s):.2f}-{max(s):.2f}]")
PY
