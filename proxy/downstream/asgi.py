"""Thin helpers over raw ASGI: the hot path skips framework request/response objects."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from config.errors import ClientError, ClientGone

__all__ = ["BodyTimeout", "BodyTooLarge", "ClientGone", "Message", "Receive", "Scope", "Send", "header_list", "read_body", "respond"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyTooLarge(ClientError):
    pass


class BodyTimeout(ClientError):
    """The body paused longer than ``idle_s`` or took longer than ``total_s`` in all."""


async def read_body(receive: Receive, limit: int, idle_s: float | None = None, total_s: float | None = None) -> bytes:
    """The whole request body: ``BodyTooLarge`` past ``limit`` bytes, ``BodyTimeout`` when a piece
    takes longer than ``idle_s`` to come or the whole longer than ``total_s`` (a slow client)."""
    chunks: list[bytes] = []
    size = 0
    loop = asyncio.get_running_loop()
    end = loop.time() + total_s if total_s is not None else None
    while True:
        if idle_s is None and end is None:
            msg = await receive()
        else:
            left = None if end is None else end - loop.time()
            wait = left if idle_s is None else idle_s if left is None else min(idle_s, left)
            try:
                async with asyncio.timeout(max(wait or 0.0, 0.0)):
                    msg = await receive()
            except TimeoutError:
                raise BodyTimeout() from None
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
