"""Tests that cannot fail are bugs: every test checks something, itself or through a helper that
does, no assertion compares an expression with itself or asserts a constant, and no test makes
a Docker client of its own (it would look at the default socket's engine, not DOCKER_HOST's:
on CI's fresh engine such a check passes for nothing).

A test checks something when its own body asserts or uses `pytest.raises` / `fail` / `warns` /
`deprecated_call`, or calls a helper that does, transitively: a function of its own file, or one
it imports by name from another module of tests/ or from `hazmat.testing`. A fixture asserting
after `yield` does not count: the test must check something of its own.

No module of tests/ imports a test module (`test_*`): what several test files share lives in a
helper module (server_helpers.py, ...), a conftest.py fixture, or `hazmat.testing` (the test
doubles that ship), which imports nothing but hazmat and the standard library.
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).parent.parent
SOURCES = [ROOT / "src" / "hazmat" / "testing.py"]  # helpers that ship, when there are any
SKIPPED = {"corpus"}  # sample programs, hostile on purpose (extend-exclude in pyproject.toml)
CHECKS = {"raises", "fail", "warns", "deprecated_call"}  # pytest.<name> that checks
SELF = {"self", "cls"}
DOCKER_CLIENTS = {"APIClient", "DockerClient", "from_env"}

Function = ast.FunctionDef | ast.AsyncFunctionDef
Key = tuple[str, str]  # (file, function name)


def functions(tree: ast.AST) -> Iterator[Function]:
    return (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def own_nodes(function: Function) -> Iterator[ast.AST]:
    """The nodes of a function's body, without those of the functions defined inside it."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))


def checks_itself(function: Function) -> bool:
    for node in own_nodes(function):
        if isinstance(node, ast.Assert):
            return True
        if (
            isinstance(node, ast.Attribute)
            and node.attr in CHECKS
            and isinstance(node.value, ast.Name)
            and node.value.id == "pytest"
        ):
            return True
    return False


def called_names(function: Function) -> set[str]:
    """What the function calls by name: `helper(...)` and `self.helper(...)`."""
    calls = [n.func for n in own_nodes(function) if isinstance(n, ast.Call)]
    names = {f.id for f in calls if isinstance(f, ast.Name)}
    for f in calls:
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in SELF:
            names.add(f.attr)
    return names


def module_name(path: str) -> str:
    parts = PurePosixPath(path).with_suffix("").parts
    return ".".join(parts[1:]) if parts[0] == "src" else parts[-1]  # tests import by file name


def scope(path: str, tree: ast.AST, modules: dict[str, str]) -> dict[str, Key]:
    """The names a file can call a helper by: what it imports from `modules`, and its own."""
    names: dict[str, Key] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in modules:
            names.update({a.asname or a.name: (modules[node.module], a.name) for a in node.names})
    return names | {function.name: (path, function.name) for function in functions(tree)}


def checking(trees: dict[str, ast.Module], scopes: dict[str, dict[str, Key]]) -> set[Key]:
    """The functions that check something, themselves or through what they call."""
    calls: dict[Key, set[Key]] = {}
    found: set[Key] = set()
    for path, function in ((p, f) for p, tree in trees.items() for f in functions(tree)):
        callees = {scopes[path][n] for n in called_names(function) if n in scopes[path]}
        calls.setdefault((path, function.name), set()).update(callees)
        if checks_itself(function):
            found.add((path, function.name))
    while more := {key for key, callees in calls.items() if callees & found} - found:
        found |= more
    return found


