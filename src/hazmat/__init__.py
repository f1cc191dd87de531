"""hazmat: run untrusted code in fresh, hardened, single-use containers.

Names are imported on first use (PEP 562), so `import hazmat` and the assessment's child process
do not load the Docker client, the audit log's cryptography or asyncio until something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hazmat._exceptions import (
    AccessDenied,
    AuditDamaged,
    AuditError,
    BatchNotFound,
    ClosedError,
    EngineUnavailable,
    HazmatError,
    ImageBuildError,
    ImageNotFound,
    InfraError,
    InputError,
    InputTooLarge,
    InstallRefused,
    NotPermitted,
    PolicyError,
    QuotaExceeded,
    RequestTimeout,
    RunNotFound,
    RuntimeUnavailable,
    ServiceUnavailable,
    SessionBusy,
    SessionClosed,
    SessionNotFound,
    SettingsMismatch,
    UnknownLanguage,
    UnsafeFileName,
)

if TYPE_CHECKING:
    from hazmat.assess import (
        Assessor,
        Decision,
    )
    from hazmat.grade.grader import TaskResult
    from hazmat.grade.tasks import Task
    from hazmat.languages import (
        LANGUAGES,
        Language,
        get_language,
    )
    from hazmat.metrics import (
        MetricsSnapshot,
    )
    from hazmat.models import (
        Assessment,
        ExecutionRequest,
        ExecutionResult,
        Finding,
        Outcome,
        RiskLevel,
        Severity,
    )
    from hazmat.options import RunOptions
    from hazmat.policy import (
        PRESETS,
        Action,
        AssessSettings,
        Limits,
        Policy,
        PoolSettings,
        Runtime,
        SemgrepMode,
        TrustLevel,
        TrustSettings,
    )
    from hazmat.policy.file import load_policy, parse_policy
    from hazmat.run.intake import admit
    from hazmat.sandbox import (
        Sandbox,
    )
    from hazmat.sessions import (
        Session,
    )
    from hazmat.watch import (
        Watch,
    )

__version__ = "0.1.0"

# name -> the module that defines it, for the names not imported above
_LAZY = {
    "Action": "hazmat.policy",
    "AssessSettings": "hazmat.policy",
    "Assessment": "hazmat.models",
    "Assessor": "hazmat.assess",
    "Decision": "hazmat.assess",
    "ExecutionRequest": "hazmat.models",
    "ExecutionResult": "hazmat.models",
    "Finding": "hazmat.models",
    "LANGUAGES": "hazmat.languages",
    "Language": "hazmat.languages",
    "Limits": "hazmat.policy",
    "MetricsSnapshot": "hazmat.metrics",
    "Outcome": "hazmat.models",
    "PRESETS": "hazmat.policy",
    "Policy": "hazmat.policy",
    "PoolSettings": "hazmat.policy",
    "RiskLevel": "hazmat.models",
    "RunOptions": "hazmat.options",
    "Runtime": "hazmat.policy",
    "Sandbox": "hazmat.sandbox",
    "Session": "hazmat.sessions",
    "SemgrepMode": "hazmat.policy",
    "Severity": "hazmat.models",
    "Task": "hazmat.grade.tasks",
    "TaskResult": "hazmat.grade.grader",
    "TrustLevel": "hazmat.policy",
    "TrustSettings": "hazmat.policy",
    "Watch": "hazmat.watch",
    "admit": "hazmat.run.intake",
    "get_language": "hazmat.languages",
    "load_policy": "hazmat.policy.file",
    "parse_policy": "hazmat.policy.file",
}

__all__ = [
    "LANGUAGES",
    "PRESETS",
    "AccessDenied",
    "Action",
    "AssessSettings",
    "Assessment",
    "Assessor",
    "AuditDamaged",
    "AuditError",
    "BatchNotFound",
    "ClosedError",
    "Decision",
    "EngineUnavailable",
    "ExecutionRequest",
    "ExecutionResult",
    "Finding",
    "HazmatError",
    "ImageBuildError",
    "ImageNotFound",
    "InfraError",
    "InputError",
    "InputTooLarge",
    "InstallRefused",
    "Language",
    "Limits",
    "MetricsSnapshot",
    "NotPermitted",
    "Outcome",
    "Policy",
    "PolicyError",
    "PoolSettings",
    "QuotaExceeded",
    "RequestTimeout",
    "RiskLevel",
    "RunNotFound",
    "RunOptions",
    "Runtime",
    "RuntimeUnavailable",
    "Sandbox",
    "SemgrepMode",
    "ServiceUnavailable",
    "Session",
    "SessionBusy",
    "SessionClosed",
    "SessionNotFound",
    "SettingsMismatch",
    "Severity",
    "Task",
    "TaskResult",
    "TrustLevel",
    "TrustSettings",
    "UnknownLanguage",
    "UnsafeFileName",
    "Watch",
    "__version__",
    "admit",
    "get_language",
    "load_policy",
    "parse_policy",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hazmat' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public surface, as `__all__` says (not the helpers this module imports)."""
    return sorted(__all__)
