#!/usr/bin/env bash
# rayon's own tests against magpie's scheduler: takes rayon 1.12.0 and rayon-core 1.13.0 from the
# package registry (their published crates carry their `tests/`; nothing is copied into this
# repository), and runs, in a temporary folder,
#   - rayon's unit, integration and doc tests, with rayon-core patched to this repository's
#     `rayon-core/` (magpie's rayon-core: `[patch.crates-io]`, the one line a user adds), and
#   - rayon-core's integration tests (`tests/*.rs`), in a test crate whose `rayon-core` dependency
#     is patched the same way.
# With --baseline nothing is patched: the same tests against the real rayon-core, to show what the
# harness itself gives (all pass there).
#
#   bash scripts/rayon-suite.sh [--baseline]
#
# Prints one line per test binary (`cargo test`'s result line) and a last line with the totals.
# Exits 0 when every test passed, 1 when one failed or did not build, 2 on a bad argument; when the
# registry cannot be reached it says so and exits 0 (nothing could be tested, nothing failed).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

baseline=0
case "${1-}" in
"") ;;
--baseline) baseline=1 ;;
*)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
if [ "$baseline" -eq 0 ] && [ ! -f "$repo/rayon-core/Cargo.toml" ]; then
    echo "error: $repo/rayon-core/Cargo.toml is missing: magpie's rayon-core is what this runs against" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/magpie-rayon-suite.XXXXXX")
trap 'rm -rf "$work"' EXIT
# One target folder across runs, so that a second run does not build everything again.
export CARGO_TARGET_DIR="$repo/target/rayon-suite/$([ "$baseline" -eq 1 ] && echo baseline || echo magpie)"

# 1. The published sources, through a crate that depends on both exact versions.
mkdir -p "$work/fetch/src"
cat >"$work/fetch/Cargo.toml" <<'EOF'
[package]
name = "fetch-rayon-sources"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
rayon = "=1.12.0"
rayon-core = "=1.13.0"

[workspace]
EOF
: >"$work/fetch/src/lib.rs"
if ! meta=$(cd "$work/fetch" && cargo metadata --format-version 1 2>"$work/fetch.err"); then
    echo "warning: rayon 1.12.0 and rayon-core 1.13.0 could not be fetched from the registry; rayon's tests are skipped:" >&2
    sed 's/^/  /' "$work/fetch.err" >&2
    exit 0
fi
src_of() {
    python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
for p in meta["packages"]:
    if p["name"] == sys.argv[1] and p["version"] == sys.argv[2]:
        print(os.path.dirname(p["manifest_path"]))
        break
else:
    sys.exit("no " + sys.argv[1] + " " + sys.argv[2] + " in cargo metadata")
' "$1" "$2" <<<"$meta"
}
rayon_src=$(src_of rayon 1.12.0)
core_src=$(src_of rayon-core 1.13.0)

patch() {
    if [ "$baseline" -eq 0 ]; then
        printf '\n[patch.crates-io]\nrayon-core = { path = "%s/rayon-core" }\n' "$repo" >>"$1"
    fi
}

# 2. rayon itself, patched.
cp -r "$rayon_src" "$work/rayon"
chmod -R u+w "$work/rayon"
printf '\n[workspace]\n' >>"$work/rayon/Cargo.toml"
patch "$work/rayon/Cargo.toml"

# 3. rayon-core's integration tests, in a crate of their own that depends on rayon-core.
mkdir -p "$work/core-tests/src"
cp -r "$core_src/tests" "$work/core-tests/tests"
: >"$work/core-tests/src/lib.rs"
cat >"$work/core-tests/Cargo.toml" <<'EOF'
[package]
name = "rayon-core-tests"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
rayon-core = "=1.13.0"

[dev-dependencies]
rand = "0.9"
rand_xorshift = "0.4"
scoped-tls = "1.0"
crossbeam-utils = "0.8"

[target.'cfg(unix)'.dev-dependencies]
libc = "0.2"

[workspace]
EOF
patch "$work/core-tests/Cargo.toml"

# 4. Run both; collect cargo's result lines.
status=0
passed=0
failed=0
run() {
    local name=$1 dir=$2 log="$work/$1.log"
    echo "== $name" >&2
    if (cd "$dir" && cargo test --no-fail-fast >"$log" 2>&1); then :; else status=1; fi
    grep -E '^\s+Running|^\s+Doc-tests|^test result' "$log" | paste - - 2>/dev/null |
        sed -E 's/^\s+(Running|Doc-tests) //' || true
    if grep -q '^error' "$log"; then
        echo "$name: a build or run error (the first lines follow)" >&2
        grep -m 20 -A 5 '^error' "$log" >&2 || true
        status=1
    fi
    local p f
    p=$(grep -o '^test result: [a-zA-Z]*\. [0-9]* passed' "$log" | awk '{ s += $4 } END { print s + 0 }')
    f=$(grep -o '; [0-9]* failed' "$log" | awk '{ s += $2 } END { print s + 0 }')
    passed=$((passed + p))
    failed=$((failed + f))
    grep -E '^test .* FAILED$' "$log" | sed 's/^/  /' >&2 || true
}
run rayon "$work/rayon"
run rayon-core "$work/core-tests"
against=$([ "$baseline" -eq 1 ] && echo "the real rayon-core 1.13.0" || echo "magpie's rayon-core")
echo "rayon 1.12.0 and rayon-core 1.13.0 tests against $against: $passed passed, $failed failed"
exit "$status"
