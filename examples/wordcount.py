"""Count words read from stdin and print the most common ones."""

import collections
import sys

words = sys.stdin.read().lower().split()
for word, count in collections.Counter(words).most_common(3):
    print(f"{count:3d}  {word}")
