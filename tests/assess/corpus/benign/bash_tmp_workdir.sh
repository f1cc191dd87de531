#!/bin/bash
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sort -u input.txt > "$work/sorted.txt"
comm -12 "$work/sorted.txt" <(sort -u other.txt) > common.txt
wc -l common.txt
