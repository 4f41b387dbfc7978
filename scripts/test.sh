#!/usr/bin/env bash
# Runs magpie's whole test suite: formatting (cargo fmt --check); a build with the oldest Rust
# the crates declare (scripts/check-msrv.sh); clippy and rustdoc with warnings as errors; a reason
# for every atomic ordering (scripts/check-orderings.sh); the core's layering
# (scripts/import-circles.py); the instructions of a join nobody steals, and of a call from
# outside the pool, against their budget (scripts/join-instructions.sh); the two builds that run the rayon programs for the CLI's tests
# (scripts/build-rayon-compare.sh --profile dev); unit, integration, stress and doc tests of
# every crate; the examples in crates/magpie/examples (scripts/run-examples.sh); `cargo check` of
# magpie and rayon-core for aarch64 Linux, macOS and Windows (scripts/check-platforms.sh); the core's
# unit tests and a few integration tests built for aarch64 Linux and run under qemu-user
# (scripts/test-aarch64.sh); magpie's
# rayon-core (its tests, rayon's and rayon-core's own suites against it, a downstream rayon and
# ndarray crate on it); the suite's HTML report rendered in headless Chromium
# (scripts/check-report.sh); the tests of the optional hwloc feature; a user's crate on
# magpie-dist alone (scripts/downstream-dist.sh); magpie-dist's MPI tests and examples under
# mpirun; magpie-splice's unit tests under Miri; the runtime's tests under ThreadSanitizer
# (scripts/tsan.sh); then the loom model tests of the concurrent structures (deque, latches, the
# join protocol, sleep/wake, the inbox, DWS's core table slots, a schedule region's held queue
# and stall rule, a lent worker's closing protocol, the leapfrogging rule's hand-over of a half a
# thief may not start; magpie-dist's split deque), which need the crates compiled with
# `--cfg loom` in a target directory of their own.
#
# Two parts that build in target folders of their own run beside parts that leave a core idle:
# the other platforms' checks and the aarch64 tests beside the tests' run, Miri beside the
# report's check (`beside` and `joined` below).
#
# Parts that need something installed (the C++ peers, Chromium, hwloc, Open MPI, Miri, nightly's
# rust-src, valgrind, qemu-user, the registry for rayon's suites, the declared Rust) install it with their
# own scripts. When that cannot be done, a user's run skips the part with a warning; a run under
# CI=true (.ci/run) fails instead (scripts/skip.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/skip.sh
. scripts/skip.sh
# shellcheck source=scripts/nightly.sh
. scripts/nightly.sh

