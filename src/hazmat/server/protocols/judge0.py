"""Judge0 CE's API (1.13.1): what online judges, course tools, IDE plugins and the `judge0`
SDK call (docs/protocols.md).

    POST /judge0/submissions[?base64_encoded=&wait=&fields=]   {source_code, language_id, ...}
    GET  /judge0/submissions/<token>[?base64_encoded=&fields=]
    POST /judge0/submissions/batch    {submissions: [...]}      GET ...?tokens=a,b
    GET  /judge0/languages, /languages/<id>, /statuses, /about, /config_info

The key is `X-Auth-Token` (or `Authorization: Bearer`). A submission is queued (status 1, In
Queue) and run in the background as `/v1/runs` runs (its tenant, its level, the CPU clock),
at most the key's `concurrent` at once, first come first served; `wait=true` waits for it up
to WAIT_S. Its token is its tenant's alone: another tenant's is the same 404 as none. Finished
submissions are kept KEEP_S, at most KEEP of them (the oldest go first). The answer's fields
are Judge0's, and only those (its SDK refuses any it does not model).
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hazmat._exceptions import HazmatError, InputError, QuotaExceeded
from hazmat.json_input import loads
from hazmat.models import ExecutionRequest, ExecutionResult
from hazmat.server.protocols import Overloaded, Service, Turns, key_of
from hazmat.server.protocols.judge0_submissions import (
    ALL_FIELDS,
    DEFAULT_CPU_S,
    DEFAULT_FIELDS,
    NAME,
    STATUSES,
    Invalid,
    Submission,
    languages_by_id,
    parse,
    shown,
    verdict,
)
from hazmat.service.tenant_keys import Key

__all__ = ["PREFIX", "routes"]

log = logging.getLogger(__name__)

PREFIX = "/judge0"
API_VERSION = "1.13.1"  # the Judge0 CE API spoken here (the SDK maps its language aliases by it)
MAX_QUEUE = 1024  # submissions in queue or running, every tenant's; past it a 503
TENANT_QUEUE = 256  # ... and one tenant's
MAX_BATCH = 20  # Judge0's max_submission_batch_size
KEEP = 10_000  # finished submissions kept, every tenant's
KEEP_S = 3600.0
WAIT_S = 60.0  # how long wait=true waits before answering with the status as it is


def routes(service: Service) -> list[Route]:
    protocol, at = Judge0(service), PREFIX
    return [
        Route(f"{at}/about", protocol.about, methods=["GET"]),
        Route(f"{at}/config_info", protocol.config_info, methods=["GET"]),
        Route(f"{at}/statuses", protocol.statuses, methods=["GET"]),
        Route(f"{at}/languages", protocol.languages, methods=["GET"]),
        Route(f"{at}/languages/{{id}}", protocol.language, methods=["GET"]),
        Route(f"{at}/submissions/batch", protocol.create_batch, methods=["POST"]),
        Route(f"{at}/submissions/batch", protocol.show_batch, methods=["GET"]),
        Route(f"{at}/submissions", protocol.create, methods=["POST"]),
        Route(f"{at}/submissions/{{token}}", protocol.show, methods=["GET"]),
    ]


class Judge0:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.turns = Turns(most_waiting=MAX_QUEUE)
        self.submissions: dict[str, Submission] = {}
        self.finished: collections.deque[Submission] = collections.deque()
        self.pending: collections.Counter[str] = collections.Counter()  # queued, by tenant

    # -- what a client reads before it submits --------------------------------------------

    async def about(self, request: Request) -> Response:
        from hazmat import __version__

        return self._answer(
            {"version": API_VERSION, "homepage": None, "source_code": None,
             "maintainer": None, "hazmat": __version__}
        )

    async def config_info(self, request: Request) -> Response:
        key = self._key_or_refusal(request)
        if isinstance(key, Response):
            return key
        return self._answer(config(self.service, key))

    async def statuses(self, request: Request) -> Response:
        return self._answer([{"id": i, "description": d} for i, d in STATUSES.items()])

    async def languages(self, request: Request) -> Response:
        return self._answer(
            [{"id": int(i), "name": lang.title} for i, lang in languages_by_id().items()]
        )

    async def language(self, request: Request) -> Response:
        found = languages_by_id().get(request.path_params["id"])
        if found is None:
            return self._refused(404, {"error": "language not found"})
        return self._answer(
            {"id": int(request.path_params["id"]), "name": found.title, "is_archived": False,
             "source_file": found.source_name, "compile_cmd": None, "run_cmd": None}
        )

    # -- submissions ---------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        try:
            key = self._key(request)
            b64, wait = _flag(request, "base64_encoded"), _flag(request, "wait")
            names = _fields(request)  # each query checked before anything is queued
            data = _object(await self.service.read_body(request, key))
            submission = self._submit(data, key, b64)
        except Invalid as exc:
            return self._refused(422, {exc.name: [str(exc)]})
        except (Overloaded, QuotaExceeded) as exc:
            return self._refused(503, {"error": f"hazmat is busy: {exc}"})
        except HazmatError as exc:
            return self._refused(exc.http_status, {"error": str(exc)})
        if not wait:
            return self._answer({"token": submission.token}, 201)
        with anyio.move_on_after(WAIT_S):
            await submission.done.wait()
        try:
            return self._answer(shown(submission, names, b64), 201)
        except HazmatError as exc:  # output that is not UTF-8, asked for as text
            return self._refused(exc.http_status, {"error": str(exc)})

    async def show(self, request: Request) -> Response:
        try:
            key = self._key(request)
        except HazmatError as exc:
            return self._refused(exc.http_status, {"error": str(exc)})
        found = self._find(request.path_params["token"], key)
        if found is None:
            return self._refused(404, {"error": "submission not found"})
        return self._shown(request, found, 200)

    async def create_batch(self, request: Request) -> Response:
        try:
            key = self._key(request)
            b64 = _flag(request, "base64_encoded")
            data = _object(await self.service.read_body(request, key))
            items = data.get("submissions")
            if not isinstance(items, list) or not items:
                raise InputError("submissions must be a non-empty array")
            if len(items) > MAX_BATCH:
                raise InputError(
                    f"number of submissions in a batch should be less than or equal to {MAX_BATCH}"
                )
        except HazmatError as exc:
            return self._refused(exc.http_status, {"error": str(exc)})
        answers: list[dict[str, Any]] = []
        for item in items:
            try:
                answers.append({"token": self._submit(_object_of(item), key, b64).token})
            except Invalid as exc:
                answers.append({exc.name: [str(exc)]})
            except (Overloaded, QuotaExceeded) as exc:
                answers.append({"error": [f"hazmat is busy: {exc}"]})
            except HazmatError as exc:
                answers.append({"error": [str(exc)]})
        return self._answer(answers, 201)

    async def show_batch(self, request: Request) -> Response:
        try:
            key = self._key(request)
            tokens = request.query_params.get("tokens", "").split(",")
            if not any(tokens) or len(tokens) > MAX_BATCH:
                raise InputError(f"tokens: from 1 to {MAX_BATCH} tokens, comma-separated")
            b64, names = _flag(request, "base64_encoded"), _fields(request)
            shown = [self._fields_of(self._find(t, key), names, b64) for t in tokens]
        except HazmatError as exc:
            return self._refused(exc.http_status, {"error": str(exc)})
        return self._answer({"submissions": shown})

    def _submit(self, data: Mapping[str, Any], key: Key, b64: bool) -> Submission:
        """A submission queued, its run started in the background."""
        queued = sum(self.pending.values())
        if queued >= MAX_QUEUE or self.pending[key.tenant] >= TENANT_QUEUE:
            raise Overloaded(
                f"{queued} submissions are queued, {self.pending[key.tenant]} of them this "
                f"tenant's (at most {MAX_QUEUE}, {TENANT_QUEUE} of one tenant)"
            )
        submission = parse(data, key, b64, self.service)
        options = dict(submission.asked.options)
        prepared = self.service.prepare(submission.asked.code, submission.language.name, options)
        self.pending[key.tenant] += 1
        self.submissions[submission.token] = submission
        self.service.spawn(lambda: self._run(submission, key, prepared))
        return submission

    async def _run(self, submission: Submission, key: Key, prepared: ExecutionRequest) -> None:
        try:
            async with self.turns.turn(key, math.inf):
                submission.status = 2
                result = await self._admitted(key, prepared)
            submission.result = result
            submission.status, submission.message = verdict(result, submission)
        except (HazmatError, Overloaded) as exc:
            submission.status, submission.message = 13, str(exc)
        except Exception as exc:  # a background task must end its submission, never the service
            log.exception("judge0 submission %s", submission.token)
            submission.status, submission.message = 13, f"internal error ({type(exc).__name__})"
        finally:
            submission.finished_at = datetime.now(UTC)
            self.pending[key.tenant] -= 1
            self._keep(submission)
            submission.done.set()

    async def _admitted(self, key: Key, prepared: ExecutionRequest) -> ExecutionResult:
        """The run, once the tenant's per-minute quota has room (queued, it waits for it)."""
        while True:
            try:
                with self.service.quotas.admit(key.tenant, key.quotas):
                    return await self.service.run_in(prepared, None)
            except QuotaExceeded as exc:
                await anyio.sleep(exc.retry_after_s)

    def _keep(self, submission: Submission) -> None:
        """Keep the finished ones KEEP_S, at most KEEP: the oldest go first."""
        self.finished.append(submission)
        now = datetime.now(UTC)
        while self.finished and (
            len(self.finished) > KEEP
            or (now - self.finished[0].created_at).total_seconds() > KEEP_S
        ):
            self.submissions.pop(self.finished.popleft().token, None)

    def _find(self, token: str, key: Key) -> Submission | None:
        found = self.submissions.get(token)
        return found if found is not None and found.tenant == key.tenant else None

    def _shown(self, request: Request, submission: Submission, status: int) -> Response:
        try:
            shown = self._fields_of(submission, _fields(request), _flag(request, "base64_encoded"))
        except HazmatError as exc:
            return self._refused(exc.http_status, {"error": str(exc)})
        return self._answer(shown, status)

    def _fields_of(
        self, submission: Submission | None, names: tuple[str, ...], b64: bool
    ) -> dict[str, Any] | None:
        return None if submission is None else shown(submission, names, b64)

    # -- keys and answers ----------------------------------------------------------------

    def _key(self, request: Request) -> Key:
        presented = request.headers.get("x-auth-token")
        return key_of(request, self.service.keys, presented, "send it in X-Auth-Token")

    def _key_or_refusal(self, request: Request) -> Key | Response:
        try:
            return self._key(request)
        except HazmatError as exc:
            return self._refused(exc.http_status, {"error": str(exc)})

    def _answer(self, body: Any, status: int = 200) -> Response:
        self.service.counted(NAME, status)
        return JSONResponse(body, status_code=status)

    def _refused(self, status: int, body: dict[str, Any]) -> Response:
        self.service.counted(NAME, status)
        return JSONResponse(body, status_code=status)


