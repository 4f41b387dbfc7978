#!/usr/bin/env bash
# Builds magpie's examples (debug, as `cargo test` builds them; `--release` for release builds)
# and runs the user-facing ones (crates/magpie/examples/),
# each of which checks its own answer against a serial twin and exits non-zero when it is
# wrong. Fails if any example fails. The benchmarks there (join_instructions,
# schedule_overhead) are not run: scripts/join-instructions.sh and the schedule docs run them.
#
#   bash scripts/run-examples.sh [--release]
#
# Honours CARGO_TARGET_DIR (default: target/).
set -euo pipefail
cd "$(dirname "$0")/.."

examples=(quicksort tree_walk places trace_perfetto schedule_loop corun_pair)

profile=debug
case "${1:-}" in
"") ;;
--release) profile=release ;;
*) echo "usage: bash scripts/run-examples.sh [--release]" >&2; exit 2 ;;
esac
if [ "$profile" = release ]; then
    cargo build --locked --release -p magpie --examples
else
    cargo build --locked -p magpie --examples
fi
bin_dir="${CARGO_TARGET_DIR:-target}/$profile/examples"

failed=()
for name in "${examples[@]}"; do
    echo "== example $name"
    if ! "$bin_dir/$name"; then
        echo "example $name FAILED" >&2
        failed+=("$name")
    fi
done

if ((${#failed[@]})); then
    echo "failed examples: ${failed[*]}" >&2
    exit 1
fi
echo "all ${#examples[@]} examples passed"
