#!/usr/bin/env bash
# Gives a DPDK line to build eth_vecring against and prints its prefix.
#
#   scripts/dpdk.sh VERSION [SOURCE]
#
# VERSION is a release line (22.11, 23.11, 24.11, 25.11) or a full release
# (24.11.6). For 22.11 the distribution's DPDK is used (Debian 12's packages,
# with the driver-SDK headers `scripts/setup.sh` takes from Debian's source
# package) and the prefix printed is /usr. For any other line the release
# source is built once, with the driver SDK and shared libraries, into
# /opt/vecring/dpdk-<line> (VECRING_DPDK_ROOT overrides /opt/vecring); a second
# call with the same source only prints the prefix.
#
# SOURCE is a release tarball (dpdk-24.11.6.tar.xz, from
# https://fast.dpdk.org/rel/) or an unpacked source directory. Without it the
# newest dpdk-<line>*.tar.xz in $VECRING_DPDK_SOURCES is taken, or, with
# none there, the line built earlier.
#
# Progress goes to stderr; stdout is only the prefix, so that
#   prefix=$(scripts/dpdk.sh 24.11) && scripts/build-pmd.sh "$prefix"
# works.
set -euo pipefail

die() { echo "vecring-dpdk: $*" >&2; exit 1; }
log() { echo "vecring-dpdk: $*" >&2; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: scripts/dpdk.sh VERSION [SOURCE]   (VERSION: 22.11, 23.11, 24.11, 25.11)"
version=$1
source=${2:-}
[[ "$version" =~ ^([0-9]{2})\.([0-9]{2})(\.[0-9]+)?$ ]] || die "'$version' is not a DPDK version (YY.MM or YY.MM.N, e.g. 24.11)"
line="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

if [ "$line" = 22.11 ] && [ -z "$source" ]; then
  # The distribution's line: setup.sh installs it and its SDK headers.
  pkg-config --exists libdpdk 2>/dev/null || die "DPDK 22.11 is not installed: run scripts/setup.sh first"
  have=$(pkg-config --modversion libdpdk)
  [ "${have%.*}" = 22.11 ] || die "the distribution's DPDK is $have, not 22.11"
  echo /usr
  exit 0
fi

root=${VECRING_DPDK_ROOT:-/opt/vecring}
prefix="$root/dpdk-$line"

stamp="$prefix/.vecring-build"
if [ -z "$source" ]; then
  dir=${VECRING_DPDK_SOURCES:-}
  if [ -f "$stamp" ] && [ -f "$prefix/lib/pkgconfig/libdpdk.pc" ] &&
    ! find "${dir:-/nonexistent}" -maxdepth 1 -name "dpdk-$version*.tar.xz" 2>/dev/null | grep -q .; then
    # No source named and none at hand: the line built earlier serves.
    echo "$prefix"
    exit 0
  fi
  [ -n "$dir" ] || die "no source for DPDK $line: give a release tarball or directory, or set VECRING_DPDK_SOURCES to a directory of dpdk-<version>.tar.xz (https://fast.dpdk.org/rel/)"
  source=$(find "$dir" -maxdepth 1 -name "dpdk-$version*.tar.xz" -printf '%f\n' 2>/dev/null | sort -V | tail -n1)
  [ -n "$source" ] || die "no dpdk-$version*.tar.xz in $dir"
  source="$dir/$source"
fi
[ -e "$source" ] || die "$source does not exist"
source=$(readlink -f "$source")

# Only what eth_vecring and its tests use: the vdev bus, the ring mempool,
# the peers (net_null, net_memif, net_ring, virtio-user, vhost), testpmd,
# proc-info and dumpcap, and lpm, which pktgen includes (scripts/pktgen.sh;
# its other libraries are among DPDK's always-enabled ones). Shared libraries, so that testpmd loads drivers with
# -d; an rpath, so that the prefix's programs find their own libraries.
options=(
  --prefix="$prefix" --libdir=lib --buildtype=release
  -Ddefault_library=shared
  -Denable_driver_sdk=true
  -Dtests=false -Denable_docs=false -Dexamples=
  -Denable_apps=test-pmd,proc-info,dumpcap
  -Denable_drivers=bus/pci,bus/vdev,mempool/ring,net/null,net/memif,net/ring,net/virtio,net/vhost
  -Denable_libs=vhost,cryptodev,dmadev,pdump,pcapng,bpf,gro,gso,metrics,bitratestats,latencystats,security,eventdev,timer,pci,lpm
  -Dc_link_args="-Wl,-rpath,$prefix/lib"
)

# What identifies a build: the source (its checksum, or the directory's path
# and newest file) and the options above.
if [ -f "$source" ]; then
  ident=$(sha256sum "$source" | cut -d' ' -f1)
else
  ident="$source $(find "$source" -type f -newer "$source/meson.build" -printf '%T@\n' 2>/dev/null | sort -n | tail -n1)"
fi
ident="$ident ${options[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$ident" ] && [ -f "$prefix/lib/pkgconfig/libdpdk.pc" ]; then
  echo "$prefix"
  exit 0
fi

# Build tools of DPDK (Debian 12 packages).
need=()
for p in meson ninja-build python3-pyelftools libnuma-dev libpcap-dev pkg-config build-essential; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ "${#need[@]}" -gt 0 ]; then
  log "installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi

work="$root/build/dpdk-$line"
rm -rf "$work"
mkdir -p "$work"
if [ -f "$source" ]; then
  log "unpacking $source"
  tar -xf "$source" -C "$work" --strip-components=1
  src="$work"
else
  src="$source"
fi
have=$(cat "$src/VERSION" 2>/dev/null) || die "$source is not a DPDK source (no VERSION file)"
[ "${have%.*}" = "$line" ] || [ "$have" = "$line" ] || die "$source is DPDK $have, not $line"

log "building DPDK $have into $prefix (a minute or two)"
# meson runs python3 from PATH: take the distribution's, which has pyelftools.
export PATH="/usr/bin:$PATH"
rm -rf "$prefix"
meson setup "$work/build" "$src" "${options[@]}" \
  >"$work/meson.log" 2>&1 \
  || { tail -n 30 "$work/meson.log" >&2; die "meson setup failed (log: $work/meson.log)"; }
ninja -C "$work/build" >"$work/ninja.log" 2>&1 \
  || { tail -n 30 "$work/ninja.log" >&2; die "build failed (log: $work/ninja.log)"; }
ninja -C "$work/build" install >"$work/install.log" 2>&1 \
  || { tail -n 30 "$work/install.log" >&2; die "install failed (log: $work/install.log)"; }
[ -f "$prefix/include/ethdev_driver.h" ] || die "the install has no driver-SDK headers ($prefix/include/ethdev_driver.h)"
rm -rf "$work"
echo "$ident" >"$stamp"
log "DPDK $have installed in $prefix"
echo "$prefix"
