"""Python rules written for hazmat, on the standard library's own parser (`ast`).

The walk is iterative, so a deeply nested program cannot exhaust the stack here; `ast.parse`
itself raises `RecursionError` or `MemoryError` on such input, which the child reports as an
incomplete assessment. Identifiers are checked in the raw token stream as well, because the
parser folds them to NFKC: `ｅｖａｌ` in the source is `eval` in the tree.
"""

from __future__ import annotations

import ast
import io
import tokenize
import unicodedata
from collections.abc import Sequence

from hazmat.assess.base import SYNTAX_ERROR, text_findings
from hazmat.assess.python_flow import PythonFlow
from hazmat.assess.python_flow import walk as _walk
from hazmat.models import Finding, Severity

__all__ = ["PythonAnalyzer"]

SOURCE = "python-ast"
S = Severity

# module -> (severity, why). Importing is not harmful on its own; these modules are the ones
# an escape or an abuse needs, so their presence raises the score.
MODULES: dict[str, tuple[Severity, str]] = {
    "os": (S.LOW, "operating-system interface"),
    "posix": (S.HIGH, "raw POSIX interface (what `os` wraps)"),
    "subprocess": (S.HIGH, "starts other programs"),
    "_posixsubprocess": (S.CRITICAL, "private process-spawning primitive"),
    "pty": (S.HIGH, "starts programs on a pseudo-terminal"),
    "socket": (S.HIGH, "raw network access"),
    "ssl": (S.MEDIUM, "network encryption"),
    "http": (S.MEDIUM, "network access"),
    "urllib": (S.MEDIUM, "network access"),
    "requests": (S.MEDIUM, "network access"),
    "ftplib": (S.MEDIUM, "network access"),
    "smtplib": (S.MEDIUM, "network access"),
    "telnetlib": (S.MEDIUM, "network access"),
    "ctypes": (S.CRITICAL, "calls C functions and writes raw memory"),
    "cffi": (S.CRITICAL, "calls C functions and writes raw memory"),
    "importlib": (S.HIGH, "imports modules by computed name"),
    "zipimport": (S.HIGH, "imports code from archives"),
    "runpy": (S.HIGH, "runs modules and files as code"),
    "code": (S.HIGH, "an interactive interpreter"),
    "codeop": (S.MEDIUM, "compiles code"),
    "builtins": (S.HIGH, "the builtins module (rebinding or reaching eval/exec)"),
    "pickle": (S.MEDIUM, "deserialisation runs code"),
    "_pickle": (S.MEDIUM, "deserialisation runs code"),
    "cPickle": (S.MEDIUM, "deserialisation runs code"),
    "marshal": (S.MEDIUM, "loads raw code objects"),
    "shelve": (S.MEDIUM, "pickle-backed storage"),
    "dill": (S.MEDIUM, "deserialisation runs code"),
    "shutil": (S.LOW, "copies and deletes file trees"),
    "multiprocessing": (S.MEDIUM, "starts processes"),
    "signal": (S.MEDIUM, "signal handling"),
    "resource": (S.MEDIUM, "changes resource limits"),
    "fcntl": (S.MEDIUM, "raw file-descriptor control"),
    "mmap": (S.MEDIUM, "maps memory"),
    "gc": (S.MEDIUM, "reaches every object through the collector"),
    "inspect": (S.MEDIUM, "reaches frames and code objects"),
    "webbrowser": (S.MEDIUM, "starts a browser"),
    "sys": (S.INFO, "interpreter internals"),
}

