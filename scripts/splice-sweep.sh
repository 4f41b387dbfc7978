#!/usr/bin/env bash
# Splicing's window, grain and slice, every point: for each kernel, worker count, window, grain
# and slice, `magpie splice K --n N --window W --grain G --slice S --workers P --runs R --json`
# (spliced and unspliced alternated, every spliced grid checked bit for bit), one Markdown row
# each: the medians, unspliced ÷ spliced, and the scheduler's statistics of the last spliced
# run. Slices other than 0 (whole steps) are step pipelining, which only the one-worker walk
# does: they are skipped at more workers, and where a grain has no more rows than the slice.
#
#   bash scripts/splice-sweep.sh [--n 4096] [--kernels heat,jacobi,fdtd-2d] [--workers 1,2]
#                                [--windows 1,2,4,8,16] [--grains 4,8,16,32] [--slices 0]
#                                [--runs 3] [--steps S]
set -euo pipefail
cd "$(dirname "$0")/.."
n=4096 kernels=heat,jacobi,fdtd-2d workers=1,2 windows=1,2,4,8,16 grains=4,8,16,32 slices=0 runs=3
steps=""
while [ $# -gt 0 ]; do
    case $1 in
    --n) n=${2:?}; shift 2 ;;
    --kernels) kernels=${2:?}; shift 2 ;;
    --workers) workers=${2:?}; shift 2 ;;
    --windows) windows=${2:?}; shift 2 ;;
    --grains) grains=${2:?}; shift 2 ;;
    --slices) slices=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --steps) steps="--steps ${2:?}"; shift 2 ;;
    *) echo "error: unknown option '$1'" >&2; sed -n '9,11p' "$0" >&2; exit 2 ;;
    esac
done
cargo build --release -q -p magpie-cli
row=$(cat <<'PY'
import json, sys
o = json.load(sys.stdin)
assert o["verified"], o
s = o["stats"]
cells = [o["kernel"], o["workers"], o["window"], o["grain"], o["slice"] or "–",
         s["steps"] if not o["slice"] else "%d in %d parts" % (s["steps"], s["slices"]), "%.4f" % o["unspliced_median_s"],
         "%.4f" % o["spliced_median_s"], "%.2f" % o["speedup"], s["checks"], s["switches"],
         s["delayed"], s["dependences"], "%.1f" % (s["peak_delayed_bytes"] / 1024)]
print("| " + " | ".join(str(c) for c in cells) + " |")
PY
)
echo "| kernel | workers | window | grain | slice | steps | unspliced s | spliced s | unspliced ÷ spliced | checks | switches | delayed | dependences | peak delayed KiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for k in ${kernels//,/ }; do
    for p in ${workers//,/ }; do
        for w in ${windows//,/ }; do
            for g in ${grains//,/ }; do
                for s in ${slices//,/ }; do
                    if [ "$s" != 0 ] && { [ "$p" != 1 ] || [ "$g" -le "$s" ]; }; then
                        continue
                    fi
                    # shellcheck disable=SC2086
                    target/release/magpie splice "$k" --n "$n" --window "$w" --grain "$g" \
                        --slice "$s" --workers "$p" --runs "$runs" $steps --json |
                        python3 -c "$row"
                done
            done
        done
    done
done
