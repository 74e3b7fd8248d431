"""OpenAI Chat Completions: ``data: <chunk>`` frames, no ``event:`` lines, ``data: [DONE]`` at the end.

Tool calls stream keyed by ``index``; only the first delta of an index carries ``id`` and ``name``. A
later delta with a name (even the same one) or another id fails closed: the SDK's stream helper joins
the strings (``run_`` then ``run_`` is a call to ``run_run_``), and clients that key calls by id split
one call in two. Each call begins at the next unused index (0, 1, 2...): the SDK's helper pairs deltas
by list position, so a call begun out of order or after a gap fails closed. A delta without an
``index`` (some OpenAI-compatible servers) is read alike by every client only when it is the choice's
one tool-call delta, the whole call; any other tool-call delta beside it fails closed (clients fill
the index with 0, with the next slot, or by id, and so assemble different calls).
The replaced signal rides as ``event: output.message.replaced`` on a chunk-shaped payload with an
empty delta, which the official SDK yields as a harmless empty chunk (DESIGN.md, measured).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import partial
from operator import attrgetter
from typing import Any

import msgspec

from guardrails.datamodel import (
    ANSWER,
    AssistantMessage,
    Event,
    Finish,
    Frame,
    HistoryToolCall,
    Lane,
    LaneEnd,
    LazyHistory,
    RequestView,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unvetted,
    WholeText,
)
from proxy.wire.base import (
    QUICK_NULL,
    QUICK_REFUSALS,
    REPLACED_EVENT,
    BadRequest,
    ErrorKind,
    FinishKind,
    JsonBody,
    Replaced,
    StreamCodec,
    TurnsWireFormat,
    body_bytes,
    dumps,
    known_only,
    label_events,
    loads,
    loads_output,
    output_object,
    quick_decoder,
    raw_value,
    with_temperature,
)
from proxy.wire.conversation_delta import Reading, Turns
from proxy.wire.held_state import held_caches
from proxy.wire.input_parts import CHAT_ROLES, is_system
from proxy.wire.logprobs import TokenLanes, token_events
from proxy.wire.openai_errors import error_object
from proxy.wire.shapes import by_type, error_event, lane_events, obj, unread, whole_events
from proxy.wire.sse import SSEFrame, SSESplitter, parse_fields
from proxy.wire.template import Templates


def _content_text(content: Any) -> str:
    """Text of a message ``content`` that is a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


_SYSTEM_TEXTS: dict[bytes, str] = {}
_SYSTEM_TEXTS_KEPT = 64
_SYSTEM_TEXT_BYTES = 65_536
"""System prompts' texts kept by their raw JSON (at most 64 of at most 64 KiB: 8 MiB with the keys)."""


def _system_text(raw: msgspec.Raw) -> str:
    """``_content_text`` of a system message's raw ``content``, kept by its bytes: an agent sends the
    same prompt on every turn, and gets the same ``str`` back, not decoded again (75k instructions at
    15 KB) and with its hash already computed (the canary's cache is keyed by the prompt: another
    65k). Exact: the text is a function of the bytes."""
    key = bytes(raw)
    text = _SYSTEM_TEXTS.get(key)
    if text is None:
        text = _content_text(raw_value(raw))
        if len(key) <= _SYSTEM_TEXT_BYTES:
            if len(_SYSTEM_TEXTS) >= _SYSTEM_TEXTS_KEPT:
                _SYSTEM_TEXTS.clear()
            _SYSTEM_TEXTS[key] = text
    return text


LEGACY_KEY = "function_call"
"""Stream key of a legacy ``function_call`` (the pre-tools shape: one call, no id)."""


def _function_of(tc: Any) -> tuple[str, str]:
    """(name, arguments) of a ``tool_calls`` entry: ``type: function`` carries ``function.arguments``,
    ``type: custom`` carries ``custom.input`` (freeform text). Each is read by its own key, as the SDK
    reads it (a decoy ``arguments`` in a custom call is an unread field: checked as one)."""
    if not isinstance(tc, dict):
        return "", ""
    custom = not tc.get("function")
    fn = tc.get("custom") if custom else tc["function"]
    if not isinstance(fn, dict):
        return "", ""
    args = fn.get("input" if custom else "arguments", "")
    return str(fn.get("name", "")), args if isinstance(args, str) else ""


def _unreadable_call(tc: Any) -> bool:
    """A tool call the decoder cannot read as its client does: both a ``function`` and a ``custom``
    (the SDK picks one by ``type``, and the other would pass unchecked), one that is not an object, or
    arguments (input) that are not a string."""
    if not isinstance(tc, dict):
        return tc is not None
    fn, custom = tc.get("function"), tc.get("custom")
    if fn and custom:
        return True
    part, key = (fn, "arguments") if fn else (custom, "input")
    return part is not None and (not isinstance(part, dict) or not isinstance(part.get(key), str | None))


def _legacy_call(msg: dict[str, Any]) -> ToolCall | None:
    fc = msg.get("function_call")
    if not isinstance(fc, dict):
        return None
    return ToolCall("", str(fc.get("name", "")), str(fc.get("arguments", "")))


