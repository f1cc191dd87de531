import ast
import inspect
import textwrap
import types
from pathlib import Path

import hazmat


def foreign_imports(module: types.ModuleType) -> set[str]:
    """Names a module binds at its top level by importing them from outside hazmat (its own
    helpers: `annotations`, `importlib`, `TYPE_CHECKING`, `Any`), read from its source."""
    tree = ast.parse(Path(str(module.__file__)).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not (node.module or "").startswith("hazmat"):
            names |= {a.asname or a.name for a in node.names}
    return names


def public_surface(module: types.ModuleType) -> set[str]:
    """The public names, found without `__all__` or `__dir__`: what the module holds (names
    imported eagerly or defined there) and what it imports on first use (`_LAZY`, PEP 562),
    less its submodules and its own helper imports."""
    held = {name for name, value in vars(module).items() if not isinstance(value, types.ModuleType)}
    names = (held | set(module._LAZY)) - foreign_imports(module)
    return {name for name in names if not name.startswith("_") or name == "__version__"}


def test_all_is_sorted_and_complete() -> None:
    exported = hazmat.__all__

    # isort style, as ruff's RUF022 sorts: CONSTANTS, then Classes, then everything else.
    def kind(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert exported == sorted(exported, key=kind)
    assert len(set(exported)) == len(exported), "a name is in __all__ twice"
    for name in exported:
        assert getattr(hazmat, name) is not None, name  # lazy names import (AttributeError)
    public = public_surface(hazmat)
    assert public - set(exported) == set(), "public names missing from __all__"
    assert set(exported) - public == set(), "names in __all__ that hazmat does not provide"


def test_every_exported_name_has_a_docstring_or_is_data() -> None:
    # Read from the source: a dataclass without one gets a made-up __doc__ ("Name(field, ...)").
    for name in hazmat.__all__:
        member = getattr(hazmat, name)
        if isinstance(member, type) or callable(member):
            source = textwrap.dedent(inspect.getsource(member))
            definition = ast.parse(source).body[0]
            assert isinstance(definition, ast.ClassDef | ast.FunctionDef), name
            assert ast.get_docstring(definition), name
