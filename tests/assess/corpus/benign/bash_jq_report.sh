#!/bin/bash
set -e
jq -r '.items[] | [.name, .price] | @tsv' data.json | sort -t$'\t' -k2 -n > prices.tsv
count=$(jq '.items | length' data.json)
echo "items: $count"
grep -c . prices.tsv
