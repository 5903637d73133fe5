#!/bin/sh
# Instructions per simulated interrupt, the repeatable speed figure on a shared machine: the
# difference between callgrind runs of LOW and HIGH samples, divided by HIGH - LOW (start-up and
# loading cancel out). Seed 001's figure is per forwarded frame: runs of 20 and 60 ms of traffic,
# the difference divided by the difference in frames transmitted. Seed 003's is per received
# frame of its flood at 6 us on both ports (what its validation runs most of): runs of 400 and
# 1,200 cyclictest loops, on the vanilla kernel and on PREEMPT_RT (cyclictest HIGH), the
# difference divided by the difference in frames received. Needs valgrind and python3.
# Usage: bench/instructions.sh [LOW HIGH]; IRQLAB_BIN=path measures that binary instead of
# building this tree's (to compare a commit before and after).
set -eu
low=${1:-100000}
high=${2:-300000}
cd "$(dirname "$0")/.."
if [ -n "${IRQLAB_BIN:-}" ]; then
    bin=$IRQLAB_BIN
else
    cargo build --release --quiet
    bin=target/release/irqlab
fi
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

# forward_instructions MS: total instructions of one seed-001 run of MS ms, and (in $tmp/frames)
# the frames it forwarded.
forward_instructions() {
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
        "$bin" sim seed001/forward --set duration_ms="$1" --json "$tmp/fwd.json" >/dev/null 2>"$tmp/log"
    python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["result"]["counters"]
print(sum(x["value"] for x in c if x["name"].endswith("_frames_transmitted")))' "$tmp/fwd.json" >"$tmp/frames"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log"
}

# flood_instructions LOOPS [ARGS...]: total instructions of one seed-003 flood run at 6 us of
# LOOPS cyclictest loops, and (in $tmp/frames) the frames its two ports received.
flood_instructions() {
    loops=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
        "$bin" sim seed003/flood --samples "$loops" --set device.0.nic.gap_us=6 \
        --set device.1.nic.gap_us=6 --set kernel.net.rx_packet=1200 "$@" \
        --json "$tmp/flood.json" >/dev/null 2>"$tmp/log"
    python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["result"]["counters"]
print(sum(x["value"] for x in c if x["name"].endswith("_frames_received")))' "$tmp/flood.json" >"$tmp/frames"
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
a=$(forward_instructions 20)
fa=$(cat "$tmp/frames")
b=$(forward_instructions 60)
fb=$(cat "$tmp/frames")
printf '%-32s %d\n' "seed001/forward (per frame)" $(( (b - a) / (fb - fa) ))
for kernel in "vanilla" "rt"; do
    case $kernel in
        rt) set -- --set kernel.threads.enabled=true --set kernel.sched.preemption=rt ;;
        *) set -- ;;
    esac
    a=$(flood_instructions 400 "$@")
    fa=$(cat "$tmp/frames")
    b=$(flood_instructions 1200 "$@")
    fb=$(cat "$tmp/frames")
    printf '%-32s %d\n' "seed003/flood 6us $kernel (per frame)" $(( (b - a) / (fb - fa) ))
done
