#!/bin/sh
# Builds the DPDK traffic agent benches/fwdgen/fwdgen.c into
# target/release/vecring-fwdgen (against the system's DPDK, through
# pkg-config) and prints the binary's path.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/target/release/vecring-fwdgen
mkdir -p "$ROOT/target/release"
# shellcheck disable=SC2046 # pkg-config's output is a list of words
cc -O2 -Wall -Wextra -Werror $(pkg-config --cflags libdpdk) \
	-o "$OUT" "$ROOT/benches/fwdgen/fwdgen.c" \
	$(pkg-config --libs libdpdk) -lm
echo "$OUT"
