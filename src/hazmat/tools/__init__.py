"""hazmat as the tools of a model's function calling: the schemas OpenAI's (Chat Completions
and Responses, in strict mode) and Anthropic's APIs take, and a handler that runs each tool
call in one hazmat session (docs/api.md, "Tools for function calling"; examples/agents/).

    with hazmat.Sandbox() as sandbox, CodeTools(sandbox, image="python-data") as tools:
        response = client.chat.completions.create(..., tools=tools.openai())
        for call in response.choices[0].message.tool_calls or ():
            output = tools.handle(call.function.name, call.function.arguments)
            messages.append(output.openai_message(call.id))

The tools speak the session's language: `run_code`'s description says, from the language's
module (languages/), what a session keeps between calls (Python's variables, Bash's shell, R's
workspace; in the other languages only files), how a value is shown and what a program looks
like. The session opens at the first call; if it ends (its idle time, or a call that would not
stop), the next call opens a new one and says so. A tool call never raises: a bad name or
argument, a refused or failed run comes back as a result the model reads (`is_error`), written
for it to act on. Images the code shows go with the result where the API takes them
(Anthropic's tool results, the Responses API's function outputs); Chat Completions' tool
messages hold text only, so `ToolOutput.openai_images_message()` carries them in a message of
their own.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from hazmat._closing import Closable
from hazmat._exceptions import HazmatError, InputError, SessionClosed
from hazmat.json_input import loads
from hazmat.languages import IMAGE_VERSION, Language, get_language
from hazmat.policy import parse_trust
from hazmat.run.image_choice import allowed_images, resolve_image
from hazmat.sandbox import Sandbox
from hazmat.sessions import Session
from hazmat.tools.shown import ToolOutput, keeper, summary

__all__ = ["CodeTools", "Tool", "ToolOutput", "run_code_tool", "strict", "summary"]

# a tool: its name, its description and the JSON Schema of its arguments (what the model reads)
Tool = tuple[str, str, dict[str, Any]]

_NAME = {"type": "string", "description": "a file name, relative to the working directory"}
_FILE_TOOLS: tuple[Tool, ...] = (
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
        "Read a file from the sandbox's working directory (text; base64 if it is not UTF-8), "
        "or the part of it that starts at byte `offset`: a long file comes in parts, each "
        "answer saying its size and the offset where the next part starts.",
        {
            "type": "object",
            "properties": {
                "name": _NAME,
                "offset": {"type": "integer", "description": "the first byte to read (0)"},
                "length": {
                    "type": "integer",
                    "description": "the most bytes to read (at most the tools' part size)",
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    ),
)

# offered only where the policy lets the tools' session install (policy/packages.py)
INSTALL: Tool = (
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


def run_code_tool(lang: Language, images: Sequence[str] = ()) -> Tool:
    """`run_code` as a model reads it for `lang` (its words: languages/), with an `image`
    parameter when the caller may choose among `images` (short names, the default first)."""
    kept = (
        f"the session keeps its files and {lang.keeps}"
        if lang.keeps
        else "the session keeps its files only: each call runs as a new program, so give it "
        "everything it needs (or write it to a file first)"
    )
    text = (
        f"Run {lang.title} code in a sandbox with no network. Between calls {kept}. Print "
        "what you need to see"
        + (f"; {lang.shows}" if lang.shows else "")
        + f". A program that prints 1:\n{lang.hello.strip()}\nReturns stdout, stderr, the "
        "outcome and, on failure, the error and the exception it ended with."
    )
    properties: dict[str, Any] = {
        "code": {"type": "string", "description": f"the {lang.title} code to run"},
        "timeout": {
            "type": "number",
            "description": "seconds it may run (the policy's limit at most); past it the call "
            "is interrupted and the session kept",
        },
    }
    if len(images) > 1:
        properties["image"] = {
            "type": "string",
            "enum": list(images),
            "description": f"the image to run in ({images[0]} by default); each image has a "
            "session of its own, so the variables and files of calls in one are not in "
            "another. A module that fails to import is in another image when the error says so",
        }
    schema = {
        "type": "object",
        "properties": properties,
        "required": ["code"],
        "additionalProperties": False,
    }
    return ("run_code", text, schema)


def strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as OpenAI's strict mode takes it: every property required, those that were
    optional nullable (null means left out), no other property allowed."""
    optional = set(schema["properties"]) - set(schema["required"])
    properties = {
        name: _nullable(prop) if name in optional else dict(prop)
        for name, prop in schema["properties"].items()
    }
    return {**schema, "properties": properties, "required": list(properties)}


def _nullable(prop: Mapping[str, Any]) -> dict[str, Any]:
    nullable = {**prop, "type": [prop["type"], "null"]}
    if "enum" in prop:
        nullable["enum"] = [*prop["enum"], None]
    return nullable


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "array": list,
    "number": (int, float),
    "integer": int,
}

_IMAGES = ("image/png", "image/jpeg", "image/gif")


