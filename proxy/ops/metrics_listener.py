"""A listener of its own for ``GET /metrics`` (``GUARDPROXY_METRICS_PORT``), without a token.

The main port's ``/metrics`` needs the admin token once any token is configured, and Prometheus's
``prometheus.io/scrape`` annotations cannot send one. A second port that answers only the metrics lets
a cluster scrape them without handing the admin token to the scraper (and a NetworkPolicy can keep
that port to the monitoring namespace). It answers ``GET /metrics`` (and ``HEAD``), 404 to anything
else, and closes each connection after its answer: a scrape every few seconds needs no keep-alive.
Each worker of ``serve --workers N`` binds it with ``SO_REUSEPORT``; each answers with the sum over
every worker (``Metrics.render``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from proxy.ops.metrics import CONTENT_TYPE

HEAD_LIMIT = 8 * 1024
"""A scrape's request head is a few hundred bytes; past this the connection is dropped."""
HEAD_TIMEOUT_S = 5.0
"""A client that has not sent its whole head by then is dropped (slow clients cost a socket only)."""


def _answer(status: str, body: bytes, content_type: str, head_only: bool) -> bytes:
    head = (f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode()
    return head if head_only else head + body


class MetricsListener:
    def __init__(self, render: Callable[[], bytes], host: str, port: int) -> None:
        self._render, self.host, self.port = render, host, port
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_port=True,
                                                  limit=HEAD_LIMIT)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
            method, _, rest = head.partition(b" ")
            target = rest.split(b" ", 1)[0].split(b"?", 1)[0]
            if method in (b"GET", b"HEAD") and target == b"/metrics":
                writer.write(_answer("200 OK", self._render(), CONTENT_TYPE, method == b"HEAD"))
            else:
                writer.write(_answer("404 Not Found", b"only GET /metrics is served here\n", "text/plain", False))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()
