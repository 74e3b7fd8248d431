"""The async driver of one guarded turn: executes what ``proxy.core.turn.Turn`` commands.

Sockets live here; judgement does not. The turn machine decides (attempts, trips, retries, feedback
rounds, replacements, every ending); the stream guard decides what may be released; the seams in
``guardrails`` decide what is wrong. This module calls upstream, feeds the machine what came back,
and carries its commands out through the client's ``Responder``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from config.errors import UpstreamError
from config.policy import MaxLengthGuardrail, Mode, PiiGuardrail, SecretsGuardrail
from guardrails.datamodel import ANSWER, AssistantMessage, RequestView
from guardrails.seams import StreamContext, StreamGuardrail, TextCompleter, plants_instruction
from guardrails.stream import ArmedSet, passes_forms, whole_forms
from guardrails.stream.canary import CanaryProvider, canary_instruction, make_canary_token
from guardrails.tools.file_writes import covered, written_files
from proxy.core.limits import Limits, ReadBudget, too_large, tool_call_violation
from proxy.core.turn import Ask, Command, Fail, Finish, Reply, Request, Rules, Turn, Vet, Write, log_only_ids
from proxy.downstream.responder import Responder
from proxy.drive.completer import completer_factory, request_completer
from proxy.drive.offload import OFF_LOOP_CHARS, off_loop_if_large
from proxy.drive.services import Services
from proxy.drive.shares import client_key
from proxy.drive.stream_timing import StreamTimings
from proxy.drive.vetting import TurnNotes, Vetter, needs_vetting
from proxy.upstream.forwarding import UpstreamResponse
from proxy.wire.base import JsonBody, WireFormat, dumps

CallUpstream = Callable[[bytes], Awaitable[UpstreamResponse]]
WARM_OFF_LOOP_CHARS = 8_192
"""System prompts at least this long get their canary index built in a worker thread (~2 ms and up)."""
SLICE_BYTES = 4_096
"""An upstream read longer than this (a burst: an answer cached upstream, a fast model, a slow
reader catching up) goes through the guard in two steps: its first ``SLICE_BYTES``, whose released
frames go out at once, then, after the event loop's other requests had a turn, the rest (in a worker
thread past ``OFF_LOOP_CHARS``, as any long read). So a stream's first frames do not wait for the
checks of its whole burst, nor for another stream's: 32 unpaced 200-delta streams at once read
34 KB each, whose checks (~4 ms) went whole to six worker threads. Only the read's bytes wait over
the turn, not its decoded frames (1,000 bursts at once held 94 KiB per stream that way, 42 KiB
whole)."""


@dataclass(slots=True)
class Facts:
    """What the edge learnt about the request. Not changed once made (not ``frozen``: a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``, ~2 µs per request here)."""

    request_id: str
    wire: WireFormat
    provider: str
    sse: bool
    json: JsonBody
    """The body's JSON object, decoded whole on first use (the view may come from a partial decode)."""
    body: bytes
    view: RequestView
    headers: list[tuple[str, str]]
    """The client's request headers (lower-case names), for mode, grants and the judge's credentials."""
    query: str
    judge_path: str | None = None
    """The OpenAI-shaped endpoint the client used (Azure, Gemini's OpenAI layer): the judge asks it too."""
    mode: Mode = "interactive"
    """From the policy and ``x-guardproxy-mode``, checked by the edge."""
    prompt_recalled: bool = False
    """The system prompt includes one the upstream holds, remembered by this process
    (``proxy.drive.held_prompts``): the canary's trips say so in the audit log."""


