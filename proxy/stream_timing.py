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

from proxy.metrics import Metrics


class StreamTimings:
    def __init__(self, metrics: Metrics, t0: float | None = None) -> None:
        self._upstream, self._delivered_at = metrics.first_byte_upstream, metrics.first_byte_delivered
        self.held = metrics.stream_hold.observe
        """Callback for the guard: one released text frame's time in the guard, in seconds."""
        self._t0 = time.perf_counter() if t0 is None else t0
        self._upstream_seen = False
        self._delivered = False

    def upstream_read(self) -> None:
        if not self._upstream_seen:
            self._upstream_seen = True
            self._upstream.observe(time.perf_counter() - self._t0)

    def delivered(self) -> None:
        if not self._delivered:
            self._delivered = True
            self._delivered_at.observe(time.perf_counter() - self._t0)
