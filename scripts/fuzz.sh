#!/usr/bin/env bash
# Runs every cargo fuzz target (fuzz/fuzz_targets/) for a bounded time,
# starting from the corpus kept in fuzz/corpus/<target>. That corpus is only
# read: new inputs go to a scratch directory. Fails on the first crash,
# panic, per-input timeout or leak; libFuzzer leaves the input that did it
# in fuzz/artifacts/<target>/ (reproduce with
# `cargo +nightly fuzz run -a <target> <file>`).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 50)
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-50}"
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz

# With debug assertions (-a): overflow checks and debug_assert! run too, so
# arithmetic that a hostile input could wrap is caught where it happens.
cargo +nightly fuzz build -a
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for target in $(cargo +nightly fuzz list); do
  mkdir -p "$scratch/$target"
  echo "fuzz: $target for ${secs} s"
  if ! cargo +nightly fuzz run -a "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
      -max_total_time="$secs" -timeout=10 -print_final_stats=1 >"$scratch/$target.log" 2>&1; then
    # The panic's message first (a backtrace can push it out of the tail).
    grep -A 2 -m 3 -E 'panicked at|ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)' "$scratch/$target.log" || true
    tail -n 40 "$scratch/$target.log"
    echo "fuzz: $target FAILED (input kept in fuzz/artifacts/$target/)"
    exit 1
  fi
  grep -E '^stat::(number_of_executed_units|new_units_added)|^Done' "$scratch/$target.log" || true
done
