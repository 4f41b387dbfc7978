#!/usr/bin/env bash
# Runs the core's tests on aarch64 Linux, emulated: magpie's unit tests and a set of its
# integration tests, built for aarch64-unknown-linux-gnu and run under qemu-user. The weaker
# memory model of Arm is not what qemu's emulation checks (it runs the guest's atomics on the
# host's), but the fiber switch, the stack guard and every platform path that differs between
# the two architectures run for real.
#
#   bash scripts/test-aarch64.sh [TEST...]      (default: the unit tests and api, panics,
#                                                 oldest_first, spares; name others, such as
#                                                 waiting, to add them)
#
# Needs rustup's aarch64-unknown-linux-gnu target, aarch64-linux-gnu-gcc
# (scripts/install-cross-gcc.sh) and qemu-aarch64 (scripts/install-qemu.sh), installed here
# when missing. What cannot be had is skipped as scripts/skip.sh says (a failure under
# CI=true). Builds in target/aarch64.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/skip.sh
. scripts/skip.sh

case "${1:-}" in
-h | --help)
    sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(api panics oldest_first spares)

target=aarch64-unknown-linux-gnu
if ! command -v rustup >/dev/null 2>&1; then
    skip_part "rustup is not installed; the aarch64 tests are not run"
    exit 0
fi
if ! rustup target list --installed 2>/dev/null | grep -qx "$target" &&
    ! rustup target add "$target" >/dev/null 2>&1; then
    skip_part "rustup could not add the $target target; the aarch64 tests are not run"
    exit 0
fi
if ! bash scripts/install-cross-gcc.sh >/dev/null; then
    skip_part "no C cross compiler for aarch64 (gcc-aarch64-linux-gnu); the aarch64 tests are not run"
    exit 0
fi
if ! bash scripts/install-qemu.sh >/dev/null; then
    skip_part "qemu-user could not be installed; the aarch64 tests are not run"
    exit 0
fi

export CARGO_TARGET_DIR="$PWD/target/aarch64"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
args=(--lib)
for t in "${tests[@]}"; do
    args+=(--test "$t")
done
echo "aarch64 Linux under qemu-user: magpie's unit tests and ${tests[*]}"
cargo test --locked --quiet -p magpie --target "$target" "${args[@]}"
echo "ok: the core's tests pass on aarch64 Linux (emulated)"
