#!/usr/bin/env bash
# The mutation baseline (cargo-mutants) of the code that decides when a
# side waits and what the driver streams, attaches and gives back: each
# mutant is built and the tests named for its group run against it; a
# mutant they pass is "missed". docs/mutants.md keeps the counts and what
# the missed ones are.
#
#   bash scripts/mutants.sh [GROUP...]     (default: unit loom pmd)
#
#   unit  the wait protocol, the sleep decisions, the hold-back and the
#         link's waiting (vecring-core) against the core's unit tests
#   loom  the mutants of the wait protocol the unit tests missed, against
#         the loom models of sleep and wake (two preemptions)
#   pmd   the driver's zero-copy reclaim and queue set
#         against the driver's unit tests (the DPDK tests that cover them
#         need root and testpmd: tests/dpdk_rx.rs, tests/dpdk_interop.rs)
#
# Results in target/mutants/<group>/mutants.out (caught.txt, missed.txt).
# Needs cargo-mutants (`cargo install --locked cargo-mutants`); about 25
# minutes on two CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
out=$PWD/target/mutants
jobs=${MUTANTS_JOBS:-2}
# The wait protocol (ring/wait.rs) and a ring end's sleep decisions, which
# sit with the rest of its methods in producer.rs and consumer.rs (only
# those functions are mutated there: --re).
WAIT_FILES=(-f vecring-core/src/ring/wait.rs -f vecring-core/src/ring/producer.rs -f vecring-core/src/ring/consumer.rs)
WAIT_ONLY='ring/wait.rs|prepare_wait|cancel_wait|has_room|peer_present'
[ $# -gt 0 ] || set -- unit loom pmd

# cargo-mutants exits 2 when some mutants were missed: a result, not a
# failure; anything else (the unmutated tree failing its tests) stops here.
mutants() {
  local rc=0
  cargo mutants "$@" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || exit "$rc"
}

for group in "$@"; do
  mkdir -p "$out/$group"
  case $group in
  unit)
    mutants -p vecring-core "${WAIT_FILES[@]}" \
      -f vecring-core/src/ring/hold_back.rs -f vecring-core/src/link/wait_set.rs \
      -f vecring-core/src/link/blocking.rs --re "$WAIT_ONLY|hold_back.rs|wait_set.rs|blocking.rs" \
      --timeout 60 --jobs "$jobs" -o "$out/unit" -- --lib
    ;;
  loom)
    # The unit group's survivors in the wait protocol: --iterate skips
    # what an earlier run in the same directory caught.
    mkdir -p "$out/loom"
    if [ -d "$out/unit/mutants.out" ]; then
      rm -rf "$out/loom/mutants.out"
      cp -r "$out/unit/mutants.out" "$out/loom/"
    fi
    RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
      mutants -p vecring-core "${WAIT_FILES[@]}" --re "$WAIT_ONLY" --iterate \
      --timeout 300 --jobs "$jobs" -o "$out/loom" -- --release --test loom_wake
    ;;
  pmd)
    # Zero-copy reclaim and the queue set.
    mutants -p vecring-pmd \
      -f vecring-pmd/src/datapath/zerocopy.rs -f vecring-pmd/src/port/queue_set.rs \
      --re 'datapath/zerocopy.rs|port/queue_set.rs' \
      --timeout 120 --jobs "$jobs" -o "$out/pmd" -- --lib
    ;;
  *)
    echo "mutants: unknown group $group (unit, loom, pmd)" >&2
    exit 2
    ;;
  esac
  for kind in caught missed unviable timeout; do
    printf '%s %s=%s ' "$group" "$kind" "$(wc -l <"$out/$group/mutants.out/$kind.txt" 2>/dev/null || echo 0)"
  done
  echo
done
