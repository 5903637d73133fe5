#!/usr/bin/env bash
# A newcomer's first hour, timed: what the README's "The two commands" states, measured on this
# machine from scratch (empty target directories of its own; the repository's target/ is left
# alone), one step after another so that no step shares the CPUs with another. Prints the
# README's figures with the machine they were taken on. Takes about half an hour on 2 cores.
#
#   bench/first-hour.sh            # every step
#   STEPS="release validate" bench/first-hour.sh
#
# Steps: release (the release build), validate (`irqlab validate`, 3 runs), test (`cargo test`:
# its build, then its tests), clippy (.ci/run's lint step, from scratch), verdicts (`validate
# --uncertainty 200` with the release binary, .ci/verdicts' run).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-release validate test clippy verdicts}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/irqlab-first-hour.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
has() { [[ " $steps " == *" $1 "* ]]; }

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "machine: $cpu, $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $(rustc --version); $(date -u +%Y-%m-%d)"

bin=$scratch/release/release/irqlab
if has release || has validate || has verdicts; then
    t0=$(now)
    CARGO_TARGET_DIR=$scratch/release cargo build --release --locked --quiet
    has release && echo "release build from scratch: $(secs "$t0" "$(now)") s"
fi
if has validate; then
    times=()
    for _ in 1 2 3; do
        t0=$(now)
        "$bin" validate >/dev/null 2>&1 || true
        times+=("$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')")
    done
    sorted=$(printf '%s\n' "${times[@]}" | sort -n | paste -sd' ')
    echo "irqlab validate (exits 1 while rows fail), 3 runs: $sorted s"
fi
if has test; then
    t0=$(now)
    CARGO_TARGET_DIR=$scratch/test cargo test --workspace --locked --no-run --quiet
    t1=$(now)
    CARGO_TARGET_DIR=$scratch/test cargo test --workspace --locked --quiet >"$scratch/test.log" 2>&1 ||
        { tail -n 30 "$scratch/test.log"; exit 1; }
    t2=$(now)
    echo "cargo test from scratch: $(secs "$t0" "$t2") s (build $(secs "$t0" "$t1") s, tests $(secs "$t1" "$t2") s)"
fi
if has clippy; then
    t0=$(now)
    CARGO_TARGET_DIR=$scratch/clippy cargo clippy --workspace --all-targets --locked --quiet -- -D warnings
    echo "cargo clippy --all-targets from scratch: $(secs "$t0" "$(now)") s"
fi
if has verdicts; then
    t0=$(now)
    "$bin" validate --uncertainty 200 >/dev/null 2>&1 || true
    echo "irqlab validate --uncertainty 200 (the full verdict snapshot's run): $(secs "$t0" "$(now)") s"
fi
