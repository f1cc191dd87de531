"""The one way hazmat fills in a program it sends into a sandbox: `@NAME@` placeholders.

A placeholder is `@NAME@` (capitals, digits, `_`), replaced by the value given for NAME. Where
a bare placeholder would not parse in the file's language, a whole line stands in for it: a
line that ends in the comment `# @NAME@` is replaced, all of it, by the value. `fill` refuses
a placeholder without a value and a value without a placeholder. The files themselves live in
`language_builds/` (the build steps) and `backends/inside/` (everything else that runs inside).
"""

from __future__ import annotations

import re

__all__ = ["PLACEHOLDER", "fill", "placeholders"]

PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
# a whole line standing in for a placeholder, or a placeholder within a line
_SLOT = re.compile(
    r"^[^\n@]*#[ \t]*@(?P<line>[A-Z][A-Z0-9_]*)@[ \t]*$|@(?P<word>[A-Z][A-Z0-9_]*)@",
    re.MULTILINE,
)


def placeholders(text: str) -> set[str]:
    """The names of the placeholders in `text`."""
    return set(PLACEHOLDER.findall(text))


def fill(text: str, **values: str) -> str:
    """`text` with each placeholder replaced by its value, in one pass (a value is never read
    for placeholders). Raises ValueError if a placeholder has no value or a value is not used."""
    found = placeholders(text)
    missing, unused = sorted(found - values.keys()), sorted(values.keys() - found)
    if missing or unused:
        raise ValueError(f"template placeholders: no value for {missing}, not used: {unused}")
    return _SLOT.sub(lambda slot: values[slot["line"] or slot["word"]], text)