def _history(messages: list[Any]) -> list[HistoryToolCall]:
    results: dict[str, bool] = {}
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            text = _content_text(m.get("content")).lstrip().lower()
            results[m["tool_call_id"]] = not text.startswith("error")
    calls: list[HistoryToolCall] = []
    for m in messages:
        if not (isinstance(m, dict) and m.get("role") == "assistant"):
            continue
        for tc in m.get("tool_calls") or []:
            name, args = _function_of(tc)
            cid = str(tc.get("id", "")) if isinstance(tc, dict) else ""
            calls.append(HistoryToolCall(cid, name, args, results.get(cid)))
        legacy = _legacy_call(m)
        if legacy is not None:
            calls.append(HistoryToolCall("", legacy.name, legacy.arguments, None))
    return calls


_REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Reasoning text as OpenAI-compatible servers send it (DeepSeek, vLLM: ``reasoning_content``;
OpenRouter, newer vLLM: ``reasoning``): shown by agents, so checked as its own lane each."""
_QUIET_FIELDS = frozenset({"role", "name", "tool_call_id", "function_call", "tool_calls"})
"""Message / delta fields that carry no text of their own (tool calls are decoded separately)."""


_CHOICE_COMMON = frozenset({"index", "logprobs", "finish_reason",
                            # no text a client shows: Azure's filter verdicts, gateways' stop details
                            "content_filter_results", "content_filter_offsets", "native_finish_reason",
                            "stop_reason", "matched_stop"})
_CHOICE_FIELDS = _CHOICE_COMMON | {"delta"}
"""A chunk's choice. Its ``message`` (some servers stream whole messages) is read only when it has no
``delta``: a choice with both shows the unread one to a client that prints it, so it is checked."""
_MESSAGE_CHOICE_FIELDS = _CHOICE_COMMON | {"message"}
"""A body's choice (and a chunk's that carries a whole message instead of a delta); a ``delta`` in it is
read by nothing, so it is checked as an unread field, and dropped when the answer is replaced."""
_BODY_FIELDS = frozenset({"id", "object", "created", "model", "system_fingerprint", "service_tier", "usage",
                          "choices", "error", "obfuscation", "provider", "prompt_filter_results", "x_groq"})
"""The fields of a chat choice and of a chunk or body; others (``choices[].text`` as legacy completions
put it, Perplexity's top-level ``citations``, gateways' extras) are checked and dropped when the
answer is replaced: a client that prints the object would show them."""

_FUNCTION = obj("name", "arguments")
_TOP_LOGPROB = obj("token", "logprob", "bytes")
_LOGPROBS = obj(content=obj("token", "logprob", "bytes", top_logprobs=_TOP_LOGPROB),
                refusal=obj("token", "logprob", "bytes", top_logprobs=_TOP_LOGPROB))
_MESSAGE = obj(*_QUIET_FIELDS, "refusal", *_REASONING_FIELDS,
               content=by_type(text=obj("type", "text"), refusal=obj("type", "refusal")),
               tool_calls=obj("index", "id", "type", function=_FUNCTION, custom=obj("name", "input")),
               function_call=_FUNCTION, audio=obj("id", "data", "expires_at", "transcript"),
               annotations=obj("type", url_citation=obj("title", "url", "start_index", "end_index")),
               reasoning_details=obj("type", "summary", "data", "text", "signature", "id", "format", "index"))
_CHOICE = obj(*_CHOICE_FIELDS, delta=_MESSAGE, logprobs=_LOGPROBS)
_MESSAGE_CHOICE = obj(*_MESSAGE_CHOICE_FIELDS, message=_MESSAGE, logprobs=_LOGPROBS)
_MESSAGE_KEYS = _MESSAGE.keys
_BODY = obj(*_BODY_FIELDS, choices=_MESSAGE_CHOICE)
"""Every field of a body down to the tool calls, logprobs and parts (``proxy.wire.shapes``): the codec
checks whatever lies outside it (an unknown message field fails closed already). A stream walks a
choice only when it holds more than strings (``_plain_choice``): the common chunk costs two set
comparisons; so does the common body."""
_TOP = obj(*_BODY_FIELDS)


def _plain_choice(choice: dict[str, Any], delta: dict[str, Any] | None,
                  fields: frozenset[str] = _CHOICE_FIELDS) -> bool:
    """Nothing in ``choice`` to walk: known ``fields``, no logprobs, a delta (or message) of strings
    (or nulls)."""
    if choice.get("logprobs") is not None or not fields.issuperset(choice):
        return False
    if delta:
        if not _MESSAGE_KEYS.issuperset(delta):
            return False  # an unknown field: its name is checked even when its value is empty
        for v in delta.values():
            if v and type(v) is not str:
                return False
    return True


def message_events(msg: dict[str, Any], c: int) -> list[Event]:
    """The text-bearing fields of a chat ``message`` or stream ``delta`` of choice ``c``.

    Every field is either decoded here, known to carry no text, or fails closed (``Unvetted``): a
    field the SDK would surface and the proxy did not read is a way around the guard."""
    events: list[Event] = []
    for key, value in msg.items():
        if not value or key in _QUIET_FIELDS:  # null, "", [], {} (and 0 / false) carry no text
            continue
        if key == "content":
            if type(value) is str:  # the hot path: one text delta
                events.append(TextDelta(value, c))
            else:
                events += _content_events(value, c)
        elif key == "refusal" and isinstance(value, str):
            events.append(TextDelta(value, c, "refusal"))
        elif key in _REASONING_FIELDS and isinstance(value, str):
            events.append(TextDelta(value, c, key))
        elif key == "reasoning_details" and isinstance(value, list):
            # The SDK's stream helper merges the entries by their ``index``, each field on its own: a
            # lane per entry and field (an entry without an integer index: its place in the list; the
            # SDK raises on a later one).
            events += [TextDelta(t, c, f"reasoning_details/{i if type(i := d.get('index')) is int else n}/{k}")
                       for n, d in enumerate(value) if isinstance(d, dict)
                       for k in ("text", "summary") if isinstance(t := d.get(k), str) and t]
        elif key == "audio" and isinstance(value, dict):
            # The transcript is what the audio says: checked. The audio bytes pass with it (they cannot
            # be checked) and are dropped whenever the answer is replaced.
            if isinstance(t := value.get("transcript"), str) and t:
                events.append(TextDelta(t, c, "transcript"))
            elif t is not None and not isinstance(t, str):
                events.append(Unvetted("chat audio transcript of an unknown shape"))
        elif key == "annotations" and isinstance(value, list):
            events += _annotation_events(value, c)
        else:
            events.append(Unvetted(f"chat message field {key!r}"))
    return events


def _content_events(content: Any, c: int) -> list[Event]:
    if isinstance(content, str):
        return [TextDelta(content, c)]
    if not isinstance(content, list):
        return [Unvetted("chat content of an unknown shape")]
    events: list[Event] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            events += [TextDelta(part["text"], c)] if part["text"] else []
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            events += [TextDelta(part["refusal"], c, "refusal")] if part["refusal"] else []
        else:
            events.append(Unvetted(f"chat content part {kind!r}"))
    return events


def _annotation_events(annotations: list[Any], c: int) -> list[Event]:
    events: list[Event] = []
    for a in annotations:
        cite = a.get("url_citation") if isinstance(a, dict) else None
        if not isinstance(cite, dict) or not all(isinstance(cite.get(k), str | None) for k in ("title", "url")):
            events.append(Unvetted("chat annotation of an unknown shape"))
            continue
        text = "\n".join(str(cite[k]) for k in ("title", "url") if isinstance(cite.get(k), str))
        if text:
            events.append(WholeText(text, c, "annotation"))
    return events


_ANSWER_CHANNELS = (ANSWER, "refusal", "transcript")


def _starts_answer(delta: dict[str, Any], events: list[Event]) -> bool:
    return (any(isinstance(e, TextDelta) and e.channel in _ANSWER_CHANNELS for e in events)
            or bool(delta.get("tool_calls")) or bool(delta.get("function_call")))


def logprob_events(logprobs: Any, events: list[Event], c: int, lanes: TokenLanes | None = None) -> list[Event]:
    """Logprobs repeat the text token by token (``token``, ``bytes``) and offer alternatives
    (``top_logprobs``): a client can show both. In a stream (``lanes``) the tokens, their bytes and
    each rank are lanes across the stream (``proxy.wire.logprobs``); in a body, chosen tokens that
    spell exactly the text were checked with it, any others are a lane of their own. (Replacement and
    redaction drop the logprobs.)"""
    if not isinstance(logprobs, dict):
        return [] if logprobs is None else [Unvetted("chat logprobs of an unknown shape")]
    entries = [t for key in ("content", "refusal") for t in logprobs.get(key) or []]
    if not all(isinstance(t, dict) for t in entries):
        return [Unvetted("chat logprob of an unknown shape")]
    said = "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel in (ANSWER, "refusal"))
    return token_events(entries, said, c, lanes=lanes)


def _plain_answer(events: list[Event]) -> bool:
    """Nothing but answer text (or nothing): the common delta, with no reasoning to track."""
    return not events or (len(events) == 1 and type(e := events[0]) is TextDelta and e.channel is ANSWER)


def _choice_index(choice: dict[str, Any]) -> int:
    index = choice.get("index", 0)
    if type(index) is not int or index < 0:
        raise ValueError("choice index")
    return index


def _set_content(msg: dict[str, Any], text: str) -> None:
    """The answer text of a message / delta becomes ``text`` (a list of parts collapses into one)."""
    content = msg.get("content")
    if isinstance(content, list):
        kept = [p for p in content if not (isinstance(p, dict) and p.get("type") == "text")]
        msg["content"] = [{"type": "text", "text": text}, *kept]
    else:
        msg["content"] = text


def _by_index(choices: Any) -> dict[int, dict[str, Any]]:
    return {_choice_index(ch): ch for ch in choices or [] if isinstance(ch, dict)}

_ERROR_TOP = frozenset({"error"})
_ERROR_INNER = frozenset({"message", "type", "param", "code"})
"""An error chunk's fields (``{"error": {"message", "type", "param", "code"}}``): a frame with only
these is relayed as the upstream sent it."""


class _QuickMessage(msgspec.Struct, gc=False):
    role: Any = None
    content: msgspec.Raw = QUICK_NULL
    """Decoded only for the messages a view reads (system, developer, the last user's)."""


class _QuickRequest(msgspec.Struct, gc=False):
    """What ``parse_request`` reads of a request (``quick_view``); tools and the other message fields
    (tool calls, tool results' ids) are skipped, not built."""

    model: Any = None
    stream: Any = None
    messages: list[_QuickMessage] | None = None
    extra_body: Any = None
    """Gemini's OpenAI-compatible layer reads ``extra_body.google.cached_content`` (``_held``)."""


_QUICK = quick_decoder(_QuickRequest)


def _held(extra_body: Any) -> tuple[str, ...] | None:
    """``RequestView.held``: a Gemini ``cachedContent`` named through Gemini's OpenAI-compatible layer
    (``{"extra_body": {"google": {"cached_content": name}}}``); None for a name that is not a string."""
    google = extra_body.get("google") if isinstance(extra_body, dict) else None
    if not isinstance(google, dict):
        return ()
    return held_caches(google.get("cached_content"), google.get("cachedContent"))


def _whole_history(body: JsonBody) -> list[HistoryToolCall]:
    return _history(body.data["messages"])


_PLAIN = ("assistant", "user", "tool", "system", "developer")
"""Roles spelt as the API spells them: any other is read as the screen reads it (``is_system``: a
``System`` or ``Developer`` message is system text to an upstream that folds the case, and to a chat
template that renders any role it is given)."""
_FOLD_EACH = 8
"""Messages up to which ``_fold`` steps through them in Python (below this, the C scan costs more)."""
_ROLE = attrgetter("role")


def _fold(read: Reading, messages: Sequence[_QuickMessage]) -> Reading | None:
    """``read`` with more messages: what ``parse_request`` does, on the same values (None where a raw
    field does not decode: the whole path then decides). A few messages (a turn's) are stepped
    through; many (a first turn's hundreds) are scanned in C (``_fold_scanned``)."""
    if len(messages) > _FOLD_EACH:
        return _fold_scanned(read, messages)
    return _fold_each(read, messages)


def _fold_each(read: Reading, messages: Sequence[_QuickMessage]) -> Reading | None:
    added: list[str] | None = None  # (an agent's turn adds none: its reading keeps the system tuple)
    last_user: _QuickMessage | None = None
    kept = read.kept
    try:
        for m in messages:
            role = m.role
            if role == "user":
                last_user = m
            elif role == "system" or role == "developer" or (role not in _PLAIN and is_system(role, CHAT_ROLES)):
                if added is None:
                    added = []
                added.append(_system_text(m.content))
                kept = kept and len(m.content) <= _SYSTEM_TEXT_BYTES
        text = read.last_user_text if last_user is None else _content_text(raw_value(last_user.content))
    except QUICK_REFUSALS:
        return None
    return Reading(read.model, read.stream, read.system if added is None else (*read.system, *added), text, kept,
                   read.held)


def _fold_scanned(read: Reading, messages: Sequence[_QuickMessage]) -> Reading | None:
    """``_fold_each`` with the roles compared in C (``list.count``, ``list.index``: ``==``, as the loop
    compares them): the same fields decoded, in the same order, one Python step per system message
    instead of one per message (``tests/tools/test_fold_scanned.py`` compares the two). A role spelt
    otherwise (``System``, ``ſystem``, none) sends the messages to the loop, which folds it as the
    input screen does; telling costs three more scans (about 3 µs on the 117-message agent bench
    body, which is read whole on a conversation's first turn only)."""
    roles = list(map(_ROLE, messages))
    systems, developers, users = roles.count("system"), roles.count("developer"), roles.count("user")
    if systems + developers + users + roles.count("assistant") + roles.count("tool") != len(roles):
        return _fold_each(read, messages)  # a role in another spelling (``System``): read one by one
    system, kept = read.system, read.kept
    try:
        at = _positions(roles, "system", systems)
        if developer := _positions(roles, "developer", developers):
            at = sorted(at + developer)
        if at:
            contents = [messages[i].content for i in at]
            system = (*system, *map(_system_text, contents))
            kept = kept and max(map(len, contents)) <= _SYSTEM_TEXT_BYTES
        if users:
            last_user = messages[len(roles) - 1 - roles[::-1].index("user")]
            text = _content_text(raw_value(last_user.content))
        else:
            text = read.last_user_text
    except QUICK_REFUSALS:
        return None
    return Reading(read.model, read.stream, system, text, kept, read.held)


def _positions(roles: list[Any], role: str, count: int) -> list[int]:
    """Where ``role`` is in ``roles`` (``==``, ``count`` times), in order."""
    found: list[int] = []
    at = -1
    for _ in range(count):
        at = roles.index(role, at + 1)
        found.append(at)
    return found


def _read_whole(raw: bytes) -> tuple[Reading, list[_QuickMessage]] | None:
    quick = _QUICK(raw)
    if (quick is None or quick.messages is None or not isinstance(quick.model, str)
            or not isinstance(quick.stream, (bool, type(None)))):
        return None
    held = _held(quick.extra_body)
    if held is None:
        return None
    read = _fold(Reading(quick.model, quick.stream, (), "", True, held), quick.messages)
    return None if read is None else (read, quick.messages)


_TURNS = Turns(_read_whole, _fold, _QuickMessage, b'{"role":"guardproxy-probe"}', keeps=lambda read: read.kept)
"""Bodies of recent chat requests: an agent's next turn is read from the messages it adds (``turns``)."""


class OpenAIChat(TurnsWireFormat[Reading]):
    name = "openai_chat"
    turns = _TURNS

    def view_of(self, read: Reading, body: JsonBody, *, stream: bool) -> RequestView:
        return RequestView(model=read.model, stream=bool(read.stream), system_prompt="\n".join(read.system),
                           last_user_text=read.last_user_text, history=LazyHistory(partial(_whole_history, body)),
                           held=read.held)

    def parse_request(self, body: dict[str, Any], *, stream: bool) -> RequestView:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise BadRequest("'messages' must be an array of message objects")
        system: list[str] = []
        last_user: dict[str, Any] | None = None
        for m in messages:  # one pass: an agent's request carries hundreds of messages
            if not isinstance(m, dict):
                raise BadRequest("'messages' must be an array of message objects")
            role = m.get("role")
            if role == "user":
                last_user = m
            elif role == "system" or role == "developer" or (role not in _PLAIN and is_system(role, CHAT_ROLES)):
                system.append(_content_text(m.get("content")))
        model = body.get("model")
        if not isinstance(model, str):
            raise BadRequest("'model' must be a string")
        held = _held(body.get("extra_body"))
        if held is None:
            raise BadRequest("'extra_body.google.cached_content' must be a string")
        return RequestView(model=model, stream=bool(body.get("stream")), system_prompt="\n".join(system),
                           last_user_text=_content_text(last_user.get("content")) if last_user else "",
                           history=LazyHistory(partial(_history, messages)), held=held)

    def new_stream(self, *, sse: bool = True) -> StreamCodec:
        return ChatStream()

    def message_of(self, data: Any) -> AssistantMessage:
        choice = data["choices"][0]
        msg = choice.get("message") or {}
        calls = [ToolCall(str(tc.get("id", "")), *_function_of(tc)) for tc in msg.get("tool_calls") or []
                 if isinstance(tc, dict)]
        legacy = _legacy_call(msg)
        calls += [legacy] if legacy is not None else []
        annotations = [str(a.get("url_citation", {}).get("url", "")) for a in msg.get("annotations") or []
                       if isinstance(a, dict)]
        return AssistantMessage(text=msg.get("content") or "", tool_calls=calls,
                                finish_reason=choice.get("finish_reason"), annotations=annotations)

    def decode_answer(self, body: bytes) -> tuple[AssistantMessage, tuple[Event, ...]]:
        data = loads_output(body)
        return _text_answer(data) or (self.message_of(data), self.events_of(data))

    def events_of(self, data: Any) -> tuple[Event, ...]:
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise TypeError("not a chat completion: no choices")
        # The common body (known fields, choices of plain messages) has nothing to walk.
        plain = _BODY_FIELDS.issuperset(data) and all(
            type(ch) is dict and type(m := ch.get("message")) is dict and _plain_choice(ch, m, _MESSAGE_CHOICE_FIELDS)
            for ch in choices)
        events: list[Event] = [] if plain else whole_events(unread(data, _BODY))
        seen: set[int] = set()
        for choice in choices:
            c = _choice_index(choice)
            if c in seen:  # its tool calls would restart the first one's (keys from 0): one would go unchecked
                events.append(Unvetted("two chat choices with one index"))
                continue
            seen.add(c)
            msg = choice.get("message")
            if not isinstance(msg, dict):
                events.append(Unvetted("chat choice without a message"))
                continue
            text_events = message_events(msg, c)
            events += text_events + logprob_events(choice.get("logprobs"), text_events, c)
            tool_calls = msg.get("tool_calls") or []
            if type(tool_calls) is not list:
                events.append(Unvetted("chat tool calls of an unknown shape"))
                continue
            calls = [*tool_calls, *([msg["function_call"]] if msg.get("function_call") else [])]
            for n, tc in enumerate(calls):
                if _unreadable_call(tc if n < len(tool_calls) else {"function": tc}):
                    events.append(Unvetted("chat tool call of an unknown shape"))
                    continue
                wrapped = tc if isinstance(tc, dict) and ("function" in tc or "custom" in tc) else {"function": tc}
                name, args = _function_of(wrapped)  # function, custom (freeform input) or legacy
                key = str(n)
                events += [ToolCallStart(key, str(tc.get("id", "")) if isinstance(tc, dict) else "", name, c),
                           ToolCallArgsDelta(key, args, c), ToolCallEnd(key, c)]
            if choice.get("finish_reason"):
                events.append(Finish(str(choice["finish_reason"]), c))
        return tuple(events)

    def render_response(self, body: bytes, message: AssistantMessage, finish: FinishKind,
                        replaced: Replaced | None) -> bytes:
        data = known_only(loads(body), _BODY_FIELDS)
        choices = [known_only(ch, _MESSAGE_CHOICE_FIELDS) for ch in data.get("choices") or [] if isinstance(ch, dict)]
        choices = choices or [{"index": 0}]
        # Every choice shows the replacement; nothing of the original (reasoning, refusal, audio,
        # annotations, logprobs, fields outside the message) survives: the message is rebuilt.
        for choice in choices:
            choice["message"] = _message_dict(message)
            choice["logprobs"] = None
            choice["finish_reason"] = _finish_reason(message, finish)
        data["choices"] = choices
        return body_bytes(data, replaced)

    def retext_body(self, body: bytes, texts: dict[Lane, str]) -> bytes:
        data = loads(body)
        choices = _by_index(data.get("choices"))
        for (c, _), text in texts.items():
            _set_content(choices[c]["message"], text)
            choices[c]["logprobs"] = None
        return dumps(data).encode()

    def http_error(self, status: int, message: str, kind: ErrorKind,
                   extra: dict[str, str] | None = None) -> bytes:
        return dumps(error_object(message, kind, extra)).encode()

    def with_system(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        out = copy.copy(body)
        out["messages"] = [*body.get("messages", []), {"role": "system", "content": text}]
        return out

    def with_tool_feedback(self, body: dict[str, Any], message: AssistantMessage,
                           results: list[tuple[ToolCall, str]]) -> dict[str, Any]:
        out = copy.copy(body)
        extra: list[dict[str, Any]] = [_message_dict(message, _custom_tool_names(body))]
        extra += [{"role": "tool", "tool_call_id": call.call_id, "content": text} if call.call_id
                  else {"role": "function", "name": call.name, "content": text} for call, text in results]
        out["messages"] = [*body.get("messages", []), *extra]
        return out

    def judge_request(self, model: str, prompt: str, *, temperature: float | None = 0.0
                      ) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": model, "temperature": temperature, "stream": False,
                                "messages": [{"role": "user", "content": prompt}]}
        return "/v1/chat/completions", with_temperature(body, temperature)


def _text_answer(data: Any) -> tuple[AssistantMessage, tuple[Event, ...]] | None:
    """``message_of`` and ``events_of`` of the common body, read in one look: known fields, one
    choice of known fields without logprobs, its message of known fields with a text ``content`` (or
    none) and nothing else but a ``role`` (every other field null or empty). The same message and
    events those two give it (``tests/wire/test_wire_text_answer.py`` draws bodies around this shape);
    None for any other body, which they read."""
    if type(data) is not dict or not _BODY_FIELDS.issuperset(data):
        return None
    choices = data.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if (type(choice) is not dict or not _MESSAGE_CHOICE_FIELDS.issuperset(choice)
            or choice.get("logprobs") is not None):
        return None
    msg, c = choice.get("message"), choice.get("index", 0)
    if type(msg) is not dict or type(c) is not int or c < 0:
        return None
    if not _ROLE_CONTENT.issuperset(msg) and not _quiet_besides(msg):
        return None
    content, role, finish = msg.get("content"), msg.get("role"), choice.get("finish_reason")
    if (content and type(content) is not str) or (role and type(role) is not str):
        return None
    message = AssistantMessage(content or "", [], finish, [], [])
    if content:
        return message, (TextDelta(content, c), Finish(str(finish), c)) if finish else (TextDelta(content, c),)
    return message, (Finish(str(finish), c),) if finish else ()


_ROLE_CONTENT = frozenset({"role", "content"})


def _quiet_besides(msg: dict[str, Any]) -> bool:
    """Known fields only, and every one but the role and content null or empty (an empty legacy
    ``function_call`` object is a call: not quiet)."""
    return _MESSAGE_KEYS.issuperset(msg) and not any(
        value or type(value) is dict for key, value in msg.items() if key != "content" and key != "role")


def _custom_tool_names(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools") or []
    return {str((t.get("custom") or {}).get("name", t.get("name"))) for t in tools
            if isinstance(t, dict) and t.get("type") == "custom"}


def _message_dict(message: AssistantMessage, custom: set[str] | None = None) -> dict[str, Any]:
    """The assistant message; a call without an id is a legacy ``function_call``, a call to a tool
    the request declares ``custom`` goes back as ``type: custom`` with its freeform input."""
    out: dict[str, Any] = {"role": "assistant", "content": message.text or None, "refusal": None}
    calls = [c for c in message.tool_calls if c.call_id]
    legacy = [c for c in message.tool_calls if not c.call_id]
    if calls:
        out["tool_calls"] = [{"id": c.call_id, "type": "custom", "custom": {"name": c.name, "input": c.arguments}}
                             if c.name in (custom or ()) else
                             {"id": c.call_id, "type": "function",
                              "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
    if legacy:
        out["function_call"] = {"name": legacy[0].name, "arguments": legacy[0].arguments}
    return out


def _finish_reason(message: AssistantMessage, finish: FinishKind) -> str:
    if finish == "filtered":
        return "content_filter"
    return "tool_calls" if message.tool_calls else "stop"


class ChatStream(StreamCodec):
    def __init__(self) -> None:
        self._split = SSESplitter()
        self._head: dict[str, Any] = {}
        """id / object / created / model of the chunks, to render our own in the same shape."""
        self._sent_role = False
        self._sent_tool_indexes: set[int] = set()
        self._sent_choices: set[int] = {0}
        """Choices the upstream began (and so the client may have): a tail closes each of them."""
        self._open_tools: dict[int, dict[str, str]] = {}
        """Open tool-call indexes per choice, with the name each began with."""
        self._begun_tools: dict[int, int] = {}
        """Tool calls begun per choice: the next one must begin at this index (``_tool_events``)."""
        self._tool_ids: dict[tuple[int, str], str] = {}
        """The id each open tool call began with, per (choice, index)."""
        self._unindexed: set[int] = set()
        """Choices whose tool call came without an ``index``: no other tool-call delta may follow."""
        self._reasoning: dict[int, set[str]] = {}
        """Reasoning lanes open per choice (ended when the answer starts)."""
        self._token_lanes = TokenLanes()
        """The runs a client joins of the logprobs (only streams that carry them fill it)."""
        self._templates = Templates("content")
        """The shape of the last plain text chunk: later ones decode from their bytes (``template``)."""

    # -- decoding ---------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[Frame]:
        # A read of one whole text frame of the learnt shape (a paced stream's every read) skips the
        # splitter too: the template's bytes hold exactly one blank line, at their end.
        template = self._templates.current
        if template is not None and not self._reasoning and not self._split.held and not self._token_lanes.dormant \
                and (frame := template.match(data)) is not None:
            return [frame]
        raws = self._split.feed(data)
        if template is not None and not self._reasoning and not self._token_lanes.dormant and raws:
            # The frames of a burst, most of them the learnt shape: decoded in one call
            # (``TextTemplate.match_run``), the rest as one by one (a miss may change the codec's state).
            frames = template.match_run(raws)
            return frames if len(frames) == len(raws) else frames + [self._decode(r) for r in raws[len(frames):]]
        return [self._decode(raw) for raw in raws]

    def flush(self) -> list[Frame]:
        rest = self._split.flush()
        return [self._decode(rest)] if rest.strip() else ([Frame(rest)] if rest else [])

    def _decode(self, raw: bytes) -> Frame:
        # Open reasoning lanes make a text frame's decode stateful (the answer's start ends them):
        # templates are used and learnt only without them.
        template = self._templates.current
        if template is not None and not self._reasoning and not self._token_lanes.dormant \
                and (frame := template.match(raw)) is not None:
            return frame
        try:
            frame = self._decode_frame(raw)
        except (TypeError, AttributeError, ValueError, KeyError):
            return Frame(raw, unreadable=True)  # an unexpected shape fails closed, never raised on
        if not self._reasoning and not self._token_lanes.tracking:  # (learning decodes a probe once more)
            self._templates.learn(raw, frame, self._decode_frame)
        return frame

    def _decode_frame(self, raw: bytes) -> Frame:
        sse = parse_fields(raw)
        if sse.foreign:  # the SDK skips a line that is no SSE field, other clients may read it
            return Frame(raw, unreadable=True)
        if sse.labels or sse.event is not None:  # ids, comments, event names: rare in a chat stream
            frame = self._decode_data(raw, sse)
            return Frame(raw, (*label_events(sse), *frame.events), last=frame.last, unreadable=frame.unreadable)
        return self._decode_data(raw, sse)

    def _decode_data(self, raw: bytes, sse: SSEFrame) -> Frame:
        if not sse.has_data:
            return Frame(raw, self._close_tools())
        if sse.data.startswith("[DONE]"):
            if sse.data.rstrip() != "[DONE]":  # the SDK stops at the prefix, a client that prints the line shows the rest
                return Frame(raw, unreadable=True)
            return Frame(raw, self._close_tools(), last=True)
        chunk = output_object(sse.data)
        if chunk is None:
            return Frame(raw, unreadable=True)
        if chunk.get("error"):
            err = chunk["error"]
            msg = err.get("message") if isinstance(err, dict) else None
            return Frame(raw, (error_event(chunk, str(msg or "upstream error"), _ERROR_TOP, _ERROR_INNER),))
        extras = [] if _BODY_FIELDS.issuperset(chunk) else lane_events(unread(chunk, _TOP))
        if not self._head and "id" in chunk:
            self._head = {k: chunk[k] for k in ("id", "object", "created", "model", "system_fingerprint")
                          if k in chunk}
        events: list[Event] = extras
        choices = chunk.get("choices")
        if type(choices) is not list and choices is not None:
            return Frame(raw, (Unvetted("chat choices of an unknown shape"),))
        for choice in choices or []:
            if not isinstance(choice, dict):
                events.append(Unvetted("chat choice of an unknown shape"))
                continue
            events += self._choice_events(choice)
        return Frame(raw, tuple(events))

    def _choice_events(self, choice: dict[str, Any]) -> list[Event]:
        c = _choice_index(choice)
        if c:
            self._sent_choices.add(c)  # a tail ends every choice the upstream began, seen or not
        delta, shape = choice.get("delta"), _CHOICE
        if delta is None and "message" in choice:
            delta, shape = choice["message"], _MESSAGE_CHOICE  # some servers send whole messages in a stream
        if type(delta) is not dict and delta is not None:
            return [Unvetted("chat delta of an unknown shape")]
        events = message_events(delta, c) if delta else []
        # Unread fields are lanes of their own, never reasoning (which the answer's start ends).
        extras = [] if _plain_choice(choice, delta, shape.keys) else \
            lane_events(unread(choice, shape, f"choices[{c}]"))
        if self._reasoning or not _plain_answer(events):
            self._track_reasoning(c, delta, events)
        if (logprobs := choice.get("logprobs")) is not None:
            events += logprob_events(logprobs, events, c, self._token_lanes)
        elif self._token_lanes.dormant and events:  # text without tokens: the tokens no longer spell it
            events += self._token_lanes.text_only(c, "".join(
                e.text for e in events if isinstance(e, TextDelta) and e.channel in (ANSWER, "refusal")))
        if delta:
            tool_calls = delta.get("tool_calls") or []
            if type(tool_calls) is not list:
                return [Unvetted("chat tool calls of an unknown shape")]
            for tc in tool_calls:
                events.extend(self._tool_events(tc, c))
            if isinstance(fc := delta.get("function_call"), dict):
                events.extend(self._tool_events({"index": "function_call", "function": fc}, c))
        if choice.get("finish_reason"):
            events.extend(self._close_tools(c))
            events.append(Finish(str(choice["finish_reason"]), c))
        return extras + events if extras else events

    def _track_reasoning(self, c: int, delta: dict[str, Any] | None, events: list[Event]) -> None:
        """Reasoning comes before the answer: once answer text or a tool call starts, the reasoning
        lanes of this choice end (their tail is checked and released; more of them fails closed)."""
        if self._reasoning.get(c) and delta and _starts_answer(delta, events):
            events[:0] = [LaneEnd(c, ch) for ch in sorted(self._reasoning.pop(c))]
        for e in events:
            if isinstance(e, TextDelta) and e.channel not in _ANSWER_CHANNELS:
                self._reasoning.setdefault(c, set()).add(e.channel)

    def _tool_events(self, tc: Any, c: int) -> list[Event]:
        if not isinstance(tc, dict) or _unreadable_call(tc):
            return [Unvetted("chat tool call of an unknown shape")]
        if c in self._unindexed:
            return [Unvetted("a chat tool-call delta beside one without an index")]
        index = tc.get("index")
        if index is None:
            # No index: clients fill it in differently (0, the next slot, by id). Only a choice's one
            # and only tool-call delta reads alike everywhere: the whole call.
            if self._begun_tools.get(c, 0) or self._open_tools.get(c):
                return [Unvetted("a chat tool-call delta without an index beside other calls")]
            self._unindexed.add(c)
            index = 0
        key = str(index)
        name, args = _function_of(tc)  # type "function" or "custom" (freeform input)
        call_id = tc.get("id")
        events: list[Event] = []
        open_tools = self._open_tools.setdefault(c, {})
        if key not in open_tools:
            if key != "function_call":
                # The SDK's stream helper pairs a delta with the call at that *list position* (a call
                # begun at index 1 first is its entry 0, and index 0's deltas join it; a gap shifts the
                # rest): only a call begun at the next unused index is assembled as the proxy reads it.
                begun = self._begun_tools.get(c, 0)
                if type(index) is not int or index != begun:
                    return [Unvetted("a chat tool call begun at an index other than the next one")]
                self._begun_tools[c] = begun + 1
            open_tools[key] = name
            self._tool_ids[(c, key)] = str(call_id or "")
            events.append(ToolCallStart(key, str(call_id or ""), name, c))
        elif name:
            # A name in a later delta, even the same one: the SDK's stream helper (and clients like it)
            # joins the pieces into a tool the rules never assessed (``run_`` + ``run_``: ``run_run_``).
            return [Unvetted("a chat tool call's name continued in a later delta")]
        elif call_id and call_id != self._tool_ids.get((c, key)):
            # Another id mid-call: the SDK joins the ids, clients that key calls by id begin a new call
            # with the arguments that follow (a call the rules never judged on its own).
            return [Unvetted("a chat tool call's id changed in a later delta")]
        if args:
            events.append(ToolCallArgsDelta(key, args, c))
        return events

    def _close_tools(self, choice: int | None = None) -> tuple[Event, ...]:
        ends: list[Event] = []
        for c in sorted(self._open_tools) if choice is None else [choice]:
            ends += [ToolCallEnd(k, c) for k in sorted(self._open_tools.pop(c, ()))]
        return tuple(ends)

    # -- what the client has ------------------------------------------------------------------
    def note_sent(self, frame: Frame) -> None:
        events = frame.events
        if events or b'"role"' in frame.raw:
            self._sent_role = True
        if ToolCallStart in map(type, events):  # (a frame of text: one C pass, no loop)
            for e in events:
                if isinstance(e, ToolCallStart) and e.choice == 0 and e.key.isdigit():
                    self._sent_tool_indexes.add(int(e.key))

    # -- rendering -----------------------------------------------------------------------------
    def _chunk(self, delta: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
        head = self._head or {"id": "chatcmpl-guardproxy", "object": "chat.completion.chunk",
                              "created": 0, "model": ""}
        return {**head, "object": "chat.completion.chunk",
                "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    def render_replaced(self, replaced: Replaced) -> bytes:
        signal = self._chunk({})
        signal["guardproxy"] = replaced.payload()
        return f"event: {REPLACED_EVENT}\ndata: {dumps(signal)}\n\n".encode()

    def render_tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> bytes:
        out: list[str] = []
        if replaced:
            out.append(self.render_replaced(replaced).decode())
        first: dict[str, Any] = {} if self._sent_role else {"role": "assistant"}
        if message.text or not self._sent_role:
            out.append(f"data: {dumps(self._chunk({**first, 'content': message.text}))}\n\n")
        base = max(self._sent_tool_indexes, default=-1) + 1
        for n, call in enumerate(message.tool_calls):
            tc = {"index": base + n, "id": call.call_id, "type": "function",
                  "function": {"name": call.name, "arguments": call.arguments}}
            out.append(f"data: {dumps(self._chunk({'tool_calls': [tc]}))}\n\n")
        out.append(f"data: {dumps(self._chunk({}, _finish_reason(message, finish)))}\n\n")
        # Every other choice the client has is ended the same way, with the same text (a replaced or
        # re-asked answer replaces all choices: see README, "Several choices").
        for c in sorted(self._sent_choices - {0}):
            delta = {"content": message.text} if message.text else {}
            out.append(f"data: {dumps(self._chunk(delta, 'content_filter' if finish == 'filtered' else 'stop', c))}\n\n")
        out.append("data: [DONE]\n\n")
        return "".join(out).encode()

    def render_error(self, message: str, kind: ErrorKind) -> bytes:
        return f"data: {dumps(error_object(message, kind))}\n\n".encode()

    def retext(self, frame: Frame, texts: dict[Lane, str]) -> bytes:
        chunk = loads(parse_fields(frame.raw).data)
        choices = _by_index(chunk.get("choices"))
        for (c, _), text in texts.items():
            _set_content(choices[c]["delta"], text)
            choices[c]["logprobs"] = None  # the tokens of the redacted span must not survive
        return f"data: {dumps(chunk)}\n\n".encode()
