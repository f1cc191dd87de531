"""Sandboxes for single runs, whichever tier makes them: started (cold, or ahead of time by the
pool), given one job, removed.

`ContainerBackend` is the run itself, the same for both tiers: it sends the job to the agent
(backends/agent/single.py), enforces time and output from the host (backends/container/stream.py),
measures the program's CPU time and memory from its cgroup, and reads the files the agent sends
back. What makes, checks, kills and removes a sandbox is its `Driver`: the Docker engine's
(backends/docker/driver.py) or runc's and runsc's own (backends/oci/driver.py). Neither driver knows
the other; a test that needs a sandbox to misbehave gives a driver a part of its own (its
`config=` or `bundle=` function), never an override of a private method.

A driver's `start` returns only a sandbox whose agent said it is ready and whose settings were
read back and found to be the policy's (`SettingsMismatch` otherwise, the sandbox removed).
Every sandbox carries its owner's labels (backends/container/owners.py), so that `reap()` can remove
what a killed process left behind.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from hazmat._exceptions import InfraError
from hazmat.backends.agent.session_agent import NEXT, STOP_WORDS
from hazmat.backends.agent.single import (
    built_marker,
    end_marker,
    file_marker,
    files_cap,
    job_header,
    parse_files,
)
from hazmat.backends.base import Backend, Job, RunReport, Spec
from hazmat.backends.container.cgroup import Monitor, Sample
from hazmat.backends.container.cores import Cores, cores_folder
from hazmat.backends.container.measure import Measure
from hazmat.backends.container.memory import (
    MEMORY_STOP,
    SessionWatch,
    held_beside_runsc,
    over_memory,
    program_peak,
)
from hazmat.backends.container.owners import LABEL, owner_labels
from hazmat.backends.container.seccomp import MISSING_NOTE, SeccompProfile
from hazmat.backends.container.started import REAP_GRACE_S, Started
from hazmat.backends.container.stream import Capture, Exchange, pump
from hazmat.backends.kept.session import SessionBackend
from hazmat.displays import DISPLAY_FILE
from hazmat.policy import HostResources, Runtime
from hazmat.watch import Watch

__all__ = ["READY_TIMEOUT_S", "UNPACK_S", "ContainerBackend", "Driver"]

log = logging.getLogger(__name__)
# How long a new sandbox may take to say it is ready (runsc starting node is the slowest).
READY_TIMEOUT_S = 60.0
# How long a kept build's test may take to be unpacked (the agent first clears what the last test
# left): past it, the test moves to a new container (backends/kept/kept_build.py)
UNPACK_S = 120.0
# How long a program with a gate (an interactive test's) waits for the other to be ready, at
# most: past it, it starts anyway (the other is then past its own limits)
GATE_WAIT_S = 600.0


class Driver(Protocol):
    """What makes and removes a tier's sandboxes. `local`: they run on this machine (its
    cores are then shared with this user's other hazmat processes: backends/container/cores.py)."""

    seccomp: SeccompProfile

    @property
    def local(self) -> bool: ...

    def resources(self) -> HostResources: ...

    def runtimes(self) -> set[str]: ...

    def start(self, spec: Spec, labels: dict[str, str], expires: float) -> Started:
        """A sandbox labelled `labels`, ready and checked (see the module's words)."""
        ...

    def kill(self, started: Started) -> None:
        """Kill its processes now (the run is over its limits, or cancelled); no error if it
        has ended already."""
        ...

    def final_state(self, started: Started, job: Job) -> tuple[int | None, bool]:
        """Its exit status and whether its engine saw an OOM kill, once it has stopped."""
        ...

    def program_memory(self, started: Started, job: Job) -> int | None:
        """Between the build and the program: set the program's own memory limit (see
        `ContainerBackend.program_memory`)."""
        ...

    def discard(self, started: Started) -> None:
        """Remove it, used or not, and free its uid."""
        ...

    def reap(self) -> list[str]:
        """Remove the sandboxes of any hazmat process that are abandoned; their names."""
        ...

    def remove_leftovers(self, before: float, token: str) -> int:
        """The engine is back after an outage: remove the sandboxes labelled with the
        backend's `token` made before `before` (time.time()); how many."""
        ...

    def remove_mine(self, token: str) -> int:
        """Remove the sandboxes labelled with this backend's `token` that are left; how many."""
        ...

    def close(self) -> None: ...


