#!/usr/bin/env bash
# Renders magpie's HTML reports in a real browser (headless Chromium) and fails when one is
# broken: a console message from the page (it has no scripts, so any message means something
# went wrong), a script error or a resource that did not load, no chart at all, or a chart that
# draws nothing (no data mark with a size once laid out: the charts' bars, segments and curves
# carry class="mark"). It also saves a screenshot of the top of each page.
#
# Without a folder it makes the report first: `magpie suite --size ci --runs 1` with a traced
# kernel, a locality model, the spliced stencils, a co-run and the simulated distributed
# collections, so every kind of chart is on the page, in target/check-report/, and checks its
# index.html. With folders it checks the index.html in each. The screenshot of each page goes to its screenshots/top.png.
#
# Before checking anything it checks itself: a page with a script error and an empty chart must
# fail, and a page with one drawn bar must pass.
#
# Usage: scripts/check-report.sh [--screenshot PNG] [REPORT_DIR...]
#   --screenshot PNG   also copy the first page's screenshot to PNG (the README's picture:
#                      scripts/check-report.sh --screenshot docs/report-headline.png)
# Needs chromium (scripts/install-chromium.sh installs it). Exit 0: every page is fine; 1: a page
# is broken (each problem is printed); 2: bad arguments or no browser.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
shot_copy=""
dirs=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) usage; exit 0 ;;
        --screenshot)
            [ $# -ge 2 ] || { echo "error: --screenshot needs a file name (e.g. docs/report-headline.png)" >&2; exit 2; }
            shot_copy=$2
            shift 2
            ;;
        -*) echo "error: unknown option '$1' (see scripts/check-report.sh --help)" >&2; exit 2 ;;
        *) dirs+=("$1"); shift ;;
    esac
done

browser=""
for c in chromium chromium-browser; do
    if command -v "$c" >/dev/null 2>&1; then browser=$c; break; fi
done
if [ -z "$browser" ]; then
    echo "error: no chromium found; run scripts/install-chromium.sh (as root) and run this again" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/magpie-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

# What the browser runs in a copy of each page, first thing in <head>: it records script errors,
# resources that fail to load and console.error calls, and once the page has loaded it writes
# one line per finding into <pre id="magpie-check">, which --dump-dom prints.
cat >"$work/checker.js" <<'JS'
(function () {
  var found = [];
  window.addEventListener('error', function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) found.push('resource did not load: ' + (t.src || t.href));
    else found.push('script error: ' + e.message);
  }, true);
  var ce = console.error;
  console.error = function () { found.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); ce.apply(console, arguments); };
  window.addEventListener('load', function () {
    var svgs = document.querySelectorAll('svg'), lines = ['charts ' + svgs.length];
    for (var i = 0; i < svgs.length; i++) {
      var s = svgs[i], r = s.getBoundingClientRect(), drawn = 0, marks = s.querySelectorAll('.mark');
      for (var j = 0; j < marks.length; j++) {
        var b = marks[j].getBBox();
        if (b.width > 0 || b.height > 0) drawn++;
      }
      var name = s.getAttribute('aria-label') || ('chart ' + (i + 1));
      if (r.width < 20 || r.height < 20) lines.push('problem: chart "' + name + '" has no size on the page');
      else if (drawn === 0) lines.push('problem: chart "' + name + '" draws nothing (' + marks.length + ' data marks, none with a size)');
    }
    for (var k = 0; k < found.length; k++) lines.push('problem: ' + found[k]);
    var pre = document.createElement('pre');
    pre.id = 'magpie-check';
    pre.textContent = lines.join('\n');
    document.body.appendChild(pre);
  });
})();
JS

run_browser() {
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --enable-logging=stderr --v=0 --virtual-time-budget=10000 "$@"
}

