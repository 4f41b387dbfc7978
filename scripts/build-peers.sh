#!/usr/bin/env bash
# Builds the C++ peer runtimes that magpie is measured against side by side: Intel oneTBB
# (`tbb::task_group`) and OpenMP tasks (GCC's libgomp), each running the fib, fj, nqueens, uts,
# sort, matmul and heat kernels (sources in peers/). The binaries go to target/peers/tbb_kernels and
# target/peers/omp_kernels; `magpie_bench::native` runs them.
#
# Idempotent: checks for g++, the TBB headers and library (Debian: libtbb-dev) and OpenMP
# (libgomp, which comes with g++), installs g++ / libtbb-dev with apt-get when missing (as root;
# otherwise it says what to install and exits 1), and rebuilds a binary only when it is older
# than its source, common.hpp or this script.
#
# Usage: scripts/build-peers.sh [--force]   (--force rebuilds even when up to date)
# Environment: CXX (default g++), CXXFLAGS (appended to -O3 -std=c++17 -ffp-contract=off).
#
# -O3, as the Rust kernels' release builds (opt-level 3): GCC's -O2 leaves the inner loops of
# matmul and heat unvectorized, which would measure the compilers rather than the runtimes.
# -ffp-contract=off (and no -ffast-math): no fused multiply-adds, so matmul and heat compute each
# entry with the same roundings as the Rust kernels, bit for bit.
set -euo pipefail
cd "$(dirname "$0")/.."

force=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "error: unknown argument '$arg' (usage: scripts/build-peers.sh [--force])" >&2
            exit 2
            ;;
    esac
done

CXX="${CXX:-g++}"
# Word splitting of CXXFLAGS is intended (several flags in one variable).
read -r -a extra_flags <<<"${CXXFLAGS:-}"
base_flags=(-O3 -std=c++17 -ffp-contract=off -Wall -Wextra ${extra_flags[@]+"${extra_flags[@]}"})
out=target/peers
src=peers
mkdir -p "$out" "$out/checks"

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh

# --- g++ -------------------------------------------------------------------------------------
if ! command -v "$CXX" >/dev/null 2>&1; then
    if [ "$CXX" = g++ ]; then
        echo "g++ not found (Debian package g++)"
        apt_install g++
    else
        die "C++ compiler '$CXX' not found; install it or unset CXX to use g++"
    fi
fi

# Compiles and links a tiny program with the given flags; returns non-zero if that fails.
try_compile() {
    local name=$1 code=$2
    shift 2
    printf '%s\n' "$code" >"$out/checks/$name.cpp"
    "$CXX" -std=c++17 "$out/checks/$name.cpp" -o "$out/checks/$name" "$@" \
        >"$out/checks/$name.log" 2>&1
}

tbb_probe='#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/global_control.h>
int main() { tbb::task_group g; int x = 0; g.run([&] { x = 1; }); g.wait(); return x == 1 ? 0 : 1; }'

omp_probe='#include <omp.h>
int main() { int x = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
{
#pragma omp task shared(x)
  x = 1;
#pragma omp taskwait
}
  return x == 1 ? 0 : 1; }'

# --- TBB -------------------------------------------------------------------------------------
if ! try_compile tbb_probe "$tbb_probe" -ltbb; then
    echo "oneTBB headers/library not found (Debian package libtbb-dev)"
    apt_install libtbb-dev
    try_compile tbb_probe "$tbb_probe" -ltbb ||
        die "libtbb-dev is installed but a TBB test program still does not build; see $out/checks/tbb_probe.log"
fi
echo "ok: oneTBB (task_group) builds and links with -ltbb"

# --- OpenMP ----------------------------------------------------------------------------------
if ! try_compile omp_probe "$omp_probe" -fopenmp; then
    die "'$CXX -fopenmp' cannot build an OpenMP task program (GCC's libgomp missing?); see $out/checks/omp_probe.log"
fi
echo "ok: OpenMP tasks build with -fopenmp"

# --- build -----------------------------------------------------------------------------------
# Rebuilds $out/$1 from $src/$2 (+ the shared header) unless the binary is newer than all of them.
build() {
    local bin=$out/$1 source=$src/$2
    shift 2
    local deps=("$source" "$src/common.hpp" "$0")
    local stale=$force
    if [ ! -x "$bin" ]; then
        stale=1
    else
        for d in "${deps[@]}"; do
            if [ "$d" -nt "$bin" ]; then stale=1; fi
        done
    fi
    if [ "$stale" -eq 0 ]; then
        echo "up to date: $bin"
        return
    fi
    echo "building: $CXX ${base_flags[*]} $source -o $bin $*"
    "$CXX" "${base_flags[@]}" "$source" -o "$bin.tmp" "$@"
    mv -f "$bin.tmp" "$bin"
}

build tbb_kernels tbb_kernels.cpp -ltbb
build omp_kernels omp_kernels.cpp -fopenmp

echo
echo "peer binaries:"
echo "  $(pwd)/$out/tbb_kernels   (oneTBB task_group)"
echo "  $(pwd)/$out/omp_kernels   (OpenMP tasks, libgomp)"
echo "  each takes: KERNEL N THREADS RUNS, with KERNEL one of fib fj nqueens uts sort matmul heat"
