"""``ChoiceGuard``: the stream guard over every lane of an answer, one ``StreamGuard`` per lane.

A *lane* is one run of client-visible text: ``(choice, channel)``, e.g. the answer of choice 1 or
the thinking of choice 0 (``proxy.events.TextDelta``). Each lane has its own ``StreamGuard``
(accumulated text, armed checks, hold-back, tool calls of that choice), so a secret split across two
deltas of one lane is caught even when deltas of other lanes come between them, and text of one lane
never hides or triggers a match in another.

Frames keep one global order. A frame goes out when every lane it touches has released it (each lane
guard releases its frames in order, so the guard keeps a queue of frame *entries* per lane); a frame
that touches no lane waits only for the frames before it. When a lane redacts, the frame is rebuilt
once with every rewritten lane's text (``retext(frame, {lane: text})``).

Fast path: until a frame touches anything but choice 0's answer, the guard is the single answer lane's
``StreamGuard`` plus a counter (clean single-choice traffic costs one type check per event more).
Whole texts (a comment, an unread field's name) are checked on the spot and keep the fast path.

Other events:
- ``WholeText`` (a citation, text that a ``done`` event carries but no delta did) is checked whole
  with a freshly armed set before its frame is queued; any trip blocks.
- ``LaneEnd`` ends a lane: its finish checks run and its held tail is released. Text for an ended lane
  fails closed (a guard that let it through would check it without the text before it).
- ``Unvetted`` fails closed: a trip of the built-in ``COVERAGE_ID`` guardrail (``UNVETTED``).
- Only the answer lanes redact; a redaction elsewhere (reasoning, refusal, ...) blocks instead: the
  frames that repeat those texts (``done`` events, signatures) are not rewritten per span.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from guardrails.datamodel import (
    ANSWER,
    PRIMARY,
    AssistantMessage,
    Event,
    Finish,
    Frame,
    Lane,
    LaneEnd,
    StreamError,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unvetted,
    WholeText,
)
from guardrails.decision import Block
from guardrails.stream import ArmedSet, Trip
from proxy.core.holdback import Waits
from proxy.core.stream_guard import CHECK_CHUNK, ArmTools, Step, StreamGuard, as_block, tool_block

COVERAGE_ID = "guardproxy-coverage"
"""The built-in guardrail id of fail-closed decoding (``/metrics``, audit log, error bodies)."""
UNVETTED = "unvetted_output"

Retext = Callable[[Frame, dict[Lane, str]], bytes]
ArmFor = Callable[[str], ArmedSet | None]
"""Arms a fresh set of checks for a channel (``"text"``, ``"reasoning"``, ...)."""

_CHOICE_EVENTS = (ToolCallStart, ToolCallArgsDelta, ToolCallEnd, Finish)
_WHOLE_MEMO = 256
_WHOLE_MEMO_CHARS = 4096
"""Whole texts remembered as passed per answer, and the longest remembered: bound the memory an
upstream can make the guard hold (256 x 4 KiB)."""


def unvetted_trip(what: str) -> Trip:
    return Trip(COVERAGE_ID, Block(UNVETTED, rationale=f"The upstream sent output the proxy cannot check ({what})."))


@dataclass(slots=True)
class _Entry:
    frame: Frame
    subs: list[Frame] = field(default_factory=list)
    """The per-lane views of ``frame`` handed to the lane guards (their ids key the retexts)."""
    waiting: int = 0


class _Retexts:
    """What the lane guards' ``retext`` callbacks share with their ``ChoiceGuard``. They hold this, not
    the guard: a callback pointing back at the guard that (through its lane guards) holds it would be
    a reference cycle, and a finished request's objects would wait for the cycle collector."""

    __slots__ = ("multi", "pending", "retext")

    def __init__(self, retext: Retext | None) -> None:
        self.retext = retext
        self.multi = False
        self.pending: dict[int, dict[Lane, str]] = {}
        """Rewritten lane texts by frame id, composed when the frame goes out (several lanes)."""

    def for_lane(self, lane: Lane) -> Callable[[Frame, str], bytes]:
        def retext(frame: Frame, text: str) -> bytes:
            if not self.multi and self.retext is not None:
                return self.retext(frame, {lane: text})
            self.pending.setdefault(id(frame), {})[lane] = text  # composed when the frame goes out
            return frame.raw

        return retext


_MULTI, _PRIMARY, _PRIMARY_AND_WHOLE = 0, 1, 2


