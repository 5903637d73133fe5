#!/usr/bin/env bash
# Fuzz each target for a bounded time (README.md):
#
#   fuzz/run.sh [--libfuzzer | --stable] [--seconds N] [TARGET...]
#
# Every target (`cargo run -p irqlab-fuzz -- list`) unless some are named, N seconds each (60 by
# default). The engine: libFuzzer through cargo-fuzz on the nightly toolchain where both are
# installed (coverage-guided: what to run for a while on a workstation), else the stable runner
# (the committed corpus replayed, then mutated at random: what CI runs, `.ci/run`). It says
# which it used. A crash is saved under fuzz/artifacts/TARGET/ and printed; the exit status is
# then 1. New inputs libFuzzer finds go to fuzz/new/TARGET/ (not committed: minimise them with
# `cargo fuzz cmin` before adding any to fuzz/corpus/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."

engine=auto
seconds=60
targets=()
while (($#)); do
    case $1 in
        --libfuzzer) engine=libfuzzer ;;
        --stable) engine=stable ;;
        --seconds)
            seconds=${2:?--seconds needs a number}
            shift
            ;;
        -h | --help)
            sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            echo "fuzz/run.sh: unknown flag $1 (--libfuzzer, --stable, --seconds N)" >&2
            exit 2
            ;;
        *) targets+=("$1") ;;
    esac
    shift
done
[[ $seconds =~ ^[0-9]+$ ]] || {
    echo "fuzz/run.sh: --seconds takes a whole number, not '$seconds'" >&2
    exit 2
}

have_libfuzzer() {
    cargo +nightly --version >/dev/null 2>&1 && cargo fuzz --version >/dev/null 2>&1
}
case $engine in
    auto) if have_libfuzzer; then engine=libfuzzer; else engine=stable; fi ;;
    libfuzzer)
        have_libfuzzer || {
            echo "fuzz/run.sh: --libfuzzer needs the nightly toolchain and cargo-fuzz (rustup toolchain install nightly; cargo install cargo-fuzz --locked)" >&2
            exit 2
        }
        ;;
esac

# The stable runner: a debug build, so that arithmetic overflows panic as they would in tests.
runner() { cargo run -q --locked -p irqlab-fuzz -- "$@"; }
if ((${#targets[@]} == 0)); then
    mapfile -t targets < <(runner list)
fi

echo "fuzz: engine $engine, ${seconds} s per target: ${targets[*]}"
failed=()
for t in "${targets[@]}"; do
    rc=0
    if [[ $engine == libfuzzer ]]; then
        mkdir -p "fuzz/new/$t"
        # Safe Rust: the sanitizers would find nothing the panics do not, at twice the cost.
        # -timeout: an input that takes 10 s is a hang, reported as a crash.
        (cd fuzz && cargo +nightly fuzz run --sanitizer none "$t" "new/$t" "corpus/$t" -- \
            -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1) || rc=$?
    else
        # The bound is the runner's; `timeout` only catches a hang (an input that never ends).
        timeout $((seconds + 120)) cargo run -q --locked -p irqlab-fuzz -- \
            run "$t" --seconds "$seconds" || rc=$?
    fi
    if ((rc != 0)); then
        echo "fuzz: $t FAILED (exit $rc, engine $engine)"
        failed+=("$t")
    fi
done
if ((${#failed[@]})); then
    echo "fuzz: failed: ${failed[*]} (inputs under fuzz/artifacts/; repeat one with: cargo run -p irqlab-fuzz -- replay TARGET FILE)"
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s each (engine $engine): no crash"
