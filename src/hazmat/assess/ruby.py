"""Ruby rules on tree-sitter's Ruby grammar.

Ruby calls a method by name in many ways (`send(:system, ...)`, `method(:exec).call`,
`alias run system`), so a dangerous method named as a symbol or a string is as dangerous as
the call, and a method name computed at run time is unknown. A block given to
`instance_eval` is ordinary Ruby; a string given to it is code.
"""

from __future__ import annotations

from collections.abc import Sequence

from hazmat.assess.syntax_tree import Node, read, string_value, text, walk
from hazmat.assess.tree_rules import Loop, Report, Values
from hazmat.models import Finding, Severity

__all__ = ["RubyAnalyzer"]

SOURCE = "ruby"
S = Severity

# receiverless or Kernel/Process method -> (rule, severity, why, cwe)
KERNEL: dict[str, tuple[str, Severity, str, int | None]] = {
    **dict.fromkeys(
        (
            "system",
            "exec",
            "spawn",
            "popen",
            "popen2",
            "popen3",
            "popen2e",
            "capture2",
            "capture2e",
            "capture3",
            "pipeline",
            "pipeline_r",
            "pipeline_w",
        ),
        ("process-exec", S.HIGH, "starts a program", 78),
    ),
    "fork": ("process-fork", S.HIGH, "starts a process", None),
    "daemon": ("process-fork", S.HIGH, "detaches a process", None),
    "syscall": ("raw-syscall", S.HIGH, "a raw system call", None),
    "eval": ("call-eval", S.HIGH, "runs a string as code", 95),
}
_EVALS = {"instance_eval", "class_eval", "module_eval", "class_exec", "instance_exec"}
_SENDS = {"send", "public_send", "__send__", "method", "public_method", "instance_method",
          "define_method", "const_get", "respond_to?"}  # fmt: skip
_DANGEROUS_NAMES = set(KERNEL) | {
    "`",
    "eval",
    "instance_eval",
    "class_eval",
    "open",
    "load",
    "require",
    "const_get",
    "Kernel",
    "Process",
    "IO",
}
REQUIRES: dict[str, tuple[str, Severity, str]] = {
    "open3": ("require-open3", S.HIGH, "starts other programs"),
    "pty": ("require-pty", S.HIGH, "starts programs on a pseudo-terminal"),
    "fiddle": ("fiddle", S.CRITICAL, "calls C functions and writes raw memory"),
    "fiddle/import": ("fiddle", S.CRITICAL, "calls C functions and writes raw memory"),
    "ffi": ("ffi", S.CRITICAL, "calls C functions"),
    "socket": ("require-socket", S.MEDIUM, "network access"),
    "net/http": ("require-network", S.MEDIUM, "network access"),
    "open-uri": ("require-network", S.MEDIUM, "network access"),
    "net/ssh": ("require-network", S.HIGH, "runs commands remotely"),
    "drb": ("require-network", S.HIGH, "remote objects"),
    "etc": ("require-etc", S.LOW, "the user database"),
}
# Constant -> (rule, severity, why, cwe), for Const.anything and Const::anything
CONSTANTS: dict[str, tuple[str, Severity, str, int | None]] = {
    "Open3": ("process-exec", S.HIGH, "starts a program", 78),
    "PTY": ("process-exec", S.HIGH, "starts a program", 78),
    "Fiddle": ("fiddle", S.CRITICAL, "calls C functions", 111),
    "FFI": ("ffi", S.CRITICAL, "calls C functions", 111),
    "TCPSocket": ("socket", S.HIGH, "raw network access", None),
    "UDPSocket": ("socket", S.HIGH, "raw network access", None),
    "TCPServer": ("socket", S.HIGH, "raw network access", None),
    "Socket": ("socket", S.HIGH, "raw network access", None),
    "Net": ("network", S.MEDIUM, "network access", None),
    "ObjectSpace": ("object-graph", S.HIGH, "walks every live object", 470),
    "Marshal": ("unsafe-deserialization", S.HIGH, "deserialisation runs code", 502),
    "RubyVM": ("object-graph", S.HIGH, "the virtual machine's internals", 470),
}
_FILES: dict[str, tuple[str, int]] = {
    **dict.fromkeys(
        ("read", "readlines", "foreach", "binread", "open", "new", "lines"), ("read", 0)
    ),
    **dict.fromkeys(
        ("write", "binwrite", "chmod", "chown", "mkdir", "mkdir_p", "touch", "makedirs", "symlink"),
        ("write", 0),
    ),
    **dict.fromkeys(
        (
            "delete",
            "unlink",
            "rm",
            "rm_f",
            "rm_r",
            "rm_rf",
            "remove",
            "rmdir",
            "remove_dir",
            "remove_entry",
            "truncate",
        ),
        ("delete", 0),
    ),
}
_PAIRS = {
    "cp": "read",
    "copy": "read",
    "mv": "delete",
    "move": "delete",
    "rename": "delete",
    "ln_s": "read",
    "cp_r": "read",
}
_FILE_OWNERS = {"File", "IO", "FileUtils", "Dir", "Pathname"}
_DECODERS = {"decode64", "strict_decode64", "urlsafe_decode64", "unpack", "unpack1", "pack",
             "reverse", "join", "chr", "hex", "to_sym", "+", "gsub", "tr", "rot13",
             "inflate"}  # fmt: skip
