#!/usr/bin/env bash
# Top ten words of the input file.
set -euo pipefail
file="${1:-input.txt}"
tr -cs '[:alpha:]' '\n' < "$file" | tr '[:upper:]' '[:lower:]' | sort | uniq -c | sort -rn | head -n 10
