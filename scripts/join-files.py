#!/usr/bin/env python3
"""The runtime's source files a join runs code from, every time: scripts/join-instructions.sh
calls it on each join mode's callgrind profile.

    python3 scripts/join-files.py PROFILE BINARY JOINS

PROFILE is a callgrind output written with `--dump-instr=yes --compress-strings=no
--compress-pos=no`, BINARY the program it profiled (with line tables), JOINS the joins the
profiled computation made. An instruction counts when it ran at least once per two joins (the
join's own path, not what a join without credit does once per many). For each such instruction
`addr2line -i` gives the source line of every function inlined at that address, so a file whose
one-line method was inlined into the join counts too. Prints the files under crates/magpie/src,
one per line, most instructions first, each with its count of such instructions.
"""
import collections
import re
import subprocess
import sys


def hot_addresses(profile, joins):
    """Addresses whose own count (not a call's) is at least half the number of joins."""
    ir = collections.Counter()
    after_call = False
    with open(profile) as fh:
        for line in fh:
            if line.startswith("calls="):
                # The next cost line is the call's inclusive cost, not this instruction's own.
                after_call = True
                continue
            m = re.match(r"^(0x[0-9a-f]+) \d+ (\d+)\s*$", line)
            if m is None:
                after_call = False
                continue
            if not after_call:
                ir[int(m.group(1), 16)] += int(m.group(2))
            after_call = False
    return sorted(a for a, c in ir.items() if 2 * c >= joins)


def main():
    if len(sys.argv) != 4 or not sys.argv[3].isdigit() or int(sys.argv[3]) == 0:
        sys.exit("usage: join-files.py PROFILE BINARY JOINS (JOINS a whole number above 0)")
    profile, binary, joins = sys.argv[1], sys.argv[2], int(sys.argv[3])
    hot = hot_addresses(profile, joins)
    if not hot:
        sys.exit(f"error: no instruction in {profile} ran once per two joins")
    try:
        lines = subprocess.run(["addr2line", "-i", "-e", binary] + [hex(a) for a in hot],
                               capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"error: addr2line on {binary}: {e}")
    files = collections.Counter()
    for line in lines.splitlines():
        path = line.rsplit(":", 1)[0]
        if "/crates/magpie/src/" in path:
            files[path.split("/crates/magpie/src/", 1)[1]] += 1
    if not files:
        sys.exit(f"error: no line of {binary} names crates/magpie/src (built without line tables?)")
    for f, n in files.most_common():
        print(f"{f} {n}")


if __name__ == "__main__":
    main()
