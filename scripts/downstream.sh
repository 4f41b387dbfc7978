#!/usr/bin/env bash
# fib(N) with no cutoff as a user's crate gets it (`downstream/`): copied out of this repository
# into a temporary folder, so neither the workspace's release profile (thin LTO, one codegen unit)
# nor its `.cargo/config.toml` flags apply, built with cargo's default release profile against
# this checkout's magpie (and the workspace's versions of rayon and chili, from its Cargo.lock),
# then run: magpie, rayon and chili at 1 and 2 workers against the serial twin, alternating.
#
#   bash scripts/downstream.sh [N] [RUNS]        (defaults: 36, 7)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/magpie-downstream.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cp -r downstream/Cargo.toml downstream/src "$dir/"
cp Cargo.lock "$dir/"
sed -i "s|path = \"../crates/magpie\"|path = \"$repo/crates/magpie\"|" "$dir/Cargo.toml"
echo "building $dir with cargo's default release profile" >&2
(cd "$dir" && CARGO_TARGET_DIR="$repo/target/downstream" cargo build --release -q)
"$repo/target/downstream/release/magpie-downstream" "$@"
