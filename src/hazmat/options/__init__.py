"""A run's options, declared once.

`RunOptions` is the table: each key is an option of `Sandbox.run` (and `arun`, `request`,
`Session.run`), typed for mypy, and annotated with an `Option` that says everything else about
it: the Python types it takes and the words an error uses for them, its bounds, the trust
level's limit it is checked against, where a caller may set it (`Use`), its JSON Schema on the
wire, its help text, its `hazmat run` flag, and how it becomes the `ExecutionRequest`'s field.

What is derived from it, each in the module that uses it:

- `check_options` (here): unknown or mistyped options, bounds;
- `to_request_fields` (here), which `run/intake.admit` builds the request from, and
  `from_request`, the reverse, which `wire.request_to_wire` sends;
- `request_limits` (run/intake.py): every option with a `ceiling`;
- the API body's fields (`body_fields`: wire.py's codec, the session routes), their JSON Schema
  (`json_properties`: the OpenAPI document, and through it the TypeScript client's types), the
  MCP tools' parameters (server/mcp_tools.py) and `hazmat run`'s flags (cli/run.py);
- what a session call may set (`CALL_OPTIONS`) and what is fixed when it opens.

A new option is a key here, the field of `ExecutionRequest` it fills (models.py), the stage that
uses it, and its tests. A dataclass with field metadata was the other candidate, and pydantic a
third: importing pydantic takes about 80 ms here, twice the whole CLI's import (37 ms), and the
CLI's path to the local server reads this module.

The annotations here are evaluated as the class is made (no `from __future__ import
annotations`), so that `Option`s are objects, not strings to evaluate again.
"""

import dataclasses
import enum
import functools
import math
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from hazmat._exceptions import InputError, quoted
from hazmat.displays import FIGURE_FORMATS
from hazmat.json_input import check_text
from hazmat.options.checks import (
    FINAL_VALUES,
    check_args,
    check_env,
    check_figure_formats,
    check_final_value,
    check_path,
    to_bytes,
)
from hazmat.policy import Clock, Runtime, TrustLevel, limit_bounds, parse_trust

if TYPE_CHECKING:
    from hazmat.models import ExecutionRequest

__all__ = [
    "CALL_OPTIONS",
    "OPEN_OPTIONS",
    "Ceiling",
    "Flag",
    "Option",
    "RunOptions",
    "Use",
    "body_fields",
    "ceilings",
    "check_options",
    "current_names",
    "from_request",
    "json_properties",
    "option",
    "options",
    "parse_clock",
    "parse_runtime",
    "plain",
    "to_request_fields",
]


class Use(enum.StrEnum):
    """Where a caller may set an option. Every option is a keyword of `Sandbox.run`."""

    RUN = "run"  # a run's request: the API body of /v1/runs, `hazmat run`
    OPEN = "open"  # fixed when a session opens (POST /v1/sessions, `Sandbox.session`)
    CALL = "call"  # a session's call may set it
    TOOL = "tool"  # a model sets it: the MCP tools' parameters (with RUN, CALL or OPEN)
    INTERNAL = "internal"  # only hazmat's own processes send it (the cluster's queue)


@dataclass(frozen=True)
class Flag:
    """How `hazmat run` takes an option. `kind`: `value` (one value, of the option's type;
    the schema's `enum` as choices), `repeat` (a list, one per flag), `words` (a list, one
    string split at spaces), `pairs` (NAME=VALUE, repeatable), `file` (read from a file, `-`
    for stdin), `files` (files copied in under their own names, repeatable)."""

    name: str
    metavar: str | None = None
    kind: Literal["value", "repeat", "words", "pairs", "file", "files"] = "value"
    dest: str | None = None  # the parser's attribute, when the option's name is taken
    help: str | None = None  # the flag's own words, when the option's do not fit a shell


