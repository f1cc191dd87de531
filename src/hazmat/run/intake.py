"""Admission: from a caller's call to a checked request, checked once, by the policy alone.

`admit` (public: `hazmat.admit`) turns the keyword options of `Sandbox.run`, `arun` and
`request` (declared in options/) into a request and checks it against a policy, with no engine
and no assessment: `Sandbox.request`, a session's calls and `hazmat batch`'s check of every
task before the first run all admit their requests here. `check_request` is the one
validation every request passes before anything runs, however it was made (also a request
built by hand and passed to `Sandbox.execute`). Its answer, `Checked` (the limits, image,
runtime, override reason and hosts the run gets), is kept with the request, so that no later
stage checks or resolves it again. Both raise `InputError` (or `InputTooLarge`,
`UnsafeFileName`, `UnknownLanguage`) naming what is wrong.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Unpack

from hazmat._exceptions import InputError, InputTooLarge, PolicyError, quoted
from hazmat.assess.decision import check_override_reason
from hazmat.egress.settings import narrowed
from hazmat.json_input import check_text
from hazmat.languages import get_language
from hazmat.models import ExecutionRequest, check_code
from hazmat.options import (
    RunOptions,
    ceilings,
    check_options,
    current_names,
    to_request_fields,
)
from hazmat.options.checks import (
    check_args,
    check_env,
    check_env_args_size,
    check_figure_formats,
    check_origin,
    check_path,
    check_paths_distinct,
)
from hazmat.policy import Clock, Limits, Policy, Runtime, TrustLevel, parse_trust
from hazmat.policy.build_flags import check_flags
from hazmat.run.image_choice import resolve_image
from hazmat.run.module_kind import check_module

__all__ = [
    "Checked",
    "admit",
    "check_request",
    "for_harness",
    "request_limits",
]


def admit(
    policy: Policy,
    code: str | bytes,
    language: str = "python",
    /,
    **given: Unpack[RunOptions],
) -> ExecutionRequest:
    """`code` in `language` with `Sandbox.run`'s options, as a request checked against
    `policy` alone: no engine, no assessment (`InputError` or one of its kind naming what is
    wrong). What the request gets (its limits, image, runtime, hosts) is kept with it: its
    fields are copies nobody else holds (read-only mappings, tuples), so that check is its
    check for good against this policy; `check_request` checks any other request every time."""
    named = current_names(given)
    check_options(named)
    fields = to_request_fields(named)
    fields.setdefault("trust", parse_trust(policy.default_trust))
    request = ExecutionRequest(
        code=check_code(code), language=get_language(language).name, **fields
    )
    object.__setattr__(request, "checked", _check(policy, request))  # frozen: set here only
    return request


@dataclass(frozen=True)
class Checked:
    """A request checked against a policy: what the run gets, which every later stage takes
    as it is (the limits are the level's with the request's own; the host may lower them)."""

    policy: Policy
    limits: Limits
    image: str
    runtime: Runtime
    override_reason: str | None  # stripped, and long enough for the level
    network: tuple[str, ...]  # the hosts it may reach: the level's, narrowed by the request's


def check_request(policy: Policy, request: ExecutionRequest) -> Checked:
    """Check every field of `request` against the rules and `policy`. A request
    `admit` made and checked against this very policy has its answer already; any
    other (built by hand, whose dicts and lists its maker may still change; changed with
    `dataclasses.replace`; checked against another policy) is checked now, every time."""
    if not isinstance(request, ExecutionRequest):
        raise InputError(f"expected an ExecutionRequest, not {type(request).__name__}")
    done = request.checked
    if isinstance(done, Checked) and done.policy is policy:
        return done
    return _check(policy, request)


def for_harness(request: ExecutionRequest, timeout_s: float) -> ExecutionRequest:
    """`request` (made by `admit`) with a wall-clock limit past its level's: an
    interactor's, which grade/harness.py derives from the submission's own checked limit so
    that the program judging a submission never stops before it. Never a caller's option:
    no option, wire field or protocol reaches it."""
    checked = request.checked
    if not isinstance(checked, Checked):
        raise InputError("for_harness takes a request admit made")
    longer = dataclasses.replace(request, timeout_s=timeout_s, clock=Clock.WALL)
    limits = checked.limits.replace(timeout_s=timeout_s)
    object.__setattr__(longer, "checked", dataclasses.replace(checked, limits=limits))
    return longer


def _check(policy: Policy, request: ExecutionRequest) -> Checked:
    check_code(request.code)
    lang = get_language(request.language)
    if not isinstance(request.trust, TrustLevel):
        raise InputError(f"trust must be a TrustLevel, not {type(request.trust).__name__}")
    _check_files(request)
    check_env(request.env)
    check_args(request.args)
    check_env_args_size(request.env, request.args)
    for name in ("caller", "script"):
        value = getattr(request, name)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{name} must be str, not {type(value).__name__}")
        if value is not None:
            check_text(value, name)
    if request.runtime is not None and not isinstance(request.runtime, Runtime):
        raise InputError(f"runtime must be a Runtime, not {type(request.runtime).__name__}")
    if request.clock is not None and not isinstance(request.clock, Clock):
        raise InputError(f"clock must be a Clock, not {type(request.clock).__name__}")
    check_origin(request.origin)
    check_figure_formats(request.figure_formats)
    settings = policy.settings(request.trust)
    where = f"trust.{request.trust.value}.build_flags"
    check_flags(lang.name, request.build_flags, settings.build_flags, where)
    reason = check_override_reason(request.override_reason, settings.assess)
    image = resolve_image(policy, request.trust, lang, request.image)
    check_module(lang, request.module)
    try:
        allow = narrowed(settings.network, request.network)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    limits = request_limits(policy, request)
    _check_sizes(request, lang.source_names, limits)
    runtime = request.runtime or settings.runtime
    return Checked(policy, limits, image, runtime, reason, allow)


def _check_files(request: ExecutionRequest) -> None:
    if not isinstance(request.stdin, bytes):
        raise InputError(f"stdin must be bytes, not {type(request.stdin).__name__}")
    if not isinstance(request.files, Mapping):
        raise InputError(f"files must be a mapping, not {type(request.files).__name__}")
    for name, data in request.files.items():
        check_path(name)
        if not isinstance(data, bytes):
            raise InputError(f"file {quoted(name)} must be bytes, not {type(data).__name__}")
    if isinstance(request.output_files, str) or not isinstance(request.output_files, list | tuple):
        raise InputError(
            f"output_files must be a list of paths, not {type(request.output_files).__name__}"
        )
    for name in request.output_files:
        check_path(name)
    check_paths_distinct(list(request.files), "input file")
    check_paths_distinct(list(request.output_files), "output file")


def request_limits(policy: Policy, request: ExecutionRequest) -> Limits:
    """The trust level's limits with the request's own (every option with a `ceiling` in
    options/: timeout, memory, CPUs, output), where it gave any. A run on the CPU clock gets
    the level's `measured_cpus` (a whole CPU by default) rather than its `cpus`.

    The level's values are the ceiling on every path (the Python API, the service's keys,
    sessions, MCP, a cluster worker): a request may ask for less, never for more."""
    limits = policy.settings(request.trust).limits
    if request.clock is Clock.CPU:
        limits = limits.replace(cpus=limits.measured_cpus)
    changes = {
        c.limit: getattr(request, c.field)
        for c in ceilings()
        if getattr(request, c.field) is not None
    }
    try:
        asked = limits.replace(**changes) if changes else limits
    except PolicyError as exc:
        raise InputError(str(exc)) from None
    for c in ceilings():
        field = c.limit
        ceiling = getattr(limits, field)
        unit = f" {c.unit}" if c.unit else ""
        if getattr(asked, field) > ceiling:
            key = "measured_cpus" if field == "cpus" and request.clock is Clock.CPU else field
            raise InputError(
                f"{c.option} {getattr(asked, field):g}{unit} is over the limit of trust level "
                f"{request.trust.value!r}: at most {ceiling:g}{unit} (policy key "
                f"trust.{request.trust.value}.{key})"
            )
    return asked


def _check_sizes(request: ExecutionRequest, source_names: tuple[str, ...], limits: Limits) -> None:
    """Each input within the level's limits; a refusal names the policy key that sets it."""
    level = request.trust.value

    def key(name: str) -> str:
        limit = getattr(limits, name)
        return f"trust level {level!r}'s limit is {limit:,} (policy key trust.{level}.{name})"

    code_size = len(request.code.encode())
    if code_size > limits.max_code_bytes:
        raise InputTooLarge(f"code is {code_size:,} bytes; {key('max_code_bytes')}")
    if len(request.files) > limits.max_files or len(request.output_files) > limits.max_files:
        raise InputTooLarge(f"too many input or output files for one run; {key('max_files')}")
    for name, data in request.files.items():
        if name in source_names:
            raise InputError(f"file name {quoted(name)} is taken by the program's source file")
        if len(data) > limits.max_file_bytes:
            raise InputTooLarge(
                f"file {quoted(name)} is {len(data):,} bytes; {key('max_file_bytes')}"
            )
    if len(request.stdin) > limits.max_file_bytes:
        raise InputTooLarge(f"stdin is {len(request.stdin):,} bytes; {key('max_file_bytes')}")
    total = code_size + sum(len(d) for d in request.files.values())
    if total > limits.tmpfs_mb * 1024 * 1024:
        raise InputTooLarge(
            f"code and files come to {total:,} bytes, more than the working directory's "
            f"{limits.tmpfs_mb} MB; trust level {level!r}'s tmpfs_mb (policy key "
            f"trust.{level}.tmpfs_mb)"
        )
