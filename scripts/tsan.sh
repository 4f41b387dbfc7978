#!/usr/bin/env bash
# Runs magpie's concurrent code under ThreadSanitizer: the runtime's unit and integration tests
# (deques, latches, the join protocol, sleep and wake, inboxes, DWS, schedule regions, the
# stress test at 10^6 tasks, home-affine resumption and migration), magpie-dist's unit tests (its
# split deque and transports) and magpie-splice's tests (the spliced walk and the dependence
# graph on the pool). The benchmark crates' kernels (magpie-bench, magpie-dist-bench) are user
# code of the same runtime, checked against their serial twins by the plain test run; under the
# sanitizer they took more than five minutes of a 2-core machine's CI for no code of the
# runtime's that the runtime's own tests do not reach.
# Any data race the sanitizer reports fails the run. Then it runs a canary, a test with a race
# planted between two join halves on two workers (crates/magpie/tests/tsan_canary.rs), and fails
# unless the sanitizer reports that race: a clean run means something only if a dirty one shows.
#
# How it is built: nightly Rust with `-Zsanitizer=thread`, the standard library rebuilt with it
# (`-Zbuild-std`, which needs nightly's rust-src), in target/tsan. `--cfg magpie_tsan` gives task
# frames the system allocator (mimalloc's C code is not instrumented: see `HeapJob` in job.rs).
# Function entry and exit are not instrumented (`-tsan-instrument-func-entry-exit=0`): the
# sanitizer keeps one shadow call stack per thread, and a fiber switch it is not told of leaves
# frames on it that never return (100,000 nested joins overflow it). Telling it of each switch
# would have to happen inside corosensei's switch itself. Without them a report names the racing
# accesses' lines with fewer of their callers than usual. Left out:
#   - panics::deep_join_recursion_does_not_overflow: its 100,000 fresh fiber stacks exhaust the
#     sanitizer's own memory mappings ("failed to deallocate", ENOMEM);
#   - overflow::fiber_stack_overflow_is_reported: the sanitizer handles the guard page's SIGSEGV
#     itself, before magpie's handler can print its message;
#   - the benchmark crates, as said above.
#
# Needs the dated nightly scripts/nightly.sh names, with rust-src (installed here if missing, as
# for Miri; the user's own `nightly` is never updated). Exits 0
# when the run is clean and the canary is caught; cargo's own non-zero code (101) on a race or a
# failed test; 1 when the canary goes unreported; 3 when nightly or rust-src cannot be had
# (scripts/test.sh then skips this run and says so).
#
# Usage: scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/nightly.sh
. scripts/nightly.sh

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

have_nightly_src() {
    rustup +"$NIGHTLY" component list --installed 2>/dev/null | grep -q '^rust-src'
}

if ! command -v rustup >/dev/null 2>&1; then
    echo "ThreadSanitizer needs rustup (https://rustup.rs) for a nightly toolchain with rust-src"
    exit 3
fi
if ! have_nightly_src; then
    echo "$NIGHTLY's rust-src is not installed: rustup installs it"
    rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src ||
        rustup component add --toolchain "$NIGHTLY" rust-src || true
    if ! have_nightly_src; then
        echo "rustup could not install $NIGHTLY's rust-src"
        exit 3
    fi
fi

host=$(rustc +"$NIGHTLY" -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Zsanitizer=thread --cfg magpie_tsan -Cllvm-args=-tsan-instrument-func-entry-exit=0"
export RUSTDOCFLAGS="$RUSTFLAGS"
export CARGO_TARGET_DIR=target/tsan
# Line tables, whatever the caller's profile says (scripts/test.sh turns debug info off): a
# race report names the racing accesses' files and lines through them.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only CARGO_PROFILE_TEST_DEBUG=line-tables-only
# No suppressions: every race the sanitizer reports in these crates fails the run.
export TSAN_OPTIONS="halt_on_error=1"
tsan_cargo() {
    cargo +"$NIGHTLY" "$1" -Zbuild-std --target "$host" --locked "${@:2}"
}

echo "== ThreadSanitizer: magpie's tests"
# The sanitizer checks every access of the runs it watches, whatever their interleaving; the
# repeats that hunt for a rare interleaving (a deadlock, a lost task) are the plain test run's.
# So the stress test makes 10^6 tasks here (MAGPIE_STRESS_TASKS), not 10^7; the trace test
# reconstructs 40 random programs under contention (STRESS_PROGRAMS), not 240; and the waiting
# tests run each scenario once (`cfg(magpie_tsan)` in them). On a 2-core machine those repeats
# took about 3 of ThreadSanitizer's 6.5 minutes.
export MAGPIE_STRESS_TASKS=1000000
export STRESS_PROGRAMS=40
tsan_cargo test -p magpie --lib --tests -- \
    --skip deep_join_recursion_does_not_overflow \
    --skip fiber_stack_overflow_is_reported \
    --skip the_sanitizer_reports_a_race_between_two_join_halves
echo "== ThreadSanitizer: magpie-dist's unit tests and magpie-splice's tests"
tsan_cargo test -p magpie-dist --lib
tsan_cargo test -p magpie-splice --lib --tests

echo "== ThreadSanitizer: the canary (a planted race, which must be reported)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if tsan_cargo test -p magpie --test tsan_canary >"$log" 2>&1; then
    cat "$log"
    die "the canary's planted race went unreported: the sanitizer run above proves nothing"
fi
if ! grep -q "WARNING: ThreadSanitizer: data race" "$log"; then
    cat "$log"
    die "the canary failed without a data race report (see above)"
fi
echo "ok: the canary's race was reported; $(grep -m1 -o 'SUMMARY: ThreadSanitizer: data race [^ ]*' "$log")"
