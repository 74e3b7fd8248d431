"""Each client's share of the tool checks: one answer's tool calls at a time per client.

Tool checks run in worker threads, and shell analysis in two worker processes
(``guardrails.tools.shell_worker``). Without shares, one client sending several answers full of
costly commands at once filled every thread and both parsers, and an unrelated client's ``ls``
waited behind them (issue #29: almost 10 s). ``ClientShares.turn`` serialises the tool checks of
one client (its answers queue behind each other), so a client holds at most one thread and one
parser at a time, and other clients' checks go past it.

A client is who pays for the answer: its ``x-guardproxy-token`` when it sends one, else a digest of
its provider credential (``Authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``); requests
with neither share one queue. The credential itself is never kept.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

_CREDENTIALS = ("x-guardproxy-token", "authorization", "x-api-key", "x-goog-api-key", "api-key")


def client_key(headers: Sequence[tuple[str, str]]) -> str:
    """Whose share a request's tool checks come from (a digest; lower-case header names)."""
    found = dict(headers)
    for name in _CREDENTIALS:
        value = found.get(name)
        if value:
            return name[0] + hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    return ""


class ClientShares:
    """One lock per client with tool checks waiting or running (forgotten when none is)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @asynccontextmanager
    async def turn(self, client: str) -> AsyncIterator[None]:
        entry = self._locks.get(client)
        if entry is None:
            entry = self._locks[client] = (asyncio.Lock(), [0])
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[client]

    def __len__(self) -> int:
        return len(self._locks)