def vacuous_asserts(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in (n for n in ast.walk(tree) if isinstance(n, ast.Assert)):
        if isinstance(node.test, ast.Constant) and node.test.value:
            yield node.lineno, "asserts a constant"
        for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            sides = [ast.dump(side) for side in (compare.left, *compare.comparators)]
            if any(a == b for a, b in itertools.pairwise(sides)):
                yield compare.lineno, "compares a value with itself"


def own_engines(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """A Docker client made by a test: `docker.APIClient()` talks to the default socket, not
    to DOCKER_HOST's engine (CI's fresh one), so its checks look at another engine."""
    for node in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in DOCKER_CLIENTS
            and isinstance(func.value, ast.Name)
            and func.value.id == "docker"
        ):
            yield node.lineno, f"makes its own docker.{func.attr} (use hazmat's Engine)"


def problems(files: dict[str, str]) -> list[str]:
    """`file:line: what is wrong` for each check that cannot fail in the given sources."""
    trees = {path: ast.parse(source, path) for path, source in files.items()}
    modules = {module_name(path): path for path in trees}
    scopes = {path: scope(path, tree, modules) for path, tree in trees.items()}
    found = checking(trees, scopes)
    wrong: list[str] = []
    for path, tree in trees.items():
        for test in (f for f in functions(tree) if f.name.startswith("test_")):
            callees = {scopes[path][n] for n in called_names(test) if n in scopes[path]}
            if not checks_itself(test) and not callees & found:
                wrong.append(f"{path}:{test.lineno}: {test.name} checks nothing")
        wrong += [f"{path}:{line}: {why}" for line, why in vacuous_asserts(tree)]
        wrong += [f"{path}:{line}: {why}" for line, why in own_engines(tree)]
    return wrong


def suite_sources() -> dict[str, str]:
    """The suite's files and the helpers that ship, by path relative to the checkout."""
    paths = [p.relative_to(ROOT) for p in sorted((ROOT / "tests").rglob("*.py")) + SOURCES]
    kept = [p for p in paths if not SKIPPED & set(p.parts) and (ROOT / p).exists()]
    return {str(p): (ROOT / p).read_text() for p in kept}


def test_every_test_can_fail() -> None:
    sources = suite_sources()
    assert len(sources) > 50  # the suite was found
    assert problems(sources) == []


def is_test_module(name: str) -> bool:
    return any(part.startswith("test_") for part in name.split("."))


def imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """What the file's import statements import, at any depth (inside functions too), by line:
    `import a.b` gives `a.b`; `from a import b` gives `a.b` (b may be a module: `from tests
    import test_x`), or just `a` when `a` is a test module itself."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            dot = "." if node.module else ""
            names = [f"{base}{dot}{alias.name}" for alias in node.names]
            yield from ((node.lineno, name) for name in ([base] if is_test_module(base) else names))


def imports_of_test_modules(files: dict[str, str]) -> list[str]:
    """`file:line: imports test module X` for each import of a `test_*` module."""
    wrong = [
        (path, line, name.lstrip("."))
        for path, source in files.items()
        for line, name in imported_modules(ast.parse(source, path))
        if is_test_module(name)
    ]
    return [f"{path}:{line}: imports test module {name}" for path, line, name in sorted(wrong)]


def test_no_test_module_imports_another() -> None:
    sources = suite_sources()
    assert len(sources) > 50  # the suite was found
    assert imports_of_test_modules(sources) == []


def test_no_two_test_modules_share_a_name() -> None:
    # tests/ has no __init__.py files: pytest imports each test module by its file's name, and
    # a second tests/*/test_x.py stops the whole run at collection ("import file mismatch")
    names = sorted(p.name for p in ROOT.joinpath("tests").rglob("test_*.py"))
    twice = {name for name, same in itertools.groupby(names) if len(list(same)) > 1}
    assert not twice, f"rename one of each: {sorted(twice)}"


def test_the_test_doubles_that_ship_import_only_hazmat_and_the_standard_library() -> None:
    trees = [ast.parse(path.read_text(), str(path)) for path in SOURCES]
    names = {name for tree in trees for _, name in imported_modules(tree)}
    foreign = {n for n in names if n.split(".")[0] not in {"hazmat", *sys.stdlib_module_names}}
    assert foreign == set()  # never docker, never a module of tests/
    assert "hazmat.backends.base.Backend" in names  # the check read the module's imports


IMPORTS_A_TEST = """
import pytest
import test_sandbox
from test_mcp import params
from server_helpers import LiveServer
from hazmat.testing import RecordingBackend
import tests.test_rules as rules
from tests import test_abuse
from . import test_enforcement
from .test_pool import records
def test_something():
    from test_metrics import ScriptedBackend
    import testing_tools
    assert ScriptedBackend
class Helper:
    def method(self):
        import pkg.test_worker
"""


def test_the_checker_finds_a_test_module_importing_another() -> None:
    clean = "import pytest\nfrom server_helpers import LiveServer\nimport testing_tools\n"
    assert imports_of_test_modules({"tests/test_ok.py": clean}) == []
    assert imports_of_test_modules({"tests/test_bad.py": IMPORTS_A_TEST}) == [
        "tests/test_bad.py:3: imports test module test_sandbox",
        "tests/test_bad.py:4: imports test module test_mcp",
        "tests/test_bad.py:7: imports test module tests.test_rules",
        "tests/test_bad.py:8: imports test module tests.test_abuse",
        "tests/test_bad.py:9: imports test module test_enforcement",
        "tests/test_bad.py:10: imports test module test_pool",
        "tests/test_bad.py:12: imports test module test_metrics",
        "tests/test_bad.py:17: imports test module pkg.test_worker",
    ]
