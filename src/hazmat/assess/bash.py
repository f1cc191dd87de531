"""bash rules on tree-sitter's bash grammar.

A shell script runs programs: that is what it is for, so running one is not a finding. What is
looked at is which program (a shell fed from a download or a decoder, a network tool, `sudo`,
`nsenter`, `docker`), how its name is spelled (a name built at run time is unknown, and one
decoded or pieced together from quotes is an evasion), what files the arguments and redirects
name (paths.py), and the shapes of a fork bomb and of a loop with no way out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from hazmat.assess.bash_programs import (
    DEPTH,
    DOWNLOADERS,
    INTERPRETERS,
    LOOP,
    NETWORK,
    PLAIN_DECODERS,
    PROGRAMS,
    SHELLS,
    WRAPPERS,
    Files,
    Name,
    backgrounded,
    command_index,
    dangerous,
    decoded,
    in_pipeline,
    redirects,
    setuid,
)
from hazmat.assess.syntax_tree import Node, parse, read, string_value, text, walk
from hazmat.assess.tree_rules import UNKNOWN, Report, Values
from hazmat.models import Finding, Severity

__all__ = ["BashAnalyzer"]

SOURCE = "bash"
S = Severity


class BashAnalyzer:
    """hazmat's bash rules."""

    name = SOURCE
    languages = frozenset({"bash"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        findings, root = read(code, "bash", SOURCE)
        report = Report(SOURCE)
        _Script(report, 0).check(root)
        return findings + report.finish()


class _Script:
    def __init__(self, report: Report, depth: int) -> None:
        self.report = report
        self.depth = depth
        self.aliases: dict[str, str] = {}
        self.functions: set[str] = set()
        self.values = Values(self._terminal, self._reference, self._parts)

    def add(
        self, node: Node, rule: str, severity: Severity, message: str, cwe: int | None = None
    ) -> None:
        self.report.add(node, rule, severity, message, cwe)

    def check(self, root: Node) -> None:
        nodes = list(walk(root))
        for node in nodes:  # first every name a later command may use
            if node.type == "variable_assignment":
                self._assign(node)
            elif node.type == "function_definition":
                self.functions.add(text(node.child_by_field_name("name")))
            elif node.type == "command" and self._literal_name(node) == "alias":
                self._alias(node)
        for node in nodes:
            self._visit(node)

    def _visit(self, node: Node) -> None:
        kind = node.type
        if kind == "command":
            self._command(node)
        elif kind == "file_redirect":
            self._redirect(node)
        elif kind == "function_definition":
            self._function(node)
        elif kind == "while_statement":
            self._loop(node)
        elif kind == "pipeline":
            self._pipeline(node)
        elif kind in ("string", "raw_string", "word"):
            value = self.word(node)
            if UNKNOWN not in value and (node.parent is None or node.parent.type != "string"):
                self.report.literal(value, node)
            if "/dev/tcp/" in value or "/dev/udp/" in value:
                self._dev_tcp(node)

    # --- words and names ----------------------------------------------------------------

    def _terminal(self, node: Node) -> list[str] | None:
        if node.type == "word":
            return [text(node).replace("\\", "")]
        value = string_value(node)
        if value is not None:
            return [value]
        if node.type in ("string_content", "ansi_c_string"):
            return [text(node)] if node.type == "string_content" else [UNKNOWN]
        if node.type == "command_substitution":
            inner = text(node)
            return ["/tmp/"] if "mktemp" in inner else ["."] if inner == "$(pwd)" else [UNKNOWN]
        return None

    def _reference(self, node: Node) -> str | None:
        if node.type not in ("simple_expansion", "expansion"):
            return None
        name = next((text(c) for c in node.named_children if c.type == "variable_name"), "")
        return name or UNKNOWN

    def _parts(self, node: Node) -> list[Node]:
        return [c for c in node.children if c.type not in ('"', "$", "${", "}")]

    def word(self, node: Node) -> str:
        """The text a word stands for; computed parts are UNKNOWN, `$HOME` is `~`."""
        return "".join(self.values.pieces(node))

    def _assign(self, node: Node) -> None:
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None:
            return
        if value is not None:
            self.values.assign(text(name), value)
        if text(name) in ("HISTFILE", "HISTSIZE", "HISTFILESIZE"):
            self.add(
                node, "destroy-evidence", S.HIGH, f"{text(name)}=: stops the shell history", 779
            )

    def _alias(self, node: Node) -> None:
        for argument in node.children_by_field_name("argument"):
            name, _, value = self.word(argument).partition("=")
            if value:
                self.aliases[name] = value

    def _literal_name(self, command: Node) -> str:
        name = command.child_by_field_name("name")
        return text(name) if name is not None else ""

    def resolve(self, command: Node) -> Name:
        node = command.child_by_field_name("name")
        target = node.named_children[0] if node is not None and node.named_children else node
        if target is None:
            return Name("")
        spelled = self.word(target)
        hidden = decoded(target, self.values.sources)
        if hidden:
            return Name(spelled if UNKNOWN not in spelled else "", hidden)
        if UNKNOWN in spelled:
            return Name("")
        first = spelled.split()[0] if spelled.split() else spelled
        alias = self.aliases.get(first, "")
        name = posixpath.basename(alias.split()[0] if alias.split() else first)
        quoted = target.type == "concatenation" or (
            target.type == "word" and "\\" in text(target)[1:]
        )
        evasion = "pieced together from quotes" if quoted else ""
        if alias and name != first:
            evasion = evasion or f"behind the alias {first!r}"
        return Name(name, evasion)

    # --- commands ---------------------------------------------------------------------

    def arguments(self, command: Node) -> list[Node]:
        return command.children_by_field_name("argument")

    def _command(self, node: Node) -> None:
        resolved = self.resolve(node)
        args = self.arguments(node)
        if not resolved.name:
            self._computed(node, resolved)
            return
        if resolved.evasion and dangerous(resolved.name):
            message = f"runs {resolved.name!r}, its name {resolved.evasion}"
            self.add(node, "obfuscated-command", S.CRITICAL, message, 78)
        self.run(node, resolved.name, args)

    def _computed(self, node: Node, resolved: Name) -> None:
        if resolved.evasion:
            message = f"runs a command whose name is {resolved.evasion}"
            self.add(node, "obfuscated-command", S.CRITICAL, message, 78)
        elif self._literal_name(node) in ("$0", '"$0"', "${0}"):
            if backgrounded(node) or in_pipeline(node):
                self.add(
                    node, "fork-bomb", S.CRITICAL, "the script starts itself in the background", 400
                )
        else:
            message = f"runs {self._literal_name(node)!r}: a command computed at run time"
            self.add(node, "computed-command", S.HIGH, message, 78)

    def run(self, node: Node, name: str, args: list[Node]) -> None:
        """Rules for running `name` with `args` (also the command after a wrapper)."""
        words = [self.word(a) for a in args]
        if name in PROGRAMS:
            rule, severity, why = PROGRAMS[name]
            self.add(node, rule, severity, f"{name}: {why}")
        if name in NETWORK:
            self._network(node, name, words)
        if name in WRAPPERS:
            self._wrapped(node, name, args, words)
        elif name == "eval":
            self._eval(node, args)
        elif name in ("source", "."):
            self._source(node, args, words)
        elif name in SHELLS or name in INTERPRETERS:
            self._interpreter(node, name, args, words)
        else:
            Files(self.report, node, name).check(args, words)
            self._special(node, name, words)

    def _wrapped(self, node: Node, name: str, args: list[Node], words: list[str]) -> None:
        index = command_index(name, words)
        if name == "exec" and index < len(words):
            self.add(node, "exec", S.MEDIUM, "exec: replaces the shell with another program", 78)
        if name in ("env", "export", "set") and index >= len(words):
            self.report.dumps_environment(node, name)
        if index < len(words):
            inner = words[index]
            if UNKNOWN in inner:
                self.add(node, "computed-command", S.HIGH, f"{name} runs a computed command", 78)
            else:
                self.run(node, posixpath.basename(inner), args[index + 1 :])

    def _eval(self, node: Node, args: list[Node]) -> None:
        fed = self._feeder(args)
        if fed:
            self.add(node, fed[0], S.CRITICAL, f"eval of {fed[1]}", 94)
        self.add(node, "call-eval", S.HIGH, "eval: runs a string as shell code", 95)

    def _source(self, node: Node, args: list[Node], words: list[str]) -> None:
        fed = self._feeder(args)
        if fed:
            self.add(node, fed[0], S.CRITICAL, f"source of {fed[1]}", 94)
        elif words and UNKNOWN in words[0]:
            message = "source of a path computed at run time runs unknown code"
            self.add(node, "source-computed", S.HIGH, message, 98)
        elif words:
            self.report.access("read", [words[0]], "source", node)

    def _interpreter(self, node: Node, name: str, args: list[Node], words: list[str]) -> None:
        fed = self._feeder(args)
        if fed:
            self.add(node, fed[0], S.CRITICAL, f"{name} runs {fed[1]}", 94)
        flag = next((i for i, w in enumerate(words) if w in ("-c", "-e", "-ic", "-lc")), None)
        if flag is not None and flag + 1 < len(words):
            self._inline(node, name, args[flag + 1], words[flag + 1])
        if "-i" in words and any("/dev/tcp/" in text(r) for r in redirects(node)):
            self.add(node, "reverse-shell", S.CRITICAL, f"{name} -i wired to a TCP socket", 78)

    def _inline(self, node: Node, name: str, arg: Node, code: str) -> None:
        if UNKNOWN in code:
            self.add(node, "computed-command", S.HIGH, f"{name} runs code computed at run time", 95)
        elif name in SHELLS and self.depth < DEPTH:
            _Script(self.report, self.depth + 1).check(parse(code, "bash").root_node)
        elif name not in SHELLS:
            message = f"{name} runs an inline program the shell rules cannot read"
            self.add(arg, "inline-interpreter", S.MEDIUM, message)

    def _feeder(self, args: list[Node]) -> tuple[str, str] | None:
        """(rule, what) when an argument is a download or a decoded string run as code."""
        for arg in args:
            for sub in walk(arg):
                if sub.type in ("command_substitution", "process_substitution"):
                    kinds = {_stage(c, self) for c in walk(sub) if c.type == "command"}
                    if "download" in kinds:
                        return "pipe-to-shell", "what a download printed"
                    if "decode" in kinds:
                        return "obfuscated-command", "a decoded string"
        return None

    def _network(self, node: Node, name: str, words: list[str]) -> None:
        severity, why = NETWORK[name]
        self.report.network = True
        self.add(node, "network-tool", severity, f"{name}: {why}")
        if name in ("nc", "ncat", "netcat") and ({"-e", "-c"} & set(words)):
            self.add(node, "reverse-shell", S.CRITICAL, f"{name} -e: a shell on a socket", 78)
        if name == "socat" and any(w.lower().startswith(("exec:", "system:")) for w in words):
            self.add(node, "reverse-shell", S.CRITICAL, "socat exec: a shell on a socket", 78)

    def _special(self, node: Node, name: str, words: list[str]) -> None:
        if name in ("printenv",) and not [w for w in words if not w.startswith("-")]:
            self.report.dumps_environment(node, name)
        elif name in ("declare", "typeset") and {"-p", "-x", "-px"} & set(words):
            self.report.dumps_environment(node, f"{name} {words[0]}")
        elif name == "history" and "-c" in words:
            self.add(node, "destroy-evidence", S.HIGH, "history -c: wipes the shell history", 779)
        elif name == "chmod" and words and setuid(words[0]):
            self.add(node, "setuid", S.HIGH, f"chmod {words[0]}: a set-user-ID program", 250)

    # --- shapes over several commands ----------------------------------------------------

    def _pipeline(self, node: Node) -> None:
        stages = [c for c in node.named_children if c.type in ("command", "redirected_statement")]
        for index, stage in enumerate(stages[1:], start=1):
            command = stage if stage.type == "command" else stage.child_by_field_name("body")
            if command is None or command.type != "command" or not self._reads_code(command):
                continue
            kinds = {_stage(s, self) for s in stages[:index]}
            name = self.resolve(command).name
            if "download" in kinds:
                self.add(node, "pipe-to-shell", S.CRITICAL, f"a download piped into {name}", 494)
            elif "decode" in kinds:
                message = f"a decoded string piped into {name}"
                self.add(node, "obfuscated-command", S.CRITICAL, message, 78)
            else:
                self.add(node, "shell-stdin", S.HIGH, f"text piped into {name} runs as code", 95)

    def _reads_code(self, command: Node) -> bool:
        """A shell or interpreter that runs its standard input as a program."""
        name = self.resolve(command).name
        words = [self.word(a) for a in self.arguments(command)]
        index = command_index(name, words) if name in WRAPPERS else -1
        if index >= 0:
            name, words = (
                (posixpath.basename(words[index]), words[index + 1 :])
                if index < len(words)
                else ("", [])
            )
        if name not in SHELLS and name not in INTERPRETERS - {"awk"}:
            return False
        operands = [w for w in words if not w.startswith("-")]
        return not operands or operands == ["-"] or "-s" in words

    def _function(self, node: Node) -> None:
        name = text(node.child_by_field_name("name"))
        for sub in walk(node.child_by_field_name("body") or node):
            own = sub.type == "command" and self._literal_name(sub) == name
            if own and (backgrounded(sub) or in_pipeline(sub)):
                message = f"{name} starts copies of itself without end (a fork bomb)"
                self.add(node, "fork-bomb", S.CRITICAL, message, 400)
                return

    def _loop(self, node: Node) -> None:
        keyword = node.children[0].type if node.children else ""
        condition = " ".join(text(c) for c in node.children_by_field_name("condition")).strip("; ")
        endless = ("true", ":", "[ 1 ]", "((1))", "[[ 1 ]]")
        if (keyword == "while" and condition in endless) or (
            keyword == "until" and condition == "false"
        ):
            LOOP.check(self.report, node, node.child_by_field_name("body"))

    def _redirect(self, node: Node) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        for destination in node.children_by_field_name("destination"):
            if destination.type == "number" or "/dev/tcp/" in text(destination):
                continue
            path = self.word(destination)
            kind = "read" if operator in ("<", "<&", "<<<") else "write"
            self.report.access(kind, [path], f"redirect {operator}", node)

    def _dev_tcp(self, node: Node) -> None:
        self.report.network = True
        self.add(node, "dev-tcp", S.HIGH, "/dev/tcp: bash opens a network connection", 200)


def _stage(command: Node, script: _Script) -> str:
    """What a pipeline stage is: "download", "decode" or ""."""
    if command.type == "redirected_statement":
        body = command.child_by_field_name("body")
        return _stage(body, script) if body is not None else ""
    if command.type != "command":
        return ""
    name = script.resolve(command).name
    words = [script.word(a) for a in script.arguments(command)]
    if name in WRAPPERS:
        index = command_index(name, words)
        name = posixpath.basename(words[index]) if index < len(words) else ""
    if name in DOWNLOADERS:
        return "download"
    if name in PLAIN_DECODERS or (
        name in ("base64", "openssl") and {"-d", "--decode", "-D", "-base64"} & set(words)
    ):
        return "decode"
    return ""
