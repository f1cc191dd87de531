"""Shared fixtures. Tests marked `docker` run against the real engine and hazmat's images."""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from hazmat import Sandbox
from hazmat._exceptions import EngineUnavailable
from hazmat.backends.base import Backend
from hazmat.backends.container.engine import Engine, missing_image_message
from hazmat.backends.docker.driver import LABEL, DockerBackend
from hazmat.backends.oci.driver import OciBackend
from hazmat.backends.pool.warm import PoolBackend
from hazmat.images.builder import RECIPES, ImageBuilder, recipe_digest
from hazmat.languages import LANGUAGES
from hazmat.policy import PoolSettings
from hazmat.testing import as_asked

# The built-in policy with each runtime as a test asks it: the assessment does not raise it
# (`assess.runtime_for: {}`), so that a test of runc's boundary with risky code runs under runc.
# The routing itself: tests/run/test_routing.py, tests/execution/test_routing_engine.py.
AS_ASKED = as_asked()

# Every run is audited: keep the test session's records out of the real state directory. The
# CLI tests' subprocesses inherit this.
os.environ["HAZMAT_AUDIT_DIR"] = tempfile.mkdtemp(prefix="hazmat-test-audit-")
os.environ["HAZMAT_CACHE_DIR"] = tempfile.mkdtemp(prefix="hazmat-test-cache-")
# `hazmat run` would go through a running service if these were set; tests that want one set
# them themselves (tests/server)
os.environ.pop("HAZMAT_URL", None)
os.environ.pop("HAZMAT_API_KEY", None)
# ...and through the user's local server (cli/local_server.py), which outlives the command:
# tests/cli/test_local_server.py starts its own, in folders of its own, and stops them
os.environ["HAZMAT_NO_SERVER"] = "1"


