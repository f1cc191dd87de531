"""The rules hazmat's own analysers find in a piece of code, in process (test_rules.py,
test_threat_classes.py)."""

from __future__ import annotations

from hazmat.assess.bash import BashAnalyzer
from hazmat.assess.c_family import CFamilyAnalyzer
from hazmat.assess.go import GoAnalyzer
from hazmat.assess.java import JavaAnalyzer
from hazmat.assess.javascript import JavaScriptAnalyzer
from hazmat.assess.python_ast import PythonAnalyzer
from hazmat.assess.ruby import RubyAnalyzer
from hazmat.assess.rust import RustAnalyzer
from hazmat.models import Severity


def rules(code: str, language: str = "python") -> dict[str, Severity]:
    """Each rule found in `code`, with the highest severity it was found at."""
    analyzer = {
        "python": PythonAnalyzer(),
        "javascript": JavaScriptAnalyzer(),
        "typescript": JavaScriptAnalyzer(),
        "go": GoAnalyzer(),
        "bash": BashAnalyzer(),
        "c": CFamilyAnalyzer(),
        "cpp": CFamilyAnalyzer(),
        "java": JavaAnalyzer(),
        "rust": RustAnalyzer(),
        "ruby": RubyAnalyzer(),
    }[language]
    found: dict[str, Severity] = {}
    for f in analyzer.analyze(code, language):
        if f.severity.rank > found.get(f.rule, Severity.INFO).rank:
            found[f.rule] = f.severity
    return found
