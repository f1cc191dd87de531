"""The console's pages and fragments: server-rendered Jinja2 templates, made live with htmx.

`/console` is one page with no data in it; everything else is a fragment under `/console/f/`
that htmx fetches with the key the person typed (kept in the tab's sessionStorage, sent as
`Authorization: Bearer`, never a cookie), checked like any API call. A tenant's key sees its
own tenant's runs, batches and sessions, the same 404 for another's as for none; an operator's
key (`hazmat keys create --operator`) sees every tenant's.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio.to_thread
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from hazmat._exceptions import (
    AuditError,
    BatchNotFound,
    HazmatError,
    InputError,
    NotPermitted,
    RunNotFound,
    quoted,
)
from hazmat.audit.checkpoint import CheckpointError, VerifierKey
from hazmat.audit.layout import CHECKPOINT, PUBKEY
from hazmat.audit.receipts import check_receipt, make_receipt, parse_receipt
from hazmat.audit.verify import verify_log
from hazmat.json_input import check_depth
from hazmat.languages import LANGUAGES
from hazmat.models import ExecutionResult
from hazmat.policy import TrustLevel
from hazmat.server.batches import Batch, BatchBook
from hazmat.server.console.batch_page import batch_page, page_number
from hazmat.server.console.headers import CSP
from hazmat.server.console.recent import RecentRuns, Seen
from hazmat.server.console.records import run_records
from hazmat.server.session_routes import SessionOwners
from hazmat.service.quotas import QuotaBook
from hazmat.service.tenant_keys import Key, KeyStore

__all__ = ["CSP", "Console", "ConsoleParts", "display_parts", "templates"]

# a display's frame inherits the page's CSP (headers.py, on every console answer) and gets a
# stricter one of its own
DISPLAY_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
TRUST_ORDER = [TrustLevel.UNTRUSTED, TrustLevel.UNKNOWN, TrustLevel.TRUSTED]

Run = Callable[[Key, dict[str, Any]], Awaitable[ExecutionResult]]


@dataclass(frozen=True)
class ConsoleParts:
    """What the console reads from the service (server/http.py makes it)."""

    keys: KeyStore
    recent: RecentRuns
    batches: BatchBook
    sessions: SessionOwners
    quotas: QuotaBook
    audit_dir: Path
    audit_append: Callable[[str, dict[str, Any]], int]
    audit_checkpoint: Callable[[], str]  # sign a checkpoint now
    run: Run  # a playground run, as POST /v1/runs would make it
    body: Callable[[Request, int], Awaitable[bytes]]  # a request body within a cap (http.py)


def templates() -> Environment:
    """The console's templates, every value escaped unless a template says otherwise (none
    does)."""
    env = Environment(
        loader=PackageLoader("hazmat.server.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["when"] = lambda t: time.strftime("%H:%M:%S", time.localtime(t))
    env.globals["display_parts"] = display_parts
    return env


class Console:
    def __init__(self, parts: ConsoleParts) -> None:
        self.parts = parts
        self.env = templates()

    def page(self, name: str, status: int = 200, **context: Any) -> Response:
        html = self.env.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status)  # headers.py adds the console's

    # the fragments: each takes the request and the checked key

    async def whoami(self, request: Request, key: Key) -> Response:
        if key.operator:
            self.parts.audit_append("console.operator", {"caller": key.caller})
        return self.page("whoami.html", key=key)

    async def runs(self, request: Request, key: Key) -> Response:
        runs = self.parts.recent.visible(key, key.operator)
        asked = ("outcome", "language", "tenant", "script", "session")
        wanted = {k: request.query_params.get(k, "") for k in asked}
        runs = [s for s in runs if _matches(s, wanted)]
        return self.page("runs.html", runs=runs[:200], wanted=wanted, key=key)

    async def run(self, request: Request, key: Key) -> Response:
        seen = self._seen(request.path_params["run_id"], key)
        return await self._run_page(seen, key)

    async def run_receipt(self, request: Request, key: Key) -> Response:
        """A receipt for one of the run's own records."""
        seen = self._seen(request.path_params["run_id"], key)
        seq = record_number(request.path_params["seq"])
        records = await anyio.to_thread.run_sync(self._records, seen)
        if seq is None or seq not in {r["seq"] for r in records}:
            shown = quoted(request.path_params["seq"])
            raise RunNotFound(f"no record {shown} of run {quoted(seen.id)}")
        return await self._receipt_page(seq)

    async def metrics(self, request: Request, key: Key) -> Response:
        tenants = None if key.operator else {key.tenant}
        series = self.parts.recent.timeline.series(tenants)
        return self.page("metrics.html", series=series, key=key)

    async def batches(self, request: Request, key: Key) -> Response:
        return self.page("batches.html", batches=self._batches(key), key=key)

    async def batch(self, request: Request, key: Key) -> Response:
        """Its counts and one page of its tasks (batch_page.py: not the whole batch)."""
        batch = self._batch(request.path_params["batch_id"], key)
        page = page_number(request.query_params.get("page"))
        return self.page("batch.html", **batch_page(batch, page))

    async def receipt(self, request: Request, key: Key) -> Response:
        """A receipt for one of the batch's verdicts (its `receipt` record number)."""
        batch = self._batch(request.path_params["batch_id"], key)
        seq = record_number(request.path_params["seq"])
        if seq is None or seq not in batch.receipts:
            shown = quoted(request.path_params["seq"])
            raise BatchNotFound(f"no receipt {shown} in batch {batch.id!r}")
        return await self._receipt_page(seq)

    async def sessions(self, request: Request, key: Key) -> Response:
        owners = self.parts.sessions
        owned = owners.every() if key.operator else [(key.tenant, s) for s in owners.mine(key)]
        found = [(tenant, session.info()) for tenant, session in owned]
        every = [*sorted({k.tenant for k in self.parts.keys.list()}), None]  # None: the API's
        store = owners.sandbox.session_store
        paused = await anyio.to_thread.run_sync(
            store.listing, every if key.operator else [key.tenant]
        )
        shelved = [(p.owner, p.info(store.keep_s)) for p in paused]
        return self.page("sessions.html", sessions=found, paused=shelved, key=key)

    async def tenants(self, request: Request, key: Key) -> Response:
        keys = self.parts.keys.list() if key.operator else [key]
        visible = [k for k in keys if key.operator or k.tenant == key.tenant]
        quotas = self.parts.quotas
        use = {k.tenant: (quotas.active(k.tenant), quotas.started(k.tenant)) for k in visible}
        return self.page("tenants.html", keys=visible, use=use, key=key)

    async def audit(self, request: Request, key: Key) -> Response:
        checkpoint = _read(self.parts.audit_dir / CHECKPOINT)
        return self.page("audit.html", checkpoint=checkpoint, pubkey=self._key().encode(), key=key)

    async def verify(self, request: Request, key: Key) -> Response:
        if not key.operator:
            raise NotPermitted("verifying the whole audit log takes an operator's key")
        report = await anyio.to_thread.run_sync(verify_log, self.parts.audit_dir)
        return self.page("verified.html", report=report)

    async def check(self, request: Request, key: Key) -> Response:
        """Check a pasted receipt against a pasted public key (the service's by default)."""
        form = await self._form(request, key)
        text, pubkey = form.get("receipt", ""), form.get("pubkey", "").strip()
        check_depth(text.encode())  # a receipt is 2 levels deep: far deeper is a 400
        try:
            verifier = VerifierKey.decode(pubkey) if pubkey else self._key()
            receipt = parse_receipt(text)  # checked whole before use (audit/receipts.py)
            record = check_receipt(receipt, verifier)
        except (InputError, CheckpointError, AuditError) as exc:
            return self.page("checked.html", ok=False, why=str(exc) or type(exc).__name__)
        return self.page("checked.html", ok=True, record=json.dumps(record, indent=1))

    async def playground(self, request: Request, key: Key) -> Response:
        allowed = TRUST_ORDER[: TRUST_ORDER.index(key.trust) + 1]
        return self.page("playground.html", languages=sorted(LANGUAGES), levels=allowed, key=key)

    async def play(self, request: Request, key: Key) -> Response:
        form = await self._form(request, key)
        data: dict[str, Any] = {k: form[k] for k in ("language", "trust", "image") if form.get(k)}
        data["code"] = form.get("code", "")
        result = await self.parts.run(key, data)
        seen = next((s for s in self.parts.recent.visible(key, False) if s.result is result), None)
        if seen is None:  # more runs than the console keeps ended meanwhile
            raise RunNotFound(
                f"the run ended ({result.outcome.value}) but is no longer among the console's "
                f"recent runs; the audit log has it as run {result.run_id}"
            )
        return await self._run_page(seen, key)

    async def failed(self, request: Request, exc: HazmatError) -> Response:
        """An error as a fragment the page shows where the answer would have gone."""
        return self.page("error.html", status=exc.http_status, error=exc)

    # helpers

    def _seen(self, run_id: str, key: Key) -> Seen:
        seen = self.parts.recent.get(run_id, key, key.operator)
        if seen is None:
            raise RunNotFound(f"no run {quoted(run_id)}")
        return seen

    async def _run_page(self, seen: Seen, key: Key) -> Response:
        records = await anyio.to_thread.run_sync(self._records, seen)
        shown = [(r, json.dumps(r, indent=1, ensure_ascii=False)) for r in records]
        return self.page("run.html", seen=seen, records=shown, key=key)

    def _records(self, seen: Seen) -> list[dict[str, Any]]:
        return run_records(self.parts.audit_dir, seen.id, seen.audit_at)

    async def _form(self, request: Request, key: Key) -> dict[str, str]:
        """A form the page posted (URL-encoded), read within the key's cap on a request body
        and the service's deadline for one, as any API call's body is."""
        body = await self.parts.body(request, key.quotas.max_request_bytes)
        try:
            text = body.decode("utf-8")
            pairs = parse_qsl(text, keep_blank_values=True, errors="strict", max_num_fields=16)
        except UnicodeDecodeError:
            raise InputError("the form is not UTF-8; send UTF-8") from None
        except ValueError as exc:
            raise InputError(f"the form has too many fields: {exc}") from None
        return dict(pairs)

    def _batches(self, key: Key) -> list[Batch]:
        book = self.parts.batches
        found = book.every() if key.operator else book.mine(key)
        return sorted(found, key=lambda b: -b.created)

    def _batch(self, batch_id: str, key: Key) -> Batch:
        if key.operator:
            for batch in self._batches(key):
                if batch.id == batch_id:
                    return batch
        return self.parts.batches.get(batch_id, key)

    async def _receipt_page(self, seq: int) -> Response:
        made = await anyio.to_thread.run_sync(self._receipt, seq)
        pubkey = self._key().encode()
        return self.page("receipt.html", receipt=json.dumps(made, indent=1), pubkey=pubkey)

    def _receipt(self, seq: int) -> dict[str, Any]:
        """A receipt for record `seq`, signing a checkpoint now if the latest does not cover
        it yet (one is signed only every `checkpoint_seconds`)."""
        try:
            return make_receipt(self.parts.audit_dir, self._key(), seq)
        except AuditError:
            self.parts.audit_checkpoint()
        return make_receipt(self.parts.audit_dir, self._key(), seq)

    def _key(self) -> VerifierKey:
        path = self.parts.audit_dir / PUBKEY
        try:
            return VerifierKey.read(path)
        except (OSError, CheckpointError) as exc:
            raise AuditError(f"the audit log's public key {path} cannot be read: {exc}") from None


