"""A Judge0 submission (judge0.py serves them): its fields made into a run's options, its
verdict in Judge0's status ids, and its fields as Judge0 shows them."""

from __future__ import annotations

import base64
import binascii
import functools
import io
import shlex
import uuid
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import anyio

from hazmat._exceptions import InputError
from hazmat.backends.container.cpu_time import CpuLimit
from hazmat.grade.compare import difference
from hazmat.grade.tasks import Comparator
from hazmat.languages import LANGUAGES, Language
from hazmat.models import ExecutionResult, Outcome
from hazmat.policy import Clock
from hazmat.server.protocols import Service, whole_mib, within_level
from hazmat.service.tenant_keys import Key

__all__ = [
    "ALL_FIELDS",
    "DEFAULT_CPU_S",
    "DEFAULT_FIELDS",
    "NAME",
    "STATUSES",
    "Invalid",
    "Submission",
    "languages_by_id",
    "parse",
    "shown",
    "verdict",
]

NAME = "judge0"  # its ids in the language modules (`Language.names`)
DEFAULT_CPU_S = 5.0  # Judge0 CE's cpu_time_limit (at most the level's)
DEFAULT_FIELDS = ("token", "stdout", "time", "memory", "stderr", "compile_output", "message",
                  "status")
STATUSES = {
    1: "In Queue",
    2: "Processing",
    3: "Accepted",
    4: "Wrong Answer",
    5: "Time Limit Exceeded",
    6: "Compilation Error",
    7: "Runtime Error (SIGSEGV)",
    8: "Runtime Error (SIGXFSZ)",
    9: "Runtime Error (SIGFPE)",
    10: "Runtime Error (SIGABRT)",
    11: "Runtime Error (NZEC)",
    12: "Runtime Error (Other)",
    13: "Internal Error",
    14: "Exec Format Error",
}
_BY_SIGNAL = {11: 7, 25: 8, 8: 9, 6: 10}  # a program killed by one of these signals
FIELDS: Mapping[str, str] = {"timeout": "cpu_time_limit", "memory_mb": "memory_limit"}
_TEXT = ("source_code", "stdin", "expected_output", "stdout", "stderr", "compile_output")
# every field a submission has, in Judge0's order (`fields=*`)
ALL_FIELDS = (
    "source_code", "language_id", "stdin", "expected_output", "stdout", "status_id",
    "created_at", "finished_at", "time", "memory", "stderr", "token", "number_of_runs",
    "cpu_time_limit", "cpu_extra_time", "wall_time_limit", "memory_limit", "stack_limit",
    "max_processes_and_or_threads", "enable_per_process_and_thread_time_limit",
    "enable_per_process_and_thread_memory_limit", "max_file_size", "compile_output",
    "exit_code", "exit_signal", "message", "wall_time", "compiler_options",
    "command_line_arguments", "redirect_stderr_to_stdout", "callback_url", "additional_files",
    "enable_network", "post_execution_filesystem", "status", "language",
)