def config(service: Service, key: Key) -> dict[str, Any]:
    """`/config_info` at `key`'s level: every field the SDK models, hazmat's where it has one."""
    limits = service.policy.settings(key.trust).limits
    return {
        "maintenance_mode": False,
        "enable_wait_result": True,
        "enable_compiler_options": True,
        "allowed_languages_for_compile_options": ["C", "C++"],
        "enable_command_line_arguments": True,
        "enable_submission_delete": False,
        "enable_callbacks": False,
        "callbacks_max_tries": 0,
        "callbacks_timeout": 0.0,
        "enable_additional_files": True,
        "max_queue_size": MAX_QUEUE,
        "cpu_time_limit": min(DEFAULT_CPU_S, limits.timeout_s),
        "max_cpu_time_limit": float(limits.timeout_s),
        "cpu_extra_time": 0.0,
        "max_cpu_extra_time": 0.0,
        "wall_time_limit": 2 * min(DEFAULT_CPU_S, limits.timeout_s),
        "max_wall_time_limit": 2 * float(limits.timeout_s),
        "memory_limit": limits.memory_mb * 1024,
        "max_memory_limit": limits.memory_mb * 1024,
        "stack_limit": limits.memory_mb * 1024,
        "max_stack_limit": limits.memory_mb * 1024,
        "max_processes_and_or_threads": limits.pids,
        "max_max_processes_and_or_threads": limits.pids,
        "enable_per_process_and_thread_time_limit": False,
        "allow_enable_per_process_and_thread_time_limit": False,
        "enable_per_process_and_thread_memory_limit": False,
        "allow_enable_per_process_and_thread_memory_limit": False,
        "max_file_size": limits.output_bytes // 1024,
        "max_max_file_size": limits.output_bytes // 1024,
        "number_of_runs": 1,
        "max_number_of_runs": 1,
        "redirect_stderr_to_stdout": False,
        "max_extract_size": limits.max_file_bytes * limits.max_files // 1024,
        "enable_batched_submissions": True,
        "max_submission_batch_size": MAX_BATCH,
        "submission_cache_duration": 0.0,
        "use_docs_as_homepage": False,
        "allow_enable_network": False,
        "enable_network": False,
    }


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false").lower()
    if value not in ("true", "false"):
        raise InputError(f"{name} must be true or false")
    return value == "true"


def _fields(request: Request) -> tuple[str, ...]:
    asked = request.query_params.get("fields")
    if asked is None:
        return DEFAULT_FIELDS
    if asked.strip() == "*":
        return ALL_FIELDS
    names = tuple(n.strip() for n in asked.split(",") if n.strip())
    unknown = [n for n in names if n not in ALL_FIELDS]
    if unknown:
        raise InputError(f"invalid fields: {', '.join(unknown)}")
    return names


def _object(body: bytes) -> dict[str, Any]:
    return _object_of(loads(body, "the request body"))


def _object_of(data: object) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InputError(f"a submission must be a JSON object, not {type(data).__name__}")
    return data


