"""Python rules that follow a value or a shape, not a name: file paths into reads and writes
(assess/paths.py), unsafe deserialisation, calls made without a call expression (decorators,
evaluators passed as values), and loops built never to end.

`PythonFlow(tree, qualified).run()` returns findings; `qualified` resolves a call target to its
dotted name through the program's import aliases (python_ast.py owns those).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Any

from hazmat.assess import paths
from hazmat.models import Finding, Severity

__all__ = ["PythonFlow", "walk"]

SOURCE = "python-ast"
S = Severity
Qualify = Callable[[ast.expr], "str | None"]

_READS = {"open", "io.open", "codecs.open", "os.open", "os.listdir", "os.scandir", "glob.glob"}
_DELETES = {"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "shutil.rmtree", "os.truncate"}
_WRITES = {"os.chmod", "os.chown", "os.lchown", "os.mkdir", "os.makedirs"}
_COPIES = {"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move"}
_MOVES = {"os.rename", "os.replace", "shutil.move"}
_PATH_METHODS = {
    "read_text": "read",
    "read_bytes": "read",
    "iterdir": "read",
    "write_text": "write",
    "write_bytes": "write",
    "touch": "write",
    "chmod": "write",
    "unlink": "delete",
    "rmdir": "delete",
}
_NETWORK = (
    "socket.", "requests.", "urllib.request.", "urllib3.", "http.client.", "httpx.",
    "aiohttp.", "ftplib.", "smtplib.", "telnetlib.", "paramiko.",
)  # fmt: skip
_HOME = {"pathlib.Path.home", "os.path.expanduser", "os.getenv", "os.environ.get"}
# Loaders that run code or build arbitrary objects from their input.
_UNSAFE_LOADS = {
    "pickle.load", "pickle.loads", "_pickle.loads", "cPickle.loads", "dill.load", "dill.loads",
    "cloudpickle.load", "cloudpickle.loads", "jsonpickle.decode", "shelve.open",
    "marshal.load", "marshal.loads", "pandas.read_pickle", "joblib.load",
    "yaml.unsafe_load", "yaml.unsafe_load_all", "yaml.full_load", "yaml.full_load_all",
    "pickle.Unpickler", "_pickle.Unpickler", "dill.Unpickler",
}  # fmt: skip
_SAFE_YAML_LOADERS = ("SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader")
_EVALUATORS = {"eval", "exec", "compile", "__import__", "builtins.eval", "builtins.exec"}
# Builtins that, applied as a decorator, are a call without a call expression.
_CALL_BUILTINS = {
    "print", "input", "open", "getattr", "setattr", "delattr", "breakpoint", "vars", "globals",
    "locals", "help", "memoryview", "chr", "ord", "map", "filter", "iter", "next", "exit", "quit",
}  # fmt: skip
_CONSTANT_MAKERS = {
    "int",
    "float",
    "str",
    "bool",
    "list",
    "dict",
    "tuple",
    "set",
    "bytes",
    "object",
}
_GROWERS = {"append", "extend", "insert", "add", "update", "appendleft", "setdefault"}
_ALLOCATORS = {"bytearray", "bytes", "os.urandom", "numpy.zeros", "numpy.ones", "numpy.empty"}


_PIECES_NODES = 400
_CHAIN = 50
_DATA = (
    ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
    ast.GeneratorExp, ast.Lambda,
)  # fmt: skip


class PythonFlow:
    def __init__(self, nodes: list[ast.AST], qualified: Qualify) -> None:
        self.nodes = nodes  # every node of the tree, in source order (python_ast's walk)
        self.qualified = qualified
        # variable -> the expression it was last given; read for pieces only when a file
        # operation's path refers to it (lazily: most assignments never matter)
        self.sources: dict[str, ast.expr] = {}
        self.values: dict[str, list[str]] = {}  # variable -> its pieces, once worked out
        self.depth = 0
        self.findings: list[Finding] = []

    def run(self) -> list[Finding]:
        assigns: list[ast.Assign | ast.AnnAssign] = []
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
        calls: list[ast.Call] = []
        names: list[ast.Name] = []
        loops: list[ast.While | ast.For] = []
        constants: list[ast.Constant] = []
        buckets: dict[type, list[Any]] = {
            ast.Call: calls, ast.Name: names, ast.Constant: constants,
            ast.Assign: assigns, ast.AnnAssign: assigns, ast.While: loops, ast.For: loops,
            ast.FunctionDef: functions, ast.AsyncFunctionDef: functions, ast.ClassDef: functions,
        }  # fmt: skip
        for node in self.nodes:  # one pass, by exact type: the hot path of every assessment
            bucket = buckets.get(type(node))
            if bucket is not None:
                bucket.append(node)
        literals = [
            (c.value, c.lineno, c.col_offset + 1) for c in constants if isinstance(c.value, str)
        ]
        evaluators = [n for n in names if n.id in _EVALUATORS and isinstance(n.ctx, ast.Load)]
        for assign in assigns:  # values first, wherever they are set
            self._assign(assign)
        for function in functions:
            if not isinstance(function, ast.ClassDef):
                self._defaults(function.args)
        accesses: list[paths.Access] = []
        network = False
        for call in calls:
            name = self.qualified(call.func) or ""
            network = network or name.startswith(_NETWORK)
            accesses.extend(self._accesses(call, name))
            self._deserialise(call, name)
            self._infinite_iterator(call, name)
        callees = {id(call.func) for call in calls}
        for name_node in evaluators:
            if id(name_node) not in callees:
                self.add(
                    name_node, "evaluator-value", S.CRITICAL, f"{name_node.id} passed as a value"
                )
        for function in functions:
            self._decorators(function)
        for loop in loops:
            self._loop(loop)
        self.findings.extend(paths.findings(accesses, literals, network, SOURCE))
        return self.findings

    def add(self, node: ast.AST, rule: str, severity: Severity, message: str) -> None:
        line, column = getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1
        self.findings.append(Finding(rule, SOURCE, severity, message, line, column))

    # --- paths ---------------------------------------------------------------------------

    def _assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None or isinstance(node.value, _DATA):
            return  # a list, dict or function is data, not a path
        for target in targets:
            if isinstance(target, ast.Name):
                self.sources[target.id] = node.value

    def _defaults(self, args: ast.arguments) -> None:
        """A parameter's default is a value it is given (`def f(path="/etc/shadow")`)."""
        positional = [*args.posonlyargs, *args.args]
        pairs = list(
            zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
        )
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
        for arg, default in pairs:
            if not isinstance(default, _DATA):
                self.sources[arg.arg] = default

    def _value(self, name: str) -> list[str]:
        """The pieces of what `name` was given (empty while it is being worked out, so a
        variable defined in terms of itself ends)."""
        if name not in self.values:
            self.values[name] = []
            if self.depth < _CHAIN:  # a path is not spelled through 50 variables
                self.depth += 1
                self.values[name] = self.pieces(self.sources[name])
                self.depth -= 1
        return self.values[name]

    def pieces(self, expr: ast.AST) -> list[str]:
        """The literal path pieces `expr` is built from, in source order (a call that names
        the home directory, `Path.home()` or `os.getenv("HOME")`, is `~`)."""
        out: list[str] = []
        stack = [expr]
        budget = _PIECES_NODES  # a path is spelled in a few nodes; a huge expression is not one
        while stack and budget:
            budget -= 1
            node = stack.pop()
            if (
                isinstance(node, ast.Call)
                and (self.qualified(node.func) or "") in _HOME
                and (not node.args or _home_name(node.args[0]))
            ):
                out.append("~")
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append(node.value)
            elif isinstance(node, ast.Name) and node.id in self.sources:
                out.extend(self._value(node.id))
            elif isinstance(node, ast.Call):  # what is passed, not what is called ...
                stack.extend(reversed([*node.args, *(k.value for k in node.keywords)]))
                func = node.func  # ... but a method's receiver is part of the path
                if isinstance(func, ast.Attribute) and not _dotted(func.value):
                    stack.append(func.value)  # Path("/etc").joinpath(...), "{}/x".format(...)
            elif not isinstance(node, (ast.Attribute, *_DATA)):
                stack.extend(reversed(list(ast.iter_child_nodes(node))))
        return out

    def _accesses(self, node: ast.Call, name: str) -> Iterator[paths.Access]:
        def at(kind: str, expr: ast.AST | None) -> paths.Access | None:
            if expr is None:
                return None
            path = paths.spell(self.pieces(expr))
            if not path:
                return None
            return paths.Access(
                kind, path, f"{name or 'a call'}()", node.lineno, node.col_offset + 1
            )

        first = node.args[0] if node.args else None
        second = node.args[1] if len(node.args) > 1 else None
        found: list[paths.Access | None] = []
        if name in ("open", "io.open", "codecs.open"):
            found.append(at(_open_kind(node), first))
        elif name in _READS:
            found.append(at("read", first))
        elif name in _DELETES:
            found.append(at("delete", first))
        elif name in _WRITES:
            found.append(at("write", first))
        elif name in _COPIES or name in _MOVES:
            found += [at("delete" if name in _MOVES else "read", first), at("write", second)]
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_METHODS:
            found.append(at(_PATH_METHODS[node.func.attr], node.func.value))
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "open":
            found.append(at(_open_kind(node, 0), node.func.value))
        yield from (a for a in found if a is not None)

    # --- deserialisation ---------------------------------------------------------------

    def _deserialise(self, node: ast.Call, name: str) -> None:
        if name in _UNSAFE_LOADS:
            self.add(node, "unsafe-deserialization", S.HIGH, f"{name}(): loading runs code")
        elif name in ("yaml.load", "yaml.load_all"):
            loader = _keyword(node, "Loader")
            if loader is None and len(node.args) > 1:
                loader = node.args[1]
            spelled = self.qualified(loader) if isinstance(loader, ast.expr) else None
            if not spelled or not spelled.endswith(_SAFE_YAML_LOADERS):
                message = f"{name}() without a safe Loader builds arbitrary objects"
                self.add(node, "unsafe-deserialization", S.HIGH, message)
        elif name == "ruamel.yaml.YAML" and _text(_keyword(node, "typ")) in ("unsafe", "full"):
            message = "ruamel.yaml with typ='unsafe' builds arbitrary objects"
            self.add(node, "unsafe-deserialization", S.HIGH, message)
        elif (name == "torch.load" and not _true(_keyword(node, "weights_only"))) or (
            name == "numpy.load" and _true(_keyword(node, "allow_pickle"))
        ):
            self.add(node, "unsafe-deserialization", S.HIGH, f"{name}() unpickles its input")

    # --- calls without a call expression ------------------------------------------------

    def _decorators(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for deco in node.decorator_list:
            if isinstance(deco, ast.Lambda):
                self.add(deco, "decorator-call", S.HIGH, "a lambda as a decorator: a hidden call")
                continue
            name = self.qualified(deco) if isinstance(deco, ast.Name | ast.Attribute) else None
            if name in _EVALUATORS:
                self.add(deco, "decorator-call", S.CRITICAL, f"@{name}: runs code with no call")
            elif name in _CALL_BUILTINS:
                self.add(deco, "decorator-call", S.HIGH, f"@{name}: a call with no call syntax")

    # --- loops built never to end -------------------------------------------------------

    def _infinite_iterator(self, node: ast.Call, name: str) -> None:
        if name == "iter" and len(node.args) == 2 and _constant_maker(node.args[0]):
            self.add(node, "infinite-iterator", S.HIGH, "iter(f, sentinel) that never stops")

    def _loop(self, node: ast.While | ast.For) -> None:
        if isinstance(node, ast.While):
            endless = isinstance(node.test, ast.Constant) and bool(node.test.value)
        else:
            it = node.iter
            name = self.qualified(it.func) if isinstance(it, ast.Call) else None
            endless = isinstance(it, ast.Call) and (
                (name in ("itertools.count", "itertools.cycle"))
                or (name == "itertools.repeat" and len(it.args) == 1 and not it.keywords)
                or (name == "iter" and len(it.args) == 2 and _constant_maker(it.args[0]))
            )
        if not endless or _leaves(node, self.qualified):
            return
        if _allocates(node, self.qualified):
            message = "a loop with no way out that keeps allocating memory"
            self.add(node, "unbounded-allocation", S.HIGH, message)
        else:
            self.add(node, "infinite-loop", S.HIGH, "a loop with no way out (no break or return)")


def _open_kind(node: ast.Call, mode_index: int = 1) -> str:
    mode = next((k.value for k in node.keywords if k.arg == "mode"), None)
    if mode is None and len(node.args) > mode_index:
        mode = node.args[mode_index]
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return "write" if set(mode.value) & set("wax+") else "read"
    return "read"


def _dotted(node: ast.expr) -> bool:
    """A plain name or attribute chain (`os.path`): a module or object, not a value."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


def _home_name(node: ast.AST) -> bool:
    """`"~"` for expanduser, `"HOME"` for getenv: the home directory itself."""
    return isinstance(node, ast.Constant) and node.value in ("~", "HOME")


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _constant_maker(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _CONSTANT_MAKERS
    return isinstance(node, ast.Lambda) and isinstance(node.body, ast.Constant)


def _own_body(loop: ast.While | ast.For) -> Iterator[ast.AST]:
    """The loop's statements and expressions, not those of functions defined inside it."""
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def _leaves(loop: ast.While | ast.For, qualified: Qualify) -> bool:
    for node in _own_body(loop):
        if isinstance(node, ast.Break | ast.Return | ast.Raise | ast.Yield | ast.YieldFrom):
            return True
        if isinstance(node, ast.Call):
            name = qualified(node.func) or ""
            if name in ("sys.exit", "exit", "quit", "os._exit", "os.kill", "input"):
                return True
            if name.endswith((".read", ".readline", ".recv", ".accept", ".get", ".wait")):
                return True  # waits for input: an event loop, not a spin
    return False


def _allocates(loop: ast.While | ast.For, qualified: Qualify) -> bool:
    for node in _own_body(loop):
        if isinstance(node, ast.Call):
            name = qualified(node.func) or ""
            method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if method in _GROWERS or name in _ALLOCATORS:
                return True
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Mult):
            step = node.value
            counts = isinstance(step, ast.Constant) and type(step.value) in (int, float)
            if not (counts and isinstance(node.op, ast.Add)):
                return True  # a counter (n += 1) is no allocation: its number stays small
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            sides = (node.left, node.right)
            if any(isinstance(s, ast.Constant) and isinstance(s.value, int) for s in sides):
                return True
    return False


def walk(root: ast.AST) -> Iterator[ast.AST]:
    """Every node under `root`, depth first in source order, without recursion."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
