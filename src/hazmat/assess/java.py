"""Java rules on tree-sitter's Java grammar.

Types are named as written and as imported (`import java.net.Socket;` makes `Socket` the
network's). `Runtime.exec` is found through whatever holds the runtime: a variable, a field, a
method that returns it. Reflection, class loading, script engines and native code are the ways
out of the language, so they count most.
"""

from __future__ import annotations

from collections.abc import Sequence

from hazmat.assess.syntax_tree import Node, read, string_value, text, walk
from hazmat.assess.tree_rules import Loop, Report, Values
from hazmat.models import Finding, Severity

__all__ = ["JavaAnalyzer"]

SOURCE = "java"
S = Severity

# import prefix -> (severity, why)
IMPORTS: dict[str, tuple[Severity, str]] = {
    "sun.misc.Unsafe": (S.CRITICAL, "raw memory access"),
    "jdk.internal": (S.CRITICAL, "the JDK's internals"),
    "com.sun.jna": (S.CRITICAL, "calls native code"),
    "java.lang.invoke": (S.HIGH, "method handles reach private members"),
    "java.lang.reflect": (S.MEDIUM, "reflection"),
    "javax.script": (S.HIGH, "runs scripts"),
    "javax.tools": (S.HIGH, "compiles code at run time"),
    "java.lang.instrument": (S.HIGH, "rewrites loaded classes"),
    "java.net": (S.MEDIUM, "network access"),
    "java.nio.channels.SocketChannel": (S.HIGH, "raw network access"),
    "java.rmi": (S.MEDIUM, "remote objects"),
}
# type -> (rule, severity, why, cwe), for `new T(...)` and `T.m(...)`
TYPES: dict[str, tuple[str, Severity, str, int | None]] = {
    "ProcessBuilder": ("process-exec", S.HIGH, "starts a program", 78),
    "Socket": ("socket", S.HIGH, "raw network access", None),
    "ServerSocket": ("socket", S.HIGH, "raw network access", None),
    "DatagramSocket": ("socket", S.HIGH, "raw network access", None),
    "SocketChannel": ("socket", S.HIGH, "raw network access", None),
    "URL": ("network", S.MEDIUM, "network access", None),
    "HttpClient": ("network", S.MEDIUM, "network access", None),
    "HttpURLConnection": ("network", S.MEDIUM, "network access", None),
    "ScriptEngineManager": ("script-eval", S.HIGH, "runs scripts", 95),
    "URLClassLoader": ("class-loading", S.HIGH, "loads classes from anywhere", 470),
    "ObjectInputStream": ("unsafe-deserialization", S.HIGH, "deserialisation runs code", 502),
    "XMLDecoder": ("unsafe-deserialization", S.HIGH, "deserialisation runs code", 502),
    "MethodHandles": ("reflection", S.HIGH, "method handles reach private members", 470),
    "Unsafe": ("unsafe", S.CRITICAL, "raw memory access", None),
    "ToolProvider": ("runtime-compile", S.HIGH, "compiles code at run time", 94),
}
# method -> (rule, severity, why, cwe), for any receiver
METHODS: dict[str, tuple[str, Severity, str, int | None]] = {
    "forName": ("reflection", S.HIGH, "loads a class by name", 470),
    "getDeclaredMethod": ("reflection", S.HIGH, "reaches a method by name", 470),
    "getMethod": ("reflection", S.HIGH, "reaches a method by name", 470),
    "getDeclaredField": ("reflection", S.HIGH, "reaches a field by name", 470),
    "setAccessible": ("reflection-access", S.HIGH, "switches off access checks", 470),
    "privateLookupIn": ("reflection-access", S.HIGH, "reaches private members", 470),
    "defineClass": ("class-loading", S.HIGH, "defines a class from bytes", 470),
    "loadLibrary": ("native-library", S.CRITICAL, "loads native code", 111),
    "getEngineByName": ("script-eval", S.HIGH, "runs scripts", 95),
}
_NATIVE_LOADS = {"loadLibrary", "load", "mapLibraryName"}
_FILES: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("FileInputStream", "FileReader", "RandomAccessFile", "Scanner"), ("read", 0)),
    **dict.fromkeys(("FileOutputStream", "FileWriter", "PrintWriter", "PrintStream"), ("write", 0)),
    **dict.fromkeys(
        (
            "readAllBytes",
            "readAllLines",
            "readString",
            "lines",
            "newBufferedReader",
            "newInputStream",
            "list",
            "walk",
        ),
        ("read", 0),
    ),
    **dict.fromkeys(
        (
            "write",
            "writeString",
            "newBufferedWriter",
            "newOutputStream",
            "createFile",
            "createDirectories",
            "setPosixFilePermissions",
        ),
        ("write", 0),
    ),
    **dict.fromkeys(("delete", "deleteIfExists"), ("delete", 0)),
    "createSymbolicLink": ("write", 0),
}
_PAIRS = {"copy": "read", "move": "delete"}
_NETWORK = {"Socket", "URL", "HttpClient", "openConnection", "openStream", "SocketChannel",
            "DatagramSocket", "HttpURLConnection", "newHttpClient", "send"}  # fmt: skip
