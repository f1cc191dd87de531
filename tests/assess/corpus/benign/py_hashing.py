import hashlib
import random

random.seed(7)
blocks = [bytes(random.randrange(256) for _ in range(64)) for _ in range(4)]
for block in blocks:
    print(hashlib.md5(block).hexdigest()[:8], hashlib.sha256(block).hexdigest()[:16])
assert len(blocks) == 4
