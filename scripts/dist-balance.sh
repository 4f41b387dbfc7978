#!/usr/bin/env bash
# The balancers on a loaded machine: hf and tce under every strategy at 2, 3 and 4 MPI ranks,
# with LOAD busy processes beside them (another program on the same cores), printing each
# iteration's efficiency (wall time) and CPU efficiency, its time against the fastest strategy's, and per run whether the balancers
# are ever worse than no-balance after iteration 2 and how far each strategy's last
# iterations are from the best one's. With --repeats R every run is made R times (the
# strategies taking turns) and each iteration's figure is the median of the R. Needs Open MPI (scripts/install-mpi.sh) and a
# magpie-dist built with the mpi feature (built here unless --bin names one).
#
#   bash scripts/dist-balance.sh [--kernels hf,tce] [--ranks 2,3,4] [--n 200] [--iterations 6]
#                                [--load 1] [--repeats 1] [--bin target/release/magpie-dist]
set -euo pipefail
cd "$(dirname "$0")/.."
kernels=hf,tce ranks=2,3,4 n=200 iterations=6 load=1 repeats=1 bin=
while [ $# -gt 0 ]; do
    case "$1" in
        --kernels) kernels=$2; shift 2 ;;
        --ranks) ranks=$2; shift 2 ;;
        --n) n=$2; shift 2 ;;
        --iterations) iterations=$2; shift 2 ;;
        --load) load=$2; shift 2 ;;
        --repeats) repeats=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: bash scripts/dist-balance.sh [--kernels hf,tce] [--ranks 2,3,4] [--n N] [--iterations K] [--load L] [--repeats R] [--bin PATH]" >&2; exit 2 ;;
    esac
done
command -v mpirun >/dev/null || { echo "error: mpirun not found (bash scripts/install-mpi.sh)" >&2; exit 2; }
if [ -z "$bin" ]; then
    cargo build --locked --release -q -p magpie-dist-bench --features magpie-dist-bench/mpi
    bin=target/release/magpie-dist
fi
[ -x "$bin" ] || { echo "error: $bin is not an executable" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
for _ in $(seq "$load"); do
    (while :; do :; done) &
    pids+=($!)
done
out=$(mktemp)
for _ in $(seq "$repeats"); do
for k in ${kernels//,/ }; do
    for p in ${ranks//,/ }; do
        for s in no-balance steal steal-retentive plb-centralized plb-hierarchical plb-centralized+steal plb-hierarchical+steal; do
            mpirun -n "$p" "$bin" run "$k" --n "$n" --strategy "$s" --iterations "$iterations" --json 2>/dev/null |
                python3 -c "
import json, sys
v = json.load(sys.stdin)
its = v['iterations']
print(json.dumps({'kernel': '$k', 'ranks': $p, 'strategy': '$s', 'verified': v['verified'],
    'eff': [i['efficiency'] for i in its], 'cpu': [i.get('cpu_efficiency') for i in its],
    'time': [i['time_s'] for i in its]}))
" >> "$out"
        done
    done
done
done
python3 - "$out" "$load" "$bin" "$repeats" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
# One row per (kernel, ranks, strategy): each iteration's median over the repeats.
rows = []
for key in dict.fromkeys((r['kernel'], r['ranks'], r['strategy']) for r in runs):
    same = [r for r in runs if (r['kernel'], r['ranks'], r['strategy']) == key]
    med = lambda xs: statistics.median(xs) if all(x is not None for x in xs) else None
    rows.append({'kernel': key[0], 'ranks': key[1], 'strategy': key[2],
                 'verified': all(r['verified'] for r in same),
                 'eff': [med(xs) for xs in zip(*(r['eff'] for r in same))],
                 'cpu': [med(xs) for xs in zip(*(r['cpu'] for r in same))],
                 'time': [med(xs) for xs in zip(*(r['time'] for r in same))]})
print(f"# {sys.argv[3]}, {sys.argv[2]} busy process(es) beside the ranks; efficiency by iteration (CPU efficiency in brackets), median of {sys.argv[4]} run(s)")
for (k, p) in sorted({(r['kernel'], r['ranks']) for r in rows}):
    group = [r for r in rows if r['kernel'] == k and r['ranks'] == p]
    nb = next(r for r in group if r['strategy'] == 'no-balance')
    tail = lambda r: sum(r['eff'][2:]) / max(1, len(r['eff'][2:]))
    best = max(tail(r) for r in group)
    # Each strategy's iteration time from iteration 2 on, against the fastest strategy's.
    secs = lambda r: sum(r['time'][2:]) / max(1, len(r['time'][2:]))
    fastest = min(secs(r) for r in group)
    print(f"{k} at {p} ranks:")
    for r in group:
        cells = ' '.join(f"{e:.2f}" + (f"[{c:.2f}]" if c is not None else '') for e, c in zip(r['eff'], r['cpu']))
        worse = [i for i, (e, b) in enumerate(zip(r['eff'], nb['eff'])) if i >= 2 and e < b - 0.02]
        note = f"  below no-balance at iterations {worse}" if worse and r['strategy'].startswith('plb') else ''
        if r['strategy'].startswith('plb') and tail(r) < best - 0.05:
            note += f"  {best - tail(r):.2f} below the best"
        print(f"  {r['strategy']:<22} {cells}   mean from it. 2: {tail(r):.2f} (best {best:.2f}), time {secs(r) / fastest:.2f}x the fastest{note}"
              + ('' if r['verified'] else '  NOT VERIFIED'))
PY
