import json
import os
import tempfile

cache = os.path.join(tempfile.gettempdir(), "lookup-cache.json")
data = {"alpha": 1, "beta": 2}
with open(cache, "w") as f:
    json.dump(data, f)
with open(cache) as f:
    print(json.load(f))
os.remove(cache)