# check_page HTML NAME: prints the problems of one page; returns 1 when it has any.
check_page() {
    local html=$1 name=$2 copy="$work/$2.checked.html" dom="$work/$2.dom" log="$work/$2.log"
    {
        printf '<script>'
        cat "$work/checker.js"
        printf '</script>\n'
        cat "$html"
    } >"$copy"
    # The checker goes before the doctype's html element; browsers move it into <head>.
    if ! run_browser --dump-dom "file://$copy" >"$dom" 2>"$log"; then
        echo "  problem: $browser did not render the page (its log: $log)"
        sed 's/^/    /' "$log" | tail -5
        return 1
    fi
    # The checker's lines: from its <pre> to the </pre> after it.
    local found="$work/$name.found" problems=0 charts
    awk '/<pre id="magpie-check">/ { on = 1; sub(/.*<pre id="magpie-check">/, "") }
         on { end = sub(/<\/pre>.*/, ""); print; if (end) exit }' "$dom" >"$found"
    charts=$(sed -n 's/^charts \([0-9]*\)$/\1/p' "$found" | head -1)
    if [ -z "$charts" ]; then
        echo "  problem: the page never finished loading (no checker output)"
        return 1
    fi
    if [ "$charts" -eq 0 ]; then
        echo "  problem: no chart on the page"
        problems=1
    fi
    if grep -q '^problem: ' "$found"; then
        grep '^problem: ' "$found" | sed 's/^/  /; s/&quot;/"/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g'
        problems=1
    fi
    # The page has no scripts of its own: any console message came from something broken.
    if grep -q ':CONSOLE' "$log"; then
        grep ':CONSOLE' "$log" | sed 's/^[^]]*\] /  problem: console: /' | head -10
        problems=1
    fi
    [ "$problems" -eq 0 ] && echo "  ok: $charts charts, each with data drawn; no console messages"
    return "$problems"
}

# The checker checks itself: a bad page must fail, a good one must pass.
cat >"$work/bad.html" <<'HTML'
<!DOCTYPE html><html><head><title>bad</title></head><body>
<svg width="200" height="100" aria-label="empty"><rect class="mark" x="0" y="0" width="0" height="0"/></svg>
<script>undefinedFunction();</script></body></html>
HTML
cat >"$work/good.html" <<'HTML'
<!DOCTYPE html><html><head><title>good</title></head><body>
<svg width="200" height="100" aria-label="one bar"><rect class="mark" x="10" y="10" width="20" height="50"/></svg>
</body></html>
HTML
echo "== the checker on a broken page (must fail) and a good one (must pass)"
if check_page "$work/bad.html" bad; then
    echo "error: the checker passed a page with a script error and an empty chart; it is broken" >&2
    exit 1
fi
if ! check_page "$work/good.html" good; then
    echo "error: the checker failed a page with one drawn bar; it is broken" >&2
    exit 1
fi

if [ ${#dirs[@]} -eq 0 ]; then
    out=target/check-report
    rm -rf "$out"
    echo "== building magpie and making a --size ci report in $out"
    # A debug build: the page, not the times, is under test, and `cargo test` has built it.
    cargo build --locked -q -p magpie-cli
    bash scripts/build-rayon-compare.sh --profile dev
    ./target/debug/magpie suite --size ci --runs 1 --trace nqueens --locality heat \
        --splice --corun fib,nqueens --dist hf --out "$out" >"$work/suite.log" 2>&1 || {
        echo "error: magpie suite failed; its output:" >&2
        tail -20 "$work/suite.log" >&2
        exit 1
    }
    dirs=("$out")
fi

failed=0
first=1
for d in "${dirs[@]}"; do
    page="$d/index.html"
    if [ ! -f "$page" ]; then
        echo "error: $page not found (make it with magpie suite --out $d)" >&2
        exit 2
    fi
    echo "== $page"
    name=$(basename "$(cd "$d" && pwd)")
    check_page "$page" "$name" || failed=1
    mkdir -p "$d/screenshots"
    shot="$d/screenshots/top.png"
    if run_browser --window-size=1280,1000 --screenshot="$shot" "file://$(cd "$d" && pwd)/index.html" \
        >/dev/null 2>&1 && [ -s "$shot" ]; then
        echo "  screenshot: $shot"
        if [ "$first" -eq 1 ] && [ -n "$shot_copy" ]; then
            cp "$shot" "$shot_copy"
            echo "  copied to $shot_copy"
        fi
    else
        echo "  problem: no screenshot could be taken"
        failed=1
    fi
    first=0
done
if [ "$failed" -ne 0 ]; then
    echo "error: a report is broken (problems above)" >&2
    exit 1
fi
echo "ok: every report renders, with every chart drawn"
