"""Static risk assessment: hazmat's own rules, Bandit, Semgrep and tree-sitter parsers.

Assessment scores risk; it is not the security boundary (the container is). See
docs/assessment.md for the rules, the risk levels, the measured detection rates and the known
bypasses.
"""

from hazmat.assess.assessor import Assessor
from hazmat.assess.decision import Decision

__all__ = ["Assessor", "Decision"]
