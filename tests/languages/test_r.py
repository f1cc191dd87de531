"""R (languages/r/): its analyser without an engine; on the real engine, a run's plots as PNG
displays under the strict level (whose 128 open files R would refuse), and a session that
keeps R's workspace between calls: each call's own stdin, arguments and plots, an error, quit()
or the time limit ending the call and not the session, a pause and its resume."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from hazmat import Outcome, Sandbox
from hazmat.assess.assessor import Assessor
from hazmat.backends.base import Spec
from hazmat.backends.container.engine import Engine
from hazmat.backends.docker.driver import DockerBackend
from hazmat.languages import get_language
from hazmat.languages.r.analysis import RAnalyzer
from hazmat.models import RiskLevel, Runtime
from hazmat.policy import Policy, SessionSettings, TrustLevel
from hazmat.testing import as_asked

PNG = b"\x89PNG\r\n\x1a\n"
PLOTS = """\
x <- c(3, 1, 2)
summary(x)
plot(x, main = "first")
hist(rnorm(50))
cat("args:", commandArgs(trailingOnly = TRUE), "\\n")
"""


def rules(code: str) -> set[str]:
    return {f.rule for f in RAnalyzer().analyze(code, "r")}


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("x <- c(1, 2, 3)\nmean(x)\nplot(x)\nlm(y ~ x, df)\n", set()),
        ('system("id")', {"process-exec"}),
        ('base::system2("id")', {"process-exec"}),
        ('do.call("system", list("id"))', {"process-exec"}),
        ('f <- get("system"); f("id")', {"process-exec"}),
        ("lapply(cmds, system)", {"process-exec"}),
        ('`system`("id")', {"process-exec"}),
        ('f <- match.fun(paste0("sys", "tem"))', {"dynamic-call"}),
        ('eval(parse(text = "1 + 1"))', {"call-eval"}),
        ('str2lang("q()")', {"call-eval"}),
        ('dyn.load("x.so")', {"native-load"}),
        (".Call(x)", {"native-call"}),
        ("library(parallel)\nmclapply(1:2, sqrt)", {"require-parallel", "parallel"}),
        ("repeat parallel::mcparallel(1)", {"require-parallel", "process-fork"}),
        ('requireNamespace("processx")', {"process-exec"}),
        ("Rcpp::sourceCpp(code = x)", {"native-load"}),
        ('socketConnection("example.org", 80)', {"network"}),
        ('readLines("/etc/shadow")', {"secret-read"}),
        ('unlink("/var/log/syslog")', {"destroy-evidence"}),
        # names that only look dangerous: a field, an argument's name, data, a comment
        ('x$system <- 1; list(system = 2); d[["url"]]; paste("shell") # system("id")', set()),
        ('do.call(r"(system)", list("id"))', {"process-exec"}),
        ('cmd <- "system"\nout <- do.call(cmd, list("id"))', {"process-exec"}),
        ('animals <- c("shell", "crab")', set()),  # spelled, but nothing calls it by name
        ('x <- "never closed', {"syntax-error"}),
        ("f(1, 2", {"syntax-error"}),
        ("f(1, 2]", {"syntax-error"}),
        ('r"-(never closed)"', {"syntax-error"}),
        ("x <- 1e-3 + .5 + 0x1F + 2L; if (x >= 1 && TRUE) x %in% 1:3 |> print()", set()),
        # names computed at run time: unknown (HIGH); a plain variable's: MEDIUM
        ('f <- get(paste(c("sys", "tem"), collapse = ""))', {"dynamic-call"}),
        ("n <- rawToChar(as.raw(c(115, 121)))\nf <- match.fun(n)", {"dynamic-call"}),
        ("value <- get(key, envir = cache)", {"dynamic-call"}),
        ("do.call(rbind, parts)", set()),
        # paths spelled through variables, file.path and paste0, at the argument they are
        (
            'key <- file.path(Sys.getenv("HOME"), ".ssh", "id_rsa")\nx <- readLines(key)',
            {"secret-read"},
        ),
        ('writeLines("x", con = paste0("~/", ".bashrc"))', {"persistence-write"}),
        ('cat("x", file = file.path(getwd(), "../../..", "etc", "hosts"))', {"path-traversal"}),
        ('writeLines(c("a", "b"), "out.txt")', set()),
        # what only a program that connects out is flagged for
        (
            's <- tempfile()\ndownload.file("http://h/x.R", s)\nsource(s)',
            {"network", "remote-code"},
        ),
        ('source("helpers.R")\nsource(script)', set()),
        ('u <- url(paste0("http://h/?", Sys.getenv()))', {"network", "environment-exfiltration"}),
    ],
)
def test_the_analyser_reads_r(code: str, expected: set[str]) -> None:
    assert rules(code) == expected


def test_a_finding_says_where_and_what() -> None:
    [found] = RAnalyzer().analyze('x <- 1\n  do.call("system", list("id"))\n', "r")
    assert (found.line, found.column, found.source) == (2, 11, "r")
    assert found.message == "names system: runs a program" and found.cwe == 78


def test_an_r_program_is_assessed_completely() -> None:
    with Assessor() as judge:
        plain = judge.assess(PLOTS, "r")
        shell = judge.assess('system("cat /etc/passwd")', "R")
    assert plain.complete and plain.level is RiskLevel.LOW, plain.problems
    assert list(plain.analyzers) == ["r"]
    assert shell.level.rank >= RiskLevel.HIGH.rank


def test_the_session_interpreter_is_the_languages_own() -> None:
    repl = get_language("r").repl
    assert repl is not None and "eval(parse(text" in repl.command
    assert "/tmp/.hazmat-session/go" in repl.code and "/tmp/.hazmat-session/done" in repl.code


def test_an_r_container_gets_the_open_files_r_needs() -> None:
    strict = Policy().settings(TrustLevel.UNTRUSTED).limits
    assert strict.nofile < 168  # R 4.5 refuses to start below that (measured)
    r = Spec.of("r", get_language("r").image, Runtime.RUNC, strict)
    python = Spec.of("python", get_language("python").image, Runtime.RUNC, strict)
    assert (r.nofile, python.nofile) == (256, strict.nofile)
    roomy = strict.replace(nofile=1024)
    assert Spec.of("r", get_language("r").image, Runtime.RUNC, roomy).nofile == 1024


@pytest.mark.docker
def test_a_run_shows_each_plot_page_as_a_png(sandbox: Sandbox) -> None:
    result = sandbox.run(PLOTS, "r", args=["a", "b c"])  # untrusted: the strict level
    assert result.outcome is Outcome.OK, result.stderr
    assert "Median" in result.stdout and result.stdout.endswith("args: a b c \n")
    assert len(result.displays) == 2
    for shown in result.displays:
        png = shown["image/png"]
        assert isinstance(png, bytes) and png.startswith(PNG)


@pytest.fixture(scope="module")
def sb(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    store = tmp_path_factory.mktemp("paused")
    policy = dataclasses.replace(Policy(), sessions=SessionSettings(store=str(store)))
    with Sandbox(as_asked(policy), backend=DockerBackend(engine)) as sandbox:
        yield sandbox


@pytest.mark.docker
def test_a_session_keeps_rs_workspace_between_calls(sb: Sandbox, runtime: str) -> None:
    session = sb.session("r", runtime=runtime)
    first = session.run("x <- 41\ny <- x + 1\ny")
    assert (first.outcome, first.stdout) == (Outcome.OK, "[1] 42\n")
    code = "print(y)\nplot(1:10)\ncat(readLines(file('stdin')), sep = '|')"
    shown = session.run(code, stdin="a\nb\n")
    assert shown.stdout == "[1] 42\na|b" and len(shown.displays) == 1
    for word in ("one", "two"):  # read in part: the rest read away, then its blocks freed
        big = f"{word}\n" + "x" * 600_000 + "\n"
        assert session.run("cat(readLines(file('stdin'), n = 1))", stdin=big).stdout == word
    assert session.run("cat(readLines(file('stdin')), sep = '|')", stdin="c\n").stdout == "c"
    assert not session.run("y").displays  # a call's displays are its own
    error = session.run("stop('boom')")
    assert (error.exit_code, error.stderr) == (1, "Error: boom\n")
    assert session.run("quit(status = 4)").exit_code == 4
    called = session.run(
        "cat(commandArgs(TRUE), Sys.getenv('WHO'), '\\n')", args=["p", "q r"], env={"WHO": "me"}
    )
    assert called.stdout == "p q r me \n"
    slow = session.run("z <- 0\nrepeat z <- z + 1", timeout=1)
    assert slow.outcome is Outcome.TIMEOUT
    assert any("still open, with its variables and files" in note for note in slow.notes)
    after = session.run("f <- function(n) n * 2\ncat(f(y), z > 0, ls(), '\\n')")
    assert after.stdout == "84 TRUE f x y z \n", after.stderr
    session.close()


@pytest.mark.docker
def test_a_paused_r_session_comes_back_with_its_workspace(sb: Sandbox, runtime: str) -> None:
    session = sb.session("r", runtime=runtime)
    fit = "m <- lm(y ~ x, data.frame(x = 1:5, y = c(2, 4, 6, 8, 11)))\nwriteLines('k', 'f.txt')"
    assert session.run(fit).outcome is Outcome.OK
    paused = session.pause()
    assert (paused.saved, paused.lost) == (("m",), {})
    resumed = sb.resume_session(paused.id)
    assert resumed.resumed is not None and resumed.resumed["loaded"] == ["m"]
    back = resumed.run("cat(round(coef(m), 1), readLines('f.txt'), '\\n')")
    assert back.stdout == "-0.4 2.2 k \n", back.stderr
    resumed.close()