def _primary_only(events: tuple[Event, ...]) -> int:
    """``_PRIMARY``: only choice 0's answer; ``_PRIMARY_AND_WHOLE``: that and whole texts (a comment,
    an unread field's name); ``_MULTI``: anything else."""
    found = _PRIMARY
    for e in events:
        t = type(e)
        if t is TextDelta:
            if e.choice or e.channel != ANSWER:  # type: ignore[union-attr]
                return _MULTI
        elif t in _CHOICE_EVENTS:
            if e.choice:  # type: ignore[union-attr]
                return _MULTI
        elif t is WholeText:
            found = _PRIMARY_AND_WHOLE
        elif t is not StreamError:
            return _MULTI
    return found


class ChoiceGuard:
    """Same interface as ``StreamGuard`` (push / end / release_all / message ...), over all lanes."""

    def __init__(self, arm: ArmFor, *, holdback: int, buffered: bool = False, retext: Retext | None = None,
                 rearm: ArmTools | None = None, redact_lanes: bool = True,
                 log_only: frozenset[str] = frozenset(),
                 clock: Callable[[], float] | None = None, on_release: Waits | None = None) -> None:
        self._arm, self._holdback, self._buffered = arm, holdback, buffered
        self._log_only = log_only
        """Guardrails whose block is only recorded (``StreamGuard.log_only``), in every lane."""
        self._whole_logged: list[Trip] = []
        self._whole_passed: set[tuple[str, str]] | None = None
        """Whole texts checked and passed in this answer (``_check_whole``); made by the first one
        (an empty set is 216 bytes, and most streams carry no whole text)."""
        """Log-only blocks over whole texts (``WholeText``), not yet reported."""
        self._retext, self._rearm = retext, rearm
        self._clock, self._on_release = clock, on_release
        """Passed to each lane's guard: its text frames' time in that guard, for ``/metrics``."""
        self._redact_lanes = redact_lanes
        """False: only choice 0's answer may redact (unary bodies, rebuilt by ``retext_body``)."""
        self._multi = False
        self._retexts = _Retexts(retext)
        self._primary = self._new_guard(PRIMARY)
        self._lanes: dict[Lane, StreamGuard] = {PRIMARY: self._primary}
        self._closed: list[StreamGuard] = []
        self._ended: frozenset[Lane] = frozenset()  # the shared empty one until a lane ends
        self._queue: list[_Entry] = []  # (entries exist only with several lanes; a deque costs 600 bytes)
        self._fifo: dict[int, deque[_Entry]] = {}
        self.tripped: Trip | None = None
        self.redaction_log: list[Trip] = []
        self._sent = False
        self._single = True
        """One lane and not tripped: a frame of one answer delta of choice 0 goes straight to it."""
        self.tool_call_count = 0
        """Tool calls begun so far, over every lane (bounded by ``GUARDPROXY_MAX_TOOL_CALLS``; the
        driver asks after every upstream read): counted after each frame that is not a lone text delta."""

    def _new_guard(self, lane: Lane) -> StreamGuard:
        guard = StreamGuard(self._arm(lane[1]), holdback=self._holdback, buffered=self._buffered,
                            retext=self._retexts.for_lane(lane), rearm=self._rearm if lane[1] == ANSWER else None,
                            log_only=self._log_only, clock=self._clock, on_release=self._on_release,
                            replay=partial(self._arm, lane[1]))
        return guard

    @property
    def pending_tool_chars(self) -> int:
        """Characters of tool-call arguments that ``end`` will check, over every lane."""
        if not self._multi:
            return self._primary.pending_tool_chars
        return sum(g.pending_tool_chars for g in [*self._lanes.values(), *self._closed])

    # -- input -----------------------------------------------------------------------------------
    def push(self, frame: Frame) -> Step:
        events = frame.events
        if self._single and len(events) == 1 and type(e := events[0]) is TextDelta and not e.choice \
                and e.channel == ANSWER:
            # One delta of choice 0's answer (nearly every frame): ``_push_single``, inline.
            step = self._primary.push_text(frame, e.text)
            if step.trip is not None:
                return self._trip(step.trip)
            if step.redactions:
                self.redaction_log += step.redactions
            return step
        if self.tripped:
            return Step([])
        if not self._multi:
            kind = _primary_only(events)
            if kind == _PRIMARY:
                step = self._push_single(frame)
            elif kind == _PRIMARY_AND_WHOLE:
                step = self._push_single_with_whole(frame)
            else:
                self._go_multi()
                step = self._push_multi(frame)
        else:
            step = self._push_multi(frame)
        self.tool_call_count = self._tool_calls()
        return step

    def push_from(self, frames: list[Frame], at: int) -> tuple[Step, int]:
        """``push(frames[at])``, and the index of the next frame to push. When ``frames[at]`` and the
        frames after it (one upstream read's) are lone deltas of choice 0's answer, readable and not
        the stream's last, on a single live lane, as many of them as fit in ``CHECK_CHUNK``
        characters go in one step with their checks run once (``StreamGuard.push_texts``)."""
        frame = frames[at]
        primary = self._primary
        if at + 1 == len(frames) or not (self._single and primary.live):  # (a paced stream: one a read)
            return self.push(frame), at + 1
        texts: list[str] = []
        size, stop = 0, len(frames)
        nxt = at
        while nxt < stop:
            f = frames[nxt]
            events = f.events
            if len(events) != 1 or type(e := events[0]) is not TextDelta or e.choice or e.channel != ANSWER \
                    or f.last or f.unreadable:
                break
            size += len(e.text)
            if size > CHECK_CHUNK:
                break
            texts.append(e.text)
            nxt += 1
        if nxt - at < 2:
            return self.push(frame), at + 1
        step = primary.push_texts(frames[at:nxt], texts, "".join(texts))
        if step.redactions:
            self.redaction_log += step.redactions
        if step.trip is not None:  # (with what went out before it: ``StreamGuard.push_texts``)
            return Step(step.send, self._trip(step.trip).trip, step.redactions), nxt
        return step, nxt

    def _push_single_with_whole(self, frame: Frame) -> Step:
        """A single-lane frame that also carries whole texts: those are checked first, then the frame
        goes on without them (a comment or an unread field needs no lane of its own)."""
        for e in frame.events:
            if isinstance(e, WholeText) and (trip := self._check_whole(e)) is not None:
                return self._trip(trip)
        events = tuple(e for e in frame.events if not isinstance(e, WholeText))
        return self._push_single(Frame(frame.raw, events, last=frame.last, unreadable=frame.unreadable))

    def _push_single(self, frame: Frame) -> Step:
        step = self._primary.push(frame)
        if step.trip is not None:
            return self._trip(step.trip)
        if step.redactions:
            self.redaction_log += step.redactions
        return step  # (what it sends, the primary's ``committed`` records: see ``committed``)

    def _go_multi(self) -> None:
        """From here on frames go through entries: the primary's held frames become the first ones."""
        self._multi = self._retexts.multi = True
        self._single = False
        self._sent = self._sent or self._primary.committed  # from here on, frames go out through ``_flush``
        fifo = self._fifo.setdefault(id(self._primary), deque())
        for frame in self._primary.hold_as_pushed():
            entry = _Entry(frame, [frame], 1)
            self._queue.append(entry)
            fifo.append(entry)

    def _push_multi(self, frame: Frame) -> Step:
        by_lane: dict[Lane, list[Event]] = {}
        ends: list[Lane] = []
        for e in frame.events:
            if isinstance(e, TextDelta):
                lane: Lane = (e.choice, e.channel)
            elif isinstance(e, _CHOICE_EVENTS):
                lane = (e.choice, ANSWER)
            elif isinstance(e, StreamError):
                lane = PRIMARY
            elif isinstance(e, WholeText):
                if (trip := self._check_whole(e)) is not None:
                    return self._trip(trip)
                continue
            elif isinstance(e, LaneEnd):
                ends.append((e.choice, e.channel))
                continue
            else:
                assert isinstance(e, Unvetted)
                return self._trip(unvetted_trip(e.what))
            by_lane.setdefault(lane, []).append(e)
        if frame.last:  # the terminator waits with the primary lane's finish for the verdict
            by_lane.setdefault(PRIMARY, [])
        entry = _Entry(frame)
        self._queue.append(entry)
        redactions: list[Trip] = []
        for lane, events in by_lane.items():
            guard = self._lane(lane)
            if guard is None:
                return self._trip(unvetted_trip(f"{lane[1]} text after that part ended"))
            sub = Frame(frame.raw, tuple(events), last=frame.last and lane == PRIMARY)
            entry.subs.append(sub)
            entry.waiting += 1
            self._fifo.setdefault(id(guard), deque()).append(entry)
            step = guard.push(sub)
            if (trip := step.trip or self._unredactable(lane, step.redactions)) is not None:
                return self._trip(trip)
            redactions += step.redactions
            self._released(guard, step.send)
        for lane in ends:
            if (trip := self._end_lane(lane, redactions)) is not None:
                return self._trip(trip)
        self.redaction_log += redactions
        return Step(self._flush(), redactions=redactions)

    def _lane(self, lane: Lane) -> StreamGuard | None:
        guard = self._lanes.get(lane)
        if guard is None and lane not in self._ended:
            guard = self._lanes[lane] = self._new_guard(lane)
        return guard

    def _end_lane(self, lane: Lane, redactions: list[Trip]) -> Trip | None:
        self._ended |= {lane}
        guard = self._lanes.pop(lane, None)
        if guard is None:
            return None
        step = guard.end()
        if (trip := step.trip or self._unredactable(lane, step.redactions)) is not None:
            return trip
        redactions += step.redactions
        self._closed.append(guard)
        if not self._buffered:
            self._released(guard, guard.release_all())
        return None

    def _unredactable(self, lane: Lane, redactions: list[Trip]) -> Trip | None:
        """A redaction where only a block is safe (see the module docstring), as that block."""
        if not redactions or (lane[1] == ANSWER and (self._redact_lanes or lane == PRIMARY)):
            return None
        return as_block(redactions[0])

    def _check_whole(self, e: WholeText) -> Trip | None:
        """The first trip over a whole text (a redaction blocks: the frame is not rewritten per span).
        A log-only guardrail's block is noted in ``logged`` and the text checked again by a fresh set
        without it, as a streamed text would be (each check sees the text once). A text that passed
        once passes again (a fresh set each time): repeats (a keep-alive comment, the same unread
        field's name in every chunk) are checked once per answer."""
        key, passed = (e.what, e.text), self._whole_passed
        if passed is not None and key in passed:
            return None
        trip = first_whole_trip(self._arm, e, self._log_only, self._whole_logged)
        if trip is None and len(e.text) <= _WHOLE_MEMO_CHARS:
            if passed is None:
                passed = self._whole_passed = set()
            if len(passed) < _WHOLE_MEMO:
                passed.add(key)
        return trip

    def end(self) -> Step:
        """Upstream ended: every open lane's finish checks and tool-argument checks."""
        if self.tripped:
            return Step([])
        redactions: list[Trip] = []
        for lane, guard in list(self._lanes.items()):
            step = guard.end()
            if (trip := step.trip or self._unredactable(lane, step.redactions)) is not None:
                return self._trip(trip)
            redactions += step.redactions
        self.redaction_log += redactions
        return Step([], redactions=redactions)

    def release_all(self, at_most: int | None = None) -> list[Frame]:
        """Everything still held, in order (after the driver has vetted the message); with one lane,
        at most ``at_most`` frames per call (call until it returns none)."""
        if self.tripped:
            return []
        if not self._multi:
            out = self._primary.release_all(at_most)
        else:
            for guard in (*self._lanes.values(), *self._closed):
                self._released(guard, guard.release_all())
            out = self._flush(force=True)
        self._sent = self._sent or bool(out)
        return out

    def _tool_calls(self) -> int:
        if not self._multi:
            return self._primary.tool_call_count
        return sum(g.tool_call_count for g in (*self._lanes.values(), *self._closed))

    def drop_held(self) -> None:
        for guard in (*self._lanes.values(), *self._closed):
            guard.drop_held()
        self._queue.clear()
        self._fifo.clear()

    # -- release ---------------------------------------------------------------------------------
    def _released(self, guard: StreamGuard, frames: list[Frame]) -> None:
        fifo = self._fifo.get(id(guard))
        for _ in frames:
            assert fifo
            fifo.popleft().waiting -= 1

    def _flush(self, force: bool = False) -> list[Frame]:
        if self._buffered and not force:
            return []
        out: list[Frame] = []
        queue = self._queue
        done = 0
        while done < len(queue) and queue[done].waiting == 0:
            out.append(self._render(queue[done]))
            done += 1
        del queue[:done]
        if out:
            self._sent = True
        return out

    def _render(self, entry: _Entry) -> Frame:
        texts: dict[Lane, str] = {}
        for sub in entry.subs:
            texts.update(self._retexts.pending.pop(id(sub), {}))
        if not texts or self._retext is None:
            return entry.frame
        events: list[Event] = []
        seen: set[Lane] = set()
        for e in entry.frame.events:  # a rewritten lane keeps one delta, carrying its whole new text
            if isinstance(e, TextDelta) and (lane := (e.choice, e.channel)) in texts:
                if lane in seen:
                    continue
                seen.add(lane)
                e = TextDelta(texts[lane], e.choice, e.channel)
            events.append(e)
        return Frame(self._retext(entry.frame, texts), tuple(events))

    def _trip(self, trip: Trip) -> Step:
        self.tripped = trip
        self._single = False
        self.drop_held()
        return Step([], trip=trip)

    # -- state -----------------------------------------------------------------------------------
    @property
    def committed(self) -> bool:
        """Whether any frame was handed out. With one lane, the primary guard's own record (its frames
        go out as it releases them); with several, what ``_flush`` released."""
        return self._sent or (not self._multi and self._primary.committed)

    @property
    def text(self) -> str:
        return self._primary.text

    @property
    def held(self) -> bool:
        return bool(self._queue) or self._primary.held

    @property
    def logged(self) -> list[Trip]:
        """Blocks of log-only guardrails not yet reported, from every lane (reading clears them)."""
        if not self._multi and not self._whole_logged and not self._primary.logged:
            return []  # asked after every frame: nearly always nothing
        out, self._whole_logged = self._whole_logged, []
        for guard in (*self._lanes.values(), *self._closed):
            out += guard.logged
            guard.logged.clear()
        return out

    @property
    def error(self) -> str | None:
        """The upstream's in-stream error, if it sent one (StreamError events go to the primary lane)."""
        return self._primary.error

    @property
    def error_event(self) -> StreamError | None:
        return self._primary.error_event

    def error_frames(self) -> list[Frame] | None:
        """The frames that carried the upstream's error and the stream's end, as received, when they
        carry nothing else (the error's own fields, no text, no tool call) and one lane saw them
        all; else None."""
        frames = self._primary.error_frames
        event = self._primary.error_event
        if self._multi or not frames or event is None or not event.bare:
            return None
        for frame in frames:
            if frame.unreadable or not all(type(e) in (StreamError, Finish) for e in frame.events):
                return None
        return frames

    def check_error_text(self, text: str) -> Trip | None:
        """The upstream error's free text, checked whole by a fresh set of the armed checks, as any
        model text is (it reaches the client's screen and logs): the first block, or None."""
        def arm() -> ArmedSet | None:
            return self._arm(ANSWER)

        armed = arm()
        if not armed:
            return None
        return tool_block(armed, text, self._log_only, self._whole_logged, arm)

    @property
    def finish_reason(self) -> str | None:
        return self._primary.finish_reason

    def message(self) -> AssistantMessage:
        """Choice 0's answer: its text, tool calls and finish."""
        return self._primary.message()

    def messages(self) -> dict[int, AssistantMessage]:
        """Every choice's answer, by choice index (0 always present)."""
        return {lane[0]: guard.message() for lane, guard in self._lanes.items() if lane[1] == ANSWER}


