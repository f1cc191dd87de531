"""The console's endpoints over HTTP, in process, on a backend that runs nothing: who sees
what, the headers every page gets, bad input as a fragment that says what is wrong, and how a
program's displays are put on the page (the browser's side is test_console_browser.py)."""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from hazmat import Sandbox
from hazmat.audit.log import AuditLog
from hazmat.server.console.views import CSP, DISPLAY_CSP, display_parts, templates
from hazmat.server.http import create_app
from hazmat.service.quotas import Quotas
from hazmat.service.tenant_keys import KeyStore
from hazmat.sessions.store import Paused
from hazmat.testing import RecordingBackend
from server_helpers import audit_records

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
Served = tuple[TestClient, dict[str, dict[str, str]], Path]  # the app, headers by key, audit


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Served]:
    store = KeyStore(tmp_path / "keys.json")
    made = {
        "acme": store.create("acme", "unknown")[1],
        "other": store.create("other", "untrusted")[1],
        "ops": store.create("ops", "untrusted", operator=True)[1],
        "tiny": store.create("tiny", "untrusted", Quotas(max_request_bytes=1024))[1],
    }
    auth = {name: {"Authorization": f"Bearer {key}"} for name, key in made.items()}
    audit = AuditLog(tmp_path / "audit")
    with (
        Sandbox(backend=RecordingBackend(), audit=audit) as sandbox,
        TestClient(create_app(sandbox, store)) as client,
    ):
        for sid, owner in (("s-0000000000000001", "acme"), ("s-0000000000000002", "other")):
            paused = Paused(sid, "python", "unknown", "runc", None, None, owner, time.time(), 10)
            sandbox.session_store.put(paused, b"archive")
        yield client, auth, tmp_path / "audit"
    audit.close()


def play(client: TestClient, headers: dict[str, str], code: str = "print(1)") -> str:
    answer = client.post(
        "/console/f/playground/run", content=f"code={code}&language=python", headers=headers | FORM
    )
    assert answer.status_code == 200, answer.text
    return answer.text.split('data-run="', 1)[1].split('"', 1)[0]


def own_and_every(console: Served, path: str) -> tuple[str, str]:
    """The page at `path` as a tenant's key shows it, and as an operator's."""
    client, auth, _ = console
    return client.get(path, headers=auth["acme"]).text, client.get(path, headers=auth["ops"]).text


def test_the_page_holds_no_data_and_every_answer_has_a_strict_csp(
    console: Served,
) -> None:
    client, auth, _ = console
    page = client.get("/console")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    assert "script-src 'self';" in CSP and "unsafe-inline" not in CSP.split("style-src")[0]
    assert "frame-ancestors 'none'" in CSP
    assert "<script>" not in page.text  # scripts only from the console's own files
    assert client.get("/console/static/htmx.min.js").status_code == 200
    for path in ("/console/f/runs", "/console/f/audit", "/console/f/runs/r-1"):
        for headers in ({}, {"Authorization": "Bearer hzm_000000000000_nope"}):
            refused = client.get(path, headers=headers)
            assert refused.status_code == 401, path
            assert refused.headers["content-type"].startswith("text/html")
            assert refused.headers["content-security-policy"] == CSP
            assert 'class="error"' in refused.text
        assert client.get(path, headers=auth["acme"]).headers["content-security-policy"] == CSP
    assert "set-cookie" not in client.get("/console/f/runs", headers=auth["acme"]).headers


def test_a_tenant_sees_its_own_runs_and_gets_404_for_anothers(
    console: Served,
) -> None:
    client, auth, _ = console
    mine = play(client, auth["acme"])
    theirs = play(client, auth["other"])
    listed = client.get("/console/f/runs", headers=auth["acme"]).text
    assert mine in listed and theirs not in listed
    shown = client.get(f"/console/f/runs/{mine}", headers=auth["acme"])
    assert shown.status_code == 200 and "print(1)" in shown.text
    for asked in (theirs, "r-0000000000000000"):
        refused = client.get(f"/console/f/runs/{asked}", headers=auth["acme"])
        assert refused.status_code == 404
        assert f"no run &#39;{asked}&#39;" in refused.text  # the same words for both
    every = client.get("/console/f/runs", headers=auth["ops"]).text
    assert mine in every and theirs in every  # an operator sees every tenant's
    only = client.get("/console/f/runs?tenant=other", headers=auth["ops"]).text
    assert theirs in only and mine not in only