@dataclass(frozen=True)
class Option:
    """One option of a run (see the module's docstring)."""

    help: str  # what it is, for people and models: OpenAPI, MCP and CLI read it
    types: tuple[type, ...]  # what `Sandbox.run` accepts (None is always the default)
    wanted: str  # how an error names those types
    schema: Mapping[str, Any]  # its JSON Schema on the wire, without the description
    uses: frozenset[Use]
    field: str | None = None  # ExecutionRequest's field, when not the option's name
    convert: Callable[[Any], Any] | None = None  # the value as the request's field holds it
    positive: str | None = None  # a number that must be > 0: how the error names it
    ceiling: str | None = None  # the trust level's limit (a `Limits` field) it may not pass
    unit: str = ""  # of the ceiling, in its error
    binary: bool = False  # bytes on the wire: text under its name, base64 under <name>_base64
    keep_empty: bool = False  # an empty value is not the default (network=[]: no host at all)
    flag: Flag | None = None
    # its name before a rename: still taken (`current_names`), with a DeprecationWarning in
    # Python and `deprecated` in the API's schema, until hazmat 1.0
    formerly: str | None = None


def _mapping_of_bytes(files: Mapping[str, str | bytes]) -> Mapping[str, bytes]:
    return MappingProxyType(
        {check_path(n): to_bytes(d, f"file {quoted(n)}") for n, d in files.items()}
    )


def parse_clock(value: Clock | str | None) -> Clock | None:
    if value is None:
        return None
    try:
        return Clock(value)
    except ValueError:
        raise InputError(f"unknown clock {quoted(value)} (expected wall or cpu)") from None


def parse_runtime(value: Runtime | str | None) -> Runtime | None:
    if value is None:
        return None
    try:
        return Runtime(value)
    except ValueError:
        raise InputError(f"unknown runtime {quoted(value)} (expected runc or runsc)") from None


_STR: Mapping[str, Any] = {"type": "string"}
_STRINGS: Mapping[str, Any] = {"type": "array", "items": _STR}
_STR_MAP: Mapping[str, Any] = {"type": "object", "additionalProperties": _STR}
_RUN, _OPEN, _CALL, _TOOL, _INTERNAL = Use.RUN, Use.OPEN, Use.CALL, Use.TOOL, Use.INTERNAL


