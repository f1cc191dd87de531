#!/usr/bin/env bash
# Lint the programs that run inside the sandbox (src/hazmat/backends/inside/) that are not
# Python (ruff and mypy read its .py files with the rest of src/): ShellCheck on the shell
# programs, gcc on the compiled agent, `node --check` on the JavaScript, `javac` on the Java,
# `ruby -c` on the Ruby.
# ShellCheck and Ruby are installed when missing (Debian's packages, as root with apt-get: the
# host's Ruby may be older than the image's, which makes its syntax check stricter, never
# looser); node and javac are used when this machine has them, and skipped with a note when it
# has not.
set -euo pipefail
dir=${1:-src/hazmat/backends/inside}
say() { printf 'lint-inside: %s\n' "$*"; }

# ShellCheck and Ruby (for `ruby -c`) are Debian packages, installed when missing
missing=()
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
command -v ruby >/dev/null 2>&1 || missing+=(ruby)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    elif [[ " ${missing[*]} " == *" shellcheck "* ]]; then
        echo "lint-inside: error: shellcheck is not installed (Debian: apt-get install shellcheck)" >&2
        exit 1
    fi
fi

root=$PWD
cd "$dir"  # ShellCheck reads the folder's .shellcheckrc (for standard input too)
status=0
# The .sh files run under Debian's dash (/bin/sh in the images). The agents reach the
# container after prologue.sh (agent/single.py, agent/session_agent.py) and are checked that
# way, so that ShellCheck sees what the prologue defines; their line numbers count from its first line.
for f in ./*.sh; do
    case $f in
        ./prologue.sh) ;;
        ./agent.sh | ./session.sh)
            cat prologue.sh "$f" | shellcheck --shell=dash - \
                || { say "$f: the lines above count from prologue.sh's first"; status=1; } ;;
        *) shellcheck --shell=dash "$f" || status=1 ;;
    esac
done
shellcheck --shell=bash ./*.bash || status=1
# the compiled languages' build steps that are scripts (src/hazmat/language_builds/), as the
# agent runs them: `sh -c` under the image's dash
for f in "$root"/src/hazmat/language_builds/*.sh; do
    shellcheck --shell=dash "$f" || status=1
done

# the compiled agent, as backends/agent/compiled.py builds it (placeholders filled), every
# warning an error
if command -v gcc >/dev/null 2>&1; then
    (cd "$root" && PYTHONPATH=src "${PYTHON:-.venv/bin/python}" -c \
        'from hazmat.backends.agent.compiled import AGENT_SOURCE; print(AGENT_SOURCE)') \
        | gcc -fsyntax-only -Wall -Wextra -Werror -x c - || status=1
else
    say "gcc is not installed: the compiled agent was not checked"
fi
if command -v node >/dev/null 2>&1; then
    # and the programs a session's install runs (src/hazmat/packages/), and the console's own
    # script (its vendored libraries are checked by their digests, tests/server/)
    for f in ./*.js "$root"/src/hazmat/packages/*.js "$root"/src/hazmat/server/console/static/console.js; do
        node --check "$f" || status=1
    done
else
    say "node is not installed: the JavaScript was not checked"
fi
if command -v javac >/dev/null 2>&1; then
    classes=$(mktemp -d)
    javac -Xlint:all -Werror -d "$classes" ./*.java || status=1
    rm -rf "$classes"
else
    say "javac is not installed: the Java was not checked"
fi
if command -v ruby >/dev/null 2>&1; then
    for f in ./*.rb; do ruby -c "$f" >/dev/null || status=1; done
else
    say "ruby is not installed: the Ruby was not checked"
fi
exit "$status"
