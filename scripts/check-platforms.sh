#!/usr/bin/env bash
# Checks that magpie and the rayon-core crate compile for the platforms Rust users run, beyond
# the Linux x86_64 host the rest of the test command builds and runs on:
#
#   aarch64-unknown-linux-gnu   every feature (as on x86_64 Linux)
#   x86_64-apple-darwin         no pinning, no core sharing, topology from available_parallelism
#   x86_64-pc-windows-gnu       the same, and no stack-overflow message from magpie
#
# `cargo check --target` for each, in target/platforms; rustup adds the targets' standard
# libraries (about 10 s each, once). aarch64 Linux compiles mimalloc's C code, so it needs
# aarch64-linux-gnu-gcc (scripts/install-cross-gcc.sh installs it with apt, as root).
#
#   bash scripts/check-platforms.sh
#
# Exits 0 when every check passes, 1 when one fails; a target that cannot be had (rustup
# offline, no cross compiler) is skipped as scripts/skip.sh says (a failure under CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/skip.sh
. scripts/skip.sh
export CARGO_TARGET_DIR="$PWD/target/platforms"

check() {
    local target=$1
    if ! rustup target list --installed 2>/dev/null | grep -qx "$target" &&
        ! rustup target add "$target" >/dev/null 2>&1; then
        skip_part "rustup could not add the $target target; magpie is not checked for it"
        return 0
    fi
    echo "$target: cargo check -p magpie, and the rayon-core crate"
    cargo check --locked --quiet -p magpie --target "$target"
    (cd rayon-core && cargo check --quiet --target "$target")
}

if ! command -v rustup >/dev/null 2>&1; then
    skip_part "rustup is not installed; magpie is not checked for other platforms"
    exit 0
fi
if bash scripts/install-cross-gcc.sh >/dev/null; then
    check aarch64-unknown-linux-gnu
else
    skip_part "no C cross compiler for aarch64 (gcc-aarch64-linux-gnu); aarch64 Linux is not checked"
fi
check x86_64-apple-darwin
check x86_64-pc-windows-gnu
echo "ok: magpie and rayon-core compile for every platform checked"