class RunOptions(TypedDict, total=False):
    """The keyword options of `Sandbox.run`, `arun` and `request`, and the table every other
    form of them is derived from. An option not listed here, or of the wrong type, raises
    `InputError` naming the valid ones."""

    trust: Annotated[
        TrustLevel | str | None,
        Option(
            "the trust level, which picks the limits, the runtime and what may run; at most "
            "an API key's own level (its level by default)",
            (str,),
            "a trust level: untrusted, unknown or trusted",
            {"type": "string", "enum": [t.value for t in TrustLevel]},
            frozenset({_RUN, _OPEN}),
            convert=parse_trust,
            flag=Flag("--trust"),
        ),
    ]
    stdin: Annotated[
        str | bytes | None,
        Option(
            "the program's standard input",
            (str, bytes, bytearray),
            "str or bytes",
            _STR,
            frozenset({_RUN, _CALL, _TOOL}),
            convert=lambda value: to_bytes(value, "stdin"),
            binary=True,
            flag=Flag(
                "--stdin",
                "FILE",
                "file",
                help="file fed to the program's stdin ('-': this command's own standard input)",
            ),
        ),
    ]
    files: Annotated[
        Mapping[str, str | bytes] | None,
        Option(
            "input files in the working directory beside the program: relative path -> content",
            (Mapping,),
            "a mapping of relative path -> str or bytes",
            _STR_MAP,
            frozenset({_RUN, _CALL, _TOOL}),
            convert=_mapping_of_bytes,
            binary=True,
            flag=Flag(
                "--file",
                "PATH",
                "files",
                dest="input_files",
                help="copy a file into the working directory, under its own name (repeatable)",
            ),
        ),
    ]
    output_files: Annotated[
        Sequence[str],
        Option(
            "files the program writes that come back (relative paths, e.g. out/report.json); "
            "base64 in the result's files",
            (list, tuple),
            "a list of relative paths",
            _STRINGS,
            frozenset({_RUN, _CALL, _TOOL}),
            convert=lambda names: tuple(check_path(n) for n in names),
            flag=Flag("--output-file", "NAME", "repeat", dest="output_file"),
        ),
    ]
    env: Annotated[
        Mapping[str, str] | None,
        Option(
            "environment variables for the program: name -> value",
            (Mapping,),
            "a mapping of variable name -> str",
            _STR_MAP,
            frozenset({_RUN, _CALL, _TOOL}),
            convert=lambda env: MappingProxyType(check_env(env)),
            flag=Flag(
                "--env",
                "NAME=VALUE",
                "pairs",
                help="an environment variable for the program (repeatable)",
            ),
        ),
    ]
    args: Annotated[
        Sequence[str] | None,
        Option(
            "the program's command-line arguments, in order",
            (list, tuple),
            "a list of str (the program's command-line arguments)",
            _STRINGS,
            frozenset({_RUN, _CALL, _TOOL}),
            convert=check_args,
            flag=Flag(
                "--arg",
                "ARG",
                "repeat",
                dest="program_args",
                help="a command-line argument for the program (repeatable, in order; "
                "--arg=-v for one that starts with -)",
            ),
        ),
    ]
    timeout: Annotated[
        float | None,
        Option(
            "seconds the program may run, at most the trust level's timeout_s (its default "
            "otherwise); past it the run stops (a session's call is interrupted and the "
            "session kept)",
            (int, float),
            "seconds, a positive number",
            {"type": "number"},
            frozenset({_RUN, _CALL, _TOOL}),
            field="timeout_s",
            positive="number of seconds",
            ceiling="timeout_s",
            unit="s",
            flag=Flag("--timeout", "SEC"),
        ),
    ]
    compile_timeout: Annotated[
        float | None,
        Option(
            "seconds the build step of a compiled language (C, C++, Go, Java, Rust, TypeScript) "
            "may take, at most the trust level's compile_timeout_s (its default otherwise); "
            "past it the run ends as compile_timeout and the program does not run",
            (int, float),
            "seconds, a positive number",
            {"type": "number"},
            frozenset({_RUN}),
            field="compile_timeout_s",
            positive="number of seconds",
            ceiling="compile_timeout_s",
            unit="s",
            flag=Flag("--compile-timeout", "SEC"),
        ),
    ]
    memory_mb: Annotated[
        int | None,
        Option(
            "the program's memory in MB, at most the trust level's memory_mb",
            (int,),
            "megabytes, a positive whole number",
            {"type": "integer"},
            frozenset({_RUN}),
            positive="whole number",
            ceiling="memory_mb",
            unit="MB",
            flag=Flag("--memory", "MB", dest="memory"),
        ),
    ]
    output_bytes: Annotated[
        int | None,
        Option(
            "the most stdout and stderr the program may write together, in bytes, at most the "
            "trust level's output_bytes; past it the run stops as output_limit (a grader's "
            "or a model's smaller cap)",
            (int,),
            "bytes, a positive whole number",
            {"type": "integer"},
            frozenset({_RUN, _TOOL}),
            positive="whole number",
            ceiling="output_bytes",
            unit="bytes",
            flag=Flag("--output-bytes", "BYTES"),
        ),
    ]
    cpus: Annotated[
        float | None,
        Option(
            "CPUs the program may use, at most the trust level's cpus (measured_cpus on the "
            "cpu clock)",
            (int, float),
            "CPUs, a positive number (at most the trust level's)",
            {"type": "number"},
            frozenset({_RUN}),
            positive="number",
            ceiling="cpus",
        ),
    ]
    clock: Annotated[
        Clock | str | None,
        Option(
            "what timeout measures: wall-clock time (the default), or the program's CPU time "
            "with a whole CPU and wall-clock time as a backstop (docs/batch.md)",
            (str,),
            "what timeout measures: wall (the default) or cpu",
            {"type": "string", "enum": [c.value for c in Clock], "default": "wall"},
            frozenset({_RUN}),
            convert=parse_clock,
        ),
    ]
    runtime: Annotated[
        Runtime | str | None,
        Option(
            "the container runtime: runsc (gVisor) for code that may start programs or open "
            "sockets; runc only where the trust level has it (the level's by default)",
            (str,),
            "runc or runsc",
            {"type": "string", "enum": [r.value for r in Runtime]},
            frozenset({_RUN, _OPEN, _TOOL}),
            convert=parse_runtime,
            flag=Flag("--runtime"),
        ),
    ]
    caller: Annotated[
        str | None,
        Option(
            "who asks, as the caller names itself (recorded in the audit log; the service "
            "sets it from the API key)",
            (str,),
            "a name (str)",
            _STR,
            frozenset({_INTERNAL}),
            flag=Flag("--caller", "NAME"),
        ),
    ]
    origin: Annotated[
        Mapping[str, str | int] | None,
        Option(
            "where the run came from beyond its caller, recorded with it (a cluster run's "
            "run, worker and attempt)",
            (Mapping,),
            "a mapping of name -> str or int (recorded with the run)",
            {"type": "object"},
            frozenset({_INTERNAL}),
            convert=lambda origin: MappingProxyType(dict(origin)),
        ),
    ]
    script: Annotated[
        str | None,
        Option(
            "a script's name: the audit log diffs each run's code against the last run of the "
            "same script from the same caller",
            (str,),
            "a name (str)",
            _STR,
            frozenset({_RUN}),
            formerly="session",
        ),
    ]
    override_reason: Annotated[
        str | None,
        Option(
            "why code the policy blocks may run (recorded; at least 20 characters by "
            "default; over the API, a key allowed to override)",
            (str,),
            "a sentence saying why blocked code may run",
            _STR,
            frozenset({_RUN, _CALL}),
            flag=Flag("--override-reason", "TEXT"),
        ),
    ]
    image: Annotated[
        str | None,
        Option(
            "an image the trust level allows: python-data for numpy, pandas, matplotlib, "
            "scipy and scikit-learn; the language's own image (its standard library) by "
            "default",
            (str,),
            "an image name the policy allows (e.g. python-data)",
            _STR,
            frozenset({_RUN, _OPEN, _TOOL}),
            flag=Flag("--image", "NAME"),
        ),
    ]
    module: Annotated[
        str | None,
        Option(
            "JavaScript and TypeScript: run as an ES module (esm) or CommonJS; auto (the "
            "default): from the code and the file's extension",
            (str,),
            "auto, esm or commonjs (JavaScript, TypeScript)",
            {"type": "string", "enum": ["auto", "esm", "commonjs"]},
            frozenset({_RUN, _CALL}),
            flag=Flag("--module"),
        ),
    ]
    network: Annotated[
        list[str] | None,
        Option(
            "hosts to reach through the allowlist proxy, each on the trust level's "
            "network.allow (all of them by default; an empty list: none)",
            (list, tuple),
            "a list of host names the policy allows (narrows its list)",
            _STRINGS,
            frozenset({_RUN}),
            convert=tuple,
            keep_empty=True,
            flag=Flag(
                "--allow-host",
                "HOST",
                "repeat",
                dest="allow_host",
                help="reach only these hosts through the allowlist proxy (repeatable; each must "
                "be on the trust level's network.allow; default: all of them)",
            ),
        ),
    ]
    figure_formats: Annotated[
        Sequence[str] | None,
        Option(
            "Python: the formats matplotlib figures come back in: png (the default), svg, "
            "pdf, jpeg",
            (list, tuple),
            "a list of png, svg, pdf, jpeg (Python's displays)",
            {"type": "array", "items": {"type": "string", "enum": list(FIGURE_FORMATS)}},
            frozenset({_RUN, _CALL, _TOOL}),
            convert=check_figure_formats,
            flag=Flag("--figure-format", kind="repeat", dest="figure_formats"),
        ),
    ]
    final_value: Annotated[
        str | None,
        Option(
            "Python: what becomes of the value of the code's last line when it is an "
            "expression: default (a session prints it; a run shows a rich value as a display), "
            "or result (given back as a display marked as the result, `result_display`, and "
            "not printed, as Jupyter's execute_result)",
            (str,),
            "default or result (Python)",
            {"type": "string", "enum": list(FINAL_VALUES), "default": "default"},
            frozenset({_RUN, _CALL}),
            convert=check_final_value,
        ),
    ]
    build_flags: Annotated[
        Sequence[str] | None,
        Option(
            "C and C++: compiler flags from the trust level's allowlist (the policy's "
            "trust.<level>.build_flags), after hazmat's own",
            (list, tuple),
            "a list of compiler flags the trust level allows (C, C++)",
            _STRINGS,
            frozenset({_RUN}),
            convert=tuple,
            flag=Flag(
                "--build-flags",
                "FLAGS",
                "words",
                help="C and C++: compiler flags from the trust level's allowlist, one string "
                "(--build-flags='-O2 -std=c++17'; policy.md, Compiler flags)",
            ),
        ),
    ]


