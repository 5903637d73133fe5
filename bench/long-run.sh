#!/bin/sh
# A long simulation on all cores: wall time, simulated interrupts per second per core, and peak
# memory (which must not grow with the sample count). DESIGN.md's goal: 256M samples of a
# single-device MSI scenario in under 60 s on a 2-core machine; the default is seed 002's FPGA
# round trip, the published 256M-sample run (seed 000: bench/long-run.sh 256000000
# experiments/seed000/ws.toml).
# Usage: bench/long-run.sh [SAMPLES] [SCENARIO] [extra irqlab sim flags...]
set -eu
samples=${1:-256000000}
scenario=${2:-experiments/seed002/fpga.toml}
[ $# -ge 2 ] && shift 2 || shift $#
cd "$(dirname "$0")/.."
cargo build --release -q
cores=$(nproc)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
/usr/bin/time -f "%e %M" -o "$out" ./target/release/irqlab sim "$scenario" \
    --samples "$samples" --replications "$cores" "$@" >/dev/null
read -r wall rss_kb <"$out"
python3 - "$samples" "$cores" "$wall" "$rss_kb" <<'PY'
import sys
n, cores, wall, rss = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
print(f"{n:,} samples on {cores} cores: {wall:.1f} s wall, "
      f"{n / wall / cores / 1e6:.2f} M interrupts/s per core, peak RSS {rss / 1024:.1f} MiB")
PY
