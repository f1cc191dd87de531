"""R's analyser: rules over R's tokens, written here because no maintained R grammar is packaged
for Python (tree-sitter-r is not on PyPI).

R finds a function by name in many ways (`do.call("system", ...)`, `get("system")`,
`match.fun("system")`, `f <- system; f(...)`, `base::system`, a backquoted name), so a dangerous
function named anywhere as a name is as dangerous as its call, and so is a string that spells
it in a program that calls functions by name (`NAME_CALLERS`; the network's functions only as
names: as strings they are more often data, a column called "url"). A function looked up by a
name the program computes (`get(paste0(...))`, a name decoded from bytes) is unknown, so HIGH;
by a plain variable, MEDIUM (a memo's `get(key, envir = cache)`). Code built from a string
(`parse(text = ...)`, `str2lang`) is code nobody has read, and so is a file `source()`d by a
program that also reaches the network. The paths file calls are given (as strings, or spelled
by `file.path`, `paste0` and variables assigned once) are checked against the paths every
language's rules use (assess/paths.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from hazmat.assess.base import SYNTAX_ERROR, text_findings
from hazmat.assess.paths import Access, findings
from hazmat.models import Finding, Severity

__all__ = ["RAnalyzer"]

SOURCE = "r"
S = Severity
_Rule = tuple[str, Severity, str, int | None]


def _each(names: str, rule: _Rule) -> dict[str, _Rule]:
    return dict.fromkeys(names.split(), rule)


def _set(names: str) -> frozenset[str]:
    return frozenset(names.split())


# a function, named or called in any way -> (rule, severity, why, cwe)
FUNCTIONS: dict[str, _Rule] = {
    **_each("system system2 shell shell.exec pipe", ("process-exec", S.HIGH, "runs a program", 78)),
    **_each("mcfork mcparallel", ("process-fork", S.HIGH, "forks R processes", None)),
    **_each(
        "mclapply mcmapply pvec makeForkCluster makeCluster makePSOCKcluster",
        ("parallel", S.MEDIUM, "runs R in parallel processes", None),
    ),
    **_each("dyn.load library.dynam", ("native-load", S.CRITICAL, "loads native code", 111)),
    **_each(
        ".C .Call .External .External2 .Fortran .Internal .Primitive getNativeSymbolInfo",
        ("native-call", S.HIGH, "calls R's C code directly", 111),
    ),
    **_each("str2lang str2expression", ("call-eval", S.HIGH, "makes code from a string", 95)),
    **_each(
        "socketConnection socketAccept serverSocket make.socket url download.file curlGetHeaders",
        ("network", S.MEDIUM, "network access", None),
    ),
    **_each(
        "assignInNamespace unlockBinding",
        ("change-r", S.HIGH, "replaces R's own functions", None),
    ),
}
# a package loaded (library, require, requireNamespace, loadNamespace, pkg::name) -> rule
PACKAGES: dict[str, _Rule] = {
    "parallel": ("require-parallel", S.MEDIUM, "starts R processes", None),
    **_each("processx sys callr", ("process-exec", S.HIGH, "starts programs", 78)),
    **_each("Rcpp inline cpp11", ("native-load", S.CRITICAL, "compiles native code", 111)),
    **_each(
        "curl httr httr2 RCurl websocket socket",
        ("require-network", S.MEDIUM, "network access", None),
    ),
}
NETWORK_RULES = frozenset({"network", "require-network"})
# calls that take a function by its name as a string (a string naming a dangerous function
# counts in a program that makes any of them)
NAME_CALLERS = _set(
    "do.call get get0 mget match.fun getFunction getExportedValue dynGet as.name as.symbol call "
    "as.call str2lang lapply sapply vapply mapply Map Reduce Filter Find Position apply tapply "
    "outer Recall exists eval evalq"
)
_LOADERS = _set("library require requireNamespace loadNamespace attachNamespace")
# lookups of a function by a name (a string: the spelled rule above; computed: unknown)
_LOOKUPS = _set("get get0 mget match.fun getFunction getExportedValue dynGet")
# calls whose result is text the program computed: a name made by one is not in the source
_BUILDERS = _set(
    "paste paste0 sprintf rawToChar intToUtf8 chartr rev gsub sub toupper tolower substr "
    "substring strtoi URLdecode readLines readline scan Sys.getenv unlist strsplit"
)
# file calls -> what they do, and where the path is (position, argument name)
_READ, _WRITE, _DELETE = "read", "write", "delete"
FILE_CALLS: dict[str, tuple[str, int, str]] = {
    **{
        name: (_READ, 1, arg)
        for name, arg in (
            ("readLines", "con"), ("readRDS", "file"), ("read.csv", "file"),
            ("read.table", "file"), ("read.delim", "file"), ("scan", "file"),
            ("readBin", "con"), ("readChar", "con"), ("source", "file"), ("load", "file"),
            ("file", "description"), ("gzfile", "description"), ("sys.source", "file"),
            ("read.dcf", "file"), ("readRenviron", "path"),
        )
    },
    **{
        name: (_WRITE, position, arg)
        for name, position, arg in (
            ("writeLines", 2, "con"), ("saveRDS", 2, "file"), ("save", 0, "file"),
            ("write.csv", 2, "file"), ("write.table", 2, "file"), ("writeBin", 2, "con"),
            ("writeChar", 2, "con"), ("cat", 0, "file"), ("write", 2, "file"),
            ("sink", 1, "file"), ("file.create", 1, ""), ("dir.create", 1, "path"),
            ("file.append", 1, "file1"), ("file.copy", 2, "to"), ("file.rename", 2, "to"),
            ("Sys.chmod", 1, "paths"), ("download.file", 2, "destfile"),
        )
    },
    "unlink": (_DELETE, 1, "x"),
    "file.remove": (_DELETE, 1, ""),
}  # fmt: skip
# the calls whose arguments the rules read
_READ_ARGUMENTS = (
    _LOADERS | _LOOKUPS | set(FILE_CALLS) | {"do.call", "parse", "Sys.getenv", "sys.source"}
)
# how a call spells a path from its pieces (file.path, paste0), and the pieces some calls stand for
_JOINS = {"file.path": "/", "paste0": "", "paste": " "}
_PIECES = {"getwd": ".", "tempdir": "/tmp", "tempfile": "/tmp/file"}
_NAME = re.compile(r"(?:[^\W\d]|\.(?!\d))[\w.]*")
_RAW = re.compile(r"[rR](['\"])(-*)([(\[{])")
_NUMBER = re.compile(r"(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[Li]?")
_OPERATOR = re.compile(r":::|::|<<-|->>|<-|->|%[^%\n]*%|\|>|[=!<>]=|&&|\|\||\S")
_CLOSE = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Token:
    kind: str  # name, string, op
    text: str  # a name or a string's value; an operator as written
    line: int
    column: int


class _Unreadable(Exception):
    """The code is not R's: a string, name or bracket never closed."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def tokens(code: str) -> Iterator[Token]:
    """R's tokens that the rules read (comments and numbers left out)."""
    i, line, start = 0, 1, 0
    while i < len(code):
        ch = code[i]
        column = i - start + 1
        end = i
        if ch == "\n":
            line, start, i = line + 1, i + 1, i + 1
            continue
        if ch.isspace():
            i += 1
        elif ch == "#":
            end = code.find("\n", i)
            i = len(code) if end < 0 else end
            continue
        elif raw := _RAW.match(code, i):
            quote, dashes, bracket = raw.groups()
            end = code.find(_CLOSE[bracket] + dashes + quote, raw.end())
            if end < 0:
                raise _Unreadable("a raw string is never closed", line, column)
            yield Token("string", code[raw.end() : end], line, column)
            end += len(dashes) + 2
        elif ch in "\"'`":
            end, value = _quoted(code, i)
            if end < 0:
                raise _Unreadable(f"a {ch}-quoted string or name is never closed", line, column)
            yield Token("name" if ch == "`" else "string", value, line, column)
        elif number := _NUMBER.match(code, i):
            i = number.end()
        elif name := _NAME.match(code, i):
            yield Token("name", name.group(), line, column)
            i = name.end()
        else:
            op = _OPERATOR.match(code, i)
            assert op is not None  # \S matches any character left
            yield Token("op", op.group(), line, column)
            i = op.end()
        if end > i:  # a string: its lines counted, the next column from its last line
            if (newlines := code.count("\n", i, end)) > 0:
                line, start = line + newlines, code.rfind("\n", i, end) + 1
            i = end