def first_whole_trip(arm: ArmFor, e: WholeText, log_only: frozenset[str], logged: list[Trip]) -> Trip | None:
    """The first trip over a whole text, by a freshly armed set for ``e.what`` (a redaction blocks:
    a whole text is not rewritten per span). A log-only guardrail's block is noted in ``logged`` and
    the text checked again by a fresh set without it, as a streamed text would be (each check sees
    the text once)."""
    skip: list[str] = []
    for _ in range(len(log_only) + 1):
        armed = arm(e.what)
        for gid in skip:
            if armed:
                armed.disarm(gid)
        if not armed:
            return None
        trip = whole_text_trip(armed, e.text)
        if trip is None:
            return None
        if isinstance(trip.decision, Block) and trip.guardrail_id in log_only:
            logged.append(trip)
            skip.append(trip.guardrail_id)
            continue
        if isinstance(trip.decision, Block):
            return trip
        return Trip(trip.guardrail_id, Block(trip.decision.reason_code))
    return None


def whole_text_trip(armed: ArmedSet, text: str) -> Trip | None:
    """The first trip over ``text`` checked as if it had streamed in ``CHECK_CHUNK`` pieces: each
    check costs O(len(text) + its window), never a scan per match over all of it."""
    acc = ""
    for at in range(0, len(text), CHECK_CHUNK):
        piece = text[at:at + CHECK_CHUNK]
        acc += piece
        trip = armed.check(acc, piece)
        if trip is not None:
            return trip
    return armed.finish(acc)
