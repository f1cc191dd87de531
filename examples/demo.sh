#!/usr/bin/env bash
# hazmat demo: real programs in every language, then what happens to hostile ones.
# Usage: bash examples/demo.sh [path/to/hazmat]
set -uo pipefail
hazmat=${1:-hazmat}
here=$(cd "$(dirname "$0")" && pwd)
failures=0

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
expect() {  # expect EXIT-CODE command...   (QUIET=1: count stdout instead of showing it)
    local want=$1; shift
    step "hazmat ${*:2}"
    local got
    if [ "${QUIET:-0}" = 1 ]; then
        local out
        out=$(mktemp)
        "$@" > "$out"
        got=$?
        printf '  (%d bytes of stdout not shown)\n' "$(wc -c < "$out")"
        rm -f "$out"
    else
        "$@"
        got=$?
    fi
    if [ "$got" -eq "$want" ]; then
        printf '  -> exit %d, as expected\n' "$got"
    else
        printf '  -> exit %d, expected %d\n' "$got" "$want"
        failures=$((failures + 1))
    fi
}

echo "== Programs in ten languages, each in a fresh hardened container =="
expect 0 "$hazmat" run "$here/wordcount.py" --stdin "$here/wordcount.py"
expect 0 "$hazmat" run "$here/fizzbuzz.js"
expect 0 "$hazmat" run "$here/stats.ts"
expect 0 "$hazmat" run "$here/primes.go"
expect 0 "$hazmat" run "$here/wordfreq.sh" --stdin "$here/demo.sh"
expect 0 "$hazmat" run "$here/collatz.c"
expect 0 "$hazmat" run "$here/topk.cpp" --stdin <(echo 4 8 15 16 23 42)
expect 0 "$hazmat" run "$here/Primes.java"
expect 0 "$hazmat" run "$here/anagrams.rs"
expect 0 "$hazmat" run "$here/report.rb"
expect 0 "$hazmat" run "$here/fizzbuzz.js" --runtime runsc
expect 0 "$hazmat" run "$here/topk.cpp" --runtime runsc
expect 1 "$hazmat" run -c 'int main(void) { return missing; }' --lang c

echo
echo "== Hostile programs are contained =="
expect 124 "$hazmat" run -c 'while True: pass' --timeout 2
expect 137 "$hazmat" run -c 'x = bytearray(2 * 1024**3)'
QUIET=1 expect 141 "$hazmat" run -c 'while True: print("flood" * 100)'
expect 0 "$hazmat" run -c '
import socket
try:
    socket.create_connection(("192.0.2.1", 80), timeout=3)
except OSError as e:
    print("network:", e)
try:
    open("/etc/passwd", "a")
except OSError as e:
    print("root filesystem:", e)
import os
print("uid:", os.getuid(), "| interfaces:", [n for _, n in socket.if_nameindex()])'

echo
echo "== Every run is assessed first; escape-shaped code is refused unless someone says why =="
expect 0 "$hazmat" assess "$here/wordcount.py"
expect 126 "$hazmat" assess -c 'require("child_" + "process").execSync("id")' --lang javascript
expect 126 "$hazmat" run -c 'print(().__class__.__base__.__subclasses__()[:3])'
expect 0 "$hazmat" run -c 'print(len(().__class__.__base__.__subclasses__()))' \
    --override-reason "demo: counting classes is harmless, and the container holds anyway"

echo
echo "== The warm pool: containers started ahead of time, each used once (examples/pool.py) =="
expect 0 "$(dirname "$(command -v "$hazmat")")/python" "$here/pool.py"

echo
echo "== The program gets the environment and arguments you give it, and nothing of the host's =="
expect 0 "$hazmat" run -c 'import os, sys; print(os.environ["GREETING"], sys.argv[1:], "USER" in os.environ)' \
    --env GREETING=hello --arg world --arg "two words"

echo
echo "== Grading: 24 submissions in ten languages against their test cases (docs/batch.md) =="
graded=$(mktemp -d)
expect 0 "$hazmat" batch "$here/grading/tasks.jsonl" -o "$graded/results.jsonl" --trust unknown
"$(dirname "$(command -v "$hazmat")")/python" -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(("  %-40s %-14s score %.2f  %s" % (r["id"], r["verdict"], r["score"], r["message"] or ""))[:150])
' "$graded/results.jsonl"
rm -rf "$graded"

echo
echo "== Charts and tables come back as displays (docs/api.md, Displays) =="
shown=$(mktemp -d)
expect 0 "$hazmat" run --image python-data --displays "$shown" -c '
import matplotlib.pyplot as plt, pandas as pd
frame = pd.read_csv("sales.csv")
frame.pivot(index="month", columns="region", values="units").plot(figsize=(4, 3))
frame.groupby("region")["units"].sum().to_frame()' --file "$here/sales.csv"
rm -rf "$shown"

echo
echo "== Machine-readable results =="
expect 0 "$hazmat" run -c 'print(6 * 7)' --json

echo
echo "== The service: a tenant's key, the HTTP API, the CLI through it, a session, MCP tools =="
svc=$(mktemp -d)
export HAZMAT_KEYS="$svc/keys.json"
step "hazmat keys create --tenant demo --trust untrusted"
HAZMAT_API_KEY=$("$hazmat" keys create --tenant demo --trust untrusted)
export HAZMAT_API_KEY
"$hazmat" serve --socket "$svc/hazmat.sock" > "$svc/serve.log" 2>&1 &
server=$!
started=$SECONDS  # the server says when it listens; a loaded machine starts it slowly
until grep -q "listening on" "$svc/serve.log" 2>/dev/null; do
    if ! kill -0 "$server" 2>/dev/null; then
        echo "demo: hazmat serve stopped before it listened (its log follows)" >&2
        break
    elif [ $((SECONDS - started)) -ge 120 ]; then
        echo "demo: hazmat serve is not listening after 120 s (its log follows)" >&2
        break
    fi
    sleep 0.1
done
cat "$svc/serve.log"
HAZMAT_URL="unix:$svc/hazmat.sock" expect 0 "$hazmat" run -c 'print("hello through the service")'
HAZMAT_URL="unix:$svc/hazmat.sock" HAZMAT_API_KEY=hzm_000000000000_nope \
    expect 77 "$hazmat" run -c 'print("no key, no run")'
expect 0 "$(dirname "$(command -v "$hazmat")")/python" "$here/service.py" "$svc/hazmat.sock"
step "an assistant's session: a CSV loaded, summarised and charted; the PNG back over HTTP and MCP"
expect 0 "$(dirname "$(command -v "$hazmat")")/python" "$here/agent_chart.py" "$svc/hazmat.sock" \
    "$svc/charts"
kill -TERM "$server"
wait "$server"
cat "$svc/serve.log" | tail -1
unset HAZMAT_KEYS HAZMAT_API_KEY
rm -rf "$svc"

echo "== hazmat run went through your local server, started by the first run and kept warm =="
expect 0 "$hazmat" server status
expect 0 "$hazmat" server stop

echo
if [ "$failures" -eq 0 ]; then
    echo "demo: all steps behaved as expected"
else
    echo "demo: $failures step(s) did not behave as expected" >&2
    exit 1
fi
