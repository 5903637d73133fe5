#!/bin/sh
# How many trace events per second `irqlab measure irqs` keeps up with, and what it costs.
# Load: cyclictest (Debian rt-tests) with a short interval on every CPU, so the local timer
# fires at a high rate; each wake-up gives local_timer_entry/exit and often softirq events.
# Usage (root): bench/irqs-throughput.sh [INTERVAL_US] [SECONDS]
set -eu
interval=${1:-10}
secs=${2:-5}
command -v cyclictest >/dev/null || { echo "needs cyclictest (apt install rt-tests)" >&2; exit 2; }
cd "$(dirname "$0")/.."
cargo build --release -q
ncpu=$(nproc)
cyclictest -q -m -p 80 -t "$ncpu" -a "0-$((ncpu - 1))" -i "$interval" -D $((secs + 3)) >/dev/null &
load=$!
trap 'kill $load 2>/dev/null || true' EXIT
sleep 1
/usr/bin/time -f "irqlab CPU: %U s user + %S s system over %e s" \
    ./target/release/irqlab measure irqs --duration "${secs}s" --json /tmp/irqs-throughput.json \
    | head -1
python3 - <<'PY'
import json
r = json.load(open("/tmp/irqs-throughput.json"))
print(f"events/s: {r['events'] / r['duration_s']:,.0f}; lost: {sum(r['lost_events'])}")
PY