def _quoted(code: str, i: int) -> tuple[int, str]:
    """The end of the quoted text at `i` (-1: never closed) and its value, escapes read
    loosely (what matters is the name it spells)."""
    quote, j, value = code[i], i + 1, []
    while j < len(code):
        ch = code[j]
        if ch == "\\" and j + 1 < len(code):
            value.append(code[j + 1])
            j += 2
        elif ch == quote:
            return j + 1, "".join(value)
        else:
            value.append(ch)
            j += 1
    return -1, ""


Argument = tuple[str, list[Token]]  # its name ("" when positional) and its tokens


def arguments(toks: list[Token], opening: int) -> list[Argument]:
    """The arguments of the call whose `(` is at `opening`."""
    found: list[Argument] = []
    depth, current = 0, list[Token]()
    for k in range(opening + 1, len(toks)):  # not a slice: no copy of the rest
        tok = toks[k]
        if tok.kind == "op" and tok.text in _CLOSE:
            depth += 1
        elif tok.kind == "op" and tok.text in _CLOSE.values():
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and tok.kind == "op" and tok.text == ",":
            found.append(_named(current))
            current = []
            continue
        current.append(tok)
    if current:
        found.append(_named(current))
    return found


def _named(toks: list[Token]) -> Argument:
    if len(toks) > 2 and toks[0].kind in ("name", "string") and toks[1].text == "=":
        return toks[0].text, toks[2:]
    return "", toks


