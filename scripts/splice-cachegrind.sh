#!/usr/bin/env bash
# Last-level cache misses of the spliced stencils against the same steps unspliced, on one
# worker, with cachegrind's last-level cache set to this machine's L3 and, separately, to one
# core's L2 (from lscpu; cachegrind needs a power-of-two number of sets, so the associativity
# is the first of 16, 8, 4, 12, 15, 20, ... that gives one). Each version runs once (`magpie
# splice K --only V`), and the two checksums must agree; so does the setup alone (`--only setup`:
# building the grids and taking their checksum, which both versions' profiles include), whose
# counts are subtracted, so the figures are the steps' own. Prints one Markdown row per kernel and cache: the LL misses
# (reads + writes) of each version, unspliced ÷ spliced, and the instructions executed, spliced
# ÷ unspliced (the scheduler's cost).
#
#   bash scripts/splice-cachegrind.sh [--n 4096] [--steps 16] [--window 8] [--grain 2]
#                                     [--kernels heat,jacobi,fdtd-2d] [--caches l3,l2]
#
# Installs valgrind (scripts/install-valgrind.sh). Under cachegrind a run takes about 50 times
# as long as natively.
set -euo pipefail
cd "$(dirname "$0")/.."
n=4096 steps=16 window=8 grain=2 kernels=heat,jacobi,fdtd-2d caches=l3,l2
while [ $# -gt 0 ]; do
    case $1 in
    --n) n=${2:?}; shift 2 ;;
    --steps) steps=${2:?}; shift 2 ;;
    --window) window=${2:?}; shift 2 ;;
    --grain) grain=${2:?}; shift 2 ;;
    --kernels) kernels=${2:?}; shift 2 ;;
    --caches) caches=${2:?}; shift 2 ;;
    *) echo "error: unknown option '$1'" >&2; sed -n '10,11p' "$0" >&2; exit 2 ;;
    esac
done
bash scripts/install-valgrind.sh >/dev/null
cargo build --release -q -p magpie-cli
bytes() { # "4 MiB (2 instances)" -> bytes per instance
    python3 -c "
import re,sys
s=sys.argv[1]; m=re.match(r'([0-9.]+)\s*([KMG])i?B(?:\s*\((\d+) instances?\))?', s)
v=float(m.group(1))*{'K':1<<10,'M':1<<20,'G':1<<30}[m.group(2)]; k=int(m.group(3) or 1)
print(int(v/k))" "$1"
}
cfg() { # bytes -> SIZE,ASSOC,64 with a power-of-two set count
    python3 -c "
import sys
size=int(sys.argv[1])
for a in [16, 8, 4, 12, 15, 20, 24, 32, 2, 1]:
    sets=size//(64*a)
    if sets*64*a==size and sets&(sets-1)==0:
        print(f'{size},{a},64'); break
else:
    sys.exit('no cachegrind geometry for %d bytes' % size)" "$1"
}
l3=$(cfg "$(bytes "$(lscpu | sed -n 's/^L3 cache: *//p')")")
l2=$(cfg "$(bytes "$(lscpu | sed -n 's/^L2 cache: *//p')")")
count() { # cachegrind output file, what -> LL read + write misses (ll) or instructions (ir)
    python3 -c "
import sys
ev=None
for line in open(sys.argv[1]):
    if line.startswith('events:'): ev=line.split()[1:]
    if line.startswith('summary:'):
        v=dict(zip(ev, map(int, line.split()[1:])))
        print(v['DLmr']+v['DLmw']+v['ILmr'] if sys.argv[2] == 'll' else v['Ir'])" "$1" "$2"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| kernel | LL | unspliced LL misses | spliced LL misses | unspliced ÷ spliced | instructions, spliced ÷ unspliced |"
echo "|---|---|---|---|---|---|"
for k in ${kernels//,/ }; do
    for c in ${caches//,/ }; do
        case $c in
        l3) cache="L3 $l3" ;;
        l2) cache="L2 $l2" ;;
        *) echo "error: --caches: '$c' is not l3 or l2" >&2; exit 2 ;;
        esac
        set -- $cache
        sums=()
        for v in setup unspliced spliced; do
            out=$(valgrind --tool=cachegrind --cache-sim=yes --LL="$2" \
                --cachegrind-out-file="$tmp/$v.out" target/release/magpie splice "$k" --n "$n" \
                --steps "$steps" --window "$window" --grain "$grain" --workers 1 --only "$v" 2>/dev/null)
            sums+=("$(echo "$out" | sed -n 's/.*checksum \(0x[0-9a-f]*\).*/\1/p')")
            eval "m_$v=$(count "$tmp/$v.out" ll)"
            eval "i_$v=$(count "$tmp/$v.out" ir)"
        done
        [ "${sums[1]}" = "${sums[2]}" ] || { echo "error: $k: checksums differ (${sums[*]})" >&2; exit 1; }
        m_unspliced=$((m_unspliced - m_setup)) m_spliced=$((m_spliced - m_setup))
        i_unspliced=$((i_unspliced - i_setup)) i_spliced=$((i_spliced - i_setup))
        echo "| $k n=$n steps=$steps window=$window | $1 ($2) | $m_unspliced | $m_spliced | $(python3 -c "print(f'{$m_unspliced / max($m_spliced, 1):.2f}')") | $(python3 -c "print(f'{$i_spliced / $i_unspliced:.3f}')") |"
    done
done
