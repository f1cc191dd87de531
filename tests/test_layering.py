"""The house's layers (docs/architecture.md), checked by walking every import of src/hazmat with
`ast`: top-level, inside functions and under TYPE_CHECKING alike.

- no import circle between modules;
- no upward import: a module imports only from its own package or from a lower layer;
- the front-ends (server/, cluster/) never import each other; cli/ composes them at start-up;
- an analyser a language brings (languages/<name>/analysis.py) is in the assessment's layer:
  nothing imports it, the assessment's child loads it by name (Language.own_analyser);
- nothing outside backends/ imports docker-py, and nothing outside cluster/ imports Redis or
  Dramatiq;
- backends/ is rooms (container/, docker/, oci/, pool/, kept/, agent/, inside/): the two
  tiers' drivers are siblings behind one seam (container/backend.py) and neither imports the
  other; no other room (the shared mechanics, the pool, the kept sandboxes, the code that runs
  inside the sandbox) nor image building imports either (NOT_INTO).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first. A unit is a top-level module or a package of src/hazmat; "hazmat" is the public
# surface in __init__.py (which the front-ends may import, e.g. its __version__).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"_cache", "_exceptions", "_closing", "_waiting", "language_builds", "template"}),
    frozenset({"languages", "egress", "watch", "displays", "json_input"}),
    # the policy and its file, packages and compiler flags
    frozenset({"policy"}),
    frozenset({"models"}),
    frozenset({"options"}),
    frozenset({"metrics"}),
    frozenset({"assess", "audit", "backends"}),
    frozenset({"run"}),
    # installing packages into a session: the download, the wheel cache, the install
    frozenset({"packages"}),
    # sessions: the public Session, the book of open ones, the paused ones' store, pausing
    frozenset({"sessions", "grade"}),
    frozenset({"sandbox"}),
    frozenset({"hazmat"}),
    # function calling's tools over a session (the MCP server reuses its summary)
    frozenset({"tools"}),
    # what server/ and cluster/ share: the wire, tenant keys, quotas
    frozenset({"service"}),
    frozenset({"server", "cluster"}),
    # image building: only the commands use it; nothing on the run path may import it
    frozenset({"images"}),
    frozenset({"cli"}),
    # the test doubles that ship, above every front-end: `invoke` runs the command in-process
    frozenset({"testing"}),
    frozenset({"__main__"}),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
# third-party libraries only one package may use
ONLY_IN = {"docker": "backends", "dramatiq": "cluster", "redis": "cluster"}

# backends/'s rooms (sub-packages; base.py and __init__.py are the seam's root), and the rooms
# each may not import: the drivers are siblings behind the seam (container/backend.py), and
# nothing below them (the shared mechanics, the pool, the kept sandboxes, the code that runs
# inside the sandbox) nor image building knows either of them
ROOMS = frozenset({"container", "docker", "oci", "pool", "kept", "agent", "inside"})
DRIVER_ROOMS = frozenset({"docker", "oci"})
NOT_INTO = {
    "docker": {"oci", "pool", "kept"},
    "oci": {"docker", "pool", "kept"},
    "container": DRIVER_ROOMS | {"pool"},  # its `keep` hands out a kept session
    "base": DRIVER_ROOMS | {"pool", "kept"},
    "pool": DRIVER_ROOMS | {"kept"},
    "kept": DRIVER_ROOMS | {"pool"},
    "agent": DRIVER_ROOMS | {"pool", "kept"},
    "inside": DRIVER_ROOMS | {"pool", "kept", "container", "agent"},
    "images": DRIVER_ROOMS | {"pool", "kept"},
}


def room(module: str) -> str | None:
    """The backends/ room of `module` ("base" for the seam's root), "images" for image
    building, else None."""
    parts = module.split(".")
    if parts[:2] == ["hazmat", "images"]:
        return "images"
    if parts[:2] != ["hazmat", "backends"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in ROOMS else "base"


def modules(src: Path = SRC) -> dict[str, Path]:
    found = {}
    for path in sorted((src / "hazmat").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """Every module `name` imports (hazmat's own resolved to the module, others as written)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                full = f"{prefix}.{alias.name}"
                yield full if full in known else prefix


def graph(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the modules it imports: hazmat's own (to the nearest module), and the
    top-level names of the libraries."""
    known = modules(src)
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = edges.setdefault(name, set())
        for imported in imports(name, path, known):
            if imported.split(".")[0] != "hazmat":
                targets.add(imported.split(".")[0])
                continue
            target = imported
            while target not in known:
                target = target.rpartition(".")[0]
            if target != name:
                targets.add(target)
    return edges


def unit(module: str) -> str:
    """The top-level module or package a module belongs to ("hazmat" for __init__.py); a
    language's own analyser belongs to assess/."""
    parts = module.split(".")
    if len(parts) == 4 and parts[1] == "languages" and parts[3] == "analysis":
        return "assess"
    return parts[1] if len(parts) > 1 else "hazmat"


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in edges.get(node, ()):
            if other not in edges:
                continue  # a library
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def problems(edges: dict[str, set[str]]) -> list[str]:
    """Every import that breaks the rules above, as one line each."""
    found = []
    for source, targets in sorted(edges.items()):
        here = unit(source)
        for target in sorted(targets):
            if target in ONLY_IN:
                if here != ONLY_IN[target]:
                    found.append(f"{source} imports {target} (only {ONLY_IN[target]}/ may)")
                continue
            if target not in edges:
                continue  # another library
            there = unit(target)
            if there == here:
                continue
            if here not in RANK or there not in RANK:
                found.append(f"{source} -> {target}: {here} or {there} has no layer")
            elif RANK[there] >= RANK[here]:
                found.append(f"{source} imports {target}: {there} is not below {here}")
    return found


def room_problems(edges: dict[str, set[str]]) -> list[str]:
    """Every import across a border of backends/'s rooms (NOT_INTO)."""
    found = []
    for source, targets in sorted(edges.items()):
        here = room(source)
        for target in sorted(targets):
            there = room(target)
            if here is not None and there in NOT_INTO.get(here, set()):
                found.append(f"{source} imports {target}: {here} may not import {there}")
    return found


def test_the_rooms_keep_their_borders() -> None:
    assert room_problems(graph()) == []
    found = {room(m) for m in modules() if m.startswith("hazmat.backends.")}
    assert found == ROOMS | {"base"}, "a room was added or is gone: update ROOMS and NOT_INTO"
    assert found <= set(NOT_INTO), "each room says what it may not import (NOT_INTO)"


def test_the_room_check_finds_what_it_must(tmp_path: Path) -> None:
    """It can fail: a driver importing the other, the seam, the in-sandbox code or image
    building importing a driver."""
    files = {
        "hazmat/__init__.py": "",
        "hazmat/backends/__init__.py": "",
        "hazmat/backends/container/__init__.py": "",
        "hazmat/backends/container/backend.py": "from hazmat.backends.docker.driver import x\n",
        "hazmat/backends/docker/__init__.py": "",
        "hazmat/backends/docker/driver.py": "from hazmat.backends.container import backend\n",
        "hazmat/backends/oci/__init__.py": "",
        "hazmat/backends/oci/driver.py": "from hazmat.backends.docker.driver import x\n",
        "hazmat/backends/oci/spec.py": "from hazmat.backends.oci import driver\n",
        "hazmat/backends/agent/__init__.py": "",
        "hazmat/backends/agent/single.py": "import hazmat.backends.oci.spec\n",
        "hazmat/images/__init__.py": "",
        "hazmat/images/builder.py": "from hazmat.backends.docker import driver\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert room_problems(graph(tmp_path)) == [
        "hazmat.backends.agent.single imports hazmat.backends.oci.spec: agent may not import oci",
        "hazmat.backends.container.backend imports hazmat.backends.docker.driver: container may "
        "not import docker",
        "hazmat.backends.oci.driver imports hazmat.backends.docker.driver: oci may not import "
        "docker",
        "hazmat.images.builder imports hazmat.backends.docker.driver: images may not import docker",
    ]


def test_every_unit_has_a_layer() -> None:
    units = {unit(m) for m in modules()}
    assert units - set(RANK) == set(), "add the new module or package to LAYERS"
    assert set(RANK) - units == set(), "a layer names a unit that is gone"


def test_no_import_circle() -> None:
    assert circles(graph()) == []


def test_no_upward_import_and_the_front_ends_apart() -> None:
    assert problems(graph()) == []


def test_the_walk_finds_what_it_must(tmp_path: Path) -> None:
    """The checks can fail: a small tree with a circle, an upward import, a front-end that
    imports the other, and docker-py outside backends/."""
    files = {
        "hazmat/__init__.py": "",
        "hazmat/models.py": "from hazmat.sandbox import Sandbox\n",
        "hazmat/sandbox.py": "from hazmat import models\n",
        "hazmat/cluster/__init__.py": "",
        "hazmat/cluster/worker.py": "def f():\n    from hazmat.server.sse import x\n",
        "hazmat/server/__init__.py": "",
        "hazmat/server/sse.py": "from ..backends import base\n",
        "hazmat/backends/__init__.py": "",
        "hazmat/backends/base.py": "import docker\n",
        "hazmat/run/__init__.py": "import docker.errors\n",
        "hazmat/assess/__init__.py": "",
        "hazmat/assess/base.py": "",
        "hazmat/languages/__init__.py": "",
        "hazmat/languages/r/__init__.py": "from hazmat.assess import base\n",
        "hazmat/languages/r/analysis.py": "from hazmat.assess import base\n",
        "hazmat/languages/python.py": "from hazmat.languages.r import analysis\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = graph(tmp_path)
    assert circles(edges) == [["hazmat.models", "hazmat.sandbox"]]
    assert problems(edges) == [
        "hazmat.cluster.worker imports hazmat.server.sse: server is not below cluster",
        "hazmat.languages.python imports hazmat.languages.r.analysis: assess is not below "
        "languages",
        "hazmat.languages.r imports hazmat.assess.base: assess is not below languages",
        "hazmat.models imports hazmat.sandbox: sandbox is not below models",
        "hazmat.run imports docker (only backends/ may)",
    ]


@pytest.mark.parametrize("library", sorted(ONLY_IN))
def test_each_library_is_used_where_it_belongs(library: str) -> None:
    users = {unit(m) for m, targets in graph().items() if library in targets}
    assert users <= {ONLY_IN[library]}
