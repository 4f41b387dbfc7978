#!/usr/bin/env bash
# Makes sure Miri (a nightly toolchain with the miri and rust-src components) is here, for the
# Miri run of magpie-splice's unit tests (scripts/test.sh): the views' raw-pointer slices and
# the spliced walk, checked for undefined behaviour.
#
# The nightly is the dated one scripts/nightly.sh names, never the user's own `nightly`.
# Idempotent: when `cargo +NIGHTLY miri --version` works, it says so and exits 0 without
# touching anything; otherwise it asks rustup for that toolchain's miri and rust-src
# components (the minimal profile when the toolchain itself is missing), checks again and exits
# 0. Without rustup, or when rustup cannot get them, it says so and exits 1, so that callers
# can skip the Miri run with a message.
#
# Usage: scripts/install-miri.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/nightly.sh
. scripts/nightly.sh

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

have_miri() {
    cargo +"$NIGHTLY" miri --version >/dev/null 2>&1
}

if have_miri; then
    echo "ok: $(cargo +"$NIGHTLY" miri --version)"
    exit 0
fi
if ! command -v rustup >/dev/null 2>&1; then
    echo "Miri needs rustup (https://rustup.rs) to install a nightly toolchain's miri component"
    exit 1
fi
echo "Miri is not installed: rustup installs $NIGHTLY's miri and rust-src"
rustup toolchain install "$NIGHTLY" --profile minimal --component miri,rust-src ||
    rustup component add --toolchain "$NIGHTLY" miri rust-src ||
    die "rustup could not install $NIGHTLY's miri and rust-src"
have_miri || die "miri installed, but cargo +$NIGHTLY miri does not run"
# Miri builds its own standard library once; do it now rather than in the middle of a test run.
cargo +"$NIGHTLY" miri setup >/dev/null
echo "ok: $(cargo +"$NIGHTLY" miri --version)"
