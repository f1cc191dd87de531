"""hazmat: run untrusted code in fresh, hardened, single-use containers."""

from hazmat._exceptions import (
    AuditDamaged,
    AuditError,
    EngineUnavailable,
    HazmatError,
    ImageBuildError,
    ImageNotFound,
    InfraError,
    InputError,
    InputTooLarge,
    PolicyError,
    RuntimeUnavailable,
    UnknownLanguage,
    UnsafeFileName,
)
from hazmat.languages import LANGUAGES, Language, get_language
from hazmat.models import ExecutionRequest, ExecutionResult, Outcome
from hazmat.policy import (
    PRESETS,
    Limits,
    Policy,
    Runtime,
    TrustLevel,
    TrustSettings,
    load_policy,
    parse_policy,
)
from hazmat.sandbox import RunOptions, Sandbox

__version__ = "0.1.0"

__all__ = [
    "LANGUAGES",
    "PRESETS",
    "AuditDamaged",
    "AuditError",
    "EngineUnavailable",
    "ExecutionRequest",
    "ExecutionResult",
    "HazmatError",
    "ImageBuildError",
    "ImageNotFound",
    "InfraError",
    "InputError",
    "InputTooLarge",
    "Language",
    "Limits",
    "Outcome",
    "Policy",
    "PolicyError",
    "RunOptions",
    "Runtime",
    "RuntimeUnavailable",
    "Sandbox",
    "TrustLevel",
    "TrustSettings",
    "UnknownLanguage",
    "UnsafeFileName",
    "__version__",
    "get_language",
    "load_policy",
    "parse_policy",
]
