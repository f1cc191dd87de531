"""After a resume, a call that fails on a name the pause could not keep says which and why
(sessions/pausing.py `with_lost_note`; on the engine: tests/execution/test_pausing.py)."""

from __future__ import annotations

from hazmat import Sandbox
from hazmat.sessions.pausing import with_lost_note
from hazmat.testing import RecordingBackend, as_asked, report

LOST = {"lost": {"twice": "defined in the session: its code is not kept"}}
NAME_ERROR = (
    b'Traceback (most recent call last):\n  File "/work/main.py", line 1, in <module>\n'
    b"NameError: name '%s' is not defined\n"
)


def test_only_a_name_error_on_a_lost_name_gets_the_note() -> None:
    backend = RecordingBackend()
    with Sandbox(as_asked(), backend=backend) as sandbox:
        session = sandbox.session("python")
        results = {}
        for name in ("twice", "other"):
            backend.answer = lambda job, name=name: report(
                exit_code=1, stderr=NAME_ERROR % name.encode()
            )
            results[name] = session.run(f"{name}(2)")
        session.close()
    noted = with_lost_note(results["twice"], LOST)
    assert noted.notes[-1] == (
        "'twice' was not kept when this session was paused (defined in the session: its code "
        "is not kept): run the code that defined it again"
    )
    assert with_lost_note(results["other"], LOST) is results["other"]  # not a lost name
    assert with_lost_note(results["twice"], None) is results["twice"]  # never paused
