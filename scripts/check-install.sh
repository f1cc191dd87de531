#!/usr/bin/env bash
# The install a user does, checked as CI's `install` phase (.ci/run) and `make check-install`.
#
# hazmat is installed as the README's plain-pip path does it: a fresh virtual environment,
# `pip install <the project's folder>` with no extras, no constraints and today's resolver, so
# every dependency resolves to its newest version within pyproject.toml's bounds (the dev
# extras, which `make` installs, can hold a dependency back: Semgrep held the MCP SDK at 1.x).
# The folder is a clean copy of this checkout: the files git tracks or would add, as they are
# on disk (in CI, the commit), never the working tree's .venv or build leftovers.
#
# Then, with that environment's own commands and on the engine DOCKER_HOST names (CI's own):
#   - `hazmat serve` on a free loopback port; the MCP SDK's own client (the `mcp` that came
#     with hazmat) lists the tools, with the newest protocol and with the older handshake,
#     and runs one program; the console's page, its files and a fragment answer;
#   - `hazmat run -c 'print(1)'` through the per-user local server, which it starts; `hazmat
#     server status` must show that server and the run it served.
# Everything it started (servers, the environment, temporary folders) is removed at the end,
# also when it fails or is interrupted. It needs the engine and hazmat's images (`make setup`).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'check-install: %s\n' "$*"; }
fail() {
    printf 'check-install: FAILED: %s\n' "$*" >&2
    exit 1
}

began=$SECONDS
# short: the local server's socket lives under it, and a socket's path is at most 107 bytes
work=$(mktemp -d /tmp/hz-install.XXXXXX)
venv=$work/venv
serve_pid=
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -TERM "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
    if [ -x "$venv/bin/hazmat" ]; then  # the local server `hazmat run` started, if it did
        "$venv/bin/hazmat" server stop >/dev/null 2>&1 || say "could not stop the local server"
    fi
    rm -rf "$work"
    if [ "$status" = 0 ]; then
        say "passed in $((SECONDS - began)) s"
    else
        say "failed after $((SECONDS - began)) s (exit $status)"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Nothing of the caller's hazmat state: a service, a local server, an audit log, caches.
unset HAZMAT_URL HAZMAT_API_KEY HAZMAT_NO_SERVER HAZMAT_SEMGREP PYTHONPATH VIRTUAL_ENV
export XDG_RUNTIME_DIR=$work/run XDG_STATE_HOME=$work/state
export HAZMAT_AUDIT_DIR=$work/audit HAZMAT_SESSIONS_DIR=$work/sessions HAZMAT_CACHE_DIR=$work/cache
mkdir -m 700 "$XDG_RUNTIME_DIR"
say "engine: ${DOCKER_HOST:-the default socket}; work folder $work"

# --- a clean copy of the checkout ---------------------------------------------------------
git rev-parse --git-dir >/dev/null 2>&1 || fail "$(pwd) is not a git checkout"
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' file; do if [ -e "$file" ]; then printf '%s\0' "$file"; fi; done \
    | tar --null -T - -cf - | tar -xf - -C "$work/src"
changed=$(git status --porcelain --untracked-files=no | wc -l)
say "source: $(git rev-parse --short HEAD)$([ "$changed" = 0 ] || echo " with $changed uncommitted change(s)"), $(find "$work/src" -type f | wc -l) files"

# --- install as the README says -----------------------------------------------------------
python=${PYTHON:-python3}
"$python" -m venv "$venv"
say "installing with $("$venv/bin/python" --version): pip install $work/src (no extras)"
t=$SECONDS
"$venv/bin/pip" install --quiet --disable-pip-version-check "$work/src" 2>"$work/pip.log" \
    || { grep -v '^WARNING: Location' "$work/pip.log" >&2; fail "pip install"; }
"$venv/bin/pip" check >/dev/null || { "$venv/bin/pip" check >&2; fail "pip check"; }
versions=$("$venv/bin/pip" list --format=freeze 2>/dev/null \
    | grep -iE '^(hazmat|mcp|starlette|uvicorn|anyio|pydantic|docker|cryptography|jsonschema)==' \
    | tr '\n' ' ')
say "installed in $((SECONDS - t)) s: $versions"
hazmat=$venv/bin/hazmat

# --- hazmat serve, and the MCP SDK's own client -------------------------------------------
"$hazmat" keys create --tenant check --trust untrusted --keys "$work/keys.json" --json \
    >"$work/key.json" || fail "hazmat keys create"
