#!/bin/bash
fib() {
  local n=$1
  if (( n < 2 )); then echo "$n"; return; fi
  echo $(( $(fib $((n - 1))) + $(fib $((n - 2))) ))
}
for k in 1 2 3 4 5 10; do
  echo "fib($k) = $(fib "$k")"
done
