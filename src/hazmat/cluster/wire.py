"""A run's request and result as JSON, for the queue between the service and a worker.

Bytes (stdin, files, the output as written) travel as base64. What a worker reads is checked
again by its own `Sandbox.execute`, as any request built by hand is: Redis is inside the
deployment's trust boundary, but a malformed message still gives an error, never a crash.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from hazmat._exceptions import InputError
from hazmat.models import ExecutionRequest
from hazmat.policy import Runtime, TrustLevel

__all__ = ["request_from_wire", "request_to_wire"]

_TEXT = ("code", "language", "caller", "session", "override_reason", "image", "module")


def request_to_wire(request: ExecutionRequest) -> dict[str, Any]:
    return {
        **{name: getattr(request, name) for name in _TEXT},
        "trust": request.trust.value,
        "stdin": _b64(request.stdin),
        "files": {name: _b64(data) for name, data in request.files.items()},
        "output_files": list(request.output_files),
        "timeout_s": request.timeout_s,
        "memory_mb": request.memory_mb,
        "runtime": request.runtime.value if request.runtime else None,
        "env": dict(request.env),
        "args": list(request.args),
        "network": list(request.network) if request.network is not None else None,
    }


def request_from_wire(data: Mapping[str, Any]) -> ExecutionRequest:
    try:
        files = {str(name): _unb64(value) for name, value in dict(data["files"]).items()}
        network = data.get("network")
        text: dict[str, Any] = {name: data.get(name) for name in _TEXT}
        return ExecutionRequest(
            **text,
            trust=TrustLevel(data["trust"]),
            stdin=_unb64(data["stdin"]),
            files=files,
            output_files=tuple(data["output_files"]),
            timeout_s=data.get("timeout_s"),
            memory_mb=data.get("memory_mb"),
            runtime=Runtime(data["runtime"]) if data.get("runtime") else None,
            env=dict(data["env"]),
            args=tuple(data["args"]),
            network=tuple(network) if network is not None else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed run message: {type(exc).__name__}: {exc}") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise TypeError("expected base64 text")
    return base64.b64decode(text, validate=True)
