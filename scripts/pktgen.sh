#!/usr/bin/env bash
# Builds pktgen-dpdk against the DPDK installed at PREFIX and prints the path
# of its binary.
#
#   scripts/pktgen.sh [PREFIX]        PREFIX: /usr (default, Debian's 22.11)
#                                     or $(scripts/dpdk.sh 24.11) and alike
#
# pktgen is built from its release source, a tarball pktgen-<tag>.tar.xz as
# `git archive --prefix=pktgen-<tag>/` makes it from pktgen's repository
# (https://github.com/pktgen/Pktgen-DPDK), found in the directory named by
# VECRING_PKTGEN_SOURCES. Each DPDK line takes the pktgen release made for it
# (the newest tarball of that release):
#
#   DPDK 22.11   pktgen-23.03.*   (23.10 needs DPDK 23.11's bonding API)
#   DPDK 23.11   pktgen-23.10.*
#   DPDK 24.11   pktgen-24.10.*
#   DPDK 25.11   pktgen-26.02.*   (its Lua header's first comment ends
#                                  early: the build mends that comment)
#
# It is built once, with Lua (pktgen's -f runs Lua scripts; the tests read
# pktgen's own counts through pktgen.portStats), warnings not errors (pktgen
# 23.03 warns on DPDK 22.11's headers) and linked to PREFIX's libraries
# (an rpath for a prefix other than /usr), into
# /opt/vecring/pktgen-<line>/bin/pktgen (VECRING_DPDK_ROOT overrides
# /opt/vecring); a second call with the same source and DPDK only prints the
# path, and without VECRING_PKTGEN_SOURCES the build made earlier serves.
#
# pktgen's EAL is PREFIX's, so it loads the drivers in that DPDK's driver
# directory by itself, eth_vecring among them once scripts/build-pmd.sh
# PREFIX has installed it there (no -d): a build whose binary links another
# librte_eal is refused.
#
# Progress goes to stderr; stdout is only the binary's path:
#   pktgen=$(scripts/pktgen.sh /usr) && "$pktgen" --no-pci --vdev=eth_vecring0,... -- -m 1.0 -f run.lua
set -euo pipefail

die() { echo "vecring-pktgen: $*" >&2; exit 1; }
log() { echo "vecring-pktgen: $*" >&2; }

[ $# -le 1 ] || die "usage: scripts/pktgen.sh [PREFIX]   (the DPDK install to build against; default /usr)"
prefix=${1:-/usr}
prefix=${prefix%/}
[ -n "$prefix" ] || prefix=/

pc=
for d in "$prefix/lib/pkgconfig" "$prefix/lib/x86_64-linux-gnu/pkgconfig" "$prefix/lib64/pkgconfig"; do
  [ -f "$d/libdpdk.pc" ] && { pc=$d; break; }
done
[ -n "$pc" ] || die "no libdpdk.pc under $prefix (give a DPDK install prefix; scripts/dpdk.sh VERSION prints one)"
export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
dpdk_version=$(pkg-config --modversion libdpdk)
libdir=$(pkg-config --variable=libdir libdpdk)
line=$(echo "$dpdk_version" | cut -d. -f1-2)

case $line in
  22.11) release=23.03 ;;
  23.11) release=23.10 ;;
  24.11) release=24.10 ;;
  25.11) release=26.02 ;;
  *) die "no pktgen release is known to build against DPDK $line (22.11, 23.11, 24.11, 25.11)" ;;
esac

root=${VECRING_DPDK_ROOT:-/opt/vecring}
dest="$root/pktgen-$line"
bin="$dest/bin/pktgen"
stamp="$dest/.vecring-build"

# The EAL a binary links to, as the loader resolves it.
eal_of() { ldd "$1" 2>/dev/null | awk '/librte_eal\.so/ {print $3; exit}'; }
# The binary must run PREFIX's EAL: that EAL's driver directory is the one
# build-pmd.sh installs eth_vecring into.
check_eal() {
  local eal
  eal=$(eal_of "$bin")
  [ -n "$eal" ] || die "$bin links no librte_eal (ldd)"
  [ "$(dirname "$(readlink -f "$eal")")" = "$(readlink -f "$libdir")" ] ||
    die "$bin runs $eal, not DPDK $dpdk_version's EAL in $libdir"
}

