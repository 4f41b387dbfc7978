# shellcheck shell=bash
# Sourced by the install scripts (build-peers.sh, install-hwloc.sh): `die` and `apt_install`.

# Prints `error: ...` on stderr and exits 1.
die() {
    echo "error: $*" >&2
    exit 1
}

# Installs Debian packages with apt-get; needs root. Dies with what to do by hand otherwise.
apt_install() {
    if [ "$(id -u)" -ne 0 ]; then
        die "installing $* needs root; run this as root, or: sudo apt-get update && sudo apt-get install -y $*"
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        die "apt-get not found; install $* (or the equivalent) with this system's package manager"
    fi
    echo "installing: apt-get install -y $*"
    if ! (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"); then
        die "apt-get install $* failed; install it by hand and run this again"
    fi
}