# Attributes that walk the object graph or reach interpreter frames: the usual first steps
# out of a Python-level jail (`().__class__.__base__.__subclasses__()`).
ATTRIBUTES: dict[str, tuple[Severity, str]] = {
    "__subclasses__": (S.CRITICAL, "walks to every class in the interpreter"),
    "__globals__": (S.CRITICAL, "reaches a function's module globals"),
    "__builtins__": (S.CRITICAL, "reaches the builtins (eval, exec, __import__)"),
    "__code__": (S.CRITICAL, "reads or replaces a function's code object"),
    "__closure__": (S.HIGH, "reaches a function's captured cells"),
    "__mro__": (S.HIGH, "walks the class hierarchy"),
    "__bases__": (S.HIGH, "walks or rewrites the class hierarchy"),
    "__base__": (S.HIGH, "walks the class hierarchy"),
    "__getattribute__": (S.MEDIUM, "generic attribute access"),
    "__reduce__": (S.MEDIUM, "pickle gadget hook"),
    "__reduce_ex__": (S.MEDIUM, "pickle gadget hook"),
    "__loader__": (S.HIGH, "reaches the module loader"),
    "__import__": (S.HIGH, "imports by name"),
    "gi_frame": (S.CRITICAL, "reaches a generator's frame"),
    "cr_frame": (S.CRITICAL, "reaches a coroutine's frame"),
    "ag_frame": (S.CRITICAL, "reaches an async generator's frame"),
    "tb_frame": (S.CRITICAL, "reaches a traceback's frame"),
    "f_back": (S.CRITICAL, "walks up the call stack"),
    "f_globals": (S.CRITICAL, "reaches a frame's globals"),
    "f_locals": (S.HIGH, "reaches a frame's locals"),
    "f_builtins": (S.CRITICAL, "reaches a frame's builtins"),
    "f_code": (S.HIGH, "reaches a frame's code"),
    "tb_next": (S.HIGH, "walks a traceback"),
    "__traceback__": (S.HIGH, "reaches an exception's traceback and its frames"),
    "_getframe": (S.HIGH, "reaches interpreter frames"),
}

# Fully qualified calls (after resolving import aliases).
CALLS: dict[str, tuple[str, Severity, str, int | None]] = {
    **{
        f"os.{name}": ("os-process", S.HIGH, "starts, replaces or signals processes", 78)
        for name in [
            "system",
            "popen",
            "execl",
            "execle",
            "execlp",
            "execlpe",
            "execv",
            "execve",
            "execvp",
            "execvpe",
            "spawnl",
            "spawnle",
            "spawnlp",
            "spawnlpe",
            "spawnv",
            "spawnve",
            "spawnvp",
            "spawnvpe",
            "posix_spawn",
            "posix_spawnp",
            "fork",
            "forkpty",
            "kill",
            "killpg",
            "setuid",
            "setgid",
            "seteuid",
            "setegid",
            "setreuid",
            "setregid",
            "chroot",
            "startfile",
        ]
    },
    **{
        f"os.{name}": ("file-delete", S.LOW, "deletes or re-permissions files", None)
        for name in ["remove", "unlink", "rmdir", "removedirs", "chmod", "chown", "lchown"]
    },
    "shutil.rmtree": ("file-delete", S.LOW, "deletes a file tree", None),
    "sys._getframe": ("frame-access", S.HIGH, "reaches interpreter frames", None),
    "sys.settrace": ("trace-hook", S.MEDIUM, "installs a trace hook", None),
    "sys.setprofile": ("trace-hook", S.MEDIUM, "installs a profile hook", None),
    "gc.get_objects": ("object-graph", S.HIGH, "reaches every live object", None),
    "gc.get_referrers": ("object-graph", S.HIGH, "walks the object graph", None),
    "gc.get_referents": ("object-graph", S.HIGH, "walks the object graph", None),
}

