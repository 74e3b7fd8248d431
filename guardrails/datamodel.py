"""The one internal model of a model's output, shared by every wire format.

Each wire module (``proxy/wire/*``) turns its provider's frames into these events and nothing else
parses provider JSON. The stream pipeline and the guardrails only ever see these types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, overload

ANSWER = "text"
"""The channel of the answer itself; every other channel is text shown beside it."""
Lane = tuple[int, str]
"""``(choice, channel)``: one run of client-visible text, accumulated and checked on its own."""
PRIMARY: Lane = (0, ANSWER)


@dataclass(frozen=True, slots=True, init=False)
class TextDelta:
    """Output text a client can show, in arrival order, in one *lane*: ``(choice, channel)``.

    ``channel`` is ``"text"`` for the answer; others are what a client renders beside it, each
    accumulated and checked on its own: ``"reasoning"`` (thinking, reasoning summaries),
    ``"refusal"``, ``"transcript"`` (audio), or a wire module's own name for one block of them
    (e.g. ``"thinking#2"``). Only the answer lane is the message's ``text``."""

    text: str
    choice: int = 0
    """The choice / candidate index (``n``, ``candidateCount``)."""
    channel: str = ANSWER
    kind: ClassVar[Literal["text"]] = "text"

    def __init__(self, text: str, choice: int = 0, channel: str = ANSWER) -> None:
        # The generated frozen __init__, through each slot's own setter (see ``_SET_TEXT``).
        _SET_TEXT(self, text)
        _SET_CHOICE(self, choice)
        _SET_CHANNEL(self, channel)


@dataclass(frozen=True, slots=True)
class WholeText:
    """A complete piece of client-visible text that arrives at once (a citation, an annotation, text
    that a ``done`` event carries but no delta did): checked whole on arrival, never redacted."""

    text: str
    choice: int = 0
    what: str = "text"
    kind: ClassVar[Literal["whole"]] = "whole"


@dataclass(frozen=True, slots=True)
class LaneEnd:
    """The lane ``(choice, channel)`` is complete (a thinking block stopped, a reasoning item is done):
    its tail can be checked and released. Text for it after this fails closed."""

    choice: int
    channel: str
    kind: ClassVar[Literal["lane_end"]] = "lane_end"


@dataclass(frozen=True, slots=True)
class Unvetted:
    """Output the decoder cannot vet (an unknown field or shape that carries something the client
    may render): the answer fails closed with the API's error. ``what`` names the field, never its
    content."""

    what: str
    kind: ClassVar[Literal["unvetted"]] = "unvetted"


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A tool call begins. ``key`` identifies it within the message (index, item id, block index)."""

    key: str
    call_id: str
    name: str
    choice: int = 0
    kind: ClassVar[Literal["tool_start"]] = "tool_start"


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    """A fragment of a tool call's JSON arguments (concatenate per ``key``)."""

    key: str
    fragment: str
    choice: int = 0
    kind: ClassVar[Literal["tool_args"]] = "tool_args"


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """The tool call ``key`` is complete: its arguments are final."""

    key: str
    choice: int = 0
    kind: ClassVar[Literal["tool_end"]] = "tool_end"


@dataclass(frozen=True, slots=True)
class Finish:
    """The message ended. ``reason`` is the provider's own value (``stop``, ``end_turn``, ``STOP``...)."""

    reason: str
    choice: int = 0
    kind: ClassVar[Literal["finish"]] = "finish"


@dataclass(frozen=True, slots=True)
class StreamError:
    """The upstream reported an error inside the stream."""

    message: str
    bare: bool = field(default=False, compare=False)
    """The frame is this error and nothing else: every field is one of the API's error fields, so
    relaying the frame as received shows the client nothing but the error."""
    others: tuple[str, ...] = field(default=(), compare=False)
    """The error object's other strings (type, code, status, details): checked with ``message``."""
    kind: ClassVar[Literal["error"]] = "error"


Event = (TextDelta | WholeText | LaneEnd | Unvetted | ToolCallStart | ToolCallArgsDelta | ToolCallEnd | Finish
         | StreamError)


@dataclass(frozen=True, slots=True, init=False)
class Frame:
    """One upstream frame: its exact bytes (relayed untouched when nothing acts) and what it means."""

    raw: bytes
    events: tuple[Event, ...] = ()
    last: bool = False
    """The stream's terminator (``[DONE]``, ``message_stop``, a JSON array's ``]``): held, like the
    finish, until the message has been vetted."""
    unreadable: bool = False
    """The codec could not read it (not JSON, not the API's shape): the answer fails closed."""

    def __init__(self, raw: bytes, events: tuple[Event, ...] = (), last: bool = False,
                 unreadable: bool = False) -> None:
        # The generated frozen __init__, through each slot's own setter (see ``_SET_TEXT``).
        _SET_RAW(self, raw)
        _SET_EVENTS(self, events)
        _SET_LAST(self, last)
        _SET_UNREADABLE(self, unreadable)

    @property
    def text(self) -> str:
        """The answer text of choice 0 in this frame."""
        return "".join(e.text for e in self.events
                       if isinstance(e, TextDelta) and e.choice == 0 and e.channel == ANSWER)


