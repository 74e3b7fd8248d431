"""The upstream HTTP client on the hot path.

Measured (DESIGN.md and README): httpx's own pool rescans its connections on every request and
served ~150-200 req/s at 32 concurrent on this machine, against ~1,300-1,400 for aiohttp. Forwarding
and streaming therefore use one pooled ``aiohttp.ClientSession`` directly; side calls (webhook,
moderation) use httpx over the aiohttp transport, where the API matters more than the last 20%.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import aiohttp

from config.errors import UpstreamFailure
from config.settings import Settings
from proxy.content_coding import ContentCodingError, ContentDecoder

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "trailers", "transfer-encoding", "upgrade", "host", "content-length", "forwarded",
    "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-real-ip",
    "x-guardproxy-token", "x-guardproxy-mode", "x-guardproxy-egress-grant",
    "x-http-method-override", "x-http-method", "x-method-override", "expect",
})
"""Request headers never forwarded: hop-by-hop, routing hints, the proxy's own controls, method
overrides (Google honours ``X-HTTP-Method-Override``: a GET the proxy passed through would become the
POST it guards), and ``Expect`` (the body is already read: a forwarded ``100-continue`` makes the
upstream wait for a go-ahead nobody sends)."""

RESPONSE_DROP = frozenset({
    "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length",
    "proxy-authenticate", "server", "date",
})


class UpstreamError(UpstreamFailure):
    """The upstream could not be reached, stalled, or sent what cannot be read. ``timeout`` tells a
    504 from a 502; ``reason`` (a bounded set of words) labels the fail-closed metric."""

    def __init__(self, message: str, *, timeout: bool, reason: str = "") -> None:
        super().__init__(message)
        self.timeout = timeout
        self.reason = reason or ("stalled" if timeout else "broke")


@dataclass(slots=True)
class UpstreamResponse:
    status: int
    headers: list[tuple[str, str]]
    _resp: aiohttp.ClientResponse
    _decoder: ContentDecoder | None = None
    """Set when the caller asked for decoded bytes (``Upstream.request(decode=True)``)."""

    def iter_chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; decoded from its content-encoding when asked (a coding that cannot
        be undone raises ``UpstreamError``, reason ``content_encoding``)."""
        # The raw reads themselves when there is nothing to decode: an open stream suspends one
        # generator (and its frame) fewer.
        return self._raw_chunks() if self._decoder is None else self._decoded_chunks()

    async def _decoded_chunks(self) -> AsyncIterator[bytes]:
        # Each loop drops its read before awaiting the next: a suspended generator's locals stay
        # alive, and an idle stream would hold its last read (a burst of frames, whole) meanwhile.
        assert self._decoder is not None
        try:
            async for chunk in self._raw_chunks():
                out = self._decoder.feed(chunk)
                del chunk
                if out:
                    yield out
                del out
            if out := self._decoder.finish():
                yield out
        except ContentCodingError as exc:
            raise UpstreamError(str(exc), timeout=False, reason="content_encoding") from exc

    async def _raw_chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._resp.content.iter_any():
                yield chunk
                del chunk
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise UpstreamError("the upstream stalled past the read timeout", timeout=True) from exc
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise UpstreamError(f"the upstream connection broke: {type(exc).__name__}", timeout=False) from exc

    @property
    def content_length(self) -> int | None:
        return self._resp.content_length

    @property
    def content_type(self) -> str:
        """The full content-type header as sent (parameters included)."""
        return self._resp.headers.get("content-type", "")

    async def read(self) -> bytes:
        return b"".join([c async for c in self.iter_chunks()])

    def close(self) -> None:
        self._resp.close()


class Upstream:
    """Owns the pooled session; made once per app, closed at shutdown."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._session: aiohttp.ClientSession | None = None
        self.bases = {
            "openai": settings.openai_base_url.rstrip("/"),
            "anthropic": settings.anthropic_base_url.rstrip("/"),
            "gemini": settings.gemini_base_url.rstrip("/"),
        }

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, enable_cleanup_closed=True)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._settings.upstream_connect_timeout_s,
                                        sock_read=self._settings.upstream_read_timeout_s)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False,
                                              skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept",
                                                                 "Content-Type"))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, url: str, headers: Mapping[str, str] | list[tuple[str, str]],
                      body: bytes | None, *, decode: bool = False) -> UpstreamResponse:
        """``decode``: undo the response's content-encoding (guarded traffic; the header is dropped).
        Without it the bytes are relayed exactly as sent (passthrough)."""
        assert self._session is not None, "Upstream.start() was not awaited"
        try:
            resp = await self._session.request(method, url, headers=headers, data=body,
                                               allow_redirects=False, compress=None)
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise UpstreamError("the upstream did not answer in time", timeout=True, reason="unreachable") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamError(f"the upstream is unreachable: {type(exc).__name__}", timeout=False,
                                reason="unreachable") from exc
        headers_out = [(k.lower(), v) for k, v in resp.headers.items() if k.lower() not in RESPONSE_DROP]
        if not decode or "content-encoding" not in resp.headers:
            return UpstreamResponse(resp.status, headers_out, resp)
        try:
            decoder = ContentDecoder(resp.headers.get("content-encoding", ""))
        except ContentCodingError as exc:
            resp.close()
            raise UpstreamError(str(exc), timeout=False, reason="content_encoding") from exc
        headers_out = [(k, v) for k, v in headers_out if k != "content-encoding"]
        return UpstreamResponse(resp.status, headers_out, resp, decoder if decoder.active else None)
