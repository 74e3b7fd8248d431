"""The contract every wire format implements, so the pipeline never sees provider JSON.

A ``WireFormat`` is stateless and shared; a ``StreamCodec`` is made per upstream stream and keeps
two kinds of state: what it has decoded (ids, model, sequence numbers) and what the client has been
sent (``note_sent``), so that anything the proxy itself renders (a replacement, an error, a
corrected attempt) continues the client's stream consistently.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

from config.errors import ClientError
from guardrails.datamodel import AssistantMessage, Event, Frame, Lane, RequestView, ToolCall, WholeText
from proxy.wire.conversation_delta import Turns
from proxy.wire.one_reading import UNPROVEN, count_proven, unique_pairs
from proxy.wire.sse import SSEFrame

FinishKind = Literal["normal", "filtered"]
"""``filtered``: the provider's content-filter ending; ``normal``: an ordinary end of turn."""

ErrorKind = Literal[
    "invalid_request", "authentication", "permission", "not_found", "too_large",
    "rate_limit", "upstream", "timeout", "guardrail", "overloaded",
]

REPLACED_EVENT = "output.message.replaced"


@dataclass(frozen=True, slots=True)
class Replaced:
    """Payload of the ``output.message.replaced`` signal."""

    guardrail_id: str
    reason_code: str
    replacement: str

    def payload(self) -> dict[str, str]:
        return {"type": REPLACED_EVENT, "guardrail_id": self.guardrail_id,
                "reason_code": self.reason_code, "replacement": self.replacement}


class BadRequest(ClientError):
    """The client's body is not what its API accepts; answered with a 400 in that API's format."""


_DECODER = msgspec.json.Decoder()


def loads(data: bytes | str) -> Any:
    """``json.loads`` with the same result, faster: msgspec first (1.9x on a 66 KB agent request, 4-6x
    on a stream chunk or a completion body: ``python -m bench.json_decoders``), the standard library
    whenever msgspec refuses. msgspec refuses exactly what it would read differently (NaN, lone
    surrogates, a UTF-8 BOM, exponents past the float range) rather than return another value, and it
    keeps integers of any size exact; so the proxy reads every body as the Python SDKs (standard
    library) do, and bad JSON still raises ``ValueError``."""
    try:
        try:
            return _DECODER.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return json.loads(data)
    except RecursionError:
        # Nesting past the interpreter's stack is not JSON the proxy can vet: bad input, never a crash.
        raise ValueError("JSON nested too deeply") from None




