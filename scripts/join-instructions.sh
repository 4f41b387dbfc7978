#!/usr/bin/env bash
# Counts the instructions of a join nobody steals, and fails when a count grows past its budget
# (scripts/join-instructions.budget). The program is crates/magpie/examples/join_instructions.rs:
# fib(N) without a cutoff, one join per call, run under callgrind, which counts only the
# computation itself (`--toggle-collect` on its one function), on the thread that runs it.
# For each pool it prints the instructions per join above the serial twin's per call:
#
#   one        a one-worker pool: the plain in-place join
#   two        a two-worker pool whose other worker is held blocked, with oldest-first
#              hand-over (the default): the in-place join that records its pending half
#   two-quiet  the same pool after its worker ran fib(N + 5) uncounted with no thief asking: a
#              join that records its pending half only near the root
#   two-plain  the same pool with `oldest_first(false)`
#
# and, with the same budget file, what a call from outside the pool costs (no join; instructions
# per call, the serial twin not subtracted):
#
#   outside    1,000 calls of a closure that returns its argument, from a plain thread into a
#              one-worker pool whose worker sleeps: each runs on the calling thread, in the
#              sleeping worker's seat
#
# For each join it also names the runtime's source files the join runs code from every time
# (scripts/join-files.py: the instructions run at least once per two joins, and every function
# inlined at each), and fails when a join's path runs through more files than the budget's
# `files` line allows.
#
# The counts are deterministic for one compiler and one target; the budget leaves a few
# instructions of slack for a newer compiler's choices, not for a feature's new test.
#
#   bash scripts/join-instructions.sh [N]          (N: default 20)
#
# Installs valgrind (scripts/install-valgrind.sh); when it cannot, warns and exits 0, except
# under CI=true, where a check that cannot run fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
case $n in
'' | *[!0-9]*) echo "error: N must be a whole number, not '$n'" >&2; exit 2 ;;
esac
# shellcheck source=scripts/skip.sh
. scripts/skip.sh
if ! bash scripts/install-valgrind.sh >/dev/null; then
    skip_part "valgrind could not be installed; the join's instruction budget is not checked"
    exit 0
fi
cargo build --locked --release -q -p magpie --example join_instructions
bin=target/release/examples/join_instructions
out=$(mktemp -d "${TMPDIR:-/tmp}/magpie-join-ir.XXXXXX")
trap 'rm -rf "$out"' EXIT

# Ir of `counted` in MODE: prints "IR JOINS".
count() {
    local mode=$1 log
    log=$(valgrind --tool=callgrind --callgrind-out-file="$out/$mode.cg" \
        --dump-instr=yes --compress-strings=no --compress-pos=no \
        --toggle-collect='*join_instructions*counted*' "$bin" "$mode" "$n" 2>&1) || {
        echo "error: join_instructions $mode failed:" >&2
        echo "$log" >&2
        exit 1
    }
    local ir joins
    ir=$(grep -E '^(summary|totals):' "$out/$mode.cg" | head -1 | awk '{print $2}')
    joins=$(echo "$log" | sed -n 's/.*\(joins\|calls\): \([0-9]*\).*/\2/p')
    if [ -z "$ir" ] || [ -z "$joins" ] || [ "$ir" -eq 0 ]; then
        echo "error: no count for $mode (callgrind did not see the counted function)" >&2
        echo "$log" >&2
        exit 1
    fi
    echo "$ir $joins"
}

read -r serial_ir joins <<<"$(count serial)"
echo "fib($n) without a cutoff: $joins joins; serial twin $serial_ir instructions ($(awk -v a="$serial_ir" -v j="$joins" 'BEGIN { printf "%.1f", a / j }') per join's worth of calls)"
status=0
max_files=$(awk '$1 == "files" { print $2 }' scripts/join-instructions.budget)
case $max_files in
'' | *[!0-9]*) echo "error: scripts/join-instructions.budget has no 'files N' line" >&2; exit 2 ;;
esac
while read -r mode budget _; do
    case $mode in '' | '#'* | files) continue ;; esac
    read -r ir units <<<"$(count "$mode")"
    if [ "$mode" = outside ]; then
        per=$(awk -v a="$ir" -v c="$units" 'BEGIN { printf "%.1f", a / c }')
        what="instructions per empty call from outside the pool"
    else
        per=$(awk -v a="$ir" -v s="$serial_ir" -v j="$joins" 'BEGIN { printf "%.1f", (a - s) / j }')
        what="instructions per join above the serial twin"
    fi
    if awk -v p="$per" -v b="$budget" 'BEGIN { exit !(p > b) }'; then
        echo "FAIL $mode: $per $what (budget $budget)"
        status=1
    else
        echo "ok   $mode: $per $what (budget $budget)"
    fi
    if [ "$mode" != outside ]; then
        files=$(python3 scripts/join-files.py "$out/$mode.cg" "$bin" "$units") || exit 1
        nfiles=$(echo "$files" | wc -l)
        list=$(echo "$files" | awk '{ print $1 }' | paste -sd, - | sed 's/,/, /g')
        if [ "$nfiles" -gt "$max_files" ]; then
            echo "FAIL $mode: a join runs code from $nfiles of the runtime's files ($list; budget $max_files)"
            status=1
        else
            echo "ok   $mode: a join runs code from $nfiles of the runtime's files ($list; budget $max_files)"
        fi
    fi
done <scripts/join-instructions.budget
exit $status
