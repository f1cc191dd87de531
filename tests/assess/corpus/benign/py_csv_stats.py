import csv
import io
import statistics

DATA = """name,score
ada,91
grace,88
linus,75
barbara,95
"""

rows = list(csv.DictReader(io.StringIO(DATA)))
scores = [int(r["score"]) for r in rows]
print("mean", statistics.mean(scores))
print("median", statistics.median(scores))
print("stdev", round(statistics.stdev(scores), 2))
best = max(rows, key=lambda r: int(r["score"]))
print("best", best["name"])