def loads_output(data: bytes | str) -> Any:
    """``loads`` for what the upstream sends as output, refusing a document with a repeated key
    (``ValueError``). Parsers keep one of the values (the SDKs and ``JSON.parse`` the last), but
    curl and clients that print the raw JSON show both, and the proxy would have checked only one.
    The check is the request side's (``proxy.wire.one_reading.count_proven``: a colon count, in
    O(len(data)) at C speed, about 0.5 us per stream chunk); a document it cannot prove is read pair
    by pair by the standard library's parser (slower: escaped colons, what msgspec does not decode,
    and the repeats themselves)."""
    raw = data if type(data) is bytes else data.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
    value = count_proven(raw)
    if value is not UNPROVEN:
        return value
    try:
        return json.loads(raw, object_pairs_hook=unique_pairs)  # bytes: a BOM and lone surrogates as ``loads`` reads them
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def output_object(data: bytes | str) -> dict[str, Any] | None:
    """A frame's data read as the JSON object every event of a stream is (``loads_output``), or None
    where it is not one (not JSON, a repeated key, another JSON value): the codec then fails the frame
    closed (``Frame(raw, unreadable=True)``)."""
    try:
        value = loads_output(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def dumps(obj: Any) -> str:
    """Compact JSON, as the providers send it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def body_bytes(data: dict[str, Any], replaced: Replaced | None) -> bytes:
    """A non-streaming body the proxy rendered (``WireFormat.render_response``) as bytes, with the
    replaced signal under ``guardproxy`` when there is one."""
    if replaced:
        data["guardproxy"] = replaced.payload()
    return dumps(data).encode()


def _number(value: float) -> float | int:
    """``0`` rather than ``0.0`` for whole numbers, as the providers' own examples write it."""
    return int(value) if float(value).is_integer() else value


def label_events(sse: SSEFrame, name: str | None = None) -> list[Event]:
    """The frame's SSE field values other than its data (``SSEFrame.labels``, and an ``event`` name
    other than ``name``, the one its data says it is), checked whole: curl and clients that print the
    stream show them. Nothing for the common frame (a data line, its own name)."""
    found = [*sse.labels, sse.event] if sse.event is not None and sse.event != name else sse.labels
    return [WholeText("\n".join(found), 0, "sse")] if found else []


def known_only(obj: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """``obj`` without the fields outside ``known`` (what a replaced answer keeps of the original)."""
    return {k: v for k, v in obj.items() if k in known}


def with_temperature(body: dict[str, Any], temperature: float | None) -> dict[str, Any]:
    """``body`` with ``temperature`` set, or without the key when it is None (reasoning models)."""
    if temperature is None:
        body.pop("temperature", None)
    else:
        body["temperature"] = _number(temperature)
    return body


def load_json_body(body: bytes) -> dict[str, Any]:
    try:
        data = loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    return data


class JsonBody:
    """A guarded request's body: its bytes, and its JSON object decoded whole on first use
    (``load_json_body``). When the request's view came from a partial decode (``WireFormat.quick_view``),
    only what needs the object itself decodes it: a retry's mandate, a tool feedback round, the tool
    rules' history. An agent's 66 KB turn is then read in a third of the time, and builds no Python
    object for the tool results and tools catalog that no check reads."""

    __slots__ = ("_data", "raw", "repeat_free")

    def __init__(self, raw: bytes, data: dict[str, Any] | None = None, *, repeat_free: bool = False) -> None:
        self.raw = raw
        self._data = data
        self.repeat_free = repeat_free
        """Proven to repeat no key in any object (``proxy.wire.one_reading``): a quick view may keep it
        as the base that later turns' repeated-key check reads from (``WireFormat.added_to_clean``)."""

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            self._data = load_json_body(self.raw)
        return self._data


def quick_decoder(struct: type[Any]) -> Callable[[bytes], Any]:
    """A decoder of ``struct`` (a ``msgspec.Struct`` naming only the fields a view reads) that returns
    None whenever the partial decode cannot stand for the whole one: the caller then decodes the body
    whole and reads it as before (same result, same errors).

    msgspec validates what it skips (syntax, escapes, numbers) exactly as its whole decode does, except
    the UTF-8 of skipped strings: a body that is not valid UTF-8 therefore never takes this path. Where
    a whole msgspec decode refuses and the standard library accepts (``loads``), this path refuses too
    (lone surrogates, NaN, a BOM) or accepts a value it skips (an exponent past the float range)."""
    decoder = msgspec.json.Decoder(struct)

    def decode(raw: bytes) -> Any:
        if not raw.isascii():
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        try:
            return decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None

    return decode


QUICK_REFUSALS = (msgspec.DecodeError, RecursionError)
"""What decoding a kept raw field (``raw_value``) may raise: the quick view then declines."""


QUICK_NULL = msgspec.Raw(b"null")
"""The default of a ``msgspec.Raw`` field of a quick decode: an absent field reads as null (``dict.get``)."""
_VALUE = msgspec.json.Decoder()


def raw_value(raw: msgspec.Raw) -> Any:
    """A field a quick decode kept as raw JSON, decoded now that a view needs it (the same value the
    whole decode gives; ``msgspec.DecodeError`` where msgspec refuses it: the quick view then declines)."""
    return _VALUE.decode(raw)


class StreamCodec(ABC):
    """Decodes one upstream stream into frames and renders what the proxy adds to it."""

    media_type: str = "text/event-stream"
    rewrites: bool = False
    """True once ``retext`` ran: the driver then passes every frame through ``outgoing``."""

    @property
    def state_ids(self) -> tuple[str, ...]:
        """The ids under which the upstream stores this answer for a later request to name (Responses'
        ``response.id``: every one the stream named, as a client keeps the last), once decoded."""
        return ()

    @abstractmethod
    def feed(self, data: bytes) -> list[Frame]:
        """Bytes from upstream in, complete frames out (raw bytes preserved)."""

    @abstractmethod
    def flush(self) -> list[Frame]:
        """Upstream ended: whatever partial frame is left."""

    @abstractmethod
    def note_sent(self, frame: Frame) -> None:
        """The client was sent ``frame`` (remember what it has, e.g. an open content block)."""

    @abstractmethod
    def render_replaced(self, replaced: Replaced) -> bytes:
        """The ``output.message.replaced`` signal alone, in a shape the official SDK accepts."""

    @abstractmethod
    def render_tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> bytes:
        """End the client's message with ``message``'s text and tool calls appended after what it
        already has, the replaced signal first when given, then a proper finish and terminator."""

    @abstractmethod
    def render_error(self, message: str, kind: ErrorKind) -> bytes:
        """The API's own mid-stream error (the stream is closed after it)."""

    @abstractmethod
    def retext(self, frame: Frame, texts: dict[Lane, str]) -> bytes:
        """The same frame with the answer text of each choice in ``texts`` replaced by its text, and
        the logprobs of those choices dropped (used by redaction; only answer lanes redact)."""

    def outgoing(self, frame: Frame) -> Frame:
        """After a redaction (``rewrites``), ``frame`` as it must go out, noted as sent: frames that
        repeat text the client was sent redacted are rewritten to what it was sent."""
        self.note_sent(frame)
        return frame

    def provider_parts(self) -> list[dict[str, Any]]:
        """What this codec decoded that ``WireFormat.with_tool_feedback`` needs to replay the turn
        faithfully (e.g. signed thinking blocks), for ``AssistantMessage.provider_parts``. Called once
        the stream ended; a format that needs nothing returns ``[]``."""
        return []


V = TypeVar("V")


class DecodedFrames(Generic[V]):
    """What a codec decoded of its recent frames, by the identity of their bytes: ``note_sent`` takes
    it instead of parsing a frame it decoded again. A value stands only for the very bytes object it
    was decoded from (a frame rebuilt around them, as the hold-back does, finds it; a frame rewritten
    by a redaction has new bytes and is parsed), so it says exactly what a parse would.

    Bounded: past ``LIMIT`` values it starts afresh, and the frames it forgot are parsed as before.
    O(1) a frame, about 0.2 us."""

    __slots__ = ("_kept",)

    LIMIT = 64
    """More frames than a live stream has decoded but not yet sent (those of one read, and the few
    its hold-back keeps); a message held whole for a verdict holds more, and its frames are parsed
    when sent, as before: kept, they would cost about 0.5 KB each (a Responses delta's event)
    beside their 0.25 KB of bytes."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[bytes, V]] = {}

    def keep(self, raw: bytes, value: V) -> None:
        kept = self._kept
        if len(kept) >= self.LIMIT:
            kept.clear()
        kept[id(raw)] = (raw, value)  # holding ``raw`` keeps its id from being reused meanwhile

    def holds(self, raw: bytes) -> bool:
        hit = self._kept.get(id(raw))
        return hit is not None and hit[0] is raw

    def take(self, raw: bytes) -> V | None:
        hit = self._kept.pop(id(raw), None)
        return hit[1] if hit is not None and hit[0] is raw else None


class Splitter(Protocol):
    """Cuts a stream's bytes into frames (``proxy.wire.sse.SSESplitter``, Gemini's JSON array)."""

    def feed(self, data: bytes) -> list[bytes]: ...

    def flush(self) -> bytes: ...


SP = TypeVar("SP", bound=Splitter)


class SplitStream(StreamCodec, Generic[SP]):
    """A codec that cuts the upstream's bytes with a splitter and decodes each frame on its own
    (``_decode``): what the splitter still holds when the upstream ends is one last frame."""

    def __init__(self, splitter: SP) -> None:
        self._split = splitter

    def feed(self, data: bytes) -> list[Frame]:
        return [self._decode(raw) for raw in self._split.feed(data)]

    def flush(self) -> list[Frame]:
        rest = self._split.flush()
        return [self._decode(rest)] if rest else []

    @abstractmethod
    def _decode(self, raw: bytes) -> Frame:
        """One whole frame's bytes in, the frame out (never raises: what it cannot read is unreadable)."""


class WireFormat(ABC):
    """One client API: decode requests and responses, render errors, rebuild requests."""

    name: str

    @abstractmethod
    def parse_request(self, body: dict[str, Any], *, stream: bool) -> RequestView:
        """Raise ``BadRequest`` for a body that is not the right shape."""

    def quick_view(self, body: JsonBody, *, stream: bool) -> RequestView | None:
        """``parse_request(body.data)`` from a partial decode of ``body.raw``: the same view, its history
        folded from ``body.data`` when read. None when only the whole decode can tell (anything
        ``parse_request`` would refuse, any unusual shape): the caller then decodes it whole. A
        format without one always decodes whole."""
        return None

    def added_to_clean(self, raw: bytes) -> bytes | None:
        """What ``raw`` adds to a recent body proven repeat-free that it extends (the items of one or
        more turns, ``proxy.wire.conversation_delta``), or None: the edge then checks ``raw`` whole."""
        return None

    @abstractmethod
    def new_stream(self, *, sse: bool = True) -> StreamCodec: ...

    def decode_response(self, body: bytes) -> AssistantMessage:
        """A non-streaming response body; raise ValueError when it can't be read."""
        return self.message_of(loads(body))

    def decode_events(self, body: bytes) -> tuple[Event, ...]:
        """Everything a non-streaming body shows the client, as the events a stream of it would
        give (every choice, reasoning, refusals, citations; ``Unvetted`` for what cannot be read).
        A document that repeats a key is refused (``loads_output``)."""
        return self.events_of(loads_output(body))

    def decode_answer(self, body: bytes) -> tuple[AssistantMessage, tuple[Event, ...]]:
        """``decode_response`` and ``decode_events`` of one body, its JSON parsed once (the stricter
        ``loads_output``: a repeated key refuses it, as ``decode_events`` does)."""
        data = loads_output(body)
        return self.message_of(data), self.events_of(data)

    @abstractmethod
    def message_of(self, data: Any) -> AssistantMessage:
        """``decode_response`` of a parsed body (read only: ``events_of`` reads the same value)."""

    @abstractmethod
    def events_of(self, data: Any) -> tuple[Event, ...]:
        """``decode_events`` of a parsed body (read only)."""

    @abstractmethod
    def render_response(self, body: bytes, message: AssistantMessage, finish: FinishKind,
                        replaced: Replaced | None) -> bytes:
        """The non-streaming body with its output replaced by ``message``: every choice shows it,
        and nothing of the original output survives (reasoning, logprobs, citations, refusals)."""

    @abstractmethod
    def retext_body(self, body: bytes, texts: dict[Lane, str]) -> bytes:
        """The non-streaming body with each choice's answer text in ``texts`` replaced (redaction),
        and those choices' logprobs dropped."""

    @abstractmethod
    def http_error(self, status: int, message: str, kind: ErrorKind,
                   extra: dict[str, str] | None = None) -> bytes:
        """An HTTP error body in the API's format. ``extra`` (guardrail id, reason code) is added
        where the format has room for it."""

    @abstractmethod
    def with_system(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        """A copy of the request with ``text`` appended as a system instruction."""

    @abstractmethod
    def with_tool_feedback(self, body: dict[str, Any], message: AssistantMessage,
                           results: list[tuple[ToolCall, str]]) -> dict[str, Any]:
        """A copy of the request continued by the assistant's ``message`` (its tool calls) and a
        tool result per call, each carrying ``text`` (a block's rationale, or a note that the call
        was not run because a sibling was blocked)."""

    @abstractmethod
    def judge_request(self, model: str, prompt: str, *, temperature: float | None = 0.0
                      ) -> tuple[str, dict[str, Any]]:
        """A stateless, non-streaming request: (path, body). ``temperature=None`` leaves it out."""


S = TypeVar("S")


class TurnsWireFormat(WireFormat, Generic[S]):
    """A format whose quick view reads a body through ``turns`` (``proxy.wire.conversation_delta``):
    an agent's next turn from the items it adds to a recent body, ``S`` being what the format reads
    of a body (model, system texts, last user text...)."""

    turns: Turns[S]

    def added_to_clean(self, raw: bytes) -> bytes | None:
        return self.turns.added_to_clean(raw)

    def quick_view(self, body: JsonBody, *, stream: bool) -> RequestView | None:
        read = self.turns.read(body.raw, clean=body.repeat_free)
        return None if read is None else self.view_of(read, body, stream=stream)

    @abstractmethod
    def view_of(self, read: S, body: JsonBody, *, stream: bool) -> RequestView:
        """``quick_view``'s view of ``body``, which ``turns`` read as ``read`` (its history folded
        from ``body.data`` when read)."""
