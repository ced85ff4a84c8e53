#!/usr/bin/env bash
# Shows that scripts/api.sh catches what it is for. In a scratch copy of
# the tracked files, each change below is made alone and the check run on
# the copy: a break must fail it and name the item, a compatible change must
# pass (an addition listed as one), and a break must pass once the version
# in Cargo.toml is a breaking bump.
#
#   vecring-core  a public method made private, a parameter's type changed,
#                 a variant added to an exhaustive enum: fail; a function
#                 added: passes; the removal under version 0.3.0: passes
#   vecring-ffi   a prototype's parameter type changed, a field appended to
#                 vecring_frame_t: fail; a parameter renamed, a field
#                 appended to vecring_counters_t (which may grow): pass; a
#                 symbol missing from libvecring.so's exports: fails
#
# Usage: scripts/api-breaks.sh
#
# VECRING_API_LIB=FILE: the libvecring.so whose exports the cases read
# (default: scripts/api.sh's debug build in target/api). The copy's builds
# go to target/api-breaks. The missing symbol is a copy of the library with
# the symbol's name overwritten in its export table, not a rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

lib=${VECRING_API_LIB:-}
if [ -z "$lib" ]; then
  CARGO_TARGET_DIR="$root/target/api" cargo build -q -p vecring-ffi
  lib=$root/target/api/debug/libvecring.so
fi
lib=$(realpath "$lib")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
copy=$scratch/src
mkdir "$copy"
git ls-files -z | xargs -0 cp --parents -t "$copy"

failures=0
# expect pass|fail CASE TEXT [LIB]: runs the check on the copy as it is now;
# it must end as said and print TEXT (a line of its report). Then puts the
# copy back as it was.
expect() {
  local want=$1 name=$2 text=$3 status=0
  VECRING_API_LIB=${4:-$lib} VECRING_API_TARGET="$root/target/api-breaks" \
    bash "$copy/scripts/api.sh" check >"$scratch/out" 2>&1 || status=$?
  local got=pass
  [ "$status" = 0 ] || got=fail
  if [ "$got" = "$want" ] && grep -qF -- "$text" "$scratch/out"; then
    echo "api-breaks: $name: the check ends in $got, as it must: $text"
  else
    echo "api-breaks: $name: FAIL: the check must end in $want and print '$text'; it ended in $got:" >&2
    sed 's/^/    /' "$scratch/out" >&2
    failures=$((failures + 1))
  fi
  # Plain copies: their new modification times make cargo document again.
  for f in "${touched[@]}"; do cp "$root/$f" "$copy/$f"; done
  touched=()
}
touched=()
# edit FILE SED-SCRIPT: changes a file of the copy (and checks it changed).
edit() {
  touched+=("$1")
  sed -i "$2" "$copy/$1"
  if cmp -s "$root/$1" "$copy/$1"; then
    echo "api-breaks: the edit '$2' changed nothing in $1" >&2
    exit 1
  fi
}

# The C API first: these cases leave vecring-core as it is, documented once.
h=vecring-ffi/include/vecring.h
edit $h 's/^int vecring_wait_down(const vecring_link_t \*link, uint32_t timeout_ms);/int vecring_wait_down(const vecring_link_t *link, int32_t timeout_ms);/'
expect fail "C prototype changed" "- int vecring_wait_down(const vecring_link_t *, uint32_t)"
edit $h 's/^int vecring_wait_down(const vecring_link_t \*link, uint32_t timeout_ms);/int vecring_wait_down(const vecring_link_t *l, uint32_t ms);/'
expect pass "C parameters renamed" "api: vecring-ffi 0.1.0: compatible with 0.1.0"
edit $h '/^typedef struct vecring_frame {/,/^}/s/^\tuint32_t flags;/\tuint32_t flags;\n\tuint32_t extra;/'
expect fail "field appended to vecring_frame_t" "+ struct vecring_frame #3: uint32_t extra"
edit $h '/^typedef struct vecring_counters {/,/^}/s/^\tuint64_t rx_bytes;/\tuint64_t rx_bytes;\n\tuint64_t extra;/'
expect pass "field appended to vecring_counters_t" "+ struct vecring_counters #10: uint64_t extra"
python3 -B - "$lib" "$scratch/libvecring.so" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
name = b"vecring_tx_unread\0"
assert name in data, "no vecring_tx_unread in the library"
open(sys.argv[2], "wb").write(data.replace(name, b"vecring_tx_unreaX\0"))
EOF
expect fail "symbol missing from libvecring.so" "- symbol vecring_tx_unread (function)" "$scratch/libvecring.so"

# The Rust API.
link=vecring-core/src/link/mod.rs
edit $link 's/^    pub fn wait_up(&self, timeout: Duration)/    pub(crate) fn wait_up(\&self, timeout: Duration)/'
expect fail "method made private" "- pub fn vecring_core::Link::wait_up(&self, Duration) -> Result<u64, LinkError>"
edit $link 's/^    pub fn sender_on(&self, queue: u16)/    pub fn sender_on(\&self, queue: u32)/'
expect fail "parameter type changed" "- pub fn vecring_core::Link::sender_on(&self, u16) -> Result<Sender, LinkError>"
edit vecring-core/src/link/types.rs 's/^pub enum Role {/pub enum Role {\n    \/\/\/ A third role.\n    Observer,/'
expect fail "variant added to an exhaustive enum" "+ pub vecring_core::Role::Observer"
edit vecring-core/src/lib.rs '$a\
/// A function the API check sees added.\
pub fn api_probe() {}'
expect pass "function added" "+ pub fn vecring_core::api_probe()"
edit $link 's/^    pub fn wait_up(&self, timeout: Duration)/    pub(crate) fn wait_up(\&self, timeout: Duration)/'
edit vecring-core/Cargo.toml 's/^version = "0\.2\.0"/version = "0.3.0"/'
edit Cargo.toml 's/^\(vecring-core = .*version = \)"0\.2\.0"/\1"0.3.0"/'
expect pass "method made private, version 0.3.0" "api: vecring-core 0.3.0: breaking changes allowed"

if [ "$failures" != 0 ]; then
  echo "api-breaks: $failures case(s) ended otherwise than they must" >&2
  exit 1
fi
echo "api-breaks: every case ended as it must"
