#!/usr/bin/env bash
# Makes sure the hwloc 2.x development files are here, for magpie's optional `hwloc` feature
# (`cargo build --features magpie/hwloc`): the hwlocality-sys crate finds the library with
# pkg-config, so it needs pkg-config and hwloc.pc, headers and libhwloc.so (Debian:
# pkg-config and libhwloc-dev). Its build script asks pkg-config for static linking flags
# (`--static`), which add hwloc's private libraries (Debian: -lm -ludev -lpthread); libhwloc.so
# is still linked dynamically, but the linker must find each of them, so -ludev needs
# libudev.so (Debian: libudev-dev) too.
#
# Idempotent: when pkg-config finds hwloc >= 2.0 (and < 3) and a C program links with
# `pkg-config --static --libs hwloc`, it says so and exits 0 without touching anything; otherwise
# it installs the packages with apt-get (as root), checks again and exits 0. Without root or
# without apt-get it says what to install and exits 1, as it does when apt-get fails, so that
# callers (scripts/test.sh) can skip the hwloc tests.
#
# Usage: scripts/install-hwloc.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

packages=(pkg-config libhwloc-dev libudev-dev)
CC="${CC:-cc}"

# The version range hwlocality-sys accepts (its build script asks pkg-config for
# 2.0.0 <= v < 3.0.0), and the link line it will use; says what is missing otherwise.
have_hwloc() {
    if ! command -v pkg-config >/dev/null 2>&1; then
        echo "pkg-config not found"
        return 1
    fi
    if ! pkg-config --exists hwloc; then
        echo "pkg-config finds no hwloc (no hwloc.pc: hwloc's development files are missing)"
        return 1
    fi
    if ! pkg-config --atleast-version=2.0.0 hwloc || pkg-config --atleast-version=3.0.0 hwloc; then
        echo "hwloc $(pkg-config --modversion hwloc) is installed, but magpie's hwloc feature needs 2.x"
        return 1
    fi
    if ! command -v "$CC" >/dev/null 2>&1; then
        echo "no C compiler/linker '$CC' to check the link with (Rust links with it too)"
        return 1
    fi
    local probe
    probe=$(mktemp -d)
    printf '#include <hwloc.h>\nint main(void) { hwloc_topology_t t;\n  return hwloc_topology_init(&t); }\n' \
        >"$probe/probe.c"
    # Word splitting of pkg-config's flags is intended.
    # shellcheck disable=SC2046
    if ! "$CC" "$probe/probe.c" -o "$probe/probe" $(pkg-config --cflags hwloc) \
        $(pkg-config --static --libs hwloc) >"$probe/log" 2>&1; then
        echo "a program does not link with 'pkg-config --static --libs hwloc' ($(pkg-config --static --libs hwloc)):"
        sed 's/^/  /' "$probe/log"
        rm -rf "$probe"
        return 1
    fi
    rm -rf "$probe"
}

if have_hwloc; then
    echo "ok: hwloc $(pkg-config --modversion hwloc) (links with: $(pkg-config --static --libs hwloc))"
    exit 0
fi
missing=("${packages[@]}")
echo "hwloc 2.x is not usable for magpie's hwloc feature (Debian packages: ${missing[*]})"

apt_install "${missing[@]}"
if ! have_hwloc; then
    die "${missing[*]} installed, but hwloc 2.x is still not usable (PKG_CONFIG_PATH?)"
fi
echo "ok: hwloc $(pkg-config --modversion hwloc) (links with: $(pkg-config --static --libs hwloc))"
