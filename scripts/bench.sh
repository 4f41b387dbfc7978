#!/usr/bin/env bash
# Runs magpie's benchmark suite (every kernel, every policy, 1 and 2 workers, with the serial
# twins and the rayon/chili peers measured in the same run) and writes the Markdown report to
# target/magpie-report.md. Extra arguments go to `magpie report` (see `magpie report --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found; install Rust (https://rustup.rs) and run this again" >&2
    exit 2
fi
cargo build --locked --release -p magpie-cli
exec ./target/release/magpie report "$@"
