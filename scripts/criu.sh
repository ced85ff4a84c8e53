#!/usr/bin/env bash
# Builds CRIU once and prints the path of its binary.
#
#   scripts/criu.sh
#
# Debian 12's CRIU (3.17.1) cannot run on kernels from 6.13 on: they map
# the vDSO's clock pages apart ([vvar_vclock]) and its `criu check` fails
# with "vdso: Failed to fill self vdso symtable"; CRIU learned that mapping
# in 4.1. This builds the CRIU of Debian 13 (4.1.1) from its source in the
# Debian archive (deb.debian.org, the checksum below checked), with Debian
# 12's build dependencies, into /opt/vecring/criu-4.1.1/sbin/criu
# (VECRING_DPDK_ROOT overrides /opt/vecring, as for the DPDK lines); a
# second call only prints the path. Only the `criu` binary is built (no
# crit, library or manual pages).
#
# runc and crun run `criu` from the PATH: put the directory first
# (PATH=$(dirname "$(scripts/criu.sh)"):$PATH) for `podman container
# checkpoint --runtime runc`.
#
# Progress goes to stderr; stdout is only the binary's path.
set -euo pipefail

VERSION=4.1.1
SHA256=f80a66cb3726bb2116266d4759ce3bcbfab7abdb6b6d430bf20dd41911717afe
URL=http://deb.debian.org/debian/pool/main/c/criu/criu_$VERSION.orig.tar.xz
ROOT=${VECRING_DPDK_ROOT:-/opt/vecring}
PREFIX=$ROOT/criu-$VERSION
BIN=$PREFIX/sbin/criu

log() { echo "vecring-criu: $*" >&2; }
die() { log "$*"; exit 1; }

if [ -x "$BIN" ]; then
	echo "$BIN"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "building CRIU needs root (apt-get install, $ROOT)"
deps=(build-essential pkg-config curl xz-utils libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev
	protobuf-compiler python3-protobuf libnet1-dev libcap-dev libnl-3-dev libnl-route-3-dev
	libbsd-dev libgnutls28-dev uuid-dev libaio-dev)
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
		die "apt-get install ${missing[*]} failed"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/vecring-criu.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "fetching $URL"
curl -fsSL --retry 3 -m 300 -o "$work/criu.tar.xz" "$URL" || die "cannot fetch $URL"
echo "$SHA256  $work/criu.tar.xz" | sha256sum -c --quiet - >&2 || die "checksum of $URL differs"
tar -C "$work" -xJf "$work/criu.tar.xz"
src=$(find "$work" -maxdepth 1 -type d -name "criu-*" | head -n1)
[ -n "$src" ] || die "no criu-* directory in the tarball"
log "building criu $VERSION in $src (a few minutes on 2 CPUs)"
if ! make -C "$src" -j"$(nproc)" criu >"$work/build.log" 2>&1; then
	tail -n 30 "$work/build.log" >&2
	die "make criu failed"
fi
install -D -m 0755 "$src/criu/criu" "$BIN"
log "installed $BIN"
echo "$BIN"