class CodeTools(Closable):
    """The tools over a session of `sandbox` in `language` (opened at the first call, in
    `image`, at `trust`); `close()` ends it. Where the trust level allows the language more
    than one image, `run_code` takes `image`, and each image has a session of its own (the
    last one named is where the file tools act). An unknown language raises
    `UnknownLanguage` here."""

    def __init__(
        self,
        sandbox: Sandbox,
        language: str = "python",
        *,
        image: str | None = None,
        trust: str | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.lang = get_language(language)
        self.language = self.lang.name
        self.trust = trust
        policy = sandbox.policy
        self.level = parse_trust(trust if trust is not None else policy.default_trust)
        self.image = _short(resolve_image(policy, self.level, self.lang, image))
        self._current = self.image  # the image the last run_code named: the file tools' too
        self._sessions: dict[str, Session] = {}

    @property
    def images(self) -> tuple[str, ...]:
        """The images `run_code` may name, the tools' own first."""
        allowed = allowed_images(self.sandbox.policy, self.level, self.lang)
        return tuple(dict.fromkeys([self.image, *map(_short, allowed)]))

    @functools.cached_property
    def tools(self) -> tuple[Tool, ...]:
        """The tools offered: `run_code` in the language's words, the file tools, and
        `install_packages` where the policy lets the session's trust level install
        (`packages` in the policy). Made once: the policy and the level are the tools'."""
        installs = self.sandbox.policy.packages.allows(self.level.value, self.language)
        run = run_code_tool(self.lang, self.images)
        return (run, *_FILE_TOOLS, INSTALL) if installs else (run, *_FILE_TOOLS)

    def openai(self) -> list[dict[str, Any]]:
        """The `tools` for OpenAI's chat completions (function calling), in strict mode: the
        Responses API's, each inside a `function` of its own."""
        return [
            {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}
            for tool in self.responses()
        ]

    def responses(self) -> list[dict[str, Any]]:
        """The `tools` for OpenAI's Responses API (function tools, in strict mode)."""
        return [
            {
                "type": "function",
                "name": name,
                "description": text,
                "parameters": strict(schema),
                "strict": True,
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
        Anthropic's object; a null is an optional argument left out, as strict mode sends
        it)."""
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
        required = schema["required"]
        given = {k: v for k, v in given.items() if v is not None or k in required}
        wrong = _wrong_argument(name, schema, given)
        if wrong:
            return _refused(wrong)
        try:
            return self._call(name, given)
        except HazmatError as exc:
            return _refused(str(exc))

    def close(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            session.close()

    def _call(self, name: str, given: dict[str, Any]) -> ToolOutput:
        """The call in its image's session; once more in a new one if the session had ended
        (a call to an ended session runs nothing)."""
        if name == "run_code" and given.get("image"):
            self._current = given["image"]
        renewed = self._renew(self._current)
        try:
            return self._in(self._open(), name, given, renewed)
        except SessionClosed:
            renewed = self._renew(self._current, force=True)
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
            return ToolOutput(json.dumps(self._part(given, data) | note))
        timeout = given.get("timeout")
        if timeout is not None:
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
        return ToolOutput(json.dumps(summary(result, keeper(session)) | note), images)

    def _part(self, given: Mapping[str, Any], data: bytes) -> dict[str, Any]:
        """A file as `read_file` answers: the part asked for (`offset`, `length`), at most
        the level's `shown_output_bytes`, with where the next part starts."""
        most = self.sandbox.policy.settings(self.level).limits.shown_output_bytes
        offset = given.get("offset", 0)
        length = min(given.get("length", most), most)
        if offset < 0 or length < 1:
            raise InputError("read_file's offset is 0 or more and its length 1 or more")
        part = data[offset : offset + length]
        body: dict[str, Any] = {"name": given["name"], "size": len(data)}
        if len(part) < len(data):  # a part: where it starts, and where the next one does
            end = offset + len(part)
            body |= {"offset": offset, "next_offset": end if end < len(data) else None}
        try:
            body["text"] = part.decode("utf-8")
        except UnicodeDecodeError:
            body["base64"] = base64.b64encode(part).decode("ascii")
        return body

    def _renew(self, image: str, force: bool = False) -> str | None:
        """Drop `image`'s session if it has ended (or, `force`, the one just found ended):
        why it ended, for the note of the call that opens the next."""
        session = self._sessions.get(image)
        if session is None or (session.ended is None and not force):
            return None
        del self._sessions[image]
        return session.ended or "it ended"

    def _open(self) -> Session:
        """The current image's session, opened now if there is none."""
        session = self._sessions.get(self._current)
        if session is None:
            session = self.sandbox.session(self.language, image=self._current, trust=self.trust)
            self._sessions[self._current] = session
        return session


def _short(ref: str) -> str:
    """An image's name as a caller gives it: hazmat's own by its short name (`python-data`),
    any other by its reference."""
    name, _, tag = ref.removeprefix("hazmat/").partition(":")
    return name if ref.startswith("hazmat/") and tag == IMAGE_VERSION else ref


def _wrong_argument(name: str, schema: Mapping[str, Any], given: Mapping[str, Any]) -> str:
    """What is wrong with a tool's arguments (the first thing), or "" when nothing is."""
    properties = schema["properties"]
    unknown = sorted(set(given) - set(properties))
    if unknown:
        return f"{name} has no argument {unknown[0]!r}; its arguments: {', '.join(properties)}"
    for key, prop in properties.items():
        if key not in given and key not in schema["required"]:
            continue
        value = given.get(key)
        kind = prop["type"]
        if not isinstance(value, _TYPES[kind]) or isinstance(value, bool):
            noun = {"array": "a list", "number": "a number", "integer": "a whole number"}.get(
                kind, "a string"
            )
            return f"{name} needs {noun} {key!r}; its arguments: {', '.join(properties)}"
        if "enum" in prop and value not in prop["enum"]:
            return f"{name}'s {key} is one of {', '.join(map(str, prop['enum']))}, not {value!r}"
    return ""


def _refused(message: str) -> ToolOutput:
    return ToolOutput(json.dumps({"error": message}), is_error=True)
