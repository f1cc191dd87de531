import csv
import sys
from pathlib import Path

def totals(path):
    by_region = {}
    with Path(path).open(newline="") as handle:
        for row in csv.DictReader(handle):
            by_region[row["region"]] = by_region.get(row["region"], 0) + float(row["amount"])
    return by_region

source = sys.argv[1] if len(sys.argv) > 1 else "sales.csv"
if Path(source).exists():
    for region, total in sorted(totals(source).items()):
        print(f"{region:10} {total:10.2f}")
