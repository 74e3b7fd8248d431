"""Thin helpers over raw ASGI: the hot path skips framework request/response objects."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from config.errors import ClientError, ClientGone

__all__ = ["BodyTooLarge", "ClientGone", "Message", "Receive", "Scope", "Send", "header_list", "read_body", "respond"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyTooLarge(ClientError):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ClientGone()
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        chunks.append(chunk)
        if not msg.get("more_body", False):
            return b"".join(chunks)


def header_list(scope: Scope) -> list[tuple[str, str]]:
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]


async def respond(send: Send, status: int, body: bytes, headers: list[tuple[str, str]] | None = None,
                  content_type: str = "application/json", encoded: list[tuple[bytes, bytes]] | None = None) -> None:
    """``encoded``: more headers, already bytes, after ``headers``."""
    raw = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers or []
            if k not in ("content-type", "content-length")]
    if encoded:
        raw += encoded
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
