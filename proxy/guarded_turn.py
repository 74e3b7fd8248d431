"""A request on one of the four client APIs with guardrails on: forwards it, runs the guard, acts on
findings.

Sockets live here; judgement does not. The stream guard (``proxy.stream_guard``) decides what may be
released; the seams in ``guardrails`` decide what is wrong; ``guardrails.findings.choose`` decides what to
do about it; this module only carries bytes and loops over attempts.

Attempts. A retry (corrective mandate) or a tool feedback round re-requests upstream. While nothing
of the answer has reached the client the new attempt simply becomes the client's stream (invisible).
Once something has, the new attempt is read whole, vetted, and appended through the client's own
codec (``render_tail``), after a replaced signal when the client must discard what it saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from guardrails.datamodel import (
    AssistantMessage,
    Event,
    Frame,
    RequestView,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from guardrails.decision import Block, Redact
from guardrails.findings import Finding, choose
from guardrails.message import run_message_guardrails
from guardrails.seams import MessageContext, StreamContext
from guardrails.stream import ArmedSet, Trip
from guardrails.stream.canary import canary_instruction, make_canary_token
from proxy.asgi import respond
from proxy.completer import RequestCompleter, completer_factory
from proxy.routes import Route
from proxy.stream_guard import StreamGuard
from proxy.upstream import UpstreamError, UpstreamResponse
from proxy.wire.base import FinishKind, Replaced, StreamCodec, WireFormat, dumps

if TYPE_CHECKING:
    from proxy.exchange import Exchange

log = structlog.get_logger("guardproxy")

_BATCH_FRAMES = 32
"""Released frames sent per write within one upstream read: few sends, bounded delay."""
_NOT_RUN = ("Not run: another tool call in the same turn was blocked by guardproxy. "
            "Call it again if it is still needed.")


@dataclass(slots=True)
class Outcome:
    kind: str
    """``ok`` | ``finding`` | ``upstream_status`` | ``upstream_error`` | ``passthrough``."""
    message: AssistantMessage | None = None
    finding: Finding | None = None
    guard: StreamGuard | None = None
    response: UpstreamResponse | None = None
    body: bytes = b""
    error: UpstreamError | None = None


class GuardedTurn:
    """A request on one of the four client APIs with guardrails on."""

    def __init__(self, ex: Exchange, wire: WireFormat, route: Route, data: dict[str, Any], body: bytes,
                 view: RequestView) -> None:
        self.ex, self.services, self.wire, self.route = ex, ex.services, wire, route
        self.original = data
        self.body = body
        self.view = view
        mode = ex.header.get("x-guardproxy-mode", self.services.policy.defaults.mode)
        self.interactive = mode != "non-interactive"
        self.grants = frozenset(h.strip().lower() for h in ex.header.get("x-guardproxy-egress-grant", "").split(",")
                                if h.strip())
        self.canary_token = ""
        self.announced = False
        self.base = data
        """The request that retries add their mandate to (grows with tool feedback rounds)."""
        self.cur_view = view
        """The view of the request being answered now (its history grows with feedback rounds)."""

    # ------------------------------------------------------------------ setup
    def _plant_canary(self) -> bytes:
        if not any(getattr(self.services.specs.get(g.id), "plant_token", False) for g in self.services.stream_guardrails):
            return self.body
        self.canary_token = make_canary_token()
        self.base = self.wire.with_system(self.original, canary_instruction(self.canary_token))
        return dumps(self.base).encode()

    def _arm(self, *, for_tools: bool = False) -> ArmedSet | None:
        guardrails = self.services.tool_arg_guardrails if for_tools else self.services.stream_guardrails
        if not guardrails:
            return None
        ctx = StreamContext(system_prompt=self.view.system_prompt, model=self.view.model,
                            wire=self.wire.name, canary_token=self.canary_token)
        armed = ArmedSet.arm(guardrails, ctx)
        return armed if armed else None

    def _arm_tools(self) -> ArmedSet | None:
        return self._arm(for_tools=True)

    async def run(self) -> None:
        body = self._plant_canary()
        if self.view.stream:
            await self._run_stream(body)
        else:
            await self._run_unary(body)

    # ------------------------------------------------------------------ findings
    def _spec_attr(self, gid: str, name: str, default: Any) -> Any:
        return getattr(self.services.specs.get(gid), name, default)

    def _from_trip(self, trip: Trip) -> Finding:
        d = trip.decision
        assert isinstance(d, Block)
        gid = trip.guardrail_id
        self.services.metrics.stream_trips.labels(guardrail_id=gid, reason_code=d.reason_code).inc()
        return Finding("stream", gid, d.reason_code, self._spec_attr(gid, "action", "replace"),
                       d.replacement or self.services.policy.defaults.replacement, d.rationale,
                       self._spec_attr(gid, "max_attempts", 3), self._spec_attr(gid, "mandate", None),
                       self._spec_attr(gid, "final_action", "replace"))

    def _audit(self, event: str, **fields: Any) -> None:
        self.services.audit.record(event, request_id=self.ex.request_id, **fields)

    def _note_redactions(self, trips: list[Trip]) -> None:
        for t in trips:
            assert isinstance(t.decision, Redact)
            self.services.metrics.stream_trips.labels(guardrail_id=t.guardrail_id,
                                              reason_code=t.decision.reason_code).inc()
            self._audit("guardrail.tripped", guardrail_id=t.guardrail_id, reason_code=t.decision.reason_code,
                        decision="redact")
            log.info("guardrail_redacted", guardrail_id=t.guardrail_id, reason_code=t.decision.reason_code)

    async def _vet_end(self, message: AssistantMessage, view: RequestView) -> Finding | None:
        """Tool rules, then message guardrails. Log-only blocks are recorded and passed."""
        finding = self._assess_tools(message, view)
        if finding is not None:
            return finding
        if not self.services.message_guardrails:
            return None
        ctx = MessageContext(message=message, system_prompt=self.view.system_prompt,
                             user_query=self.view.last_user_text, model=self.view.model,
                             completer=RequestCompleter(self.ex, self.wire),
                             completer_for=completer_factory(self.ex, self.services))
        timeouts = {g.id: float(self._spec_attr(g.id, "timeout_s", 3.0)) for g in self.services.message_guardrails}
        verdict = await run_message_guardrails(self.services.message_guardrails, ctx, timeouts)
        for r in verdict.results:
            self.services.metrics.message_checks.labels(guardrail_id=r.guardrail_id, outcome=r.outcome).inc()
            if r.outcome == "fail_open":
                self._audit("fail_open", guardrail_id=r.guardrail_id, reason_code=None, decision="pass",
                            detail=r.detail, latency_ms=round(r.latency_s * 1000, 1))
        hit = verdict.blocking
        if hit is None:
            return None
        d = hit.decision
        assert isinstance(d, Block)
        gid = hit.guardrail_id
        action = self._spec_attr(gid, "action", "replace")
        if action == "log":
            self._audit("guardrail.tripped", guardrail_id=gid, reason_code=d.reason_code, decision="log")
            return None
        return Finding("message", gid, d.reason_code, action,
                       d.replacement or self._spec_attr(gid, "replacement", None)
                       or self.services.policy.defaults.replacement,
                       d.rationale, self._spec_attr(gid, "max_attempts", 3), self._spec_attr(gid, "mandate", None),
                       self._spec_attr(gid, "final_action", "replace"))

    def _assess_tools(self, message: AssistantMessage, view: RequestView) -> Finding | None:
        assessor = self.services.assessor
        if assessor is None or not message.tool_calls:
            return None
        blocked: list[tuple[ToolCall, str]] = []
        first: tuple[str, str] | None = None
        for call in message.tool_calls:
            a = assessor.assess(call, view.history, self.grants)
            self.services.metrics.tool_assessments.labels(rule=a.rule or "none", decision=a.decision).inc()
            self.services.audit.record_assessment(a, request_id=self.ex.request_id)
            if a.decision == "block":
                log.info("tool_call_blocked", tool=a.tool, rule=a.rule, reason_code=a.reason_code)
                blocked.append((call, a.rationale))
                first = first or (a.rule or "tool", a.reason_code or "")
        if first is None:
            return None
        tools = self.services.policy.tools
        assert tools is not None
        lines = [f"guardproxy blocked the tool call {c.name}: {why}" for c, why in blocked]
        return Finding("tool", first[0], first[1], tools.on_block, "\n".join(lines),
                       rationale="\n".join(lines), blocked_calls=tuple(blocked))

    def _next(self, finding: Finding, message: AssistantMessage) -> tuple[str, dict[str, Any] | None]:
        """Choose what to do; for re-requests, also the next request body."""
        tools = self.services.policy.tools
        act = choose(finding, interactive=self.interactive, attempts_used=self.ex.attempts[finding.guardrail_id],
                     feedback_rounds_used=self.ex.feedback_rounds,
                     max_feedback_rounds=tools.max_feedback_rounds if tools else 0)
        log.info("guardrail_decision", source=finding.source, guardrail_id=finding.guardrail_id,
                 reason_code=finding.reason_code, action=act, attempt=self.ex.attempts[finding.guardrail_id] + 1)
        self._audit("guardrail.tripped" if finding.source != "tool" else "tool_call.blocked",
                    guardrail_id=finding.guardrail_id, reason_code=finding.reason_code, decision=act,
                    source=finding.source, attempt=self.ex.attempts[finding.guardrail_id] + 1)
        if act == "retry":
            self.ex.attempts[finding.guardrail_id] += 1
            self.services.metrics.retries.labels(cause=finding.source).inc()
            self._audit("retry", guardrail_id=finding.guardrail_id, reason_code=finding.reason_code,
                        decision="retry", attempt=self.ex.attempts[finding.guardrail_id])
            mandate = finding.mandate or (
                "Your previous answer was rejected by a guardrail and was not shown to the user. "
                + (finding.rationale or "") + " Answer again, following every instruction above.")
            return act, self.wire.with_system(self.base, mandate)
        if act == "feedback":
            self.ex.feedback_rounds += 1
            self.services.metrics.retries.labels(cause="tool_feedback").inc()
            blocked = {id(c): why for c, why in finding.blocked_calls}
            results = [(c, blocked.get(id(c), _NOT_RUN)) for c in message.tool_calls]
            self.base = self.wire.with_tool_feedback(self.base, message, results)
            self.cur_view = self.wire.parse_request(self.base, stream=self.view.stream)
            return act, self.base
        return act, None

    def _replaced(self, f: Finding, replacement: str) -> Replaced:
        return Replaced(f.guardrail_id, f.reason_code, replacement)

    def _reject_extra(self, f: Finding) -> dict[str, str]:
        return {"guardrail_id": f.guardrail_id, "reason_code": f.reason_code}

    def _reject_message(self, f: Finding) -> str:
        return f"guardproxy: the answer was rejected by guardrail '{f.guardrail_id}' ({f.reason_code})"

    # ------------------------------------------------------------------ non-streaming
    async def _run_unary(self, body: bytes) -> None:
        ex = self.ex
        while True:
            try:
                resp = await ex.upstream_request(body, identity=True)
                try:
                    raw = await resp.read()
                finally:
                    resp.close()
            except UpstreamError as exc:
                await ex.fail_upstream(exc)
                return
            if resp.status != 200:
                await respond(ex._send, resp.status, raw, resp.headers, dict(resp.headers).get(
                    "content-type", "application/json"))
                ex.started, ex.status = True, resp.status
                return
            try:
                message = self.wire.decode_response(raw)
            except (ValueError, KeyError, IndexError, TypeError):
                await self._send_unary(resp, raw)
                return
            finding, redacted = self._check_text(message)
            if redacted is not None:
                raw = self.wire.render_response(raw, AssistantMessage(redacted, message.tool_calls,
                                                                      message.finish_reason), "normal", None)
                message.text = redacted
            if finding is None:
                finding = await self._vet_end(message, self.cur_view)
            if finding is None:
                await self._send_unary(resp, raw)
                return
            act, next_body = self._next(finding, message)
            if next_body is not None:
                body = dumps(next_body).encode()
                continue
            if act == "reject":
                await ex._fail(400, self._reject_message(finding), "guardrail", extra=self._reject_extra(finding))
            elif act == "log":
                await self._send_unary(resp, raw)
            else:
                finish: FinishKind = "filtered" if act == "replace" else "normal"
                replaced = self._replaced(finding, finding.replacement) if act == "replace" else None
                out = self.wire.render_response(raw, AssistantMessage(finding.replacement), finish, replaced)
                self._audit("message.replaced", guardrail_id=finding.guardrail_id,
                            reason_code=finding.reason_code, decision=act)
                await self._send_unary(resp, out, replaced=f"{finding.guardrail_id}; {finding.reason_code}")
            return

    def _check_text(self, message: AssistantMessage) -> tuple[Finding | None, str | None]:
        """Stream guardrails over a whole non-streamed text (one delta), with redaction."""
        armed = self._arm()
        if armed is None:
            return None, None
        guard = StreamGuard(armed, holdback=0, buffered=True, rearm=self._arm_tools)
        events: list[Event] = [TextDelta(message.text)] if message.text else []
        for n, call in enumerate(message.tool_calls):
            events += [ToolCallStart(str(n), call.call_id, call.name), ToolCallArgsDelta(str(n), call.arguments),
                       ToolCallEnd(str(n))]
        step = guard.push(Frame(b"", tuple(events)))
        if step.trip is None:
            step = guard.end()
        if step.trip is not None:
            return self._from_trip(step.trip), None
        trips = guard.redaction_log
        if not trips:
            return None, None
        self._note_redactions(trips)
        redacted = _apply_redactions(message.text, trips)
        return None, redacted

    async def _send_unary(self, resp: UpstreamResponse, raw: bytes, replaced: str | None = None) -> None:
        headers = list(resp.headers)
        if replaced:
            headers.append(("x-guardproxy-replaced", replaced))
        headers.append(("x-guardproxy-request-id", self.ex.request_id))
        headers += self.ex.decision_headers()
        ctype = dict(resp.headers).get("content-type", "application/json")
        self.ex.started, self.ex.status = True, resp.status
        await respond(self.ex._send, resp.status, raw, [h for h in headers if h[0] != "content-encoding"], ctype)

    # ------------------------------------------------------------------ streaming
    async def _run_stream(self, body: bytes) -> None:
        ex = self.ex
        tail = False
        while True:
            codec = self.wire.new_stream(sse=self.route.sse)
            if not tail:
                ex.client_codec = codec
            out = await self._attempt(body, codec, tail)
            if out.kind == "upstream_error":
                assert out.error is not None
                exc = out.error
                await ex.fail_upstream(exc)
                return
            if out.kind == "upstream_status":
                assert out.response is not None
                if ex.started:
                    await ex._fail(502, f"the upstream answered {out.response.status} on a retry", "upstream")
                else:
                    await respond(ex._send, out.response.status, out.body, out.response.headers,
                                  dict(out.response.headers).get("content-type", "application/json"))
                    ex.started, ex.status = True, out.response.status
                return
            assert out.message is not None and out.guard is not None
            if out.finding is None:
                if tail:
                    await self._tail(out.message, "normal", None)
                else:
                    await self._emit(out.guard.release_all(), codec, out.response)
                    await self._ensure_started(out.response, codec)  # also when nothing was releasable
                    await ex.finish()
                return
            f = out.finding
            act, next_body = self._next(f, out.message)
            if next_body is not None:
                body = dumps(next_body).encode()
                if ex.sent_any:
                    tail = True
                    if act == "retry" and not self.announced:
                        self.announced = True
                        await self._ensure_started(out.response, codec)
                        assert ex.client_codec is not None
                        await ex.write(ex.client_codec.render_replaced(self._replaced(f, "")))
                continue
            if act == "reject":
                self._audit("message.replaced", guardrail_id=f.guardrail_id, reason_code=f.reason_code,
                            decision="reject")
                await ex._fail(400, self._reject_message(f), "guardrail", extra=self._reject_extra(f))
                return
            if act == "log":
                await self._emit(out.guard.release_all(), codec, out.response)
                await self._ensure_started(out.response, codec)
                await ex.finish()
                return
            await self._ensure_started(out.response, codec)
            if act == "replace":
                self._audit("message.replaced", guardrail_id=f.guardrail_id, reason_code=f.reason_code,
                            decision="replace")
                await self._tail(AssistantMessage(f.replacement), "filtered",
                                 None if self.announced else self._replaced(f, f.replacement))
            else:  # explain: a blocked tool call becomes text; the client never saw the call
                await self._tail(AssistantMessage(f.replacement), "normal", None)
            return

    async def _ensure_started(self, resp: UpstreamResponse | None, codec: StreamCodec) -> None:
        headers = resp.headers if resp is not None else []
        await self.ex.start(200, headers, None if resp is not None else codec.media_type)

    async def _tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> None:
        ex = self.ex
        assert ex.client_codec is not None
        if not ex.started:
            await ex.start(200, [], ex.client_codec.media_type)
        await ex.write(ex.client_codec.render_tail(message, finish, replaced))
        await ex.finish()

    async def _emit(self, frames: list[Frame], codec: StreamCodec, resp: UpstreamResponse | None) -> None:
        if not frames:
            return
        await self._ensure_started(resp, codec)
        for frame in frames:
            codec.note_sent(frame)
        await self.ex.write(b"".join(f.raw for f in frames))

    async def _relay(self, frames: list[Frame], guard: StreamGuard, codec: StreamCodec,
                     resp: UpstreamResponse, emit: bool) -> Outcome | None:
        """Push one upstream read's frames through the guard; send what it releases in ONE write (a
        read of many frames costs one socket send, as in passthrough). A trip returns the outcome,
        after what was released before it has been sent."""
        release: list[Frame] = []
        found: Outcome | None = None
        for frame in frames:
            step = guard.push(frame)
            if step.redactions:
                self._note_redactions(step.redactions)
            if step.trip is not None:
                found = Outcome("finding", guard.message(), self._from_trip(step.trip), guard, resp)
                break
            release += step.send
            if emit and release and (not self.ex.sent_any or len(release) >= _BATCH_FRAMES):
                await self._emit(release, codec, resp)  # first bytes at once; long reads in batches
                release = []
        if emit and release:
            await self._emit(release, codec, resp)
        return found

    async def _attempt(self, body: bytes, codec: StreamCodec, tail: bool) -> Outcome:
        """One upstream stream through a fresh guard. In ``tail`` mode nothing is sent: the caller
        appends the vetted message through the client's codec."""
        ex = self.ex
        try:
            resp = await ex.upstream_request(body, identity=True)
        except UpstreamError as exc:
            return Outcome("upstream_error", error=exc)
        if resp.status != 200:
            try:
                raw = await resp.read()
            except UpstreamError:
                raw = b""
            finally:
                resp.close()
            return Outcome("upstream_status", response=resp, body=raw)
        guard = StreamGuard(self._arm(), holdback=self.services.policy.defaults.holdback_chars,
                            buffered=tail or self.services.buffered, retext=codec.retext, rearm=self._arm_tools)
        emit = not tail
        ex.services.metrics.open_streams.inc()
        try:
            async for chunk in resp.iter_chunks():
                found = await self._relay(codec.feed(chunk), guard, codec, resp, emit)
                if found is not None:
                    return found
            found = await self._relay(codec.flush(), guard, codec, resp, emit)
            if found is not None:
                return found
        except UpstreamError as exc:
            if not ex.sent_any and not tail:
                return Outcome("upstream_error", error=exc)
            log.warning("upstream_broke", error=str(exc))
            if emit:
                await self._emit(guard.release_all(), codec, resp)
            await ex.fail_upstream(exc)
            return Outcome("ok", guard.message(), None, StreamGuard(None, holdback=0), resp)
        finally:
            ex.services.metrics.open_streams.dec()
            resp.close()
        step = guard.end()
        if step.redactions:
            self._note_redactions(step.redactions)
        if step.trip is not None:
            return Outcome("finding", guard.message(), self._from_trip(step.trip), guard, resp)
        message = guard.message()
        message.provider_parts = codec.provider_parts()
        if guard.error is not None:
            return Outcome("ok", message, None, guard, resp)
        finding = await self._vet_end(message, self.cur_view)
        return Outcome("finding" if finding else "ok", message, finding, guard, resp)


def _apply_redactions(text: str, trips: list[Trip]) -> str:
    spans = sorted(((t.decision.start, t.decision.end, t.decision.mask) for t in trips
                    if isinstance(t.decision, Redact)), reverse=True)
    for start, end, mask in spans:
        text = text[:start] + mask + text[end:]
    return text
