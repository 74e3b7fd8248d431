"""``UpstreamCall``: one client request's attempts upstream, made by the drive.

The edge decides where a request goes and with which headers (routing, credentials, hop-by-hop
headers); this object makes the calls with those values: the first attempt may already be on its way
(the edge's early send, handed over here), every later one (a retry, a feedback round) is a new
request. It times them for the request's log line, its trace span and the latency histogram. The
drive holds it instead of a callback into the edge: nothing calls back up.
"""

from __future__ import annotations

import time

from opentelemetry.trace import Span

from proxy.drive.services import Services
from proxy.ops.tracing import mark
from proxy.upstream.forwarding import UpstreamResponse
from proxy.upstream.http1 import Answer

Early = tuple[bytes, Answer, float]
"""An attempt sent before its body was read: that body, its answer, when it was sent."""


class UpstreamCall:
    __slots__ = ("_decode", "_early", "_headers", "_method", "_model", "_provider", "_services", "_span",
                 "_t0", "_url", "upstream_s")

    def __init__(self, services: Services, method: str, url: str, headers: list[tuple[str, str]], *,
                 decode: bool, provider: str, model: str | None, span: Span | None, t0: float,
                 early: Early | None = None) -> None:
        self._services, self._method, self._url, self._headers = services, method, url, headers
        self._decode, self._provider, self._model, self._span, self._t0 = decode, provider, model, span, t0
        self._early = early
        self.upstream_s = 0.0
        """Time spent waiting for the upstream's heads, over every attempt."""

    async def __call__(self, body: bytes) -> UpstreamResponse:
        t = time.perf_counter()
        if (early := self._early) is not None:
            self._early = None
            if early[0] is body and self._decode:
                t = early[2]
                return self._answered(await self._services.upstream.answered(early[1], decode=True), t)
            early[1].close()
        with self._services.tracing.upstream_call(self._provider, self._model, self._url):
            resp = await self._services.upstream.request(self._method, self._url, self._headers, body,
                                                         decode=self._decode)
        return self._answered(resp, t)

    def _answered(self, resp: UpstreamResponse, t: float) -> UpstreamResponse:
        """Count an attempt sent at ``t`` whose head is in."""
        elapsed = time.perf_counter() - t
        if not self.upstream_s:
            mark(self._span, "first_upstream_byte", self._t0)
        self.upstream_s += elapsed
        self._services.metrics.upstream_latency_of(self._provider).observe(elapsed)
        return resp

    def close(self) -> None:
        """Drop an early attempt no call took (the request was refused once read)."""
        if self._early is not None:
            self._early[1].close()
            self._early = None
