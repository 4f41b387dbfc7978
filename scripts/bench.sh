#!/usr/bin/env bash
# magpie's main job: the benchmark suite with its report. Builds the C++ peers (TBB, OpenMP) when
# it can (scripts/build-peers.sh; without them the suite lists them as not measured), builds the
# `magpie` binary and the two builds that run the rayon programs (rayon on magpie's rayon-core and
# on its own), and runs `magpie suite`: every kernel under every policy at 1 and all workers,
# the serial twins and the peers measured in the same run, every result verified. Writes
# magpie-report/index.html (the plots) and magpie-report/results.json. Extra arguments go to
# `magpie suite` (see `magpie suite --help`), e.g. `--size ci` for a quick look.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found; install Rust (https://rustup.rs) and run this again" >&2
    exit 2
fi
if ! bash scripts/build-peers.sh; then
    echo "warning: the C++ peers could not be built; the suite will list them as not measured" >&2
fi
cargo build --locked --release -p magpie-cli
# The seven rayon programs run in two builds of their own: rayon on magpie's rayon-core, and on
# its own (scripts/build-rayon-compare.sh).
bash scripts/build-rayon-compare.sh
exec ./target/release/magpie suite "$@"
