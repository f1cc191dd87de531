#!/bin/bash
declare -A count
words=(apple banana apple cherry banana apple)
for w in "${words[@]}"; do
  count[$w]=$(( ${count[$w]:-0} + 1 ))
done
for w in "${!count[@]}"; do
  echo "$w ${count[$w]}"
done | sort -k2 -nr
