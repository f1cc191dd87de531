#!/bin/bash
# Sum the third column of a CSV, skipping the header.
total=$(tail -n +2 data.csv | cut -d, -f3 | paste -sd+ - | bc)
echo "total: $total"
awk -F, 'NR > 1 { n++; s += $3 } END { printf "mean: %.2f\n", s / n }' data.csv
