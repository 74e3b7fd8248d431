"""The stream checks over a whole (non-streamed) answer, in one pass, without the per-lane guards.

A unary body is decoded into the same events a stream carries (``WireFormat.decode_events``), and
``ChoiceGuard`` could check them as one frame; but for choice 0 (its answer, any text beside it such
as reasoning, thinking, a refusal or an unread field's value, its tool calls and finish, and whole
texts) that machinery (a ``StreamGuard`` per lane with its hold-back queue, frame entries, frames)
holds nothing a whole answer needs. ``check_whole_answer`` makes the same check calls, in the same
order, with the same arguments, as ``ChoiceGuard`` with one frame:
- each ``WholeText`` with a freshly armed set for its ``what``, in event order, before any lane's
  text (a log-only block is noted and the text checked again without that guardrail; a redaction
  blocks; a text that passed once is not checked again);
- each lane's events, lanes in the order they first appear (tool calls and the finish belong to
  the answer's lane), each text delta in ``CHECK_CHUNK`` pieces (an empty delta is one empty piece)
  with the lane's one armed set, a redaction re-checked with an empty delta until the checks pass or
  block;
- each lane's ``finish``, the answer's lane first (``ChoiceGuard`` makes it at the start), the others
  in the order they appeared; then, for the answer's lane, each tool call's name with its arguments
  and their decoded strings, with a fresh set (a redaction there blocks).
Only the answer is redacted; a redaction in any other lane blocks (as ``ChoiceGuard`` with
``redact_lanes=False``). So the verdicts, redactions and log-only notes are ``ChoiceGuard``'s
(``tests/core/test_whole_answer.py`` checks it on drawn answers of all four APIs and drawn event mixes).
Any other shape (another choice, a lane end, output the decoder could not vet, an in-stream error)
returns None: the caller then runs ``ChoiceGuard`` (and counts it).

Cost: the checks' own work plus one pass over the events; nothing is held, no frame is built.
Before any of that, ``passes`` (``guardrails.stream.passes_complete``: each guardrail's whole-text
form, ``guardrails.seams.PassesWhole``, else its check alone) looks at each lane's complete text and
``passes_tools`` at each tool call's texts: when every check passes every text (the common case), no
check could trip, redact or log, so no set is armed, no lane kept, and the verdict is a plain pass
(``_passing_text``). A text that some check might act on takes the pass above, which decides which
trip wins and what is rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from guardrails.datamodel import (
    ANSWER,
    Event,
    Finish,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    WholeText,
)
from guardrails.decision import Block, Redact
from guardrails.stream import ArmedSet, Trip
from guardrails.tools.arguments import decoded_text
from proxy.core.choice_guard import ArmFor, first_whole_trip
from proxy.core.stream_guard import CHECK_CHUNK, ArmTools, as_block, for_call, tool_block

PassesFor = Callable[[str, Sequence[str]], bool]
"""Whether a lane's complete text (by channel, in pieces) passes every check armed for that lane
(``guardrails.stream.passes_complete``); False when one might not."""
ToolsPass = Callable[[Sequence[str]], bool]
"""Whether one of a tool call's texts (in pieces) passes every check armed for tool arguments
(``guardrails.stream.passes_complete``); False when one might not."""
MAX_REDACTIONS = 64
"""Re-checks after redactions per piece, as ``StreamGuard`` bounds them."""
_WHOLE_MEMO = 256
_WHOLE_MEMO_CHARS = 4096
"""Whole texts remembered as passed per answer, and the longest remembered (as ``ChoiceGuard``)."""


class WholeVerdict:
    """What the checks found in a whole answer. ``trip``: the block that stops it (None: it passes,
    with ``redactions`` applied to ``text``, choice 0's answer); ``logged``: blocks of log-only
    guardrails, in the order ``ChoiceGuard.logged`` reports them."""

    __slots__ = ("logged", "redactions", "text", "trip")

    def __init__(self, trip: Trip | None, redactions: list[Trip], logged: list[Trip], text: str) -> None:
        self.trip, self.redactions, self.logged, self.text = trip, redactions, logged, text


def single_answer(events: Sequence[Event]) -> bool:
    """Whether ``events`` hold only what ``check_whole_answer`` takes: choice 0's text (answer and
    any other channel), tool calls and finish, and whole texts."""
    for e in events:
        t = type(e)
        if t is TextDelta or t is ToolCallStart or t is ToolCallArgsDelta or t is ToolCallEnd or t is Finish:
            if e.choice:  # type: ignore[union-attr]
                return False
        elif t is not WholeText:
            return False
    return True


def check_whole_answer(events: Sequence[Event], arm: ArmFor, arm_tools: ArmTools,
                       log_only: frozenset[str], passes: PassesFor | None = None,
                       passes_tools: ToolsPass | None = None) -> WholeVerdict | None:
    """The checks over a whole answer's ``events``, or None when its shape needs ``ChoiceGuard``.
    ``passes`` / ``passes_tools``: the guardrails' whole-text forms for a lane and for a tool call's
    texts; when every text passes them, nothing is armed (``_passing_text``)."""
    if passes is not None and (text := _passing_text(events, passes, passes_tools)) is not None:
        return WholeVerdict(None, [], [], text)  # (``_passing_text`` takes single answers only)
    if not single_answer(events):
        return None
    return _Pass(arm, arm_tools, log_only).run(events)


def _passing_text(events: Sequence[Event], passes: PassesFor, passes_tools: ToolsPass | None) -> str | None:
    """The answer's text when ``events`` are a single answer (``single_answer``) whose every whole
    text, every lane's text and every tool call's texts pass every check whole (so no check armed for
    them could trip, redact or log: the verdict is a plain pass); None when they are not, or one might
    not (or a call's texts have no ``passes_tools`` to go by). One pass over the events decides the
    shape before any check runs."""
    answer: list[str] = []
    lanes: dict[str, list[str]] | None = None  # the other channels' pieces, in order (rare)
    wholes: list[WholeText] | None = None
    calls = False
    for e in events:
        t = type(e)
        if t is TextDelta:
            assert isinstance(e, TextDelta)
            if e.choice:
                return None
            text, channel = e.text, e.channel
            pieces = [text] if len(text) <= CHECK_CHUNK else _pieces(text)
            if channel == ANSWER:
                answer += pieces
            else:
                if lanes is None:
                    lanes = {}
                lanes.setdefault(channel, []).extend(pieces)
        elif t is Finish or t is ToolCallStart or t is ToolCallArgsDelta or t is ToolCallEnd:
            if e.choice:  # type: ignore[union-attr]
                return None
            calls = calls or t is not Finish  # a tool call's start, arguments or end
        elif t is WholeText:
            assert isinstance(e, WholeText)
            if wholes is None:
                wholes = []
            wholes.append(e)
        else:
            return None  # not a single answer
    if wholes is not None:
        for w in wholes:
            if not passes(w.what, _pieces(w.text) if w.text else []):  # (no check call for "": ``whole_text_trip``)
                return None
    if not passes(ANSWER, answer):
        return None
    if lanes is not None:
        for channel, pieces in lanes.items():
            if not passes(channel, pieces):
                return None
    if calls:
        if passes_tools is None:
            return None
        for text in tool_texts(events):
            if not passes_tools(_pieces(text)):
                return None
    return answer[0] if len(answer) == 1 else "".join(answer)


def _pieces(text: str) -> list[str]:
    """``text`` in the pieces the checks would see it in (``CHECK_CHUNK`` each)."""
    if len(text) <= CHECK_CHUNK:
        return [text]
    return [text[at:at + CHECK_CHUNK] for at in range(0, len(text), CHECK_CHUNK)]


class _Lane:
    """One channel's text and armed checks (what its ``StreamGuard`` would hold)."""

    __slots__ = ("armed", "channel", "logged", "redactions", "text")

    def __init__(self, channel: str, armed: ArmedSet | None) -> None:
        self.channel = channel
        self.armed = armed if armed else None
        self.text = ""
        self.redactions: list[Trip] = []
        self.logged: list[Trip] = []


class _Pass:
    """One answer's pass, in the order the module docstring gives."""

    __slots__ = ("_arm", "_arm_tools", "_events", "_log_only", "_whole_logged")

    def __init__(self, arm: ArmFor, arm_tools: ArmTools, log_only: frozenset[str]) -> None:
        self._arm, self._arm_tools, self._log_only = arm, arm_tools, log_only
        self._whole_logged: list[Trip] = []
        self._events: Sequence[Event] = ()

    def run(self, events: Sequence[Event]) -> WholeVerdict:
        self._events = events
        answer = _Lane(ANSWER, self._arm(ANSWER))
        lanes = {ANSWER: answer}
        trip = self._whole_texts(events)
        if trip is None:
            trip = self._push(events, lanes)
        if trip is None:
            for lane in lanes.values():
                if (trip := self._end(lane)) is not None:
                    break
        logged = self._whole_logged + [t for lane in lanes.values() for t in lane.logged]
        return WholeVerdict(trip, answer.redactions if trip is None else [], logged, answer.text)

    # -- whole texts ------------------------------------------------------------------------------
    def _whole_texts(self, events: Sequence[Event]) -> Trip | None:
        passed: set[tuple[str, str]] = set()
        for e in events:
            if type(e) is not WholeText:
                continue
            assert isinstance(e, WholeText)
            key = (e.what, e.text)
            if key in passed:
                continue
            if (trip := first_whole_trip(self._arm, e, self._log_only, self._whole_logged)) is not None:
                return trip
            if len(e.text) <= _WHOLE_MEMO_CHARS and len(passed) < _WHOLE_MEMO:
                passed.add(key)
        return None

    # -- the lanes' text --------------------------------------------------------------------------
    def _push(self, events: Sequence[Event], lanes: dict[str, _Lane]) -> Trip | None:
        by_lane: dict[str, list[Event]] = {}
        for e in events:
            t = type(e)
            if t is TextDelta:
                by_lane.setdefault(e.channel, []).append(e)  # type: ignore[union-attr]
            elif t is not WholeText:
                by_lane.setdefault(ANSWER, []).append(e)
        for channel, lane_events in by_lane.items():
            lane = lanes.get(channel)
            if lane is None:
                lane = lanes[channel] = _Lane(channel, self._arm(channel))
            if (trip := self._lane_events(lane, lane_events)) is not None:
                return trip
            if (trip := _unredactable(lane, lane.redactions)) is not None:
                return trip
        return None

    def _lane_events(self, lane: _Lane, events: list[Event]) -> Trip | None:
        for e in events:
            if type(e) is TextDelta:
                assert isinstance(e, TextDelta)
                if (trip := self._append(lane, e.text)) is not None:
                    return trip
        return None

    def _append(self, lane: _Lane, text: str) -> Trip | None:
        if len(text) <= CHECK_CHUNK:
            _grow(lane, text)
            return self._check(lane, text)
        for at in range(0, len(text), CHECK_CHUNK):
            piece = text[at:at + CHECK_CHUNK]
            _grow(lane, piece)
            if (trip := self._check(lane, piece)) is not None:
                return trip
        return None

    def _check(self, lane: _Lane, delta: str) -> Trip | None:
        armed = lane.armed
        if armed is None:
            return None
        trip = armed.check(lane.text, delta)
        if trip is None:
            return None
        for _ in range(MAX_REDACTIONS):
            if trip is not None and _logs(lane, trip, armed, self._log_only):
                trip = armed.check(lane.text, "")
                continue
            if trip is None or not isinstance(trip.decision, Redact):
                return trip
            lane.redactions.append(trip)
            trip = armed.check(lane.text, "")
        return trip

    def _end(self, lane: _Lane) -> Trip | None:
        """The lane's finish checks, then (the answer's lane) each tool call's arguments."""
        armed = lane.armed
        before = len(lane.redactions)
        if armed is not None:
            trip = armed.finish(lane.text)
            for _ in range(MAX_REDACTIONS):
                if trip is not None and _logs(lane, trip, armed, self._log_only):
                    trip = armed.finish(lane.text)
                    continue
                if trip is None or not isinstance(trip.decision, Redact):
                    break
                lane.redactions.append(trip)
                trip = armed.finish(lane.text)
            if trip is not None:
                return trip
        if lane.channel == ANSWER and (trip := self._tool_calls(lane)) is not None:
            return trip
        return _unredactable(lane, lane.redactions[before:])

    # -- tool calls -------------------------------------------------------------------------------
    def _tool_calls(self, lane: _Lane) -> Trip | None:
        """Each call's texts (``tool_texts``), as ``StreamGuard._check_tool_arguments`` checks them."""
        for name, arguments, texts in tool_calls(self._events):
            rearm = for_call(self._arm_tools, name, arguments)
            for text in texts:
                armed = rearm()
                if not armed:
                    return None
                if (trip := tool_block(armed, text, self._log_only, lane.logged, rearm)) is not None:
                    return trip
        return None


def tool_texts(events: Sequence[Event]) -> list[str]:
    """Every text of ``tool_calls``, in order."""
    return [text for _, _, texts in tool_calls(events) for text in texts]


def tool_calls(events: Sequence[Event]) -> list[tuple[str, str, list[str]]]:
    """(name, raw arguments, texts) of choice 0's calls. The texts are what the tool checks read of each, in order: its name with its raw
    arguments, then its decoded string values (empty texts left out). A call is keyed by the order it
    began in; a new start of a key begins it again; its arguments are the fragments since its start,
    joined at its end (or at the answer's end, for a call that has none)."""
    calls: dict[str, str] = {}  # key: name, in the order the calls began
    args: dict[str, list[str]] = {}
    joined: dict[str, str] = {}
    for e in events:
        t = type(e)
        if t is ToolCallStart:
            assert isinstance(e, ToolCallStart)
            calls[e.key] = e.name
            joined.pop(e.key, None)
            args[e.key] = []
        elif t is ToolCallArgsDelta:
            assert isinstance(e, ToolCallArgsDelta)
            args.setdefault(e.key, []).append(e.fragment)
        elif t is ToolCallEnd:
            assert isinstance(e, ToolCallEnd)
            if e.key in calls:
                joined[e.key] = "".join(args.get(e.key, ()))
    out: list[tuple[str, str, list[str]]] = []
    for key, name in calls.items():
        arguments = joined.get(key) or "".join(args.get(key, ()))
        out.append((name, arguments, [text for text in (f"{name}\n{arguments}" if name else arguments,
                                                        decoded_text(arguments)) if text]))
    return out


def _grow(lane: _Lane, piece: str) -> None:
    """Append ``piece`` to the lane's text in place: detached from the lane first, the string has one
    owner and CPython grows it instead of copying it whole (a 20 MB answer in 1,024-character pieces
    would otherwise copy gigabytes)."""
    text, lane.text = lane.text, ""
    text += piece
    lane.text = text


def _logs(lane: _Lane, trip: Trip, armed: ArmedSet, log_only: frozenset[str]) -> bool:
    """A block of a log-only guardrail: noted, and that check disarmed for the rest of the lane."""
    if not isinstance(trip.decision, Block) or trip.guardrail_id not in log_only:
        return False
    lane.logged.append(trip)
    armed.disarm(trip.guardrail_id)
    return True


def _unredactable(lane: _Lane, redactions: list[Trip]) -> Trip | None:
    """A redaction outside the answer, as a block (only the answer's text is rewritten)."""
    if not redactions or lane.channel == ANSWER:
        return None
    return as_block(redactions[0])
