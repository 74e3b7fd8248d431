"""The live decision feed behind ``GET /events``: every audit record, fanned out to subscribers.

Publishing never waits: each subscriber has a bounded queue, and a subscriber that falls behind
loses the records that do not fit (counted in ``guardproxy_feed_dropped_total``) rather than slowing
a request down. Records carry what the audit log carries (ids, codes, decisions; never blocked text
or secrets). With ``--workers N`` the workers forward their records to each other's subscribers
(``feed_peers.py``), and each record names the ``worker`` (pid) that made the decision.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator

import anyio
from prometheus_client import Counter

from proxy.ops.feed_peers import FEED_DIR_ENV, FeedPeers

_QUEUE = 1000
"""Records a slow subscriber may lag behind before losing some (about a minute of a busy proxy)."""
_CLOSED: dict[str, object] = {}


class DecisionFeed:
    def __init__(self, dropped: Counter, peers_dir: str | None = None) -> None:
        self._subscribers: set[asyncio.Queue[dict[str, object]]] = set()
        self._dropped = dropped
        self._sequence = 0
        directory = peers_dir if peers_dir is not None else os.environ.get(FEED_DIR_ENV)
        self._peers = FeedPeers(directory, dropped.inc) if directory else None
        self._worker = os.getpid()

    def publish(self, record: dict[str, object]) -> None:
        self._sequence += 1
        if self._peers is not None:
            record = {**record, "worker": self._worker}
            self._peers.send(record)
        self._deliver(record)

    def _deliver(self, record: dict[str, object]) -> None:
        for queue in self._subscribers:
            try:
                queue.put_nowait(record)
            except asyncio.QueueFull:
                self._dropped.inc()

    async def subscribe(self, stop: anyio.Event | None = None) -> AsyncIterator[dict[str, object]]:
        """Records from now on, until ``close``, ``stop`` (server shutting down) or the subscriber
        leaves."""
        queue: asyncio.Queue[dict[str, object]] = asyncio.Queue(_QUEUE)
        self._subscribers.add(queue)
        if self._peers is not None:
            self._peers.listen(self._deliver)
        closer = asyncio.ensure_future(self._end_on(stop, queue)) if stop is not None else None
        try:
            while (record := await queue.get()) is not _CLOSED:
                yield record
        finally:
            self._subscribers.discard(queue)
            if self._peers is not None and not self._subscribers:
                self._peers.unlisten()
            if closer is not None:
                closer.cancel()

    async def _end_on(self, stop: anyio.Event, queue: asyncio.Queue[dict[str, object]]) -> None:
        await stop.wait()
        _end(queue)

    def close(self) -> None:
        for queue in self._subscribers:
            _end(queue)
        if self._peers is not None:
            self._peers.close()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


def _end(queue: asyncio.Queue[dict[str, object]]) -> None:
    while True:
        try:
            queue.put_nowait(_CLOSED)
            return
        except asyncio.QueueFull:
            queue.get_nowait()


def sse_events(feed: DecisionFeed, stop: anyio.Event) -> AsyncIterator[dict[str, str]]:
    """The feed as sse-starlette events: ``event`` is the audit event name, ``data`` the JSON record.
    Ends (cleanly, last chunk sent) when sse-starlette sets ``stop`` on server shutdown, so an open
    feed does not hold the shutdown for its grace period."""

    async def events() -> AsyncIterator[dict[str, str]]:
        n = 0
        async for record in feed.subscribe(stop):
            n += 1
            yield {"id": str(n), "event": str(record.get("event", "decision")),
                   "data": json.dumps(record, ensure_ascii=False, separators=(",", ":"))}

    return events()
