# shellcheck shell=bash
# Sourced by the install scripts (build-peers.sh, install-hwloc.sh, install-mpi.sh): `die`,
# `apt_install` and `no_arguments`.

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

# The arguments of an install script that takes none (`no_arguments "$0" "$@"`): -h or --help
# prints the script's header comment and exits 0; anything else is an error, exit 2.
no_arguments() {
    local script=$1
    shift
    for arg in "$@"; do
        case "$arg" in
            -h | --help)
                sed -n '2,/^set -euo/p' "$script" | grep '^#' | sed 's/^# \{0,1\}//'
                exit 0
                ;;
            *)
                echo "error: unknown argument '$arg' (usage: $script)" >&2
                exit 2
                ;;
        esac
    done
}
