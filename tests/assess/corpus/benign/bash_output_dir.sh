#!/usr/bin/env bash
mkdir -p out/logs
for f in *.log; do
  [ -e "$f" ] || continue
  grep -i error "$f" > "out/logs/${f%.log}.errors" || true
done
ls -1 out/logs | wc -l > out/summary.txt
cat out/summary.txt
