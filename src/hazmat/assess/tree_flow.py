"""The path, deserialisation and endless-loop rules (see assess/paths.py and python_flow.py) for
the languages hazmat parses with tree-sitter: JavaScript, TypeScript and Go.

`TreeFlow(language, callee)` is fed every node of the tree in the analyser's own walk
(`visit`), then `finish()` returns the findings; `callee(call_node)` names what a call calls, as
the language's analyser resolves it (`fs.readFileSync`, `os.ReadFile`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from hazmat.assess import paths
from hazmat.assess.syntax_tree import Node, position, string_value, text
from hazmat.assess.tree_rules import Values
from hazmat.models import Finding, Severity

__all__ = ["TreeFlow"]

S = Severity
Callee = Callable[[Node], str]

# The last part of a call's name -> (kind of access, which argument is the path).
_JS_FILES: dict[str, tuple[str, int]] = {
    **{
        n: ("read", 0)
        for n in ["readFile", "readFileSync", "createReadStream", "readdir", "readdirSync"]
    },
    **{
        n: ("write", 0)
        for n in [
            "writeFile",
            "writeFileSync",
            "appendFile",
            "appendFileSync",
            "createWriteStream",
            "chmod",
            "chmodSync",
            "chown",
            "chownSync",
            "mkdir",
            "mkdirSync",
        ]
    },
    **{
        n: ("delete", 0)
        for n in [
            "unlink",
            "unlinkSync",
            "rm",
            "rmSync",
            "rmdir",
            "rmdirSync",
            "truncate",
            "truncateSync",
        ]
    },
    **{n: ("write", 1) for n in ["symlink", "symlinkSync", "link", "linkSync"]},
}
_JS_PAIRS = {"copyFile": "read", "copyFileSync": "read", "rename": "delete", "renameSync": "delete"}
_GO_FILES: dict[str, tuple[str, int]] = {
    **{f"{p}.{n}": ("read", 0) for p in ("os", "io/ioutil") for n in ("ReadFile", "ReadDir")},
    "os.Open": ("read", 0),
    **{f"{p}.WriteFile": ("write", 0) for p in ("os", "io/ioutil")},
    **{f"os.{n}": ("write", 0) for n in ["Create", "Chmod", "Chown", "Mkdir", "MkdirAll"]},
    **{f"os.{n}": ("delete", 0) for n in ["Remove", "RemoveAll", "Truncate"]},
    **{f"os.{n}": ("write", 1) for n in ("Symlink", "Link")},
}
_GO_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_APPEND", "O_CREATE", "O_TRUNC")
_JS_NETWORK_OBJECTS = {"http", "https", "net", "tls", "dgram", "axios", "got", "http2"}
_JS_NETWORK_CALLS = {"request", "get", "post", "put", "connect", "createConnection", "createSocket"}
_GO_NETWORK = ("net.Dial", "net/http.Get", "net/http.Post", "net/http.Head", "net/http.NewRequest")
_HOME = {"os.homedir", "homedir", "os.UserHomeDir", "process.env.HOME", "os.Getenv"}
_FUNCTIONS = {
    "function_declaration", "function_expression", "arrow_function", "method_definition",
    "class_declaration", "generator_function_declaration", "func_literal",
}  # fmt: skip
_EXITS = {"break_statement", "return_statement", "throw_statement", "await_expression",
          "yield_expression", "goto_statement"}  # fmt: skip
_EXIT_CALLS = ("process.exit", "os.Exit", "panic", "log.Fatal", "readline", "question", "Scan")
_JS_GROWERS = {"push", "unshift", "concat", "repeat", "alloc", "allocUnsafe", "fill", "set"}


_ASSIGNMENTS = ("variable_declarator", "short_var_declaration", "var_spec",
                "assignment_expression", "assignment_statement")  # fmt: skip
_STRINGS = ("string", "interpreted_string_literal", "raw_string_literal")


class TreeFlow:
    def __init__(self, language: str, callee: Callee) -> None:
        self.go = language == "go"
        self.source = "go" if self.go else "javascript"
        self.callee = callee
        # variable -> what it was last given; read for pieces only when a file operation's
        # path refers to it (lazily: most assignments never matter)
        self.values = Values(self._terminal, self._reference, self._parts, unknown=())
        self.findings: list[Finding] = []
        self.accesses: list[paths.Access] = []
        self.network = False
        self.strings: list[Node] = []
        self.calls: list[tuple[Node, str]] = []
        self._handlers: dict[str, Callable[[Node], None]] = {
            **dict.fromkeys(_ASSIGNMENTS, self._assign),
            "call_expression": self._call,
            "new_expression": self._new,
            **dict.fromkeys(("while_statement", "for_statement", "do_statement"), self._loop),
            "decorator": self._decorator,
            **dict.fromkeys(_STRINGS, self.strings.append),
        }

    def visit(self, node: Node) -> None:
        handler = self._handlers.get(node.type)
        if handler is not None:
            handler(node)

    def _call(self, node: Node) -> None:
        name = self.callee(node)
        self.network = self.network or self._network(node, name)
        self.calls.append((node, name))  # read in `finish`, once every value is known
        self._deserialise(node, name)

    def _new(self, node: Node) -> None:
        constructor = text(node.child_by_field_name("constructor"))
        self.network = self.network or constructor in ("WebSocket", "XMLHttpRequest")

    def finish(self) -> list[Finding]:
        for node, name in self.calls:
            self.accesses.extend(self._accesses(node, name))
        found = paths.findings(self.accesses, self._literals(), self.network, self.source)
        return self.findings + found

    def _literals(self) -> Iterator[tuple[str, int, int]]:
        for node in self.strings:
            value = string_value(node)
            if value is not None:
                yield (value, *position(node))

    def add(self, node: Node, rule: str, severity: Severity, message: str) -> None:
        line, column = position(node)
        self.findings.append(Finding(rule, self.source, severity, message, line, column))

    # --- paths -------------------------------------------------------------------------

    def _assign(self, node: Node) -> None:
        left = node.child_by_field_name("name") or node.child_by_field_name("left")
        right = node.child_by_field_name("value") or node.child_by_field_name("right")
        if left is None or right is None:
            return
        names = [c for c in left.named_children if c.type == "identifier"] or [left]
        values = right.named_children if right.type == "expression_list" else [right]
        if len(values) == 1 or len(values) != len(names):
            values = [values[0]] * len(names) if values else []
        for name, value in zip(names, values, strict=False):
            if name.type == "identifier":
                self.values.assign(text(name), value)

    def pieces(self, expr: Node) -> list[str]:
        return self.values.pieces(expr)

    def _terminal(self, node: Node) -> list[str] | None:
        """A node's own pieces: `~` for the home directory, a string's value."""
        if node.type == "call_expression" and self._home(node):
            return ["~"]
        if node.type == "member_expression" and text(node) == "process.env.HOME":
            return ["~"]
        value = string_value(node)
        if value is not None:
            return [value]
        return [text(node)] if node.type == "string_fragment" else None

    def _reference(self, node: Node) -> str | None:
        known = node.type == "identifier" and text(node) in self.values.sources
        return text(node) if known else None

    @staticmethod
    def _parts(node: Node) -> list[Node]:
        if node.type == "call_expression":  # what is passed, not what is called
            return _arguments(node)
        if node.type in ("member_expression", "selector_expression"):
            return []
        return list(node.children)

    def _home(self, call: Node) -> bool:
        name = self.callee(call)
        if name not in _HOME and not name.endswith(".homedir"):
            return False
        args = _arguments(call)
        return not args or string_value(args[0]) == "HOME"

    def _accesses(self, node: Node, name: str) -> Iterator[paths.Access]:
        args = _arguments(node)
        line, column = position(node)

        def at(kind: str, index: int) -> paths.Access | None:
            if index >= len(args):
                return None
            path = paths.spell(self.pieces(args[index]))
            return paths.Access(kind, path, f"{name}()", line, column) if path else None

        found: list[paths.Access | None] = []
        last = name.rsplit(".", 1)[-1]
        if self.go and name in _GO_FILES:
            found.append(at(*_GO_FILES[name]))
        elif self.go and name == "os.OpenFile":
            flags = text(args[1]) if len(args) > 1 else ""
            found.append(at("write" if any(f in flags for f in _GO_WRITE_FLAGS) else "read", 0))
        elif self.go and name == "os.Rename":
            found += [at("delete", 0), at("write", 1)]
        elif not self.go and last in _JS_FILES:
            found.append(at(*_JS_FILES[last]))
        elif not self.go and last in _JS_PAIRS:
            found += [at(_JS_PAIRS[last], 0), at("write", 1)]
        yield from (a for a in found if a is not None)

    def _network(self, node: Node, name: str) -> bool:
        if self.go:
            return name.startswith(_GO_NETWORK)
        obj, _, last = name.rpartition(".")
        return name == "fetch" or (obj in _JS_NETWORK_OBJECTS and last in _JS_NETWORK_CALLS)

    # --- deserialisation (JavaScript; Go's decoders build data, never code) ----------------

    def _deserialise(self, node: Node, name: str) -> None:
        if self.go:
            return
        last = name.rsplit(".", 1)[-1]
        if last == "unserialize":
            message = f"{name}(): node-serialize revives functions from its input"
            self.add(node, "unsafe-deserialization", S.CRITICAL, message)
        elif last in ("load", "loadAll") and "yaml" in name.lower():
            args = _arguments(node)
            if len(args) > 1 and "FULL" in text(args[1]).upper():
                message = f"{name}() with the full schema builds functions and regexps"
                self.add(node, "unsafe-deserialization", S.HIGH, message)

    # --- calls without a call expression (TypeScript decorators) --------------------------

    def _decorator(self, node: Node) -> None:
        target = text(node.named_children[0]) if node.named_children else ""
        if target in ("eval", "Function", "require", "globalThis.eval"):
            self.add(node, "decorator-call", S.CRITICAL, f"@{target}: runs code with no call")

    # --- loops built never to end ------------------------------------------------------

    def _loop(self, node: Node) -> None:
        if not self._endless(node) or self._leaves(node):
            return
        if self._allocates(node):
            message = "a loop with no way out that keeps allocating memory"
            self.add(node, "unbounded-allocation", S.HIGH, message)
        else:
            self.add(node, "infinite-loop", S.HIGH, "a loop with no way out (no break or return)")

    def _endless(self, node: Node) -> bool:
        if node.type in ("while_statement", "do_statement"):
            condition = text(node.child_by_field_name("condition")).strip("() \t")
            return condition in ("true", "1", "!0", "!false")
        if self.go:  # `for { ... }`: neither a clause nor a condition, only the body
            return all(c.type in ("block", "comment") for c in node.named_children)
        test = node.child_by_field_name("condition")
        return test is None or text(test).strip("; ") in ("", "true")

    def _body(self, loop: Node) -> Iterator[Node]:
        stack = list(reversed(loop.children))
        while stack:
            node = stack.pop()
            yield node
            if node.type not in _FUNCTIONS:
                stack.extend(reversed(node.children))

    def _leaves(self, loop: Node) -> bool:
        for node in self._body(loop):
            if node.type in _EXITS:
                return True
            if node.type == "call_expression" and self.callee(node).endswith(_EXIT_CALLS):
                return True
        return False

    def _allocates(self, loop: Node) -> bool:
        for node in self._body(loop):
            if node.type == "call_expression":
                name = self.callee(node)
                if name.rsplit(".", 1)[-1] in _JS_GROWERS or name in ("append", "make", "new"):
                    return True
            if node.type == "new_expression":
                return True
        return False


def _arguments(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [c for c in args.named_children if c.type != "comment"]
