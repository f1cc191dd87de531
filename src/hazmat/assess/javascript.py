"""JavaScript and TypeScript rules on tree-sitter's parsers (TypeScript is parsed as TSX-free
TypeScript; the same rules apply to both, since TypeScript compiles to the same calls)."""

from __future__ import annotations

from collections.abc import Sequence

from hazmat.assess.syntax_tree import (
    Node,
    position,
    read,
    string_value,
    text,
    walk,
)
from hazmat.assess.tree_flow import TreeFlow
from hazmat.models import Finding, Severity

__all__ = ["JavaScriptAnalyzer"]

SOURCE = "javascript"
S = Severity

MODULES: dict[str, tuple[Severity, str]] = {
    "child_process": (S.HIGH, "starts other programs"),
    "vm": (S.HIGH, "compiles and runs code in new contexts"),
    "worker_threads": (S.MEDIUM, "starts threads that run code"),
    "cluster": (S.MEDIUM, "starts processes"),
    "v8": (S.HIGH, "engine internals"),
    "inspector": (S.HIGH, "debugger protocol"),
    "module": (S.HIGH, "creates require functions and loads modules"),
    "net": (S.MEDIUM, "network access"),
    "dgram": (S.MEDIUM, "network access"),
    "tls": (S.MEDIUM, "network access"),
    "http": (S.MEDIUM, "network access"),
    "https": (S.MEDIUM, "network access"),
    "http2": (S.MEDIUM, "network access"),
    "dns": (S.MEDIUM, "network access"),
    "fs": (S.LOW, "file system"),
    "fs/promises": (S.LOW, "file system"),
    "os": (S.LOW, "operating-system interface"),
    "process": (S.LOW, "the process object"),
    "wasi": (S.MEDIUM, "WebAssembly system interface"),
}

_FS_WRITES = {
    "writeFile",
    "writeFileSync",
    "appendFile",
    "appendFileSync",
    "unlink",
    "unlinkSync",
    "rm",
    "rmSync",
    "rmdir",
    "rmdirSync",
    "chmod",
    "chmodSync",
    "chown",
    "chownSync",
    "symlink",
    "symlinkSync",
    "link",
    "linkSync",
    "rename",
    "renameSync",
    "createWriteStream",
    "truncate",
    "truncateSync",
    "copyFile",
    "copyFileSync",
}
_PROCESS_MEMBERS: dict[str, tuple[Severity, str]] = {
    "binding": (S.CRITICAL, "reaches Node's internal C++ bindings"),
    "_linkedBinding": (S.CRITICAL, "reaches Node's internal C++ bindings"),
    "dlopen": (S.CRITICAL, "loads native code"),
    "mainModule": (S.HIGH, "reaches the main module and its require"),
    "kill": (S.MEDIUM, "signals processes"),
    "setuid": (S.HIGH, "changes user"),
    "setgid": (S.HIGH, "changes group"),
    "chdir": (S.LOW, "changes directory"),
}
_GLOBALS = {"globalThis", "global", "window", "self", "this", "process", "module", "require"}
_BUILDERS = {
    "fromCharCode",
    "fromCodePoint",
    "atob",
    "btoa",
    "join",
    "reverse",
    "concat",
    "replace",
    "toString",
    "decode",
    "split",
    "map",
    "slice",
    "substring",
    "substr",
}
_DECODERS = {"fromCharCode()", "fromCodePoint()", "atob()", "btoa()", "reverse()", "decode()",
             "escape sequences"}  # fmt: skip
_STRING_CUTS = {"slice()", "substring()", "substr()", "split()", "toString()", "a template"}
_PROTOTYPE = {
    "__proto__": (S.HIGH, "prototype pollution"),
    "__defineGetter__": (S.MEDIUM, "legacy property hooks"),
    "__lookupGetter__": (S.MEDIUM, "legacy property hooks"),
}


