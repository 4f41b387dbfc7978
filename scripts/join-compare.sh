#!/usr/bin/env bash
# The join path before and after a change, as a user's crate gets it: the downstream crate's
# programs (downstream/) built against magpie at BASE_REV and against the working tree, with
# cargo's default release profile (none of the workspace's `.cargo/config.toml` flags), and with
# --align also with the workspace's alignment flags, so that a figure that only one code
# placement shows is seen as such. The builds' programs are alternated ROUNDS times, and each
# prints its own medians and checks its own results:
#
#   * `hand_over 32 11`: fib(32) at 2 workers, oldest-first hand-over on ÷ off;
#   * `magpie-downstream 34 5`: fib(34) without a cutoff, 1 worker ÷ serial and serial ÷ 2
#     workers, magpie against chili and rayon in the same process;
#   * with --tree, `tree_sum 10,16,22 5`: the tree sum against chili, and 1,023 nodes entered
#     from outside the pool.
#
#   bash scripts/join-compare.sh BASE_REV [--rounds R] [--align] [--tree]
#                                (defaults: 3 rounds, default profile only, no tree sum)
#
# The base's source is a git worktree in target/join-compare/src-REV; every build has its own
# target folder in target/join-compare/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
usage() {
    sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
}
base=
rounds=3
align=0
tree=0
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds)
        rounds=${2:-}
        shift 2 || { echo "error: --rounds needs a value" >&2; exit 2; }
        ;;
    --align) align=1; shift ;;
    --tree) tree=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *)
        [ -z "$base" ] || { echo "error: one base revision only (see --help)" >&2; exit 2; }
        base=$1
        shift
        ;;
    esac
done
[ -n "$base" ] || { echo "error: no base revision given (see --help)" >&2; exit 2; }
case "$rounds" in
'' | *[!0-9]* | 0) echo "error: --rounds takes a whole number from 1, not '$rounds'" >&2; exit 2 ;;
esac
rev=$(git rev-parse --verify --quiet "$base^{commit}") ||
    { echo "error: '$base' is not a commit of this repository" >&2; exit 2; }
short=$(git rev-parse --short=12 "$rev")
out=$repo/target/join-compare
src=$out/src-$short
mkdir -p "$out"
if [ ! -d "$src/crates/magpie" ]; then
    git worktree add --force --detach "$src" "$rev" >/dev/null
fi
flags="-C llvm-args=-align-loops=64 -C llvm-args=-align-all-functions=6"
grep -q -- "-align-loops=64" .cargo/config.toml ||
    { echo "error: .cargo/config.toml no longer holds the alignment flags this script copies" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/magpie-join-compare.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# build NAME MAGPIE_SOURCE ALIGNED
build() {
    mkdir -p "$dir/$1"
    cp -r downstream/Cargo.toml downstream/src "$dir/$1/"
    cp Cargo.lock "$dir/$1/"
    sed -i "s|path = \"../crates/magpie\"|path = \"$2/crates/magpie\"|" "$dir/$1/Cargo.toml"
    echo "building $1" >&2
    if [ "$3" = 1 ]; then
        (cd "$dir/$1" && RUSTFLAGS="$flags" CARGO_TARGET_DIR="$out/$1" cargo build --release -q \
            --bin hand_over --bin magpie-downstream --bin tree_sum)
    else
        (cd "$dir/$1" && env -u RUSTFLAGS CARGO_TARGET_DIR="$out/$1" cargo build --release -q \
            --bin hand_over --bin magpie-downstream --bin tree_sum)
    fi
}
builds=("$short" tree)
build "$short" "$src" 0
build tree "$repo" 0
if [ "$align" = 1 ]; then
    builds+=("$short-aligned" tree-aligned)
    build "$short-aligned" "$src" 1
    build tree-aligned "$repo" 1
fi

echo "base: $short; after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' with uncommitted changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for r in $(seq "$rounds"); do
    echo
    echo "== round $r of $rounds"
    for b in "${builds[@]}"; do
        bin=$out/$b/release
        echo "-- $b"
        "$bin/hand_over" 32 11 | sed 's/^.*medians of/hand_over: medians of/'
        "$bin/magpie-downstream" 34 5 | grep -E '÷ serial|serial ÷' | sed 's/^/fib(34): /'
        if [ "$tree" = 1 ]; then
            "$bin/tree_sum" 10,16,22 5
        fi
    done
done
