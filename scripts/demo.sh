#!/usr/bin/env bash
# The main job: on a fresh Debian 12 machine (as root) install what vecring
# needs, build it, and run a host<->container link benchmark: a master on
# the host sends to a slave in its own namespaces, size by size.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CARGO_TERM_COLOR=never
cargo build --release -q -p vecring-cli
exec ./target/release/vecring bench "$@"
