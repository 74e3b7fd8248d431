"""The in-memory engine: one process (``guardproxy serve`` with one worker and no ``GUARDPROXY_STATE_URL``).

Dicts in the event loop's thread: no call waits, nothing is copied (values stay the ``bytes`` given).
Per scope an ``OrderedDict`` in use order; expired entries are dropped when read and in a sweep of
every entry once every ``SWEEP_EVERY`` puts (amortised O(1) a put), so an idle scope's expired
entries stop counting against the global budget.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from proxy.state.base import Budgets, Members, entry_size

SWEEP_EVERY = 1024
"""Puts between two sweeps of expired entries (each sweep walks every entry)."""


class _Entry:
    __slots__ = ("expires", "members", "size")

    def __init__(self, members: dict[bytes, bytes], size: int, expires: float) -> None:
        self.members, self.size, self.expires = members, size, expires


class MemoryStore:
    engine = "memory"
    shared = False
    waits = False

    def __init__(self, budgets: Budgets, clock: Callable[[], float] = time.monotonic) -> None:
        self.budgets = budgets
        self._clock = clock
        self._scopes: dict[str, OrderedDict[str, _Entry]] = {}
        self._used: dict[str, int] = {}
        self.total = 0
        """Bytes held in all scopes."""
        self._puts = 0

    def used(self, scope: str) -> int:
        return self._used.get(scope, 0)

    def __len__(self) -> int:
        return sum(map(len, self._scopes.values()))

    async def get(self, scope: str, key: str) -> list[bytes] | None:
        entries = self._scopes.get(scope)
        entry = entries.get(key) if entries is not None else None
        if entry is None or entries is None:
            return None
        if entry.expires <= self._clock():
            self._drop(scope, key)
            return None
        entries.move_to_end(key)
        return list(entry.members.values())

    async def put(self, scope: str, key: str, members: Members, ttl_s: float, *, join: bool = False) -> bool:
        self._puts += 1
        if self._puts % SWEEP_EVERY == 0:
            self._sweep()
        now = self._clock()
        held = self._scopes.get(scope)
        old = held.get(key) if held is not None else None
        merged = dict(old.members) if join and old is not None and old.expires > now else {}
        for i, v in members.items():
            merged.setdefault(i, v)
        self._drop(scope, key)
        size = entry_size(key, merged)
        if size > self.budgets.scope_bytes or size > self.budgets.total_bytes:
            return False
        entries = self._scopes.setdefault(scope, OrderedDict())
        entries[key] = _Entry(merged, size, now + ttl_s)
        self._used[scope] = self._used.get(scope, 0) + size
        self.total += size
        while self._used[scope] > self.budgets.scope_bytes:
            self._drop(scope, next(iter(entries)))
        while self.total > self.budgets.total_bytes:
            # the largest scope's least recently used, never the entry just put (it fits alone)
            others = (s for s in self._used if s != scope or len(self._scopes[s]) > 1)
            largest = max(others, key=self._used.__getitem__)
            self._drop(largest, next(iter(self._scopes[largest])))
        return True

    async def delete(self, scope: str, key: str) -> None:
        self._drop(scope, key)

    async def close(self) -> None:
        return None

    def _drop(self, scope: str, key: str) -> None:
        entries = self._scopes.get(scope)
        entry = entries.pop(key, None) if entries is not None else None
        if entry is None or entries is None:
            return
        self.total -= entry.size
        self._used[scope] -= entry.size
        if not entries:
            del self._scopes[scope], self._used[scope]

    def _sweep(self) -> None:
        now = self._clock()
        for scope, entries in list(self._scopes.items()):
            for key in [k for k, e in entries.items() if e.expires <= now]:
                self._drop(scope, key)
