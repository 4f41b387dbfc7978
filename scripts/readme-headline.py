#!/usr/bin/env python3
"""Writes the README's headline row from one fresh run of the benchmark suite.

    bash scripts/bench.sh && python3 scripts/readme-headline.py [RESULTS_JSON]

Reads the `headline` of magpie-report/results.json (or RESULTS_JSON): per worker count and peer,
the geometric mean of magpie's time / the peer's over the kernels both ran. Replaces the
README's row that begins `| the suite's headline` with those figures, the run's
worker counts, the commit the checkout is at, and the run's date and machine. Then, when
Chromium is installed, it takes the README's picture of the same run's report
(scripts/check-report.sh --screenshot docs/report-headline.png), so the row and the picture
show one run. Exit 0: written; 1: the results or the README are not as expected; 2: bad
arguments.
"""
import json
import os
import shutil
import subprocess
import sys

PEERS = [("rayon", "rayon"), ("chili", "chili"), ("tbb", "TBB"), ("openmp", "OpenMP")]
PREFIX = "| the suite's headline"


def die(msg, code=1):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(code)


def main():
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return
    if len(args) > 1:
        die("at most one argument, the results.json to read (see --help)", 2)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = args[0] if args else os.path.join(root, "magpie-report", "results.json")
    try:
        with open(path) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read {path}: {e} (run bash scripts/bench.sh first)")
    head = res.get("headline") or die(f"{path} has no headline (no peer or no magpie policy measured)")
    versus = head.get("versus") or die(f"{path}: the headline compares nothing")
    workers = sorted({v["workers"] for v in versus})
    if len(workers) != 2:
        die(f"{path}: the README's row has two worker counts, the run measured {workers}")
    by = {(v["workers"], v["peer"]): v for v in versus}
    names, cells = [], {w: [] for w in workers}
    for key, label in PEERS:
        if not all((w, key) in by for w in workers):
            continue
        names.append(f"{label} ({by[(workers[0], key)]['kernels']} kernels)")
        for w in workers:
            cells[w].append(f"{by[(w, key)]['geomean']:.2f}")
    if not names:
        die(f"{path}: none of rayon, chili, TBB, OpenMP was measured at both worker counts")
    # The row names the commit checked out now: the code must be what the run measured.
    last_code = subprocess.run(["git", "-C", root, "log", "-1", "--format=%ct", "--", "crates", "rayon-core"],
                               capture_output=True, text=True).stdout.strip()
    if last_code and int(last_code) > int(res.get("machine", {}).get("unix_time") or 0):
        die(f"{path} is older than the last commit to crates/ or rayon-core/; run the suite again")
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD", "--", "crates", "rayon-core"]).returncode
    if dirty:
        commit += " with uncommitted changes"
    m = res.get("machine", {})
    when = (m.get("date_utc") or "")[:10]
    row = (f"| the suite's headline, magpie ({head['policy']}) ÷ {', '.join(names)}; "
           f"{m.get('cpus', '?')}-CPU {m.get('cpu_model') or 'machine'}, {when}, "
           f"`--size {res.get('size')} --runs {res.get('runs')}` "
           f"| {', '.join(cells[workers[0]])} | {', '.join(cells[workers[1]])} "
           f"| `{commit}` | `bash scripts/bench.sh`, then `python3 scripts/readme-headline.py` |")
    readme = os.path.join(root, "README.md")
    with open(readme) as f:
        text = f.read()
    lines = text.split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith(PREFIX)]
    if len(at) != 1:
        die(f"README.md has {len(at)} rows beginning '{PREFIX}', not one")
    lines[at[0]] = row
    text = "\n".join(lines)
    with open(readme, "w") as f:
        f.write(text)
    print(f"README.md: {row}")
    report = os.path.dirname(os.path.abspath(path))
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        subprocess.run(["bash", os.path.join(root, "scripts", "check-report.sh"), "--screenshot",
                        os.path.join(root, "docs", "report-headline.png"), report], check=True)
    else:
        print("warning: no chromium; docs/report-headline.png was not retaken "
              "(scripts/install-chromium.sh installs it)", file=sys.stderr)


if __name__ == "__main__":
    main()