def test_runs_are_filtered_by_script_and_by_session_and_the_run_page_names_them(
    console: Served,
) -> None:
    client, auth, _ = console
    acme = auth["acme"]
    scripted = client.post("/v1/runs", json={"code": "1", "script": "a.py"}, headers=acme)
    sid = client.post("/v1/sessions", json={"language": "python"}, headers=acme).json()["id"]
    called = client.post(f"/v1/sessions/{sid}/runs", json={"code": "2"}, headers=acme)
    plain = play(client, acme)
    one, two = scripted.json()["run_id"], called.json()["run_id"]
    by_script = client.get("/console/f/runs?script=a.py", headers=acme).text
    by_session = client.get(f"/console/f/runs?session={sid}", headers=acme).text
    assert one in by_script and two not in by_script and plain not in by_script
    assert two in by_session and one not in by_session and plain not in by_session
    assert "script <code>a.py</code>" in client.get(f"/console/f/runs/{one}", headers=acme).text
    page = client.get(f"/console/f/runs/{two}", headers=acme).text
    assert f"session <code>{sid}</code>" in page and "script <code>" not in page


def test_a_runs_page_shows_its_audit_records_and_gives_receipts_for_them_only(
    console: Served,
) -> None:
    client, auth, _ = console
    mine, theirs = play(client, auth["acme"]), play(client, auth["other"])
    page = client.get(f"/console/f/runs/{mine}", headers=auth["acme"]).text
    rows = page.split('<table id="records">', 1)[1].split("</table>", 1)[0]
    assert rows.count("<tr>") == 3 and "run.started" in rows and "run.finished" in rows
    assert f"&#34;run&#34;: &#34;{mine}&#34;" in rows  # the record itself, its run id in it
    seqs = [int(x.split('"', 1)[0]) for x in rows.split(f"/runs/{mine}/receipt/")[1:]]
    answer = client.get(f"/console/f/runs/{mine}/receipt/{seqs[-1]}", headers=auth["acme"])
    assert answer.status_code == 200
    receipt = answer.text.split("readonly>", 1)[1].split("</textarea>", 1)[0]
    checked = client.post(
        "/console/f/audit/check", data={"receipt": html.unescape(receipt)}, headers=auth["acme"]
    )
    assert 'id="receipt-ok"' in checked.text and "run.finished" in checked.text
    others = client.get(f"/console/f/runs/{theirs}", headers=auth["other"]).text
    their_seq = int(others.split(f"/runs/{theirs}/receipt/", 1)[1].split('"', 1)[0])
    for path, headers in (
        (f"/console/f/runs/{mine}/receipt/{their_seq}", auth["acme"]),  # not this run's record
        (f"/console/f/runs/{theirs}/receipt/{their_seq}", auth["acme"]),  # not this tenant's run
    ):
        assert client.get(path, headers=headers).status_code == 404


def test_what_a_run_brings_is_shown_as_text(console: Served) -> None:
    """Code, output and error messages are escaped: markup in them is text on the page."""
    client, auth, _ = console
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    mine = play(client, auth["acme"], quote(f"print('{hostile}')"))
    page = client.get(f"/console/f/runs/{mine}", headers=auth["acme"]).text
    assert hostile not in page and html.escape(hostile, quote=True) in page
    refused = client.get(f"/console/f/runs/{quote(hostile, safe='')}", headers=auth["acme"])
    assert refused.status_code == 404 and "<script>" not in refused.text


def test_the_playground_runs_at_most_at_the_keys_level(
    console: Served,
) -> None:
    client, auth, _ = console
    page = client.get("/console/f/playground", headers=auth["other"]).text
    assert "<option selected>untrusted</option>" in page
    assert ">trusted</option>" not in page and ">unknown</option>" not in page
    refused = client.post(
        "/console/f/playground/run", content="code=1&trust=trusted", headers=auth["other"] | FORM
    )
    assert refused.status_code == 403
    assert "runs at trust &#39;untrusted&#39; at most" in refused.text


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b"code=%FF", 400, "the form is not utf-8"),
        (b"code=1&language=cobol", 400, "unknown language"),
        (b"&".join(b"f%d=1" % i for i in range(40)), 400, "too many fields"),
    ],
)
def test_a_bad_form_is_a_fragment_that_says_what(
    console: Served, body: bytes, status: int, said: str
) -> None:
    client, auth, _ = console
    answer = client.post("/console/f/playground/run", content=body, headers=auth["acme"] | FORM)
    assert answer.status_code == status, answer.text
    assert said in answer.text.lower()


def test_a_form_over_the_keys_cap_is_413(
    console: Served,
) -> None:
    client, auth, _ = console
    answer = client.post(
        "/console/f/audit/check", content=b"receipt=" + b"x" * 2000, headers=auth["tiny"] | FORM
    )
    assert answer.status_code == 413
    assert "this key&#39;s cap is 1,024 bytes" in answer.text