def argument(args: list[Argument], position: int, name: str) -> list[Token] | None:
    """An argument given by its name, else at its place among the unnamed ones (1-based;
    0: only by name)."""
    for given, toks in args:
        if name and given == name:
            return toks
    unnamed = [toks for given, toks in args if not given]
    return unnamed[position - 1] if 0 < position <= len(unnamed) else None


class _Reader:
    """One program's tokens, with what its variables were assigned."""

    def __init__(self, toks: list[Token]) -> None:
        self.toks = toks
        self.spelled: dict[str, str] = {}  # variable -> the path or text it was given
        self.computed: set[str] = set()  # variables given text the program computed

    def spell(self, toks: list[Token]) -> str | None:
        """The text an expression spells (a string, a variable holding one, file.path or
        paste0 of them); None when it spells nothing the rules could read."""
        if len(toks) == 1:
            tok = toks[0]
            return tok.text if tok.kind == "string" else self.spelled.get(tok.text)
        if len(toks) < 3 or toks[0].kind != "name" or toks[1].text != "(":
            return None
        call = toks[0].text
        if call in _PIECES:
            return _PIECES[call]
        if call == "Sys.getenv":
            return "~" if [t.text for t in toks[2:3]] == ["HOME"] else None
        args = arguments(toks, 1)
        if call in ("path.expand", "normalizePath") and args:
            return self.spell(args[0][1])
        if call not in _JOINS:
            return None
        pieces = [self.spell(value) for name, value in args if name not in ("sep", "collapse")]
        known = [piece if piece is not None else "?" for piece in pieces]
        return _JOINS[call].join(known) if any(p is not None for p in pieces) else None

    def is_computed(self, toks: list[Token]) -> bool:
        """Whether an expression's text is made at run time (a call that builds text, or a
        variable given such text)."""
        if len(toks) == 1:
            return toks[0].kind == "name" and toks[0].text in self.computed
        return bool(toks) and toks[0].kind == "name" and toks[0].text in _BUILDERS

    def assigned(self, k: int) -> None:
        """Record what the variable at `k` (`name <- value`, `name = value`) is given."""
        toks, start = self.toks, k + 2
        if start >= len(toks):
            return
        after = toks[start + 1].text if start + 1 < len(toks) else ""
        called = toks[start].kind == "name" and after == "("
        end = _closing(toks, start + 1) + 1 if called else start + 1
        expression = toks[start:end]
        spelled = self.spell(expression)
        if spelled is not None:
            self.spelled[toks[k].text] = spelled
        if self.is_computed(expression):
            self.computed.add(toks[k].text)


