#!/usr/bin/env bash
# A user's crate on magpie-dist alone (`downstream-dist/`): copied out of this repository into a
# temporary folder, pointed at this checkout's crates/magpie-dist, built with cargo's default
# release profile, then checked: its Cargo.lock must hold the library and its few dependencies
# (serde and serde_json with theirs), none of the benchmark suite's (magpie-bench, rayon, chili,
# indicatif, mimalloc, libffi); and the program's answer must be right.
#
#   bash scripts/downstream-dist.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/magpie-dist-downstream.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cp -r downstream-dist/Cargo.toml downstream-dist/src "$dir/"
# The workspace's versions of the shared dependencies (cargo drops the entries it does not need).
cp Cargo.lock "$dir/"
sed -i "s|path = \"../crates/magpie-dist\"|path = \"$repo/crates/magpie-dist\"|" "$dir/Cargo.toml"
start=$(date +%s)
(cd "$dir" && CARGO_TARGET_DIR="$repo/target/downstream-dist" cargo build --release -q)
secs=$(( $(date +%s) - start ))
packages=$(grep -c '^name = ' "$dir/Cargo.lock")
echo "downstream-dist: built in ${secs} s; its Cargo.lock: $(wc -l < "$dir/Cargo.lock") lines, ${packages} packages:" \
    "$(grep '^name = ' "$dir/Cargo.lock" | sed 's/name = "\(.*\)"/\1/' | paste -sd' ' -)"
for unwanted in magpie-bench magpie rayon chili indicatif mimalloc libffi magpie-view; do
    if grep -qx "name = \"$unwanted\"" "$dir/Cargo.lock"; then
        echo "error: a crate built on magpie-dist pulls in $unwanted" >&2
        exit 1
    fi
done
"$repo/target/downstream-dist/release/magpie-dist-downstream"
