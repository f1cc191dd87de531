#!/usr/bin/env bash
# Create the project's virtual environment with Python >= 3.11, installing Debian's
# python3-venv first when `python3 -m venv` cannot work (a fresh Debian machine).
set -euo pipefail
venv=${1:-.venv}
say() { printf 'venv: %s\n' "$*"; }

python=${PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 || { echo "venv: error: $python not found" >&2; exit 1; }
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "venv: error: hazmat needs Python 3.11 or newer ($("$python" --version))" >&2; exit 1; }

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    say "$venv exists"
    exit 0
fi
if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing python3-venv"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
        echo "venv: error: $python cannot create virtual environments; install python3-venv" >&2
        exit 1
    fi
fi
rm -rf "$venv"
"$python" -m venv "$venv"
say "created $venv with $("$venv/bin/python" --version)"
