#!/usr/bin/env bash
# Runs the whole vecring test suite on a fresh Debian 12 machine (as root):
# installs what the tests need, then unit, integration, loom, DPDK and
# container tests, the fuzz targets (half a minute each), then the lint
# gates.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# Tests that cover hugepages fail without them rather than pass on 4 KiB
# pages; VECRING_TEST_NO_HUGE=1 runs without them on purpose (those tests
# then say SKIPPED).
free_huge=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${VECRING_TEST_NO_HUGE:-0}" != 1 ] && [ "${free_huge:-0}" -lt 512 ]; then
  echo "vecring tests: ${free_huge:-0} free 2 MiB hugepages after scripts/setup.sh, 512 needed;" >&2
  echo "  free memory and run again, or set VECRING_TEST_NO_HUGE=1 to skip what needs them" >&2
  exit 1
fi

export CARGO_TERM_COLOR=never
# The suite checks behaviour, never speed: its release builds skip the
# link-time optimisation, codegen in one unit and full debug information
# of the shipped profile, which took 8 of its minutes on two CPUs (the
# workspace and some 45 test binaries; 2.5 minutes without). The driver
# and tool it installs are therefore built this way too; scripts/demo.sh
# and the benchmarks build with the shipped profile.
export CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  CARGO_PROFILE_RELEASE_DEBUG=line-tables-only
# Each step says when it starts (seconds since the suite began).
step() { echo; echo "== [$SECONDS s] $* =="; }

step "build (the integration tests run the built vecring tool and PMD)"
cargo build --release --workspace

# EAL refuses plugins under a world-writable directory (a checkout under
# /tmp would be): every test loads the driver installed in DPDK's driver
# directory (also /usr/local/lib/vecring/librte_net_vecring.so).
export VECRING_PMD_SO
VECRING_PMD_SO=$(bash scripts/build-pmd.sh /usr)
# The DPDK agent of the forwarding benchmark (beside the benchmark harness,
# target/release/vecring-bench).
bash benches/dpdk-agent/build.sh
# pktgen-dpdk for DPDK 22.11, built once from its release source
# (VECRING_PKTGEN_SOURCES: a directory of pktgen-<tag>.tar.xz) into
# /opt/vecring/pktgen-22.11, for the DPDK group pktgen and the Docker case
# pktgen (which ask scripts/pktgen.sh for it again, and get this build).
bash scripts/pktgen.sh /usr >/dev/null

# The other DPDK lines the driver supports, built once from their release
# sources into /opt/vecring/dpdk-<line> (VECRING_DPDK_SOURCES: a directory of
# dpdk-<version>.tar.xz from https://fast.dpdk.org/rel/), each with the
# driver built for it. By default the two maintained long-term lines;
# VECRING_TEST_LINES="23.11 24.11 25.11" adds 23.11, "" leaves them out,
# loudly.
LINES=${VECRING_TEST_LINES-24.11 25.11}
step "DPDK lines ${LINES:-(none: VECRING_TEST_LINES is empty)}: DPDK built once per line, the driver and pktgen for each"
for line in $LINES; do
  prefix=$(bash scripts/dpdk.sh "$line")
  bash scripts/build-pmd.sh "$prefix"
  bash scripts/pktgen.sh "$prefix" >/dev/null
done

step "unit, integration and doc tests, and every command the documents show (release: the stress tests move 10M frames)"
cargo test --release --workspace --no-fail-fast

step "the core's unit tests in the dev profile: debug assertions and overflow checks on the ring, the handshake and the region"
cargo test -p vecring-core --lib

step "the ring's unit tests on the heap under Miri (undefined behaviour, out-of-bounds and uninitialised reads in the unsafe code; long cases run a tenth of their rounds)"
cargo +nightly miri --version >/dev/null 2>&1 || rustup component add --toolchain nightly miri rust-src
MIRIFLAGS="-Zmiri-disable-isolation" CARGO_TARGET_DIR=target/miri \
  timeout --kill-after=30s 15m cargo +nightly miri test -p vecring-core --lib ring::tests::heap

