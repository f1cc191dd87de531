#!/usr/bin/env bash
# Make sure the console's browser tests have a browser: Debian's chromium and the
# chromium-driver of the same version (tests/server/test_console_browser.py drives it through
# Selenium, with no driver or browser downloaded at run time), and a font for its screenshots.
# Idempotent; as root on Debian it installs what is missing (one `apt-get update` first).
set -euo pipefail

say() { printf 'browser: %s\n' "$*"; }
die() { printf 'browser: error: %s\n' "$*" >&2; exit 1; }

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || missing+=(fonts-dejavu-core)
if [ "${#missing[@]}" = 0 ]; then
    say "chromium $(chromium --version 2>/dev/null | awk '{print $2}') and its driver are installed"
    exit 0
fi
[ "$(id -u)" = 0 ] || die "missing packages (${missing[*]}) and not root: install them, or run as root"
command -v apt-get >/dev/null 2>&1 || die "missing packages (${missing[*]}) and no apt-get: this script knows only Debian"
say "installing ${missing[*]} (apt-get update first)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
say "installed ${missing[*]}"
