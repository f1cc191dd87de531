"""The Assessor: runs the analysers for one program under a time and memory budget.

    assessor = Assessor()
    assessment = assessor.assess("import os; os.system('id')", "python")
    assessment.level      # RiskLevel.HIGH

The in-process analysers (hazmat's rules, Bandit, the tree-sitter rules) live in one warm
child process (see child.py). The child is killed at the deadline, and replaced after a
crash or a memory error; the analysers that did not answer make the assessment incomplete.
Semgrep, which takes seconds, runs only when asked (`semgrep=True`). The in-process answers
for the last `KNOWN_MAX` programs are remembered (they depend on the code and language alone),
so a grader's submission, run once per test case, is analysed once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import selectors
import shutil
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from typing import Any

from hazmat._closing import Closable
from hazmat._exceptions import InputTooLarge
from hazmat.assess.bandit import scratch_folder
from hazmat.assess.child import MAX_FRAME, analyzers_for
from hazmat.assess.risk import rate
from hazmat.assess.semgrep import Semgrep
from hazmat.languages import get_language
from hazmat.models import Assessment, Finding, Severity, check_code

__all__ = ["DEFAULT_MAX_BYTES", "Assessor"]

DEFAULT_MAX_BYTES = 1024 * 1024
_HEADER = struct.Struct(">I")
_STARTUP_S = 60.0  # loading the analysers, on a loaded machine
KNOWN_MAX = 256  # programs whose assessment is kept
_Known = tuple[tuple[Finding, ...], tuple[str, ...], tuple[str, ...], float]


class Assessor(Closable):
    """Static assessment with budgets. Thread-safe; one request reaches the child at a time.

    `timeout_s` bounds the in-process analysers together, `memory_mb` caps the child's
    address space, and `max_bytes` refuses larger code before any analyser sees it.
    """

    def __init__(
        self,
        *,
        timeout_s: float = 5.0,
        memory_mb: int = 1024,
        max_bytes: int = DEFAULT_MAX_BYTES,
        semgrep: Semgrep | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.max_bytes = max_bytes
        self.semgrep = semgrep or Semgrep()
        self._lock = threading.Lock()
        self._child: _Child | None = None
        # the in-process analysers' answers for recent programs (a grader runs one program
        # for each of its tests): they depend on the code and language alone
        self._known: OrderedDict[tuple[bytes, str], _Known] = OrderedDict()

    def start(self) -> None:
        """Start the child now, so the first assessment does not wait for it to load."""
        with self._lock:
            self._ensure_child()

    def assess(
        self,
        code: str | bytes,
        language: str,
        *,
        semgrep: bool = False,
        max_bytes: int | None = None,
    ) -> Assessment:
        """Assess one program. Bad input (not UTF-8, NUL bytes, too large, unknown language)
        raises `InputError` before any analyser sees it."""
        lang = get_language(language).name
        limit = self.max_bytes if max_bytes is None else max_bytes
        size = len(code) if isinstance(code, bytes) else len(code.encode("utf-8", "replace"))
        if size > limit:
            raise InputTooLarge(f"code is {size} bytes; the assessment limit is {limit}")
        text = check_code(code)
        key = (hashlib.sha256(text.encode("utf-8")).digest(), lang)
        with self._lock:
            known = self._known.get(key)
            if known is None:
                findings: list[Finding] = []
                problems: list[str] = []
                finished: list[str] = []
                elapsed = self._in_process(text, lang, findings, problems, finished)
                known = (tuple(findings), tuple(problems), tuple(finished), elapsed)
                if not problems:  # an incomplete assessment is tried again next time
                    self._known[key] = known
                    while len(self._known) > KNOWN_MAX:
                        self._known.popitem(last=False)
            else:
                self._known.move_to_end(key)
        findings, problems, finished = list(known[0]), list(known[1]), list(known[2])
        elapsed = known[3]
        if semgrep:
            report = self.semgrep.scan(text, lang)
            elapsed += report.duration_ms
            findings.extend(report.findings)
            if report.problem:
                problems.append(report.problem)
            else:
                finished.append("semgrep")
        return rate(
            findings, language=lang, duration_ms=elapsed, analyzers=finished, problems=problems
        )

    def _in_process(
        self,
        code: str,
        language: str,
        findings: list[Finding],
        problems: list[str],
        finished: list[str],
    ) -> float:
        """Run the child's analysers; the milliseconds they took (not counting a start). A
        language no analyser reads is a problem: its assessment is incomplete, never LOW."""
        expected = analyzers_for(language)
        if not expected:
            problems.append(f"no analyser reads {language} (its module in languages/ names none)")
            return 0.0
        started = time.perf_counter()
        try:
            child = self._ensure_child()
            child.wait_ready()
            started = time.perf_counter()
            deadline = time.monotonic() + self.timeout_s
            child.send({"code": code, "language": language})
            while True:
                message = child.receive(deadline)
                if message.get("done"):
                    if message.get("recycle"):
                        self._discard_child()
                    break
                name = str(message["analyzer"])
                if message.get("skipped"):
                    pass  # not needed: the code does not parse, which is a finding already
                elif message.get("error"):
                    problems.append(f"{name}: {message['error']}")
                else:
                    findings.extend(_finding(f) for f in message["findings"])
                    finished.append(name)
                expected.remove(name)
        except _ChildLost as exc:
            self._discard_child()
            problems.extend(f"{name}: {exc}" for name in expected)
        return (time.perf_counter() - started) * 1000

    def _ensure_child(self) -> _Child:
        if self._child is None or not self._child.alive():
            self._discard_child()
            self._child = _Child(self.memory_mb)
        return self._child

    def _discard_child(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child = None

    def close(self) -> None:
        with self._lock:
            self._discard_child()



class _ChildLost(Exception):
    """The child missed its deadline, died, or sent something unreadable."""


class _Child:
    def __init__(self, memory_mb: int) -> None:
        # Bandit's scratch folder, the child's while it lives: made and removed here, since a
        # child ends killed (its own clean-up never runs; each left one folder behind)
        scratch = str(scratch_folder())
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "hazmat.assess.child", str(memory_mb), scratch],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.fd = self.process.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buffer = bytearray()
        self.ready = False
        # A sandbox that is never closed must not leave the child, its pipes or its folder.
        self._finalizer = weakref.finalize(self, _stop, self.process, scratch)

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self) -> None:
        if not self.ready:
            # Loading Bandit's plugins takes a moment, once; it is not charged to the code.
            self.receive(time.monotonic() + _STARTUP_S)
            self.ready = True

    def send(self, message: dict[str, Any]) -> None:
        import json

        data = json.dumps(message, ensure_ascii=False).encode("utf-8")
        try:
            self.stdin.write(_HEADER.pack(len(data)) + data)
            self.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _ChildLost(f"child process gone ({self._status()})") from exc

    def receive(self, deadline: float) -> dict[str, Any]:
        import json

        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while True:
                if len(self.buffer) >= _HEADER.size:
                    (size,) = _HEADER.unpack_from(self.buffer)
                    if size > MAX_FRAME:
                        raise _ChildLost("child sent an oversized answer")
                    if len(self.buffer) >= _HEADER.size + size:
                        frame = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
                        del self.buffer[: _HEADER.size + size]
                        message: dict[str, Any] = json.loads(frame)
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.kill()
                    raise _ChildLost("did not finish within the time budget (killed)")
                if not selector.select(remaining):
                    continue
                try:
                    chunk = os.read(self.fd, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise _ChildLost(f"child process died ({self._status()})")
                self.buffer.extend(chunk)

    def _status(self) -> str:
        try:
            code = self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "still running"
        if code < 0:
            return f"killed by signal {-code}"
        return f"exit status {code}"

    def kill(self) -> None:
        self._finalizer()


def _stop(process: subprocess.Popen[bytes], scratch: str) -> None:
    if process.poll() is None:
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    shutil.rmtree(scratch, ignore_errors=True)


def _finding(data: dict[str, Any]) -> Finding:
    return Finding(
        rule=str(data["rule"]),
        source=str(data["source"]),
        severity=Severity(data["severity"]),
        message=str(data["message"]),
        line=int(data["line"]),
        column=int(data["column"]),
        cwe=data.get("cwe"),
    )