# A frozen dataclass's generated __init__ sets each field with object.__setattr__, which looks the
# name up in the class for every field: about 0.9 us for a TextDelta, 1.2 us for a Frame, both made
# for every streamed delta. The slots' own setters (member descriptors) store the same values
# without that lookup, in less than half the time; the classes stay frozen (assignment after
# __init__ still raises) and keep their generated eq, hash and repr.
_SET_TEXT = TextDelta.__dict__["text"].__set__
_SET_CHOICE = TextDelta.__dict__["choice"].__set__
_SET_CHANNEL = TextDelta.__dict__["channel"].__set__
_SET_RAW = Frame.__dict__["raw"].__set__
_SET_EVENTS = Frame.__dict__["events"].__set__
_SET_LAST = Frame.__dict__["last"].__set__
_SET_UNREADABLE = Frame.__dict__["unreadable"].__set__


@dataclass(slots=True)
class ToolCall:
    """A complete tool call. ``arguments`` is the JSON text of the arguments (may be invalid JSON)."""

    call_id: str
    name: str
    arguments: str


@dataclass(slots=True)
class AssistantMessage:
    """A finished (or, while streaming, partial) assistant message."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    annotations: list[str] = field(default_factory=list)
    """Client-visible citation text (urls, titles) that renders beside the message."""
    provider_parts: list[dict[str, Any]] = field(default_factory=list)
    """Provider-specific blocks the wire module needs to rebuild this turn faithfully (e.g. Anthropic's
    signed thinking blocks, Gemini's thought signatures), in that provider's own JSON shape; opaque to
    everything else, which must neither read nor change them."""
    state_id: str = ""
    """The id under which the upstream stores this answer for a later request to name (a Responses
    answer's ``id``, read from a whole body); "" when there is none."""


@dataclass(frozen=True, slots=True)
class HistoryToolCall:
    """A tool call from the request's own history, with the outcome of its result when one followed."""

    call_id: str
    name: str
    arguments: str
    result_ok: bool | None
    """True when a successful result followed, False when the result was an error, None when none."""


class LazyHistory(Sequence[HistoryToolCall]):
    """The request's tool-call history, folded from its messages on first use. Only the tool rules read
    it, so a policy without ``[tools]`` never pays for a fold (about 2 µs per turn: a 200-turn agent
    conversation would cost 0.4 ms on every request; ``python -m bench.history_fold``)."""

    __slots__ = ("_calls", "_fold")

    def __init__(self, fold: Callable[[], list[HistoryToolCall]]) -> None:
        self._fold: Callable[[], list[HistoryToolCall]] | None = fold
        self._calls: list[HistoryToolCall] = []

    def _folded(self) -> list[HistoryToolCall]:
        if self._fold is not None:
            self._calls, self._fold = self._fold(), None
        return self._calls

    @overload
    def __getitem__(self, index: int) -> HistoryToolCall: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[HistoryToolCall]: ...
    def __getitem__(self, index: int | slice) -> HistoryToolCall | Sequence[HistoryToolCall]:
        return self._folded()[index]

    def __len__(self) -> int:
        return len(self._folded())

    def __iter__(self) -> Iterator[HistoryToolCall]:
        return iter(self._folded())

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or another history) of the same calls."""
        if isinstance(other, LazyHistory):
            other = other._folded()
        return self._folded() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyHistory({self._folded()!r})"


@dataclass(slots=True)
class RequestView:
    """What the guards need to know about a client request, decoded once by its wire module."""

    model: str
    stream: bool
    system_prompt: str = ""
    last_user_text: str = ""
    history: Sequence[HistoryToolCall] = field(default_factory=list)
    """Earlier tool calls with their outcomes (a ``LazyHistory`` from the wire modules)."""
    held: tuple[str, ...] = ()
    """State the upstream keeps that may carry a system prompt this body does not show, as
    ``kind:id`` keys (``proxy.drive.held_prompts``): ``response:`` (Responses ``previous_response_id``),
    ``conversation:``, ``prompt:`` (a stored prompt), ``cache:`` (Gemini ``cachedContent``)."""
    tainted: tuple[str, ...] = ()
    """Untrusted content flagged in this request by an input guardrail (``input:<id>``): the tool
    rules treat the conversation as tainted (``guardrails.tools.taint``)."""
    kept: tuple[str, ...] | None = None
    """The system texts the upstream stores with this request's answer for later turns (Responses:
    the system and developer input items; ``instructions`` do not carry over). None: nothing is
    stored (other APIs, ``store: false``)."""
