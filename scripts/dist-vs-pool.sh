#!/usr/bin/env bash
# UTS over 2 MPI ranks (magpie-dist's task collection, one-sided stealing) against magpie's
# shared-memory pool at 2 workers, on the same trees, alternated ROUNDS times so drifting load
# hits both alike. Prints, per tree, the median over rounds of each side's median time (5 timed
# runs or iterations each) and the distributed run's speed as a multiple of the pool's (above
# 1: faster). Both sides check every run's node count.
#
#   bash scripts/dist-vs-pool.sh [--trees T1,T3] [--rounds 3] [--default-profile]
#
# --default-profile builds both binaries as a user's crate gets them: cargo's default release
# profile (no LTO, 16 codegen units, no debug info) and none of this workspace's
# `.cargo/config.toml` flags (an empty RUSTFLAGS replaces them), into target/default-profile.
# Without it, the workspace's own release build (target/release) is used. Needs MPI
# (scripts/install-mpi.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
trees=T1,T3
rounds=3
default_profile=0
while [ $# -gt 0 ]; do
    case $1 in
    --trees) trees=${2:?--trees needs a value}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
    --default-profile) default_profile=1; shift ;;
    *) echo "error: unknown option '$1'" >&2; sed -n '8p' "$0" >&2; exit 2 ;;
    esac
done
case $rounds in '' | *[!0-9]* | 0) echo "error: --rounds '$rounds': expected a whole number from 1" >&2; exit 2 ;; esac
command -v mpirun >/dev/null || { echo "error: mpirun not found (bash scripts/install-mpi.sh)" >&2; exit 2; }
if [ $default_profile = 1 ]; then
    dir=target/default-profile
    echo "building with cargo's default release profile into $dir" >&2
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        CARGO_PROFILE_RELEASE_DEBUG=0 RUSTFLAGS="" CARGO_TARGET_DIR=$dir \
        cargo build --release -q -p magpie-cli -p magpie-dist-bench --features magpie-dist-bench/mpi
else
    dir=target
    cargo build --release -q -p magpie-cli -p magpie-dist-bench --features magpie-dist-bench/mpi
fi
bin=$dir/release
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "| tree | pool, 2 workers (s) | 2 ranks (s) | distributed speed ÷ pool speed |"
echo "|---|---|---|---|"
for t in ${trees//,/ }; do
    pool=() dist=()
    for _ in $(seq "$rounds"); do
        pool+=("$("$bin/magpie" bench uts --tree "$t" --workers 2 --runs 5 --no-peers --no-serial --json |
            python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["verified"], o; print(o["median_s"])')")
        dist+=("$(mpirun -n 2 "$bin/magpie-dist" run uts --tree "$t" --iterations 5 --json |
            python3 -c 'import json,sys,statistics as s; o=json.load(sys.stdin); assert o["verified"], o; print(s.median(i["time_s"] for i in o["iterations"]))')")
    done
    p=$(printf '%s\n' "${pool[@]}" | median)
    d=$(printf '%s\n' "${dist[@]}" | median)
    echo "| $t | $p | $d | $(python3 -c "print(f'{$p / $d:.2f}')") |"
done