key=$("$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["key"])' \
    <"$work/key.json")
"$hazmat" serve --host 127.0.0.1 --port 0 --keys "$work/keys.json" >"$work/serve.log" 2>&1 &
serve_pid=$!
url=
for _ in $(seq 600); do  # up to 60 s: it says where it listens once it is ready
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/serve.log")
    [ -n "$url" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.log" >&2; fail "hazmat serve did not start"; }
say "hazmat serve listens on $url"

"$venv/bin/python" - "$url/mcp" "$key" <<'PYTHON' || { cat "$work/serve.log" >&2; fail "MCP"; }
"""List hazmat's MCP tools with the SDK's own client, as an assistant would, and run one."""
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hazmat.cli.mcp import TOOLS as NAMED

# every tool `hazmat mcp --help` names but install_packages: the built-in policy has no index
TOOLS = set(NAMED) - {"install_packages"}


async def check(url: str, key: str, mode: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        if names != TOOLS:
            sys.exit(f"check-install: FAILED: tools {sorted(names)}, expected {sorted(TOOLS)}")
        print(f"check-install: MCP ({client.protocol_version}): {', '.join(sorted(names))}")
        if mode == "auto":
            ran = await client.call_tool("run_code", {"code": "print(6 * 7)"})
            out = (ran.structured_content or {}).get("stdout")
            if ran.is_error or out != "42\n":
                sys.exit(f"check-install: FAILED: run_code answered {ran.content}")
            print("check-install: MCP run_code: print(6 * 7) -> 42")


anyio.run(check, sys.argv[1], sys.argv[2], "auto")  # the newest protocol
anyio.run(check, sys.argv[1], sys.argv[2], "legacy")  # the initialize handshake
PYTHON

"$venv/bin/python" - "$url" "$key" <<'PYTHON' || { cat "$work/serve.log" >&2; fail "console"; }
"""The console's page, its templates and its vendored files came with the package."""
import sys
import urllib.request

url, key = sys.argv[1], sys.argv[2]
for path, wanted in (
    ("/console", b'id="signin"'),
    ("/console/static/htmx.min.js", b"htmx"),
    ("/console/static/uPlot.iife.min.js", b"uPlot"),
    ("/console/f/whoami", b"check"),
):
    request = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        if answer.status != 200 or wanted not in answer.read():
            sys.exit(f"check-install: FAILED: {path} answered {answer.status} without {wanted!r}")
print("check-install: the console answers: its page, its files, a key's fragment")
PYTHON

kill -TERM "$serve_pid"
wait "$serve_pid" || { cat "$work/serve.log" >&2; fail "hazmat serve did not stop cleanly"; }
serve_pid=
say "hazmat serve stopped: $(tail -n 1 "$work/serve.log")"

# --- hazmat run through the per-user local server -----------------------------------------
t=$SECONDS status=0
out=$("$hazmat" run -c 'print(1)' 2>"$work/run.err") || status=$?
[ "$status" = 0 ] || { cat "$work/run.err" >&2; fail "hazmat run exited $status"; }
[ "$out" = 1 ] || { cat "$work/run.err" >&2; fail "hazmat run printed '$out', not 1"; }
grep -q 'started a local server' "$work/run.err" \
    || { cat "$work/run.err" >&2; fail "hazmat run did not start the local server"; }
if grep -qE 'running in this process|internal error' "$work/run.err"; then
    cat "$work/run.err" >&2
    fail "hazmat run did not go through the local server"
fi
"$hazmat" server status --json >"$work/status.json" || fail "hazmat server status"
"$venv/bin/python" - "$work/status.json" <<'PYTHON' || { cat "$work/status.json" >&2; exit 1; }
"""The local server of this setup runs, answers, and has served the run."""
import json
import sys

servers = json.load(open(sys.argv[1]))["servers"]
mine = [s for s in servers if s["this_setup"] and s["running"] and s["answering"]]
if not mine or mine[0].get("runs", 0) < 1:
    sys.exit(f"check-install: FAILED: no local server of this setup served the run: {servers}")
print(f"check-install: local server (pid {mine[0]['pid']}) served {mine[0]['runs']} run(s)")
PYTHON
say "hazmat run -c 'print(1)' through the local server: 1 ($((SECONDS - t)) s)"
"$hazmat" server stop | sed 's/^hazmat: /check-install: /'