class JavaScriptAnalyzer:
    """hazmat's JavaScript/TypeScript rules. Parsers are created per call; nothing is shared."""

    name = SOURCE
    languages = frozenset({"javascript", "typescript"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        grammar = "typescript" if language == "typescript" else "javascript"
        findings, root = read(code, grammar, SOURCE)
        rules = _Rules()
        flow = TreeFlow(language, _callee)
        for node in walk(root):
            rules.visit(node)
            flow.visit(node)
        return findings + rules.findings + flow.finish()


class _Rules:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(
        self, node: Node, rule: str, severity: Severity, message: str, cwe: int | None = None
    ) -> None:
        line, column = position(node)
        self.findings.append(Finding(rule, SOURCE, severity, message, line, column, cwe))

    def visit(self, node: Node) -> None:
        kind = node.type
        if kind == "import_statement" or kind == "export_statement":
            self._import_source(node, node.child_by_field_name("source"))
            for child in node.children:
                if child.type == "import_require_clause":
                    self._import_source(
                        node, child.child_by_field_name("source") or _first(child, "string")
                    )
        elif kind == "call_expression":
            self._call(node)
        elif kind == "new_expression":
            if text(node.child_by_field_name("constructor")) == "Function":
                self.add(node, "new-function", S.HIGH, "new Function(): compiles a string", 95)
        elif kind == "member_expression":
            self._member(node)
        elif kind == "subscript_expression":
            self._subscript(node)

    def _import_source(self, node: Node, source: Node | None) -> None:
        if source is None:
            return
        name = string_value(source)
        if name is None:
            return
        self._module(node, name)

    def _module(self, node: Node, name: str) -> None:
        bare = name.removeprefix("node:")
        root = bare if bare in MODULES else bare.split("/")[0]
        if root in MODULES:
            severity, why = MODULES[root]
            self.add(node, f"require-{root}", severity, f"loads {name}: {why}")

    def _call(self, node: Node) -> None:
        func = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        first = _first_argument(args)
        name = text(func) if func is not None else ""
        if func is not None and func.type == "import":
            self._loader(node, "import()", first)
        elif name == "require":
            self._loader(node, "require()", first)
        elif name in ("eval", "globalThis.eval", "window.eval", "global.eval"):
            self.add(node, "call-eval", S.HIGH, "eval(): runs a string as code", 95)
        elif name == "Function":
            self.add(node, "new-function", S.HIGH, "Function(): compiles a string", 95)
        elif (
            name in ("setTimeout", "setInterval")
            and first is not None
            and (first.type in ("string", "template_string", "binary_expression"))
        ):
            self.add(node, "string-timer", S.MEDIUM, f"{name} with a string runs it as code", 95)
        elif func is not None and func.type == "member_expression":
            prop = text(func.child_by_field_name("property"))
            obj = text(func.child_by_field_name("object"))
            if prop in _FS_WRITES and ("fs" in obj.lower() or obj in ("promises",)):
                self.add(node, "fs-write", S.MEDIUM, f"{obj}.{prop}(): writes the file system")
            if (
                prop
                in ("exec", "execSync", "spawn", "spawnSync", "execFile", "execFileSync", "fork")
                and obj not in ("", "this")
                and _looks_like_process_module(obj)
            ):
                self.add(
                    node, "child-process-call", S.HIGH, f"{obj}.{prop}(): starts a program", 78
                )
            if prop in ("binding", "_linkedBinding", "dlopen") and obj != "process":
                # `process` under another name (`const p = process; p.binding(...)`)
                self.add(node, "binding-call", S.HIGH, f".{prop}(): the shape of process.{prop}")
            if prop == "createRequire":
                self.add(node, "create-require", S.HIGH, "createRequire(): a new require")
            if obj == "vm" or prop in ("runInNewContext", "runInThisContext", "compileFunction"):
                self.add(node, "vm-run", S.HIGH, f"{prop}(): compiles and runs code", 95)

    def _loader(self, node: Node, what: str, arg: Node | None) -> None:
        value = string_value(arg)
        if value is not None:
            self._module(node, value)
            return
        built = _built(arg)
        if built:
            self.add(
                node,
                "obfuscated-name",
                S.CRITICAL,
                f"{what} with a name built at run time ({built})",
                470,
            )
        else:
            self.add(node, "dynamic-require", S.HIGH, f"{what} with a computed name", 470)

    def _member(self, node: Node) -> None:
        obj = node.child_by_field_name("object")
        prop = text(node.child_by_field_name("property"))
        if text(obj) == "process" and prop in _PROCESS_MEMBERS:
            severity, why = _PROCESS_MEMBERS[prop]
            self.add(node, f"process-{prop}", severity, f"process.{prop}: {why}")
        if (
            prop == "constructor"
            and obj is not None
            and obj.type == "member_expression"
            and (text(obj.child_by_field_name("property")) == "constructor")
        ):
            self.add(
                node,
                "constructor-chain",
                S.CRITICAL,
                ".constructor.constructor: reaches the Function constructor",
                95,
            )
        if prop in _PROTOTYPE:
            severity, why = _PROTOTYPE[prop]
            self.add(node, "prototype", severity, f".{prop}: {why}", 1321)

    def _subscript(self, node: Node) -> None:
        obj = node.child_by_field_name("object")
        index = node.child_by_field_name("index")
        value = string_value(index)
        if value is not None:
            if value in ("constructor", "eval", "binding", "mainModule", "__proto__", "require"):
                self.add(node, "string-member", S.HIGH, f"[{value!r}]: reaches {value} by name")
            return
        if index is None or index.type in ("number", "identifier"):
            if text(obj) in _GLOBALS and index is not None and index.type == "identifier":
                self.add(
                    node,
                    "global-lookup",
                    S.HIGH,
                    f"{text(obj)}[{text(index)}]: a global reached by a computed name",
                    470,
                )
            return
        built = _built(index)
        if built:
            # On a global, or spelled by a decoder, it is the shape of an escape; on a program's
            # own object a key cut from a string (`options[arg.slice(2)]`) is everyday code,
            # unless what it reaches is called.
            if text(obj) in _GLOBALS or built in _DECODERS:
                severity = S.CRITICAL
            elif node.parent is not None and node.parent.type == "call_expression":
                severity = S.HIGH
            else:
                severity = S.MEDIUM if built in _STRING_CUTS else S.HIGH
            self.add(
                node,
                "obfuscated-name",
                severity,
                f"member reached by a name built at run time ({built})",
                470,
            )


def _callee(call: Node) -> str:
    return text(call.child_by_field_name("function"))


def _first(node: Node, kind: str) -> Node | None:
    return next((c for c in node.children if c.type == kind), None)


def _first_argument(args: Node | None) -> Node | None:
    if args is None:
        return None
    if args.type == "template_string":  # tagged template
        return args
    return next((c for c in args.named_children if c.type != "comment"), None)


def _looks_like_process_module(obj: str) -> bool:
    lowered = obj.lower()
    return any(word in lowered for word in ("child", "cp", "proc", "spawn", "exec"))


def _built(node: Node | None) -> str | None:
    """How `node` assembles a string at run time, if it visibly does."""
    if node is None:
        return None
    for sub in walk(node):
        plus = sub.type == "binary_expression" and text(sub.child_by_field_name("operator")) == "+"
        if plus and any(n.type in ("string", "template_string") for n in walk(sub)):
            return "arithmetic"  # string concatenation; `args[i + 1]` is only an index
        if sub.type == "template_string" and any(
            c.type == "template_substitution" for c in sub.children
        ):
            return "a template"
        if sub.type == "call_expression":
            func = sub.child_by_field_name("function")
            prop = (
                text(func.child_by_field_name("property"))
                if func is not None and (func.type == "member_expression")
                else text(func)
            )
            if prop in _BUILDERS:
                return f"{prop}()"
        if sub.type == "string" and any(c.type == "escape_sequence" for c in sub.children):
            return "escape sequences"
    return None
