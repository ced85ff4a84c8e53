#!/usr/bin/env bash
# The demonstration: on a fresh Debian 12 machine (as root) install what vecring
# needs, build it, and run a host<->container link benchmark: a master on
# the host sends to a slave in its own namespaces, size by size.
#
# With --forward, the forwarding benchmark instead: the far side runs in a
# real LXC container and sends every frame back, with RFC 2544 searches and
# latency histograms; add --ports vecring,memif to compare DPDK's
# eth_vecring with net_memif in the same harness. Every other option is
# `vecring-bench host-container`'s (see `vecring-bench host-container
# --help`): the benchmark harness, a binary of the lab's crate (benches/),
# not of the shipped tool.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CARGO_TERM_COLOR=never
cargo build --release -q -p vecring-benches --bin vecring-bench
if [[ " $* " == *" --forward "* ]]; then
	# The DPDK side of the forwarding benchmark: the driver where EAL's -d
	# accepts it, and the DPDK traffic agent beside the harness.
	bash scripts/build-pmd.sh /usr >/dev/null
	bash benches/dpdk-agent/build.sh >/dev/null
fi
exec ./target/release/vecring-bench host-container "$@"