class RAnalyzer:
    """Reads an R program's tokens."""

    name = SOURCE
    languages = frozenset({"r"})

    def analyze(self, code: str, language: str) -> Sequence[Finding]:
        found = text_findings(code, SOURCE)
        try:
            toks = list(tokens(code))
            _balanced(toks)
        except _Unreadable as exc:
            found.append(Finding(SYNTAX_ERROR, SOURCE, S.MEDIUM, str(exc), exc.line, exc.column))
            return found
        return found + _Rules(toks).findings()


class _Rules:
    """The rules over one program's tokens, in one pass."""

    def __init__(self, toks: list[Token]) -> None:
        self.reader = _Reader(toks)
        self.toks = toks
        self.rules: list[Finding] = []
        self.spelled: list[Finding] = []  # dangerous functions spelled as strings
        self.accesses: list[Access] = []
        self.by_name = False  # the program calls functions by name
        self.sourced: list[Token] = []  # source() of a file the source does not name
        self.whole_env: list[Token] = []  # Sys.getenv(): the whole environment

    def add(self, rule: _Rule, message: str, at: Token) -> None:
        name, severity, _, cwe = rule
        self.rules.append(Finding(name, SOURCE, severity, message, at.line, at.column, cwe))

    def findings(self) -> list[Finding]:
        toks = self.toks
        for k, tok in enumerate(toks):
            before = toks[k - 1].text if k and toks[k - 1].kind == "op" else ""
            after = toks[k + 1].text if k + 1 < len(toks) else ""
            if tok.kind == "string" or (tok.kind == "name" and before not in ("$", "@")):
                self.named(tok, after)
            if tok.kind != "name" or before in ("$", "@"):
                continue
            if after in ("<-", "=", "<<-") and before not in ("(", ","):
                self.reader.assigned(k)
            if after in ("::", ":::") and tok.text in PACKAGES:
                rule = PACKAGES[tok.text]
                self.add(rule, f"uses package {tok.text}: {rule[2]}", tok)
            if after == "(":
                self.called(tok, k + 1)
        network = any(f.rule in NETWORK_RULES for f in self.rules)
        if network:
            self.reached_out()
        rules = self.rules + (self.spelled if self.by_name else [])
        rules.sort(key=lambda f: (f.line, f.column))
        literals = [(t.text, t.line, t.column) for t in toks if t.kind == "string"]
        return _once(rules) + findings(self.accesses, literals, network, SOURCE)

    def named(self, tok: Token, after: str) -> None:
        """A dangerous function named: called, passed as a value, or spelled as a string."""
        rule = None if tok.kind == "name" and after == "=" else FUNCTIONS.get(tok.text)
        if rule and tok.kind == "name":
            how = "calls" if after == "(" else "names"
            self.add(rule, f"{how} {tok.text}: {rule[2]}", tok)
        elif rule and rule[1].rank > S.MEDIUM.rank:
            name, severity, why, cwe = rule
            message = f"names {tok.text}: {why}"
            self.spelled.append(Finding(name, SOURCE, severity, message, tok.line, tok.column, cwe))

    def called(self, tok: Token, opening: int) -> None:
        """A call whose `(` is at `opening`: its arguments read only for the calls the rules
        look into (reading every call's would cost each nested call its whole extent)."""
        call = tok.text
        self.by_name = self.by_name or call in NAME_CALLERS
        if call not in _READ_ARGUMENTS:
            return
        args = arguments(self.toks, opening)
        first = args[0][1] if args else []
        if call in _LOADERS and len(first) == 1 and first[0].text in PACKAGES:
            rule = PACKAGES[first[0].text]
            self.add(rule, f"loads package {first[0].text}: {rule[2]}", tok)
        elif call in _LOOKUPS | {"do.call"} and first and first[0].kind != "string":
            self.looked_up(tok, first)
        elif call == "parse" and argument(args, 0, "text") is not None:
            why = "parse(text = ...) makes code from a string"
            self.add(("call-eval", S.HIGH, why, 95), why, tok)
        elif call == "Sys.getenv" and not args:
            self.whole_env.append(tok)
        if call in ("source", "sys.source") and not _literal_path(first):
            self.sourced.append(tok)
        if call in FILE_CALLS:
            kind, position, name = FILE_CALLS[call]
            given = argument(args, position, name)
            path = self.reader.spell(given) if given else None
            if path is not None:
                self.accesses.append(Access(kind, path, call, tok.line, tok.column))

    def looked_up(self, tok: Token, first: list[Token]) -> None:
        """A function found by a name that is not a string in the source."""
        if self.reader.is_computed(first) or (len(first) > 1 and first[1].text == "("):
            why = f"{tok.text} calls a function whose name is computed at run time"
            self.add(("dynamic-call", S.HIGH, why, 95), why, tok)
        elif tok.text != "do.call":  # do.call(rbind, ...): a function passed as itself
            why = f"{tok.text} finds a function by a name known only at run time"
            self.add(("dynamic-call", S.MEDIUM, why, None), why, tok)

    def reached_out(self) -> None:
        """What is dangerous in a program that also reaches the network."""
        for tok in self.sourced:
            why = "runs R code from a file it may have downloaded"
            self.add(("remote-code", S.HIGH, why, 94), why, tok)
        for tok in self.whole_env:
            why = "reads every environment variable in a program that connects out"
            self.add(("environment-exfiltration", S.HIGH, why, 200), why, tok)


