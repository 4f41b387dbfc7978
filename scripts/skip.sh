# Sourced by the test command's scripts: what happens when a part of the run cannot run here
# (a package that cannot be installed, a registry that cannot be reached).
#
# On a user's machine the part is skipped with a warning that says so. Under CI=true (set by
# .ci/run) the run fails instead: a green CI run means every part ran.

# skip_part MESSAGE: warns (and returns) on a user's machine; under CI=true, exits 1.
skip_part() {
    if [ "${CI:-}" = "true" ]; then
        echo "error: $1" >&2
        echo "error: under CI=true a part of the test command that cannot run fails the run" >&2
        exit 1
    fi
    echo "warning: $1" >&2
}
