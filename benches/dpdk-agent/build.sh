#!/bin/sh
# Builds the DPDK agent benches/dpdk-agent/*.c into
# target/release/vecring-dpdk-agent (against the system's DPDK, through
# pkg-config) and prints the binary's path. Link-time optimisation lets the
# send loop (trial.c) inline the receive path (counts.c) across files.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/target/release/vecring-dpdk-agent
mkdir -p "$ROOT/target/release"
# shellcheck disable=SC2046 # pkg-config's output is a list of words
cc -O2 -flto -Wall -Wextra -Werror $(pkg-config --cflags libdpdk) \
	-o "$OUT" "$ROOT"/benches/dpdk-agent/*.c \
	$(pkg-config --libs libdpdk) -lm
echo "$OUT"
