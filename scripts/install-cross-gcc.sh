#!/usr/bin/env bash
# Makes sure a C cross compiler for aarch64 Linux is here, for scripts/check-platforms.sh: on
# Linux magpie's task frames come from mimalloc, whose C code cargo compiles for the target.
# Debian: gcc-aarch64-linux-gnu.
#
# Idempotent: when `aarch64-linux-gnu-gcc` runs, it says so and exits 0 without touching
# anything; otherwise it installs the package with apt-get (as root), checks again and exits 0.
# Without root or apt-get it says what to install and exits 1.
#
# Usage: scripts/install-cross-gcc.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

have_gcc() {
    aarch64-linux-gnu-gcc --version >/dev/null 2>&1
}

if have_gcc; then
    echo "ok: $(aarch64-linux-gnu-gcc --version | head -n 1)"
    exit 0
fi
echo "aarch64-linux-gnu-gcc is not installed (Debian package: gcc-aarch64-linux-gnu)"
apt_install gcc-aarch64-linux-gnu
have_gcc || die "gcc-aarch64-linux-gnu installed, but aarch64-linux-gnu-gcc does not run"
echo "ok: $(aarch64-linux-gnu-gcc --version | head -n 1)"
