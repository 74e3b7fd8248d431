"""The async driver of one client request: authorises and routes it, relays passthrough traffic,
and hands the four guarded APIs to ``proxy.guarded_turn``.

Sockets live here and in ``proxy.guarded_turn``; judgement does not. Errors reach the client in its own
API's format (an HTTP error before the response started, that API's mid-stream error after).
"""

from __future__ import annotations

import hmac
import re
import time
import uuid
from collections import Counter

import structlog

from proxy.asgi import Scope, Send, header_list, respond
from proxy.guarded_turn import GuardedTurn
from proxy.routes import BadPath, Provider, Route, resolve
from proxy.services import Services
from proxy.upstream import HOP_BY_HOP, UpstreamError, UpstreamResponse
from proxy.wire.base import BadRequest, ErrorKind, StreamCodec, WireFormat, load_json_body

log = structlog.get_logger("guardproxy")

_PROVIDER_WIRE: dict[Provider, str] = {"openai": "openai_chat", "anthropic": "anthropic", "gemini": "gemini"}
_GEMINI_MODEL = re.compile(r"/models/([^/:]+):")
_SMALL_BODY = 1 << 20
"""Passthrough bodies up to this size with a known length are relayed in one piece."""


class Exchange:
    """One client request, from the first byte received to the last byte sent."""

    def __init__(self, services: Services, scope: Scope, body: bytes | None, send: Send) -> None:
        self.services = services
        self.scope, self.body, self._send = scope, body, send
        self.request_id = uuid.uuid4().hex[:16]
        self.headers = header_list(scope)
        self.header = {k: v for k, v in self.headers}
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.query: str = scope.get("query_string", b"").decode("latin-1")
        self.started = False
        self.finished = False
        self.status = 0
        self.client_codec: StreamCodec | None = None
        self.sent_any = False
        self.attempts: Counter[str] = Counter()
        self.feedback_rounds = 0
        self.t0 = time.perf_counter()
        self.upstream_s = 0.0
        self.route: Route | None = None
        self.wire: WireFormat | None = None

    # ------------------------------------------------------------------ entry
    async def run(self) -> None:
        structlog.contextvars.bind_contextvars(request_id=self.request_id)
        try:
            await self._run()
        except Exception as exc:  # noqa: BLE001 - the client gets a clean error, the log the type only
            log.error("internal_error", error=type(exc).__name__, path=self.path)
            await self._fail(500, "guardproxy hit an internal error", "upstream")
        finally:
            route = self.route.wire or "passthrough" if self.route else "invalid"
            self.services.metrics.requests.labels(route=route, status=str(self.status)).inc()
            log.info("request", method=self.method, path=self.path, route=route, status=self.status,
                     duration_ms=round((time.perf_counter() - self.t0) * 1000, 2),
                     upstream_ms=round(self.upstream_s * 1000, 2), attempts=sum(self.attempts.values()),
                     feedback_rounds=self.feedback_rounds)
            structlog.contextvars.unbind_contextvars("request_id")

    async def _run(self) -> None:
        if not self._authorized():
            await self._fail(401, "missing or wrong x-guardproxy-token", "authentication",
                             provider=self._guess_provider())
            return
        raw_path = self.scope.get("raw_path", self.path.encode()).decode("latin-1")
        try:
            self.route = route = resolve(raw_path, self.method, self.header, self.query)
        except BadPath as exc:
            await self._fail(400, str(exc), "invalid_request", provider=self._guess_provider())
            return
        self.path = route.path
        # The policy is chosen once, here; a reload from now on does not change it for this request.
        self.services = self.services.bound(self.services.book.choose(
            self.header.get("x-guardproxy-token", ""), route.wire, self.header.get("x-guardproxy-policy")))
        if route.query is not None:
            self.query = route.query
        if route.refused is not None and self.services.guarding:
            self.services.metrics.fail_closed.labels(reason="refused_endpoint").inc()
            await self._fail(403, f"guardproxy does not relay {route.refused}: the guardrails cannot check "
                                  "its output", "permission")
            return
        body = self.body
        if body is None:
            await self._fail(413, f"request body exceeds {self.services.settings.max_body_bytes} bytes", "too_large")
            return
        if route.wire is None:
            await self._passthrough(body)
            return
        self.wire = wire = self.services.wires[route.wire]
        try:
            data = load_json_body(body)
            view = wire.parse_request(data, stream=bool(route.stream))
        except BadRequest as exc:
            await self._fail(400, str(exc), "invalid_request")
            return
        if route.wire == "openai_responses" and data.get("background") not in (None, False):
            self.services.metrics.fail_closed.labels(reason="refused_background").inc()
            await self._fail(400, "guardproxy does not accept 'background': a background response is "
                                  "retrieved later, unchecked; send it in the foreground", "invalid_request")
            return
        if route.wire == "gemini":
            m = _GEMINI_MODEL.search(route.path)
            view.model = m.group(1) if m else view.model
            view.stream = bool(route.stream)
        if not self.services.guarding:
            await self._passthrough(body)
            return
        await GuardedTurn(self, wire, route, data, body, view).run()

    # ------------------------------------------------------------------ plumbing
    def _authorized(self) -> bool:
        """With no token configured, anyone; else the admin token or one of the client tokens."""
        token = self.services.settings.auth_token
        if not token and not self.services.settings.client_tokens:
            return True
        given = self.header.get("x-guardproxy-token", "")
        if given and self.services.book.token_matches(given) is not None:
            return True
        return bool(token) and hmac.compare_digest(given.encode(), (token or "").encode())

    def decision_headers(self) -> list[tuple[str, str]]:
        """On guarded routes: which policy (name@version) and which guardrails this response ran under."""
        if self.wire is None or not self.services.guarding:
            return []
        guard = self.services.guard
        return [("x-guardproxy-policy", guard.label),
                ("x-guardproxy-guardrails", ",".join(guard.guardrail_ids) or "none")]

    def _guess_provider(self) -> Provider:
        """The API whose error format a refused request gets: its path first, then its headers."""
        path = self.path
        if path.startswith(("/anthropic", "/v1/messages")):
            return "anthropic"
        if path.startswith(("/gemini", "/v1beta", "/v1alpha")) or ":generateContent" in path \
                or ":streamGenerateContent" in path:
            return "gemini"
        if path.startswith(("/openai", "/v1/chat", "/v1/responses", "/chat", "/responses")):
            return "openai"
        if "anthropic-version" in self.header or "x-api-key" in self.header:
            return "anthropic"
        return "gemini" if "x-goog-api-key" in self.header else "openai"

    def upstream_url(self, path: str | None = None) -> str:
        assert self.route is not None
        url = self.services.upstream.bases[self.route.provider] + (path or self.route.path)
        return f"{url}?{self.query}" if self.query and path is None else url

    def forward_headers(self, *, identity: bool) -> list[tuple[str, str]]:
        named = {t.strip().lower() for t in self.header.get("connection", "").split(",")}  # RFC 9110 7.6.1
        out = [(k, v) for k, v in self.headers if k not in HOP_BY_HOP and k not in named]
        if identity:
            out = [(k, v) for k, v in out if k != "accept-encoding"] + [("accept-encoding", "identity")]
        return out

    async def start(self, status: int, headers: list[tuple[str, str]], content_type: str | None = None) -> None:
        if self.started:
            return
        self.started = True
        self.status = status
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers
               if not (content_type and k == "content-type")]
        if content_type:
            raw.append((b"content-type", content_type.encode()))
        raw.append((b"x-guardproxy-request-id", self.request_id.encode()))
        raw += [(k.encode(), v.encode("latin-1", "replace")) for k, v in self.decision_headers()]
        await self._send({"type": "http.response.start", "status": status, "headers": raw})

    async def write(self, data: bytes) -> None:
        if data and not self.finished:
            self.sent_any = True
            await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def finish(self) -> None:
        """Idempotent: a stream already ended by ``_fail`` (upstream broke mid-stream) is not ended twice."""
        if self.finished:
            return
        self.finished = True
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _fail(self, status: int, message: str, kind: ErrorKind, *, provider: Provider | None = None,
                    extra: dict[str, str] | None = None) -> None:
        """An error in the client's own format: an HTTP error before the response started, else the
        API's mid-stream error."""
        if self.started:
            if self.client_codec is not None:
                await self.write(self.client_codec.render_error(message, kind))
            await self.finish()
            return
        wire = self.wire or self.services.wires[
            self.route.error_wire if self.route and self.route.error_wire and not provider
            else _PROVIDER_WIRE[provider or (self.route.provider if self.route else self._guess_provider())]]
        self.started, self.status = True, status
        await respond(self._send, status, wire.http_error(status, message, kind, extra),
                      [("x-guardproxy-request-id", self.request_id)])

    async def fail_upstream(self, exc: UpstreamError) -> None:
        """The upstream could not be reached, stalled or broke: 504 for time-outs, else 502 (or the
        API's mid-stream error once the response has started)."""
        if self.route is not None and self.route.wire is not None:
            self.services.metrics.fail_closed.labels(reason=exc.reason).inc()
        await self._fail(504 if exc.timeout else 502, str(exc), "timeout" if exc.timeout else "upstream")

    async def upstream_request(self, body: bytes, *, identity: bool) -> UpstreamResponse:
        t = time.perf_counter()
        resp = await self.services.upstream.request(self.method, self.upstream_url(),
                                             self.forward_headers(identity=identity), body, decode=identity)
        elapsed = time.perf_counter() - t
        self.upstream_s += elapsed
        self.services.metrics.upstream_latency.labels(provider=self.route.provider if self.route else "").observe(elapsed)
        return resp

    async def _passthrough(self, body: bytes) -> None:
        """Untouched both ways, streamed as it arrives."""
        try:
            resp = await self.upstream_request(body if self.method not in ("GET", "HEAD") or body else b"",
                                               identity=False)
        except UpstreamError as exc:
            await self.fail_upstream(exc)
            return
        try:
            length = resp.content_length
            if (length is not None and length <= _SMALL_BODY and self.method != "HEAD"
                    and "text/event-stream" not in resp.content_type):
                # A small, sized body: one read and one send, with its length (no chunked framing).
                try:
                    raw = await resp.read()
                except UpstreamError as exc:
                    await self.fail_upstream(exc)
                    return
                self.started, self.status = True, resp.status
                await respond(self._send, resp.status, raw, resp.headers + [("x-guardproxy-request-id",
                                                                              self.request_id)],
                              resp.content_type or "application/octet-stream")
                return
            await self.start(resp.status, resp.headers)
            try:
                async for chunk in resp.iter_chunks():
                    await self.write(chunk)
            except UpstreamError as exc:
                log.warning("upstream_broke", error=str(exc))
            await self.finish()
        finally:
            resp.close()