class Invalid(Exception):
    """A field Judge0 would refuse: 422, `{field: [message]}`."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class Asked:
    """What a submission asked for: its code, the run's options made from its fields, its
    expected output (None: no judging), the fields Judge0 echoes back (with the limits it runs
    with), and whether stderr goes to stdout (`redirect_stderr_to_stdout`)."""

    code: str
    options: Mapping[str, Any]
    expected: str | None
    echoed: Mapping[str, Any]
    merged: bool


@dataclass
class Submission:
    """One submission: what was asked, and its run."""

    token: str
    tenant: str
    language: Language
    language_id: int
    asked: Asked
    said: list[str]
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    status: int = 1
    result: ExecutionResult | None = None
    message: str | None = None
    finished_at: datetime | None = None
    done: anyio.Event = field(default_factory=anyio.Event)


@functools.cache
def languages_by_id() -> Mapping[str, Language]:
    """Judge0's language ids (as text) -> hazmat's languages, read once."""
    return MappingProxyType(
        {i: lang for lang in LANGUAGES.values() for i in lang.names.get(NAME, ())}
    )


def parse(data: Mapping[str, Any], key: Key, b64: bool, service: Service) -> Submission:
    """A submission from its fields, the run's options made from them (`_Invalid` names the
    field Judge0 would)."""
    ids = languages_by_id()
    language_id = data.get("language_id")
    language = ids.get(str(language_id))
    if language is None or not isinstance(language_id, int) or isinstance(language_id, bool):
        raise Invalid("language_id", f"language with id {language_id} doesn't exist")
    code = _text(data, "source_code", b64)
    if code is None:
        raise Invalid("source_code", "can't be blank")
    for name, why in (("callback_url", "callbacks are not enabled"),
                      ("enable_network", "enabling network is not allowed")):
        if data.get(name):
            raise Invalid(name, why)
    if data.get("number_of_runs") not in (None, 1):
        raise Invalid("number_of_runs", "only one run is supported")
    cpu_s = _seconds(data, "cpu_time_limit") or min(
        DEFAULT_CPU_S, service.policy.settings(key.trust).limits.timeout_s
    )
    options: dict[str, Any] = {
        "stdin": (_text(data, "stdin", b64) or "").encode(),
        "files": _additional_files(data.get("additional_files"), service, key),
        "args": _words(data, "command_line_arguments"),
        "timeout": cpu_s,
        "memory_mb": _memory_mb(data.get("memory_limit")),
        "clock": Clock.CPU,
        "trust": key.trust,
        "caller": key.caller,
        "origin": {"protocol": NAME},
    }
    if data.get("compiler_options"):
        options["build_flags"] = _words(data, "compiler_options")
    said = within_level(options, FIELDS, key.trust, service.policy)
    echoed = {name: data.get(name) for name in ALL_FIELDS if name in data}
    limits = service.policy.settings(key.trust).limits
    echoed.update(  # the limits it runs with (the level's where it asked for more or none)
        cpu_time_limit=float(options["timeout"]),
        wall_time_limit=CpuLimit(options["timeout"]).backstop_s,
        memory_limit=(options["memory_mb"] or limits.memory_mb) * 1024,
    )
    merged = bool(data.get("redirect_stderr_to_stdout"))
    asked = Asked(code, options, _text(data, "expected_output", b64), echoed, merged)
    return Submission(str(uuid.uuid4()), key.tenant, language, language_id, asked, said)


def verdict(result: ExecutionResult, submission: Submission) -> tuple[int, str | None]:
    """Judge0's status id and message for `result`; the lowered limits are said too."""
    outcome, error = result.outcome, result.error
    if outcome is Outcome.OK:
        expected = submission.asked.expected
        wrong = expected is not None and difference(Comparator("lines"), expected, result.stdout)
        status = 4 if wrong else 3
    elif outcome is Outcome.TIMEOUT:
        status = 5
    elif outcome in (Outcome.COMPILE_ERROR, Outcome.COMPILE_TIMEOUT):
        status = 6
    elif outcome is Outcome.OUTPUT_LIMIT:
        status = 8
    elif outcome is Outcome.ERROR:
        signal = _signal(result)
        status = _BY_SIGNAL.get(signal, 12) if signal else 11
        error = error or f"Exited with error status {result.exit_code}"
    elif outcome in (Outcome.INFRA_ERROR, Outcome.CANCELLED):
        status = 13
    else:  # memory, pids, blocked: the program's, with no status of their own in Judge0
        status = 12
    message = "; ".join(m for m in (error, *submission.said) if m) or None
    return status, message


def _signal(result: ExecutionResult) -> int | None:
    code = result.exit_code
    return code - 128 if code is not None and 128 < code < 160 else None


