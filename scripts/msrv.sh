#!/usr/bin/env bash
# Checks that the crates users build (vecring-abi, vecring-core,
# vecring-ffi, the vecring tool and the CNI plugin) build with the minimum Rust version
# the workspace states (`rust-version` in Cargo.toml), as a user on that
# toolchain would: with dependencies resolved for it (the newest versions
# that support it, cargo's `fallback` resolution), in a copy of the
# tracked files so the repository's own Cargo.lock stays as it is.
# Installs that toolchain with rustup (minimal profile) when it is
# missing.
#
# Usage: scripts/msrv.sh
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$msrv" ] || { echo "msrv: no rust-version in Cargo.toml" >&2; exit 1; }
rustup run "$msrv" rustc --version >/dev/null 2>&1 ||
  rustup toolchain install "$msrv" --profile minimal >/dev/null
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$copy"
(cd "$copy" && CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo +stable generate-lockfile -q)
(cd "$copy" && CARGO_TARGET_DIR="$PWD/target/msrv" cargo "+$msrv" check -q --lib --bins \
  -p vecring-abi -p vecring-core -p vecring-ffi -p vecring-cli -p vecring-cni -p vecring-criu)
echo "msrv: vecring-abi, vecring-core, vecring-ffi, vecring-cli, vecring-cni and vecring-criu build with Rust $msrv"
