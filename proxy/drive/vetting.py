"""What the turn machine's ``Vet`` command runs, and where its records go.

``Vetter`` judges a finished message: the tool rules first (pure, over the request's history), then
the message guardrails (async, may do I/O; the runner fails open on an unavailable checker).
``TurnNotes`` turns the machine's notes into metrics, audit lines and logs.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from config.errors import UpstreamError
from guardrails.datamodel import AssistantMessage, HistoryToolCall, RequestView, ToolCall
from guardrails.decision import (
    AUTORUN_SETTING,
    COMPUTER_USE_NOT_ALLOWED,
    EGRESS_NOT_ALLOWED,
    NO_SUCH_PATH,
    PATH_OUTSIDE_MANIFEST,
    PATH_OUTSIDE_WORKSPACE,
    PRIVILEGED_PATH,
    SHELL_INTERPRETER,
    SYSTEM_PROMPT_LEAK,
    TAINTED_EGRESS,
    UNPARSEABLE_ARGUMENTS,
    WRITE_WITHOUT_READ,
    Block,
    Redact,
)
from guardrails.findings import Finding, OnTrip, finding_of
from guardrails.message import run_message_guardrails
from guardrails.seams import MessageContext, StreamContext, TextCompleter
from guardrails.stream import Trip
from guardrails.stream.canary import CanaryProvider
from guardrails.tools import Assessment, ToolAssessor
from guardrails.tools.catalog import BUILTINS
from proxy.drive.services import Services

log = structlog.get_logger("guardproxy")


def needs_vetting(services: Services, message: AssistantMessage, others: Sequence[AssistantMessage] = ()) -> bool:
    """Whether ``Vetter.vet`` could find anything in these messages: message checks are armed, or tool
    rules are and a message calls a tool (else every ``vet`` of them returns None)."""
    return bool(services.message_guardrails) or (
        services.assessor is not None and any(m.tool_calls for m in (message, *others)))


class TurnNotes:
    """The records of one turn (``proxy.core.turn.Notes``)."""

    prompt_detail: str | None = None
    """The ``detail`` of a system-prompt leak's records: ``remembered_prompt`` when the canary armed
    with a prompt the upstream holds (``proxy.drive.held_prompts``)."""

    def __init__(self, services: Services, request_id: str) -> None:
        self._s, self._request_id = services, request_id

    def audit(self, event: str, **fields: Any) -> None:
        # the named policy the request ran under: ``guardproxy tail --policy`` filters on it
        self._s.audit.record(event, request_id=self._request_id, policy_name=self._s.guard.name, **fields)

    def tripped(self, guardrail_id: str, reason_code: str) -> None:
        self._s.metrics.stream_trips.labels(guardrail_id=guardrail_id, reason_code=reason_code).inc()

    def redacted(self, trips: list[Trip]) -> None:
        for t in trips:
            assert isinstance(t.decision, Redact)
            self.tripped(t.guardrail_id, t.decision.reason_code)
            self.audit("guardrail.tripped", guardrail_id=t.guardrail_id, reason_code=t.decision.reason_code,
                       decision="redact", **({"rule": t.decision.rule} if t.decision.rule else {}))
            log.info("guardrail_redacted", guardrail_id=t.guardrail_id, reason_code=t.decision.reason_code)

    def decided(self, finding: Finding, act: str, attempt: int) -> None:
        log.info("guardrail_decision", source=finding.source, guardrail_id=finding.guardrail_id,
                 reason_code=finding.reason_code, action=act, attempt=attempt)
        self.audit("guardrail.tripped" if finding.source != "tool" else "tool_call.blocked",
                   guardrail_id=finding.guardrail_id, reason_code=finding.reason_code, decision=act,
                   source=finding.source, attempt=attempt, **self._detail(finding.reason_code),
                   **({"rule": finding.rule} if finding.rule and finding.source != "tool" else {}))

    def retried(self, finding: Finding, attempt: int) -> None:
        self._s.metrics.retries.labels(cause=finding.source).inc()
        self.audit("retry", guardrail_id=finding.guardrail_id, reason_code=finding.reason_code,
                   decision="retry", attempt=attempt)

    def fed_back(self) -> None:
        self._s.metrics.retries.labels(cause="tool_feedback").inc()

    def replaced(self, finding: Finding, decision: str) -> None:
        self.audit("message.replaced", guardrail_id=finding.guardrail_id, reason_code=finding.reason_code,
                   decision=decision)

    def broke(self, exc: UpstreamError) -> None:
        log.warning("upstream_broke", error=str(exc))

    def logged(self, trips: list[Trip]) -> None:
        """Blocks of log-only guardrails: recorded, the stream went on whole."""
        for t in trips:
            self.tripped(t.guardrail_id, t.decision.reason_code)
            self.audit("guardrail.tripped", guardrail_id=t.guardrail_id, reason_code=t.decision.reason_code,
                       decision="log", **self._detail(t.decision.reason_code),
                       **({"rule": t.decision.rule} if t.decision.rule else {}))
            log.info("guardrail_logged", guardrail_id=t.guardrail_id, reason_code=t.decision.reason_code)

    def _detail(self, reason_code: str) -> dict[str, str]:
        if self.prompt_detail is None or reason_code != SYSTEM_PROMPT_LEAK:
            return {}
        return {"detail": self.prompt_detail}

    def unreadable(self, reason: str) -> None:
        log.warning("upstream_unreadable", detail=reason[:200])


class Vetter:
    """Tool rules, then message guardrails, for one request. Log-only blocks are recorded and passed."""

    def __init__(self, services: Services, notes: TurnNotes, request_id: str, grants: Callable[[], frozenset[str]],
                 completer: Callable[[], TextCompleter],
                 completer_for: Callable[[str, str | None, str | None], TextCompleter | None],
                 client: str = "") -> None:
        """``grants`` and ``completer`` are made on first use: most answers need neither. ``client``:
        whose share of the tool checks this request's come from (``proxy.drive.shares``)."""
        self._s, self._notes, self._request_id = services, notes, request_id
        self._client = client
        self._make_grants, self._make_completer, self._completer_for = grants, completer, completer_for
        self._grants: frozenset[str] | None = None
        self._completer: TextCompleter | None = None

    def needed(self, message: AssistantMessage, others: Sequence[AssistantMessage] = ()) -> bool:
        """Whether ``vet`` could find anything in these messages (``needs_vetting``)."""
        return needs_vetting(self._s, message, others)

    async def vet(self, message: AssistantMessage, view: RequestView, first: RequestView) -> Finding | None:
        """``view`` is the request being answered now (tool history); ``first`` the client's own."""
        finding = await self.assess_tools(message, view, first.tainted)
        if finding is not None or not self._s.message_guardrails:
            return finding
        ctx = MessageContext(message=message, system_prompt=first.system_prompt,
                             user_query=first.last_user_text, model=first.model,
                             completer=self._request_completer(), completer_for=self._completer_for)
        timeouts = {g.id: self._on_trip(g.id).timeout_s for g in self._s.message_guardrails}
        verdict = await run_message_guardrails(self._s.message_guardrails, ctx, timeouts, self._s.gate)
        self._s.tracing.message_checks(verdict.results)
        for r in verdict.results:
            self._s.metrics.message_checks.labels(guardrail_id=r.guardrail_id, outcome=r.outcome).inc()
            if r.outcome == "fail_open":
                self._notes.audit("fail_open", guardrail_id=r.guardrail_id, reason_code=None, decision="pass",
                                  detail=r.detail, latency_ms=round(r.latency_s * 1000, 1))
        hit = verdict.blocking
        if hit is None:
            return None
        d = hit.decision
        assert isinstance(d, Block)
        on = self._on_trip(hit.guardrail_id)
        if on.action == "log":
            self._notes.audit("guardrail.tripped", guardrail_id=hit.guardrail_id, reason_code=d.reason_code,
                              decision="log")
            return None
        return finding_of("message", hit.guardrail_id, d.reason_code, d.rationale, d.replacement, on)

    def _request_completer(self) -> TextCompleter:
        if self._completer is None:
            self._completer = self._make_completer()
        return self._completer

    def _on_trip(self, guardrail_id: str) -> OnTrip:
        return self._s.on_trip.get(guardrail_id) or OnTrip(replacement=self._s.policy.defaults.replacement)

    def _without_prompt(self, canary: CanaryProvider, ctx: StreamContext, a: Assessment) -> Assessment:
        """``a`` with every string of its observations and rationale that holds a run of the system
        prompt (the canary's ``min_chars``: shorter than its ``tool_min_chars``, so the call was not
        blocked) replaced by a marker, and the hit recorded as a canary trip that passed: the audit
        log says a tool path held the prompt without writing the prompt."""
        hits: list[int] = []
        observations = _scrub(a.observations, canary, ctx, hits)
        if not hits:
            # (the rationale is the proxy's own words around what the observations hold: with nothing in
            # them, a match there is the agent's system prompt saying what the proxy says, not a leak)
            return a
        rationale = _scrub(a.rationale, canary, ctx, hits)
        self._notes.audit("guardrail.tripped", guardrail_id=canary.id, reason_code=SYSTEM_PROMPT_LEAK,
                          decision="pass", detail="tool_arguments", tool=a.tool, call_id=a.call_id)
        assert isinstance(observations, dict) and isinstance(rationale, str)
        return dataclasses.replace(a, observations=observations, rationale=rationale)

    async def assess_tools(self, message: AssistantMessage, view: RequestView,
                           flagged: Sequence[str] = ()) -> Finding | None:
        """``flagged``: the client's request's content an input guardrail flagged (taints)."""
        assessor = self._s.assessor
        if assessor is None or not message.tool_calls:
            return None
        if self._grants is None:
            self._grants = self._make_grants()
        calls = list(message.tool_calls)
        # Always in a thread: the shell parse runs in a worker process (guardrails.tools.shell_worker),
        # and waiting for one, behind another request's 32 KiB parse, must not hold the event loop.
        # One answer of a client at a time: its costly answers queue behind each other, not others'.
        async with self._s.tool_shares.turn(self._client):
            assessments = await asyncio.to_thread(_assess_all, assessor, calls, view.history, self._grants, flagged)
        blocked: list[tuple[ToolCall, str]] = []
        first: tuple[str, str] | None = None
        canaries = [g for g in self._s.stream_guardrails if isinstance(g, CanaryProvider)]
        for call, a in zip(calls, assessments, strict=True):
            self._s.metrics.tool_assessments.labels(rule=a.rule or "none", decision=a.decision).inc()
            logged = a
            for canary in canaries:  # a run of the prompt too short to block a call is not logged
                logged = self._without_prompt(canary, StreamContext(view.system_prompt), logged)
            self._s.audit.record_assessment(logged, request_id=self._request_id, policy_name=self._s.guard.name)
            if a.decision == "block":
                log.info("tool_call_blocked", tool=a.tool, rule=a.rule, reason_code=a.reason_code)
                blocked.append((call, a.rationale))
                first = first or (a.rule or "tool", a.reason_code or "")
        if first is None:
            return None
        tools = self._s.policy.tools
        assert tools is not None
        lines = [f"guardproxy blocked the tool call {c.name}: {why}" for c, why in blocked]
        # The client's text names only what the operator or the proxy wrote (a catalog's tool name,
        # the rule and its reason): a rationale quotes the call's path, host or command, which the
        # model chose and no check has read (a system prompt used as a path reached the client).
        # The model is told the whole rationale (feedback), and its next answer is checked.
        shown = [client_line(c, a.rule, a.reason_code, tools.catalog)
                 for (c, _), a in zip(blocked, [a for a in assessments if a.decision == "block"], strict=True)]
        return Finding("tool", first[0], first[1], tools.on_block, "\n".join(shown),
                       rationale="\n".join(lines), blocked_calls=tuple(blocked))