class Plan:
    """What a guarded turn needs of its policy that no request changes, made once per policy load
    (``plan_of``): a request then looks up what it would otherwise derive again (the guardrails of
    each lane and their whole-text forms, the limits, a unary turn's ``Rules``)."""

    __slots__ = ("allow_paths", "canaries", "decision_headers", "forms", "lanes", "limits", "mode", "plants",
                 "rules", "tool_catalog", "tool_root", "unary_rules", "unseen")

    def __init__(self, s: Services) -> None:
        self.plants = any(plants_instruction(g) for g in s.stream_guardrails)
        """The policy plants a canary token in every system prompt (rewriting the body)."""
        self.canaries = [g for g in s.stream_guardrails if isinstance(g, CanaryProvider)]
        """Whose index of a long system prompt is built off the event loop (``_warm_prompt_indexes``)."""
        self.unseen: Literal["pass", "refuse"] | None = None if not self.canaries else (
            "refuse" if any(g.unseen_prompt == "refuse" for g in self.canaries) else "pass")
        """What a request gets whose system prompt the upstream holds and this process never saw
        (``proxy.drive.held_prompts``); None: no canary, nothing to arm with it."""
        self.limits = Limits.of(s.settings)
        self.mode: Mode = s.policy.defaults.mode_for(None)
        """The mode of a request that does not ask for one (``x-guardproxy-mode``)."""
        keys = [(other, for_tools) for other in (False, True) for for_tools in (False, True)]
        self.lanes = {key: _lane_guardrails(s, ANSWER if not key[0] else "", key[1]) for key in keys}
        """The stream checks per (a lane other than the answer's, a tool call's texts)."""
        self.forms = {key: whole_forms(lanes) for key, lanes in self.lanes.items()}
        self.rules = {interactive: _policy_rules(s, interactive, self.limits) for interactive in (False, True)}
        """``Rules``' fields that depend only on the policy and the mode, by ``interactive``."""
        self.unary_rules = {interactive: Rules(**fields, arm=_armed_apart, arm_tools=_armed_apart)
                            for interactive, fields in self.rules.items()}
        """A turn with nothing per request in its rules (no stream timings): one per mode, the checks
        armed apart (``Arming``)."""
        self.allow_paths = {g.id: tuple(spec.allow_paths) for g in s.tool_arg_guardrails
                            if isinstance(spec := s.specs.get(g.id), (SecretsGuardrail, PiiGuardrail))
                            and spec.allow_paths}
        """Guardrails left out of a file tool's write into files their ``allow_paths`` cover (test
        fixtures), by guardrail id."""
        tools = s.policy.tools
        self.tool_root = tools.workspace_root if tools is not None else None
        self.tool_catalog = tools.catalog if tools is not None else {}
        guard = s.guard
        self.decision_headers = [
            (b"x-guardproxy-policy", guard.label.encode("latin-1", "replace")),
            (b"x-guardproxy-guardrails", (",".join(guard.guardrail_ids) or "none").encode("latin-1", "replace"))]
        """Which policy (name@version) and guardrails an answer ran under, encoded."""


def plan_of(s: Services) -> Plan:
    return s.guard.once(Plan, Plan, s)


def _armed_apart(*_: object, **__: object) -> None:
    raise AssertionError("a turn of a shared Rules arms its checks through its own Arming")


def _grants(headers: list[tuple[str, str]]) -> frozenset[str]:
    """Hosts the client granted for this session (``x-guardproxy-egress-grant``)."""
    header = dict(headers).get("x-guardproxy-egress-grant", "")
    return frozenset(h.strip().lower() for h in header.split(",") if h.strip())


def _request_completer(services: Services, f: Facts) -> TextCompleter:
    return request_completer(services, f.wire, f.provider, f.headers, f.query, f.judge_path)


class Arming:
    """Arms the stream checks of one request: per lane (``arm``) and per tool call (``arm_tools``);
    and their whole-text forms over a complete text (``passes``, ``passes_tools``)."""

    __slots__ = ("_ctx", "_plan", "_token", "_view", "_wire")

    def __init__(self, plan: Plan, view: RequestView, wire: str, canary_token: str) -> None:
        self._plan, self._view, self._wire, self._token = plan, view, wire, canary_token
        self._ctx: StreamContext | None = None

    def arm(self, channel: str = ANSWER, *, for_tools: bool = False) -> ArmedSet | None:
        """The armed checks for one lane (``channel``) or, ``for_tools``, one tool call's arguments."""
        guardrails = self._plan.lanes[channel != ANSWER, for_tools]
        if not guardrails:
            return None
        armed = ArmedSet.arm(guardrails, self._ctx or self._context())
        return armed if armed else None

    def arm_tools(self, call: tuple[str, str] | None = None) -> ArmedSet | None:
        """The checks of one tool call's texts; given the call (name, raw arguments), without the
        guardrails whose ``allow_paths`` cover every file it writes."""
        armed = self.arm(for_tools=True)
        plan = self._plan
        if armed is None or call is None or not plan.allow_paths:
            return armed
        written = written_files(call[0], call[1], plan.tool_catalog)
        if written is None:
            return armed
        for gid, globs in plan.allow_paths.items():
            if gid in armed.ids and covered(written, globs, plan.tool_root):
                armed.disarm(gid)
        return armed if armed else None

    def passes(self, channel: str, pieces: Sequence[str], *, for_tools: bool = False) -> bool:
        """Whether every check ``arm`` would arm for a lane's complete text (or, ``for_tools``, one of
        a tool call's texts) passes it (``passes_complete``: their whole-text forms, else each check
        alone)."""
        forms = self._plan.forms[channel != ANSWER, for_tools]
        return not forms or passes_forms(forms, self._ctx or self._context(), pieces)

    def passes_tools(self, pieces: Sequence[str]) -> bool:
        return self.passes(ANSWER, pieces, for_tools=True)

    def _context(self) -> StreamContext:
        # one per request: its lanes and tool calls are all armed for the same request
        view = self._view
        ctx = self._ctx = StreamContext(view.system_prompt, view.model, self._wire, self._token)
        return ctx