@functools.cache
def options() -> Mapping[str, Option]:
    """Every option by name, in the table's order."""
    hints = typing.get_type_hints(RunOptions, include_extras=True)
    return MappingProxyType({name: _option_of(name, hint) for name, hint in hints.items()})


def _option_of(name: str, hint: object) -> Option:
    for meta in getattr(hint, "__metadata__", ()):
        if isinstance(meta, Option):
            return meta
    raise TypeError(f"RunOptions[{name!r}] has no Option")  # a table without one: a bug here


def option(name: str) -> Option:
    return options()[name]


@dataclass(frozen=True)
class Ceiling:
    """An option bounded by a trust level's limit: the option, the request's field holding
    it, the `Limits` field it may not pass, and the unit its error gives."""

    option: str
    field: str
    limit: str
    unit: str


@functools.cache
def ceilings() -> tuple[Ceiling, ...]:
    """Every option with a `ceiling` (`request_limits` checks them), read once."""
    return tuple(
        Ceiling(name, opt.field or name, opt.ceiling, opt.unit)
        for name, opt in options().items()
        if opt.ceiling
    )


def _names(use: Use) -> frozenset[str]:
    return frozenset(name for name, opt in options().items() if use in opt.uses)


# names callers reach for that difflib would not match
_SYNONYMS = {
    "environment": "'env'",
    "environ": "'env'",
    "argv": "'args'",
    "arguments": "'args'",
    "time_limit": "'timeout'",
    "mem": "'memory_mb'",
    "memory_limit": "'memory_mb'",
    "flags": "'build_flags'",
    "compiler_flags": "'build_flags'",
    "cflags": "'build_flags'",
    "input": "'stdin'",
    "lang": "the language argument (run(code, 'javascript'))",
    "language": "the language argument (run(code, 'javascript'))",
}