# Sinks whose argument names something to import, evaluate or look up.
_NAME_SINKS = {
    "__import__": 0,
    "importlib.import_module": 0,
    "importlib.__import__": 0,
    "getattr": 1,
    "setattr": 1,
    "delattr": 1,
    "hasattr": 1,
}
# Calls that build a name at run time out of something that does not look like it.
_OBFUSCATORS = {"chr", "bytes.fromhex", "codecs.decode", "base64.b64decode", "bytes", "reversed"}
_BUILDING_METHODS = {"join", "decode", "format", "replace", "fromhex", "translate", "swapcase"}
_EVALUATORS = {"eval": S.HIGH, "exec": S.HIGH, "compile": S.MEDIUM, "breakpoint": S.MEDIUM}
_REFLECTION = {"globals", "locals", "vars"}
_DUNDER_NAMES = {k for k, (sev, _) in ATTRIBUTES.items() if sev.rank >= S.HIGH.rank}


class PythonAnalyzer:
    """hazmat's own Python rules. Stateless and cheap; safe to share between threads."""

    name = SOURCE
    languages = frozenset({"python"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        findings = text_findings(code, SOURCE)
        findings.extend(_identifier_findings(code))
        try:
            tree = ast.parse(code, "<code>")
        except SyntaxError as exc:
            message = f"syntax error: {exc.msg}"
            findings.append(
                Finding(SYNTAX_ERROR, SOURCE, S.MEDIUM, message, exc.lineno or 0, exc.offset or 0)
            )
            return findings
        findings.extend(_Rules(tree).run())
        return findings


def _identifier_findings(code: str) -> list[Finding]:
    """Identifiers whose NFKC form differs from how they are written (`ｅｖａｌ`, `ℯxec`)."""
    if code.isascii():
        return []
    findings = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type != tokenize.NAME or tok.string.isascii():
                continue
            folded = unicodedata.normalize("NFKC", tok.string)
            if folded == tok.string:
                continue
            hides = folded in _EVALUATORS or folded in _DUNDER_NAMES or folded in MODULES
            findings.append(
                Finding(
                    "nfkc-identifier",
                    SOURCE,
                    S.CRITICAL if hides else S.HIGH,
                    f"identifier {tok.string!r} is {folded!r} to Python (NFKC normalisation)",
                    tok.start[0],
                    tok.start[1] + 1,
                    cwe=1007,
                )
            )
    except (tokenize.TokenError, SyntaxError):
        pass  # the parser reports the syntax error
    return findings


class _Rules:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}  # local name -> qualified name
        self.findings: list[Finding] = []

    def run(self) -> list[Finding]:
        nodes = list(_walk(self.tree))
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
        for node in nodes:
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Name):
                self._name(node)
            elif isinstance(node, ast.Subscript):
                self._subscript(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self._string(node)
        self.findings.extend(PythonFlow(nodes, self.qualified).run())
        return self.findings

    def add(
        self,
        node: ast.AST,
        rule: str,
        severity: Severity,
        message: str,
        cwe: int | None = None,
    ) -> None:
        if severity is S.INFO:
            return
        line = getattr(node, "lineno", 0)
        column = getattr(node, "col_offset", -1) + 1
        self.findings.append(Finding(rule, SOURCE, severity, message, line, column, cwe))

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
                self._module(node, alias.name)
            return
        module = node.module or ""
        if node.level:
            return
        self._module(node, module)
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            if alias.name in ATTRIBUTES or alias.name in _EVALUATORS:
                self._module(node, f"{module}.{alias.name}")

    def _module(self, node: ast.AST, name: str) -> None:
        root = name.split(".")[0]
        if root in MODULES:
            severity, why = MODULES[root]
            self.add(node, f"import-{root}", severity, f"imports {name}: {why}")
        if name in ("os.system", "os.popen", "builtins.eval", "builtins.exec"):
            self.add(node, "import-dangerous-name", S.HIGH, f"imports {name}")

    def qualified(self, node: ast.expr) -> str | None:
        """The dotted name a call target resolves to, through import aliases."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def _call(self, node: ast.Call) -> None:
        name = self.qualified(node.func)
        if name is None:
            return
        if name in CALLS:
            rule, severity, message, cwe = CALLS[name]
            self.add(node, rule, severity, f"calls {name}: {message}", cwe)
        if name.startswith("subprocess."):
            self.add(node, "subprocess-call", S.HIGH, f"calls {name}: starts a program", 78)
        if name in _EVALUATORS or name in ("builtins.eval", "builtins.exec"):
            short = name.rsplit(".", 1)[-1]
            severity = _EVALUATORS[short]
            literal = bool(node.args) and _is_literal(node.args[0])
            if short in ("eval", "exec", "compile") and not literal:
                severity = S.HIGH
            self.add(node, f"call-{short}", severity, f"calls {short}(): runs code", 95)
        if name in _REFLECTION:
            self.add(node, "reflection", S.MEDIUM, f"calls {name}(): reaches names by string")
        if name in _NAME_SINKS:
            self._name_sink(node, name, _NAME_SINKS[name])
        if name == "open" and len(node.args) >= 1 and _mentions_proc(node.args[0]):
            self.add(node, "proc-access", S.MEDIUM, "opens a file under /proc")

    def _name_sink(self, node: ast.Call, name: str, index: int) -> None:
        if len(node.args) <= index:
            return
        arg = node.args[index]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if name in ("__import__", "importlib.import_module", "importlib.__import__"):
                self._module(node, arg.value)
                self.add(node, "dynamic-import", S.MEDIUM, f"{name}({arg.value!r})")
            return
        obfuscated = self._built_at_run_time(arg)
        if obfuscated:
            self.add(
                node,
                "obfuscated-name",
                S.CRITICAL,
                f"{name}() with a name built at run time ({obfuscated})",
                470,
            )
        elif name.startswith(("__import__", "importlib")):
            self.add(node, "dynamic-import", S.HIGH, f"{name}() with a computed name", 470)
        else:
            self.add(node, "dynamic-attribute", S.MEDIUM, f"{name}() with a computed name", 470)

    def _built_at_run_time(self, node: ast.expr) -> str | None:
        """How `node` assembles a string, if it visibly does (concatenation, chr, decoding)."""
        for sub in _walk(node):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Add | ast.Mod):
                return "string arithmetic"
            if isinstance(sub, ast.JoinedStr):
                return "an f-string"
            if isinstance(sub, ast.Call):
                called = self.qualified(sub.func) or ""
                if called in _OBFUSCATORS:
                    return f"{called}()"
                method = sub.func.attr if isinstance(sub.func, ast.Attribute) else ""
                if method in _BUILDING_METHODS:
                    return f".{method}()"
            if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Slice):
                return "slicing"
        return None

    def _attribute(self, node: ast.Attribute) -> None:
        if node.attr in ATTRIBUTES:
            severity, why = ATTRIBUTES[node.attr]
            self.add(node, "object-graph", severity, f".{node.attr}: {why}")
        base = self.qualified(node.value)
        if node.attr == "modules" and base == "sys":
            self.add(node, "sys-modules", S.HIGH, "sys.modules: reaches any loaded module")

    def _name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__", "__loader__", "__spec__"):
            severity = S.CRITICAL if node.id == "__builtins__" else S.HIGH
            self.add(node, "object-graph", severity, f"{node.id}: reaches interpreter internals")

    def _subscript(self, node: ast.Subscript) -> None:
        base = node.value
        if (
            isinstance(base, ast.Call)
            and self.qualified(base.func) in _REFLECTION
            and not _is_literal(node.slice)
            and self._built_at_run_time(node.slice)
        ):
            self.add(node, "obfuscated-name", S.CRITICAL, "globals()[...] with a built name")

    def _string(self, node: ast.Constant) -> None:
        value = str(node.value)
        if len(value) > 64:
            return
        if value in _DUNDER_NAMES:
            severity, why = ATTRIBUTES[value]
            self.add(node, "object-graph-string", severity, f"string {value!r}: {why}")


def _is_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant)


def _mentions_proc(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("/proc")
        for n in _walk(node)
    )
