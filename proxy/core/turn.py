"""The guarded turn as a sans-IO state machine: events in, commands out. No sockets, no clocks.

One ``Turn`` answers one client request on a guarded route, over as many upstream attempts as its
findings ask for (retries with a mandate, tool feedback rounds). The driver (``proxy.drive.guarded_turn``)
feeds it what happened upstream and executes what it returns, in order:

    events                                        commands
    begin()                                       Ask(body)           call upstream with this body
    on_unreachable(exc)                           Write(data, ...)    start the response if needed, send
    on_status(status, headers, body)              Finish()            end the response
    on_open(headers) / on_chunk(data)             Reply(...)          the whole response at once
    on_end() / on_break(exc)                      Fail(...)           the API's error (HTTP or in-stream)
    on_body(status, headers, body)   (unary)      Vet(message, view)  run tool rules and message checks,
    on_verdict(finding | None)                                        then call on_verdict

Held bytes leave in one place only: after a whole message passed the stream checks' ``finish``
(``_close``), the tool rules and the message checks (``Vet`` / ``on_verdict``). A message that did not
end whole (the upstream broke, stalled, sent an error event or a frame that cannot be read) cannot be
vetted: what is held is dropped and the answer ends with the API's error.

Attempts. While nothing of the answer has reached the client, a new attempt simply becomes the
client's stream. Once something has, the new attempt is read whole (``tail`` mode), vetted, and
appended through the client's own codec (``render_tail``), after a replaced signal when the client
must discard what it saw.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Protocol

from config.errors import UpstreamError
from guardrails.datamodel import ANSWER, PRIMARY, AssistantMessage, Event, Frame, RequestView
from guardrails.decision import Block
from guardrails.findings import Act, Finding, OnTrip, choose, finding_of, named
from guardrails.stream import ArmedSet, Trip
from proxy.core.choice_guard import COVERAGE_ID, ArmFor, ChoiceGuard
from proxy.core.holdback import Waits
from proxy.core.limits import Limits, message_violation, messages_violation
from proxy.core.stream_guard import ArmTools, apply_redactions, tool_block
from proxy.core.whole_answer import PassesFor, ToolsPass, WholeVerdict, check_whole_answer
from proxy.wire.base import ErrorKind, FinishKind, JsonBody, Replaced, StreamCodec, WireFormat, dumps
from proxy.wire.shapes import error_body

BATCH_FRAMES = 32
"""Released frames sent per write within one upstream read: few sends, bounded delay."""
RELEASE_BATCH = 4096
"""Frames per write when a held message is released whole (about 0.7 MB of one-character deltas)."""
NOT_RUN = ("Not run: another tool call in the same turn was blocked by guardproxy. "
           "Call it again if it is still needed.")


# ---------------------------------------------------------------------------------------- commands
# Not ``frozen`` (nothing changes a command once made): a frozen dataclass's ``__init__`` sets each
# field through ``object.__setattr__``, and a stream makes a ``Write`` per upstream read.
@dataclass(slots=True)
class Ask:
    body: bytes


@dataclass(slots=True)
class Write:
    """Start the response (200, ``headers``; ``content_type`` overrides theirs) unless it has
    started, then send ``data`` (may be empty: only start)."""

    data: bytes
    headers: list[tuple[str, str]]
    content_type: str | None = None
    status: int = 200


@dataclass(slots=True)
class Finish:
    pass


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes
    headers: list[tuple[str, str]]
    content_type: str


@dataclass(slots=True)
class Fail:
    status: int
    message: str
    kind: ErrorKind
    extra: dict[str, str] | None = None
    reason: str = ""
    """Set when the answer fails closed: the label of the fail-closed metric."""

    @classmethod
    def upstream(cls, exc: UpstreamError) -> Fail:
        """504 for a time-out, else 502 (or the API's mid-stream error once the response started)."""
        return cls(504 if exc.timeout else 502, str(exc), "timeout" if exc.timeout else "upstream",
                   reason=exc.reason)


@dataclass(slots=True)
class Vet:
    message: AssistantMessage
    view: RequestView
    others: tuple[AssistantMessage, ...] = ()
    """The other choices' messages (``n``, ``candidateCount``): vetted too, each on its own."""


Command = Ask | Write | Finish | Reply | Fail | Vet


# ---------------------------------------------------------------------------------------- setup
class Notes(Protocol):
    """Side effects that are records only (metrics, audit log, logs); they never change the turn."""

    def tripped(self, guardrail_id: str, reason_code: str) -> None: ...
    def redacted(self, trips: list[Trip]) -> None: ...
    def decided(self, finding: Finding, act: str, attempt: int) -> None: ...
    def retried(self, finding: Finding, attempt: int) -> None: ...
    def fed_back(self) -> None: ...
    def replaced(self, finding: Finding, decision: str) -> None: ...
    def broke(self, exc: UpstreamError) -> None: ...
    def logged(self, trips: list[Trip]) -> None: ...
    def unreadable(self, reason: str) -> None: ...


@dataclass(slots=True)
class Rules:
    """The policy as the turn needs it, fixed for the turn (not ``frozen``: one is made per request,
    and a frozen dataclass's ``__init__`` sets each of its fields through ``object.__setattr__``)."""

    on_trip: Mapping[str, OnTrip]
    default_replacement: str
    holdback: int
    buffered: bool
    interactive: bool
    max_feedback_rounds: int
    arm: ArmFor
    """The stream checks for one lane of an attempt's text, by channel (None: none armed)."""
    arm_tools: ArmTools
    """The stream checks for one tool call's arguments."""
    clock: Callable[[], float] | None = None
    on_release: Waits | None = None
    """Told the released frames' times in the guard (``clock`` units); for ``/metrics``."""
    limits: Limits = field(default_factory=Limits)
    """Bounds on tool calls and argument nesting (``proxy.core.limits``); past them the answer fails closed."""
    log_only_start: frozenset[str] | None = None
    """``log_only_ids`` before any attempt is spent, when the caller keeps it per policy (None: computed)."""
    on_lanes: Callable[[], None] | None = None
    """Told when a whole answer's shape needs the per-lane checks (``proxy.core.whole_answer``); for ``/metrics``."""
    passes: PassesFor | None = None
    """Whether a lane's complete text passes its checks whole (``proxy.core.whole_answer``; None: arm them)."""
    passes_tools: ToolsPass | None = None
    """Whether one of a tool call's complete texts passes the tool-argument checks whole (the same)."""
    vets: Callable[[AssistantMessage, tuple[AssistantMessage, ...]], bool] | None = None
    """Whether vetting could find anything in a whole answer's messages (tool rules, message checks);
    when it could not, a unary answer's verdict is given at once, without a ``Vet`` (None: always ``Vet``)."""


@dataclass(slots=True)
class Request:
    wire: WireFormat
    body: dict[str, Any] | JsonBody
    """The request as first sent upstream (a planted canary included); a ``JsonBody`` is decoded only
    when a retry or a feedback round rebuilds it."""
    raw: bytes
    view: RequestView
    sse: bool = True


@dataclass(slots=True)
class _Ending:
    """The message of an attempt that ended, kept while it is being vetted."""

    message: AssistantMessage
    unary_raw: bytes | None = None
    """Non-streaming: the body to send (or rewrite) once the verdict is in."""
    headers: list[tuple[str, str]] = field(default_factory=list)


class Armer(Protocol):
    """The checks of one request: ``Rules`` carries them itself (a turn made by hand), or the driver
    hands them apart (``Turn(..., arming)``) so that its ``Rules`` is made once per policy."""

    @property
    def arm(self) -> ArmFor: ...
    @property
    def arm_tools(self) -> ArmTools: ...
    @property
    def passes(self) -> PassesFor | None: ...
    @property
    def passes_tools(self) -> ToolsPass | None: ...


class Turn:
    # What every turn starts with, as class attributes: a unary turn sets few of them, and each
    # assignment in ``__init__`` would be paid by every request.
    feedback_rounds = 0
    tail = False
    announced = False
    sent_any = False
    started = False
    reading = False
    frames_in = 0
    """Upstream frames decoded so far (the driver's frame-size budget resets on each)."""
    state_ids: tuple[str, ...] = ()
    """Ids under which the upstream stored this turn's answers (every attempt's, Responses only)."""
    client_codec: StreamCodec | None = None
    _codec: StreamCodec | None = None
    _guard: ChoiceGuard | None = None
    _headers: list[tuple[str, str]] = []  # noqa: RUF012 - never changed in place, only replaced (``on_open``)
    _status = 200
    _ending: _Ending | None = None
    _arming: Armer | None = None
    """Where the turn's checks are armed when given apart from ``rules`` (else ``rules`` itself, read
    when used: a test may swap a turn's ``rules``)."""

    def __init__(self, request: Request, rules: Rules, notes: Notes, arming: Armer | None = None) -> None:
        self.req, self.rules, self.notes = request, rules, notes
        if arming is not None:
            self._arming = arming
        self.wire = request.wire
        self._base = request.body
        self.view = request.view
        """The view of the request being answered now (its history grows with feedback rounds)."""
        self.attempts: dict[str, int] = {}
        """Retries spent per guardrail id (a plain dict: a ``Counter`` costs ~1 µs per request to make)."""

    @property
    def base(self) -> dict[str, Any]:
        """The request that retries add their mandate to (grows with tool feedback rounds)."""
        if isinstance(self._base, JsonBody):
            self._base = self._base.data
        return self._base

    @base.setter
    def base(self, body: dict[str, Any]) -> None:
        self._base = body

    # ------------------------------------------------------------------ events: both modes
    def begin(self) -> list[Command]:
        return [Ask(self.req.raw)]

    def on_unreachable(self, exc: UpstreamError) -> list[Command]:
        """The upstream could not be reached (or broke before answering)."""
        return [Fail.upstream(exc)]

    def on_status(self, status: int, headers: list[tuple[str, str]], body: bytes) -> list[Command]:
        """The upstream answered with a status outside 2xx: relayed as it is, unless the client's
        response has already started (a retry), which then ends with the API's error."""
        if self.started:
            return [Fail(502, f"the upstream answered {status} on a retry", "upstream")]
        return [self._error_reply(status, headers, body)]

    def _error_reply(self, status: int, headers: list[tuple[str, str]], body: bytes) -> Command:
        """An error answer, relayed with its status, headers and body; its text checked like model
        text by the answer's stream checks (an error may quote what the model or the request held):
        a message that trips has only its JSON string replaced; other strings that trip (type, code,
        details, a quoted field) give the API's generic error with the upstream's status."""
        error = error_body(body)
        if error is None:
            return Reply(status, body, headers, _content_type(headers))
        arming = self._arming or self.rules

        def arm() -> ArmedSet | None:
            return arming.arm(ANSWER)

        logged: list[Trip] = []
        log_only = self._log_only()
        for text in (error.message, "\n".join(error.others)):
            armed = arm() if text else None
            trip = tool_block(armed, text, log_only, logged, arm) if armed else None
            if trip is None:
                continue
            d = trip.decision
            assert isinstance(d, Block)
            self.notes.tripped(trip.guardrail_id, d.reason_code)
            swapped = (_replace_error_text(Frame(body), text, _ERROR_TEXT_REPLACED)
                       if text is error.message else None)
            if swapped is None:
                if logged:
                    self.notes.logged(logged)
                return Fail(status, "the upstream answered with an error guardproxy cannot relay", "upstream",
                            reason="upstream_error")
            body = swapped.raw
        if logged:
            self.notes.logged(logged)
        return Reply(status, body, headers, _content_type(headers))

    def on_verdict(self, finding: Finding | None, about: AssistantMessage | None = None) -> list[Command]:
        """``about``: the message the finding is about when it is another choice's."""
        ending, self._ending = self._ending, None
        assert ending is not None, "on_verdict without a pending Vet"
        if about is not None:
            ending.message = about
        if ending.unary_raw is not None:
            return self._unary_verdict(ending, finding)
        if finding is not None:
            return self._on_finding(finding, ending.message)
        if self.tail:
            return self._tail(ending.message, "normal", None)
        return [*self._release_held(), Finish()]

    # ------------------------------------------------------------------ events: streaming
    def on_open(self, status: int, headers: list[tuple[str, str]]) -> bool:
        """A 2xx answer to a streaming request. True: stream it (a fresh codec and guard for this
        attempt); False: the upstream answered with a JSON body instead, to be read whole and given
        to ``on_body``. Decided by what the upstream sent, not by what was asked."""
        ctype = _content_type(headers, "").lower()
        if self.req.sse and ctype.startswith("application/json"):
            return False
        codec = self.wire.new_stream(sse=self.req.sse)
        if not self.tail:
            self.client_codec = codec
        self._codec, self._status, self.reading = codec, status, True
        self._headers = headers
        arming = self._arming or self.rules
        self._guard = ChoiceGuard(arming.arm, holdback=self.rules.holdback,
                                  buffered=self.tail or self.rules.buffered, retext=codec.retext,
                                  rearm=arming.arm_tools, log_only=self._log_only(),
                                  clock=self.rules.clock, on_release=self.rules.on_release)
        return True

    def on_unreadable(self, reason: str) -> list[Command]:
        """What the upstream sent cannot be read (a frame, an encoding): nothing more of it goes out;
        what was held is dropped; the answer ends with the API's error."""
        self.reading = False
        self.notes.unreadable(reason)
        if self._guard is not None:
            self._guard.drop_held()
        return [Fail(502, f"guardproxy could not read the upstream's answer: {reason}", "upstream",
                     reason="unreadable")]

    def note_state(self) -> None:
        """Keep the id under which the upstream stored this attempt's answer (``state_ids``), however
        the attempt ended (a trip stops reading before the stream's end)."""
        if self._codec is not None:
            self._keep_state_ids(self._codec.state_ids)

    def _keep_state_ids(self, ids: tuple[str, ...]) -> None:
        self.state_ids += tuple(i for i in ids if i and i not in self.state_ids)

    @property
    def tool_calls_seen(self) -> int:
        """Tool calls begun in this attempt so far (the driver bounds them while reading)."""
        return self._guard.tool_call_count if self._guard is not None else 0

    def on_chunk(self, data: bytes) -> list[Command]:
        frames = self._codec_().feed(data)
        self.frames_in += len(frames)
        return self._relay(frames)

    def on_end(self) -> list[Command]:
        """The upstream stream ended (cleanly, or after an in-stream error event)."""
        out = self._relay(self._codec_().flush())
        if not self.reading:
            return out
        self.reading = False
        return out + self._close()

    def on_break(self, exc: UpstreamError) -> list[Command]:
        """The upstream broke or stalled mid-stream: the message is cut. What is held cannot be
        vetted (a check's verdict on a cut text is not final: a secret one character short of its
        pattern passes ``finish``), so it is dropped; the answer ends with the API's error."""
        self.reading = False
        if self.sent_any or self.tail:
            self.notes.broke(exc)
        self._guard_().drop_held()
        return [Fail.upstream(exc)]

    # ------------------------------------------------------------------ events: non-streaming
    def on_body(self, status: int, headers: list[tuple[str, str]], raw: bytes) -> list[Command]:
        """A whole answer (decoded from its content-encoding): a non-streaming request's, or a JSON
        body the upstream sent to a streaming request."""
        if not 200 <= status < 300:
            return self.on_status(status, headers, raw)
        if self.started:
            return self.on_unreadable("a whole body answered a retry of a stream")
        ctype = dict(headers).get("content-type")
        if ctype is not None and "text/event-stream" in ctype.lower():
            return self.on_unreadable("an event stream answered a non-streaming request")
        try:
            message, events = self.wire.decode_answer(raw)
            self._keep_state_ids((message.state_id,))
            # (no tool call: no bound to pass, ``max_tool_calls`` being at least 0)
            if message.tool_calls and (too_big := message_violation(message, self.rules.limits)) is not None:
                return [Fail.upstream(too_big)]
            finding, redacted, others = self._check_body(events)
            if redacted is not None:
                raw = self.wire.retext_body(raw, {PRIMARY: redacted})
                message.text = redacted
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return self.on_unreadable("the body is not a response of this API")
        self._status = status
        if finding is None and self.rules.vets is not None and not self.rules.vets(message, others):
            # nothing to vet: the verdict is a pass (``on_verdict(None)`` without a pending ending)
            return [self._unary_reply(headers, raw, None, "application/json" if ctype is None else ctype)]
        ending = _Ending(message, unary_raw=raw, headers=headers)
        if finding is not None:
            return self._unary_verdict(ending, finding)
        self._ending = ending
        return [Vet(message, self.view, others)]

    # ------------------------------------------------------------------ streaming internals
    def _relay(self, frames: list[Frame]) -> list[Command]:
        """Push one upstream read's frames through the guard. Released frames go out in few writes
        (the first at once, then batches); a trip stops reading, after what was released before it."""
        guard, emit = self._guard_(), not self.tail
        out: list[Command] = []
        release: list[Frame] = []
        at, count = 0, len(frames)
        while at < count:
            if frames[at].unreadable:
                if emit and release:
                    out.append(self._write(release))
                return out + self.on_unreadable("a frame that is not this API's")
            # One frame, or a run of lone answer deltas checked at once (``ChoiceGuard.push_from``).
            step, at = guard.push_from(frames, at)
            if step.redactions:
                self.notes.redacted(step.redactions)
            if logged := guard.logged:  # (``_note_logged``, inline: asked after every frame)
                self.notes.logged(logged)
            release += step.send  # (a trip's step may carry what went out before it)
            if step.trip is not None:
                if emit and release:
                    out.append(self._write(release))
                self.reading = False
                return out + self._on_finding(self._from_trip(step.trip), guard.message())
            if emit and release and (not self.sent_any or len(release) >= BATCH_FRAMES):
                out.append(self._write(release))
                release = []
        if emit and release:
            out.append(self._write(release))
        return out

    def _close(self) -> list[Command]:
        """The one way an attempt ends with its message whole: the checks' ``finish``, then the
        message is vetted (``Vet``); held bytes go out only after the verdict (``on_verdict``). A
        message the upstream ended with an error event is cut like a broken stream: what is held
        is dropped, and the client gets the upstream's own error (``_upstream_error``)."""
        guard = self._guard_()
        if guard.error is not None:
            guard.drop_held()
            return self._upstream_error(guard, guard.error)
        # The bounds first: the whole-text checks of end() need not run on what they reject. Once more
        # after it, for arguments a stream only joins at its end (no explicit end of the call).
        too_big = messages_violation((guard.message(), *guard.messages().values()), self.rules.limits)
        if too_big is not None:
            return self._too_big(guard, too_big)
        step = guard.end()
        if step.redactions:
            self.notes.redacted(step.redactions)
        self._note_logged(guard)
        message = guard.message()
        if step.trip is not None:
            return self._on_finding(self._from_trip(step.trip), message)
        too_big = messages_violation((message, *guard.messages().values()), self.rules.limits)
        if too_big is not None:
            return self._too_big(guard, too_big)
        message.provider_parts = self._codec_().provider_parts()
        self._ending = _Ending(message)
        others = tuple(m for c, m in sorted(guard.messages().items()) if c)
        return [Vet(message, self.view, others)]

    def _upstream_error(self, guard: ChoiceGuard, text: str) -> list[Command]:
        """The upstream's in-stream error, kept whole: its frames (the error and the stream's end)
        go out as received, so its type, code and status reach the client (Claude Code and the SDKs
        decide from them whether and when to retry). Its free text is checked like model text;
        when it trips, only that text is replaced. Where the frames carry anything else, or come
        after a retry's first bytes (a tail read whole), or the text cannot be found to replace:
        the API's own generic error, as for a broken stream."""
        frames = guard.error_frames() if not self.tail else None
        if frames is not None:
            event = guard.error_event
            others = "\n".join(event.others) if event is not None else ""
            if others and guard.check_error_text(others) is not None:
                frames = None  # a type, code or detail that trips: not replaceable, the generic error
            trip = guard.check_error_text(text) if frames is not None else None
            self._note_logged(guard)
            if trip is not None and frames is not None:
                d = trip.decision
                assert isinstance(d, Block)
                self.notes.tripped(trip.guardrail_id, d.reason_code)
                swapped = _replace_error_text(frames[0], text, _ERROR_TEXT_REPLACED)
                frames = None if swapped is None else [swapped, *frames[1:]]
        if frames is None:
            self.notes.unreadable("the upstream ended the stream with an error event")
            return [Fail(502, "the upstream reported an error in the stream", "upstream", reason="upstream_error")]
        self.reading = False
        return [self._write(frames), Finish()]

    def _too_big(self, guard: ChoiceGuard, error: UpstreamError) -> list[Command]:
        """Past a bound (``proxy.core.limits``): nothing held is released, the message was never vetted."""
        self.reading = False
        guard.drop_held()
        return [Fail.upstream(error)]

    def _on_finding(self, f: Finding, message: AssistantMessage) -> list[Command]:
        act, next_body = self._next(f, message)
        if next_body is not None:
            out: list[Command] = []
            if self.sent_any:
                self.tail = True
                if act == "retry" and not self.announced:
                    self.announced = True
                    out.append(self._write_bytes(self._client_codec().render_replaced(_replaced(f, ""))))
            return [*out, Ask(dumps(next_body).encode())]
        if act == "reject":
            self.notes.replaced(f, "reject")
            return [_reject(f)]
        if act == "log":
            if self.tail:
                return self._tail(message, "normal", None)
            return [*self._release_held(), Finish()]
        if act == "replace":
            self.notes.replaced(f, "replace")
            return self._tail(AssistantMessage(f.replacement), "filtered",
                              None if self.announced else _replaced(f, f.replacement))
        # explain: a blocked tool call becomes text; the client never saw the call
        return self._tail(AssistantMessage(f.replacement), "normal", None)

    def _tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> list[Command]:
        codec = self._client_codec()
        return [self._write_bytes(codec.render_tail(message, finish, replaced)), Finish()]

    def _release_held(self) -> list[Write]:
        """Everything held, in writes of at most ``RELEASE_BATCH`` frames: the frames of a long
        buffered message (held compactly, ``proxy.core.holdback``) are rebuilt and dropped a batch at a time,
        never all alive at once (a full garbage collection would walk every one of them)."""
        guard, writes = self._guard_(), list[Write]()
        while batch := guard.release_all(at_most=RELEASE_BATCH):
            writes.append(self._write(batch))
        return writes or [self._write([])]

    def _write(self, frames: list[Frame]) -> Write:
        codec = self._codec_()
        if codec.rewrites:  # a redaction: frames that repeat the text must repeat what the client got
            frames = [codec.outgoing(f) for f in frames]  # (outgoing notes each frame as sent)
        else:
            for frame in frames:
                codec.note_sent(frame)
        return self._write_bytes(frames[0].raw if len(frames) == 1 else b"".join([f.raw for f in frames]))

    def _write_bytes(self, data: bytes) -> Write:
        self.started = True
        self.sent_any = self.sent_any or bool(data)
        return Write(data, self._headers, None, self._status)

    def _note_logged(self, guard: ChoiceGuard) -> None:
        if logged := guard.logged:
            self.notes.logged(logged)

    def _log_only(self) -> frozenset[str]:
        """The stream guardrails whose block would only be logged on this attempt (``log_only_ids``)."""
        if self.rules.log_only_start is not None and not any(self.attempts.values()):
            return self.rules.log_only_start
        return log_only_ids(self.rules.on_trip, self.rules.interactive, self.attempts)

    # ------------------------------------------------------------------ non-streaming internals
    def _unary_verdict(self, ending: _Ending, finding: Finding | None) -> list[Command]:
        raw = ending.unary_raw
        assert raw is not None
        if finding is None:
            return [self._unary_reply(ending.headers, raw)]
        act, next_body = self._next(finding, ending.message)
        if next_body is not None:
            return [Ask(dumps(next_body).encode())]
        if act == "reject":
            return [_reject(finding)]
        if act == "log":
            return [self._unary_reply(ending.headers, raw)]
        finish: FinishKind = "filtered" if act == "replace" else "normal"
        replaced = _replaced(finding, finding.replacement) if act == "replace" else None
        out = self.wire.render_response(raw, AssistantMessage(finding.replacement), finish, replaced)
        self.notes.replaced(finding, act)
        return [self._unary_reply(ending.headers, out, f"{finding.guardrail_id}; {finding.reason_code}")]

    def _unary_reply(self, headers: list[tuple[str, str]], raw: bytes, replaced: str | None = None,
                     content_type: str | None = None) -> Reply:
        """``content_type``: the headers' (or the default), when the caller has it already."""
        out = [h for h in headers if h[0] != "content-encoding"] \
            if "content-encoding" in map(_NAME, headers) else headers  # (not changed in place below)
        if replaced:
            out = [*out, ("x-guardproxy-replaced", replaced)]
        self.started = True
        return Reply(self._status, raw, out, content_type or _content_type(headers))

    def _check_body(self, events: tuple[Event, ...]) -> tuple[Finding | None, str | None, tuple[AssistantMessage, ...]]:
        """Stream guardrails over everything a non-streamed body shows (every choice, reasoning,
        refusals, citations, tool arguments; ``decode_events``), each lane as one delta. Only choice
        0's answer may be redacted (returned rewritten); any other trip is a finding. Also the other
        choices' messages, for the vetting."""
        arming = self._arming or self.rules
        verdict = check_whole_answer(events, arming.arm, arming.arm_tools, self._log_only(),
                                     arming.passes, arming.passes_tools)
        if verdict is not None:
            return self._whole_verdict(verdict)
        if self.rules.on_lanes is not None:
            self.rules.on_lanes()
        guard = ChoiceGuard(arming.arm, holdback=0, buffered=True, rearm=arming.arm_tools,
                            redact_lanes=False, log_only=self._log_only())
        step = guard.push(Frame(b"", events))
        if step.trip is None:
            step = guard.end()
        self._note_logged(guard)
        if step.trip is not None:
            return self._from_trip(step.trip), None, ()
        others = tuple(m for c, m in sorted(guard.messages().items()) if c)
        trips = guard.redaction_log
        if not trips:
            return None, None, others
        self.notes.redacted(trips)
        return None, apply_redactions(guard.text, trips), others

    def _whole_verdict(self, verdict: WholeVerdict) -> tuple[Finding | None, str | None, tuple[AssistantMessage, ...]]:
        """``_check_body``'s result from the one-pass check (``proxy.core.whole_answer``): one choice, so
        no other messages."""
        if verdict.logged:
            self.notes.logged(verdict.logged)
        if verdict.trip is not None:
            return self._from_trip(verdict.trip), None, ()
        if not verdict.redactions:
            return None, None, ()
        self.notes.redacted(verdict.redactions)
        return None, apply_redactions(verdict.text, verdict.redactions), ()

    # ------------------------------------------------------------------ decisions
    def _from_trip(self, trip: Trip) -> Finding:
        d = trip.decision
        assert isinstance(d, Block)
        self.notes.tripped(trip.guardrail_id, d.reason_code)
        if trip.guardrail_id == COVERAGE_ID:  # output the proxy cannot vet fails closed: never a retry
            on = OnTrip(action="reject", replacement=self.rules.default_replacement)
        else:
            on = self.rules.on_trip.get(trip.guardrail_id) or OnTrip(replacement=self.rules.default_replacement)
        # (a redaction that had to block, in tool arguments or a lane that is not rewritten, carries
        # no replacement of its own: the guardrail's, as its other blocks carry)
        replacement = d.replacement or named(on.replacement or self.rules.default_replacement, trip.guardrail_id, d.rule)
        return finding_of("stream", trip.guardrail_id, d.reason_code, d.rationale, replacement, on, rule=d.rule)

    def _next(self, finding: Finding, message: AssistantMessage) -> tuple[Act, dict[str, Any] | None]:
        """Choose what to do; for re-requests, also the next request body."""
        gid = finding.guardrail_id
        used = self.attempts.get(gid, 0)
        act = choose(finding, interactive=self.rules.interactive, attempts_used=used,
                     feedback_rounds_used=self.feedback_rounds, max_feedback_rounds=self.rules.max_feedback_rounds)
        self.notes.decided(finding, act, used + 1)
        if act == "retry":
            self.attempts[gid] = used + 1
            self.notes.retried(finding, used + 1)
            mandate = finding.mandate or (
                "Your previous answer was rejected by a guardrail and was not shown to the user. "
                + (finding.rationale or "") + " Answer again, following every instruction above.")
            return act, self.wire.with_system(self.base, mandate)
        if act == "feedback":
            self.feedback_rounds += 1
            self.notes.fed_back()
            blocked = {id(c): why for c, why in finding.blocked_calls}
            results = [(c, blocked.get(id(c), NOT_RUN)) for c in message.tool_calls]
            self.base = self.wire.with_tool_feedback(self.base, message, results)
            self.view = self.wire.parse_request(self.base, stream=self.view.stream)
            return act, self.base
        return act, None

    # ------------------------------------------------------------------ state access
    @property
    def pending_check_chars(self) -> int:
        """Characters that ``on_end`` will check at once (the tool calls' arguments)."""
        return self._guard.pending_tool_chars if self._guard is not None else 0

    def _guard_(self) -> ChoiceGuard:
        assert self._guard is not None, "no attempt is open"
        return self._guard

    def _codec_(self) -> StreamCodec:
        assert self._codec is not None, "no attempt is open"
        return self._codec

    def _client_codec(self) -> StreamCodec:
        assert self.client_codec is not None, "no stream was opened"
        return self.client_codec


def log_only_ids(on_trip: Mapping[str, OnTrip], interactive: bool, attempts: Mapping[str, int]) -> frozenset[str]:
    """The stream guardrails whose block would only be logged: ``log`` itself, or a retry whose
    attempts are spent and whose final action is ``log``. Their trips do not stop the stream."""
    return frozenset(gid for gid, on in on_trip.items()
                     if choose(finding_of("stream", gid, "", "", None, on), interactive=interactive,
                               attempts_used=attempts.get(gid, 0), feedback_rounds_used=0,
                               max_feedback_rounds=0) == "log")


_NAME = itemgetter(0)


def _content_type(headers: list[tuple[str, str]], default: str = "application/json") -> str:
    return dict(headers).get("content-type", default)


def _replaced(f: Finding, replacement: str) -> Replaced:
    return Replaced(f.guardrail_id, f.reason_code, replacement)


def _reject(f: Finding) -> Fail:
    if f.guardrail_id == COVERAGE_ID:  # the upstream's answer, not the client's request, was at fault
        return Fail(502, f"guardproxy: the upstream's answer could not be checked and was withheld ({f.reason_code})",
                    "upstream", {"guardrail_id": f.guardrail_id, "reason_code": f.reason_code}, reason=f.reason_code)
    return Fail(400, f"guardproxy: the answer was rejected by guardrail '{f.guardrail_id}' ({f.reason_code})",
                "guardrail", {"guardrail_id": f.guardrail_id, "reason_code": f.reason_code})


_ERROR_TEXT_REPLACED = "[guardproxy: the upstream's error message was removed by a guardrail]"


def _replace_error_text(frame: Frame, text: str, replacement: str) -> Frame | None:
    """``frame`` with the JSON string that spells ``text`` replaced by ``replacement`` and every other
    byte as received; None when that string is not found exactly once (spelled as ``json.dumps``
    spells it, with or without ASCII escapes)."""
    for ascii_only in (False, True):
        spelled = json.dumps(text, ensure_ascii=ascii_only).encode()
        if frame.raw.count(spelled) == 1:
            return Frame(frame.raw.replace(spelled, json.dumps(replacement).encode()), frame.events, frame.last)
    return None
