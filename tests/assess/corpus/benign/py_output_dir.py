import json
import os

os.makedirs("results", exist_ok=True)
summary = {"rows": 120, "mean": 4.2}
with open(os.path.join("results", "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
for name in os.listdir("results"):
    print(name, os.path.getsize(os.path.join("results", name)))
os.remove(os.path.join("results", "summary.json"))
