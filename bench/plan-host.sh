#!/bin/sh
# `irqlab plan affinity --host` on fake hosts of 8,192, 16,384 and 65,536 CPUs (issue 37, item 7:
# it was quadratic in the CPU count). The trees are built by crates/cli/benches/plan_host.rs
# (FakeHost::large: 8 sockets, SMT 2, an L3 per socket, NICs of 64, 128 and 256 queues); each
# size runs RUNS times (default 5) and the median, fastest and slowest wall times are printed
# with the machine, which may be shared. The 65,536-CPU tree holds ~720,000 files (~3 GiB on
# ext4) while it runs.
# Usage: [RUNS=N] [SOCKETS=S] [TIMEOUT_S=T] [IRQLAB=other-binary] bench/plan-host.sh [CPUS...]
set -eu
cd "$(dirname "$0")/.."
exec cargo bench -q -p irqlab --bench plan_host -- "$@"
