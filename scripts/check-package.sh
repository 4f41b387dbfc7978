#!/usr/bin/env bash
# `cargo package` of the crates a user depends on from a registry: magpie and magpie-dist. Each
# is packaged as it would be uploaded (its files, its README and licence files, a manifest
# without path dependencies) and the package is built on its own, in target/package.
#
#   bash scripts/check-package.sh [--no-verify]
#
# --no-verify (what the test command runs, to keep it short): the packages are made and their
# manifests checked, but not built.
#
# The rayon-core crate is not packaged: it must keep rayon-core's name to be patched in, a name
# that is taken on crates.io, so it is used from a path or from git (README, "Use it in your
# project").
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
"")
    cargo package --locked --quiet -p magpie -p magpie-dist
    echo "ok: magpie and magpie-dist package and build as uploaded"
    ;;
--no-verify)
    cargo package --locked --quiet --no-verify -p magpie -p magpie-dist
    echo "ok: magpie and magpie-dist package (not built: --no-verify)"
    ;;
*)
    echo "usage: bash scripts/check-package.sh [--no-verify]" >&2
    exit 2
    ;;
esac