def _lane_guardrails(s: Services, channel: str, for_tools: bool) -> list[StreamGuardrail]:
    guardrails = s.tool_arg_guardrails if for_tools else s.stream_guardrails
    if channel != ANSWER:  # a length limit is about the answer, not the thinking beside it
        guardrails = [g for g in guardrails if not isinstance(s.specs.get(g.id), MaxLengthGuardrail)]
    return guardrails


def _policy_rules(s: Services, interactive: bool, limits: Limits) -> dict[str, Any]:
    """The fields of ``Rules`` that depend only on the policy and the mode."""
    policy, tools = s.policy, s.policy.tools
    return {"on_trip": s.guard.on_trip, "default_replacement": policy.defaults.replacement,
            "holdback": policy.defaults.holdback_chars, "buffered": s.buffered, "interactive": interactive,
            "max_feedback_rounds": tools.max_feedback_rounds if tools else 0,
            "limits": limits, "on_lanes": s.metrics.unary_lanes.inc,
            "log_only_start": log_only_ids(s.guard.on_trip, interactive, {}), "vets": _vets_for(s)}


def _vets_for(s: Services) -> Callable[[AssistantMessage, tuple[AssistantMessage, ...]], bool]:
    """``needs_vetting`` for this policy: with neither message checks nor tool rules, never (asked of
    every unary answer, so decided once here)."""
    if not s.message_guardrails and s.assessor is None:
        return _never_vets
    return partial(needs_vetting, s)


def _never_vets(message: AssistantMessage, others: tuple[AssistantMessage, ...]) -> bool:
    return False