def fields_of(submission: Submission) -> dict[str, Any]:
    """Every field of `submission`, as Judge0 gives it (times as strings, memory in KB)."""
    result, echoed = submission.result, submission.asked.echoed
    every: dict[str, Any] = {name: echoed.get(name) for name in ALL_FIELDS}
    stdout, stderr = (result.stdout_bytes, result.stderr_bytes) if result else (None, None)
    if result is not None and submission.asked.merged:
        stdout, stderr = result.stdout_bytes + result.stderr_bytes, b""
    compiled = result is not None and result.outcome in (
        Outcome.COMPILE_ERROR, Outcome.COMPILE_TIMEOUT
    )
    every.update(
        source_code=submission.asked.code,
        language_id=submission.language_id,
        status_id=submission.status,
        status={"id": submission.status, "description": STATUSES[submission.status]},
        language={"id": submission.language_id, "name": submission.language.title},
        token=submission.token,
        created_at=_time(submission.created_at),
        finished_at=_time(submission.finished_at),
        stdout=None if compiled else stdout,
        stderr=None if compiled else stderr,
        compile_output=(
            (result.stderr_bytes or result.stdout_bytes) if compiled and result else None
        ),
        message=submission.message,
        exit_code=_exit_code(result),
        exit_signal=_signal(result) if result else None,
        time=_seconds_text(result.cpu_time_ms if result else None),
        wall_time=_seconds_text(result.program_ms if result else None),
        memory=None if not result or result.peak_memory_bytes is None
        else result.peak_memory_bytes // 1024,
        number_of_runs=1,
        post_execution_filesystem=None,
    )
    return every


def _exit_code(result: ExecutionResult | None) -> int | None:
    if result is None or result.outcome not in (Outcome.OK, Outcome.ERROR) or _signal(result):
        return None
    return result.exit_code


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _seconds_text(ms: float | None) -> str | None:
    return None if ms is None else f"{ms / 1000:.3f}"


def _text(data: Mapping[str, Any], name: str, b64: bool) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise Invalid(name, "must be a string")
    if not b64:
        return value
    try:
        return base64.b64decode(value.replace("\n", ""), validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise Invalid(name, f"is not base64 of UTF-8 text ({exc})") from None


def _encoded(text: str | bytes, name: str, b64: bool) -> str:
    data = text.encode() if isinstance(text, str) else text
    if b64:
        return base64.b64encode(data).decode()
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise InputError(
            f"{name} of this submission cannot be converted to UTF-8, use base64_encoded=true "
            "query parameter"
        ) from None


def _additional_files(value: object, service: Service, key: Key) -> dict[str, bytes]:
    """`additional_files`: a base64 ZIP archive whose files land beside the program, its sizes
    checked against the level's before anything is unpacked (the names, the count and each
    size by the run's own checks after)."""
    if value is None:
        return {}
    if not isinstance(value, str):
        raise Invalid("additional_files", "must be a base64 ZIP archive")
    limits = service.policy.settings(key.trust).limits
    most = limits.max_file_bytes * limits.max_files
    try:
        archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(value, validate=True)))
        listed = [i for i in archive.infolist() if not i.is_dir()]
        if sum(i.file_size for i in listed) > most:
            raise Invalid("additional_files", f"unpacks to more than {most:,} bytes")
        return {i.filename: archive.read(i) for i in listed}
    except (binascii.Error, ValueError, zipfile.BadZipFile) as exc:
        raise Invalid("additional_files", f"is not a base64 ZIP archive ({exc})") from None


def _words(data: Mapping[str, Any], name: str) -> list[str]:
    value = data.get(name)
    if value is None:
        return []
    if not isinstance(value, str):
        raise Invalid(name, "must be a string")
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise Invalid(name, f"cannot be split into words ({exc})") from None


def _seconds(data: Mapping[str, Any], name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise Invalid(name, "must be a positive number of seconds")
    return float(value)


def _memory_mb(value: object) -> int | None:
    """`memory_limit` in KB, as whole MiB (up)."""
    try:
        return whole_mib(value, 1024)
    except ValueError:
        raise Invalid("memory_limit", "must be a positive number of kilobytes") from None


def shown(submission: Submission, names: tuple[str, ...], b64: bool) -> dict[str, Any]:
    """The fields `names` of `submission`, its texts as base64 when `b64`."""
    every = fields_of(submission)
    picked = {name: every[name] for name in names}
    for name in _TEXT:
        if name in picked and picked[name] is not None:
            picked[name] = _encoded(picked[name], name, b64)
    return picked