_EXIT_CALLS = {"exit", "halt", "nextLine", "nextInt", "next", "readLine", "hasNext", "hasNextLine",
               "read", "take", "await", "join", "wait"}  # fmt: skip
_GROWERS = {"add", "put", "append", "addAll", "offer", "push"}
_DECODERS = {"decode", "getDecoder", "reverse", "fromCharCode", "valueOf", "toString"}


class JavaAnalyzer:
    """hazmat's Java rules."""

    name = SOURCE
    languages = frozenset({"java"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        findings, root = read(code, "java", SOURCE)
        rules = _Rules(Report(SOURCE))
        rules.check(root)
        return findings + rules.report.finish()


class _Rules:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.runtimes: set[str] = set()  # variables, fields and methods that hold the Runtime
        self.values = Values(self._terminal, self._reference, self._parts)
        nested = frozenset({"lambda_expression", "class_body", "method_declaration"})
        self.loop = Loop(self._exits, self._spawns, self._grows, nested)

    def add(
        self, node: Node, rule: str, severity: Severity, message: str, cwe: int | None = None
    ) -> None:
        self.report.add(node, rule, severity, message, cwe)

    def check(self, root: Node) -> None:
        nodes = list(walk(root))
        for node in nodes:
            if node.type == "variable_declarator":
                self._declare(node)
            elif node.type == "method_declaration" and "getRuntime()" in text(
                node.child_by_field_name("body")
            ):
                self.runtimes.add(text(node.child_by_field_name("name")))
        for node in nodes:
            self._visit(node)

    def _visit(self, node: Node) -> None:
        kind = node.type
        if kind == "import_declaration":
            self._import(node)
        elif kind == "method_invocation":
            self._method(node)
        elif kind == "object_creation_expression":
            self._new(node)
        elif kind == "modifiers" and any(c.type == "native" for c in node.children):
            self.add(node, "jni-native", S.CRITICAL, "a native method: code outside the JVM", 111)
        elif kind in ("while_statement", "for_statement", "do_statement"):
            self._loop(node)
        elif kind == "string_literal":
            value = string_value(node)
            if value is not None:
                self.report.literal(value, node)
        elif kind == "identifier" and text(node) == "theUnsafe":
            self.add(node, "unsafe", S.CRITICAL, "theUnsafe: raw memory access")

    def _declare(self, node: Node) -> None:
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None or value is None:
            return
        self.values.assign(text(name), value)
        parent = node.parent
        declared = text(parent.child_by_field_name("type")) if parent is not None else ""
        if declared == "Runtime" or "getRuntime()" in text(value):
            self.runtimes.add(text(name))

    def _terminal(self, node: Node) -> list[str] | None:
        value = string_value(node)
        if value is not None:
            return [value]
        source = text(node)
        if source in ('System.getProperty("user.home")', 'System.getenv("HOME")'):
            return ["~"]
        return None

    def _reference(self, node: Node) -> str | None:
        return text(node) if node.type == "identifier" else None

    def _parts(self, node: Node) -> list[Node]:
        if node.type in ("method_invocation", "object_creation_expression"):
            args = node.child_by_field_name("arguments")
            receiver = node.child_by_field_name("object")
            builds = receiver is not None and self._builds_path(receiver)
            extra = [receiver] if builds and receiver is not None else []
            return extra + (args.named_children if args is not None else [])
        return list(node.named_children)

    def _builds_path(self, receiver: Node) -> bool:
        """A receiver a path is built on: `Paths.get("a").resolve("b")`, `home.resolve(x)`."""
        if receiver.type == "identifier":
            return text(receiver) in self.values.sources
        return receiver.type in ("method_invocation", "object_creation_expression")

    # --- rules ------------------------------------------------------------------------

    def _import(self, node: Node) -> None:
        path = text(node).removeprefix("import").removeprefix(" static").strip(" ;")
        for prefix, (severity, why) in IMPORTS.items():
            if path == prefix or path.startswith(prefix + "."):
                rule = "import-" + prefix.rsplit(".", 1)[-1].lower()
                self.add(node, rule, severity, f"imports {path}: {why}")
                return

    def _method(self, node: Node) -> None:
        name = text(node.child_by_field_name("name"))
        receiver = node.child_by_field_name("object")
        owner = text(receiver)
        if receiver is not None and receiver.type == "field_access":  # java.nio.file.Files
            owner = owner.rsplit(".", 1)[-1]
        args = node.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        if name == "exec" and self._is_runtime(receiver):
            self.add(node, "process-exec", S.HIGH, "Runtime.exec(): starts a program", 78)
        if name in METHODS:
            rule, severity, why, cwe = METHODS[name]
            self.add(node, rule, severity, f".{name}(): {why}", cwe)
            self._reflective_name(node, name, first)
        if name in _NATIVE_LOADS and (owner == "System" or self._is_runtime(receiver)):
            self.add(
                node, "native-library", S.CRITICAL, f"{owner}.{name}(): loads native code", 111
            )
        if owner in TYPES:
            rule, severity, why, cwe = TYPES[owner]
            self.add(node, rule, severity, f"{owner}.{name}(): {why}", cwe)
        if owner == "System" and name == "getenv" and first is None:
            self.report.dumps_environment(node, "System.getenv()")
        if name == "eval" and "engine" in owner.lower():
            self.add(node, "script-eval", S.HIGH, f"{owner}.eval(): runs a script", 95)
        if name in ("invoke", "invokeExact") and "Method" in owner:
            self.add(node, "reflection", S.HIGH, f"{owner}.{name}(): calls by reflection", 470)
        self.report.network = self.report.network or name in _NETWORK or owner in _NETWORK
        self._files(node, name, owner, args)

    def _new(self, node: Node) -> None:
        kind = text(node.child_by_field_name("type")).split("<", 1)[0].rsplit(".", 1)[-1]
        if kind in TYPES:
            rule, severity, why, cwe = TYPES[kind]
            self.add(node, rule, severity, f"new {kind}(): {why}", cwe)
        self.report.network = self.report.network or kind in _NETWORK
        self._files(node, kind, "", node.child_by_field_name("arguments"))

    def _is_runtime(self, receiver: Node | None) -> bool:
        if receiver is None:
            return False
        source = text(receiver)
        if "getRuntime()" in source or source in self.runtimes:
            return True
        return (
            receiver.type == "method_invocation"
            and text(receiver.child_by_field_name("name")) in self.runtimes
        )

    def _reflective_name(self, node: Node, name: str, first: Node | None) -> None:
        if first is None or name not in (
            "forName",
            "getMethod",
            "getDeclaredMethod",
            "loadLibrary",
        ):
            return
        value = string_value(first)
        if value is not None:
            if any(word in value for word in ("Runtime", "ProcessBuilder", "Unsafe", "exec")):
                self.add(
                    node,
                    "reflective-exec",
                    S.CRITICAL,
                    f".{name}({value!r}): reaches a process or raw memory by name",
                    470,
                )
            return
        built = any(
            (
                sub.type == "binary_expression"
                and any(s.type == "string_literal" for s in sub.children)
            )
            or (
                sub.type == "method_invocation"
                and text(sub.child_by_field_name("name")) in _DECODERS
            )
            or sub.type == "object_creation_expression"
            for sub in walk(first)
        )
        if built:
            self.add(
                node, "obfuscated-name", S.CRITICAL, f".{name}() with a name built at run time", 470
            )

    def _files(self, node: Node, name: str, owner: str, args: Node | None) -> None:
        arguments = args.named_children if args is not None else []

        def at(kind: str, index: int) -> None:
            if index < len(arguments):
                self.report.access(kind, self.values.pieces(arguments[index]), f"{name}()", node)

        receiver = node.child_by_field_name("object")
        if owner not in ("", "Files"):
            if name == "delete" and receiver is not None:
                self.report.access("delete", self.values.pieces(receiver), ".delete()", node)
            return
        if name == "Scanner" and arguments and "System.in" in text(arguments[0]):
            return
        if name in _FILES:
            at(*_FILES[name])
        elif name in _PAIRS and owner == "Files":
            at(_PAIRS[name], 0)
            at("write", 1)

    def _loop(self, node: Node) -> None:
        condition = node.child_by_field_name("condition")
        test = text(condition).strip("() ")
        if test == "true" or (node.type == "for_statement" and condition is None):
            self.loop.check(self.report, node, node.child_by_field_name("body"))

    def _exits(self, node: Node) -> bool:
        if node.type in (
            "break_statement",
            "return_statement",
            "throw_statement",
            "yield_statement",
        ):
            return True
        return (
            node.type == "method_invocation"
            and text(node.child_by_field_name("name")) in _EXIT_CALLS
        )

    def _spawns(self, node: Node) -> bool:
        if node.type == "object_creation_expression":
            return "ProcessBuilder" in text(node.child_by_field_name("type"))
        return node.type == "method_invocation" and text(node.child_by_field_name("name")) == "exec"

    def _grows(self, node: Node) -> bool:
        if node.type in ("object_creation_expression", "array_creation_expression"):
            return True
        return (
            node.type == "method_invocation" and text(node.child_by_field_name("name")) in _GROWERS
        )
