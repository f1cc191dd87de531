"""Sandbox: the one pipeline every front-end calls.

    with hazmat.Sandbox() as sandbox:
        result = sandbox.run("print(6 * 7)", language="python")
        print(result.outcome, result.stdout)

`execute` is the stages in order: validate, resolve, assess, decide, record, run (the backend
verifies the container's settings before it gets the job), record, result. Bad requests raise
`InputError` before anything runs. Code the policy blocks comes back with outcome `blocked`
unless the caller gave an `override_reason`. Everything that goes wrong after that comes back
as a result: the program's own failures as `error`, `timeout`, `memory_limit` or
`output_limit`; the infrastructure's as `infra_error`; each with one sentence in `error`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import threading
import time
import warnings
from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from hazmat._closing import Closable
from hazmat._exceptions import (
    ClosedError,
    InfraError,
    SessionClosed,
    SettingsMismatch,
)
from hazmat.assess.decision import Decision, decide
from hazmat.assess.decision import explain as explain_assessment
from hazmat.audit.log import AuditLog, open_audit_log
from hazmat.audit.run_records import Applied, Review, RunRecorder
from hazmat.backends.base import Backend, Job, Spec
from hazmat.backends.kept.build_cache import BuildCache
from hazmat.backends.kept.kept_build import KeptBuild
from hazmat.egress.gates import Gates
from hazmat.egress.proxy import EgressProxy, Gate
from hazmat.languages import get_language
from hazmat.metrics import Metrics, MetricsSnapshot
from hazmat.models import Assessment, ExecutionRequest, ExecutionResult
from hazmat.options import RunOptions, parse_runtime
from hazmat.packages.install import Installed, Target, install
from hazmat.policy import Policy, Runtime, SemgrepMode, TrustLevel, parse_trust
from hazmat.policy.file import load_policy
from hazmat.run.image_choice import default_image
from hazmat.run.intake import Checked, admit, check_request
from hazmat.run.job import clamp_notes, job_for
from hazmat.run.late_semgrep import LateSemgrep
from hazmat.run.results import Plan, blocked_result, infra_result, report_result
from hazmat.run.routing import route, session_refusal
from hazmat.sessions import Fixed, Services, Session, open_session
from hazmat.sessions.book import SessionBook
from hazmat.sessions.forking import reinstall
from hazmat.sessions.pausing import restore
from hazmat.sessions.store import Paused, SessionStore, default_store_dir
from hazmat.watch import OnOutput, Watch, as_watch

if TYPE_CHECKING:
    from hazmat.assess.assessor import Assessor
    from hazmat.backends.container.backend import ContainerBackend
    from hazmat.grade.grader import TaskResult
    from hazmat.grade.tasks import Task
    from hazmat.sessions import Session

__all__ = ["Sandbox", "default_tier"]

log = logging.getLogger(__name__)
KEPT_BUILD_SLACK_S = 5.0  # a kept build container's lifetime beyond its tests' limits, per call


class Sandbox(Closable):
    """Runs untrusted code in fresh, hardened containers under a policy.

    `policy` is a `Policy`, a path to a YAML policy file, or None for the built-in default.
    `backend` defaults to a warm pool (`PoolBackend`, sized by the policy's `pool` section)
    over a `DockerBackend` on the engine named by the environment; `pool=False` (or a pool
    size of 0) gives the cold path alone, which suits a single run. `assessor` defaults to an
    `Assessor` with its default budgets (its worker starts right away). After `close()`, every
    call raises `ClosedError`.
    """

    def __init__(
        self,
        policy: Policy | str | Path | None = None,
        *,
        backend: Backend | None = None,
        audit: AuditLog | None = None,
        assessor: Assessor | None = None,
        pool: bool = True,
        egress: EgressProxy | None = None,
    ) -> None:
        if policy is None:
            policy = Policy()
        elif isinstance(policy, str | Path):
            policy = load_policy(policy)
        self.policy = policy
        self._closed = False
        self._owns_audit = audit is None
        self.audit = audit or open_audit_log(policy.audit)
        self._recorder = RunRecorder(self.audit, policy.audit)
        self.backend = backend or _default_backend(policy, pool)
        if self.backend.on_security_event is None:
            self.backend.on_security_event = self._recorder.security_event
        self._metrics = Metrics()
        self._owns_assessor = assessor is None
        if assessor is None:
            from hazmat.assess.assessor import Assessor

            assessor = Assessor()
        self.assessor = assessor
        self.assessor.start()
        # the proxy, made when a run needs it
        self._gates = Gates(egress, policy.reachable, policy.packages.trial_origins())
        self._late = LateSemgrep(self.assessor, self._recorder)
        self.builds = BuildCache()  # kept builds of the same source share it (build_cache.py)
        self.sessions: SessionBook[Session] = SessionBook(policy.sessions)
        store = policy.sessions.store
        self.session_store = SessionStore(
            Path(store) if store else default_store_dir(), policy.sessions.keep_paused_s
        )
        self._resuming = threading.Lock()
        for name in policy.pool.prewarm:
            try:
                self.warm(name)
            except InfraError as exc:
                log.warning("hazmat: cannot prewarm %s: %s", name, exc)

    def warm(
        self,
        language: str = "python",
        trust: TrustLevel | str | None = None,
        runtime: Runtime | str | None = None,
        wait: float = 0,
    ) -> Spec:
        """Start filling the warm pool for `language` at `trust` (default: the policy's
        default level) in the background, and keep it filled; does nothing without a pool.
        With `wait`, block up to that many seconds until it is full. Returns the kind of
        container it asked for."""
        self._check_open()
        lang = get_language(language)
        level = parse_trust(trust if trust is not None else self.policy.default_trust)
        settings = self.policy.settings(level)
        limits = settings.limits.clamped(self.backend.resources())
        image = default_image(self.policy, level, lang)
        spec = Spec.of(lang.name, image, parse_runtime(runtime) or settings.runtime, limits)
        self.backend.warm(spec)
        if wait > 0 and not self.backend.wait_warm(spec, wait):
            raise InfraError(f"the warm pool for {lang.name} did not fill in {wait:g} s")
        return spec

    def session(
        self,
        language: str = "python",
        *,
        trust: TrustLevel | str | None = None,
        runtime: Runtime | str | None = None,
        image: str | None = None,
        caller: str | None = None,
    ) -> Session:
        """Open a session: one container kept for successive calls, which share its working
        directory (and, for Python, the interpreter's variables) until it is closed or
        expires (the policy's `sessions` section). Use it as a context manager, or close it.
        Each call is assessed and recorded like any run (sessions/)."""
        return self._open_session(Fixed(language, trust, runtime, image, caller))

    def resume_session(self, session_id: str, *, owner: str | None = None) -> Session:
        """A paused session (`Session.pause`) in a new hardened container, with the same id,
        language, trust, runtime and image: its working directory back, and for Python the
        variables that were saved (`session.resumed` says which came back). `owner` must be
        the one the pause was given. `SessionNotFound` if there is no such paused session,
        `SessionBusy` while another resume of it runs; if the resume fails, the paused session
        is kept."""
        self._check_open()
        store = self.session_store
        with self._resuming, store.claim(session_id):  # one resume of an id at a time
            paused, archive = store.get(session_id, owner)
            fixed = Fixed(
                paused.language, paused.trust, paused.runtime, paused.image, paused.caller
            )
            session = open_session(self.sessions, self._services(), fixed, paused.id)
            try:
                # its packages first: the variables loaded next may be of their types
                again = reinstall(session, paused.packages)
                kept = {"paused_at": round(paused.paused_at, 3), "archive_bytes": len(archive)}
                session.resumed = {**kept, **restore(session, archive, paused.lost), **again}
            except BaseException:
                session.end("its resume failed")
                raise
            store.remove(session_id)
        self._recorder.session_event("resumed", {"session": session.id, **session.resumed})
        return session

    def _services(self) -> Services:
        """What a session it opens is given (sessions/: `Services`)."""
        return Services(
            self, self._recorder, self._keep_paused, self._install_packages, self._open_session
        )

    def _open_session(self, fixed: Fixed) -> Session:
        """A session opened as `session()` opens one (a fork's: sessions/forking.py)."""
        self._check_open()
        return open_session(self.sessions, self._services(), fixed)

    def _keep_paused(self, paused: Paused, archive: bytes) -> None:
        """Keep a pausing session in the store, and record it (its archive by digest); the
        store's sessions kept past `keep_paused_s` go meanwhile."""
        self.session_store.sweep()
        self.session_store.put(paused, archive)
        self._recorder.session_event(
            "paused",
            {
                "session": paused.id,
                "owner": paused.owner,
                "archive": {"bytes": len(archive), "sha256": hashlib.sha256(archive).hexdigest()},
                "saved": list(paused.saved),
                "lost": dict(paused.lost),
            },
        )

    def kept_build(
        self,
        language: str,
        timeouts: Sequence[float | None],
        *,
        trust: TrustLevel | str | None = None,
        build_files: Iterable[str] = (),
        owner: str | None = None,
    ) -> KeptBuild:
        """A container kept for one submission's test cases (backends/kept/kept_build.py), one per
        entry of `timeouts` (None: the trust level's): run each test's request with
        `execute_in(request, kept_build)`; it builds once, and each test runs as a fresh process
        from the state right after the build. `build_files` are the input files the build
        sees besides the source. A successful build is shared with later kept builds of the
        same source for the same `owner` (a caller; `builds`, backends/kept/build_cache.py).
        Close it (or use it as a context manager) when done."""
        self._check_open()
        level = parse_trust(trust if trust is not None else self.policy.default_trust)
        limits = self.policy.settings(level).limits
        spent = [limits.timeout_s if t is None else t for t in timeouts]
        lifetime = limits.compile_timeout_s + sum(spent) + KEPT_BUILD_SLACK_S * (1 + len(spent))
        return KeptBuild(
            self.backend, lifetime, frozenset(build_files), cache=self.builds, owner=owner
        )

    def bench(self, *args: Any, **kwargs: Any) -> KeptBuild:
        """Deprecated: the old name of `kept_build`, which takes the same arguments ("bench"
        now names only the benchmarks)."""
        warnings.warn(
            "Sandbox.bench is renamed Sandbox.kept_build", DeprecationWarning, stacklevel=2
        )
        return self.kept_build(*args, **kwargs)

    def _install_packages(self, target: Target, asked: object) -> Installed:
        """A session's install (`Session.install`; hazmat/packages/install.py)."""
        self._check_open()

        def record(details: Mapping[str, Any]) -> None:
            self._recorder.session_event("installed", details)

        packages = self.policy.packages
        return install(target, asked, packages, self.backend, self._gates, record)

    def metrics(self) -> MetricsSnapshot:
        """Totals and rates since this sandbox opened (runs, outcomes, blocked, pool hits and
        misses) and the latency p50/p95 of recent runs, end to end."""
        return self._metrics.snapshot()

    def run(
        self,
        code: str | bytes,
        language: str = "python",
        *,
        on_output: OnOutput | Watch | None = None,
        **options: Unpack[RunOptions],
    ) -> ExecutionResult:
        """Run `code` once in a new container and return what happened.

        Options: `trust`, `stdin`, `files` (relative path -> content, copied into the working
        directory), `output_files` (relative paths to collect afterwards), `env` (variables
        for the program), `args` (its command-line arguments), `timeout` (seconds),
        `memory_mb`, `runtime` ("runc" or "runsc"), `caller` and `session` (recorded in the
        audit log), `override_reason` (lets code the policy blocks run; recorded).

        `on_output(stream, data)` gets the program's output while it runs, or give a `Watch`
        to be able to cancel the run too (hazmat/watch.py).
        """
        return self.execute(self.request(code, language, **options), on_output=on_output)

    async def arun(
        self,
        code: str | bytes,
        language: str = "python",
        *,
        on_output: OnOutput | Watch | None = None,
        **options: Unpack[RunOptions],
    ) -> ExecutionResult:
        """`run`, without blocking the event loop (the run happens in a worker thread)."""
        import asyncio  # here: most callers never need it, and it costs 20 ms to import

        request = self.request(code, language, **options)  # bad input raises here, at once
        run = functools.partial(self.execute, request, on_output=on_output)
        return await asyncio.to_thread(run)

    def map(
        self,
        tasks: Iterable[Task | Mapping[str, Any]],
        jobs: int = 4,
        *,
        fresh: bool = False,
        **options: Any,
    ) -> Generator[TaskResult, None, None]:
        """Grade `tasks` (docs/batch.md: `Task`s, or their JSON objects), `jobs` at a time,
        and yield each `TaskResult` as it finishes (not in the tasks' order). A task is built
        once and each of its test cases runs as a fresh process; with `fresh`, each test case
        gets a fresh container and build. `options` are `run`'s for every run: `trust`,
        `runtime`, `image`, `caller`, `override_reason`. A task that is wrong (its JSON, or a
        run it would make) raises `InputError` when the iteration reaches it."""
        from hazmat.grade.grader import Grader
        from hazmat.grade.many import grade_many
        from hazmat.grade.tasks import Task, parse_task

        self._check_open()
        grader = Grader(self, fresh=fresh, **options)

        def checked() -> Iterator[Task]:
            for raw in tasks:
                task = raw if isinstance(raw, Task) else parse_task(raw)
                grader.check(task)
                yield task

        return grade_many(grader, checked(), jobs)

    async def amap(
        self,
        tasks: Iterable[Task | Mapping[str, Any]],
        jobs: int = 4,
        *,
        fresh: bool = False,
        **options: Any,
    ) -> AsyncIterator[TaskResult]:
        """`map`, without blocking the event loop: the grading happens in worker threads."""
        import asyncio

        results = self.map(tasks, jobs, fresh=fresh, **options)
        try:
            while True:
                result = await asyncio.to_thread(next, results, None)
                if result is None:
                    return
                yield result
        finally:
            await asyncio.to_thread(results.close)

    def request(
        self, code: str | bytes, language: str = "python", **options: Unpack[RunOptions]
    ) -> ExecutionRequest:
        """Build and validate a request without running it (`hazmat.admit` with this
        sandbox's policy); raises `InputError` if it is bad."""
        self._check_open()
        return admit(self.policy, code, language, **options)

    def execute(
        self, request: ExecutionRequest, *, on_output: OnOutput | Watch | None = None
    ) -> ExecutionResult:
        """Run a request through every stage and return its result.

        The program reaches a container only after the decision and once the `run.started`
        record (with the assessment) is durable; `run.finished` is durable before the result is
        returned; a refused run is recorded as `run.blocked`. A cold backend may start the
        empty container while the code is assessed (`Backend.prepare`). If the audit log
        cannot record, `AuditError` is raised and nothing runs. `on_output`: see `run`.
        """
        return self.execute_in(request, self.backend, on_output)

    def execute_in(
        self,
        request: ExecutionRequest,
        backend: Backend,
        on_output: OnOutput | Watch | None = None,
    ) -> ExecutionResult:
        """`execute` on `backend` (a session's kept container: sessions/)."""
        self._check_open()
        watch = as_watch(on_output)
        began = time.monotonic()
        checked = check_request(self.policy, request)  # at once if `request` made it
        plan, notes = _plan(request, checked, backend)
        if backend.one_budget and self.policy.packages.allows(request.trust, request.language):
            plan = dataclasses.replace(plan, installs=True)  # a session that may install
        settings = self.policy.settings(request.trust)
        reason, allow = checked.override_reason, checked.network
        secrets = self.policy.secrets_for(request.trust, allow, request.caller)
        gate = self._gates.open(allow, settings.network.ports, secrets)
        job = job_for(plan, gate, watch)
        backend.prepare(job)
        try:
            assessment = self._assess(plan)
            decision = decide(assessment, settings.assess, reason)
            review = Review(assessment, decision.value, reason)
            if decision is Decision.BLOCK:
                return self._refuse(plan, review, began, allow)
            routed = route(plan.runtime, assessment, settings.assess, request.trust)
            if routed is not None:  # the assessment asks a stronger runtime (run/routing.py)
                needed, why = routed
                review = Review(assessment, decision.value, reason, why)
                fixed = backend.fixed_runtime
                if fixed is not None:  # a session's container: it cannot change runtime
                    message = session_refusal(needed, fixed, why)
                    return self._refuse(plan, review, began, allow, message)
                plan = dataclasses.replace(plan, runtime=needed)
                job = job_for(plan, gate, watch)  # a new job: what was prepared is not used
                notes.append(why)
            if decision in (Decision.OVERRIDE, Decision.WARN):
                suffix = "; run on an override" if decision is Decision.OVERRIDE else ""
                notes.append(f"assessment {explain_assessment(assessment)}{suffix}")
            run_id = self._recorder.started(request, _applied(plan, allow), review)
            ran = self._outcome(backend, plan, job, notes, run_id, began)
            connections, gate = self._connections(run_id, gate), None
            result = dataclasses.replace(
                ran,
                tier=backend.tier,
                connections=tuple(connections),
                notes=(*ran.notes, *_refused_note(connections)),
                assessment=assessment,
                decision=decision.value,
                override_reason=reason,
                runtime_reason=review.runtime_reason,
                run_id=run_id,
            )
            self._recorder.finished(run_id, result)
        finally:
            if gate is not None:  # not run (refused, or an error before its end)
                self._gates.close(gate)
            backend.settle()  # housekeeping only once the run is recorded
        if settings.assess.semgrep is SemgrepMode.ASYNC:
            self._late.submit(run_id, request, assessment)
        self._metrics.record(result, (time.monotonic() - began) * 1000)
        return result

    def _assess(self, plan: Plan) -> Assessment:
        settings = self.policy.settings(plan.request.trust)
        return self.assessor.assess(
            plan.request.code,
            plan.request.language,
            semgrep=settings.assess.semgrep is SemgrepMode.SYNC,
            max_bytes=plan.limits.max_code_bytes,
        )

    def _refuse(
        self,
        plan: Plan,
        review: Review,
        began: float,
        allow: tuple[str, ...],
        message: str | None = None,
    ) -> ExecutionResult:
        """A run refused: blocked by its assessment, or (`message`) asking a stronger runtime
        than its session's container has. Recorded as `run.blocked`; nothing ran."""
        request = plan.request
        review.decision = Decision.BLOCK.value
        run_id = self._recorder.blocked(request, _applied(plan, allow), review)
        elapsed = (time.monotonic() - began) * 1000
        explanation = explain_assessment(review.assessment)
        result = blocked_result(plan, review.assessment, explanation, elapsed, message)
        result = dataclasses.replace(
            result,
            decision=Decision.BLOCK.value,
            runtime_reason=review.runtime_reason,
            run_id=run_id,
        )
        self._metrics.record(result, elapsed)
        return result

    def _outcome(
        self, backend: Backend, plan: Plan, job: Job, notes: list[str], run_id: str, began: float
    ) -> ExecutionResult:
        """Hand the job to the backend; infrastructure failures become an `infra_error`."""
        try:
            return report_result(plan, backend.execute(job), notes)
        except SessionClosed as exc:  # ended between the call's check and its run
            return infra_result(plan, str(exc), (time.monotonic() - began) * 1000)
        except SettingsMismatch as exc:
            details = {"where": "run", "run": run_id, "problems": list(exc.problems)}
            self._recorder.security_event("settings_mismatch", details)
            failed = infra_result(plan, str(exc), (time.monotonic() - began) * 1000)
            return dataclasses.replace(failed, settings_mismatch=exc.problems)
        except InfraError as exc:
            return infra_result(plan, str(exc), (time.monotonic() - began) * 1000)
        except Exception as exc:  # a bug of ours: the run still gets a result and its record
            log.exception("run %s: the backend failed", run_id)
            message = f"internal error in the backend ({type(exc).__name__}: {exc})"
            return infra_result(plan, message, (time.monotonic() - began) * 1000)

    def _connections(self, run_id: str, gate: Gate | None) -> list[dict[str, Any]]:
        """Close the run's proxy socket; record and return what the program connected to."""
        if gate is None:
            return []
        connections = self._gates.close(gate)
        self._recorder.connections(run_id, connections)
        return connections

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this Sandbox is closed; open a new one to run code")

    def close(self) -> None:
        """Wait for pending Semgrep scans, close the backend and the assessor, and the audit
        log if this sandbox opened it (a final checkpoint). Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self.sessions.close()
        self._late.close()
        self.backend.close()
        self._gates.shutdown()
        if self._owns_assessor:
            self.assessor.close()
        if self._owns_audit:
            self.audit.close()



def default_tier(policy: Policy) -> ContainerBackend:
    """The backend that makes sandboxes under `policy` on this machine, without a pool: its
    `backend` key, `auto` coming to the OCI tier where it can run, else Docker
    (backends/oci/prerequisites.py)."""
    from hazmat.backends.oci.prerequisites import choice

    if choice(policy.backend).tier == "oci":
        from hazmat.backends.oci.driver import OciBackend

        return OciBackend()
    from hazmat.backends.docker.driver import DockerBackend

    return DockerBackend()


def _default_backend(policy: Policy, pool: bool) -> Backend:
    tier = default_tier(policy)
    if not pool or policy.pool.size == 0 or policy.pool.max_containers == 0:
        return tier
    from hazmat.backends.pool.warm import PoolBackend

    return PoolBackend(tier, policy.pool)


def _refused_note(connections: Sequence[Mapping[str, Any]]) -> list[str]:
    refused = sum(not c["allowed"] for c in connections)
    return [f"the allowlist proxy refused {refused} connection(s) (connections)"] if refused else []


def _plan(request: ExecutionRequest, checked: Checked, backend: Backend) -> tuple[Plan, list[str]]:
    """The limits, runtime and image this run really gets (limits clamped to the host)."""
    try:
        applied = checked.limits.clamped(backend.resources())
    except InfraError:
        applied = checked.limits  # the run itself will report the engine's state
    if backend.one_budget:  # a session's container: one budget, builds included
        applied = applied.replace(compile_memory_mb=0)
    plan = Plan(request, applied, checked.runtime, checked.image, checked.network)
    return plan, clamp_notes(checked.limits, applied)


def _applied(plan: Plan, allow: tuple[str, ...]) -> Applied:
    return Applied(plan.limits, plan.runtime, plan.image, allow)