def _literal_path(toks: list[Token]) -> bool:
    """Whether an argument is a file's path written in the source (not a URL)."""
    return len(toks) == 1 and toks[0].kind == "string" and "://" not in toks[0].text


def _closing(toks: list[Token], opening: int) -> int:
    """The index of the bracket that closes the one at `opening` (the last token if none)."""
    depth = 0
    for k in range(opening, len(toks)):
        if toks[k].kind == "op" and toks[k].text in _CLOSE:
            depth += 1
        elif toks[k].kind == "op" and toks[k].text in _CLOSE.values():
            depth -= 1
            if depth == 0:
                return k
    return len(toks) - 1


def _once(found: list[Finding]) -> list[Finding]:
    """Each rule's first finding on each line (a name and its string twice on a line is one)."""
    seen: set[tuple[str, int]] = set()
    kept = []
    for f in found:
        if (f.rule, f.line) not in seen:
            seen.add((f.rule, f.line))
            kept.append(f)
    return kept


def _balanced(toks: list[Token]) -> None:
    """Raises _Unreadable when a bracket is never closed or closes another's."""
    open_: list[Token] = []
    for tok in toks:
        if tok.kind != "op":
            continue
        if tok.text in _CLOSE:
            open_.append(tok)
        elif tok.text in _CLOSE.values():
            if not open_ or _CLOSE[open_[-1].text] != tok.text:
                raise _Unreadable(f"unexpected {tok.text!r}", tok.line, tok.column)
            open_.pop()
    if open_:
        raise _Unreadable(f"{open_[-1].text!r} is never closed", open_[-1].line, open_[-1].column)
