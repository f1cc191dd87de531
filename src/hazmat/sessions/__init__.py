"""Sessions: one hardened container kept for a bounded time, shared by successive calls.

    with hazmat.Sandbox() as sandbox, sandbox.session("python") as session:
        session.run("x = 6 * 7")
        print(session.run("x").stdout)          # 42
        session.upload({"data.csv": b"a,b\\n1,2\\n"})
        session.run("open('out.txt', 'w').write(open('data.csv').read().upper())")
        print(session.download(["out.txt"]))    # {'out.txt': b'A,B\\n1,2\\n'}

Each call goes through the whole pipeline (`Sandbox.execute`): assessed, decided, recorded
with the session's id, run in the session's container. The working directory and /tmp are kept
between calls; for Python the interpreter's variables are too (backends/agent/session_agent.py).
JavaScript, TypeScript and Go run each call's program afresh, beside the files earlier calls
left. A session has the memory, pids, CPU share and tmpfs of its trust level for its whole
life, and ends (its container removed) when it is closed, after `idle_s` without a call,
`lifetime_s` after it opened, once its container has used `cpu_s` of CPU, when a call runs out
of output, or when a call past its time will not stop even once killed (the policy's `sessions`
section; a call past its time is interrupted and the session goes on:
backends/kept/session.py). Sessions have no network.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from hazmat._closing import Closable
from hazmat._exceptions import HazmatError, InputError, SessionClosed, quoted
from hazmat.backends.base import Backend, Job, KeptBackend, Program, RunReport, Spec
from hazmat.languages import get_language
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.options import CALL_OPTIONS, RunOptions, parse_runtime
from hazmat.policy import Policy, Runtime, SessionSettings, TrustLevel, parse_trust
from hazmat.run.image_choice import resolve_image
from hazmat.run.intake import admit
from hazmat.sessions.book import SessionBook
from hazmat.sessions.forking import fork
from hazmat.sessions.pausing import with_lost_note
from hazmat.watch import OnOutput, Watch

if TYPE_CHECKING:
    from hazmat.audit.run_records import RunRecorder
    from hazmat.packages.install import Installed, Target
    from hazmat.sessions.store import Paused

__all__ = ["Fixed", "Pipeline", "Services", "Session", "check_call_options", "open_session"]


class Pipeline(Protocol):
    """What a session needs of the sandbox that opened it (`Sandbox` is one)."""

    policy: Policy
    backend: Backend

    def request(
        self, code: str | bytes, language: str = ..., **options: Unpack[RunOptions]
    ) -> ExecutionRequest: ...

    def execute_in(
        self,
        request: ExecutionRequest,
        backend: Backend,
        on_output: OnOutput | Watch | None = None,
    ) -> ExecutionResult: ...


@dataclasses.dataclass(frozen=True)
class Services:
    """What the sandbox that opens a session gives it: the pipeline its calls go through, the
    audit log's recorder (the session's opening, its files, its end), where a pause is kept
    (`keep_paused`), how a package is installed (`install`) and how another session is
    opened (`open`: a fork's). Given, so that nothing below `Sandbox` calls back into its
    public face."""

    pipeline: Pipeline
    recorder: RunRecorder
    keep_paused: Callable[[Paused, bytes], None]
    install: Callable[[Target, object], Installed]
    open: Callable[[Fixed], Session]


@dataclasses.dataclass(frozen=True)
class Fixed:
    """What a session is opened with, fixed for all its calls (`Sandbox.session`'s arguments)."""

    language: str
    trust: TrustLevel | str | None
    runtime: Runtime | str | None
    image: str | None
    caller: str | None


def open_session(
    book: SessionBook[Session],
    services: Services,
    asked: Fixed,
    session_id: str | None = None,
) -> Session:
    """Start a session's container (`Backend.keep`: checked against the policy like any
    other), record the opening, and enter it in the book of open sessions."""
    pipeline = services.pipeline
    policy = pipeline.policy
    lang = get_language(asked.language)
    level = parse_trust(asked.trust if asked.trust is not None else policy.default_trust)
    settings = policy.settings(level)
    chosen = resolve_image(policy, level, lang, asked.image)
    # one memory budget for the session's container, builds included (no compile_memory_mb)
    limits = settings.limits.clamped(pipeline.backend.resources()).replace(compile_memory_mb=0)
    spec = Spec.of(lang.name, chosen, parse_runtime(asked.runtime) or settings.runtime, limits)
    # a Python session that may install packages gets an exec /tmp for compiled extensions
    installs = lang.name == "python" and policy.packages.allows(level.value, lang.name)
    spec = dataclasses.replace(spec, packages=installs)
    caller = asked.caller
    if caller is not None and not isinstance(caller, str):
        raise InputError(f"caller must be str, not {type(caller).__name__}")
    rules = policy.sessions
    lifetime = rules.lifetime_s + limits.timeout_s + limits.compile_timeout_s
    fixed = {"trust": level, "runtime": spec.runtime, "image": asked.image, "caller": caller}

    def ended(session: Session) -> None:
        book.forget(session)
        services.recorder.session_event(
            "ended", {"session": session.id, "why": session.ended, "calls": session.calls}
        )

    with book.slot() as enter:  # the place is taken before the container starts
        backend = pipeline.backend.keep(spec, lifetime)
        backend.interrupt_grace_s = rules.interrupt_grace_s  # a slow call keeps the session
        session = Session(services, backend, spec, fixed, rules, ended, session_id=session_id)
        try:
            enter(session)
        except BaseException:
            backend.close()
            raise
    services.recorder.session_event(
        "opened",
        {
            "session": session.id,
            "caller": caller,
            "container_id": backend.container_id,
            **{k: v for k, v in session.info().items() if k not in ("id", "calls")},
            "limits": limits.to_dict(),
        },
    )
    return session


def check_call_options(options: Mapping[str, Any]) -> None:
    """`InputError` naming any option a call may not set (the session fixed it)."""
    unknown = sorted(set(options) - CALL_OPTIONS)
    if unknown:
        raise InputError(
            f"{', '.join(map(quoted, unknown))}: fixed when the session opened; a call may set "
            + ", ".join(sorted(CALL_OPTIONS))
        )


class Session(Closable):
    """A container kept for successive calls; made by `Sandbox.session()`."""

    def __init__(
        self,
        services: Services,
        backend: KeptBackend,
        spec: Spec,
        fixed: Mapping[str, Any],
        settings: SessionSettings,
        on_end: Callable[[Session], None],
        *,
        session_id: str | None = None,  # a resumed session keeps its id (pausing.py)
    ) -> None:
        self.id = session_id or "s-" + secrets.token_hex(8)
        self.language = spec.language
        self.spec = spec
        self.opened = time.time()
        self.last_used = self.opened
        self._services = services
        self._backend = backend
        # each call's request says which session it is a call of (the audit log's record of
        # it, the diff against the last call's code)
        self._fixed = {**fixed, "origin": {"session": self.id}, "network": []}
        self._settings = settings
        self._on_end = on_end
        self._end_reported = False
        self._report_lock = threading.RLock()
        self.calls = 0
        # a resumed session: when it was paused, and which variables came back (pausing.py)
        self.resumed: dict[str, Any] | None = None
        # a fork: the session it was forked from, and which variables came back (forking.py)
        self.forked: dict[str, Any] | None = None
        self.owner: str | None = None  # a service's tenant, whose pause this is (on_idle)
        # Python's requirements installed (in /tmp, which a pause does not keep): a resume
        # installs them again (npm's are in the working directory, which it keeps)
        self.installed: list[str] = []

    @property
    def trust(self) -> str:
        return str(self._fixed["trust"].value)

    @property
    def expires_at(self) -> float:
        """When the session ends if nothing calls it (time.time())."""
        return min(self.opened + self._settings.lifetime_s, self.last_used + self._settings.idle_s)

    @property
    def ended(self) -> str | None:
        """Why the session ended, or None while it is open."""
        return self._backend.ended

    def run(
        self,
        code: str | bytes,
        *,
        on_output: OnOutput | Watch | None = None,
        **options: Unpack[RunOptions],
    ) -> ExecutionResult:
        """Run `code` in the session (through the whole pipeline) and return its result.
        Options: those a call may set (`hazmat.options.CALL_OPTIONS`: the input, output files,
        env, args, timeout...); the rest was fixed when the session opened. `on_output` as for
        `Sandbox.run`; a cancelled call is interrupted, as one past its time is, and the
        session goes on (docs/api.md, "A call that runs out of time")."""
        return self.execute(self.request(code, **options), on_output=on_output)

    def request(self, code: str | bytes, **options: Unpack[RunOptions]) -> ExecutionRequest:
        """Build and check a call's request without running it (`InputError` if it is bad,
        `SessionClosed` if the session has ended)."""
        return self._request(code, dict[str, Any](options))

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = None
    ) -> ExecutionResult:
        """Run a request made by `request` in the session."""
        self._check_open()
        self._touch()
        result = self._services.pipeline.execute_in(request, self._backend, on_output)
        self._after_call()
        if self.forked is not None:
            return with_lost_note(result, self.forked, "forked")
        return with_lost_note(result, self.resumed)

    async def arun(
        self,
        code: str | bytes,
        *,
        on_output: OnOutput | Watch | None = None,
        **options: Unpack[RunOptions],
    ) -> ExecutionResult:
        """`run`, without blocking the event loop."""
        import asyncio
        import functools

        request = self.request(code, **options)  # bad input raises here, at once
        run = functools.partial(self.execute, request, on_output=on_output)
        return await asyncio.to_thread(run)

    def upload(self, files: Mapping[str, str | bytes]) -> None:
        """Write `files` (relative path -> content) into the working directory; recorded."""
        if not files:
            raise InputError("upload: no files given")
        self._files(files, [])

    def download(self, names: Iterable[str]) -> dict[str, bytes]:
        """The content of each named file in the working directory; a file that is missing,
        not a regular file or over the policy's file size is an `InputError`."""
        want = list(names)
        if not want:
            raise InputError("download: no file names given")
        return self._files({}, want)

    def install(self, packages: Iterable[str]) -> Installed:
        """Install `packages` into the session, where its next calls import them: Python's
        requirements (`["seaborn==0.13.2"]`) from the policy's pip index, JavaScript's and
        TypeScript's (`["lodash@4.17.21"]`) from its npm registry; fetched through the
        allowlist proxy in a sandbox of their own, checked by digest, audited
        (`session.installed`). Refused (`InstallRefused`, saying what to do instead) where the
        policy's `packages` section does not let the session's trust level install."""
        from hazmat.packages.install import Target

        self._check_open()
        asked = list(packages) if not isinstance(packages, str | bytes) else packages
        target = Target(self.id, self.language, self.trust, self._job, self.agent_call)
        done = self._services.install(target, asked)
        if self.language == "python":
            self.installed = list(dict.fromkeys([*self.installed, *done.requested]))
        return done

    def pause(self, owner: str | None = None) -> Paused:
        """Pause the session: its working directory, and what can be pickled of Python's
        variables, are kept by the sandbox (encrypted, `sessions.store`) and its container is
        removed; `Sandbox.resume_session(id)` brings it back in a new container, also after a
        restart. `owner` (a service's tenant; default: the session's `owner`) must be given
        again to resume it. Returns what was kept; if the pause fails, the session goes on as
        it was."""
        from hazmat.sessions.pausing import pause

        return pause(self, owner if owner is not None else self.owner, self._services.keep_paused)

    def fork(self, n: int = 1) -> list[Session]:
        """`n` new sessions, each in a fresh hardened container with this session's language,
        trust, runtime, image and owner, its working directory and, for Python, what can be
        pickled of its variables as they are now (each fork's `forked` says which came back);
        this session goes on. Each counts against `sessions.max_open`; `n` is 1 to it. If
        one fork cannot be opened, none is left open (sessions/forking.py)."""
        self._check_open()
        services = self._services
        most = services.pipeline.policy.sessions.max_open
        return fork(self, n, services.open, services.recorder, most)

    def agent_call(self, program: Program, mode: str, timeout_s: float | None = None) -> RunReport:
        """One call of the session agent that is not a program of the caller's: `files`,
        `save`, `restore` (backends/agent/session_agent.py), or hazmat's own program in the
        session (`run`: an install), with `timeout_s` for the level's time limit."""
        self._check_open()
        self._touch()
        job = self._job(program)
        if timeout_s is not None:
            job = dataclasses.replace(job, limits=job.limits.replace(timeout_s=timeout_s))
        report = self._backend.call(job, mode)
        self._after_call()
        return report

    @property
    def fixed(self) -> Fixed:
        """What the session was opened with (for a resume)."""
        f = self._fixed
        return Fixed(self.language, f["trust"], f["runtime"], f["image"], f["caller"])

    def info(self) -> dict[str, Any]:
        """What a front-end shows about the session."""
        return {
            "id": self.id,
            "language": self.language,
            "trust": self.trust,
            "runtime": self.spec.runtime.value,
            "image": self.spec.image,
            "opened_at": round(self.opened, 3),
            "expires_at": round(self.expires_at, 3),
            "calls": self.calls,
            "idle_s": self._settings.idle_s,
            "lifetime_s": self._settings.lifetime_s,
            "cpu_s": self._settings.cpu_s,
            **({"resumed": self.resumed} if self.resumed is not None else {}),
            **({"forked": self.forked} if self.forked is not None else {}),
        }

    def close(self) -> None:
        """End the session and remove its container. Safe to call more than once."""
        self.end("it was closed")

    def end(self, why: str, now: bool = False) -> None:
        """End the session for `why`; with `now`, even in the middle of a call (its
        container is removed under it, and the call's result says so)."""
        if self._backend.ended is None:
            self._backend.end(why, now=now)
        self._report_end()

    def busy(self) -> bool:
        """Whether a call is running."""
        return self._backend.busy()

    def over_cpu(self) -> bool:
        """Whether the container has used the session's CPU budget."""
        cpu = self._backend.cpu_seconds()
        return cpu is not None and cpu >= self._settings.cpu_s

    def _request(self, code: str | bytes, options: dict[str, Any]) -> ExecutionRequest:
        check_call_options(options)
        self._check_open()
        return self._services.pipeline.request(code, self.language, **{**options, **self._fixed})

    def _files(self, files: Mapping[str, str | bytes], want: list[str]) -> dict[str, bytes]:
        self._check_open()
        request = admit(
            self._services.pipeline.policy,
            "#",  # not sent: a files call has no program; the request checks names and sizes
            self.language,
            files=files,
            output_files=want,
            **self._fixed,
        )
        limits = self._services.pipeline.policy.settings(request.trust).limits
        program = Program(
            files=request.files,
            want=tuple(want),
            stdin=b"",
            max_file_bytes=limits.max_file_bytes,
            max_total_bytes=limits.max_download_bytes,
        )
        report = self.agent_call(program, "files")
        self._services.recorder.session_files(self.id, request.files, report.files)
        missing = [name for name in want if name not in report.files]
        if missing:
            why = "; ".join(report.notes) or "not found"
            raise InputError(f"download: {', '.join(map(quoted, missing))}: {why}")
        return dict(report.files)

    def _job(self, program: Program) -> Job:
        trust = self._fixed["trust"]
        limits = self._services.pipeline.policy.settings(trust).limits
        limits = limits.replace(
            memory_mb=self.spec.memory_mb, cpus=self.spec.cpus, compile_memory_mb=0
        )
        return Job(
            get_language(self.language), self.spec.image, limits, self.spec.runtime, trust, program
        )

    def _touch(self) -> None:
        self.last_used = time.time()
        self.calls += 1

    def _after_call(self) -> None:
        self.last_used = time.time()
        if self._backend.ended is not None:
            self._report_end()

    def _report_end(self) -> None:
        """Tell the book (and the audit log) once that the session ended. A second caller
        (the janitor and a call's own check may end a session at once) returns only after the
        first has told them: whoever ended it may then count on the book not holding it."""
        with self._report_lock:
            if self._end_reported or self._backend.ended is None:
                return
            self._end_reported = True
            self._on_end(self)

    def _check_open(self) -> None:
        why = self._backend.ended
        if why is None and time.time() >= self.expires_at:
            self.end(self.expiry())
            why = self._backend.ended
        if why is not None:
            raise SessionClosed(f"session {self.id} has ended: {why}")

    def expire(self) -> None:
        """The janitor's, past its idle time or lifetime: idle, with the policy's `on_idle:
        pause`, it is paused for its owner; otherwise (or if the pause fails) it ends."""
        why = self.expiry()
        if (
            self._settings.on_idle == "pause"
            and time.time() < self.opened + self._settings.lifetime_s
        ):
            self.last_used = time.time()  # its pause is its last call, not refused as idle
            try:
                self.pause()
                return
            except HazmatError as exc:
                why = f"{why}; it could not be paused: {exc}"
        self.end(why)

    def expiry(self) -> str:
        """Why the session expired (its lifetime, or its idle time)."""
        if time.time() >= self.opened + self._settings.lifetime_s:
            return f"it reached its lifetime ({self._settings.lifetime_s:g} s)"
        return f"it was idle for {self._settings.idle_s:g} s"

