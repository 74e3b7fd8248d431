"""The store a guard decision depends on: one small interface, three engines (``proxy.state``).

An entry is a set of members under ``(scope, key)``: each member a value with an id (the caller's
digest of it), so a ``join`` adds to an entry atomically in every engine (two turns of one
conversation ending at once on two replicas both land) and a replace swaps it whole.

- ``scope``: whose state it is (``proxy.state.scope``: a digest of the upstream credential that
  created it). A request only ever reads and writes its own scope, so nothing one credential sends
  can read another's entries or push them out.
- Budgets (``Budgets``), in bytes as stored (the key, each member's id and value, and a fixed
  ``ENTRY_OVERHEAD``: never characters): a scope past its own budget loses its least recently used
  entries; the store past the global budget loses the least recently used entries of the scope that
  holds the most (never a smaller scope's while a larger one has any). An entry larger than a scope's
  budget is not kept (``put`` answers False).
- ``ttl_s``: an entry is gone after it (the engine never answers it later), never extended by a read.

Engines raise ``StoreUnavailable`` when they cannot answer (down, an error, full on disk or in memory);
the caller bounds the wait (``asyncio.timeout``) and applies its policy. Nothing here logs a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

ENTRY_OVERHEAD = 64
"""Bytes counted per entry besides its key and members: the engines' own bookkeeping (a row, a hash's
header), so a flood of empty entries still fills a budget."""

Members = Mapping[bytes, bytes]
"""Member id -> value. Ids are short digests chosen by the caller; values are what is stored."""


class StoreUnavailable(Exception):
    """The store did not answer (connection refused or lost, an engine error, out of space). The message
    names the cause, never a value."""


@dataclass(frozen=True, slots=True)
class Budgets:
    scope_bytes: int
    """Most bytes one scope may hold; its least recently used entries go first."""
    total_bytes: int
    """Most bytes the store holds in all; past it the largest scope's least recently used go first."""


def entry_size(key: str, members: Members) -> int:
    """Bytes an entry counts against its budgets: as stored, UTF-8 for the key."""
    return ENTRY_OVERHEAD + len(key.encode()) + sum(len(i) + len(v) for i, v in members.items())


class Store(Protocol):
    """Async get/put with a TTL and byte budgets per scope. One instance per process."""

    engine: str
    """``memory``, ``sqlite`` or ``valkey`` (a metric label)."""
    shared: bool
    """Values leave this process (another process or machine can read them): sealed when a key is set."""
    waits: bool
    """A call can wait on I/O: the caller bounds it with a timeout (the in-memory engine never waits)."""

    async def get(self, scope: str, key: str) -> list[bytes] | None:
        """The members' values under ``key`` (in the order first put, where the engine keeps one), or
        None when there is no such live entry. Marks the entry used."""
        ...

    async def put(self, scope: str, key: str, members: Members, ttl_s: float, *, join: bool = False) -> bool:
        """Keep ``members`` under ``key`` for ``ttl_s`` seconds: in place of the entry (``join`` False) or
        added to it (``join``: members with an id already there are kept as they are; the entry's TTL
        becomes ``ttl_s`` from now). False: not kept (larger than a scope's budget); the old entry is
        then gone too."""
        ...

    async def delete(self, scope: str, key: str) -> None:
        ...

    async def close(self) -> None:
        ...
