# shellcheck shell=bash
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

# parse_bench_options ARGS...: reads --rounds, --runs, --workers, --kernels and --size into the
# variables of those names (the caller sets their defaults first, and defines `usage`), and
# checks that rounds and runs are positive whole numbers.
# shellcheck disable=SC2034 # the variables are the caller's, read after this returns
parse_bench_options() {
    while [ $# -gt 0 ]; do
        [ $# -ge 2 ] || usage
        case $1 in
        --rounds) rounds=$2 ;;
        --runs) runs=$2 ;;
        --workers) workers=$2 ;;
        --kernels) kernels=$2 ;;
        --size) size=$2 ;;
        *) usage ;;
        esac
        shift 2
    done
    local v
    for v in "$rounds" "$runs"; do
        if ! [[ $v =~ ^[1-9][0-9]*$ ]]; then
            echo "error: --rounds and --runs take a positive whole number, not '$v'" >&2
            exit 2
        fi
    done
}

# paired_rows FN_A FN_B ROW_FN: for each kernel of $kernels and worker count of $workers (both
# comma-separated), calls `FN_A KERNEL WORKERS` and `FN_B KERNEL WORKERS` (each prints one time)
# alternately $rounds times, so drifting machine load hits both alike, then
# `ROW_FN KERNEL WORKERS MEDIAN_A MEDIAN_B` (which prints the row).
paired_rows() {
    local fa=$1 fb=$2 row=$3 k w r ks ws a b
    IFS=, read -ra ks <<<"$kernels"
    IFS=, read -ra ws <<<"$workers"
    for k in "${ks[@]}"; do
        for w in "${ws[@]}"; do
            a=()
            b=()
            for ((r = 0; r < rounds; r++)); do
                a+=("$("$fa" "$k" "$w")")
                b+=("$("$fb" "$k" "$w")")
            done
            "$row" "$k" "$w" "$(printf '%s\n' "${a[@]}" | median)" "$(printf '%s\n' "${b[@]}" | median)"
        done
    done
}
