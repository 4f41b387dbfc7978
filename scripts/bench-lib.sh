# Shared by compare-builds.sh and trace-overhead.sh (sourced, not run).

# bench_median BIN KERNEL WORKERS RUNS SIZE [VAR=VALUE...]: one `magpie bench` invocation without
# peers or serial twin, in an environment with MAGPIE_TRACE removed and the given variables set;
# prints its median, or stops the calling script if the run failed or was not verified.
bench_median() {
    local bin=$1 k=$2 w=$3 runs=$4 size=$5 out
    shift 5
    if ! out=$(env -u MAGPIE_TRACE "$@" "$bin" bench "$k" --workers "$w" --runs "$runs" \
        --size "$size" --no-peers --no-serial --json 2>/dev/null); then
        echo "error: $* $bin bench $k --workers $w failed" >&2
        exit 1
    fi
    if ! grep -q '"verified": *true' <<<"$out"; then
        echo "error: $* $bin bench $k --workers $w: result not verified" >&2
        exit 1
    fi
    grep -o '"median_s": *[0-9.eE+-]*' <<<"$out" | head -1 | sed 's/.*: *//'
}

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
