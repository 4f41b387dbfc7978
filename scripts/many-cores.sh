#!/usr/bin/env bash
# The figures that need more cores than a laptop or a 2-core CI machine has, in one run, on a
# machine of 8 or more cores (16 is what the papers used):
#
#   suite     the scaling curve: `magpie suite` (adaptive, the peers) at 1, 2, 4, ... up to MAX
#             workers, default size, 3 runs per configuration, one invocation per kernel (its
#             own report in DIR/suite-K), so a run cut short keeps every kernel it finished;
#             then the tree sum again at 16,777,215 nodes (`--size paper`, its report in
#             DIR/suite-tree-sum-paper); fib last, without OpenMP (its tasks take 10-30 s a run
#             of fib without cutoff);
#   overheads Friendly Barriers' steal costs at MAX workers: `magpie bench K --overheads` on
#             jacobi, fft, cilksort, barnes-hut, uts and lud (the victims' share is the figure);
#             and uts, a task per node, under each policy and in chunks of 32 nodes, with the
#             peers (uts scaled worst at 16 workers: see docs/RESULTS.md);
#   corun     DWS co-running pairs, every sharing mode (`magpie corun A B`): four pairs at MAX/2
#             workers each (no oversubscription), two at MAX workers each (each program asks for
#             every core);
#   dist      magpie-dist over MPI at 4, 8 and MAX ranks (one rank per core): hf and tce under
#             stealing with and without retention, 10 iterations; UTS T1 on MAX ranks against the
#             shared-memory pool at MAX workers. Skipped, with a message, without mpirun or
#             without a magpie-dist built with the `mpi` feature.
#
#   bash scripts/many-cores.sh [--out DIR] [--max N] [--parts suite,overheads,corun,dist]
#                              [--kernels K,..]
#
# --kernels limits the suite part to those kernels (as `magpie bench --help` names them; fib
# still runs last, without OpenMP), to finish a curve that an earlier run had no time for.
#
# Every run checks its result (the kernels against their serial twins or known answers, the
# collections their node counts); a failed check fails that command, which is reported and the
# script goes on with the next, exiting 1 at the end. Raw output goes to DIR (default
# many-cores): one log or JSON file per command. MAGPIE and MAGPIE_DIST name prebuilt binaries
# (default: built here into target/release; the suite finds the C++ peers in target/peers, built
# by scripts/build-peers.sh). Each part's commands are listed as they start, so a figure can be
# reproduced alone. On a 16-core Xeon the overheads, dist and corun parts took 3 minutes
# together; the suite takes most of the run (it did not finish in the 4.5 minutes left there).
# A second session ran 11 kernels at 1, 4 and 16 workers in 84 s, one invocation each, and fib
# in 17 s.
set -uo pipefail
cd "$(dirname "$0")/.."

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit "${1:-2}"
}
out=many-cores
max=$(nproc)
parts=suite,overheads,corun,dist
only=
while [ $# -gt 0 ]; do
    case $1 in
    --out | --max | --parts | --kernels)
        if [ $# -lt 2 ] || [ -z "$2" ]; then
            echo "error: $1 needs a value" >&2
            usage
        fi
        case $1 in --out) out=$2 ;; --max) max=$2 ;; --parts) parts=$2 ;; --kernels) only=$2 ;; esac
        shift 2
        ;;
    -h | --help) usage 0 ;;
    *) echo "error: unknown option '$1'" >&2; usage ;;
    esac
done
case $max in '' | *[!0-9]* | 0 | 1) echo "error: --max '$max': expected a whole number from 2" >&2; exit 2 ;; esac
for p in ${parts//,/ }; do
    case $p in suite | overheads | corun | dist) ;;
    *) echo "error: --parts: unknown part '$p' (expected suite, overheads, corun, dist)" >&2; exit 2 ;;
    esac
done
want() { [[ ",$parts," == *",$1,"* ]]; }
if [ -n "$only" ] && ! want suite; then
    echo "error: --kernels limits the suite part, which --parts '$parts' leaves out" >&2
    exit 2
fi

if [ -z "${MAGPIE:-}" ]; then
    cargo build --locked --release -q -p magpie-cli || exit 1
    bash scripts/build-rayon-compare.sh || exit 1
    MAGPIE=target/release/magpie
fi
if [ -z "${MAGPIE_DIST:-}" ] && want dist && command -v mpirun >/dev/null; then
    cargo build --locked --release -q -p magpie-dist-bench --features magpie-dist-bench/mpi || exit 1
    MAGPIE_DIST=target/release/magpie-dist
fi
for b in "$MAGPIE" ${MAGPIE_DIST:+"$MAGPIE_DIST"}; do
    [ -x "$b" ] || { echo "error: '$b' is not an executable (MAGPIE / MAGPIE_DIST)" >&2; exit 2; }