_ENV_WHOLE = {"to_h", "to_a", "each", "each_pair", "map", "inspect", "keys", "values", "select",
              "to_hash", "sort", "filter_map", "each_with_object", "reduce"}  # fmt: skip
_EXITS = {"break", "return", "raise", "exit", "exit!", "abort", "gets", "next", "throw", "readline",
          "pop", "wait", "join", "accept"}  # fmt: skip
_GROWERS = {"<<", "push", "append", "concat", "new", "*", "dup", "+", "fill"}
_SPAWNERS = {"fork", "spawn", "system", "exec", "`", "popen", "daemon"}


class RubyAnalyzer:
    """hazmat's Ruby rules."""

    name = SOURCE
    languages = frozenset({"ruby"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        findings, root = read(code, "ruby", SOURCE)
        rules = _Rules(Report(SOURCE))
        rules.check(root)
        return findings + rules.report.finish()


class _Rules:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.locals: set[str] = set()
        self.values = Values(self._terminal, self._reference, self._parts)
        nested = frozenset({"method", "lambda", "singleton_method"})
        self.loop = Loop(self._exits, self._spawns, self._grows, nested)

    def add(
        self, node: Node, rule: str, severity: Severity, message: str, cwe: int | None = None
    ) -> None:
        self.report.add(node, rule, severity, message, cwe)

    def check(self, root: Node) -> None:
        nodes = list(walk(root))
        for node in nodes:
            if node.type == "assignment":
                self._assign(node)
            elif node.type in ("block_parameters", "method_parameters", "lambda_parameters"):
                self.locals.update(text(c) for c in node.named_children if c.type == "identifier")
        for node in nodes:
            self._visit(node)

    def _visit(self, node: Node) -> None:
        kind = node.type
        if kind == "call":
            self._call(node)
        elif kind == "identifier" and self._bare_call(node):
            self._kernel(node, text(node), None)
        elif kind == "subshell":
            self.add(node, "process-exec", S.HIGH, "backticks: run a shell command", 78)
        elif kind == "alias":
            self._alias(node)
        elif kind == "constant" and text(node) in CONSTANTS:
            self._constant(node, text(node))
        elif kind in ("while", "until", "while_modifier", "until_modifier"):
            self._loop(node)
        elif kind == "string":
            value = string_value(node)
            if value is not None:
                self.report.literal(value, node)

    # --- names and values --------------------------------------------------------------

    def _assign(self, node: Node) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is not None and right is not None and left.type == "identifier":
            self.locals.add(text(left))
            self.values.assign(text(left), right)

    def _bare_call(self, node: Node) -> bool:
        """`fork` on its own is a call of Kernel#fork unless a local variable is so named."""
        parent = node.parent
        if text(node) in self.locals or text(node) not in KERNEL:
            return False
        return parent is None or parent.type not in ("call", "assignment", "alias", "parameters")

    def _terminal(self, node: Node) -> list[str] | None:
        value = string_value(node)
        if value is not None:
            return [value]
        source = text(node)
        if source in ("Dir.home", "ENV['HOME']", 'ENV["HOME"]', "Dir.home()") or source.startswith(
            'ENV.fetch("HOME"'
        ):
            return ["~"]
        if node.type == "call" and text(node.child_by_field_name("method")) == "expand_path":
            args = _arguments(node)
            inner = "".join(self.values.pieces(args[0])) if args else ""
            return [inner]
        return None

    def _reference(self, node: Node) -> str | None:
        return text(node) if node.type == "identifier" else None

    def _parts(self, node: Node) -> list[Node]:
        if node.type == "call":
            receiver = node.child_by_field_name("receiver")
            own = _arguments(node)
            if receiver is not None and receiver.type in ("identifier", "call", "string"):
                return [receiver, *own]
            return own
        return [c for c in node.named_children if c.type != "constant"]

    # --- rules ------------------------------------------------------------------------

    def _call(self, node: Node) -> None:
        method = text(node.child_by_field_name("method"))
        receiver = node.child_by_field_name("receiver")
        owner = text(receiver)
        args = _arguments(node)
        if receiver is None or owner in ("Kernel", "Process", "IO", "Open3", "PTY", "Object"):
            self._kernel(node, method, args)
        if method in ("require", "require_relative", "load") and receiver is None:
            self._require(node, method, args)
        elif method in _SENDS:
            self._send(node, method, args)
        elif method in _EVALS and args and args[0].type != "block_argument":
            self._eval(node, method, args[0])
        if owner == "ENV" and method in _ENV_WHOLE:
            self.report.dumps_environment(node, f"ENV.{method}")
        elif any(a.type == "constant" and text(a) == "ENV" for a in args):
            self.report.dumps_environment(node, f"{method}(ENV)")
        if method == "open" and receiver is None and args:
            self._open(node, args[0])
        elif method == "alias_method":
            self._alias(node)
        elif method == "loop" and receiver is None:
            self.loop.check(self.report, node, node.child_by_field_name("block"))
        self.report.network = self.report.network or (
            method in ("get", "post", "start", "get_response", "open", "new")
            and owner in ("Net::HTTP", "URI", "TCPSocket", "Socket")
        )
        if owner in _FILE_OWNERS or owner.startswith("File"):
            self._files(node, method, owner, args)

    def _kernel(self, node: Node, method: str, args: list[Node] | None) -> None:
        if method not in KERNEL or (method == "eval" and args is None):
            return
        rule, severity, why, cwe = KERNEL[method]
        self.add(node, rule, severity, f"{method}: {why}", cwe)
        if method == "eval" and args and self._built(args[0]):
            self.add(
                node, "obfuscated-name", S.CRITICAL, "eval of a string decoded at run time", 95
            )

    def _require(self, node: Node, method: str, args: list[Node]) -> None:
        name = string_value(args[0]) if args else None
        if name is None:
            self.add(node, "dynamic-require", S.HIGH, f"{method} with a computed name", 470)
        elif name in REQUIRES:
            rule, severity, why = REQUIRES[name]
            self.add(node, rule, severity, f"requires {name}: {why}")
        if name is not None and method == "load":
            self.report.access("read", [name], "load", node)

    def _send(self, node: Node, method: str, args: list[Node]) -> None:
        if not args:
            return
        name = string_value(args[0])
        if name is None:
            if self._built(args[0]):
                message = f"{method} with a name built at run time"
                self.add(node, "obfuscated-name", S.CRITICAL, message, 470)
            elif method in ("send", "__send__", "method", "const_get", "instance_method"):
                # these reach private methods too: Kernel#system is one on every object
                self.add(node, "dynamic-send", S.HIGH, f"{method} with a computed name", 470)
            elif method == "public_send":
                message = "public_send with a computed name (public methods only)"
                self.add(node, "dynamic-send", S.MEDIUM, message, 470)
        elif name.lstrip(":") in _DANGEROUS_NAMES:
            message = f"{method}(:{name}): reaches {name} by name"
            self.add(node, "reflective-call", S.CRITICAL, message, 470)

    def _built(self, node: Node) -> bool:
        """`_built`, also through a variable given such a value."""
        if node.type == "identifier" and text(node) in self.values.sources:
            return _built(self.values.sources[text(node)])
        return _built(node)

    def _eval(self, node: Node, method: str, first: Node) -> None:
        if self._built(first):
            self.add(node, "obfuscated-name", S.CRITICAL, f"{method} of a decoded string", 95)
        self.add(node, "call-eval", S.HIGH, f"{method} with a string: runs it as code", 95)

    def _open(self, node: Node, first: Node) -> None:
        value = string_value(first)
        if value is not None and value.startswith("|"):
            self.add(node, "process-exec", S.HIGH, "open('|...'): starts a program", 78)
        elif value is not None and value.startswith(("http://", "https://", "ftp://")):
            self.report.network = True
            self.add(node, "network", S.MEDIUM, "open(url): network access")
        elif value is None and first.type not in ("identifier",):
            self.add(
                node,
                "open-computed",
                S.MEDIUM,
                "Kernel#open of a computed name may start a program",
                78,
            )
        self.report.access("read", self.values.pieces(first), "open", node)

    def _alias(self, node: Node) -> None:
        names = [string_value(c) or text(c) for c in node.named_children]
        names += [string_value(a) or text(a) for a in _arguments(node)]
        hit = next((n.lstrip(":") for n in names if n.lstrip(":") in KERNEL), None)
        if hit:
            self.add(node, "reflective-call", S.CRITICAL, f"alias of {hit}: hides the call", 470)

    def _constant(self, node: Node, name: str) -> None:
        rule, severity, why, cwe = CONSTANTS[name]
        self.add(node, rule, severity, f"{name}: {why}", cwe)
        self.report.network = self.report.network or rule in ("socket", "network")

    def _files(self, node: Node, method: str, owner: str, args: list[Node]) -> None:
        def at(kind: str, index: int) -> None:
            if index < len(args):
                self.report.access(kind, self.values.pieces(args[index]), f"{owner}.{method}", node)

        if method in ("open", "new") and len(args) > 1:
            mode = string_value(args[1]) or ""
            at("write" if any(c in mode for c in "wa+") else "read", 0)
        elif method in _FILES:
            at(*_FILES[method])
        elif method in _PAIRS:
            at(_PAIRS[method], 0)
            at("write", 1)

    def _loop(self, node: Node) -> None:
        condition = text(node.child_by_field_name("condition"))
        endless = (
            condition == "true" if node.type.startswith("while") else condition in ("false", "nil")
        )
        if endless:
            self.loop.check(self.report, node, node.child_by_field_name("body"))

    def _exits(self, node: Node) -> bool:
        if node.type in ("break", "return", "next"):
            return True
        name = text(node.child_by_field_name("method")) if node.type == "call" else text(node)
        return node.type in ("call", "identifier") and name in _EXITS

    def _spawns(self, node: Node) -> bool:
        if node.type == "subshell":
            return True
        name = text(node.child_by_field_name("method")) if node.type == "call" else text(node)
        return node.type in ("call", "identifier") and name in _SPAWNERS

    def _grows(self, node: Node) -> bool:
        if node.type == "binary" or node.type == "operator_assignment":
            return any(c.type in ("<<", "+=", "*") for c in node.children)
        return node.type == "call" and text(node.child_by_field_name("method")) in _GROWERS


def _arguments(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [c for c in args.named_children if c.type != "comment"]


def _built(node: Node) -> bool:
    """A name visibly assembled at run time: concatenated, interpolated, decoded."""
    for sub in walk(node):
        if sub.type == "binary" and any(c.type == "+" for c in sub.children):
            return True
        if sub.type in ("string", "delimited_symbol") and any(
            c.type == "interpolation" for c in sub.children
        ):
            return True
        if sub.type == "call" and text(sub.child_by_field_name("method")) in _DECODERS:
            return True
    return False
