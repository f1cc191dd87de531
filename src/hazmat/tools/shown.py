"""What a model is shown of a run: `summary`, the result in a model's words, with each output
stream sized for a model's context (the tools' results here and MCP's: server/mcp_tools.py).

A stream longer than the level's `shown_output_bytes` (policy/__init__.py) is shown as its head
and its tail, at line ends where one is near, around a marker that says how much was cut and
where the whole stream is: in a session, a file in its working directory (`OUTPUT_FOLDER`)
that the model reads in parts (the tools' `read_file`, MCP's `download_files`, each with
`offset` and `length`); outside one, nowhere the model can reach, and the marker says so. The
whole stream, up to the level's output cap, stays in the result for the program that called.
`ToolOutput` is a tool call's answer in the shapes the model vendors' APIs take.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hazmat._exceptions import HazmatError
from hazmat.models import ExecutionResult

__all__ = ["OUTPUT_FOLDER", "Keep", "ToolOutput", "head_and_tail", "keeper", "summary"]

# where a session keeps a call's whole output stream when its model was shown a part
OUTPUT_FOLDER = ".hazmat/output"

# keeps a stream's whole bytes where the model can read them: the file's name (a session's
# working directory), or None where nothing can be kept; `(file name, bytes)`
Keep = Callable[[str, bytes], str | None]


class Uploads(Protocol):
    """A session as `keeper` uses it (sessions.Session, and the service's OpenSession)."""

    def upload(self, files: Mapping[str, str | bytes]) -> None: ...


def keeper(session: Uploads) -> Keep:
    """Keeps a stream whole as a file of `session`: its name, or None when it could not be
    written (a session that ended with the call)."""

    def keep(name: str, data: bytes) -> str | None:
        try:
            session.upload({name: data})
        except HazmatError:
            return None
        return name

    return keep


_NEAR = 4  # a line end within the last (first) 1/_NEAR of the head (tail) is where it is cut


def summary(
    result: ExecutionResult, keep: Keep | None = None, reader: str = "read_file"
) -> dict[str, Any]:
    """What a run's result says to a model: the output (sized: the module's docstring) and why
    it ended, not the engine's details. `keep` puts a cut stream whole where the model can
    read it, which the marker names along with `reader`, the tool that reads it in parts."""
    full = result.to_dict()
    said: dict[str, Any] = {"outcome": full["outcome"], "exit_code": full["exit_code"]}
    for stream in ("stdout", "stderr"):
        data = getattr(result, f"{stream}_bytes") or getattr(result, stream).encode()
        said[stream] = _sized(result, stream, data, keep, reader)
    for name in ("error", "exception", "notes", "duration_ms", "files"):
        said[name] = full[name]
    said["risk"] = (full.get("assessment") or {}).get("level")
    said["displays"] = [{"types": list(d), "text": d.get("text/plain")} for d in result.displays]
    return said


def head_and_tail(data: bytes, limit: int) -> tuple[bytes, bytes]:
    """The first and last parts of `data`, together at most `limit` bytes, each cut at a line
    end where one is near (the head after it, the tail after the one it begins past)."""
    half = max(1, limit // 2)
    head, tail = data[:half], data[len(data) - (limit - half) :]
    end = head.rfind(b"\n")
    if end >= len(head) - len(head) // _NEAR:
        head = head[: end + 1]
    start = tail.find(b"\n")
    if 0 <= start < len(tail) // _NEAR:
        tail = tail[start + 1 :]
    return head, tail


def _sized(
    result: ExecutionResult, stream: str, data: bytes, keep: Keep | None, reader: str
) -> str:
    limit = result.limits.shown_output_bytes
    text: str = getattr(result, stream)
    if len(data) <= limit:
        return text
    head, tail = head_and_tail(data, limit)
    cut = data[len(head) : len(data) - len(tail)]
    name = result.run_id or hashlib.sha256(data).hexdigest()[:16]
    kept = keep(f"{OUTPUT_FOLDER}/{name}.{stream}", data) if keep else None
    where = (
        f"the whole {stream} ({len(data):,} bytes) is the file {kept}: read it in parts with "
        f"{reader} (offset, length)"
        if kept
        else f"the whole {stream} went to the program that ran the code; run it in a session "
        "to have it kept in a file"
    )
    lines = cut.count(b"\n")
    marker = (
        f"\n[... {len(cut):,} bytes ({lines:,} lines) of {stream} cut here, "
        f"after byte {len(head):,}; {where} ...]\n"
    )
    return _text(head) + marker + _text(tail)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ToolOutput:
    """One tool call's answer: `text` (JSON, for the model), `images` shown by the code
    (`(mime type, base64)`), and whether the call failed (`is_error`)."""

    text: str
    images: tuple[tuple[str, str], ...] = ()
    is_error: bool = False

    def openai_message(self, call_id: str) -> dict[str, Any]:
        """The `tool` message for OpenAI's chat completions. Its content is text only (the
        images' types are in the text): send `openai_images_message()` after the call's tool
        messages for the model to see them."""
        return {"role": "tool", "tool_call_id": call_id, "content": self.text}

    def openai_images_message(self) -> dict[str, Any] | None:
        """The images as a `user` message of OpenAI's chat completions (data URLs), to send
        after the turn's `tool` messages, which cannot hold images; None without images."""
        if not self.images:
            return None
        parts: list[dict[str, Any]] = [{"type": "text", "text": "The images the code showed:"}]
        parts += [
            {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}
            for mime, data in self.images
        ]
        return {"role": "user", "content": parts}

    def responses_item(self, call_id: str) -> dict[str, Any]:
        """The `function_call_output` input item for OpenAI's Responses API: the text, and
        the images with it (as data URLs) when the code showed any."""
        output: str | list[dict[str, Any]] = self.text
        if self.images:
            output = [{"type": "input_text", "text": self.text}] + [
                {"type": "input_image", "image_url": f"data:{mime};base64,{data}"}
                for mime, data in self.images
            ]
        return {"type": "function_call_output", "call_id": call_id, "output": output}

    def anthropic_block(self, tool_use_id: str) -> dict[str, Any]:
        """The `tool_result` content block for Anthropic's messages, images included."""
        content: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        content += [
            {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
            for mime, data in self.images
        ]
        block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
        return block | ({"is_error": True} if self.is_error else {})