dir=${VECRING_PKTGEN_SOURCES:-}
source=
if [ -n "$dir" ]; then
  # (A directory that is not there holds none: find's failure is no error.)
  source=$(find "$dir" -maxdepth 1 -name "pktgen-$release.*.tar.xz" -printf '%f\n' 2>/dev/null | sort -V | tail -n1) || true
  [ -n "$source" ] && source="$dir/$source"
fi
if [ -z "$source" ]; then
  if [ -f "$stamp" ] && [ -x "$bin" ]; then
    # No source at hand: the build made earlier serves.
    check_eal
    echo "$bin"
    exit 0
  fi
  [ -n "$dir" ] || die "no source for pktgen: set VECRING_PKTGEN_SOURCES to a directory of pktgen-<tag>.tar.xz (pktgen-$release.* for DPDK $line)"
  die "no pktgen-$release.*.tar.xz in $dir (the pktgen release for DPDK $line)"
fi

options=(
  --prefix="$dest" --libdir=lib --buildtype=release
  -Dwerror=false -Denable_lua=true
  # pktgen's Lua library includes DPDK headers without declaring DPDK as
  # its dependency: give every target DPDK's include flags.
  "-Dc_args=$(pkg-config --cflags libdpdk)"
)
[ "$prefix" = /usr ] || options+=("-Dc_link_args=-Wl,-rpath,$libdir")

# What identifies a build: the source's checksum, the DPDK it is built
# against, and the options above.
ident="$(sha256sum "$source" | cut -d' ' -f1) dpdk $dpdk_version $libdir ${options[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$ident" ] && [ -x "$bin" ]; then
  check_eal
  echo "$bin"
  exit 0
fi

# pktgen's build dependencies (Debian 12 packages).
need=()
for p in meson ninja-build pkg-config build-essential libnuma-dev libpcap-dev liblua5.3-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ "${#need[@]}" -gt 0 ]; then
  log "installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi

work="$root/build/pktgen-$line"
rm -rf "$work"
mkdir -p "$work/src"
log "unpacking $source"
tar -xf "$source" -C "$work/src" --strip-components=1
have=$(cat "$work/src/VERSION" 2>/dev/null) || die "$source is not a pktgen source (no VERSION file)"
# pktgen 26.02's Lua header ends its first comment early ("setf_*/getf_*"
# holds "*/"), so that none of the Lua library compiles: the one change
# made to pktgen's source, in that comment's words only.
h="$work/src/lib/lua/lua_dpdk.h"
if [ -f "$h" ] && grep -q 'setf_\*/getf_\*' "$h"; then
  log "mending the comment of lib/lua/lua_dpdk.h that ends early (setf_*/getf_*)"
  sed -i 's|setf_\*/getf_\*|setf_* and getf_*|' "$h"
fi

log "building pktgen $have against DPDK $dpdk_version ($prefix) into $dest (half a minute)"
export PATH="/usr/bin:$PATH"
rm -rf "$dest"
meson setup "$work/build" "$work/src" "${options[@]}" >"$work/meson.log" 2>&1 \
  || { tail -n 30 "$work/meson.log" >&2; die "meson setup failed (log: $work/meson.log)"; }
grep -q "Lua enabled" "$work/meson.log" || die "pktgen's build found no Lua (liblua5.3-dev; log: $work/meson.log)"
ninja -C "$work/build" >"$work/ninja.log" 2>&1 \
  || { tail -n 30 "$work/ninja.log" >&2; die "build failed (log: $work/ninja.log)"; }
ninja -C "$work/build" install >"$work/install.log" 2>&1 \
  || { tail -n 30 "$work/install.log" >&2; die "install failed (log: $work/install.log)"; }
[ -x "$bin" ] || die "the install has no $bin"
check_eal
rm -rf "$work"
rmdir "$root/build" 2>/dev/null || true
echo "$ident" >"$stamp"
log "pktgen $have installed as $bin"
echo "$bin"
