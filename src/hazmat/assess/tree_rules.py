"""What the analysers for bash, C and C++, Java, Rust and Ruby share: a `Report` that collects
findings, file operations and string literals and turns the paths into findings (paths.py), the
values of variables as pieces of a path (`Values`), and loops built never to end (`Loop`).

    report = Report("rust")
    report.add(node, "process-exec", Severity.HIGH, "Command::new: starts a program", 78)
    report.access("read", ["/etc/", "shadow"], "fs::read_to_string", node)
    report.finish()        # the findings, with the path rules and the exfiltration rule

The rules around a report are each language's own; these are the parts that mean the same in
every language (docs/assessment.md, "Threat classes").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from hazmat.assess import paths
from hazmat.assess.syntax_tree import Node, position, text
from hazmat.models import Finding, Severity

__all__ = ["UNKNOWN", "Loop", "Report", "Values"]

S = Severity
# A piece of a path that is computed at run time: kept as a mark, so that `$dir/.ssh/id_rsa`
# still names a key while `$dir/out.txt` is not taken for `/out.txt`.
UNKNOWN = "\x00"
# Addresses that serve a cloud machine's credentials to whoever asks.
_METADATA = ("169.254.169.254", "metadata.google.internal", "100.100.100.200", "fd00:ec2::254")


class Report:
    """The findings of one program in one language, and what the path rules need."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.findings: list[Finding] = []
        self.accesses: list[paths.Access] = []
        self.literals: list[tuple[str, int, int]] = []
        self.network = False
        self.env_dump: Node | None = None

    def add(
        self, node: Node, rule: str, severity: Severity, message: str, cwe: int | None = None
    ) -> None:
        line, column = position(node)
        self.findings.append(Finding(rule, self.source, severity, message, line, column, cwe))

    def access(self, kind: str, pieces: Iterable[str], call: str, node: Node) -> None:
        """A file operation `call` on the path `pieces` spell (nothing when they spell none)."""
        path = paths.spell(pieces).replace(UNKNOWN, "$?")
        if path and path != "$?":
            self.accesses.append(paths.Access(kind, path, call, *position(node)))

    def literal(self, value: str, node: Node) -> None:
        self.literals.append((value, *position(node)))

    def dumps_environment(self, node: Node, what: str) -> None:
        self.add(node, "env-dump", S.MEDIUM, f"{what}: reads every environment variable", 526)
        self.env_dump = self.env_dump or node

    def finish(self) -> list[Finding]:
        found = paths.findings(self.accesses, self.literals, self.network, self.source)
        if self.env_dump is not None and self.network:
            message = "dumps the environment in a program that connects out"
            self.add(self.env_dump, "secret-exfiltration", S.CRITICAL, message, 200)
        for value, line, column in self.literals:
            if any(address in value for address in _METADATA):
                message = f"names {value[:60]!r}: the cloud metadata service hands out credentials"
                found.append(
                    Finding("cloud-metadata", self.source, S.HIGH, message, line, column, 918)
                )
                break
        return self.findings + found


# --- the values of variables, as pieces of a path ------------------------------------------

# A path is spelled in a few nodes: an expression larger than this is not read for pieces.
_PIECES_NODES = 400
_CHAIN = 50


@dataclass
class Values:
    """Variables and what they were last given (flow-insensitive, like tree_flow.py), read
    lazily for the pieces of a path.

    `terminal(node)` gives a node's own pieces when it has them (a string literal, `~` for the
    home directory); `reference(node)` names the variable a node reads; `parts(node)` lists the
    nodes to read further (a call's arguments, not its name). `unknown` is the piece of a
    variable whose value is not known (being worked out, or past a chain of 50): UNKNOWN, or
    none at all (tree_flow.py's JavaScript and Go rules).
    """

    terminal: Callable[[Node], list[str] | None]
    reference: Callable[[Node], str | None]
    parts: Callable[[Node], list[Node]] = lambda node: node.children
    unknown: tuple[str, ...] = (UNKNOWN,)
    sources: dict[str, Node] = field(default_factory=dict)
    values: dict[str, list[str]] = field(default_factory=dict)
    depth: int = 0

    def assign(self, name: str, value: Node) -> None:
        self.sources[name] = value

    def value(self, name: str) -> list[str] | None:
        """The pieces of what `name` was given; None for a variable never given anything."""
        if name not in self.sources:
            return None
        if name not in self.values:
            self.values[name] = []
            if self.depth < _CHAIN:
                self.depth += 1
                self.values[name] = self.pieces(self.sources[name])
                self.depth -= 1
        return self.values[name]

    def pieces(self, expr: Node) -> list[str]:
        out: list[str] = []
        stack = [expr]
        budget = _PIECES_NODES
        while stack and budget:
            budget -= 1
            node = stack.pop()
            own = self.terminal(node)
            if own is not None:
                out.extend(own)
                continue
            name = self.reference(node)
            if name is not None:
                out.extend(self.value(name) or self.unknown)
                continue
            stack.extend(reversed(self.parts(node)))
        return out


# --- loops built never to end ------------------------------------------------------------


@dataclass(frozen=True)
class Loop:
    """What, in a loop's body, leaves it, starts a process, or allocates. `nested` are the node
    types (functions, lambdas, closures) whose bodies run elsewhere."""

    exits: Callable[[Node], bool]
    spawns: Callable[[Node], bool]
    grows: Callable[[Node], bool]
    nested: frozenset[str] = frozenset()

    def check(self, report: Report, loop: Node, body: Node | None) -> None:
        """Findings for an endless `loop` (the caller decided it has no condition that ends it)."""
        nodes = list(self._body(body)) if body is not None else []
        if any(self.exits(n) for n in nodes):
            return
        if any(self.spawns(n) for n in nodes):
            message = "a loop with no way out that keeps starting processes (a fork bomb)"
            report.add(loop, "fork-bomb", S.CRITICAL, message, 400)
        elif any(self.grows(n) for n in nodes):
            message = "a loop with no way out that keeps allocating memory"
            report.add(loop, "unbounded-allocation", S.HIGH, message, 400)
        else:
            message = "a loop with no way out (no break, return, exit or wait for input)"
            report.add(loop, "infinite-loop", S.HIGH, message, 835)

    def _body(self, body: Node) -> Iterator[Node]:
        stack = [body]
        while stack:
            node = stack.pop()
            yield node
            if node.type not in self.nested:
                stack.extend(reversed(node.children))


def last_name(node: Node | None) -> str:
    """`exec` for `Runtime.getRuntime().exec`, `system` for `std::system`."""
    return text(node).replace("::", ".").rsplit(".", 1)[-1].strip()
