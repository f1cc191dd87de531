"""Every error hazmat raises, in one tree.

```
HazmatError
├── InputError ·················· the request itself is wrong (exit 2, HTTP 400)
│   ├── UnknownLanguage
│   ├── UnsafeFileName
│   ├── InputTooLarge ············ code, stdin or a file over its limit (HTTP 413)
│   ├── RequestTimeout ··········· the service: a request body that did not arrive (HTTP 408)
│   ├── SessionNotFound ·········· no open session of the caller's has that id (HTTP 404)
│   ├── SessionBusy ·············· another resume of that paused session is under way (409)
│   ├── BatchNotFound ············ no batch of the caller's has that id (HTTP 404)
│   ├── RunNotFound ·············· the console: no recent run of the caller's has that id (404)
│   └── InstallRefused ··········· the policy lets no install of these packages here (403)
├── PolicyError ················· a policy file or value is invalid (exit 78, HTTP 500)
├── ClosedError ················· the Sandbox or pool was closed; open a new one (HTTP 503)
│   └── SessionClosed ············ the session ended (closed, expired, timed out) (HTTP 410)
├── AuditError ·················· the audit log cannot record (exit 74, HTTP 503): nothing runs
│   └── AuditDamaged ············ the log on disk is damaged; never repaired silently
├── AccessDenied ················ the service: no key, or a key it does not know (exit 77, 401)
│   └── NotPermitted ············ a valid key asked for more than it may (HTTP 403)
├── QuotaExceeded ··············· a tenant's quota is used up for now (exit 75, HTTP 429)
└── InfraError ·················· nothing to do with the user's code (exit 125, HTTP 503)
    ├── EngineUnavailable ······· the Docker engine does not answer
    ├── ImageNotFound ··········· the language's image is not on the engine
    ├── RuntimeUnavailable ······ the policy asks for a runtime the engine lacks
    ├── SettingsMismatch ········ a container's real settings differ from the policy's
    ├── ImageBuildError
    └── ServiceUnavailable ······ the hazmat service named by HAZMAT_URL does not answer
```

Front-ends map errors with `exit_code` and `http_status`, never with their own tables. Errors
that happen while running code do not raise: they come back as an `ExecutionResult` whose outcome
is `infra_error`, carrying the error's message, so that a caller (and the audit log) always gets
a result for a run it asked for.

Outside the tree on purpose: a protocol module's own signals that never leave it (the peers'
protocols' `Overloaded`, server/protocols/__init__.py, which each protocol answers in its
clients' words: a 504, a 429, a 503).

A message that names a value the user gave quotes it with `quoted()`: cut to 80 characters,
with an ellipsis and its full length, so that a 10,000-character id makes a short error.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "QUOTED_MOST",
    "AccessDenied",
    "AuditDamaged",
    "AuditError",
    "BatchNotFound",
    "ClosedError",
    "EngineUnavailable",
    "HazmatError",
    "ImageBuildError",
    "ImageNotFound",
    "InfraError",
    "InputError",
    "InputTooLarge",
    "InstallRefused",
    "NotPermitted",
    "PolicyError",
    "QuotaExceeded",
    "RequestTimeout",
    "RunNotFound",
    "RuntimeUnavailable",
    "ServiceUnavailable",
    "SessionBusy",
    "SessionClosed",
    "SessionNotFound",
    "SettingsMismatch",
    "UnknownLanguage",
    "UnsafeFileName",
    "quoted",
]

QUOTED_MOST = 80  # characters of a user's value an error message shows


def quoted(value: object, most: int = QUOTED_MOST) -> str:
    """`repr(value)` for an error message, a long value cut to its first `most` characters,
    an ellipsis and its full length: `'aaaa...' (10000 characters)`."""
    if isinstance(value, str | bytes) and len(value) > most:
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{value[:most]!r}... ({len(value)} {unit})"
    text = repr(value)
    if len(text) > most:
        return f"{text[:most]}... ({len(text)} characters)"
    return text


class HazmatError(Exception):
    """Base class of every error hazmat raises."""

    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 500


class InputError(HazmatError):
    """The request is wrong: empty code, a bad file name, an unknown language."""

    exit_code = 2
    http_status = 400


class UnknownLanguage(InputError):
    """The language is not one hazmat knows."""


class UnsafeFileName(InputError):
    """A file name that could escape the working directory or break the transfer."""


class InputTooLarge(InputError):
    """Code, stdin or an input file is over the policy's limit."""

    http_status = 413


class RequestTimeout(InputError):
    """The service: a request's body did not arrive in time (a client trickling it)."""

    http_status = 408


class SessionNotFound(InputError):
    """No open session has that id, or it is another tenant's (which looks the same)."""

    http_status = 404


class SessionBusy(InputError):
    """A paused session is being resumed already (by this service or another of the cluster's):
    the other resume gets it."""

    http_status = 409


class BatchNotFound(InputError):
    """No batch has that id (or it was forgotten), or it is another tenant's (which looks the
    same)."""

    http_status = 404


class RunNotFound(InputError):
    """The console: no recent run has that id (or it was forgotten), or it is another
    tenant's (which looks the same)."""

    http_status = 404


class InstallRefused(InputError):
    """A session may not install these packages: its trust level may not install, the service
    has no package index, or the install is over the policy's caps (`packages`)."""

    http_status = 403


class PolicyError(HazmatError):
    """A policy file or value is invalid; the message names the file and the key."""

    exit_code = 78
    http_status = 500


class ClosedError(HazmatError):
    """Used after `close()`: a closed Sandbox or pool takes no more runs (like a closed
    httpx client); nothing starts, nothing is recorded."""

    http_status = 503


class SessionClosed(ClosedError):
    """The session has ended: closed by its owner, past its idle time, lifetime or CPU
    budget, or ended by a call that ran out of output or would not stop past its time; the
    message says which."""

    http_status = 410


class AuditError(HazmatError):
    """The audit log cannot record; since every run must be recorded, the run does not start."""

    exit_code = 74
    http_status = 503


class AuditDamaged(AuditError):
    """The log on disk is damaged somewhere other than a torn final line."""


class AccessDenied(HazmatError):
    """The service got no API key, or one it does not know or that was revoked."""

    exit_code = 77
    http_status = 401


class NotPermitted(AccessDenied):
    """A valid key asked for more than its tenant may: a higher trust level, say."""

    http_status = 403


class QuotaExceeded(HazmatError):
    """A tenant's quota (runs at once, runs per minute) is used up; `retry_after_s` says when
    to try again (the service sends it as `Retry-After`)."""

    exit_code = 75
    http_status = 429

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class InfraError(HazmatError):
    """The infrastructure failed; never the fault of the code being run."""

    exit_code = 125
    http_status = 503


class EngineUnavailable(InfraError):
    """The Docker engine cannot be reached or stopped answering."""


class ImageNotFound(InfraError):
    """The image a language needs is not present; hazmat never pulls."""


class RuntimeUnavailable(InfraError):
    """The policy asks for a container runtime (e.g. runsc) the engine does not have."""


class SettingsMismatch(InfraError):
    """The engine reports settings for a container that differ from what the policy asked
    for; the container gets no job, and the run is recorded as a security event."""

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


class ImageBuildError(InfraError):
    """Building a hazmat image failed."""


class ServiceUnavailable(InfraError):
    """The hazmat service the client was pointed at (HAZMAT_URL, or the socket it was given)
    does not answer."""
