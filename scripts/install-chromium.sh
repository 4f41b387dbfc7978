#!/usr/bin/env bash
# Makes sure a headless Chromium is here, for scripts/check-report.sh (which renders the suite's
# report in a real browser). Debian: chromium (and fonts-dejavu-core, so text has glyphs).
#
# Idempotent: when `chromium --headless` prints a page's DOM, it says so and exits 0 without
# touching anything; otherwise it installs the packages with apt-get (as root), checks again and
# exits 0. Without root or apt-get it says what to install and exits 1, as it does when apt-get
# fails, so that callers (scripts/test.sh) can skip the browser check.
#
# Usage: scripts/install-chromium.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/apt-lib.sh
source scripts/apt-lib.sh
no_arguments "$0" "$@"

# The browser's command: Debian names it chromium, other systems chromium-browser.
chromium_command() {
    for c in chromium chromium-browser; do
        if command -v "$c" >/dev/null 2>&1; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# Headless Chromium runs as root only with --no-sandbox; a page with one element must come back.
have_chromium() {
    local c
    c=$(chromium_command) || return 1
    timeout 60 "$c" --headless --no-sandbox --disable-gpu --dump-dom \
        'data:text/html,<p id=probe>ok</p>' 2>/dev/null | grep -q 'id="probe"'
}

if have_chromium; then
    echo "ok: $($(chromium_command) --version 2>/dev/null)"
    exit 0
fi
echo "headless Chromium is not usable (Debian packages: chromium fonts-dejavu-core)"
apt_install chromium fonts-dejavu-core
have_chromium || die "chromium installed, but 'chromium --headless --dump-dom' does not print a page"
echo "ok: $($(chromium_command) --version 2>/dev/null)"
