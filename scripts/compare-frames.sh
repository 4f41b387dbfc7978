#!/usr/bin/env bash
# Task frames from mimalloc (what magpie uses on Linux) against the system allocator (what it
# uses elsewhere): the same source built twice, kernel by kernel, on the same machine in the same
# run. The second build has `--cfg magpie_tsan`, which in the runtime changes only where task
# frames come from (crates/magpie/src/core/job.rs, `FRAMES`). For each kernel and worker count it
# alternates the two builds ROUNDS times (`magpie bench K --workers W --runs RUNS --no-peers
# --no-serial --json`) and prints one Markdown row with the median of the per-round medians of
# each and their ratio (system ÷ mimalloc; above 1: mimalloc is faster). Every timed run is
# verified by the kernel's own check; a failed one stops the script.
#
#   bash scripts/compare-frames.sh [--rounds R] [--runs N] [--workers 1,2]
#                                  [--kernels fj,...] [--size default|ci|paper]
#
# Default kernels: those that allocate a frame per published spawn (fj, fj-rec, pdfs, uts,
# nqueens, mergesort, cilksort). Both builds get this checkout's .cargo/config.toml flags; the
# system-allocator build is in target/frames-system.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
case "${1:-}" in -h | --help) usage ;; esac
rounds=3
runs=3
workers="1,$(nproc)"
kernels=fj,fj-rec,pdfs,uts,nqueens,mergesort,cilksort
size=default
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
parse_bench_options "$@"
if [ -n "${RUSTFLAGS:-}" ]; then
    echo "error: RUSTFLAGS is set; it would replace .cargo/config.toml's flags in one build only" >&2
    exit 2
fi
echo "building with mimalloc frames (target/release) and system-allocator frames (target/frames-system)" >&2
cargo build --locked --release -q -p magpie-cli
# --config adds to .cargo/config.toml's rustflags (cargo joins the arrays) where RUSTFLAGS
# would replace them.
CARGO_TARGET_DIR=target/frames-system cargo build --locked --release -q -p magpie-cli \
    --config 'build.rustflags=["--cfg", "magpie_tsan"]'
mi=./target/release/magpie
sys=./target/frames-system/release/magpie

time_mi() { bench_median "$mi" "$1" "$2" "$runs" "$size"; }
time_sys() { bench_median "$sys" "$1" "$2" "$runs" "$size"; }

row() { awk -v k="$1" -v w="$2" -v a="$3" -v b="$4" 'BEGIN { printf "| %s | %s | %.6f | %.6f | %.2f |\n", k, w, a, b, b / a }'; }

echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' (with uncommitted changes)')"
echo "| kernel | workers | mimalloc s | system s | system ÷ mimalloc |"
echo "|---|---|---|---|---|"
paired_rows time_mi time_sys row
