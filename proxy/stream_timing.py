"""What checking costs the client, in ``/metrics``: how long text waits in the guard, and time to the
first byte from upstream and to the client.

- ``guardproxy_stream_hold_seconds``: each text frame, from its arrival from upstream (``push``) to
  its release by the guard (the driver writes what is released at once). The guard is sans-IO: it
  reads the clock it is given and reports each release through a callback.
- ``guardproxy_time_to_first_byte_seconds{stage}``: from the start of the guarded turn to the first
  upstream body byte (``upstream``) and to the first byte written to the client (``delivered``);
  their difference is what the guard adds to time-to-first-token.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Sequence

from proxy.metrics import Metrics

FLUSH_EVERY = 64
"""Released frames counted locally before they are added to the hold histogram (and at the end)."""


class StreamTimings:
    __slots__ = ("_batched", "_bounds", "_counts", "_delivered", "_delivered_at", "_hold", "_pending", "_sum", "_t0",
                 "_upstream", "_upstream_seen")

    def __init__(self, metrics: Metrics, t0: float | None = None) -> None:
        self._upstream, self._delivered_at = metrics.first_byte_upstream, metrics.first_byte_delivered
        hist = self._hold = metrics.stream_hold
        # Observing the histogram for every frame costs a bucket search and two locked increments
        # (~2 us per delta); frames are counted per bucket here and added in batches instead.
        # The histogram's own bounds (never changed once made), not a copy per stream.
        self._bounds: Sequence[float] = getattr(hist, "_upper_bounds", ())
        self._counts = [0] * len(self._bounds)
        self._sum, self._pending = 0.0, 0
        self._batched = bool(self._bounds) and hasattr(hist, "_buckets") and hasattr(hist, "_sum")
        self._t0 = time.perf_counter() if t0 is None else t0
        self._upstream_seen = False
        self._delivered = False

    @property
    def held(self) -> Callable[[float], None]:
        """Callback for the guard: one released text frame's time in the guard, in seconds. Made on
        each access, not kept: a bound method of this object stored on it would be a reference cycle,
        leaving the request's objects to the cycle collector."""
        return self._count if self._batched else self._hold.observe

    def upstream_read(self) -> None:
        if not self._upstream_seen:
            self._upstream_seen = True
            self._upstream.observe(time.perf_counter() - self._t0)

    def delivered(self) -> None:
        if not self._delivered:
            self._delivered = True
            self._delivered_at.observe(time.perf_counter() - self._t0)

    @property
    def has_delivered(self) -> bool:
        """The first byte to the client has been timed (``delivered`` has nothing more to do)."""
        return self._delivered

    def _count(self, seconds: float) -> None:
        self._counts[bisect_left(self._bounds, seconds)] += 1  # the histogram's own rule: value <= bound
        self._sum += seconds
        self._pending += 1
        if self._pending >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Add the frames counted so far to ``guardproxy_stream_hold_seconds``."""
        if not self._pending:
            return
        hist, counts = self._hold, self._counts
        hist._sum.inc(self._sum)
        for i, n in enumerate(counts):
            if n:
                hist._buckets[i].inc(n)
                counts[i] = 0
        self._sum, self._pending = 0.0, 0
