import re
import sys
from collections import Counter

text = sys.stdin.read() or "the quick brown fox jumps over the lazy dog the end"
words = re.findall(r"[a-z']+", text.lower())
for word, count in Counter(words).most_common(5):
    print(f"{word:>10} {count}")
