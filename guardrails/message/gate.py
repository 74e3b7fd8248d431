"""How many message checks may be in flight at once, and what waiting for a slot costs.

Under load the checks (judge, webhook, moderation) queue for side-call connections. Before, the wait
counted against each check's ``timeout_s``: 160 concurrent checks on a 100-connection pool left 60
answers unjudged. Now the runner takes a slot *before* a check's deadline starts, so queueing never
eats the check's own time; a check still waiting after ``queue_timeout_s`` fails open as unavailable
(``queue_timeout``), which is counted. The side-call pool is sized to the same number of slots.

``observe`` receives every wait (seconds) and ``in_flight`` / ``queued`` changes, for ``/metrics``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


class QueueTimeout(Exception):
    """No slot came free within the queue timeout."""


class CheckGate:
    def __init__(self, slots: int, queue_timeout_s: float,
                 observe: Callable[[float], None] | None = None,
                 gauges: Callable[[int, int], None] | None = None) -> None:
        self.slots = slots
        self.queue_timeout_s = queue_timeout_s
        self._sem = asyncio.Semaphore(slots)
        self._observe = observe
        self._gauges = gauges
        self.in_flight = 0
        self.queued = 0

    def _changed(self) -> None:
        if self._gauges is not None:
            self._gauges(self.in_flight, self.queued)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the body; ``QueueTimeout`` when none came free in time."""
        start = time.perf_counter()
        self.queued += 1
        self._changed()
        try:
            async with asyncio.timeout(self.queue_timeout_s):
                await self._sem.acquire()
        except TimeoutError:
            raise QueueTimeout from None
        finally:
            self.queued -= 1
            if self._observe is not None:
                self._observe(time.perf_counter() - start)
        self.in_flight += 1
        self._changed()
        try:
            yield
        finally:
            self.in_flight -= 1
            self._sem.release()
            self._changed()