class GuardedTurn:
    """One request on one of the four client APIs with guardrails on."""

    def __init__(self, services: Services, facts: Facts, responder: Responder, call: CallUpstream,
                 plan: Plan | None = None) -> None:
        """``plan``: ``plan_of(services)``, when the caller has it."""
        self.services, self.facts, self.responder, self._call = services, facts, responder, call
        self._plan = plan = plan or plan_of(services)
        # What holding back costs a stream's text (``/metrics``); a unary answer streams nothing.
        self.timings = StreamTimings(services.metrics) if facts.view.stream else None
        token = ""
        body: dict[str, Any] | JsonBody = facts.json
        raw = facts.body
        if plan.plants:
            token = make_canary_token()
            body = facts.wire.with_system(facts.json.data, canary_instruction(token))
            raw = dumps(body).encode()
        # Nothing handed to the turn machine or the vetter points back at this object: a request's
        # objects (its decoded body among them) are freed by reference counting the moment it ends,
        # not by the cycle collector (which, for an agent's 66 KB body at 32 concurrent requests,
        # cost more than the guard itself: bench/request_cost.py).
        arming = Arming(plan, facts.view, facts.wire.name, token)
        interactive = facts.mode == "interactive"
        if self.timings is None:
            rules = plan.unary_rules[interactive]
        else:
            rules = Rules(**plan.rules[interactive], arm=arming.arm, arm_tools=arming.arm_tools,
                          passes=arming.passes, passes_tools=arming.passes_tools, clock=time.perf_counter,
                          on_release=self.timings.held)
        self._notes = notes = TurnNotes(services, facts.request_id)
        if facts.prompt_recalled:
            notes.prompt_detail = "remembered_prompt"
        self.turn = Turn(Request(facts.wire, body, raw, facts.view, facts.sse), rules, notes, arming)

    _vetter: Vetter | None = None
    """Made by the first ``Vet`` (at the end of a message): an open stream does not carry it."""
    before_end: Callable[[tuple[str, ...]], Awaitable[None]] | None = None
    """Awaited once, before the client gets the end of the answer (a unary reply, a stream's end): what
    the upstream now holds for this turn is in the state store before the client can chain on it
    (``proxy.drive.turn_memory``; another worker or replica may serve the next turn)."""

    async def settle(self) -> None:
        hook, self.before_end = self.before_end, None
        if hook is not None:
            await hook(self.turn.state_ids)  # the ids the answer named: what a next turn chains on

    # ------------------------------------------------------------------ setup
    @property
    def vetter(self) -> Vetter:
        if self._vetter is None:
            s, f = self.services, self.facts
            self._vetter = Vetter(s, self._notes, f.request_id, partial(_grants, f.headers),
                                  partial(_request_completer, s, f), completer_factory(s, f.headers, f.provider),
                                  client=client_key(f.headers))
        return self._vetter

    # ------------------------------------------------------------------ the command loop
    async def run(self) -> None:
        if len(self.facts.view.system_prompt) >= WARM_OFF_LOOP_CHARS:
            await self._warm_prompt_indexes()
        pending: list[Command] = self.turn.begin()  # a few commands at a time (a deque costs 600 bytes)
        if self.timings is None:  # not a stream: each attempt is read whole
            while pending:
                cmd = pending.pop(0)
                if type(cmd) is not Ask:
                    pending.extend(await self._do(cmd))
                    continue
                # (``_unary`` inline: every suspension while the upstream answers passes through each
                # coroutine frame awaited, so one frame fewer is one step fewer per suspension)
                try:
                    resp = await self._call(cmd.body)
                except UpstreamError as exc:
                    pending.extend(self.turn.on_unreachable(exc))
                    continue
                pending.extend(await self._whole(resp))
            return
        try:
            while pending:
                cmd = pending.pop(0)
                # An upstream attempt of a stream is awaited from here, not through ``_do``: an open
                # stream suspends one coroutine frame fewer (~350 bytes each).
                pending.extend(await (self._stream(cmd.body) if type(cmd) is Ask else self._do(cmd)))
                del cmd
        finally:
            if self.timings is not None:
                self.timings.flush()

    async def _warm_prompt_indexes(self) -> None:
        """A big system prompt's canary index is built in a worker thread on its first turn, not on
        the event loop (~18 ms at 57 KB); later turns find it cached by the prompt's digest."""
        prompt = self.facts.view.system_prompt
        if len(prompt) < WARM_OFF_LOOP_CHARS:
            return
        for canary in self._plan.canaries:  # (and its form for tool arguments: a longer threshold)
            for g in {canary, canary.tool_arguments_form}:
                if g.cold(prompt):
                    g.warm(prompt, await asyncio.to_thread(g.index_of, prompt))

    async def _do(self, cmd: Command) -> list[Command]:
        r = self.responder
        match cmd:  # (a unary answer's reply first: each case is a type test; ``run`` takes an Ask itself)
            case Reply():
                if self.before_end is not None:
                    await self.settle()
                await r.respond(cmd.status, cmd.body, cmd.headers, cmd.content_type, decided=True)
            case Ask():
                return await (self._stream(cmd.body) if self.facts.view.stream else self._unary(cmd.body))
            case Write():
                r.codec = self.turn.client_codec
                await r.start(cmd.status, cmd.headers, cmd.content_type)
                await r.write(cmd.data)
                if self.timings is not None:
                    self.timings.delivered()
            case Finish():
                if self.before_end is not None:
                    await self.settle()
                if self.timings is not None:
                    self.timings.flush()  # in /metrics before the client sees the end
                await r.finish()
            case Fail():
                if cmd.reason:
                    self.services.metrics.fail_closed.labels(reason=cmd.reason).inc()
                r.codec = self.turn.client_codec or r.codec
                await r.fail(cmd.status, cmd.message, cmd.kind, extra=cmd.extra)
            case Vet():
                if not needs_vetting(self.services, cmd.message, cmd.others):  # no tool rule or message check applies
                    if len(cmd.message.text) <= OFF_LOOP_CHARS:
                        return self.turn.on_verdict(None)
                    return await off_loop_if_large(len(cmd.message.text), self.turn.on_verdict, None)
                finding = await self.vetter.vet(cmd.message, cmd.view, self.facts.view)
                for other in cmd.others:  # every choice gets its own tool rules and message checks
                    if finding is not None:
                        break
                    if (finding := await self.vetter.vet(other, cmd.view, self.facts.view)) is not None:
                        return self.turn.on_verdict(finding, other)
                # Releasing a long held message (300,000 one-character deltas: one frame each) costs
                # as much as checking it did: off the loop too, or every other stream stalls.
                return await off_loop_if_large(len(cmd.message.text), self.turn.on_verdict, finding)
        return []

    async def _unary(self, body: bytes) -> list[Command]:
        try:
            resp = await self._call(body)
        except UpstreamError as exc:
            return self.turn.on_unreachable(exc)
        return await self._whole(resp)

    async def _whole(self, resp: UpstreamResponse) -> list[Command]:
        """Read an answer whole (``Upstream`` has undone its content-encoding)."""
        try:
            limits = self._plan.limits
            if (raw := await resp.read_at_most(limits.max_response_bytes)) is None:
                raise too_large(limits)
        except UpstreamError as exc:
            return self.turn.on_unreachable(exc)
        finally:
            resp.close()
        if len(raw) <= OFF_LOOP_CHARS:  # (``off_loop_if_large`` inline: one coroutine less per answer)
            return self.turn.on_body(resp.status, resp.headers, raw)
        return await off_loop_if_large(len(raw), self.turn.on_body, resp.status, resp.headers, raw)

    async def _stream(self, body: bytes) -> list[Command]:
        """One upstream attempt. Writes go out as the machine releases them; whatever follows the
        end of reading (a verdict to fetch, a re-ask, the tail) goes back to the command loop."""
        turn = self.turn
        try:
            resp = await self._call(body)
        except UpstreamError as exc:
            return turn.on_unreachable(exc)
        if not 200 <= resp.status < 300:
            try:
                raw = await resp.read()
            except UpstreamError:
                raw = b""
            finally:
                resp.close()
            return turn.on_status(resp.status, resp.headers, raw)
        if not turn.on_open(resp.status, resp.headers):
            return await self._whole(resp)
        metrics = self.services.metrics
        metrics.open_streams.inc()
        limits = self._plan.limits
        budget, timings, responder = ReadBudget(limits), self.timings, self.responder
        try:
            first_read = timings  # (the first upstream byte is timed once)
            async for chunk in resp.iter_chunks():
                # Once per upstream read, and a paced stream reads once per delta: the common read
                # is handled inline (no coroutine per step), writes of a started response included.
                if first_read is not None:
                    first_read.upstream_read()
                    first_read = None
                rest = None
                if len(chunk) > SLICE_BYTES:  # a burst: its first frames go out first
                    chunk, rest = chunk[:SLICE_BYTES], chunk[SLICE_BYTES:]
                while True:
                    frames_before = turn.frames_in
                    size = len(chunk)
                    cmds = turn.on_chunk(chunk) if size <= OFF_LOOP_CHARS else \
                        await asyncio.to_thread(turn.on_chunk, chunk)
                    over = budget.add(size, framed=turn.frames_in != frames_before) \
                        or tool_call_violation(turn.tool_calls_seen, limits)
                    if over is not None and turn.reading:
                        return turn.on_break(over)  # nothing of the part that crossed the bound is sent
                    if not turn.reading:
                        return cmds
                    for cmd in cmds:
                        if type(cmd) is Write and responder.started and responder.codec is turn.client_codec \
                                and (timings is None or timings.has_delivered):
                            await responder.write(cmd.data)
                        else:
                            await self._do(cmd)
                        del cmd  # unbound once the loop ends: the last Write is not kept alive
                    del cmds
                    if rest is None:
                        break
                    chunk, rest = rest, None
                    await asyncio.sleep(0)  # the other requests' turn (``SLICE_BYTES``)
                # Nothing of this read stays referenced while the next one is awaited: an idle stream
                # holds only what the guard holds back (not its last read and last write, whole).
                del chunk
            return await off_loop_if_large(turn.pending_check_chars, turn.on_end)
        except UpstreamError as exc:
            return turn.on_break(exc)
        finally:
            metrics.open_streams.dec()
            resp.close()
            turn.note_state()
