"""The live decision feed behind ``GET /events``: every audit record, fanned out to subscribers.

Publishing never waits, and a subscriber costs the proxy the same whatever it does: each record is
encoded once (not once per subscriber), subscribers are bounded in number
(``GUARDPROXY_FEED_MAX_SUBSCRIBERS``; one more is refused with 503) and each in what it may have
waiting (``GUARDPROXY_FEED_BUFFER_BYTES``): a subscriber that falls behind loses the records that
do not fit (counted in ``guardproxy_feed_dropped_total``) rather than slowing a request or another
subscriber down. Records carry what the audit log carries (ids, codes, decisions; never blocked text
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

_BUFFER_BYTES = 1024 * 1024
_MAX_SUBSCRIBERS = 8
Encoded = tuple[str, str]
"""A record as the feed sends it: (event name, JSON text)."""
_CLOSED: Encoded = ("", "")


class FeedFull(Exception):
    """As many subscribers as ``GUARDPROXY_FEED_MAX_SUBSCRIBERS`` allows are following already."""


class _Subscriber:
    """One follower's waiting records, bounded in bytes."""

    __slots__ = ("budget", "queue", "waiting")

    def __init__(self, budget: int) -> None:
        self.queue: asyncio.Queue[Encoded] = asyncio.Queue()
        self.waiting = 0
        self.budget = budget

    def offer(self, item: Encoded) -> bool:
        size = len(item[1])
        if self.waiting + size > self.budget:
            return False
        self.waiting += size
        self.queue.put_nowait(item)
        return True

    async def take(self) -> Encoded:
        item = await self.queue.get()
        self.waiting -= len(item[1])
        return item

    def end(self) -> None:
        self.queue.put_nowait(_CLOSED)


class DecisionFeed:
    def __init__(self, dropped: Counter, peers_dir: str | None = None, *,
                 max_subscribers: int = _MAX_SUBSCRIBERS, buffer_bytes: int = _BUFFER_BYTES) -> None:
        self._subscribers: set[_Subscriber] = set()
        self._dropped = dropped
        self._max, self._budget = max_subscribers, buffer_bytes
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
        if not self._subscribers:
            return
        item = (str(record.get("event", "decision")),
                json.dumps(record, separators=(",", ":")))  # ASCII: no reader splits a record at U+2028
        for sub in self._subscribers:
            if not sub.offer(item):
                self._dropped.inc()

    @property
    def full(self) -> bool:
        """No place for one more subscriber (the route answers 503 before starting the stream)."""
        return len(self._subscribers) >= self._max

    def join(self) -> _Subscriber:
        """A place among the subscribers, or ``FeedFull``."""
        if self.full:
            raise FeedFull()
        sub = _Subscriber(self._budget)
        self._subscribers.add(sub)
        if self._peers is not None:
            self._peers.listen(self._deliver)
        return sub

    async def subscribe(self, stop: anyio.Event | None = None) -> AsyncIterator[Encoded]:
        """Records from now on (``(event, JSON)``), until ``close``, ``stop`` (server shutting down)
        or the subscriber leaves. ``FeedFull`` when there is no place (the place is taken when the
        iteration starts, so one that never starts holds none)."""
        sub = self.join()
        closer = asyncio.ensure_future(self._end_on(stop, sub)) if stop is not None else None
        try:
            while (item := await sub.take()) is not _CLOSED:
                yield item
        finally:
            self.leave(sub)
            if closer is not None:
                closer.cancel()

    def leave(self, sub: _Subscriber) -> None:
        self._subscribers.discard(sub)
        if self._peers is not None and not self._subscribers:
            self._peers.unlisten()

    async def _end_on(self, stop: anyio.Event, sub: _Subscriber) -> None:
        await stop.wait()
        sub.end()

    def close(self) -> None:
        for sub in self._subscribers:
            sub.end()
        if self._peers is not None:
            self._peers.close()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


def sse_events(feed: DecisionFeed, stop: anyio.Event) -> AsyncIterator[dict[str, str]]:
    """The feed as sse-starlette events: ``event`` is the audit event name, ``data`` the JSON record.
    Ends (cleanly, last chunk sent) when sse-starlette sets ``stop`` on server shutdown, so an open
    feed does not hold the shutdown for its grace period. A subscriber that finds the feed full
    (a race with another joining after the route's check) gets an empty stream."""

    async def events() -> AsyncIterator[dict[str, str]]:
        n = 0
        try:
            async for event, data in feed.subscribe(stop):
                n += 1
                yield {"id": str(n), "event": event, "data": data}
        except FeedFull:
            return

    return events()
