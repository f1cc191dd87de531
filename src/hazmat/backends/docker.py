"""Containers for single runs: started (cold, or ahead of time by the pool), used once, removed.

Never `containers.run()` (it pulls silently): create, attach, start, wait and remove are
explicit, and removal happens in `finally`. A container is started before it has a job: the
agent (backends/agent.py) says when it is ready, the settings check (backends/verify.py)
compares what the engine applied with what was asked, and only then may it take its one job.
Containers carry the `hazmat` label, their owner (backends/owners.py), so that `reap()` can
remove what a killed process left behind, and the program's uid (backends/uids.py).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import docker.errors
import docker.types
import requests.exceptions

from hazmat._exceptions import InfraError, SettingsMismatch
from hazmat.backends.agent import (
    built_marker,
    end_marker,
    file_marker,
    files_cap,
    job_header,
    parse_files,
)
from hazmat.backends.base import Backend, Job, RunReport, Spec
from hazmat.backends.cgroup import Cgroup, Monitor, Sample
from hazmat.backends.cores import Cores, cores_folder
from hazmat.backends.engine import Engine, map_docker_errors
from hazmat.backends.hardening import container_config
from hazmat.backends.measure import Measure
from hazmat.backends.owners import LABEL, abandoned, owner_labels
from hazmat.backends.runners import READY_LINE
from hazmat.backends.seccomp import MISSING_NOTE, SeccompProfile, UnsafeProfile, load_profile
from hazmat.backends.session import SessionBackend
from hazmat.backends.started import REAP_GRACE_S, Started
from hazmat.backends.stream import Capture, Exchange, NotReady, pump, wait_ready
from hazmat.backends.uids import Uids
from hazmat.backends.verify import check, expected, host_pids_limit
from hazmat.displays import DISPLAY_FILE
from hazmat.policy import HostResources, Runtime

__all__ = [
    "LABEL",
    "DockerBackend",
    "Started",
    "abandoned",
    "container_config",
    "host_pids_limit",
]

log = logging.getLogger(__name__)
_MiB = 1024 * 1024
# How long a new container may take to say it is ready (runsc starting node is the slowest).
READY_TIMEOUT_S = 60.0
# How long a bench's test may take to be unpacked (the agent first clears what the last test
# left): past it, the test moves to a new container (backends/bench.py)
UNPACK_S = 120.0
# How many uids to try before giving up on a container (each try loses only to another
# live container holding the same uid: one in 65536 per live container)
UID_TRIES = 8


class DockerBackend(Backend):
    """Runs each job in a container nobody used before, on a local or remote Docker engine.

    `execute` is the cold path: start a container, run the job, remove it. The warm pool
    (backends/pool.py) calls `start` ahead of time and `run` / `discard` later.
    """

    def __init__(self, engine: Engine | None = None, seccomp: SeccompProfile | None = None) -> None:
        self.engine = engine or Engine()
        try:
            self.seccomp = seccomp or load_profile()
        except UnsafeProfile as exc:
            raise InfraError(str(exc)) from None
        self._reaped = False
        self._token = secrets.token_hex(8)  # labels this backend's containers
        self._started_any = False  # close() looks for what is left only if it started some
        self.uids = Uids()
        self._lock = threading.Lock()
        # job nonce -> (the thread that prepared it, its container on the way)
        self._prepared: dict[str, tuple[int, Future[Started]]] = {}
        self._preparer: ThreadPoolExecutor | None = None
        self._cores: Cores | None = None

    def resources(self) -> HostResources:
        return self.engine.info().resources

    def prepare(self, job: Job) -> None:
        """Start the job's container in the background while the pipeline assesses the job
        and records it; the job itself goes in only through `execute`."""
        with self._lock:
            if self._preparer is None:
                self._preparer = ThreadPoolExecutor(2, thread_name_prefix="hazmat-prepare")
            future = self._preparer.submit(self.start, job.spec, lifetime_s=job.wall_s)
            self._prepared[job.program.nonce] = (threading.get_ident(), future)

    def execute(self, job: Job) -> RunReport:
        with self._lock:
            prepared = self._prepared.pop(job.program.nonce, None)
        if prepared is not None:
            started = prepared[1].result()  # its start's own error, if it failed
        else:
            started = self.start(job.spec, lifetime_s=job.wall_s)
        try:
            return self.run(started, job)
        finally:
            self.discard(started)

    def settle(self) -> None:
        """Remove the containers this thread prepared for jobs that did not run (blocked)."""
        me = threading.get_ident()
        with self._lock:
            mine = [k for k, (owner, _) in self._prepared.items() if owner == me]
            unused = [self._prepared.pop(k)[1] for k in mine]
        for future in unused:
            future.add_done_callback(self._discard_prepared)

    def _discard_prepared(self, future: Future[Started]) -> None:
        if future.exception() is None:
            with contextlib.suppress(InfraError):
                self.discard(future.result())

    def config(self, spec: Spec, labels: dict[str, str], uid: int) -> dict[str, Any]:
        """The create_container arguments (a method, so a test can make a container differ)."""
        return container_config(spec, labels, self.engine.api.api_version, self.seccomp, uid)

    def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> Started:
        """Create, attach, start; wait until the agent is ready; check the settings.

        Raises `SettingsMismatch` (after removing the container) when the engine's settings
        differ from the policy's, and `InfraError` when the container does not get ready.
        """
        api = self.engine.api
        self.engine.require_runtime(spec.runtime)
        if not self._reaped:
            self._reaped = True
            try:
                self.reap()
            except InfraError as exc:  # best effort: leftovers must not stop new runs
                log.warning("could not look for abandoned containers: %s", exc)
        expires = time.time() + lifetime_s + REAP_GRACE_S
        token = secrets.token_hex(8)  # finds the container if create answers too late to say
        labels = {**self._labels(spec, expires, pooled), f"{LABEL}.start": token}
        cid: str | None = None
        uid: int | None = None
        attached: Any = None
        try:
            cid, uid = self._create(spec, labels)
            with map_docker_errors(spec.image):
                attached = api.attach_socket(
                    cid, {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
                )
                api.start(cid)
            sock = _raw_socket(attached)
            try:
                wait_ready(sock, READY_LINE, READY_TIMEOUT_S)
            except NotReady as exc:
                raise InfraError(f"container {cid[:12]} did not get ready: {exc}") from None
            with map_docker_errors(spec.image):
                inspected = api.inspect_container(cid)
            problems = check(inspected, expected(spec, uid, self.seccomp.security_opt))
            if problems:
                raise SettingsMismatch(
                    f"container {cid[:12]} differs from the policy: " + "; ".join(problems),
                    problems,
                )
            cgroup = Cgroup.of_pid(int(inspected["State"].get("Pid") or 0))
            return Started(spec, cid, uid, attached, sock, time.monotonic(), expires, cgroup)
        except BaseException:
            if attached is not None:
                _close_attached(attached)
            if cid is not None:
                with contextlib.suppress(InfraError):
                    self._remove(cid)
            else:  # create may have failed on our side only (a timeout under load)
                self._remove_start(token)
            if uid is not None:
                self.uids.release(uid)
            raise

    def _create(self, spec: Spec, labels: dict[str, str]) -> tuple[str, int]:
        """Create the container with a uid no other live container holds (backends/uids.py)."""
        api = self.engine.api
        for _ in range(UID_TRIES):
            uid = self.uids.take()
            try:
                with map_docker_errors(spec.image):
                    config = self.config(spec, {**labels, f"{LABEL}.uid": str(uid)}, uid)
                    cid = str(api.create_container(**config)["Id"])
                    try:
                        same = api.containers(
                            all=True, quiet=True, filters={"label": f"{LABEL}.uid={uid}"}
                        )
                    except BaseException:
                        with contextlib.suppress(InfraError):
                            self._remove(cid)
                        raise
                if all(c["Id"] == cid for c in same):
                    return cid, uid
                self._remove(cid)
            except BaseException:
                self.uids.release(uid)
                raise
            self.uids.release(uid)
        raise InfraError(f"no free sandbox uid after {UID_TRIES} tries")

    def run(self, started: Started, job: Job) -> RunReport:
        """Give `started` its one job and report what happened. The caller discards it."""
        header, stdin = job_header(job.program), job.program.stdin
        if not job.language.build:
            return self._run(started, job, header + stdin)[0]
        return self._run(started, job, header, after_build=b"go\n" + stdin)[0]

    def run_kept(
        self, started: Started, job: Job, data: bytes, pending: bytes, ready: bool = False
    ) -> tuple[RunReport, bytes | None]:
        """One call of a session (backends/session.py): send `data` without closing the
        stream, read until this call's end marker. Returns the report and the bytes read past
        it (the start of the next frame) for the next call, or None when the stream did not
        reach the end marker (the container is gone or was killed: running out of time or
        output kills it, as for a single run). With `ready` (a bench's test) the agent says
        when the test is unpacked and waits for the host's go: the program's time starts
        there, and its unpacking has a budget of its own (`UNPACK_S`)."""
        if ready:
            return self._run(started, job, data, True, pending, b"go\n", prelude=True)
        return self._run(started, job, data, keep=True, pending=pending)

    def cores(self) -> Cores:
        """The machine's cores, for the programs measured on the CPU clock (backends/cores.py);
        the engine's count, shared with this user's other processes when the engine is this
        machine's."""
        with self._lock:
            if self._cores is None:
                folder = cores_folder() if self.engine.local else None
                self._cores = Cores(self.resources().cpus, folder)
            return self._cores

    def waiting_for_core(self) -> int:
        with self._lock:
            cores = self._cores
        return cores.waiting if cores is not None else 0

    def _run(
        self,
        started: Started,
        job: Job,
        data: bytes,
        keep: bool = False,
        pending: bytes = b"",
        after_build: bytes | None = None,
        *,
        prelude: bool = False,
    ) -> tuple[RunReport, bytes | None]:
        monitor = Monitor(started.cgroup) if started.cgroup else None
        limit = job.cpu_limit
        measure = Measure(limit, started.cgroup, self.cores() if limit else None)
        killer = threading.Thread(target=self._kill, args=(started.cid,), daemon=True)

        def stop() -> None:
            if monitor is not None:
                monitor.take()  # before the kill: the cgroup goes with the container
            killer.start()

        try:
            if not job.language.build and not prelude:
                measure.begin()  # nothing comes first: the program starts with the job
            capture = self._pump(
                started, job, stop, data, keep, pending, after_build, prelude, measure
            )
        finally:
            measure.finish()
            figures = monitor.stop() if monitor is not None else None
            # Tell the engine nobody reads any more, so a pending kill need not wait for us.
            if not keep or killer.ident is not None:
                with contextlib.suppress(OSError):
                    started.sock.shutdown(socket.SHUT_RDWR)
        if killer.is_alive():
            killer.join(timeout=30)
        exit_code: int | None = capture.end_status
        engine_oom = False
        if exit_code is None or capture.timed_out or capture.output_exceeded:
            exit_code, engine_oom = self._final_state(started, job)
        base = monitor.baseline if monitor is not None else None
        files, notes = self._files(capture, job)
        displays = files.pop(DISPLAY_FILE, None)
        if capture.cancelled and job.watch is not None:
            notes.append(f"cancelled: {job.watch.reason}")
        notes.extend([measure.note] if measure.note else [])
        cpu_ms = (figures.cpu_ns - base.cpu_ns) / 1e6 if figures and base else None
        if measure.final is not None:
            cpu_ms = measure.final.cpu_s * 1000
        over = measure.over_limit() and not capture.timed_out and capture.end_status is not None
        report = RunReport(
            exit_code=exit_code,
            stdout=bytes(capture.stdout),
            stderr=bytes(capture.stderr),
            duration_ms=capture.duration_ms,
            program_ms=capture.program_ms,
            container_id=started.cid,
            timed_out=capture.timed_out or over,
            stopped_by="cpu" if over else capture.stopped_by,
            compile_timed_out=capture.compile_timed_out,
            build_status=capture.build_status,
            build_ms=capture.build_ms,
            oom_killed=engine_oom or _oom_since(base, figures),
            output_exceeded=capture.output_exceeded,
            cancelled=capture.cancelled,
            files=files,
            displays=displays,
            notes=tuple(notes),
            peak_memory_bytes=figures.memory_peak if figures else None,
            cpu_time_ms=cpu_ms,
            pids_refused=figures.pids_refused - base.pids_refused if figures and base else 0,
            peak_tasks=figures.pids_peak if figures and figures.pids_peak else None,
            held_after_build=capture.held_after_build,
        )
        kept = capture.end_status is not None and not capture.timed_out
        return report, capture.rest if kept and not capture.output_exceeded else None

    def _pump(  # noqa: PLR0917 (one call's parts, from _run alone)
        self,
        started: Started,
        job: Job,
        stop: Callable[[], None],
        data: bytes,
        keep: bool,
        pending: bytes,
        after_build: bytes | None,
        prelude: bool,
        measure: Measure,
    ) -> Capture:
        """Send the job, read the output until the agent's end marker, within the limits.
        `prelude`: a bench's test, whose unpacking comes first (`UNPACK_S`)."""
        program = job.program

        def on_built() -> int | None:
            in_use = self.program_memory(started, job)
            if in_use is None:
                measure.begin()
            return in_use

        limit = measure.limit
        exchange = Exchange(
            data,
            timeout_s=limit.cap_s + 1.0 if measure.active and limit else job.limits.timeout_s,
            output_cap=job.limits.output_bytes,
            end=end_marker(program.nonce),
            marker=file_marker(program.nonce) if program.wanted else None,
            files_cap=files_cap(job.limits, len(program.want), program.own_cap),
            built=built_marker(program.nonce) if job.language.build or prelude else None,
            compile_s=UNPACK_S if prelude else job.limits.compile_timeout_s,
            keep_open=keep,
            pending=pending,
            after_build=after_build,
            on_built=on_built,
            check=measure.check if measure.active else None,
            check_s=limit.check_s if limit else 0.05,
        )
        return pump(started.sock, exchange, stop, job.watch)

    def program_memory(self, started: Started, job: Job) -> int | None:
        """Between the build and the program: the container started with the build step's
        memory budget; set the program's own. Returns None, or the bytes the build left in
        use when they are more than the program may have (the kernel could not reclaim them)."""
        spec = job.spec
        if spec.start_memory_mb == spec.memory_mb:
            return None
        limit = spec.memory_mb * _MiB
        if started.cgroup is not None:
            try:
                return started.cgroup.limit_memory(limit)
            except OSError as exc:  # not root here: the engine can, for runc
                log.debug("cannot write the container's memory limit: %s", exc)
        if job.runtime is Runtime.RUNSC:
            raise InfraError(
                "the build step's memory budget (compile_memory_mb) needs this host to write "
                "the engine's cgroups under runsc, and it cannot: set compile_memory_mb to 0"
            )
        with map_docker_errors(job.image):
            self.engine.api.update_container(started.cid, mem_limit=limit, memswap_limit=limit)
        return None

    def _files(self, capture: Capture, job: Job) -> tuple[dict[str, bytes], list[str]]:
        """The output files the agent sent, and notes on those it could not."""
        program, limits = job.program, job.limits
        files, notes = (
            parse_files(
                capture.files_blob,
                program.wanted,
                limits.max_file_bytes,
                limits.max_download_bytes,
                program.own_cap,
            )
            if program.wanted
            else ({}, [])
        )
        if not self.seccomp.text and job.runtime is Runtime.RUNC:
            notes.append(MISSING_NOTE)
        if capture.files_exceeded:
            notes.append("output files section exceeded its cap; files dropped")
            files = {}
        return files, notes

    def _final_state(self, started: Started, job: Job) -> tuple[int | None, bool]:
        """Exit status and OOM flag from the engine, once the container has stopped."""
        api = self.engine.api
        with map_docker_errors(job.image):
            try:
                status = api.wait(started.cid, timeout=30)
            except requests.exceptions.ReadTimeout:
                # The stream ended but the container did not: stop it ourselves.
                self._kill(started.cid)
                status = api.wait(started.cid, timeout=30)
            state = api.inspect_container(started.cid)["State"]
        code = int(status.get("StatusCode", state.get("ExitCode", -1)))
        return code, bool(state.get("OOMKilled"))

    def discard(self, started: Started) -> None:
        """Close the connection and remove the container (used or not)."""
        with contextlib.suppress(OSError):
            _close_attached(started.attached)
        try:
            self._remove(started.cid)
        finally:
            self.uids.release(started.uid)

    def _labels(self, spec: Spec, expires: float, pooled: bool) -> dict[str, str]:
        self._started_any = True
        return {
            **owner_labels(),
            f"{LABEL}.backend": self._token,  # this backend's: close() removes what is left
            f"{LABEL}.deadline": f"{expires:.0f}",
            f"{LABEL}.language": spec.language,
            f"{LABEL}.pooled": "1" if pooled else "0",
        }

    def _kill(self, cid: str) -> None:
        # already stopped, or gone
        with contextlib.suppress(docker.errors.APIError, requests.exceptions.RequestException):
            self.engine.api.kill(cid)

    def _remove(self, cid: str, engine: Engine | None = None) -> None:
        try:
            # v: with its anonymous volumes (an image's VOLUME would otherwise be left behind)
            (engine or self.engine).api.remove_container(cid, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise InfraError(f"could not remove container {cid[:12]}: {exc}") from exc

    def _remove_start(self, token: str) -> None:
        with contextlib.suppress(InfraError):
            with map_docker_errors():
                found = self.engine.api.containers(
                    all=True, filters={"label": f"{LABEL}.start={token}"}
                )
            for c in found:
                self._remove(c["Id"])

    def reap(self) -> list[str]:
        """Remove hazmat containers that are abandoned (see `abandoned`); a container that
        cannot be removed is skipped, not an error."""
        with map_docker_errors():
            found = self.engine.api.containers(all=True, filters={"label": LABEL})
        return self._remove_each([c for c in found if abandoned(c.get("Labels") or {})])

    def _remove_each(self, found: list[dict[str, Any]], engine: Engine | None = None) -> list[str]:
        """Remove each container; one that cannot be removed is logged and skipped."""
        removed = []
        for c in found:
            try:
                self._remove(c["Id"], engine)
            except InfraError as exc:
                log.warning("%s", exc)
                continue
            removed.append(str(c["Id"]))
        return removed

    def runtimes(self) -> set[str]:
        return self.engine.runtimes_now() & {runtime.value for runtime in Runtime}

    def remove_leftovers(self, before: float) -> int:
        """Through the engine's short-timeout client: a worker calls this from its heartbeat,
        which a slow engine just back must not hold up."""
        probe = self.engine.probe()
        return self._remove_mine(probe, lambda c: int(c.get("Created", before)) < int(before))

    def _remove_mine(self, engine: Engine, which: Callable[[dict[str, Any]], bool]) -> int:
        """Remove the containers this backend started (its own label) that `which` picks;
        how many. An engine that does not answer is not an error: a later hazmat process's
        reaper removes them (their owner is gone by then)."""
        mine = f"{LABEL}.backend={self._token}"
        try:
            with map_docker_errors():
                found = engine.api.containers(all=True, filters={"label": mine})
        except InfraError as exc:
            log.warning("could not look for this backend's containers: %s", exc)
            return 0
        return len(self._remove_each([c for c in found if which(c)], engine))

    keeps_containers = True

    def keep(self, spec: Spec, lifetime_s: float) -> SessionBackend:
        return SessionBackend(self, spec, lifetime_s)

    def close(self) -> None:
        """Remove containers prepared for jobs that never came, then close the connection."""
        self._drop_prepared()
        # and any container of this backend's still there: one whose start or removal failed
        # while its engine was away, which nothing holds any more
        if self._started_any:
            self._remove_mine(self.engine.probe(), lambda c: True)
        self.engine.close()

    def _drop_prepared(self) -> None:
        """Discard the containers prepared for jobs that never came (once they are up)."""
        with self._lock:
            unused = [future for _, future in self._prepared.values()]
            self._prepared.clear()
            preparer, self._preparer = self._preparer, None
        for future in unused:
            future.add_done_callback(self._discard_prepared)
        if preparer is not None:
            preparer.shutdown(wait=True)


def _oom_since(base: Sample | None, now: Sample | None) -> bool:
    return base is not None and now is not None and now.oom_kills > base.oom_kills


def _close_attached(attached: Any) -> None:
    """Close the attach connection: the HTTP response docker-py keeps on the socket wrapper
    first (it owns the reader over the socket), then the wrapper and the socket."""
    response = getattr(attached, "_response", None)
    if response is not None:
        response.close()
    attached.close()
    raw = getattr(attached, "_sock", None)
    if raw is not None:
        raw.close()


def _raw_socket(sock: Any) -> socket.socket:
    """docker-py hands back a SocketIO for unix sockets; the pump needs the socket itself."""
    raw = getattr(sock, "_sock", sock)
    if not isinstance(raw, socket.socket):
        raise InfraError(f"unsupported attach socket type {type(raw).__name__}")
    return raw