# part NAME: starts the next part of the run. Each part's wall time, and the CPU time its
# commands used (user and system, all cores), are kept, and the list is printed when the run
# ends (passed or not), so a slow part shows which it is, and whether it kept the cores busy.
run_start=$SECONDS
part_name=""
part_start=$SECONDS
part_cpu=0
part_times=()
# cpu_now: sets `cpu` to the CPU seconds the finished commands of this shell used so far, from
# bash's `times`, run in this shell: in a subshell (`$(...)`) its children's times start from zero.
times_file=$(mktemp)
cpu=0
cpu_now() {
    times >"$times_file"
    cpu=$(awk 'NR == 2 {
        s = 0
        for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] }
        printf "%d\n", s
    }' "$times_file")
}
end_part() {
    if [ -n "$part_name" ]; then
        cpu_now
        part_times+=("$(printf '%6d s %6d s  %s' $((SECONDS - part_start)) $((cpu - part_cpu)) \
            "${part_name%%: scripts/*}")")
    fi
    part_name=""
}
part() {
    end_part
    part_name=$1
    part_start=$SECONDS
    cpu_now
    part_cpu=$cpu
    echo "== $1"
}
# The parts started `beside` the others (see `beside` below).
declare -A beside_pid=() beside_log=() beside_start=()
print_part_times() {
    local status=$?
    end_part
    # A part started `beside` the others that has not been joined (the run failed first).
    local pid
    for pid in "${beside_pid[@]}"; do
        pkill -TERM -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    echo "== time per part (wall seconds, CPU seconds)"
    printf '%s\n' "${part_times[@]}"
    cpu_now
    printf '%6d s %6d s  the whole run (exit %d)\n' $((SECONDS - run_start)) "$cpu" "$status"
    rm -f "$times_file"
}
trap print_part_times EXIT

# beside NAME COMMAND...: starts COMMAND now, beside the parts that follow, its output kept
# apart. For a part that builds in a target folder of its own while the parts it runs beside
# leave a core idle (running tests, an interpreter, a browser). `joined NAME` waits for it,
# prints its output, lists its wall time, and ends the run if it failed; its CPU seconds count
# in the part that joins it.
beside() {
    local name=$1
    shift
    beside_log[$name]=$(mktemp)
    beside_start[$name]=$SECONDS
    echo "== $name: started beside the parts that follow (its output comes when it ends)"
    ("$@") >"${beside_log[$name]}" 2>&1 &
    beside_pid[$name]=$!
}
joined() {
    local name=$1 status=0
    wait "${beside_pid[$name]}" || status=$?
    unset "beside_pid[$name]"
    echo "== $name: ended (beside the parts above), its output:"
    cat "${beside_log[$name]}"
    rm -f "${beside_log[$name]}"
    part_times+=("$(printf '%6d s %8s  %s (beside the parts above)' \
        $((SECONDS - beside_start[$name])) "" "${name%%: scripts/*}")")
    if [ "$status" -ne 0 ]; then
        echo "error: $name failed (exit $status)" >&2
        exit "$status"
    fi
}

if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found; install Rust (https://rustup.rs) and run this again" >&2
    exit 2
fi

# A whole run compiles the workspace about ten ways (debug, release, loom, ThreadSanitizer,
# rayon's suites, downstream crates). Incremental caches and full debug info would take about
# 17 GB of disk between them, and debug info is a sixth of the debug builds' time (the tests'
# build: 179 s with line tables, 149 s without). A run from scratch gains nothing from either,
# so both are off: a failing test still names its panic's file and line; for a backtrace with
# line numbers, run that test again with `cargo test`. About 5 GB are left in target/ at the end.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=0
export CARGO_PROFILE_TEST_DEBUG=0
avail_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ -n "$avail_kb" ] && [ "$avail_kb" -lt $((10 * 1024 * 1024)) ]; then
    echo "warning: only $((avail_kb / 1024)) MB free on this disk; a whole run needs about 6 GB" >&2
fi

part "C++ peers (TBB, OpenMP): scripts/build-peers.sh"
# The peers are optional for magpie itself: if they cannot be built here (no root, no apt), their
# tests and benchmarks say so and skip them.
if ! bash scripts/build-peers.sh; then
    skip_part "the C++ peers could not be built; their tests will be skipped"
fi

part "cargo fmt --all --check (and rayon-core's, and its compare crate's)"
if ! cargo fmt --version >/dev/null 2>&1; then
    rustup component add rustfmt || {
        echo "error: cargo fmt is missing and rustup could not add it (rustup component add rustfmt)" >&2
        exit 2
    }
fi
cargo fmt --all --check
(cd rayon-core && cargo fmt --check)
rustfmt --edition 2021 --check rayon-core/compare/src/main.rs

part "the oldest Rust the crates declare (rust-version): scripts/check-msrv.sh"
bash scripts/check-msrv.sh

part "cargo clippy --workspace --all-targets -- -D warnings"
# The workspace's lints (Cargo.toml: every unsafe block documented, no unsafe operation outside
# an unsafe block) and clippy's defaults, as errors; magpie's rayon-core, outside the workspace,
# with the same lints. A toolchain without clippy gets it from rustup.
if ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add clippy || {
        echo "error: cargo clippy is missing and rustup could not add it (rustup component add clippy)" >&2
        exit 2
    }
fi
cargo clippy --workspace --all-targets --locked -- -D warnings
(cd rayon-core && cargo clippy --all-targets --quiet -- -D warnings)

part "rustdoc: every crate's documentation builds and its links resolve (warnings as errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
(cd rayon-core && RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet)

part "every atomic ordering says why it is enough: scripts/check-orderings.sh"
bash scripts/check-orderings.sh

part "the core's layering: scripts/import-circles.py --max-circle 4 --no-core-imports"
# No import circle in the runtime crate larger than rayon-core's (4 modules), no import from the
# scheduler's core into a feature, and no feature method on a core type that the core could call
# without an import (docs/DESIGN.md, "Layering").
python3 scripts/import-circles.py --max-circle 4 --no-core-imports
# Neither the benchmark crate nor the command-line tool has an import circle: each kernel is one
# file that fills in its record, which the runner and the tool read without naming the kernel.
# The tool's layers, top down: the commands (commands/); the arguments they share (args.rs);
# what measures (measure/) and what renders (render/), which import neither each
# other nor a command; at the bottom the results (model/), the failures and how figures are
# written (format.rs), which import nothing above.
python3 scripts/import-circles.py crates/magpie-bench/src --max-circle 1 >/dev/null
python3 scripts/import-circles.py crates/magpie-cli/src --max-circle 1 --layers commands,args,render+measure,model+failure+format >/dev/null

part "the join's instruction budget: scripts/join-instructions.sh"
# A join nobody steals, counted under callgrind (fib without a cutoff on a one-worker pool, and
# on one worker of two with and without oldest-first hand-over), against the budget written in
# scripts/join-instructions.budget: a feature that adds work to the join path fails here. So
# does one that adds to an empty call from outside a pool whose worker sleeps.
bash scripts/join-instructions.sh

part "the rayon programs' two builds (debug), for the tests: scripts/build-rayon-compare.sh --profile dev"
bash scripts/build-rayon-compare.sh --profile dev

part "cargo test --workspace: building the tests"
cargo test --workspace --locked --no-run
# The other platforms' checks and the aarch64 tests build in target folders of their own: they
# run beside the tests and the examples, which leave a core idle much of the time.
other_platforms() {
    bash scripts/check-platforms.sh
    bash scripts/test-aarch64.sh
}
beside "other platforms (aarch64 Linux, macOS, Windows), and the core's tests on aarch64 Linux under qemu-user: scripts/check-platforms.sh, scripts/test-aarch64.sh" other_platforms
part "cargo test --workspace: running them"
cargo test --workspace --locked

part "the examples a user would copy: scripts/run-examples.sh"
# crates/magpie/examples: each checks its own answer (built by the step above, run here).
bash scripts/run-examples.sh
joined "other platforms (aarch64 Linux, macOS, Windows), and the core's tests on aarch64 Linux under qemu-user: scripts/check-platforms.sh, scripts/test-aarch64.sh"

part "the packages of magpie and magpie-dist: scripts/check-package.sh --no-verify"
bash scripts/check-package.sh --no-verify

part "rayon-core on magpie (rayon-core/): its own tests, rayon's and rayon-core's suites, a downstream crate"
# magpie's rayon-core stands outside the workspace (see rayon-core/Cargo.toml). Its own tests;
# then rayon 1.12.0's and rayon-core 1.13.0's published tests against it, all but rayon's doc
# tests (scripts/rayon-suite.sh: every test passes but the known failures it lists with their
# reasons); then a user's crate that uses rayon and ndarray, patched onto magpie, results
# checked (scripts/downstream-rayon.sh). Both scripts skip with a warning when the package
# registry cannot be reached.
(cd rayon-core && cargo test --quiet)
part "rayon's and rayon-core's published tests against magpie: scripts/rayon-suite.sh --no-rayon-doc-tests"
# All but rayon's 246 doc tests, which compile and link each example on its own (two minutes of
# a 2-core machine): rayon's unit and integration tests, rayon-core's tests and doc tests.
bash scripts/rayon-suite.sh --no-rayon-doc-tests
part "a user's crate on rayon and ndarray, patched onto magpie: scripts/downstream-rayon.sh"
bash scripts/downstream-rayon.sh

part "a user's crate on the magpie-dist library alone: scripts/downstream-dist.sh"
bash scripts/downstream-dist.sh

# Miri interprets on one core: it runs beside the report's check and the hwloc tests.
miri() {
    # The splice views hand out raw-pointer slices of shared buffers: Miri checks the unit
    # tests (views, the shadow checker, the spliced walk, random graph orders) for undefined
    # behaviour. Optional like the others: without rustup's nightly miri the run is skipped,
    # said here.
    if bash scripts/install-miri.sh; then
        cargo +"$NIGHTLY" miri test --locked -p magpie-splice --lib
    else
        skip_part "Miri could not be installed; the Miri run is skipped"
    fi
}
beside "Miri: scripts/install-miri.sh, then magpie-splice's unit tests under Miri" miri

part "the suite's report in a browser: scripts/install-chromium.sh, then scripts/check-report.sh"
# Optional like the others: without Chromium (no root, no apt) the browser check is skipped.
if bash scripts/install-chromium.sh; then
    bash scripts/check-report.sh
else
    skip_part "Chromium could not be installed; the report is not checked in a browser"
fi

part "hwloc: scripts/install-hwloc.sh, then the hwloc tests (--features hwloc)"
# The hwloc feature is optional too: without hwloc (no root, no apt) its tests are skipped. Only
# the tests named hwloc run (tests/hwloc.rs and topology.rs's hwloc unit tests), to keep CI short.
if bash scripts/install-hwloc.sh; then
    cargo test --locked -p magpie --features hwloc --lib --test hwloc -- hwloc
else
    skip_part "hwloc 2.x could not be installed; the hwloc tests are skipped"
fi

joined "Miri: scripts/install-miri.sh, then magpie-splice's unit tests under Miri"

part "MPI: scripts/install-mpi.sh, then magpie-dist's MPI tests (--features mpi, under mpirun)"
# MPI is optional for magpie: without it (no root, no apt) the MPI tests are skipped, said here.
# The library's own tests and doctests with the transport, then the tool's runs under mpirun.
if bash scripts/install-mpi.sh; then
    cargo clippy --locked -p magpie-dist -p magpie-dist-bench --all-targets \
        --features magpie-dist/mpi,magpie-dist-bench/mpi -- -D warnings
    # One command for both crates: two would build the mpi crate and its bindgen twice, under
    # two different feature unifications.
    cargo test --locked -p magpie-dist -p magpie-dist-bench \
        --features magpie-dist/mpi,magpie-dist-bench/mpi
else
    skip_part "Open MPI could not be installed; magpie-dist's MPI tests are skipped"
fi


part "ThreadSanitizer: scripts/tsan.sh"
# The runtime's tests under ThreadSanitizer, and a canary race it must report (see the script).
# Optional like the others: without nightly's rust-src (exit 3) the run is skipped, said here;
# a race, a failed test or an unreported canary (any other non-zero exit) fails the test command.
tsan=0
bash scripts/tsan.sh || tsan=$?
if [ "$tsan" -eq 3 ]; then
    skip_part "nightly Rust with rust-src could not be installed; the ThreadSanitizer run is skipped"
elif [ "$tsan" -ne 0 ]; then
    exit "$tsan"
fi

part "loom model tests (RUSTFLAGS=--cfg loom)"
# Optimised, for the models' many interleavings, but without the release profile's one codegen
# unit, thin LTO and debug info, which cost more to build than they save these runs.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom CARGO_PROFILE_RELEASE_LTO=false \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo test --locked --release -p magpie -p magpie-dist --lib
