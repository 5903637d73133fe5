#!/bin/sh
# Instructions per simulated interrupt, the repeatable speed figure on a shared machine: the
# difference between callgrind runs of LOW and HIGH samples, divided by HIGH - LOW (start-up and
# loading cancel out). Needs valgrind. Usage: bench/instructions.sh [LOW HIGH]
set -eu
low=${1:-100000}
high=${2:-300000}
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/irqlab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# instructions SCENARIO SAMPLES [ARGS...]: total instructions of one run, from callgrind's summary.
instructions() {
    scenario=$1 samples=$2
    shift 2
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
        "$bin" sim "$scenario" --samples "$samples" "$@" >/dev/null 2>"$tmp/log"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log"
}

printf '%-32s %s\n' "case" "instructions per interrupt"
for case in "seed000/ws --set delivery=msi" "seed000/ws --set delivery=xtpic" "seed002/fpga"; do
    set -- $case
    scenario=$1
    shift
    a=$(instructions "$scenario" "$low" "$@")
    b=$(instructions "$scenario" "$high" "$@")
    printf '%-32s %d\n' "$case" $(( (b - a) / (high - low) ))
done
