#!/usr/bin/env bash
# Checks that the crates a user depends on (magpie, magpie-dist, and the rayon-core crate) build
# with the oldest Rust they declare: the workspace's `rust-version` in Cargo.toml. rustup
# installs that toolchain (minimal profile, about 20 s) if it is missing; the check runs in
# target/msrv.
#
#   bash scripts/check-msrv.sh
#
# Exits 0 when all three build, 1 when one does not, and as scripts/skip.sh says when the
# toolchain cannot be had (a warning on a user's machine, a failure under CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/skip.sh
. scripts/skip.sh

msrv=$(sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' Cargo.toml | head -n 1)
if [ -z "$msrv" ]; then
    echo "error: no rust-version in Cargo.toml's [workspace.package]" >&2
    exit 1
fi
if ! command -v rustup >/dev/null 2>&1; then
    skip_part "rustup is not installed; the build with Rust $msrv (rust-version) is not checked"
    exit 0
fi
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1 &&
    ! rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; then
    skip_part "rustup could not install Rust $msrv; the build with the declared rust-version is not checked"
    exit 0
fi
export CARGO_TARGET_DIR="$PWD/target/msrv"
echo "Rust $msrv (the declared rust-version): cargo check of magpie, magpie-dist and rayon-core"
cargo "+$msrv" check --locked --quiet -p magpie -p magpie-dist
(cd rayon-core && cargo "+$msrv" check --quiet)
echo "ok: they build with Rust $msrv"
