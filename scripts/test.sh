#!/usr/bin/env bash
# Runs the whole vecring test suite on a fresh Debian 12 machine (as root):
# installs what the tests need, then unit, integration, loom, DPDK and
# container tests, then the lint gates.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

export CARGO_TERM_COLOR=never
step() { echo; echo "== $* =="; }

step "build (the integration tests run the built vecring tool and PMD)"
cargo build --release --workspace

step "unit, integration and doc tests (release: the stress tests move 10M frames)"
cargo test --release --workspace

step "DPDK: librte_net_vecring.so inside dpdk-testpmd"
VECRING_PMD_SO=target/release/librte_net_vecring.so bash tests/dpdk/run.sh

step "loom model of the ring's index protocol"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test --release -p vecring-core --test loom

step "lint gates"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

echo
echo "vecring: all tests passed"
