"""A session's backend: one container kept for many calls (the public side is sessions/).

The container is started with the session agent (backends/agent/session_agent.py), checked against
the policy like any other (backends/container/settings_check.py), and labelled with a deadline at
the end of the session's lifetime, so the reaper of any later hazmat process removes it if this
one dies.
Each `execute` is one call in it, one at a time. A call that runs out of time, or is cancelled,
is asked to stop (with `interrupt_grace_s`: the agent interrupts the kept interpreter and ends
the call's other processes, then, a grace period later, ends the interpreter too) and the
session goes on; only a call that does not end even then has its container killed, as a call
that runs out of output has, and that ends the session: the next call raises `SessionClosed`
saying why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Protocol

from hazmat._exceptions import InfraError, SessionClosed
from hazmat.backends.agent.session_agent import kept_interpreter, session_header
from hazmat.backends.base import Job, KeptBackend, RunReport, Spec
from hazmat.backends.container.cgroup import Sample
from hazmat.backends.container.memory import MEMORY_STOP
from hazmat.backends.container.started import Started
from hazmat.policy import HostResources, Runtime

__all__ = ["SessionBackend"]


class _Host(Protocol):
    """What a session needs of the backend that starts its container (container/backend.py)."""

    def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> Started: ...

    def run_kept(
        self,
        started: Started,
        job: Job,
        data: bytes,
        pending: bytes,
        ready: bool = False,
        grace_s: float | None = None,
    ) -> tuple[RunReport, bytes | None]: ...

    def discard(self, started: Started) -> None: ...

    def kill(self, started: Started) -> None: ...

    def program_memory(self, started: Started, job: Job) -> int | None: ...

    def resources(self) -> HostResources: ...

    @property
    def tier(self) -> str | None: ...


class SessionBackend(KeptBackend):
    """Runs each job in the session's one container; `close()` removes it
    (`ContainerBackend.keep` makes it)."""

    def __init__(self, docker: _Host, spec: Spec, lifetime_s: float) -> None:
        self.docker = docker
        self.spec = _kept(spec)
        self.started: Started | None = docker.start(self.spec, lifetime_s=lifetime_s)
        self.ended: str | None = None  # why the session ended, once it has
        self._pending = b""
        self._lock = threading.Lock()

    @property
    def container_id(self) -> str | None:
        return self.started.cid if self.started is not None else None

    @property
    def fixed_runtime(self) -> Runtime:
        return self.spec.runtime

    def resources(self) -> HostResources:
        return self.docker.resources()

    @property
    def tier(self) -> str | None:  # the backend's that started it
        return self.docker.tier

    def execute(self, job: Job) -> RunReport:
        return self.call(job, "run")

    def call(self, job: Job, mode: str, archive: bytes = b"") -> RunReport:
        """One call: `run` (unpack, build, run, collect) or `files` (unpack, collect); for a
        kept build, `build` and `again` (backends/agent/session_agent.py)."""
        spec = self.spec  # what a job does not say: a kept build's, a session's packages
        asked = dataclasses.replace(job.spec, kept_build=spec.kept_build, packages=spec.packages)
        if _kept(asked) != spec:
            raise InfraError("this call's container settings differ from its session's")
        with self._lock:
            started = self._open()
            data = session_header(job.program, mode, archive)
            if mode == "again" and started.cgroup is not None:
                started.cgroup.reset_peak()  # each test's own peak, where the kernel lets us
            ready = mode == "again"  # a kept build's test: its time starts once it is unpacked
            grace = None if ready else self.interrupt_grace_s
            report, rest = self.docker.run_kept(started, job, data, self._pending, ready, grace)
            self._pending = rest or b""
            if self.ended is not None:  # ended under the call (`end(now=True)` killed it)
                self._end(self.ended)
                note = f"the session ended during the call: {self.ended}"
                return dataclasses.replace(report, notes=(*report.notes, note))
            if rest is not None:
                return _kept_note(report, job, grace)
            why = _ended_by(report, grace)
            self._end(f"a call {why}")
            return dataclasses.replace(
                report, notes=(*report.notes, f"the session ended: the call {why}")
            )

    def limit_memory(self, job: Job) -> int | None:
        """A kept build's build is done: set the program's memory limit on the container (it
        started with the build's budget). None, or the bytes the build left in use when they
        are more than the program may have."""
        return self.docker.program_memory(self._open(), job)

    def cpu_seconds(self) -> float | None:
        """The CPU time the session's container has used so far (None: unknown)."""
        started = self.started
        if started is None or started.cgroup is None:
            return None
        sample: Sample | None = started.cgroup.sample()
        return sample.cpu_ns / 1e9 if sample is not None else None

    def busy(self) -> bool:
        """Whether a call is running."""
        return self._lock.locked()

    def end(self, why: str, now: bool = False) -> None:
        """End the session (idempotent): remove its container; later calls raise
        `SessionClosed` with `why`. Without `now` a running call finishes first; with it a
        running call's container is killed at once: the call returns straight away, its
        result saying why, and removes the container."""
        if not (self._lock.acquire(blocking=not now) or self._kill_call(why)):
            return  # the running call removes the container
        try:
            self._end(why)
        finally:
            self._lock.release()

    def _kill_call(self, why: str) -> bool:
        """Kill the running call's container, `why` its end; whether the call's lock could be
        taken after all (the call returned meanwhile: the caller ends the session)."""
        self.ended = self.ended or why  # the call sees it once its run returns
        started = self.started
        if started is not None:
            self.docker.kill(started)
        return self._lock.acquire(blocking=False)

    def _open(self) -> Started:
        if self.started is None or self.ended is not None:
            raise SessionClosed(f"the session has ended: {self.ended}")
        return self.started

    def _end(self, why: str) -> None:
        if self.started is None:
            return
        self.ended = self.ended or why
        started, self.started = self.started, None
        if started is None:
            return
        with contextlib.suppress(InfraError):
            self.docker.discard(started)

    def close(self) -> None:
        self.end("it was closed")


def _kept(spec: Spec) -> Spec:
    """A kept container's spec: a session's has one memory budget, builds included
    (Spec.start_memory_mb); a kept build's keeps the build's own until the build is done."""
    return dataclasses.replace(
        spec, session=True, build_memory_mb=spec.build_memory_mb if spec.kept_build else 0
    )


def _kept_note(report: RunReport, job: Job, grace_s: float | None) -> RunReport:
    """A call told to stop (past its time or its output cap, or cancelled, or, under runsc,
    its memory) that did, or that ended by itself past its output cap or out of memory: a note
    on what the session kept, for the model or person who reads the result."""
    if report.stopped_by == MEMORY_STOP or (report.told is None and not report.output_exceeded):
        return _memory_note(report, job)
    if report.output_exceeded:
        why = f" wrote more than its output limit of {job.limits.output_bytes:,} bytes"
    elif report.cancelled and not report.timed_out:
        why = " was cancelled"
    elif report.compile_timed_out:
        why = f"'s build ran past its time limit of {job.limits.compile_timeout_s:g} s"
    else:
        why = f" ran past its time limit of {job.limits.timeout_s:g} s"
    kept = kept_interpreter(job.language)
    if report.told is None:  # it ended by itself, its output cut at the cap
        what = "its output was cut there; the session is still open, with its " + (
            "variables and files" if kept else "files"
        )
    elif kept is None:
        what = "its processes were ended; the session is still open, with its files"
    elif report.told == "interrupt":
        what = "it was interrupted; the session is still open, with its variables and files"
    else:
        what = (
            f"it did not stop within {grace_s:g} s of the interrupt, so its processes were "
            f"ended, the {kept} too; the session is still open with its files, but its "
            "variables are gone"
        )
    advice = ""
    if report.output_exceeded:
        advice = " Print less: a summary, or the first lines; write the rest to a file."
    elif report.timed_out:
        advice = " To get further, make the work faster or split it into shorter calls."
    note = f"The call{why}: {what}.{advice}"
    return dataclasses.replace(report, notes=(*report.notes, note))


def _memory_note(report: RunReport, job: Job) -> RunReport:
    """A call that ran out of memory and ended by itself, or was ended: Python's MemoryError at
    the interpreter's address space (backends/inside/repl.py), a process the kernel killed at
    the limit (runc), or the call the host ended (runsc, backends/container/memory.py's
    `SessionWatch`): the note on what the session kept (the agent says on stderr when the kept
    interpreter ended). Any other call's report as it is."""
    lang = job.language
    kept = kept_interpreter(lang)
    ended = kept is not None and f"hazmat: the {kept} ended (".encode() in report.stderr
    if report.stopped_by == MEMORY_STOP:
        how = "its processes were ended"
    elif report.oom_killed:
        how = "the kernel killed a process of it at the limit"
    elif report.exit_code != 0 and kept and lang.out_of_memory_line(report.stderr) is not None:
        how = "it ended with the error above"
    else:
        return report
    if ended:
        what = f"{how}, the {kept} too; the session is still open with its files, but its "
        what += "variables are gone"
    else:
        what = f"{how}; the session is still open, with its " + (
            "variables and files" if kept else "files"
        )
    note = (
        f"The call ran out of memory (the session's limit is {job.limits.memory_mb} MB): "
        f"{what}. Free what you no longer need, or work on the data in smaller parts."
    )
    return dataclasses.replace(report, notes=(*report.notes, note))


def _ended_by(report: RunReport, grace_s: float | None) -> str:
    """Why a call's container is gone (the host killed it, or it died)."""
    if report.stopped_by == MEMORY_STOP:  # past the backstop before its processes ended
        return "went over the memory limit"
    if report.told is not None:
        return (
            f"did not stop when told to (interrupted, then killed {grace_s:g} s later), so "
            "its container was killed"
        )
    if report.cancelled:
        return "was cancelled"
    if report.timed_out or report.compile_timed_out:
        return "ran out of time"
    if report.output_exceeded:
        return "went over the output limit"
    if report.oom_killed:
        return "went over the memory limit"
    return "lost its container (its agent ended)"
