#!/usr/bin/env bash
# Builds eth_vecring (librte_net_vecring.so) against the DPDK installed at
# PREFIX, installs it into that DPDK's driver directory (pmds-<ABI>), where
# EAL loads it by itself, and prints the installed path.
#
#   scripts/build-pmd.sh PREFIX        e.g. /usr, or $(scripts/dpdk.sh 24.11)
#
# The driver is built the way out-of-tree DPDK drivers are: against whatever
# `pkg-config libdpdk` finds in PREFIX, with that line's headers (the
# differences between lines live in vecring-pmd/src/sys/compat.rs). Each line
# has its own cargo target directory (target/dpdk-<line>; the distribution's
# DPDK uses target/ itself), so switching lines does not rebuild.
#
# For the distribution's DPDK (PREFIX /usr) the installed driver is also
# reachable as /usr/local/lib/vecring/librte_net_vecring.so, the path the
# documents give to EAL's -d (the same file, so EAL never loads it twice).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "vecring-build-pmd: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: scripts/build-pmd.sh PREFIX   (the DPDK install to build against, e.g. /usr)"
prefix=${1%/}
[ -n "$prefix" ] || prefix=/

pc=
for d in "$prefix/lib/pkgconfig" "$prefix/lib/x86_64-linux-gnu/pkgconfig" "$prefix/lib64/pkgconfig"; do
  [ -f "$d/libdpdk.pc" ] && { pc=$d; break; }
done
[ -n "$pc" ] || die "no libdpdk.pc under $prefix (give a DPDK install prefix; scripts/dpdk.sh VERSION prints one)"
export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
version=$(pkg-config --modversion libdpdk)
libdir=$(pkg-config --variable=libdir libdpdk)
line=$(echo "$version" | cut -d. -f1-2)

if [ "$prefix" = /usr ]; then
  target=target
else
  target="target/dpdk-$line"
fi
echo "vecring-build-pmd: building against DPDK $version ($pc)" >&2
CARGO_TARGET_DIR="$target" cargo build --release -p vecring-pmd >&2

# The driver directory EAL scans (RTE_EAL_PMD_PATH): libdir/dpdk/pmds-<ABI>.
pmds=$(find "$libdir/dpdk" -maxdepth 1 -type d -name 'pmds-*' 2>/dev/null | sort -V | tail -n1)
[ -n "$pmds" ] || die "DPDK $version at $prefix has no driver directory ($libdir/dpdk/pmds-*)"
so="$pmds/librte_net_vecring.so"
install -m 0644 "$target/release/librte_net_vecring.so" "$so.new"
mv -f "$so.new" "$so"
if [ "$prefix" = /usr ]; then
  install -d -m 0755 /usr/local/lib/vecring
  ln -sfn "$so" /usr/local/lib/vecring/librte_net_vecring.so
fi
echo "$so"