done
MAGPIE=$(realpath "$MAGPIE")
# The suite's kernels, read from the binary (and checked against --kernels) before anything runs.
if want suite; then
    all=$("$MAGPIE" bench --help | awk '/^Kernels/ { f = 1; next } f && /^  [a-z]/ { print $1 } f && /^$/ { exit }')
    if [ -z "$all" ]; then
        echo "error: could not read the kernels from '$MAGPIE bench --help'" >&2
        exit 1
    fi
    if [ -n "$only" ]; then
        [ -n "${only//,/}" ] || { echo "error: --kernels '$only' names no kernel" >&2; exit 2; }
        for k in ${only//,/ }; do
            grep -qx -- "$k" <<<"$all" || {
                echo "error: --kernels: unknown kernel '$k' (expected: $(paste -sd' ' <<<"$all"))" >&2
                exit 2
            }
        done
        all=$(tr ',' '\n' <<<"$only")
    fi
fi
mkdir -p "$out"
failed=0
# run NAME CMD...: runs CMD with its stdout in $out/NAME and its stderr in $out/NAME.err,
# saying so first; a failure is counted and reported, not fatal.
run() {
    local name=$1
    shift
    echo "[$(date +%T)] $*" >&2
    "$@" >"$out/$name" 2>"$out/$name.err"
    local rc=$?
    if [ $rc -ne 0 ]; then
        echo "  FAILED (exit $rc): see $out/$name.err" >&2
        tail -3 "$out/$name.err" >&2
        failed=$((failed + 1))
    fi
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" | tee "$out/machine.txt" >&2

if want overheads; then
    for k in jacobi fft cilksort barnes-hut uts lud; do
        run "overheads-$k-$max.txt" "$MAGPIE" bench "$k" --workers "$max" --runs 5 --no-peers \
            --no-serial --overheads
    done
    for policy in work-first help-first adaptive; do
        run "uts-$policy-$max.txt" "$MAGPIE" bench uts --workers "$max" --runs 5 --policy "$policy" \
            --overheads
    done
    run "uts-grain32-$max.txt" "$MAGPIE" bench uts --workers "$max" --runs 5 --grain 32 --overheads
fi

if want dist; then
    if ! command -v mpirun >/dev/null || [ -z "${MAGPIE_DIST:-}" ]; then
        echo "dist: skipped (needs mpirun and MAGPIE_DIST, a magpie-dist built with --features mpi)" >&2
    else
        MAGPIE_DIST=$(realpath "$MAGPIE_DIST")
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        for p in 4 8 "$max"; do
            [ "$p" -le "$max" ] || continue
            for k in hf tce; do
                for s in steal steal-retentive; do
                    run "dist-$k-$s-$p.json" mpirun -n "$p" "$MAGPIE_DIST" run "$k" --n 200 \
                        --strategy "$s" --iterations 10 --json
                done
            done
        done
        for s in steal steal-retentive; do
            run "dist-uts-T1-$s-$max.json" mpirun -n "$max" "$MAGPIE_DIST" run uts --tree T1 \
                --strategy "$s" --iterations 10 --json
        done
        run "pool-uts-T1-$max.json" "$MAGPIE" bench uts --tree T1 --workers "$max" --runs 10 \
            --no-peers --no-serial --json
    fi
fi

if want corun; then
    for w in $((max / 2)) "$max"; do
        pairs=("fib:40:20 heat" "fib:40:20 uts" "heat sort" "uts fj:10000")
        [ "$w" = "$max" ] && pairs=("fib:40:20 heat" "heat sort")
        for pair in "${pairs[@]}"; do
            read -r a b <<<"$pair"
            name="corun-${a%%:*}-${b%%:*}-$w"
            run "$name.json" "$MAGPIE" corun "$a" "$b" --workers "$w" --runs 5 --solo-runs 5 \
                --json --out "$out/$name"
        done
    done
fi

if want suite; then
    list=1
    w=2
    while [ "$w" -lt "$max" ]; do
        list=$list,$w
        w=$((w * 2))
    done
    list=$list,$max
    # fib without cutoff last and without OpenMP, whose tasks took 11-29 s a run of fib(36) at
    # 2-8 threads on 16 cores (0.05 s serial): with it, fib alone would take most of the budget.
    for k in $(grep -vx fib <<<"$all"); do
        run "suite-$k.txt" "$MAGPIE" suite --kernels "$k" --policies adaptive --workers "$list" \
            --runs 3 --out "$out/suite-$k"
    done
    # The tree sum at chili's larger size (16,777,215 nodes) with chili and rayon beside it:
    # the speedup over serial at MAX workers is the figure Spice and chili publish.
    if grep -qx tree-sum <<<"$all"; then
        run suite-tree-sum-paper.txt "$MAGPIE" suite --kernels tree-sum --size paper \
            --policies adaptive --workers "$list" --runs 3 --out "$out/suite-tree-sum-paper"
    fi
    if grep -qx fib <<<"$all"; then
        run suite-fib.txt "$MAGPIE" suite --kernels fib --peers rayon,chili,tbb --policies adaptive \
            --workers "$list" --runs 3 --out "$out/suite-fib"
    fi
fi

if [ "$failed" -gt 0 ]; then
    echo "$failed command(s) failed; their stderr is in $out/*.err" >&2
    exit 1
fi
echo "all parts done; raw output in $out/" >&2
