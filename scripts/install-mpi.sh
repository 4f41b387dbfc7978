#!/usr/bin/env bash
# Makes sure Open MPI and what the `mpi` crate (rsmpi) needs to build against it are here, for
# magpie-dist's `mpi` feature (`cargo build -p magpie-dist --features mpi`): mpicc and mpirun
# (Debian: libopenmpi-dev, openmpi-bin) and libclang for the crate's bindgen (Debian:
# libclang-dev).
#
# Idempotent: when mpicc compiles and links an MPI program, mpirun exists and libclang is
# found, it says so and exits 0 without touching anything; otherwise it installs the packages
# with apt-get (as root), checks again and exits 0. Without root or without apt-get it says what
# to install and exits 1, as it does when apt-get fails, so that callers (scripts/test.sh) can
# skip the MPI tests with a message.
#
# Usage: scripts/install-mpi.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

packages=(libopenmpi-dev openmpi-bin libclang-dev)

# Whether libclang.so is where bindgen's clang-sys looks (LIBCLANG_PATH, or the system's
# library directories).
have_libclang() {
    if [ -n "${LIBCLANG_PATH:-}" ] && ls "$LIBCLANG_PATH"/libclang*.so* >/dev/null 2>&1; then
        return 0
    fi
    ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/*/libclang*.so* >/dev/null 2>&1
}

have_mpi() {
    for tool in mpicc mpirun; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "$tool not found"
            return 1
        fi
    done
    if ! have_libclang; then
        echo "libclang not found (bindgen needs it to build the mpi crate)"
        return 1
    fi
    local probe
    probe=$(mktemp -d)
    printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v);\n  return MPI_Finalize(); }\n' \
        >"$probe/probe.c"
    if ! mpicc "$probe/probe.c" -o "$probe/probe" >"$probe/log" 2>&1; then
        echo "mpicc cannot build an MPI program:"
        sed 's/^/  /' "$probe/log"
        rm -rf "$probe"
        return 1
    fi
    rm -rf "$probe"
}

if have_mpi; then
    echo "ok: $(mpirun --version 2>/dev/null | head -1)"
    exit 0
fi
echo "MPI is not usable for magpie-dist's mpi feature (Debian packages: ${packages[*]})"

apt_install "${packages[@]}"
if ! have_mpi; then
    die "${packages[*]} installed, but MPI is still not usable"
fi
echo "ok: $(mpirun --version 2>/dev/null | head -1)"
