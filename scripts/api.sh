#!/usr/bin/env bash
# Checks the public API of the library crates against the API of their last
# release, recorded in api/<crate>.txt, by the rules of semver: an item
# removed or changed fails the check unless the crate's version in
# Cargo.toml is a breaking bump from the version the baseline is of (for
# 0.y.z a new minor: 0.1.0 -> 0.2.0); additions pass and are listed
# (scripts/api/baseline.py has the rules, docs/api.md the why).
#
#   vecring-abi   its public Rust API (the names and types of the formats;
#                 the formats themselves have their own version, see the
#                 crate's documentation), read as vecring-core's
#   vecring-core  its public Rust API, read from nightly rustdoc's JSON
#                 (scripts/api/rustdoc.py renders it, one line per item)
#   vecring-ffi   its C API: the declarations of its header
#                 (vecring-ffi/include/vecring.h) and the symbols
#                 libvecring.so exports (scripts/api/c_header.py); its Rust
#                 items only implement these
#
# Usage: scripts/api.sh [check]   check the crates (the suite's lint gates)
#        scripts/api.sh update    at a release: record the current APIs as
#                                 the baselines, of the version in Cargo.toml
#        scripts/api.sh show      print the current APIs
#
# Builds in target/api (VECRING_API_TARGET=DIR: in DIR): rustdoc's JSON,
# and the library it reads the exported symbols from, unless
# VECRING_API_LIB=FILE names one (scripts/test.sh: its release build).
# Installs the nightly toolchain with rustup (minimal profile) when it is
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."

cmd=${1:-check}
case $cmd in
check | update | show) ;;
*)
  sed -n 's/^# \{0,1\}//; /^Usage:/,/^$/p' "$0" >&2
  exit 2
  ;;
esac

rustup run nightly rustc --version >/dev/null 2>&1 ||
  rustup toolchain install nightly --profile minimal >/dev/null
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# vecring-abi and vecring-core: the JSON of their documentation, hidden
# items included (rustdoc.py leaves out what is hidden, but follows a
# visible re-export into a hidden module). A re-export of another crate's
# item is not followed: vecring-core names the ABI's limits with constants
# of its own.
target=${VECRING_API_TARGET:-$PWD/target/api}
for crate in vecring-abi vecring-core; do
  CARGO_TARGET_DIR=$target cargo +nightly rustdoc -q -p "$crate" --lib -- \
    -Z unstable-options --output-format json --document-hidden-items
done

# vecring-ffi: the symbols its shared library exports.
lib=${VECRING_API_LIB:-}
if [ -z "$lib" ]; then
  CARGO_TARGET_DIR=$target cargo build -q -p vecring-ffi
  lib=$target/debug/libvecring.so
fi
nm -D --defined-only "$lib" >"$scratch/symbols"

version_of() { cargo pkgid -p "$1" | sed 's/.*[#@]//'; }
tool=scripts/api/cli.py
status=0
for crate in vecring-abi vecring-core vecring-ffi; do
  if [ "$crate" = vecring-ffi ]; then
    source=(c vecring-ffi/include/vecring.h "$scratch/symbols")
  else
    source=(rust "$target/doc/${crate//-/_}.json")
  fi
  case $cmd in
  show) python3 -B "$tool" show "${source[@]}" ;;
  update) python3 -B "$tool" update "api/$crate.txt" "$crate" "$(version_of "$crate")" "${source[@]}" ;;
  check)
    if ! python3 -B "$tool" check "api/$crate.txt" "$(version_of "$crate")" "${source[@]}"; then
      status=1
      [ "$crate" = vecring-ffi ] &&
        echo "api: a break of the C API also needs a new SONAME: SOVERSION in scripts/deb.sh (docs/packages.md)"
    fi
    ;;
  esac
done
exit $status
