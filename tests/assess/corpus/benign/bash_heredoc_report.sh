#!/bin/bash
rows=$(wc -l < input.csv)
cat > report.md <<EOF
# Report
Rows: $rows
Generated: $(date -u)
EOF
cat report.md
