"""The upstream client on the hot path: forwarding and streaming go through ``proxy.upstream.http1``'s pool.

Measured (DESIGN.md and README): httpx's own pool rescans its connections on every request and
served ~150-200 req/s at 32 concurrent on this machine, against ~1,300-1,400 for aiohttp; aiohttp's
client in turn spent about a fifth of a passthrough request's CPU in its own Python (see
``proxy.upstream.http1``). Forwarding and streaming therefore use guardproxy's own HTTP/1.1 pool; side calls
(webhook, moderation) use httpx over the aiohttp transport, where the API matters more than the last
20%.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping

from config.errors import UpstreamError
from config.settings import Settings
from proxy.upstream.content_coding import ContentCodingError, ContentDecoder, DecodeBounds
from proxy.upstream.http1 import Answer, Pool, tls_context

__all__ = ["HOP_BY_HOP", "RESPONSE_DROP", "Upstream", "UpstreamError", "UpstreamResponse"]

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
    b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade", b"content-length",
    b"proxy-authenticate", b"server", b"date",
})
"""Response headers never relayed (lower-case, as bytes: matched against the raw header names)."""


class UpstreamResponse:
    """An upstream answer whose status and headers are in: the headers the client may see, then the
    body as it arrives (``iter_chunks``) or whole (``read``)."""

    __slots__ = ("_answer", "_decoder", "content_length", "content_type", "headers", "status")

    def __init__(self, answer: Answer, *, decode: bool, bounds: DecodeBounds | None = None) -> None:
        self.status = answer.status
        self._answer = answer
        self._decoder: ContentDecoder | None = None
        self.content_type = ""
        """The full content-type header as sent (parameters included)."""
        self.content_length: int | None = None
        headers: list[tuple[str, str]] = []
        coding = ""
        for raw_name, raw_value in answer.raw_headers:
            name = raw_name.lower()
            if name in RESPONSE_DROP:
                if name == b"content-length" and raw_value.isdigit():
                    self.content_length = int(raw_value)
                continue
            value = raw_value.decode("latin-1")
            if name == b"content-type":
                self.content_type = value
            elif name == b"content-encoding" and decode:
                coding = value
                continue
            headers.append((name.decode("latin-1"), value))
        self.headers = headers
        if coding:
            try:
                decoder = ContentDecoder(coding, bounds)
            except ContentCodingError as exc:
                answer.close()
                raise UpstreamError(str(exc), timeout=False, reason="content_encoding") from exc
            self._decoder = decoder if decoder.active else None

    def iter_chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; decoded from its content-encoding when asked (a coding that cannot
        be undone raises ``UpstreamError``, reason ``content_encoding``)."""
        # The raw reads themselves when there is nothing to decode: an open stream suspends one
        # generator (and its frame) fewer.
        return self._answer.chunks() if self._decoder is None else self._decoded_chunks()

    async def _decoded_chunks(self) -> AsyncIterator[bytes]:
        # Each loop drops its read before awaiting the next: a suspended generator's locals stay
        # alive, and an idle stream would hold its last read (a burst of frames, whole) meanwhile.
        assert self._decoder is not None
        try:
            async for chunk in self._answer.chunks():
                out = self._decoder.feed(chunk)
                del chunk
                if out:
                    yield out
                del out
            if out := self._decoder.finish():
                yield out
        except ContentCodingError as exc:
            raise UpstreamError(str(exc), timeout=False, reason="content_encoding") from exc

    async def read_at_most(self, most: int) -> bytes | None:
        """The whole body, or None once it passes ``most`` bytes (the caller names the bound that
        refused it). A body that arrived with the headers is taken without running a generator."""
        if (body := self.arrived_whole()) is not None:
            return body if len(body) <= most else None
        total, parts = 0, []
        async for chunk in self.iter_chunks():
            total += len(chunk)
            if total > most:
                return None
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def arrived_whole(self) -> bytes | None:
        """The whole body when it is all in and nothing is to be decoded; else None (read it)."""
        return self._answer.arrived() if self._decoder is None else None

    async def read(self) -> bytes:
        if self._decoder is None:
            return await self._answer.read()
        return b"".join([c async for c in self.iter_chunks()])

    def close(self) -> None:
        self._answer.close()


class Upstream:
    """Owns the connection pool; made once per app, closed at shutdown."""

    def __init__(self, settings: Settings, *, on_resend: Callable[[], None] | None = None) -> None:
        """``on_resend``: called each time a request is sent once more on a new connection."""
        self._settings = settings
        self._on_resend = on_resend
        self._pool: Pool | None = None
        self._bounds = DecodeBounds(settings.max_response_bytes, settings.max_decoded_ratio)
        self.bases = {
            "openai": settings.openai_base_url.rstrip("/"),
            "anthropic": settings.anthropic_base_url.rstrip("/"),
            "gemini": settings.gemini_base_url.rstrip("/"),
        }

    async def start(self) -> None:
        self._pool = Pool(connect_timeout=self._settings.upstream_connect_timeout_s,
                          read_timeout=self._settings.upstream_read_timeout_s,
                          tls=tls_context(self._settings.upstream_ca_bundle),
                          idle_s=self._settings.upstream_idle_s, on_resend=self._on_resend)

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    async def request(self, method: str, url: str, headers: Mapping[str, str] | list[tuple[str, str]],
                      body: bytes | None, *, decode: bool = False) -> UpstreamResponse:
        """``decode``: undo the response's content-encoding (guarded traffic; the header is dropped).
        Without it the bytes are relayed exactly as sent (passthrough)."""
        assert self._pool is not None, "Upstream.start() was not awaited"
        answer = await self._pool.request(method, url, headers, body)
        return UpstreamResponse(answer, decode=decode, bounds=self._bounds)

    def send_now(self, method: str, url: str, headers: Mapping[str, str] | list[tuple[str, str]],
                 body: bytes | None) -> Answer | None:
        """Send at once on an idle connection (``Pool.send_now``); ``answered`` takes it from there.
        None, and nothing sent, when a connection would have to be opened first."""
        assert self._pool is not None, "Upstream.start() was not awaited"
        return self._pool.send_now(method, url, headers, body)

    async def answered(self, answer: Answer, *, decode: bool = False) -> UpstreamResponse:
        """What ``request`` returns, for a request ``send_now`` sent."""
        return UpstreamResponse(await Pool.answered(answer), decode=decode, bounds=self._bounds)
