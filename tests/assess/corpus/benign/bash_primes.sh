#!/bin/bash
limit=${1:-50}
for ((n = 2; n <= limit; n++)); do
  prime=1
  for ((d = 2; d * d <= n; d++)); do
    if (( n % d == 0 )); then prime=0; break; fi
  done
  (( prime )) && printf '%d ' "$n"
done
echo