class ContainerBackend(Backend):
    """Runs each job in a sandbox nobody used before, made by its `driver`.

    `execute` is the cold path: start a sandbox, run the job, remove it. The warm pool
    (backends/pool/warm.py) calls `start` ahead of time and `run` / `discard` later.
    """

    keeps_containers = True

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self._reaped = False
        self._token = secrets.token_hex(8)  # labels this backend's sandboxes
        self._started_any = False  # close() looks for what is left only if it started some
        self._lock = threading.Lock()
        # job nonce -> (the thread that prepared it, its sandbox on the way)
        self._prepared: dict[str, tuple[int, Future[Started]]] = {}
        self._preparer: ThreadPoolExecutor | None = None
        self._cores: Cores | None = None

    @property
    def seccomp(self) -> SeccompProfile:
        """The seccomp profile the driver's sandboxes get."""
        return self.driver.seccomp

    def resources(self) -> HostResources:
        return self.driver.resources()

    def runtimes(self) -> set[str]:
        return self.driver.runtimes()

    def prepare(self, job: Job) -> None:
        """Start the job's sandbox in the background while the pipeline assesses the job and
        records it; the job itself goes in only through `execute`."""
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
        """Remove the sandboxes this thread prepared for jobs that did not run (blocked)."""
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

    def labels(self, spec: Spec, expires: float, pooled: bool) -> dict[str, str]:
        """What a sandbox of this backend's carries: its owner, this backend, its deadline."""
        self._started_any = True
        return {
            **owner_labels(),
            f"{LABEL}.backend": self._token,  # this backend's: close() removes what is left
            f"{LABEL}.deadline": f"{expires:.0f}",
            f"{LABEL}.language": spec.language,
            f"{LABEL}.pooled": "1" if pooled else "0",
        }

    def start(self, spec: Spec, *, lifetime_s: float, pooled: bool = False) -> Started:
        """A sandbox for `spec`, ready and checked, that outlives `lifetime_s` by a grace
        before any hazmat process's reaper may remove it. The first start removes what killed
        hazmat processes left (best effort: leftovers must not stop new runs)."""
        if not self._reaped:
            self._reaped = True
            try:
                self.reap()
            except (InfraError, OSError, subprocess.SubprocessError) as exc:
                log.warning("could not look for abandoned sandboxes: %s", exc)
        expires = time.time() + lifetime_s + REAP_GRACE_S
        return self.driver.start(spec, self.labels(spec, expires, pooled), expires)

    def discard(self, started: Started) -> None:
        self.driver.discard(started)

    def kill(self, started: Started) -> None:
        """Kill the sandbox's processes now (a session ended under a call); it stays to be
        discarded."""
        self.driver.kill(started)

    def reap(self) -> list[str]:
        return self.driver.reap()

    def remove_leftovers(self, before: float) -> int:
        return self.driver.remove_leftovers(before, self._token)

    def program_memory(self, started: Started, job: Job) -> int | None:
        """Between the build and the program: the sandbox started with the build step's
        memory budget; set the program's own. Returns None, or the bytes the build left in
        use when they are more than the program may have (the kernel could not reclaim them)."""
        if job.spec.start_memory_mb == job.spec.program_cgroup_mb:
            return None
        held = self.driver.program_memory(started, job)
        if held is None and job.runtime is Runtime.RUNSC and started.cgroup is not None:
            held = held_beside_runsc(started.cgroup, job.spec.memory_mb)
        return held

    def run(self, started: Started, job: Job) -> RunReport:
        """Give `started` its one job and report what happened. The caller discards it."""
        header, stdin = job_header(job.program), job.program.stdin
        if not job.language.build:
            return self._run(started, job, header + stdin)[0]
        return self._run(started, job, header, after_build=b"go\n" + stdin)[0]

    def run_kept(
        self,
        started: Started,
        job: Job,
        data: bytes,
        pending: bytes,
        ready: bool = False,
        grace_s: float | None = None,
    ) -> tuple[RunReport, bytes | None]:
        """One call of a session (backends/kept/session.py): send `data` without closing the
        stream, read until this call's end marker. Returns the report and the bytes read past
        it (the start of the next frame) for the next call, or None when the stream did not
        reach the end marker (the sandbox is gone or was killed). With `grace_s` a call past
        its time or its output cap, or cancelled, is asked to stop (the agent's `STOP_WORDS`,
        `grace_s` apart) and the container is killed only if it has not ended `grace_s` after
        the last; without it (a kept build's test) it is killed at once, and so is one past
        its output cap, as a single run is. With `ready` (a kept build's test) the agent says
        when the test is unpacked and waits for the host's go: the program's time starts
        there, and its unpacking has a budget of its own (`UNPACK_S`)."""
        if ready:
            return self._run(started, job, data, True, pending, b"go\n", prelude=True)
        return self._run(started, job, data, keep=True, pending=pending, grace_s=grace_s)

    def cores(self) -> Cores:
        """The machine's cores, for the programs measured on the CPU clock
        (backends/container/cores.py); the tier's count, shared with this user's other processes
        when its sandboxes run on this machine."""
        with self._lock:
            if self._cores is None:
                folder = cores_folder() if self.driver.local else None
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
        grace_s: float | None = None,
    ) -> tuple[RunReport, bytes | None]:
        runsc = job.runtime is Runtime.RUNSC
        watch = SessionWatch.of(started.cgroup, job) if grace_s is not None else None
        if watch is not None:
            watch.settle()  # what the last call left, gVisor gives back first
        monitor = Monitor(started.cgroup, runtime_own=runsc) if started.cgroup else None
        limit = job.cpu_limit
        cores = self.cores() if limit else None
        measure = Measure(limit, started.cgroup, cores, monitor, watch)
        killer = threading.Thread(target=self.driver.kill, args=(started,), daemon=True)

        def stop() -> None:
            if monitor is not None:
                monitor.take()  # before the kill: the cgroup goes with the sandbox
            killer.start()

        try:
            if not job.language.build and not prelude:
                # nothing comes first: the program starts with the job (a session's call
                # after the session's earlier calls, whose peak memory is not its own)
                measure.begin(_gate(job.watch), after=keep)
            capture = self._pump(
                started, job, stop, data, keep, pending, after_build, prelude, measure, grace_s
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
        # the call ended by itself, or once told to (a session's, past its time or its output
        # cap, or cancelled); outside a session the output cap stops the container
        kept = (
            capture.end_status is not None
            and (not capture.timed_out or capture.told is not None)
            and (grace_s is not None or not capture.output_exceeded)
        )
        if keep and kept:
            # a session's agent does nothing after a call (a kept build's: the next test's
            # places emptied and its runner started) until the call's last readings, above,
            # are taken: they count the call alone
            with contextlib.suppress(OSError):
                started.sock.sendall(NEXT)
        exit_code: int | None = capture.end_status
        engine_oom = False
        if not kept:
            exit_code, engine_oom = self.driver.final_state(started, job)
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
        peak = program_peak(figures, monitor)
        memory_stop = capture.stopped_by == MEMORY_STOP  # a session's call, its memory watched
        report = RunReport(
            exit_code=exit_code,
            stdout=bytes(capture.stdout),
            stderr=bytes(capture.stderr),
            duration_ms=capture.duration_ms,
            program_ms=capture.program_ms,
            container_id=started.cid,
            timed_out=(capture.timed_out and not memory_stop) or over,
            stopped_by="cpu" if over else capture.stopped_by,
            compile_timed_out=capture.compile_timed_out,
            build_status=capture.build_status,
            build_ms=capture.build_ms,
            oom_killed=engine_oom or _oom_since(base, figures) or _oom_after(started, base),
            output_exceeded=capture.output_exceeded,
            cancelled=capture.cancelled,
            told=(capture.told or b"").decode().strip() or None,
            files=files,
            displays=displays,
            notes=tuple(notes),
            peak_memory_bytes=peak,
            memory_exceeded=memory_stop or over_memory(peak, job, monitor, prelude),
            cpu_time_ms=cpu_ms,
            pids_refused=figures.pids_refused - base.pids_refused if figures and base else 0,
            peak_tasks=figures.pids_peak if figures and figures.pids_peak else None,
            held_after_build=capture.held_after_build,
        )
        return report, capture.rest if kept else None

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
        grace_s: float | None,
    ) -> Capture:
        """Send the job, read the output until the agent's end marker, within the limits.
        `prelude`: a kept build's test, whose unpacking comes first (`UNPACK_S`); `grace_s`:
        a session's call, asked to stop at its limit before it is killed."""
        program = job.program

        def on_built() -> int | None:
            in_use = self.program_memory(started, job)
            if in_use is None:
                measure.begin(_gate(job.watch), after=True)
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
            check=measure.check if measure.checks else None,
            check_s=measure.check_s,
            stop_words=STOP_WORDS if grace_s is not None else (),
            grace_s=grace_s or 0.0,
            hard_stops=frozenset({MEMORY_STOP}),
        )
        return pump(started.sock, exchange, stop, job.watch)

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

    def keep(self, spec: Spec, lifetime_s: float) -> SessionBackend:
        return SessionBackend(self, spec, lifetime_s)

    def close(self) -> None:
        """Remove sandboxes prepared for jobs that never came, and any of this backend's still
        there (one whose start or removal failed, which nothing holds any more); then close
        the driver."""
        self._drop_prepared()
        if self._started_any:
            self.driver.remove_mine(self._token)
        self.driver.close()

    def _drop_prepared(self) -> None:
        """Discard the sandboxes prepared for jobs that never came (once they are up)."""
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


def _oom_after(started: Started, base: Sample | None) -> bool:
    """Whether the OOM count has risen since `base`, read now that the run is over: a sandbox
    the OOM killer ended has no agent left to say so, and its last sample may predate the kill
    (a cgroup that outlives its sandbox has the count: backends/oci/memcg.py)."""
    if base is None or started.cgroup is None:
        return False
    now = started.cgroup.oom_kills()
    return now is not None and now > base.oom_kills


def _gate(watch: Watch | None) -> Callable[[], None] | None:
    """A watch's gate: say the program is ready to start, and wait until it may (both of an
    interactive test's programs are ready, grade/interaction.py); None without one."""
    if watch is None or watch.gate is None:
        return None
    gate = watch.gate

    def wait() -> None:
        watch.ready.set()
        gate.wait(GATE_WAIT_S)

    return wait
