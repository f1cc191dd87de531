#!/usr/bin/env bash
# Echo each line with its number; stop at an empty line.
n=0
while IFS= read -r line; do
  [[ -z "$line" ]] && break
  n=$((n + 1))
  printf '%4d  %s\n' "$n" "$line"
done
echo "$n lines"
