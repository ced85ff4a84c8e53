#!/usr/bin/env bash
# Installs vecring's C library: libvecring.so, libvecring.a, vecring.h and
# vecring.pc (from vecring.pc.in, with the right prefix).
#
# Usage: vecring-ffi/install.sh [--prefix DIR] [--libdir DIR] [--includedir DIR]
#                               [--destdir DIR] [--target-dir DIR] [--no-build]
#   --prefix      installation prefix (default /usr/local)
#   --libdir      default PREFIX/lib
#   --includedir  default PREFIX/include
#   --destdir     staging root prepended to every path (packaging)
#   --target-dir  where the built libraries are (default <repo>/target/release)
#   --no-build    do not run `cargo build --release -p vecring-ffi` first
#
# Then: PKG_CONFIG_PATH=LIBDIR/pkgconfig pkg-config --cflags --libs vecring
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=/usr/local
libdir=
includedir=
destdir=
target=$ROOT/target/release
build=1

while [ $# -gt 0 ]; do
	case $1 in
	--prefix) prefix=$2; shift 2 ;;
	--libdir) libdir=$2; shift 2 ;;
	--includedir) includedir=$2; shift 2 ;;
	--destdir) destdir=$2; shift 2 ;;
	--target-dir) target=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "install.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
libdir=${libdir:-$prefix/lib}
includedir=${includedir:-$prefix/include}
for d in "$prefix" "$libdir" "$includedir"; do
	case $d in
	/*) ;;
	*) echo "install.sh: '$d' is not an absolute path" >&2; exit 2 ;;
	esac
done

if [ "$build" = 1 ]; then
	(cd "$ROOT" && cargo build --release -p vecring-ffi)
fi
for f in libvecring.so libvecring.a; do
	[ -f "$target/$f" ] || { echo "install.sh: $target/$f is missing (build vecring-ffi first)" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n1)
[ -n "$version" ] || { echo "install.sh: no version in $ROOT/Cargo.toml" >&2; exit 1; }

install -d "$destdir$libdir/pkgconfig" "$destdir$includedir"
install -m 0755 "$target/libvecring.so" "$destdir$libdir/libvecring.so"
install -m 0644 "$target/libvecring.a" "$destdir$libdir/libvecring.a"
install -m 0644 "$ROOT/vecring-ffi/include/vecring.h" "$destdir$includedir/vecring.h"
sed -e "s|@PREFIX@|$prefix|g" -e "s|@LIBDIR@|$libdir|g" \
	-e "s|@INCLUDEDIR@|$includedir|g" -e "s|@VERSION@|$version|g" \
	"$ROOT/vecring-ffi/vecring.pc.in" >"$destdir$libdir/pkgconfig/vecring.pc"
chmod 0644 "$destdir$libdir/pkgconfig/vecring.pc"
# The dynamic loader's cache, so that programs find libvecring.so without
# LD_LIBRARY_PATH (not for staged installs, which a package manager does).
if [ -z "$destdir" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then
	ldconfig
fi
echo "installed vecring $version: $destdir$libdir/libvecring.{so,a}, $destdir$includedir/vecring.h, $destdir$libdir/pkgconfig/vecring.pc"
