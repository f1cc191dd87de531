"""The analyser protocol. An analyser reads one program and returns what it noticed.

Analysers raise nothing for code they can read. A syntax error comes back as a finding with
rule `syntax-error`; anything else that stops an analyser (an exception, a timeout, a crash of
the child process) makes the assessment incomplete, which lifts it to at least HIGH.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Protocol

from hazmat.models import Finding, Severity

__all__ = ["SYNTAX_ERROR", "Analyzer", "AnalyzerSkipped", "text_findings"]

SYNTAX_ERROR = "syntax-error"


class AnalyzerSkipped(Exception):
    """The analyser could not look at the code (it skipped it, or its tool failed)."""


class Analyzer(Protocol):
    """Reads one program in one of `languages` and returns its findings."""

    name: str
    languages: frozenset[str]

    def analyze(self, code: str, language: str) -> Sequence[Finding]: ...


# Unicode bidirectional controls: they reorder how the source is displayed, so the code a
# reviewer sees is not the code that runs (Trojan Source, CVE-2021-42574).
_BIDI = {chr(c) for c in (0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069)}
_INVISIBLE = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"}


def text_findings(code: str, source: str) -> list[Finding]:
    """Findings any language shares: bidi controls and invisible characters in the source."""
    findings: list[Finding] = []
    if code.isascii():  # every character looked for here is outside ASCII
        return findings
    for number, line in enumerate(code.splitlines(), start=1):
        for column, ch in enumerate(line, start=1):
            if ch in _BIDI:
                findings.append(
                    Finding(
                        "trojan-source-bidi",
                        source,
                        Severity.CRITICAL,
                        f"bidirectional control U+{ord(ch):04X} ({unicodedata.name(ch, '?')}) "
                        "makes the displayed code differ from the code that runs",
                        number,
                        column,
                        cwe=1007,
                    )
                )
            elif ch in _INVISIBLE and not (number == 1 and column == 1 and ch == "\ufeff"):
                findings.append(
                    Finding(
                        "invisible-character",
                        source,
                        Severity.MEDIUM,
                        f"invisible character U+{ord(ch):04X} in the source",
                        number,
                        column,
                        cwe=1007,
                    )
                )
    return findings
