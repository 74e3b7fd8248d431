"""The edge of one client request: authorises and routes it, relays passthrough traffic, and hands
the four guarded APIs to ``proxy.drive.guarded_turn`` with the request's facts, its ``Responder`` and a
function that calls upstream.

Everything sent to the client goes through ``proxy.downstream.responder.Responder``: errors reach the client in
its own API's format (an HTTP error before the response started, that API's mid-stream error after).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import re
import time
from collections.abc import MutableMapping
from typing import Any

import structlog
from opentelemetry.trace import Span, Status, StatusCode

from config.errors import UpstreamError
from config.policy import Mode
from guardrails.datamodel import RequestView
from proxy.core.limits import Limits, too_large
from proxy.downstream.asgi import Scope, Send, header_list
from proxy.downstream.responder import Responder
from proxy.drive.guarded_turn import Facts, GuardedTurn, Plan, plan_of
from proxy.drive.held_prompts import (
    created_key,
    created_texts,
    created_ttl,
    held_in_every_spelling,
    kind_of,
    may_name_held,
    unseen_message,
)
from proxy.drive.input_guard import input_guard_of
from proxy.drive.services import Services
from proxy.drive.turn_memory import TurnMemory, report_state_failure
from proxy.drive.upstream_call import UpstreamCall
from proxy.edge.input_screen import screen_request
from proxy.edge.routes import BadPath, Route, WireName, resolve
from proxy.ops.tracing import genai_request, mark
from proxy.state import StoreUnavailable
from proxy.state.scope import scope_of
from proxy.upstream.forwarding import HOP_BY_HOP
from proxy.upstream.http1 import Answer
from proxy.wire.base import BadRequest, ErrorKind, JsonBody, WireFormat, load_json_body
from proxy.wire.key_folds import FOLDS, FoldedKey, KeyFolds
from proxy.wire.one_reading import read_once, repeated_message
from proxy.wire.providers import PROVIDERS, guess_any

log = structlog.get_logger("guardproxy")

_GEMINI_MODEL = re.compile(r"/models/([^/:]+):")
_SMALL_BODY = 1 << 20
"""Passthrough bodies up to this size with a known length are relayed in one piece."""
_HINT_HEADERS = tuple(h for p in PROVIDERS.values() for h in p.hint_headers)
_ROUTES: dict[tuple[object, ...], Route] = {}
_ROUTES_KEPT = 4096


def _compacts_stored_output(path: str, body: bytes) -> bool:
    """``POST /v1/responses/compact`` with ``previous_response_id``: the upstream's compacted items
    can carry its stored original of an answer the proxy replaced (Codex compacts the items it sends,
    which its client has seen, and passes). The key is looked for in every object and spelling
    (escapes, duplicates) however the upstream would read it; a body that is not JSON is the
    upstream's to refuse."""
    if not path.lower().endswith("/responses/compact"):
        return False
    found = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal found
        found = found or any(key == "previous_response_id" and value is not None for key, value in items)
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return found


def _sends_as_read(wire: str, body: bytes) -> bool:
    """Whether a guarded request may go upstream before guardproxy has read its body
    (``Exchange._send_early``): every refusal that reading makes is one the upstream makes too
    (not JSON, a wrong shape), except a Responses request for ``background`` (its output is fetched
    later, unchecked), which the upstream would start: such a body is read first, and so is one that
    could spell the key with JSON escapes."""
    return wire != "openai_responses" or (b"background" not in body and b"\\u" not in body)


def _resolve(raw_path: str, method: str, header: dict[str, str], query: str) -> Route:
    """``routes.resolve``, remembered: a route depends only on the path, method and query, and on
    which provider-hinting headers are present (``providers.guess``). Clients send the same few
    paths again and again; a refused path (``BadPath``) is not remembered."""
    key = (raw_path, method, query, *[h in header for h in _HINT_HEADERS])
    route = _ROUTES.get(key)
    if route is None:
        route = resolve(raw_path, method, header, query)
        if len(_ROUTES) >= _ROUTES_KEPT:
            _ROUTES.clear()
        _ROUTES[key] = route
    return route


_DROP_FOR_IDENTITY = HOP_BY_HOP | {"accept-encoding"}
"""Request headers not forwarded when the proxy reads the answer (it asks for ``identity``)."""

