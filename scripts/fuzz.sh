#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 120), one
# after another on one core, and prints a table of executions and crashes
# per target. Exits non-zero if any target crashed (a panic, a broken
# property, a sanitizer report, a timeout or an out-of-memory); the input
# that did it is in fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly --profile minimal
#   cargo install cargo-fuzz
# The seed corpus (fuzz/corpus/<target>/, not versioned) is written from the
# library's seed inputs on the first run; runs after that start from the
# corpus the earlier ones grew. Logs go to fuzz/logs/<target>.log.
# For a long run, give more seconds: `scripts/fuzz.sh 3600` is an hour per
# target.
set -euo pipefail
seconds="${1:-120}"
shift || true
cd "$(dirname "$0")/../fuzz"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ubt-fuzz-target}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

if [ ! -d corpus ]; then
    cargo +nightly run --quiet --release --example write_seeds
fi
# Debug assertions on: the store's invariant checks run under the fuzzer.
cargo +nightly fuzz build --debug-assertions

mkdir -p logs
total=0
crashed=0
printf '%-16s %14s %8s %8s\n' target executions seconds crashes
for target in "${targets[@]}"; do
    log="logs/$target.log"
    mkdir -p "corpus/$target"
    status=0
    cargo +nightly fuzz run --debug-assertions "$target" -- \
        -max_total_time="$seconds" -timeout=60 \
        -print_final_stats=1 >"$log" 2>&1 || status=$?
    # The final stats line; a run that crashed before it has the last
    # progress line (`#N ...`) instead.
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ -z "$execs" ]; then
        execs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
    fi
    execs="${execs:-0}"
    crashes=0
    if [ "$status" -ne 0 ]; then
        crashes=1
        crashed=$((crashed + 1))
    fi
    total=$((total + execs))
    printf '%-16s %14s %8s %8s\n' "$target" "$execs" "$seconds" "$crashes"
done
printf '%-16s %14s %8s %8s\n' total "$total" '' "$crashed"
if [ "$crashed" -ne 0 ]; then
    echo "fuzz: $crashed target(s) crashed; see fuzz/logs/ and fuzz/artifacts/" >&2
    exit 1
fi