@functools.cache
def _former_names() -> Mapping[str, str]:
    """Each renamed option's former name -> its name."""
    return MappingProxyType(
        {opt.formerly: name for name, opt in options().items() if opt.formerly}
    )


def current_names(given: Mapping[str, Any]) -> dict[str, Any]:
    """`given` with each option's former name replaced by its name, with a DeprecationWarning
    for each (shown at the first frame outside hazmat: the caller's); both names at once is an
    `InputError`."""
    formerly = _former_names()
    current: dict[str, Any] = {}
    for name, value in given.items():
        new = formerly.get(name)
        if new is None:
            current[name] = value
            continue
        if new in given:
            raise InputError(_both(new))
        import warnings  # here: only a renamed option's caller pays for it

        warnings.warn(
            f"option {name!r} is renamed {new!r}; the old name goes in hazmat 1.0",
            DeprecationWarning,
            stacklevel=_callers_level(),
        )
        current[new] = value
    return current


def _callers_level() -> int:
    """`warnings.warn`'s stacklevel for the first frame outside hazmat's modules."""
    import sys
    import types

    frame: types.FrameType | None = sys._getframe(2)  # current_names's caller
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("hazmat."):
        frame, level = frame.f_back, level + 1
    return level


def _both(name: str) -> str:
    return f"option {quoted(name)} is given twice: under its name and its former name " + quoted(
        option(name).formerly or ""
    )


def check_options(given: Mapping[str, Any]) -> None:
    """Every option is one `Sandbox.run` knows, of a type it takes (None means the default),
    within its bounds."""
    table = options()
    for name, value in given.items():
        opt = table.get(name)
        if opt is None:
            raise InputError(_unknown(name, table))
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, opt.types):
            raise InputError(
                f"option {quoted(name)} must be {opt.wanted}, not {type(value).__name__}"
            )
        if isinstance(value, str):
            check_text(value, f"option {quoted(name)}")
        if opt.positive and isinstance(value, int | float):
            _check_positive(name, value, opt.positive)


