#!/usr/bin/env bash
# Before/after: times magpie as built from an older commit against the working tree, kernel by
# kernel, on the same machine in the same run. For each kernel and worker count it alternates the
# two builds ROUNDS times (`magpie bench K --workers W --runs RUNS --no-peers --no-serial --json`),
# so drifting machine load hits both alike, and prints one Markdown row with the median of the
# per-round medians of each build and their ratio (after ÷ before; below 1 is faster). Every
# timed run is verified by the kernel's own check; a failed one stops the script.
#
#   bash scripts/compare-builds.sh BASE_REV [--rounds R] [--runs N] [--workers 1,2]
#                                  [--kernels fib,fj,...] [--size default|ci|paper]
#
# The base build lives in target/compare/BASE_REV (a git worktree with its own target folder).
# It is built inside this checkout, so both builds get this checkout's .cargo/config.toml (the
# same code generation flags) and differ only in the code.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
[ $# -ge 1 ] || usage
base=$1
shift
rounds=3
runs=3
workers="1,$(nproc)"
kernels=""
size=default
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
parse_bench_options "$@"
rev=$(git rev-parse --verify --quiet "$base^{commit}") || {
    echo "error: '$base' is not a commit of this repository" >&2
    exit 2
}
short=${rev:0:12}
dir=target/compare/$short
if [ ! -d "$dir" ]; then
    mkdir -p target/compare
    git worktree add --detach "$dir" "$rev" >/dev/null
fi
echo "building $short (before) and the working tree (after)" >&2
(cd "$dir" && CARGO_TARGET_DIR=target cargo build --locked --release -q -p magpie-cli)
cargo build --locked --release -q -p magpie-cli
old=$dir/target/release/magpie
new=./target/release/magpie
# The seven rayon programs run as rayon on magpie's rayon-core, in builds of their own beside
# each magpie (scripts/build-rayon-compare.sh). A base older than that script ran them on
# magpie's retired iterators instead, which is another program: they are left out then.
programs=mandelbrot,par-sort-unstable,par-sort-by-key,nbody-step,word-count,fine-sum,spmv
with_programs=yes
asked=no
for k in ${kernels//,/ }; do [[ ",$programs," == *",$k,"* ]] && asked=yes; done
if [ -n "$kernels" ] && [ "$asked" = no ]; then
    :
elif [ -f "$dir/scripts/build-rayon-compare.sh" ]; then
    bash "$dir/scripts/build-rayon-compare.sh" >/dev/null
    bash scripts/build-rayon-compare.sh >/dev/null
else
    with_programs=no
    echo "note: $short runs the rayon programs on magpie's retired iterators; they are left out" >&2
fi
if [ -z "$kernels" ]; then
    kernels=$($new bench --help | sed -n '/^Kernels/,$p' | awk 'NR > 1 && NF { print $1 }' | paste -sd, -)
    if [ "$with_programs" = no ]; then
        kernels=$(tr , '\n' <<<"$kernels" | grep -vxF -f <(tr , '\n' <<<"$programs") | paste -sd, -)
    fi
elif [ "$with_programs" = no ]; then
    for k in ${kernels//,/ }; do
        if [[ ",$programs," == *",$k,"* ]]; then
            echo "error: --kernels names $k, which $short runs on magpie's retired iterators" >&2
            exit 2
        fi
    done
fi

time_old() { bench_median "$old" "$1" "$2" "$runs" "$size"; }
time_new() { bench_median "$new" "$1" "$2" "$runs" "$size"; }

row() { awk -v k="$1" -v w="$2" -v b="$3" -v a="$4" 'BEGIN { printf "| %s | %s | %.6f | %.6f | %.2f |\n", k, w, b, a, a / b }'; }

echo "| kernel | workers | before s | after s | after ÷ before |"
echo "|---|---|---|---|---|"
paired_rows time_old time_new row
