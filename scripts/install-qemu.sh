#!/usr/bin/env bash
# Makes sure qemu-user is here, for scripts/test-aarch64.sh: the core's tests built for aarch64
# Linux and run under user-mode emulation. Debian: qemu-user.
#
# Idempotent: when `qemu-aarch64` runs, it says so and exits 0 without touching anything;
# otherwise it installs the package with apt-get (as root), checks again and exits 0. Without
# root or apt-get it says what to install and exits 1.
#
# Usage: scripts/install-qemu.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

have_qemu() {
    qemu-aarch64 --version >/dev/null 2>&1
}

if have_qemu; then
    echo "ok: $(qemu-aarch64 --version | head -n 1)"
    exit 0
fi
echo "qemu-aarch64 is not installed (Debian package: qemu-user)"
apt_install qemu-user
have_qemu || die "qemu-user installed, but qemu-aarch64 does not run"
echo "ok: $(qemu-aarch64 --version | head -n 1)"
