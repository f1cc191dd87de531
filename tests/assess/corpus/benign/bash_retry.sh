#!/bin/bash
# Wait for a file another step writes, at most ten tries.
tries=0
while true; do
  if [ -f ready.flag ]; then echo "ready"; break; fi
  tries=$((tries + 1))
  if [ "$tries" -ge 10 ]; then echo "gave up" >&2; exit 1; fi
  sleep 0.5
done
