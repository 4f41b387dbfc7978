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
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
    --rounds) rounds=$2 ;;
    --runs) runs=$2 ;;
    --workers) workers=$2 ;;
    --kernels) kernels=$2 ;;
    --size) size=$2 ;;
    *) usage ;;
    esac
    shift 2
done
for v in "$rounds" "$runs"; do
    if ! [[ $v =~ ^[1-9][0-9]*$ ]]; then
        echo "error: --rounds and --runs take a positive whole number, not '$v'" >&2
        exit 2
    fi
done
cargo build --locked --release -q -p magpie-cli
bin=./target/release/magpie
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One timed invocation (traced when $2 is a path): prints its median or stops the script.
time_one() {
    local k=$1 trace=$2 w=$3 out
    local run=(env -u MAGPIE_TRACE)
    [ -z "$trace" ] || run=(env MAGPIE_TRACE="$trace")
    if ! out=$("${run[@]}" "$bin" bench "$k" --workers "$w" --runs "$runs" --size "$size" \
        --no-peers --no-serial --json 2>/dev/null); then
        echo "error: magpie bench $k --workers $w (MAGPIE_TRACE='$trace') failed" >&2
        exit 1
    fi
    if ! grep -q '"verified": *true' <<<"$out"; then
        echo "error: magpie bench $k --workers $w: result not verified" >&2
        exit 1
    fi
    grep -o '"median_s": *[0-9.eE+-]*' <<<"$out" | head -1 | sed 's/.*: *//'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "| kernel | workers | off s | on s | on ÷ off | trace file bytes |"
echo "|---|---|---|---|---|---|"
IFS=, read -ra ks <<<"$kernels"
IFS=, read -ra ws <<<"$workers"
for k in "${ks[@]}"; do
    for w in "${ws[@]}"; do
        off=()
        on=()
        for ((r = 0; r < rounds; r++)); do
            off+=("$(time_one "$k" "" "$w")")
            on+=("$(time_one "$k" "$tmp/run.mtrace" "$w")")
        done
        moff=$(printf '%s\n' "${off[@]}" | median)
        mon=$(printf '%s\n' "${on[@]}" | median)
        bytes=$(stat -c %s "$tmp/run.mtrace")
        awk -v k="$k" -v w="$w" -v a="$moff" -v b="$mon" -v n="$bytes" \
            'BEGIN { printf "| %s | %s | %.6f | %.6f | %.3f | %s |\n", k, w, a, b, b / a, n }'
    done
done
