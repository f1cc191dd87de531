import textwrap
import string

paragraph = " ".join(string.ascii_lowercase[i : i + 5] for i in range(0, 26, 5)) * 4
for line in textwrap.wrap(paragraph, width=30):
    print(line.title())
