"""``StreamGuard``: the sans-IO core between the upstream's frames and the client.

Frames go in; frames that may be released come out, or a trip that the driver acts on. No sockets,
and no clock of its own: the driver may inject one (``clock``, ``on_release``) to have each text
frame's time in the guard reported for ``/metrics``. Test it with frames in and frames out.

Invariants:
- Text is released only once it lies before the smallest *horizon* of the armed checks
  (``DeltaCheck.horizon``: the earliest offset that could still become part of a match) and at
  least ``holdback`` characters behind the checked end (an optional fixed minimum). A match that
  spans deltas is therefore found before any of it has left the proxy.
- Frames keep their order and, unless a redaction rewrote them, their exact bytes.
- From the first tool-call frame on, nothing more is released until the message ends: a tool call
  is never half-forwarded, and the driver assesses the complete calls first.
- ``buffered`` delivery releases nothing until the driver calls ``release_all``.
- The frame that carries the finish, the stream's terminator (``Frame.last``) or an in-stream
  error, and every frame after it, wait for ``release_all``: the message checks run before the
  client is told the message ended, so a late verdict can still append a replacement to a message
  that is, for the client, still open (even one that never named a finish reason).
- After a trip the guard accepts nothing more: the driver stops reading upstream.
Cost per frame: O(len(frame text)) plus the armed checks' own O(len(delta)).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Protocol

from guardrails.datamodel import (
    AssistantMessage,
    Event,
    Finish,
    Frame,
    StreamError,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from guardrails.decision import Block, Redact
from guardrails.stream import ArmedSet, Trip
from guardrails.tools.arguments import decoded_text
from proxy.core.holdback import NO_WAIT, HeldFrames, Waits

CHECK_CHUNK = 1024
"""Text longer than this (a unary body, tool arguments, a huge delta) is checked in pieces of it."""
_MAX_REDACTIONS_PER_DELTA = 64
"""Bounds the re-check loop after a redaction (each re-check is O(1) for a check with nothing new)."""


_NO_REDACTIONS: list[Trip] = []
"""The redactions of a step that applied none: one shared list, never written (every reader only
tests it or adds it to a list of its own)."""


class Step:
    """What one push (or end) yields: frames to send, a trip, redactions applied. Built once per
    frame, so a plain slotted class (a frozen dataclass's ``__init__`` costs about 1 µs more)."""

    __slots__ = ("redactions", "send", "trip")

    def __init__(self, send: list[Frame], trip: Trip | None = None,
                 redactions: list[Trip] = _NO_REDACTIONS) -> None:
        self.send = send
        self.trip = trip
        self.redactions = redactions


class StreamGuard:
    def __init__(self, armed: ArmedSet | None, *, holdback: int, buffered: bool = False,
                 retext: Callable[[Frame, str], bytes] | None = None,
                 rearm: ArmTools | None = None,
                 log_only: frozenset[str] = frozenset(),
                 clock: Callable[[], float] | None = None,
                 on_release: Waits | None = None,
                 replay: Callable[[], ArmedSet | None] | None = None) -> None:
        self._armed = armed if armed else None
        self._replay = replay
        """Arms a fresh set of this text's checks: after a block inside a run of deltas checked at
        once (``push_texts``), it replays them one delta at a time to find what went out before it."""
        self._log_only = log_only
        """Guardrails whose block is only recorded: the trip is noted, the check disarmed, the
        stream goes on whole."""
        self.logged: list[Trip] = []
        self._rearm = rearm
        """Arms a fresh set for each tool call's arguments (text of their own, checked when complete)."""
        self._now: Callable[[], float] = clock if clock is not None and on_release is not None else float
        """The clock, or ``float`` (0.0) when nothing is timed."""
        self._on_release = on_release if clock is not None else None
        """Told, on each release, how long each released frame was held (``clock`` units; NaN for a
        frame without text): ``/metrics``. Given with ``clock`` or not at all."""
        self._holdback = holdback if self._armed else 0
        self._buffered = buffered
        self._retext = retext
        self._queue = HeldFrames(self._on_release)
        self._live = not buffered
        """No finish, error or tool call seen, not buffered, not tripped: a frame of one short text
        delta takes ``_push_text``."""
        self._acc = ""
        self._tools: dict[str, ToolCall] = {}
        self.tool_call_count = 0
        """Tool calls begun so far in this message (the driver asks after every upstream read)."""
        self._tool_args: dict[str, list[str]] = {}
        self._holding_tools = False
        self.finish_reason: str | None = None
        self.error: str | None = None
        self.error_event: StreamError | None = None
        self.error_frames: list[Frame] = []
        """The frame that carried the upstream's in-stream error and every frame after it, as
        received (the turn relays them when they carry nothing but the error and the stream's end)."""
        self.committed = False
        """True once any frame was handed out for sending."""
        self.tripped: Trip | None = None
        self.redaction_log: list[Trip] = []
        """Every redaction applied so far (for the audit log and non-streamed bodies)."""

    # -- input ---------------------------------------------------------------------------------
    def push(self, frame: Frame) -> Step:
        events = frame.events
        if len(events) == 1 and type(event := events[0]) is TextDelta:
            return self.push_text(frame, event.text)
        return self._push_events(frame, events)

    def push_text(self, frame: Frame, text: str) -> Step:
        """``push`` of a frame whose only event is one ``TextDelta`` of ``text`` (nearly every frame of
        a stream). On a live stream, with at most ``CHECK_CHUNK`` characters, the same steps as
        ``push``, with the checks and their horizons in one pass (``ArmedSet.check_horizon``) and the
        queue's push and release in one call."""
        if not self._live or frame.last or len(text) > CHECK_CHUNK:
            return self._push_events(frame, frame.events)
        acc, self._acc = self._acc, ""  # detached: CPython grows the one-owner string in place
        start = len(acc)
        acc += text
        self._acc = acc
        end = len(acc)
        limit = end - self._holdback
        armed = self._armed
        if armed is not None:
            found = armed.check_horizon(acc, text)
            if isinstance(found, Trip):
                redactions: list[Trip] = []
                trip = self._settle(found, redactions)
                return self._trip(trip) if trip else self._queued(frame, start, redactions)
            if found < limit:  # noqa: PLR1730 - min() is a builtin call per delta
                limit = found
        out = self._queue.push_release(frame, start, end, self._now(), limit,
                                       acc, self._retext)
        if out:
            self.committed = True
        return Step(out)

    def push_texts(self, frames: list[Frame], texts: list[str], joined: str) -> Step:
        """``push_text`` of several frames at once: a run of frames that arrived in one upstream read,
        each carrying one ``TextDelta`` (``texts``, ``joined`` their concatenation, at most
        ``CHECK_CHUNK`` characters) and none terminal, on a live stream (``live``). The text is
        appended and the checks run once over ``joined``, as over one delta: every check gives the
        same verdict whatever the split of a text (the checks' own contract), and releases go by the
        horizon after the whole run, which lies at or after the horizon of any delta inside it. So
        no frame leaves before the checks have seen it and everything before it, and a trip inside
        the run releases none of the run's frames (where one check call per delta might have let
        the run's first frames go just before it). One check call per read instead of per delta:
        what an unpaced stream, many frames to a read, costs."""
        acc, self._acc = self._acc, ""  # detached: CPython grows the one-owner string in place
        start = len(acc)
        acc += joined
        self._acc = acc
        end = len(acc)
        limit = end - self._holdback
        armed = self._armed
        if armed is not None:
            found = armed.check_horizon(acc, joined)
            if isinstance(found, Trip):
                redactions: list[Trip] = []
                trip = self._settle(found, redactions, len(joined))
                if trip:
                    before = self._sent_before_block(frames, texts, start, trip.guardrail_id)
                    step = self._trip(trip)
                    step.send, step.redactions = before.send, before.redactions
                    return step
                self._hold(frames, texts, start)
                self.redaction_log += redactions
                for r in redactions:
                    self._apply_redaction(r)
                return Step(self._releasable(), redactions=redactions)
            if found < limit:  # noqa: PLR1730 - min() is a builtin call per run
                limit = found
        queue = self._queue
        out: list[Frame] = []
        if queue and limit >= 0 and (count := queue.releasable(limit)):
            out = queue.take(count, acc, self._retext, self._now())  # held before the run: first
        go = 0  # the run's frames that go out as they came: nothing held before them, all before ``limit``
        if not queue:
            at = start
            for text in texts:
                at += len(text)
                if at > limit:
                    break
                go += 1
        if go < len(frames):
            self._hold(frames[go:], texts[go:], start + sum(map(len, texts[:go])))
        if go:
            out += frames[:go] if go < len(frames) else frames
            if self._on_release is not None:
                self._on_release([0.0 for text in texts[:go] if text])  # (a frame without text: no wait)
        if out:
            self.committed = True
        return Step(out)

    def _sent_before_block(self, frames: list[Frame], texts: list[str], start: int, blocked_by: str) -> Step:
        """After a block over a run of deltas checked at once (``push_texts``; the run not queued
        yet): what checking them one delta at a time would have released before the delta that
        blocks, so what a client gets does not depend on how the upstream's frames fell into reads.
        A fresh set of the same checks (``replay``) is fed the text before the run (as checked
        before: its redactions and log-only blocks settled as they were), then the run's deltas one
        at a time, each redaction applied to the held frames as it is found; the held frames that
        end before the last limit short of the block go (with the redactions applied there). Nothing
        goes when the replay does not block inside the run with the guardrail the run did (as for a
        block on the run's first delta). Costs a pass over the message, once, on a block."""
        fresh = self._replay() if self._replay is not None and self._armed is not None else None
        if fresh is None:
            return Step([])
        assert self._armed is not None
        for gone in set(fresh.ids) - set(self._armed.ids):  # disarmed by a log-only block before
            fresh.disarm(gone)
        # The text before the run as it was checked before (it blocked nothing): what went out
        # already in pieces, then each frame still held on its own (its text may yet go out).
        text, seen = self._acc, ""
        held_from, ends = self._queue.bounds() if self._queue else (start, [])
        cuts = [*range(0, held_from, CHECK_CHUNK), held_from, *ends, start]
        for at, to in pairwise(cuts):
            if to <= at:
                continue
            piece = text[at:to]
            seen += piece
            if self._replayed(fresh, seen, fresh.check(seen, piece), len(piece), []) is not None:
                return Step([])
        self._hold(frames, texts, start)
        limit, redactions = -1, list[Trip]()
        for piece in texts:
            seen += piece
            found = fresh.check_horizon(seen, piece)
            if isinstance(found, Trip):
                new: list[Trip] = []
                if (trip := self._replayed(fresh, seen, found, len(piece), new)) is not None:
                    return self._released_by(limit, redactions) if trip.guardrail_id == blocked_by else Step([])
                for r in new:
                    self._apply_redaction(r)
                redactions += new
                found = fresh.horizon(seen)
            limit = max(limit, min(found, len(seen) - self._holdback))
        return Step([])

    def _replayed(self, armed: ArmedSet, text: str, trip: Trip | None, chars: int,
                  redactions: list[Trip]) -> Trip | None:
        """``_settle`` for the replay's set: log-only blocks disarm (not noted again), redactions are
        collected; the first block that remains, or None."""
        for _ in range(_MAX_REDACTIONS_PER_DELTA + chars):
            if trip is None:
                return None
            if isinstance(trip.decision, Block):
                if trip.guardrail_id not in self._log_only:
                    return trip
                armed.disarm(trip.guardrail_id)
            else:
                redactions.append(trip)
            trip = armed.check(text, "")
        return trip

    def _released_by(self, limit: int, redactions: list[Trip]) -> Step:
        """The replay blocked: the held frames that end at or before ``limit`` go, and the
        redactions the replay applied to them are reported."""
        if limit < 0:
            return Step([])
        queue = self._queue
        out = queue.take(queue.releasable(limit), self._acc, self._retext, self._now())
        if out:
            self.committed = True
        self.redaction_log += redactions
        return Step(out, redactions=redactions)

    def _hold(self, frames: list[Frame], texts: list[str], start: int) -> None:
        """Queue ``frames`` (none terminal), the first starting at ``start`` of the accumulated text."""
        push, now = self._queue.push, self._now()
        for frame, text in zip(frames, texts, strict=True):
            end = start + len(text)
            push(frame, start, end, False, now)
            start = end

    @property
    def live(self) -> bool:
        """No finish, error or tool call seen, not buffered, not tripped: ``push_texts`` may be used."""
        return self._live

    def _push_events(self, frame: Frame, events: tuple[Event, ...]) -> Step:
        if self.tripped:
            return Step([])
        if self.error is not None:
            self.error_frames.append(frame)
        start = len(self._acc)
        redactions: list[Trip] = []
        for event in events:
            if isinstance(event, TextDelta):
                trip = self._append(event.text, redactions)
                if trip:
                    return self._trip(trip)
            elif isinstance(event, ToolCallStart):
                self._holding_tools = True
                self._live = False
                self._tools[event.key] = ToolCall(event.call_id, event.name, "")
                self.tool_call_count = len(self._tools)
                self._tool_args[event.key] = []
            elif isinstance(event, ToolCallArgsDelta):
                self._tool_args.setdefault(event.key, []).append(event.fragment)
            elif isinstance(event, ToolCallEnd):
                call = self._tools.get(event.key)
                if call is not None:
                    call.arguments = "".join(self._tool_args.get(event.key, ()))
            elif isinstance(event, StreamError):
                if self.error is None:
                    self.error_frames.append(frame)
                    self.error_event = event
                self.error = event.message
                self._live = False
            elif isinstance(event, Finish):
                self.finish_reason = event.reason
                self._live = False
        return self._queued(frame, start, redactions)

    def _queued(self, frame: Frame, start: int, redactions: list[Trip]) -> Step:
        """A frame whose events were taken (text appended and checked, no trip): sent at once, or
        held with what it redacted applied, and what may now go released."""
        terminal = self.finish_reason is not None or frame.last or self.error is not None
        if terminal:
            self._live = False  # (``HeldFrames.push_release`` never sees a terminal frame held)
        end = len(self._acc)
        if not self._queue and not terminal and not redactions and end <= self._limit():
            # Nothing held before it and all of it releasable: it goes out without being queued.
            if self._on_release is not None and end > start:
                self._on_release(NO_WAIT)
            self.committed = True
            return Step([frame])
        self._queue.push(frame, start, end, terminal, self._now())
        self.redaction_log += redactions
        for r in redactions:
            self._apply_redaction(r)
        return Step(self._releasable(), redactions=redactions)

    def _append(self, text: str, redactions: list[Trip]) -> Trip | None:
        """Append ``text`` and check it, in pieces of at most ``CHECK_CHUNK`` characters: a check
        costs O(len(piece) + its window), so a whole unary body or a huge delta costs what the same
        text streamed would, never a scan per match over all of it."""
        if len(text) <= CHECK_CHUNK:  # a streamed delta: one piece
            acc, self._acc = self._acc, ""
            acc += text
            self._acc = acc
            return self._check(text, redactions)
        for at in range(0, len(text), CHECK_CHUNK):
            piece = text[at:at + CHECK_CHUNK]
            # Detach before appending: with the attribute cleared, the string has one owner and
            # CPython grows it in place instead of copying the whole message on every delta.
            acc, self._acc = self._acc, ""
            acc += piece
            self._acc = acc
            trip = self._check(piece, redactions)
            if trip:
                return trip
        return None

    def _check(self, delta: str, redactions: list[Trip]) -> Trip | None:
        if self._armed is None:
            return None
        trip = self._armed.check(self._acc, delta)
        if trip is None:
            return None
        return self._settle(trip, redactions)

    def _settle(self, trip: Trip | None, redactions: list[Trip], chars: int = 0) -> Trip | None:
        """After a check's trip: a log-only block is noted and the checks run again; each redaction
        is collected and the checks run again; the first block (or None) is what remains. ``chars``:
        the length of the text checked at once, when several deltas were (each may redact)."""
        assert self._armed is not None
        for _ in range(_MAX_REDACTIONS_PER_DELTA + chars):
            if trip is not None and self._logs(trip, self._armed):
                trip = self._armed.check(self._acc, "")
                continue
            if trip is None or not isinstance(trip.decision, Redact):
                return trip
            redactions.append(trip)
            trip = self._armed.check(self._acc, "")
        return trip

    def _logs(self, trip: Trip, armed: ArmedSet) -> bool:
        """A block of a log-only guardrail: noted, and that check disarmed for the rest of the stream."""
        if not isinstance(trip.decision, Block) or trip.guardrail_id not in self._log_only:
            return False
        self.logged.append(trip)
        armed.disarm(trip.guardrail_id)
        return True

    def end(self) -> Step:
        """Upstream ended. Runs the checks' ``finish``; releases what may go (not tool calls)."""
        if self.tripped:
            return Step([])
        for call_key, call in self._tools.items():
            if not call.arguments and self._tool_args.get(call_key):
                call.arguments = "".join(self._tool_args[call_key])
        redactions: list[Trip] = []
        if self._armed is not None:
            trip = self._armed.finish(self._acc)
            for _ in range(_MAX_REDACTIONS_PER_DELTA):
                if trip is not None and self._logs(trip, self._armed):
                    trip = self._armed.finish(self._acc)
                    continue
                if trip is None or not isinstance(trip.decision, Redact):
                    break
                redactions.append(trip)
                self._apply_redaction(trip)
                trip = self._armed.finish(self._acc)
            self.redaction_log += redactions
            if trip is not None:
                return self._trip(trip)
        trip = self._check_tool_arguments()
        if trip is not None:
            return self._trip(trip)
        return Step([], redactions=redactions)

    def _check_tool_arguments(self) -> Trip | None:
        """Tool-call names and arguments are text too. They are held until the message ends, so each
        call is checked whole, once. A redaction in them blocks (a call is released or acted on as a whole)."""
        if self._rearm is None:
            return None
        for call in self._tools.values():
            # The tool's name (an agent shows it, and records it in the conversation) with the raw
            # JSON text, and its decoded string values: "\u0041KIA..." is "AKIA..." to the tool.
            named = f"{call.name}\n{call.arguments}" if call.name else call.arguments
            for text in (named, decoded_text(call.arguments)):
                if not text:
                    continue
                rearm = for_call(self._rearm, call.name, call.arguments)
                armed = rearm()
                if not armed:
                    return None
                trip = tool_block(armed, text, self._log_only, self.logged, rearm)
                if trip is not None:
                    return trip
        return None


    def release_all(self, at_most: int | None = None) -> list[Frame]:
        """Everything still held, in order (after the driver has vetted the message); at most
        ``at_most`` frames per call when given (call until it returns none)."""
        if self.tripped:
            return []
        queue = self._queue
        count = len(queue) if at_most is None else min(at_most, len(queue))
        out = queue.take_all(count, self._acc, self._retext, self._now())
        self.committed = self.committed or bool(out)
        return out

    def hold_as_pushed(self) -> list[Frame]:
        """The frames held now, oldest first (as pushed, before any redaction); from now on every
        frame is kept as the object pushed (``ChoiceGuard`` keys lane rewrites by frame identity)."""
        return self._queue.frames(self._acc)

    def drop_held(self) -> None:
        self._queue.clear()

    # -- state -----------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return self._acc

    @property
    def pending_tool_chars(self) -> int:
        """Characters of tool-call arguments that ``end`` will check."""
        return sum(sum(map(len, fragments)) for fragments in self._tool_args.values())

    @property
    def held(self) -> bool:
        return bool(self._queue)

    def message(self) -> AssistantMessage:
        """The message as the client gets it: with the redactions applied (what the message checks
        and a judge or webhook are sent must not hold what the client was not shown)."""
        text = apply_redactions(self._acc, self.redaction_log) if self.redaction_log else self._acc
        return AssistantMessage(text=text, tool_calls=list(self._tools.values()), finish_reason=self.finish_reason)

    # -- internals -------------------------------------------------------------------------------
    def _trip(self, trip: Trip) -> Step:
        assert isinstance(trip.decision, Block)
        self.tripped = trip
        self._live = False
        self._queue.clear()
        return Step([], trip=trip)

    def _limit(self) -> int:
        """Text before this offset may be released (-1: nothing may, until ``release_all``)."""
        if self._buffered or self._holding_tools:
            return -1
        limit = len(self._acc) - self._holdback
        if self._armed is not None:
            limit = min(limit, self._armed.horizon(self._acc))
        return limit

    def _releasable(self) -> list[Frame]:
        limit = self._limit()
        if limit < 0:
            return []
        count = self._queue.releasable(limit)
        if not count:
            return []
        self.committed = True
        return self._queue.take(count, self._acc, self._retext, self._now())

    def _apply_redaction(self, trip: Trip) -> None:
        d = trip.decision
        assert isinstance(d, Redact)
        self._queue.redact(d.start, d.end, d.mask)


def apply_redactions(text: str, trips: list[Trip]) -> str:
    """``text`` with each redaction's span (offsets into it) replaced by its mask."""
    spans = sorted(((t.decision.start, t.decision.end, t.decision.mask) for t in trips
                    if isinstance(t.decision, Redact)), reverse=True)
    for start, end, mask in spans:
        text = text[:start] + mask + text[end:]
    return text


class ArmTools(Protocol):
    """Arms the stream checks for one tool call's texts; given the call (name, raw arguments), the
    guardrails whose ``allow_paths`` cover every file it writes are left out (``Arming.arm_tools``)."""

    def __call__(self, call: tuple[str, str] | None = None) -> ArmedSet | None: ...


def for_call(rearm: ArmTools, name: str, arguments: str) -> Callable[[], ArmedSet | None]:
    """``rearm`` for one call: every set it arms (a log-only trip's re-arm too) leaves out the same."""
    return lambda: rearm((name, arguments))


def tool_block(armed: ArmedSet, arguments: str, log_only: frozenset[str], logged: list[Trip],
               rearm: Callable[[], ArmedSet | None] | None) -> Trip | None:
    """The first block over one call's arguments. A log-only guardrail's block is noted in
    ``logged`` and the arguments checked again by a fresh set (``rearm``) without it (each check sees
    them once)."""
    skip: list[str] = []
    for _ in range(len(armed.ids) + 1):
        for gid in skip:
            armed.disarm(gid)
        if not armed:
            return None
        trip = _check_whole(armed, arguments)
        if trip is None or trip.guardrail_id not in log_only:
            return trip
        logged.append(trip)
        skip.append(trip.guardrail_id)
        fresh = rearm() if rearm is not None else None
        if fresh is None:
            return None
        armed = fresh
    return None


def _check_whole(armed: ArmedSet, text: str) -> Trip | None:
    """Check a complete text (tool arguments) as if it had streamed in ``CHECK_CHUNK`` pieces. A
    redaction blocks: a call is released or acted on as a whole, never rewritten per span, and what a
    ``redact`` guardrail finds in it (an email written into a file) must not reach the tool (as in
    any lane but the answer: ``proxy.core.choice_guard``)."""
    acc = ""
    for at in range(0, len(text), CHECK_CHUNK):
        piece = text[at:at + CHECK_CHUNK]
        acc += piece
        trip = armed.check(acc, piece)
        if trip is not None:
            return as_block(trip)
    trip = armed.finish(acc)
    return None if trip is None else as_block(trip)


def as_block(trip: Trip) -> Trip:
    """``trip`` where only a block is safe (text that is not rewritten per span): a redaction becomes
    a block of the same guardrail and reason."""
    d = trip.decision
    return trip if isinstance(d, Block) else Trip(trip.guardrail_id, Block(d.reason_code, rule=d.rule))
