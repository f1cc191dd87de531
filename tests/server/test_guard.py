"""`CloseUnread`: an answer sent before the request's body was read says `Connection: close`
(the protocol closes that connection after it); one sent after does not (the ASGI app alone,
no server)."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from hazmat.server.guard import CloseUnread


async def early(request: Request) -> PlainTextResponse:
    return PlainTextResponse("no", status_code=404)


async def late(request: Request) -> PlainTextResponse:
    return PlainTextResponse(str(len(await request.body())))


APP = Starlette(
    routes=[Route("/early", early, methods=["POST"]), Route("/late", late, methods=["POST"])],
    middleware=[Middleware(CloseUnread)],
)


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "closes"), [("/early", True), ("/late", False)])
async def test_only_an_answer_before_the_body_was_read_says_close(path: str, closes: bool) -> None:
    transport = httpx.ASGITransport(app=APP)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        answer = await client.post(path, content=b"x" * 1000)
        no_body = await client.post(path)
    assert answer.headers.get_list("connection") == (["close"] if closes else [])
    assert no_body.headers.get_list("connection") == []  # nothing to leave unread
