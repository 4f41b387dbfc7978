#!/usr/bin/env bash
# Tracing on versus off: times `magpie bench K` with and without MAGPIE_TRACE (the steal tree is
# recorded for the whole invocation: warm-up and every timed run), alternating the two ROUNDS
# times per kernel and worker count so drifting load hits both alike, and prints one Markdown row
# with the median of the per-round medians of each and their ratio (on ÷ off), and the size of the
# trace file the last traced invocation wrote. Every timed run is verified by the kernel's check;
# a failed one stops the script.
#
#   bash scripts/trace-overhead.sh [--rounds R] [--runs N] [--workers 1,2]
#                                  [--kernels fib,nqueens,uts,heat,matmul] [--size default|ci]
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
rounds=5
runs=5
workers="1,$(nproc)"
kernels=fib,nqueens,uts,heat,matmul
size=default
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
parse_bench_options "$@"
cargo build --locked --release -q -p magpie-cli
bin=./target/release/magpie
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

time_off() { bench_median "$bin" "$1" "$2" "$runs" "$size"; }
time_on() { bench_median "$bin" "$1" "$2" "$runs" "$size" MAGPIE_TRACE="$tmp/run.mtrace"; }

row() {
    awk -v k="$1" -v w="$2" -v a="$3" -v b="$4" -v n="$(stat -c %s "$tmp/run.mtrace")" \
        'BEGIN { printf "| %s | %s | %.6f | %.6f | %.3f | %s |\n", k, w, a, b, b / a, n }'
}

echo "| kernel | workers | off s | on s | on ÷ off | trace file bytes |"
echo "|---|---|---|---|---|---|"
paired_rows time_off time_on row
