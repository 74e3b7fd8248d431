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
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import filterfalse
from math import isnan

from proxy.ops.metrics import Metrics

FLUSH_EVERY = 32
"""Released frames' holds kept locally before they are added to the hold histogram (and at the end):
32 doubles, 256 bytes of each open stream."""


class StreamTimings:
    __slots__ = ("_batched", "_bounds", "_delivered", "_delivered_at", "_hold", "_t0", "_upstream",
                 "_upstream_seen", "_waits")

    def __init__(self, metrics: Metrics, t0: float | None = None) -> None:
        self._upstream, self._delivered_at = metrics.first_byte_upstream, metrics.first_byte_delivered
        hist = self._hold = metrics.stream_hold
        # Observing the histogram for every frame costs a bucket search and two locked increments
        # (~2 us per delta); holds are kept here and bucketed in batches, in C (``flush``), instead.
        # The histogram's own bounds (never changed once made), not a copy per stream.
        self._bounds: Sequence[float] = getattr(hist, "_upper_bounds", ())
        self._waits = array("d")
        self._batched = bool(self._bounds) and hasattr(hist, "_buckets") and hasattr(hist, "_sum")
        self._t0 = time.perf_counter() if t0 is None else t0
        self._upstream_seen = False
        self._delivered = False

    @property
    def held(self) -> Callable[[Iterable[float]], None]:
        """Callback for the guard: the released frames' times in the guard, in seconds (NaN for a
        frame without text, not counted). Made on each access, not kept: a bound method of this
        object stored on it would be a reference cycle, leaving the request's objects to the cycle
        collector."""
        return self._count if self._batched else self._observe

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

    def _count(self, seconds: Iterable[float]) -> None:
        waits = self._waits
        waits.extend(seconds)
        if len(waits) >= FLUSH_EVERY:
            self.flush()

    def _observe(self, seconds: Iterable[float]) -> None:
        for value in filterfalse(isnan, seconds):
            self._hold.observe(value)

    def flush(self) -> None:
        """Add the frames' holds kept so far to ``guardproxy_stream_hold_seconds``."""
        waits = self._waits
        if not waits:
            return
        values = list(filterfalse(isnan, waits))
        del waits[:]
        if not values:
            return
        hist = self._hold
        hist._sum.inc(sum(values))
        # The histogram's own rule (value <= bound), bucketed and counted in C.
        for i, n in Counter(map(partial(bisect_left, self._bounds), values)).items():
            hist._buckets[i].inc(n)
