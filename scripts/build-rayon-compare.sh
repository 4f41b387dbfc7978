#!/usr/bin/env bash
# Builds the suite's rayon versions twice from one source (`rayon-core/compare`): once as is
# (rayon on its own core) and once with rayon-core patched to this repository's `rayon-core/`,
# as a user's one patch line does. The two binaries land in
#
#   target/rayon-compare/PROFILE/rayon     (rayon on its own core)
#   target/rayon-compare/PROFILE/magpie    (rayon on magpie's)
#
# `magpie suite` and `magpie bench` time the seven rayon programs with them: a release `magpie`
# uses the workspace pair, a debug one (the tests') the dev pair. scripts/rayon-on-magpie.sh
# uses the workspace or the default pair.
#
#   bash scripts/build-rayon-compare.sh [--profile workspace|default|dev]
#
# --profile workspace (the default here) builds as this workspace does (thin LTO, one codegen
# unit, 64-byte aligned code); default with cargo's default release profile and no flags, as a
# user's crate gets it; dev a debug build, for the tests. Each build's crate sits in
# target/rayon-compare/crate-CORE, with its own Cargo.lock, and both share one target folder, so
# a second run rebuilds only what changed. Each binary must say it runs on the core its name says. Exits 1 if a build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
profile=workspace
while [ $# -gt 0 ]; do
    case "$1" in
    --profile) profile=${2-}; shift 2 || usage ;;
    *) usage ;;
    esac
done
case "$profile" in
workspace | default | dev) ;;
*) echo "error: --profile: workspace, default or dev, not \`$profile\`" >&2; exit 2 ;;
esac
out="$repo/target/rayon-compare/$profile"
mkdir -p "$out"

for core in rayon magpie; do
    crate="$repo/target/rayon-compare/crate-$core"
    mkdir -p "$crate"
    rm -rf "$crate/src"
    cp -r "$repo/rayon-core/compare/src" "$crate/src"
    sed "s|path = \"../../crates/|path = \"$repo/crates/|" "$repo/rayon-core/compare/Cargo.toml" >"$crate/Cargo.toml.new"
    if [ "$core" = magpie ]; then
        printf '\n[patch.crates-io]\nrayon-core = { path = "%s/rayon-core" }\n' "$repo" >>"$crate/Cargo.toml.new"
    fi
    # Rewritten only when it changed, so cargo's fingerprints hold across runs.
    if cmp -s "$crate/Cargo.toml.new" "$crate/Cargo.toml"; then
        rm "$crate/Cargo.toml.new"
    else
        mv "$crate/Cargo.toml.new" "$crate/Cargo.toml"
    fi
    # One target folder for both: what does not depend on rayon-core (magpie, chili, serde, ...)
    # is compiled once; the rest twice, under different hashes, so neither evicts the other.
    target="$repo/target/rayon-compare/build-$profile"
    echo "== building rayon on $core's core ($profile profile)" >&2
    case "$profile" in
    workspace)
        (cd "$crate" && CARGO_TARGET_DIR="$target" CARGO_PROFILE_RELEASE_LTO=thin \
            CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_DEBUG=1 \
            RUSTFLAGS="-C llvm-args=-align-loops=64 -C llvm-args=-align-all-functions=6" \
            cargo build --release --quiet) || { echo "error: the $core build failed" >&2; exit 1; }
        built="$target/release/rayon-core-compare"
        ;;
    default)
        # An empty RUSTFLAGS also overrides this checkout's .cargo/config.toml, which the crate's
        # folder (inside target/) would otherwise pick up.
        (cd "$crate" && RUSTFLAGS="" CARGO_TARGET_DIR="$target" cargo build --release --quiet) ||
            { echo "error: the $core build failed" >&2; exit 1; }
        built="$target/release/rayon-core-compare"
        ;;
    dev)
        # No debug info: these are the tests' programs, not something a debugger opens.
        (cd "$crate" && RUSTFLAGS="" CARGO_PROFILE_DEV_DEBUG=0 CARGO_TARGET_DIR="$target" \
            cargo build --quiet) ||
            { echo "error: the $core build failed" >&2; exit 1; }
        built="$target/debug/rayon-core-compare"
        ;;
    esac
    got=$("$built" --which-core) || { echo "error: the $core build does not run" >&2; exit 1; }
    if [ "$got" != "$core" ]; then
        echo "error: the $core build runs rayon on $got's core" >&2
        exit 1
    fi
    cp -f "$built" "$out/$core.tmp"
    mv -f "$out/$core.tmp" "$out/$core"
done
