import os
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as tmp:
    for i in range(3):
        Path(tmp, f"part{i}.txt").write_text("x" * (i + 1) * 10)
    sizes = {name: os.path.getsize(os.path.join(tmp, name)) for name in sorted(os.listdir(tmp))}
    print(sizes, sum(sizes.values()))
