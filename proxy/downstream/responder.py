"""``Responder``: the client side of one request. Everything the proxy sends goes through it.

It knows whether the response has started (headers out), its status, whether any body byte went
out, and whether it is finished; it answers an error in the client's API format: an HTTP error
before the response started, that API's mid-stream error (``codec.render_error``) after.
"""

from __future__ import annotations

from proxy.downstream.asgi import Send, respond
from proxy.wire.base import ErrorKind, StreamCodec, WireFormat


class Responder:
    def __init__(self, send: Send, request_id: str) -> None:
        self._send = send
        self.request_id = request_id
        self.started = False
        """The status line and headers went out."""
        self.finished = False
        self.status = 0
        self.sent_any = False
        """At least one body byte of a streamed response went out."""
        self.wire: WireFormat | None = None
        """The API whose error format a failure gets (set once the request is routed)."""
        self.codec: StreamCodec | None = None
        """The codec of the stream the client is reading, for that API's mid-stream error."""
        self.decision_headers: list[tuple[bytes, bytes]] = []
        """On guarded routes: the policy and guardrails the answer ran under (on every answer), encoded
        once per policy."""

    async def start(self, status: int, headers: list[tuple[str, str]], content_type: str | None = None) -> None:
        """Send the status and headers once; ``content_type`` overrides the given one."""
        if self.started:
            return
        self.started = True
        self.status = status
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers
               if not (content_type and k == "content-type")]
        if content_type:
            raw.append((b"content-type", content_type.encode()))
        raw.append((b"x-guardproxy-request-id", self.request_id.encode()))
        raw += self.decision_headers
        await self._send({"type": "http.response.start", "status": status, "headers": raw})

    async def write(self, data: bytes) -> None:
        if data and not self.finished:
            self.sent_any = True
            await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def finish(self) -> None:
        """Idempotent: a stream already ended by ``fail`` is not ended twice."""
        if self.finished:
            return
        self.finished = True
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    async def respond(self, status: int, body: bytes, headers: list[tuple[str, str]],
                      content_type: str, *, decided: bool = False) -> None:
        """The whole response at once, with its length (unary answers, relayed upstream errors).
        ``decided``: an answer the guardrails ran on (it carries the decision headers)."""
        self.started, self.finished, self.status = True, True, status
        ours = [(b"x-guardproxy-request-id", self.request_id.encode())]
        await respond(self._send, status, body, headers, content_type,
                      ours + self.decision_headers if decided else ours)

    async def fail(self, status: int, message: str, kind: ErrorKind, *, wire: WireFormat | None = None,
                   extra: dict[str, str] | None = None) -> None:
        """An error in the client's own format. ``wire`` overrides ``self.wire`` (a request refused
        before it was routed)."""
        if self.started:
            if self.codec is not None:
                await self.write(self.codec.render_error(message, kind))
            await self.finish()
            return
        fmt = wire or self.wire
        assert fmt is not None, "an error before routing needs the wire format of its guessed API"
        await self.respond(status, fmt.http_error(status, message, kind, extra), [], "application/json")
