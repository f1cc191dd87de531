"""Bash, with coreutils, grep, sed, awk and jq in its image."""

from types import MappingProxyType

from hazmat.languages import IMAGE_VERSION, ImageSpec, Language, Repl, SelfTest

LANGUAGE = Language(
    name="bash",
    image=f"hazmat/shell:{IMAGE_VERSION}",
    source_name="main.sh",
    extensions=(".sh", ".bash"),
    run="exec bash main.sh",
    # the shell a session keeps, like a terminal's (backends/agent/shell_session.py)
    repl=Repl(
        command='exec bash --norc --noprofile -c "$3" bash',
        hazmat="shell",
        name="shell",
        signal="USR1",
    ),
    aliases=("sh", "shell"),
    version='echo "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}"\n',
    hello="echo 1",
    rank=4,
    analysers=("bash",),
    names=MappingProxyType(
        {
            "sandbox_fusion": ("bash",),
            "piston": ("bash", "sh"),
            "judge0": ("46",),
        }
    ),
    images=(
        ImageSpec(
            "shell",
            ("bash", "coreutils", "grep", "sed", "gawk", "jq", "bc", "diffutils", "findutils"),
            "Bash with coreutils, grep, sed, awk, jq (no network tools)",
        ),
    ),
    self_test=SelfTest(
        greet='read -r who\necho "hello $who"\n',
        streams='echo out\necho err >&2\nexit 3\n',
    ),
    title="Bash",
    keeps=(
        "the shell's variables, functions, aliases and current directory, as in a terminal"
    ),
)
