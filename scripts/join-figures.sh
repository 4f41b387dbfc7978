#!/usr/bin/env bash
# The join path's figures as a user's crate gets them, every runtime in the same process and
# run, alternated round robin (docs/results/join-path.md):
#
#   1. fib(N) without a cutoff: magpie, rayon and chili at 1 and 2 workers against the serial
#      twin (downstream/, scripts/downstream.sh);
#   1b. the floor under fib's join: the serial twin against joins that only call their halves,
#      also catch a panic, also keep a depth (downstream/src/bin/join_floor.rs);
#   2. the sum of a balanced tree of boxed nodes, one join per node, at each depth: ns per
#      node inside the pool, and the smallest tree entered from outside the pool once per sum,
#      in µs and × serial (downstream/src/bin/tree_sum.rs);
#   3. the same fib and tree sum written with `rayon::join` on magpie's rayon-core against
#      `magpie::join` (downstream-rayon/src/bin/join_figures.rs);
#   3b. the instructions of both at 1 worker, counted by callgrind (fib(20) and a 16,383-node
#      tree, twice each);
#   4. fib(32) at 2 workers with oldest-first hand-over on and off
#      (downstream/src/bin/hand_over.rs);
#   5. the instructions of a join nobody steals (scripts/join-instructions.sh).
#
# The crates are copied out of this repository and built with cargo's default release profile
# (no LTO, 16 codegen units) and none of the workspace's `.cargo/config.toml` flags.
#
#   bash scripts/join-figures.sh [--fib N] [--depths D,D,...] [--runs R]
#                                (defaults: 34, 10,16,22, 7)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
fib=34 depths=10,16,22 runs=7
while [ $# -gt 0 ]; do
    case $1 in
    --fib) fib=${2:?}; shift 2 ;;
    --depths) depths=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/magpie-join-figures.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/plain" "$dir/rayon"
cp -r downstream/Cargo.toml downstream/src "$dir/plain/"
cp Cargo.lock "$dir/plain/"
sed -i "s|path = \"../crates/magpie\"|path = \"$repo/crates/magpie\"|" "$dir/plain/Cargo.toml"
cp -r downstream-rayon/Cargo.toml downstream-rayon/src "$dir/rayon/"
sed -i -e "s|path = \"../crates/magpie\"|path = \"$repo/crates/magpie\"|" \
    -e "s|path = \"../rayon-core\"|path = \"$repo/rayon-core\"|" "$dir/rayon/Cargo.toml"
echo "building the downstream crates with cargo's default release profile" >&2
(cd "$dir/plain" && env -u RUSTFLAGS CARGO_TARGET_DIR="$repo/target/downstream" cargo build --release -q)
(cd "$dir/rayon" && env -u RUSTFLAGS CARGO_TARGET_DIR="$repo/target/downstream-rayon" cargo build --release -q)
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates rayon-core || echo ' (with uncommitted changes)')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
echo "== fib($fib) without a cutoff"
"$repo/target/downstream/release/magpie-downstream" "$fib" "$runs"
echo
echo "== the floor under a join: fib($fib) with joins that do less"
"$repo/target/downstream/release/join_floor" "$fib" "$runs"
echo
echo "== tree sum"
"$repo/target/downstream/release/tree_sum" "$depths" "$runs"
echo
echo "== rayon::join on magpie's rayon-core against magpie::join"
"$repo/target/downstream-rayon/release/join_figures" 30 20 "$runs"
echo
echo "== instructions: rayon::join on magpie's rayon-core against magpie::join, 1 worker"
if bash scripts/install-valgrind.sh >/dev/null; then
    for version in rayon magpie; do
        log=$(valgrind --tool=callgrind --callgrind-out-file="$dir/$version.cg" \
            --toggle-collect='*join_figures*counted*' \
            "$repo/target/downstream-rayon/release/join_figures" 20 14 1 "$version" 2>&1) || {
            echo "error: join_figures 20 14 1 $version failed:" >&2
            echo "$log" >&2
            exit 1
        }
        ir=$(grep -E '^(summary|totals):' "$dir/$version.cg" | head -1 | awk '{print $2}')
        joins=$(echo "$log" | sed -n 's/.*joins: \([0-9]*\).*/\1/p')
        echo "  $version: $ir instructions for $joins joins ($(awk -v a="$ir" -v j="$joins" 'BEGIN { printf "%.2f", a / j }') per join, the halves' own work included)"
    done
else
    echo "  skipped: valgrind could not be installed"
fi
echo
echo "== oldest-first hand-over on and off"
"$repo/target/downstream/release/hand_over" 32 "$((runs * 2))"
echo
echo "== instructions of a join nobody steals"
bash scripts/join-instructions.sh
