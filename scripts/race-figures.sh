#!/usr/bin/env bash
# The race checker's figures (Lifflander's thesis §4.6.4, Fig. 4.9): for each kernel that
# declares its accesses, at each worker count, the share of tree traversals the phase search
# (the steal tree's working phases) saves against the plain parent-by-parent search, both run
# on every query of one checked run (`magpie race K --compare`); and the checker's slowdown:
# the checked call (phase search alone) against the same call on a pool that does not check,
# each the kernel and the check of its answer against the serial twin, medians of RUNS.
# Worker counts above the machine's cores still give that many workers' schedules (and so
# their steals and phases); the traversal counts do not depend on time, the slowdowns do.
#
#   bash scripts/race-figures.sh [--workers 1,2,4,8,16] [--runs 3] [--bin target/release/magpie]
set -euo pipefail
cd "$(dirname "$0")/.."
workers=1,2,4,8,16 runs=3 bin=
while [ $# -gt 0 ]; do
    case "$1" in
        --workers) workers=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: bash scripts/race-figures.sh [--workers 1,2,4,8,16] [--runs R] [--bin PATH]" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ]; then
    cargo build --locked --release -q -p magpie-cli
    bin=target/release/magpie
fi
[ -x "$bin" ] || { echo "error: $bin is not an executable" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Sizes a little above the checking defaults, so that every worker count has work to steal.
for kn in heat:256 matmul:128 nbody:1024 lu:256 nqueens:10; do
    k=${kn%%:*} n=${kn##*:}
    "$bin" race "$k" --n "$n" --workers "$workers" --compare --json | sed "s/^/T /" >> "$out"
    for _ in $(seq "$runs"); do
        "$bin" race "$k" --n "$n" --workers "$workers" --slowdown --json | sed "s/^/S /" >> "$out"
    done
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
trav, slow = [], {}
for line in open(sys.argv[1]):
    tag, body = line.split(' ', 1)
    r = json.loads(body)
    if tag == 'T':
        trav.append(r)
    else:
        slow.setdefault((r['kernel'], r['workers']), []).append(r['slowdown'])
print(f"# tree traversals by search (one checked run each) and the checker's slowdown (median of {sys.argv[2]})")
print(f"{'kernel':<8} {'n':>5} {'workers':>7} {'races':>5} {'steps':>7} {'stolen':>6} {'queries':>9} "
      f"{'plain':>11} {'phases':>11} {'saved':>6} {'slowdown':>9}")
for r in trav:
    s = slow.get((r['kernel'], r['workers']), [])
    med = statistics.median(s) if s else float('nan')
    print(f"{r['kernel']:<8} {r['n']:>5} {r['workers']:>7} {r['race_count']:>5} {r['steps']:>7} "
          f"{r['stolen_phases']:>6} {r['queries']:>9} {r['plain_traversals']:>11} "
          f"{r['phase_traversals']:>11} {100 * (r['saved'] or 0):>5.1f}% {med:>8.0f}x")
PY
