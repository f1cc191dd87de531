"""hazmat as the tools of a model's function calling: the schemas OpenAI's and Anthropic's APIs
take, and a handler that runs each tool call in one hazmat session (docs/api.md, "Tools for
function calling"; examples/agents/).

    with hazmat.Sandbox() as sandbox, CodeTools(sandbox, image="python-data") as tools:
        response = client.chat.completions.create(..., tools=tools.openai())
        for call in response.choices[0].message.tool_calls or ():
            output = tools.handle(call.function.name, call.function.arguments)
            messages.append(output.openai_message(call.id))

The session opens at the first call and keeps its variables and files between calls, as a
notebook does; if it ends (its idle time, or a call that would not stop), the next call opens a
new one and says so. A tool call never raises: a bad name or argument, a refused or failed run
comes back as a result the model reads (`is_error`), written for it to act on.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hazmat._closing import Closable
from hazmat._exceptions import HazmatError, InputError, SessionClosed
from hazmat.json_input import loads
from hazmat.models import ExecutionResult
from hazmat.policy import parse_trust
from hazmat.sandbox import Sandbox
from hazmat.sessions import Session

__all__ = ["CodeTools", "ToolOutput", "summary"]

_NAME = {"type": "string", "description": "a file name, relative to the working directory"}
# (name, description, JSON schema of the arguments): what the model reads
TOOLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "run_code",
        "Run code in a sandbox with no network. Variables (Python) and files persist between "
        "calls, as in a notebook; the value of a final expression is printed, and charts and "
        "tables come back as images and text. Returns stdout, stderr, the outcome and, on "
        "failure, the error and the exception.",
        {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "the code to run"},
                "timeout": {
                    "type": "number",
                    "description": "seconds it may run (the policy's limit at most); past it "
                    "the call is interrupted and the session kept",
                },
            },
            "required": ["code"],
            "additionalProperties": False,
        },
    ),
    (
        "write_file",
        "Write a text file into the sandbox's working directory, for later code to read.",
        {
            "type": "object",
            "properties": {
                "name": _NAME,
                "content": {"type": "string", "description": "the file's text"},
            },
            "required": ["name", "content"],
            "additionalProperties": False,
        },
    ),
    (
        "read_file",
        "Read a file from the sandbox's working directory (text; base64 if it is not UTF-8).",
        {
            "type": "object",
            "properties": {"name": _NAME},
            "required": ["name"],
            "additionalProperties": False,
        },
    ),
)

# offered only where the policy lets the tools' session install (policy/packages.py)
INSTALL = (
    "install_packages",
    "Install packages, with their dependencies, from the service's package index into the "
    "sandbox, for later code to import: use it when an import fails because a module is not "
    "found. Returns each package and version installed.",
    {
        "type": "object",
        "properties": {
            "packages": {
                "type": "array",
                "items": {"type": "string"},
                "description": "requirements: Python's like 'seaborn==0.13.2', JavaScript's "
                "like 'lodash@4.17.21'",
            }
        },
        "required": ["packages"],
        "additionalProperties": False,
    },
)
_TYPES = {"string": str, "array": list}

_IMAGES = ("image/png", "image/jpeg", "image/gif")


def summary(result: ExecutionResult) -> dict[str, Any]:
    """What a run's result says to a model: the output and why it ended, not the engine's
    details (also MCP's tool result: server/mcp_tools.py)."""
    full = result.to_dict()
    names = ("outcome", "exit_code", "stdout", "stderr", "error", "exception", "notes")
    said: dict[str, Any] = {name: full[name] for name in names}
    said["duration_ms"] = full["duration_ms"]
    said["files"] = full["files"]
    said["risk"] = (full.get("assessment") or {}).get("level")
    said["displays"] = [{"types": list(d), "text": d.get("text/plain")} for d in result.displays]
    return said


@dataclass(frozen=True)
class ToolOutput:
    """One tool call's answer: `text` (JSON, for the model), `images` shown by the code
    (`(mime type, base64)`), and whether the call failed (`is_error`)."""

    text: str
    images: tuple[tuple[str, str], ...] = ()
    is_error: bool = False

    def openai_message(self, call_id: str) -> dict[str, Any]:
        """The `tool` message for OpenAI's chat completions (its content is text only: the
        images' types are in the text)."""
        return {"role": "tool", "tool_call_id": call_id, "content": self.text}

    def anthropic_block(self, tool_use_id: str) -> dict[str, Any]:
        """The `tool_result` content block for Anthropic's messages, images included."""
        content: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        content += [
            {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
            for mime, data in self.images
        ]
        block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
        return block | ({"is_error": True} if self.is_error else {})


class CodeTools(Closable):
    """The tools over one session of `sandbox` (opened at the first call, in `language` and
    `image`, at `trust`); `close()` ends it."""

    def __init__(
        self,
        sandbox: Sandbox,
        language: str = "python",
        *,
        image: str | None = None,
        trust: str | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.language = language
        self.image = image
        self.trust = trust
        self._session: Session | None = None

    @property
    def tools(self) -> tuple[tuple[str, str, dict[str, Any]], ...]:
        """The tools offered: `install_packages` too where the policy lets the session's
        trust level install (`packages` in the policy)."""
        policy = self.sandbox.policy
        level = parse_trust(self.trust if self.trust is not None else policy.default_trust)
        installs = policy.packages.allows(level.value, self.language)
        return (*TOOLS, INSTALL) if installs else TOOLS

    def openai(self) -> list[dict[str, Any]]:
        """The `tools` for OpenAI's chat completions (function calling)."""
        return [
            {
                "type": "function",
                "function": {"name": name, "description": text, "parameters": schema},
            }
            for name, text, schema in self.tools
        ]

    def anthropic(self) -> list[dict[str, Any]]:
        """The `tools` for Anthropic's messages API."""
        return [
            {"name": name, "description": text, "input_schema": schema}
            for name, text, schema in self.tools
        ]

    def handle(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolOutput:
        """Run one tool call: `arguments` as the model gave them (OpenAI's JSON text, or
        Anthropic's object)."""
        try:  # a model's JSON, decoded within bounds (json_input.py): never a RecursionError
            given = (
                loads(arguments, "the JSON")
                if isinstance(arguments, str)
                else dict(arguments or {})
            )
        except (InputError, TypeError, ValueError) as exc:
            return _refused(f"the arguments are not a JSON object ({exc}); send them as one")
        if not isinstance(given, dict):
            return _refused("the arguments must be a JSON object")
        known = {tool[0]: tool[2] for tool in self.tools}
        if name not in known:
            return _refused(f"there is no tool {name!r}; the tools are: {', '.join(known)}")
        schema = known[name]
        properties = schema["properties"]
        missing = [
            key
            for key in schema["required"]
            if not isinstance(given.get(key), _TYPES[properties[key]["type"]])
        ]
        unknown = sorted(set(given) - set(properties))
        if missing or unknown:
            wrong = missing or unknown
            kind = properties[wrong[0]]["type"] if missing else ""
            what = (
                f"needs {'a list' if kind == 'array' else 'a string'}"
                if missing
                else "has no argument"
            )
            return _refused(f"{name} {what} {wrong[0]!r}; its arguments: {', '.join(properties)}")
        try:
            return self._call(name, given)
        except HazmatError as exc:
            return _refused(str(exc))

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


    def _call(self, name: str, given: dict[str, Any]) -> ToolOutput:
        """The call in the session; once more in a new one if the session had ended (a call
        to an ended session runs nothing)."""
        renewed = self._renew()
        try:
            return self._in(self._open(), name, given, renewed)
        except SessionClosed:
            renewed = self._renew(force=True)
            return self._in(self._open(), name, given, renewed)

    def _in(
        self, session: Session, name: str, given: dict[str, Any], renewed: str | None
    ) -> ToolOutput:
        note = {}
        if renewed:
            note["note"] = (
                f"the last session ended ({renewed}); this is a new one, without the variables "
                "and files of earlier calls"
            )
        if name == "write_file":
            session.upload({given["name"]: given["content"]})
            return ToolOutput(json.dumps({"written": given["name"], **note}))
        if name == "install_packages":
            done = session.install(given["packages"])
            installed = [f"{p.name} {p.version}" for p in done.packages]
            return ToolOutput(json.dumps({"installed": installed, "note": done.note} | note))
        if name == "read_file":
            data = session.download([given["name"]])[given["name"]]
            try:
                body = {"name": given["name"], "text": data.decode("utf-8")}
            except UnicodeDecodeError:
                body = {"name": given["name"], "base64": base64.b64encode(data).decode("ascii")}
            return ToolOutput(json.dumps(body | note))
        timeout = given.get("timeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            result = session.run(given["code"], timeout=float(timeout))
        else:
            result = session.run(given["code"])
        images = tuple(
            (mime, base64.b64encode(data).decode("ascii"))
            for shown in result.displays
            for mime, data in shown.items()
            if mime in _IMAGES and isinstance(data, bytes)
        )
        # a program that failed is a result like any other: the model reads its outcome
        return ToolOutput(json.dumps(summary(result) | note), images)

    def _renew(self, force: bool = False) -> str | None:
        """Drop a session that has ended (or, `force`, the one just found ended): why it
        ended, for the note of the call that opens the next."""
        session = self._session
        if session is None or (session.ended is None and not force):
            return None
        self._session = None
        return session.ended or "it ended"

    def _open(self) -> Session:
        """The session, opened now if there is none."""
        if self._session is None:
            self._session = self.sandbox.session(self.language, image=self.image, trust=self.trust)
        return self._session


def _refused(message: str) -> ToolOutput:
    return ToolOutput(json.dumps({"error": message}), is_error=True)
