"""The assessment's child process that keeps the in-process analysers warm.

Hostile input can make a parser or a rule run long, recurse deeply or allocate a lot. In this
process that costs nothing the host cares about: its address space is capped (RLIMIT_AS), and
the parent kills it at the deadline and starts another. The parent sends one request at a time;
the child answers with one message per analyser as each finishes (so a timeout still keeps the
results that came in) and a final `done`.

Frames on stdin and stdout: a 4-byte big-endian length, then UTF-8 JSON.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import struct
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

from hazmat.languages import LANGUAGES, get_language

__all__ = ["analyzers_for", "main", "read_frame", "write_frame"]

_HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024


def write_frame(stream: BinaryIO, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> dict[str, Any] | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes is larger than {MAX_FRAME}")
    data = stream.read(size)
    if len(data) < size:
        return None
    message: dict[str, Any] = json.loads(data)
    return message


def analyzers_for(language: str) -> list[str]:
    """The in-process analysers that read `language`, in the order they run (its module in
    languages/ names them)."""
    return list(get_language(language).analysers)


def _load(scratch: Path | None = None) -> dict[str, Any]:
    from hazmat.assess.bandit import BanditAnalyzer
    from hazmat.assess.bash import BashAnalyzer
    from hazmat.assess.c_family import CFamilyAnalyzer
    from hazmat.assess.go import GoAnalyzer
    from hazmat.assess.java import JavaAnalyzer
    from hazmat.assess.javascript import JavaScriptAnalyzer
    from hazmat.assess.python_ast import PythonAnalyzer
    from hazmat.assess.ruby import RubyAnalyzer
    from hazmat.assess.rust import RustAnalyzer
    from hazmat.assess.syntax_tree import language

    for grammar in ("javascript", "typescript", "go", "bash", "c", "cpp", "java", "rust", "ruby"):
        language(grammar)
    built_in = {
        "python-ast": PythonAnalyzer(),
        "bandit": BanditAnalyzer(scratch),
        "javascript": JavaScriptAnalyzer(),
        "go": GoAnalyzer(),
        "bash": BashAnalyzer(),
        "c-family": CFamilyAnalyzer(),
        "java": JavaAnalyzer(),
        "rust": RustAnalyzer(),
        "ruby": RubyAnalyzer(),
    }
    return {**built_in, **_own()}


def _own() -> dict[str, Any]:
    """The analysers languages bring themselves (Language.own_analyser), by their names."""
    found = {}
    for lang in LANGUAGES.values():
        if lang.own_analyser:
            module, _, cls = lang.own_analyser.partition(":")
            analyser = getattr(importlib.import_module(module), cls)()
            found[analyser.name] = analyser
    return found


def _answer(out: BinaryIO, analyzers: dict[str, Any], request: dict[str, Any]) -> bool:
    """Run every analyser for the request; False when this process should be replaced."""
    from hazmat.assess.base import SYNTAX_ERROR, AnalyzerSkipped

    code, language = request["code"], request["language"]
    syntax_error = False
    healthy = True
    for name in analyzers_for(language):
        started = time.perf_counter()
        message: dict[str, Any] = {"analyzer": name, "findings": [], "error": None}
        if name == "bandit" and syntax_error:
            message["skipped"] = "not run: the code has a syntax error"
        else:
            try:
                findings = analyzers[name].analyze(code, language)
                message["findings"] = [f.to_dict() for f in findings]
                syntax_error = syntax_error or any(f.rule == SYNTAX_ERROR for f in findings)
            except AnalyzerSkipped as exc:
                message["error"] = str(exc)
            except RecursionError:
                message["error"] = "input nested too deeply to analyse (RecursionError)"
            except MemoryError:
                message["error"] = "analysing the input ran out of its memory budget"
                healthy = False
            except Exception as exc:  # an analyser bug must not pass as a clean result
                message["error"] = f"{type(exc).__name__}: {exc}"
        message["ms"] = (time.perf_counter() - started) * 1000
        write_frame(out, message)
    write_frame(out, {"done": True, "recycle": not healthy})
    return healthy


def main() -> int:
    memory_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    scratch = Path(sys.argv[2]) if len(sys.argv) > 2 else None  # the parent's, removed by it
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.setrecursionlimit(4000)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing an analyser prints may corrupt the frames
    analyzers = _load(scratch)
    write_frame(out, {"ready": True, "pid": os.getpid()})
    while True:
        request = read_frame(inp)
        if request is None:
            return 0
        if not _answer(out, analyzers, request):
            return 0


if __name__ == "__main__":
    sys.exit(main())