_WHY = {
    PATH_OUTSIDE_WORKSPACE: "it names a path outside the workspace",
    PRIVILEGED_PATH: "it names a privileged location",
    NO_SUCH_PATH: "it reads a path that does not exist",
    WRITE_WITHOUT_READ: "it writes a file this session has not read first",
    PATH_OUTSIDE_MANIFEST: "it writes outside the files this session may write",
    EGRESS_NOT_ALLOWED: "it reaches a host outside the egress allowlist",
    SHELL_INTERPRETER: "it runs code in a form the shell rules block",
    UNPARSEABLE_ARGUMENTS: "its arguments could not be read",
    COMPUTER_USE_NOT_ALLOWED: "computer use is not allowed",
    TAINTED_EGRESS: "it would send data out after untrusted content entered the conversation",
    AUTORUN_SETTING: "it changes a setting that makes programs run code by themselves later",
}
"""What a block's reason code says to the client: the proxy's words, never the call's own values."""


def client_line(call: ToolCall, rule: str | None, reason_code: str | None, catalog: Mapping[str, object]) -> str:
    """The line that tells the client a tool call was blocked: the tool's name only when the catalog
    (the operator's or the built-in one) names it, the rule and the reason code."""
    name = call.name if call.name in catalog or call.name in BUILTINS else "(a tool the catalog does not name)"
    why = _WHY.get(reason_code or "", "the tool rules block it")
    return f"guardproxy blocked the tool call {name}: {why} (rule {rule or 'tools'}, {reason_code or 'blocked'})."


