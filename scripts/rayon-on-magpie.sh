#!/usr/bin/env bash
# rayon on magpie's core against rayon on its own: the suite's rayon versions of its kernels (the
# seven ordinary rayon programs on rayon's iterators, and the kernels whose rayon peer uses
# rayon::join or rayon::scope), built twice from one source (`rayon-core/compare`): once as is,
# once with rayon-core patched to this repository's `rayon-core/`, as a user's one line does.
# Both builds run in the same rounds, alternating which goes first, and every result is checked
# by the kernel's verifier.
#
#   bash scripts/rayon-on-magpie.sh [--profile workspace|default] [--rounds R] [--runs N]
#                                   [--workers 1,2] [--kernels a,b,...] [--size ci|default|paper]
#
# --profile workspace builds as this workspace does (thin LTO, one codegen unit, 64-byte aligned
# code); default (the default) with cargo's default release profile and no flags, as a user's
# crate gets it. Prints, per kernel and worker count, both medians and magpie's time ÷ rayon's
# (the median over rounds of each round's ratio), then the geometric mean of those ratios per
# worker count. Exits 1 if a result did not verify or a build failed, 2 on a bad argument.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
profile=default rounds=3 runs=5 workers=1,2 size=default kernels=""
while [ $# -gt 0 ]; do
    case "$1" in
    --profile) profile=${2-}; shift 2 || usage ;;
    --rounds) rounds=${2-}; shift 2 || usage ;;
    --runs) runs=${2-}; shift 2 || usage ;;
    --workers) workers=${2-}; shift 2 || usage ;;
    --kernels) kernels=${2-}; shift 2 || usage ;;
    --size) size=${2-}; shift 2 || usage ;;
    *) usage ;;
    esac
done
case "$profile" in workspace | default) ;; *) echo "error: --profile: workspace or default, not \`$profile\`" >&2; exit 2 ;; esac
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "error: --rounds: a whole number ≥ 1, not \`$rounds\`" >&2; exit 2; }
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "error: --runs: a whole number ≥ 1, not \`$runs\`" >&2; exit 2; }
[[ "$workers" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "error: --workers: comma-separated whole numbers ≥ 1, not \`$workers\`" >&2; exit 2; }
if [ -z "$kernels" ]; then
    # Every kernel with a rayon version: all but fj-rec and pdfs.
    kernels=fib,fj,sor,cg,sort,matmul,lu,gc,nqueens,heat,ge,mergesort,fft,cholesky,uts,jacobi,cilksort,barnes-hut,lud,strassen,nbody,floyd-warshall,fdtd-2d,prefix-scan,mandelbrot,par-sort-unstable,par-sort-by-key,nbody-step,word-count,fine-sum,spmv
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/magpie-rayon-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The two builds: the same crate, one with the patch (scripts/build-rayon-compare.sh).
bash scripts/build-rayon-compare.sh --profile "$profile"
declare -A bin
for core in rayon magpie; do
    bin[$core]="$repo/target/rayon-compare/$profile/$core"
done

# Rounds: each kernel on both builds, the first build alternating from round to round.
out="$work/times.txt"
: >"$out"
for r in $(seq 1 "$rounds"); do
    echo "== round $r of $rounds" >&2
    order="rayon magpie"
    [ $((r % 2)) -eq 0 ] && order="magpie rayon"
    for k in ${kernels//,/ }; do
        for core in $order; do
            if ! "${bin[$core]}" "$k" "$workers" "$runs" "$size" | sed "s/^/$r $core /" >>"$out"; then
                echo "error: $k on $core's core did not verify (or failed to run)" >&2
                grep " $k " "$out" | tail -4 >&2
                exit 1
            fi
        done
    done
done

python3 - "$out" "$profile" <<'PY'
import math, statistics, sys
from collections import defaultdict
path, profile = sys.argv[1], sys.argv[2]
t = defaultdict(dict)          # (kernel, workers) -> round -> core -> seconds
answers = {}
for line in open(path):
    r, core, k, w, peer, med, ok, _times, *result = line.split()
    result = " ".join(result)
    if ok != "true":
        sys.exit(f"{k} at {w} workers on {core}'s core did not verify")
    t[(k, int(w))].setdefault(int(r), {})[core] = float(med)
    prev = answers.setdefault((k, int(w)), result)
    if "." not in result and prev != result:
        sys.exit(f"{k}: the two cores' answers differ: {prev} and {result}")
print(f"rayon on magpie's core ÷ rayon on its own ({profile} profile); medians over rounds")
print(f"{'kernel':<18}{'workers':>8}{'rayon core s':>14}{'magpie core s':>15}{'ratio':>8}  answer")
ratios = defaultdict(list)
for (k, w), rounds in t.items():
    rs = [v["magpie"] / v["rayon"] for v in rounds.values() if "magpie" in v and "rayon" in v]
    ratio = statistics.median(rs)
    ratios[w].append(ratio)
    tr = statistics.median(v["rayon"] for v in rounds.values())
    tm = statistics.median(v["magpie"] for v in rounds.values())
    print(f"{k:<18}{w:>8}{tr:>14.5f}{tm:>15.5f}{ratio:>8.2f}  {answers[(k, w)]}")
def geomean(rs):
    return math.exp(sum(math.log(x) for x in rs) / len(rs))
for w, rs in sorted(ratios.items()):
    print(f"geometric mean at {w} worker{'s' if w > 1 else ''}: {geomean(rs):.3f} over {len(rs)} kernels")
PY