step "the tokio example: a Receiver registered with AsyncFd sleeps in the reactor and wakes for each frame, through a link down and up"
timeout --kill-after=10s 60s cargo run --release -p vecring-core --example tokio_recv

step "DPDK: librte_net_vecring.so inside dpdk-testpmd, and pktgen on the host and in an LXC container"
bash tests/dpdk/run.sh

if [ -n "$LINES" ]; then
  step "DPDK lines $LINES: the core set on each line's own testpmd, the C API against each, and links between lines (22.11 included) in both roles"
  bash tests/dpdk/lines.sh $LINES
else
  step "DPDK lines: LEFT OUT (VECRING_TEST_LINES is empty); only DPDK 22.11 was tested"
fi

step "Open vSwitch with DPDK: two LXC containers on eth_vecring ports of a private OVS (traffic both ways with exact counts, kill -9 of a peer, ovs-vswitchd restart, MTU 9000, two queues, del-port/add-port)"
bash tests/ovs/run.sh

step "Docker (a private dockerd): testpmd in containers of the image scripts/image.sh makes (imported and built), with no capability, no root, no hugepages and no network, against a testpmd on the host both ways and forwarding back to it, a wrong owner= refused, through Open vSwitch, under userns-remap; the vecring tool's slave under a memory limit below the link's size and a hugetlb limit of 0 (about 45 s); pktgen on the host and in a container both ways (about 40 s)"
bash tests/containers/docker.sh

step "Podman: the vecring tool's links into rootful and rootless containers (the user's own master, a root master with --owner, --userns=keep-id), and a container that needs nothing but the link (no capability, non-root, no hugepages, hugetlb limit 0, memory below the region's size), exact counts; pktgen on the host and in a rootless container both ways (about 40 s)"
bash tests/containers/podman.sh

step "systemd: the TAP bridge's unit template and the tmpfiles entries under a real systemd, PID 1 of a Podman container booted twice (two instances bring a link's carriers on; CAP_NET_ADMIN alone, a read-only file system; a clean stop; a domain declared with prepare --persist made again at boot before its bridge starts)"
bash tests/systemd/run.sh

step "Debian packages (scripts/deb.sh) on a clean Debian 12 root (mmdebstrap) in a container with no network: dpkg -i, what dpkg lists, testpmd finds eth_vecring with no -d and receives the packaged tool's frames, vecring doctor, man pages and completions, a C program built with pkg-config vecring, and a purge that leaves no file behind (about 90 s)"
bash tests/packages.sh

step "loom models of the ring's index protocol and of its sleep/wake protocol (preemption bound 3; about two minutes, the timeout only stops a hang)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test --release -p vecring-core --test loom --test loom_wake --no-run
LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  timeout --kill-after=30s 10m cargo test --release -p vecring-core --test loom --test loom_wake

step "loom models that must fail: each Acquire/Release of the descriptors' stamps and of tail made Relaxed, each Acquire fence removed, a batch published first frame first, each SeqCst fence of the wait protocol removed, the hold-back broken two ways, every wait a nap"
bash scripts/loom-weaken.sh

step "fuzzing: the handshake parser and receive, a region header at attach, and the ring endpoints over hostile memory (cargo fuzz, 30 s per target)"
bash scripts/fuzz.sh 30

step "lint gates: formatting, clippy, the documentation (the library crates' private items too), the driver's import layers, and the library crates' public API against their last release by semver (docs/api.md)"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo +nightly fmt --manifest-path fuzz/Cargo.toml -- --check
cargo +nightly clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --document-private-items \
  -p vecring-abi -p vecring-core -p vecring-ffi -p vecring-pmd
bash scripts/pmd-layers.sh
bash scripts/ring-map.sh
python3 -B scripts/api/test_api.py
VECRING_API_LIB=target/release/libvecring.so bash scripts/api.sh
VECRING_API_LIB=target/release/libvecring.so bash scripts/api-breaks.sh

step "crates: what crates.io would get of the library crates (their files and metadata, built from the packages), and the crates users build checked with the minimum Rust version the workspace states"
cargo package -p vecring-abi -p vecring-core -p vecring-ffi --allow-dirty
bash scripts/msrv.sh

echo
echo "vecring: all tests passed in $SECONDS s"
