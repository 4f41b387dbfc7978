#!/usr/bin/env bash
# Makes sure valgrind (its cachegrind tool) is here, for the splicing figures
# (scripts/splice-cachegrind.sh). Debian: valgrind.
#
# Idempotent: when `valgrind --tool=cachegrind` runs, it says so and exits 0 without touching
# anything; otherwise it installs the package with apt-get (as root), checks again and exits 0.
# Without root or apt-get it says what to install and exits 1.
#
# Usage: scripts/install-valgrind.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

have_cachegrind() {
    command -v valgrind >/dev/null 2>&1 && valgrind --tool=cachegrind --cache-sim=yes \
        --cachegrind-out-file=/dev/null true >/dev/null 2>&1
}

if have_cachegrind; then
    echo "ok: $(valgrind --version)"
    exit 0
fi
echo "valgrind's cachegrind is not usable (Debian package: valgrind)"
apt_install valgrind
have_cachegrind || die "valgrind installed, but cachegrind does not run"
echo "ok: $(valgrind --version)"
