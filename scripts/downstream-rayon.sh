#!/usr/bin/env bash
# rayon, and ndarray (which runs rayon inside), in a user's crate moved onto magpie by one
# `[patch.crates-io]` line (`downstream-rayon/`): copied out of this repository into a temporary
# folder, so neither the workspace's release profile nor its `.cargo/config.toml` flags apply,
# built with cargo's default release profile against this checkout's magpie and rayon-core,
# then run. The program checks every parallel result against its sequential twin, and that
# every parallel closure ran on one of magpie's workers; it exits 1 if a check fails.
#
#   bash scripts/downstream-rayon.sh [N]       (N: the matrix side; default 512)
#
# When the package registry cannot be reached (rayon and ndarray come from it), says so and
# exits 0: nothing could be built, nothing failed. Under CI=true it exits 1 (scripts/skip.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/skip.sh
. scripts/skip.sh
repo=$(pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/magpie-downstream-rayon.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cp -r downstream-rayon/Cargo.toml downstream-rayon/src "$dir/"
sed -i -e "s|path = \"../crates/magpie\"|path = \"$repo/crates/magpie\"|" \
    -e "s|path = \"../rayon-core\"|path = \"$repo/rayon-core\"|" "$dir/Cargo.toml"
if ! (cd "$dir" && cargo fetch -q 2>"$dir/fetch.err"); then
    sed 's/^/  /' "$dir/fetch.err" >&2
    skip_part "rayon and ndarray could not be fetched from the registry (above); the downstream rayon crate is skipped"
    exit 0
fi
echo "building $dir with cargo's default release profile" >&2
(cd "$dir" && env -u RUSTFLAGS CARGO_TARGET_DIR="$repo/target/downstream-rayon" cargo build --release -q)
"$repo/target/downstream-rayon/release/magpie-downstream-rayon" "$@"