CELL_PARAMS = ("sandbox", "runtime")  # the fixtures whose params make the matrix's cells


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The matrix of tiers (`sandbox`: cold, pool, oci) and runtimes (runc, runsc) runs whole
    only where the tier or the runtime is what is tested: modules and tests marked `matrix`
    (the boundary, the abuse and red-team suites, the languages' conformance, the program
    interface, cleanup between a grader's tests and a session's calls, CPU-time accounting).
    Elsewhere each test runs in one cell, chosen by a hash of its name and its other params, so
    that across a module every cell takes its share; `HAZMAT_TEST_MATRIX=full` runs every
    cell of every test. The OCI tier's cells exist only in modules marked `oci`; `matrix(tiers=
    (...))` keeps only the cells of the tiers named (where the others repeat one of them); a test
    marked `one_cell` in a `matrix` module runs in one cell, as outside one (what it tests, such
    as a language's module system, depends on neither the tier nor the runtime)."""
    full = os.environ.get("HAZMAT_TEST_MATRIX", "") == "full"
    groups: dict[tuple[str, str], list[pytest.Item]] = {}
    dropped: list[pytest.Item] = []
    for item in items:
        params = getattr(item, "callspec", None)
        params = params.params if params is not None else {}
        matrix = item.get_closest_marker("matrix")
        tiers = matrix.kwargs.get("tiers") if matrix is not None and not full else None
        if _tier_left_out(params.get("sandbox"), item.get_closest_marker("oci") is not None, tiers):
            dropped.append(item)
        elif (
            full
            or (matrix is not None and item.get_closest_marker("one_cell") is None)
            or not set(CELL_PARAMS) & set(params)
        ):
            continue
        else:
            rest = sorted((k, str(v)) for k, v in params.items() if k not in CELL_PARAMS)
            groups.setdefault((item.nodeid.split("[")[0], repr(rest)), []).append(item)
    for key, cells in groups.items():
        cells.sort(key=_cell)
        kept = cells[zlib.crc32(repr(key).encode()) % len(cells)]
        dropped += [cell for cell in cells if cell is not kept]
    if dropped:
        gone = set(map(id, dropped))
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if id(item) not in gone]


def _tier_left_out(tier: str | None, oci_module: bool, tiers: tuple[str, ...] | None) -> bool:
    """Whether a cell of `tier` is not run: the OCI tier's outside modules marked `oci`, and a
    tier a `matrix(tiers=...)` marker does not name."""
    if tier is None:
        return False
    return (tier == "oci" and not oci_module) or (tiers is not None and tier not in tiers)


def _cell(item: pytest.Item) -> tuple[str, ...]:
    params = getattr(item, "callspec").params  # noqa: B009 (only parametrized items get here)
    return tuple(str(params.get(name, "")) for name in CELL_PARAMS)


def _labelled_containers() -> list[dict[str, Any]]:
    engine = Engine()  # the engine hazmat uses: DOCKER_HOST's (CI's own fresh engine)
    try:
        return list(engine.api.containers(all=True, filters={"label": LABEL}))
    finally:
        engine.close()


def _owner(container: dict[str, Any]) -> str:
    return str(container["Labels"].get(f"{LABEL}.owner", ""))


def _oci_sandboxes() -> list[dict[str, Any]]:
    """The direct OCI tier's sandboxes on this host, as the engine's containers look: their
    bundle folder's name and its annotations (backends/oci/driver.py)."""
    backend = OciBackend(Engine())
    try:
        return [{"Id": b.name, "Labels": labels} for b, labels in backend.driver.bundles()]
    finally:
        backend.engine.close()


def pytest_sessionstart(session: pytest.Session) -> None:
    """The hazmat containers already on the engine, in the process that runs the whole session
    (not in a worker of `-n`: the check is over every worker's tests, after they all end)."""
    config = session.config
    if hasattr(config, "workerinput") or config.option.markexpr.replace(" ", "") == "notdocker":
        return  # a worker of `-n`, or no test on the engine (`-m "not docker"`)
    try:
        found = _hazmat_sandboxes()
    except EngineUnavailable:  # nothing of hazmat's can be on it; tests marked docker fail
        return
    config.stash[_BEFORE] = {_owner(c) for c in found}


@pytest.hookimpl(tryfirst=True)  # before the terminal's summary, so that it is said there
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the session if any hazmat container or OCI sandbox is left, but those of hazmat
    processes that held some before it began (a user's own local server, which keeps its pool
    until it stops: cli/local_server.py)."""
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    left = [c["Id"][:12] for c in _hazmat_sandboxes() if _owner(c) not in before]
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", f"hazmat containers left on the engine: {left}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_BEFORE = pytest.StashKey[set[str]]()


def _hazmat_sandboxes() -> list[dict[str, Any]]:
    return _labelled_containers() + _oci_sandboxes()


@pytest.fixture(scope="session")
def stale_images() -> list[str]:
    """What is wrong with hazmat's own images on the engine: absent, or built from another
    recipe than this checkout's (an older image under the same tag)."""
    builder = ImageBuilder(Engine())
    try:
        return [
            missing_image_message(s.recipe.ref)
            if not s.present
            else f"image {s.recipe.ref} was built from another recipe than this checkout's "
            f"(label {s.digest or 'none'}, want {recipe_digest(s.recipe)}); rebuild it with "
            f"`hazmat images build --missing --lang {s.recipe.name}`"
            for s in map(builder.status, RECIPES.values())
            if not s.current
        ]
    finally:
        builder.engine.close()


@pytest.fixture(autouse=True)
def images_are_current(request: pytest.FixtureRequest) -> None:
    """A test on the engine runs only with the images of this checkout's recipes; otherwise it
    fails saying what to run, never with the engine's 404 or a stale image's behaviour."""
    if request.node.get_closest_marker("docker") is None:
        return
    wrong: list[str] = request.getfixturevalue("stale_images")
    if wrong:
        pytest.fail("; ".join(wrong) + " (`make test` does this itself)", pytrace=False)


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    eng = Engine()
    eng.info()  # fail loudly (not skip) when the engine is down: `make test` starts it
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def python_image() -> str:
    """The tag of the image Python runs in, as hazmat derives it (never written in a test)."""
    return LANGUAGES["python"].image


@pytest.fixture(scope="session", params=["cold", "pool", "oci"])
def sandbox(request: pytest.FixtureRequest, engine: Engine) -> Iterator[Sandbox]:
    """A sandbox with the built-in policy on the real engine, once on the cold path and once
    through the warm pool; and, in the modules marked `oci` (see `pytest_collection_modifyitems`),
    once more through a warm pool of the direct OCI tier (runc and runsc without the engine,
    backends/oci/driver.py). The pool waits on a miss (it starts a container for the run, or the run
    fails with the start's error), so every run gets a pooled container."""
    tier = DockerBackend(engine) if request.param != "oci" else OciBackend(engine)
    backend: Backend = tier
    if request.param in ("pool", "oci"):
        settings = PoolSettings(size=1, max_size=1, refill_concurrency=2, max_containers=4)
        backend = PoolBackend(tier, settings, wait_on_miss=True)
    with Sandbox(AS_ASKED, backend=backend) as sb:
        yield sb


@pytest.fixture(autouse=True)
def every_pooled_run_was_pooled(request: pytest.FixtureRequest) -> Iterator[None]:
    """Per test: no run through the pooled `sandbox` took the cold path."""
    if "sandbox" not in request.fixturenames:
        yield
        return
    sb: Sandbox = request.getfixturevalue("sandbox")
    before = sb.metrics().pool_misses
    yield
    backend = sb.backend
    if isinstance(backend, PoolBackend) and sb.metrics().pool_misses != before:
        stats = backend.stats
        pytest.fail(
            f"a pooled run took the cold path: {sb.metrics().pool_misses - before} miss(es); "
            f"pool failed starts {stats.failed}, last error: {stats.last_error}"
        )


@pytest.fixture(scope="session", params=["runc", "runsc"])
def runtime(request: pytest.FixtureRequest, engine: Engine) -> str:
    name = str(request.param)
    if name not in engine.info().runtimes:
        pytest.fail(f"runtime {name} is not registered with the engine (scripts/ensure-engine.sh)")
    return name
