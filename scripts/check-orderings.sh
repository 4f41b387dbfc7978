#!/usr/bin/env bash
# Checks that every atomic ordering in the workspace's library and binary code says why it is
# enough: each use of `Ordering::` outside a test module needs a `//` comment naming the ordering
# (Relaxed, Acquire, Release, AcqRel or SeqCst), at the end of its line or above it within the
# same statement, giving the reason or pointing to the named protocol section that does
# (docs/DESIGN.md, "Habits"). Prints each unjustified use as FILE:LINE and exits 1 if any.
#
#   bash scripts/check-orderings.sh [DIR...]     (default: crates/*/src)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    set -- crates/*/src
fi
python3 - "$@" <<'PY'
import glob, re, sys

WORDS = ("Relaxed", "Acquire", "Release", "AcqRel", "SeqCst")

def names_ordering(comment):
    return any(w in comment for w in WORDS)

bad = 0
for root in sys.argv[1:]:
    for path in sorted(glob.glob(root + "/**/*.rs", recursive=True)):
        if path.endswith("/tests.rs"):
            continue  # a test module in a file of its own
        lines = open(path, encoding="utf-8").read().split("\n")
        end = len(lines)
        # Test modules (and everything after them) are left out.
        for i, l in enumerate(lines):
            if re.match(r"\s*#\[cfg\((all\()?test", l) and re.search(r"\bmod\b", " ".join(lines[i:i + 3])):
                end = i
                break
        for i in range(end):
            code = lines[i].strip()
            if "Ordering::" not in code or code.startswith("//") or code.startswith("use "):
                continue
            if re.search(r"Ordering::(Less|Equal|Greater)\b", code):
                continue  # std::cmp::Ordering
            ok = "//" in code and names_ordering(code.split("//", 1)[1])
            j = i - 1
            # Walk up through the statement the use is in, and through a run of statements
            # that use orderings too (one comment may cover a run: "Relaxed, these three").
            while not ok and j >= max(0, i - 10):
                above = lines[j].strip()
                if above.startswith("//"):
                    ok = names_ordering(above)
                elif "Ordering::" in above:
                    pass
                elif above.endswith((";", "{", "}")) or above == "":
                    break
                j -= 1
            if not ok:
                bad += 1
                print(f"{path}:{i + 1}: {code}")
if bad:
    print(f"{bad} atomic orderings without a reason: say why each is enough, at the use or in a "
          "comment above it that points to the protocol section", file=sys.stderr)
    sys.exit(1)
print("every atomic ordering says why it is enough")
PY