def model_authorized(services: Services, given: str) -> bool:
    """May a request with proxy token ``given`` use the model routes? With no token configured,
    anyone; else the admin token or one of the client tokens (``proxy.edge.access``)."""
    token = services.settings.auth_token
    if not token and not services.settings.client_tokens:
        return True
    if given and services.book.token_matches(given) is not None:
        return True
    return bool(token) and hmac.compare_digest(given.encode(), (token or "").encode())


class _FirstByteMark:
    """The client's ``send`` with tracing on: marks the first released body byte on the request's span.
    Not a method of ``Exchange``: its ``Responder`` holding one would be a reference cycle."""

    __slots__ = ("_send", "_t0", "released", "span")

    def __init__(self, send: Send, t0: float) -> None:
        self._send, self._t0 = send, t0
        self.span: Span | None = None
        self.released = False

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body") and not self.released:
            self.released = True
            mark(self.span, "first_released_byte", self._t0)
        await self._send(message)


class Exchange:
    """One client request, from the first byte received to the last byte sent."""

    def __init__(self, services: Services, scope: Scope, body: bytes | None, send: Send, *,
                 body_timed_out: bool = False) -> None:
        """``body``: None when it was not read whole: too large, or (``body_timed_out``) too slow."""
        self.services = services
        self.scope, self.body = scope, body
        self._body_timed_out = body_timed_out
        self.request_id = os.urandom(8).hex()  # 16 hex digits, as uuid4().hex[:16] gave (without the UUID object)
        self.responder = Responder(send, self.request_id)
        self.headers = header_list(scope)
        self.header = dict(self.headers)
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.query: str = scope.get("query_string", b"").decode("latin-1")
        self.turn: GuardedTurn | None = None
        self.t0 = time.perf_counter()
        self._call: UpstreamCall | None = None
        """The request's calls upstream, once made (``upstream_call``)."""
        self.route: Route | None = None
        self.wire: WireFormat | None = None
        self.mode: Mode = "interactive"
        """Set from the policy and ``x-guardproxy-mode`` before a guarded turn runs."""
        self.model: str | None = None
        self.span: Span | None = None
        """The request's trace span when tracing is on (``proxy.ops.tracing``)."""
        self._first_byte: _FirstByteMark | None = None
        self._decoded: dict[str, Any] | None = None
        """The body as the repeated-key check decoded it (``_refused_repeats``), for ``JsonBody``."""
        self._early: tuple[bytes, Answer, float] | None = None
        """The first attempt when ``_send_early`` sent it: its body, its answer, when it was sent."""
        if services.tracing.enabled:
            self._first_byte = _FirstByteMark(send, self.t0)
            self.responder = Responder(self._first_byte, self.request_id)

    # ------------------------------------------------------------------ entry
    async def run(self) -> None:
        with self.services.tracing.request(self.method, self.path) as span:
            self.span = span
            if self._first_byte is not None:
                self._first_byte.span = span
            await self._run_logged()
            if span is not None:
                span.set_attribute("http.response.status_code", self.responder.status)
                span.set_attribute("guardproxy.policy", self.services.guard.label)
                if self.responder.status >= 500:
                    span.set_status(Status(StatusCode.ERROR))

    async def _run_logged(self) -> None:
        structlog.contextvars.bind_contextvars(request_id=self.request_id)
        try:
            await self._run()
        except Exception as exc:  # noqa: BLE001 - the client gets a clean error, the log the type only
            log.error("internal_error", error=type(exc).__name__, path=self.path)
            await self._fail(500, "guardproxy hit an internal error", "upstream")
        finally:
            if self._early is not None:  # sent, then refused: its connection is closed, its answer dropped
                self._early[1].close()
                self._early = None
            if self._call is not None:
                self._call.close()
            route = self.route.wire or "passthrough" if self.route else "invalid"
            status = self.responder.status
            turn = self.turn.turn if self.turn is not None else None
            self.turn = None
            self.services.metrics.count_request(route, status)
            log.info("request", method=self.method, path=self.path, route=route, status=status,
                     duration_ms=round((time.perf_counter() - self.t0) * 1000, 2),
                     upstream_ms=round(self._call.upstream_s * 1000 if self._call else 0.0, 2),
                     attempts=sum(turn.attempts.values()) if turn else 0,
                     feedback_rounds=turn.feedback_rounds if turn else 0)
            structlog.contextvars.unbind_contextvars("request_id")

    async def _run(self) -> None:
        if not self._authorized():
            await self._fail(401, "missing or wrong x-guardproxy-token", "authentication")
            return
        raw_path = self.scope.get("raw_path", self.path.encode()).decode("latin-1")
        try:
            self.route = route = _resolve(raw_path, self.method, self.header, self.query)
        except BadPath as exc:
            await self._fail(400, str(exc), "invalid_request")
            return
        self.path = route.path
        # The policy is chosen once, here; a reload from now on does not change it for this request.
        self.services = self.services.bound(self.services.book.choose(
            self.header.get("x-guardproxy-token", ""), route.provider, route.endpoint,
            self.header.get("x-guardproxy-policy")))
        if route.query is not None:
            self.query = route.query
        if route.refused is not None and self.services.guarding:
            self.services.metrics.fail_closed.labels(reason="refused_endpoint").inc()
            await self._fail(403, f"guardproxy does not relay {route.refused}: the guardrails cannot check "
                                  "its output", "permission")
            return
        body = self.body
        if body is None:
            if self._body_timed_out:
                settings = self.services.settings
                await self._fail(408, f"the request body came too slowly (a pause over {settings.body_idle_timeout_s:g} "
                                      f"s or over {settings.body_timeout_s:g} s in all)", "timeout")
                return
            await self._fail(413, f"request body exceeds {self.services.settings.max_body_bytes} bytes", "too_large")
            return
        if route.wire is None:
            if self.services.guarding and _compacts_stored_output(route.path, body):
                self.services.metrics.fail_closed.labels(reason="refused_endpoint").inc()
                await self._fail(403, "guardproxy does not relay a compaction of a stored response "
                                      "(previous_response_id): the guardrails cannot check its output; send "
                                      "the conversation's items as input instead", "permission")
                return
            if route.keeps is not None and self.services.guarding:
                if await self._refused_repeats(body, route.keeps == "gemini", folds=FOLDS.get(route.keeps)):
                    return
                if (inputs := input_guard_of(self.services)) is not None:
                    # A cachedContents (Gemini contents) or a conversation's items (Responses input
                    # items) is input the model reads later, by name: screened as a request's own is.
                    try:
                        screened = await screen_request(self, inputs, JsonBody(body, self._decoded, repeat_free=True),
                                                        wire_name=route.keeps, reader="gemini" if route.keeps == "gemini"
                                                        else "openai_conversation")
                    except BadRequest as exc:
                        await self._fail(400, str(exc), "invalid_request")
                        return
                    if screened is None:
                        return
                    body = screened.body
                self._decoded = None
                await self._passthrough_keeping(body, route.keeps)
                return
            await self._passthrough(body)
            return
        self.wire = self.responder.wire = wire = self.services.wires[route.wire]
        if not self.services.guarding:
            # Relayed untouched: with guardrails off the body is not even parsed (it is read only
            # for the trace span's attributes, when tracing is on).
            if self.span is not None:
                self._trace_unguarded(route, body)
            await self._passthrough(body)
            return
        plan = plan_of(self.services)
        asked = self.header.get("x-guardproxy-mode")
        try:
            self.mode = plan.mode if asked is None else self.services.policy.defaults.mode_for(asked)
        except ValueError as exc:
            await self._fail(400, str(exc), "invalid_request")
            return
        if await self._refused_repeats(body, route.wire == "gemini", wire, FOLDS.get(route.wire)):
            return
        inputs = input_guard_of(self.services)
        if inputs is None and not plan.plants and self.span is None and _sends_as_read(route.wire, body) \
                and not (plan.unseen == "refuse" and may_name_held(body)):
            self._send_early(body)
        request = JsonBody(body, self._decoded, repeat_free=True)
        self._decoded = None
        background = False
        screened = None
        try:
            if inputs is not None:  # read before it is sent: it may be rewritten or refused
                screened = await screen_request(self, inputs, request)
                if screened is None:
                    return  # refused
                if screened.body is not body:
                    body = screened.body
                    request = JsonBody(body)
            # A planted canary rewrites the whole body: then it is decoded whole at once. A quick view
            # declines whatever the whole path refuses or checks (a Responses ``background``).
            view = None if plan.plants else wire.quick_view(request, stream=bool(route.stream))
            if view is None:
                data = request.data
                if route.stream is None and not isinstance(data.get("stream", False), (bool, type(None))):
                    # "false" as a string is true to a reader that tests truth, false to the upstream
                    raise BadRequest("'stream' must be a boolean")
                view = wire.parse_request(data, stream=bool(route.stream))
                background = data.get("background") not in (None, False)
        except BadRequest as exc:
            await self._fail(400, str(exc), "invalid_request")
            return
        if route.wire == "openai_responses" and background:
            self.services.metrics.fail_closed.labels(reason="refused_background").inc()
            await self._fail(400, "guardproxy does not accept 'background': a background response is "
                                  "retrieved later, unchecked; send it in the foreground", "invalid_request")
            return
        if route.wire == "gemini":
            m = _GEMINI_MODEL.search(route.path)
            view.model = m.group(1) if m else view.model
            view.stream = bool(route.stream)
        recalled: tuple[str, ...] | None = ()
        armed_from_memory = False
        if view.held and plan.unseen is not None:  # (the common request: one attribute test)
            armed_from_memory, recalled = await self._recall_held(view, plan)
            if self.responder.started:
                return  # refused
        self.model = view.model or None
        if self.span is not None:
            self.span.set_attributes(genai_request(route.provider, self.model, bool(view.stream)))
        judge_path = route.path if route.endpoint in ("/chat/completions", "/responses") else None
        facts = Facts(self.request_id, wire, route.provider, route.sse, request, body, view, self.headers, self.query,
                      judge_path, self.mode, armed_from_memory)
        self.responder.decision_headers = plan.decision_headers  # which policy and guardrails answered
        if screened is not None:
            screened.apply(view, self.responder)
        self.turn = turn = GuardedTurn(self.services, facts, self.responder,
                                       self.upstream_call(identity=True), plan)
        keeps = view.kept is not None and recalled is not None and plan.unseen is not None
        if keeps or (view.held and (plan.unseen is None or recalled is None)):
            turn.before_end = TurnMemory(self.services, self.request_id, route.wire, self.state_scope, view,
                                         recalled or (), keeps=keeps, unseen=plan.unseen is not None and recalled is None)
        try:
            await turn.run()
        finally:  # (however the turn ended: a client that left mid-answer may chain on it, and the
            # upstream has its input items in the conversation already)
            if turn.before_end is not None:
                await asyncio.shield(turn.settle())

    async def _refused_repeats(self, body: bytes, spellings: bool, wire: WireFormat | None = None,
                               folds: KeyFolds | None = None) -> bool:
        """A guarded body that repeats a key in one object is refused with the API's 400 before
        anything of it goes upstream (``proxy.wire.one_reading``), and so is one with a key that a
        case-insensitive parser reads as a field the proxy reads under another spelling (``folds``:
        ``proxy.wire.key_folds``). Returns whether it was; when not,
        ``self._decoded`` holds the body's object if the check decoded it whole. A body that extends
        a recent clean one of ``wire`` (an agent's next turn) is checked in what it adds only, exactly
        (``proxy.wire.conversation_delta``): an agent's 66 KB turn costs its new items' check, not a
        whole decode and re-encode ahead of the early send."""
        key, self._decoded = read_once(body, spellings=spellings, folds=folds,
                                       added=None if wire is None else wire.added_to_clean(body))
        if key is None:
            return False
        reason = "folded_key" if isinstance(key, FoldedKey) else "repeated_key"
        self.services.metrics.fail_closed.labels(reason=reason).inc()
        await self._fail(400, repeated_message(key), "invalid_request")
        return True

    async def _recall_held(self, view: RequestView, plan: Plan) -> tuple[bool, tuple[str, ...] | None]:
        """Arm with the system prompts the upstream holds for this request, as this process saw them
        go up (``proxy.drive.held_prompts``): they join ``view.system_prompt``. Returns (whether any did,
        what the upstream holds for this request when all were seen, else None). An unseen one is
        the policy's ``unseen_prompt``: counted, audited, and with ``refuse`` answered here (the
        caller sees the responder started)."""
        if self.route is not None and self.route.wire is not None:
            view.held = held_in_every_spelling(self.route.wire, self.body or b"", view.held)
        held = self.services.held_prompts
        unreadable = held.unreadable
        try:
            texts, missing = await held.recall(self.state_scope, view.held)
            if held.unreadable != unreadable:  # (a value sealed with another key, or changed: a miss)
                self.services.metrics.state_errors.labels(engine=held.store.engine, op="open",
                                                          decision=plan.unseen or "pass").inc()
        except StoreUnavailable as exc:
            action = plan.unseen or "pass"
            self._state_failed("get", action, exc)
            if action == "refuse":
                self.services.metrics.fail_closed.labels(reason="state_unavailable").inc()
                await self._fail(503, "guardproxy cannot reach its state store to look up the system prompt "
                                      "this request's held state keeps upstream, so it cannot check that the "
                                      "answer does not repeat it: try again shortly", "overloaded")
            return False, None
        if texts:
            own = view.system_prompt
            view.system_prompt = "\n".join([*(t for t in texts if t and t not in own), own] if own else texts)
        counter = self.services.metrics.held_prompts
        if not missing:
            for key in view.held:
                counter.labels(kind=kind_of(key), outcome="remembered").inc()
            return bool(texts), texts
        action = plan.unseen or "pass"
        kinds = sorted({kind_of(k) for k in missing})
        for kind in kinds:
            counter.labels(kind=kind, outcome=f"unseen_{action}").inc()
        self.services.audit.record("unseen_prompt", request_id=self.request_id, guardrail_id=plan.canaries[0].id,
                                   reason_code="unseen_prompt", decision=action, source=",".join(kinds),
                                   wire=self.route.wire if self.route else None)
        log.info("unseen_prompt", kinds=kinds, decision=action)
        if action == "refuse":
            self.services.metrics.fail_closed.labels(reason="unseen_prompt").inc()
            await self._fail(400, unseen_message(kinds), "invalid_request")
        return bool(texts), None

    @property
    def state_scope(self) -> str:
        """Whose held state this request reads and writes (``proxy.state.scope``)."""
        return scope_of(self.services.held_prompts.sealer, self.header, self.query)

    def _state_failed(self, op: str, action: str | None, exc: StoreUnavailable) -> None:
        report_state_failure(self.services, self.request_id, self.route.wire if self.route else None, op, action, exc)

    async def _passthrough_keeping(self, body: bytes, kind: WireName) -> None:
        """A passthrough that puts a system prompt in upstream state (``Route.keeps``): relayed as it
        is, read whole, and the prompt remembered under the name the upstream answers with
        (``proxy.drive.held_prompts``). A body the proxy cannot read is relayed all the same."""
        texts = created_texts(kind, body)
        if texts is None:
            await self._passthrough(body)
            return
        try:
            resp = await self.upstream_call(identity=True)(body)
        except UpstreamError as exc:
            await self.fail_upstream(exc)
            return
        try:
            limits = Limits.of(self.services.settings)
            if (raw := await resp.read_at_most(limits.max_response_bytes)) is None:
                raise too_large(limits)
        except UpstreamError as exc:
            await self.fail_upstream(exc)
            return
        finally:
            resp.close()
        if 200 <= resp.status < 300 and (key := created_key(kind, raw)) is not None:
            try:
                if not await self.services.held_prompts.remember(self.state_scope, key, texts,
                                                                 created_ttl(kind, body, raw)):
                    self.services.metrics.state_not_kept.inc()
            except StoreUnavailable as exc:
                self._state_failed("put", None, exc)
        await self.responder.respond(resp.status, raw, resp.headers, resp.content_type or "application/json")

    def _trace_unguarded(self, route: Route, body: bytes) -> None:
        """The span's request attributes on a guardrails-off route (a body that does not parse
        still goes upstream as it is)."""
        assert self.span is not None and self.wire is not None
        try:
            view = self.wire.parse_request(load_json_body(body), stream=bool(route.stream))
        except (BadRequest, ValueError, TypeError, AttributeError):
            return
        model = view.model
        if route.wire == "gemini":
            m = _GEMINI_MODEL.search(route.path)
            model = m.group(1) if m else model
        stream = bool(route.stream) if route.wire == "gemini" else bool(view.stream)
        self.span.set_attributes(genai_request(route.provider, model or None, stream))

    # ------------------------------------------------------------------ plumbing
    def _authorized(self) -> bool:
        return model_authorized(self.services, self.header.get("x-guardproxy-token", ""))

    def _guessed_wire(self) -> str:
        """The API whose error format a request refused before routing gets."""
        return guess_any(self.path, self.header, self.query).wire

    def upstream_url(self, path: str | None = None) -> str:
        assert self.route is not None
        url = self.services.upstream.bases[self.route.provider] + (path or self.route.path)
        return f"{url}?{self.query}" if self.query and path is None else url

    def forward_headers(self, *, identity: bool) -> list[tuple[str, str]]:
        drop = _DROP_FOR_IDENTITY if identity else HOP_BY_HOP
        if connection := self.header.get("connection"):  # and what it names (RFC 9110 7.6.1)
            drop = drop | {t.strip().lower() for t in connection.split(",")}
        # the proxy's own headers (x-guardproxy-*: token, policy, mode, grants) never go upstream
        out = [h for h in self.headers if h[0] not in drop and not h[0].startswith("x-guardproxy-")]
        if identity:
            out.append(("accept-encoding", "identity"))
        return out

    async def _fail(self, status: int, message: str, kind: ErrorKind, *,
                    extra: dict[str, str] | None = None) -> None:
        """An error in the client's own format (its guessed API's when the request was not routed)."""
        if self.wire is not None:
            wire = self.wire
        elif self.route is None:
            wire = self.services.wires[self._guessed_wire()]
        else:
            wire = self.services.wires[self.route.error_wire or PROVIDERS[self.route.provider].wire]
        await self.responder.fail(status, message, kind, wire=wire, extra=extra)

    async def fail_upstream(self, exc: UpstreamError) -> None:
        """The upstream could not be reached, stalled or broke: 504 for time-outs, else 502 (or the
        API's mid-stream error once the response has started)."""
        if self.route is not None and self.route.wire is not None:
            self.services.metrics.fail_closed.labels(reason=exc.reason).inc()
        await self._fail(504 if exc.timeout else 502, str(exc), "timeout" if exc.timeout else "upstream")

    def _send_early(self, body: bytes) -> None:
        """Send a guarded request's first attempt before its body is read: the upstream works on it
        while guardproxy reads the body and sets up the checks, which only the answer needs. Sent only
        when the attempt goes out as the client sent it (``_sends_as_read``; no planted canary) and a
        connection is idle; a body then refused (not valid JSON, a wrong shape) has its connection
        closed, and nothing of the upstream's answer reaches the client."""
        try:
            answer = self.services.upstream.send_now(self.method, self.upstream_url(),
                                                     self.forward_headers(identity=True), body)
        except UpstreamError:
            return  # raised again by the turn's own call, in its turn
        if answer is not None:
            self._early = (body, answer, time.perf_counter())

    def upstream_call(self, *, identity: bool) -> UpstreamCall:
        """This request's calls upstream, made by whoever runs them (the drive, or the passthrough
        below): where they go and with which headers is decided here; an early attempt is handed over.
        ``identity``: ask for no content-coding and undo any (guarded), or relay the coding (not)."""
        call = UpstreamCall(self.services, self.method, self.upstream_url(), self.forward_headers(identity=identity),
                            decode=identity, provider=self.route.provider if self.route else "", model=self.model,
                            span=self.span, t0=self.t0, early=self._early)
        self._early, self._call = None, call
        return call

    async def _passthrough(self, body: bytes) -> None:
        """Untouched both ways, streamed as it arrives."""
        try:
            resp = await self.upstream_call(identity=False)(body if self.method not in ("GET", "HEAD") or body else b"")
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
                await self.responder.respond(resp.status, raw, resp.headers,
                                             resp.content_type or "application/octet-stream")
                return
            r = self.responder
            await r.start(resp.status, resp.headers)
            try:
                async for chunk in resp.iter_chunks():
                    await r.write(chunk)
            except UpstreamError as exc:
                log.warning("upstream_broke", error=str(exc))
            await r.finish()
        finally:
            resp.close()