def _assess_all(assessor: ToolAssessor, calls: list[ToolCall], history: Sequence[HistoryToolCall],
                grants: frozenset[str], flagged: Sequence[str] = ()) -> list[Assessment]:
    return assessor.assess_all(calls, history, grants, flagged)


def _scrub(value: object, canary: CanaryProvider, ctx: StreamContext, hits: list[int]) -> object:
    """``value`` with each string holding a run of the system prompt replaced by a marker (its length
    appended to ``hits``). A module function, not a closure: a nested function that calls itself holds
    its own cell, a reference cycle that kept the request's ``StreamContext`` for the cycle collector
    (``tests/edge/test_request_cycles.py``)."""
    if isinstance(value, str):
        if len(value) >= 8 and not canary.passes_whole(ctx, [_below_prompted_folder(value, ctx.system_prompt)]):
            hits.append(len(value))
            return f"[withheld: {len(value)} characters holding a run of the system prompt]"
        return value
    if isinstance(value, dict):
        return {k: _scrub(v, canary, ctx, hits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, canary, ctx, hits) for v in value]
    return value


def _below_prompted_folder(value: str, prompt: str) -> str:
    """A path with its longest leading folder that the system prompt names cut off: coding agents put
    their working directory in the system prompt, so every path under it holds "a run of the prompt";
    what the model added below it is what could carry the prompt (a prompt used as a file name)."""
    if not value.startswith(("/", "~")) and value[1:3] not in (":/", ":\\"):
        return value
    cut = max(value.rfind("/"), value.rfind("\\"))
    while cut > 0:
        if value[:cut + 1] in prompt or value[:cut] in prompt:
            return value[cut + 1:]
        cut = max(value.rfind("/", 0, cut), value.rfind("\\", 0, cut))
    return value