def _unknown(name: str, table: Mapping[str, Option]) -> str:
    import difflib  # here: an error's hint, not on the CLI's path (~10 ms to import)

    close = difflib.get_close_matches(name, list(table), n=1, cutoff=0.5)
    guess = _SYNONYMS.get(name) or (repr(close[0]) if close else "")
    hint = f"; did you mean {guess}?" if guess else ""
    return f"unknown option {quoted(name)}{hint} (valid options: {', '.join(sorted(table))})"


def _check_positive(name: str, value: float, noun: str) -> None:
    if isinstance(value, int) and not -(2**63) < value < 2**63:  # isfinite(10**400) overflows
        bits = value.bit_length()  # not its digits: str() of 4,301 is an error
        raise InputError(f"option {quoted(name)} is out of range (a {bits}-bit number)")
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"option {quoted(name)} must be a positive {noun}, not {value!r}")


def to_request_fields(given: Mapping[str, Any]) -> dict[str, Any]:
    """Checked options (`check_options`) as `ExecutionRequest`'s keyword arguments: each set
    option under its field, converted (`Option.convert`); an unset one is left to the
    request's default."""
    table = options()
    fields: dict[str, Any] = {}
    for name, value in given.items():
        opt = table[name]
        if value is None:
            continue
        fields[opt.field or name] = opt.convert(value) if opt.convert else value
    return fields


def from_request(request: "ExecutionRequest") -> dict[str, Any]:
    """The options an `ExecutionRequest` was made with, as plain values (enums as their
    values, tuples as lists, mappings as dicts), each left out where it is the field's default:
    what `options_to_wire` sends."""
    defaults = _defaults()
    given = {name: getattr(request, opt.field or name) for name, opt in options().items()}
    return {
        name: plain(value)
        for name, value in given.items()
        if value != defaults[options()[name].field or name]
    }


@functools.cache
def _defaults() -> Mapping[str, object]:
    """The request's fields' defaults (their factories called once). models.py is read here,
    on the wire's path, not by the CLI's parser, which reads this table too."""
    from hazmat.models import ExecutionRequest

    return MappingProxyType({f.name: _default(f) for f in dataclasses.fields(ExecutionRequest)})


def _default(field: dataclasses.Field[Any]) -> object:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def plain(value: Any) -> Any:
    """A value as JSON has it: enums as their values, tuples as lists, mappings as dicts."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def body_fields(use: Use) -> dict[str, str]:
    """The API body's fields of the options a caller sets in `use` -> the option each sets
    (`stdin` and `stdin_base64` both set `stdin`; `session`, `script`'s former name, sets
    `script`)."""
    fields: dict[str, str] = {}
    for name in sorted(_names(use), key=list(options()).index):
        fields[name] = name
        if options()[name].binary:
            fields[f"{name}_base64"] = name
        if options()[name].formerly:
            fields[str(options()[name].formerly)] = name
    return fields


def _bounds(opt: Option) -> dict[str, float]:
    """A limit's lowest value in any policy (policy/), for an option with a ceiling."""
    if opt.ceiling is None:
        return {}
    low = limit_bounds(opt.ceiling)[0]
    return {"minimum": int(low) if low == int(low) else low}


def json_properties(use: Use) -> dict[str, Any]:
    """The JSON Schema of each body field of `use` (`body_fields`), described."""
    properties: dict[str, Any] = {}
    for field, name in body_fields(use).items():
        opt = options()[name]
        if field == name:
            properties[field] = {**opt.schema, **_bounds(opt), "description": opt.help}
        elif field == opt.formerly:
            properties[field] = {
                **opt.schema,
                "deprecated": True,
                "description": f"the former name of {name} (until hazmat 1.0)",
            }
        else:
            properties[field] = {
                **opt.schema,
                "description": f"as {name}, with bytes base64-encoded (content that is not "
                "UTF-8 text)",
            }
    return properties


# what a session's call may set; the rest of a session's options are fixed when it opens
CALL_OPTIONS = _names(Use.CALL)
OPEN_OPTIONS = _names(Use.OPEN)
