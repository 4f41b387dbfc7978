#!/usr/bin/env bash
# What core sharing costs a program that runs alone: times `magpie bench K` under MAGPIE_SHARE=off
# and under MAGPIE_SHARE=MODE (dws by default; with a private core table, so no other program
# takes part), alternating the two ROUNDS times per kernel and worker count so drifting load hits
# both alike, and prints one Markdown row with the median of the per-round medians of each and
# their ratio (MODE ÷ off). Every timed run is verified by the kernel's check; a failed one stops
# the script. Then, with --idle, the CPU an idle pool burns under each mode (`magpie idle`).
#
#   bash scripts/share-overhead.sh [--mode dws] [--rounds R] [--runs N] [--workers 2]
#                                  [--kernels fib,heat,sort,uts,fj] [--size default|ci]
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
rounds=5
runs=5
workers=$(nproc)
kernels=fib,heat,sort,uts,fj
size=default
mode=dws
if [ "${1:-}" = --mode ]; then
    [ $# -ge 2 ] || usage
    mode=$2
    shift 2
fi
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
parse_bench_options "$@"
cargo build --locked --release -q -p magpie-cli
bin=./target/release/magpie
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
table=$tmp/cores

time_off() { bench_median "$bin" "$1" "$2" "$runs" "$size" MAGPIE_SHARE=off; }
time_mode() { bench_median "$bin" "$1" "$2" "$runs" "$size" MAGPIE_SHARE="$mode" MAGPIE_SHARE_TABLE="$table"; }

row() { awk -v k="$1" -v w="$2" -v a="$3" -v b="$4" 'BEGIN { printf "| %s | %s | %.6f | %.6f | %.3f |\n", k, w, a, b, b / a }'; }

echo "| kernel | workers | off s | $mode s | $mode ÷ off |"
echo "|---|---|---|---|---|"
paired_rows time_off time_mode row