def test_only_an_operator_verifies_the_log_and_its_sign_in_is_audited(
    console: Served,
) -> None:
    client, auth, audit_dir = console
    play(client, auth["acme"])
    assert client.post("/console/f/audit/verify", headers=auth["acme"]).status_code == 403
    verified = client.post("/console/f/audit/verify", headers=auth["ops"])
    assert verified.status_code == 200
    assert 'data-verdict="intact"' in verified.text
    assert client.get("/console/f/whoami", headers=auth["ops"]).status_code == 200
    assert client.get("/console/f/whoami", headers=auth["acme"]).status_code == 200
    kinds = [record["kind"] for record in audit_records(audit_dir)]
    assert kinds.count("console.operator") == 1  # the operator's sign-in, not the tenant's


@pytest.mark.parametrize(
    ("receipt", "said"),
    [
        ("not json", "Expecting value"),
        ('{"receipt": 1}', "not a receipt"),
        ("[1, 2]", "not a receipt"),
    ],
)
def test_a_receipt_that_does_not_verify_says_why(console: Served, receipt: str, said: str) -> None:
    client, auth, _ = console
    answer = client.post("/console/f/audit/check", data={"receipt": receipt}, headers=auth["acme"])
    assert answer.status_code == 200
    assert "does not verify" in answer.text and said in answer.text


@pytest.mark.parametrize(
    ("form", "status", "said"),
    [
        ({"receipt": "[" * 100_000}, 400, "nested deeper than 32 levels"),
        ({"receipt": "{}", "pubkey": "nope"}, 200, "not three parts joined by"),
    ],
)
def test_a_receipt_check_refuses_what_it_cannot_read(
    console: Served,
    form: dict[str, str],
    status: int,
    said: str,
) -> None:
    client, auth, _ = console
    answer = client.post("/console/f/audit/check", data=form, headers=auth["acme"])
    assert answer.status_code == status
    assert said in answer.text


def test_keys_show_ids_levels_and_quota_use_never_secrets(
    console: Served,
) -> None:
    auth = console[1]
    play(console[0], auth["acme"])
    own, every = own_and_every(console, "/console/f/tenants")
    assert "<td>0 / 4</td><td>1 / 120</td>" in own  # running now, started this minute
    assert "acme" in own and "other" not in own
    assert all(name in every for name in ("acme", "other", "ops", "tiny"))
    for headers in auth.values():
        secret = headers["Authorization"].split("_", 2)[2]  # hzm_<id>_<secret>; "_" may be in it
        assert secret not in own and secret not in every


def test_paused_sessions_show_to_their_tenant_and_to_an_operator(
    console: Served,
) -> None:
    own, every = own_and_every(console, "/console/f/sessions")
    assert "s-0000000000000001" in own and "s-0000000000000002" not in own
    assert "s-0000000000000001" in every and "s-0000000000000002" in every
    assert "No open sessions." in own


def test_a_batch_of_another_tenant_is_404(
    console: Served,
) -> None:
    client, auth, _ = console
    task = {
        "id": "t",
        "language": "python",
        "code": "print(1)",
        "tests": [{"expected_stdout": "hi"}],
    }
    made = client.post("/v1/batches", json={"tasks": [task]}, headers=auth["acme"])
    assert made.status_code == 202, made.text
    bid = made.json()["id"]
    assert bid in client.get("/console/f/batches", headers=auth["acme"]).text
    assert bid not in client.get("/console/f/batches", headers=auth["other"]).text
    assert bid in client.get("/console/f/batches", headers=auth["ops"]).text
    assert client.get(f"/console/f/batches/{bid}", headers=auth["other"]).status_code == 404
    assert (
        client.get(f"/console/f/batches/{bid}/receipt/0", headers=auth["acme"]).status_code == 404
    )


def test_images_show_as_images_html_and_svg_only_in_a_frame_of_their_own() -> None:
    png = display_parts({"image/png": b"\x89PNG\r\n\x1a\n", "text/plain": "<Figure>"})
    assert png == {"img": "data:image/png;base64,iVBORw0KGgo="}
    svg = display_parts({"image/svg+xml": "<svg onload='x()'/>", "text/plain": "s"})
    html = display_parts({"text/html": "<script>x()</script>"})
    for part, body in ((svg, "<svg onload='x()'/>"), (html, "<script>x()</script>")):
        assert part["frame"].startswith(
            f'<meta http-equiv="Content-Security-Policy" content="{DISPLAY_CSP}">'
        )
        assert part["frame"].endswith(body)
    assert display_parts({"text/plain": "<b>x</b>"}) == {"text": "<b>x</b>"}


def test_a_frame_is_escaped_into_its_attribute_and_sandboxed() -> None:
    html = '"><script>parent.x()</script>'
    page = templates().get_template("display.html").render(bundle={"text/html": html}, index=1)
    assert '<iframe class="display" title="display 1" sandbox=""' in page
    srcdoc = page.split("srcdoc=", 1)[1]
    assert "<script>" not in srcdoc and '">' not in srcdoc.split('"', 2)[1]
    assert "&#34;&gt;&lt;script&gt;parent.x()&lt;/script&gt;" in srcdoc