def display_parts(bundle: Mapping[str, bytes | str]) -> dict[str, str]:
    """How the page shows one display: `img` (a data: URL of a PNG or JPEG), `frame` (HTML or
    SVG, for a sandboxed frame's srcdoc, after a CSP of its own) or `text`."""
    for mime in ("image/png", "image/jpeg"):
        data = bundle.get(mime)
        if isinstance(data, bytes):
            return {"img": f"data:{mime};base64,{base64.b64encode(data).decode()}"}
    for mime in ("image/svg+xml", "text/html"):
        data = bundle.get(mime)
        if isinstance(data, str):
            meta = f'<meta http-equiv="Content-Security-Policy" content="{DISPLAY_CSP}">'
            return {"frame": meta + data}
    text = next((v for v in bundle.values() if isinstance(v, str)), "")
    return {"text": text}


def record_number(text: str) -> int | None:
    """A record number from a URL: ASCII digits, no more than a record number can have (int()
    takes other scripts' digits, and refuses 4,301 of them with an error); None otherwise."""
    if text.isascii() and text.isdigit() and len(text) <= 19:
        return int(text)
    return None


def _matches(seen: Seen, wanted: Mapping[str, str]) -> bool:
    have = {
        "outcome": seen.result.outcome.value,
        "language": seen.result.language,
        "tenant": seen.tenant,
        "script": seen.request.script or "",
        "session": str(seen.request.origin.get("session", "")),
    }
    return all(not value or have[name] == value for name, value in wanted.items())


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
