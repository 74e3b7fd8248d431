"""Anthropic Messages: ``event: <name>`` + ``data: {"type": "<name>", ...}`` frames, no terminator line.

A message streams as ``message_start``, then per content block ``content_block_start`` → deltas →
``content_block_stop`` (keyed by the block ``index``), then ``message_delta`` (``stop_reason``) and
``message_stop``; ``ping`` may appear anywhere.

Traps (anthropic-python 2.14, ``_streaming.py`` and ``lib/streaming/_messages.py``):
- The SDK drops every SSE event without an ``event:`` line, so every frame we render has one, and we
  decode nameless frames to no events (the client never sees their text).
- ``MessageStream`` appends a block per ``content_block_start`` and addresses deltas by list position,
  so blocks we add must continue the client's indexes with no gap. Without a ``message_start`` it has
  no final message, and the TypeScript SDK's (Claude Code's) throws "Unexpected event order" on any
  event before one, or on a second one: a tail rendered when nothing was sent starts with exactly one.
- The replaced signal is an unknown event name: the Python SDK yields it (a raw stream shows its
  payload) and ``MessageStream`` skips it; the TypeScript SDK (Claude Code) yields only the six known
  events, so it never sees it. We still put it after ``message_start`` for stricter parsers.
- ``input_json_delta`` fragments are parsed as partial JSON by the SDK: invalid JSON raises there, so
  tool calls we render carry re-serialised arguments (``{}`` when they were not valid JSON).
- Only ``text_delta`` is visible text; thinking, signature and citations deltas are not.
- With extended thinking, an assistant turn replayed with its ``tool_use`` must keep the signed
  ``thinking`` / ``redacted_thinking`` blocks before it, unchanged, or the API answers 400. The stream
  codec reassembles them (``provider_parts``) and ``with_tool_feedback`` puts them first.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any

import msgspec

from guardrails.datamodel import (
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
    REPLACED_EVENT,
    BadRequest,
    ErrorKind,
    FinishKind,
    JsonBody,
    Replaced,
    SplitStream,
    StreamCodec,
    TurnsWireFormat,
    body_bytes,
    dumps,
    known_only,
    label_events,
    loads,
    output_object,
    quick_decoder,
    with_temperature,
)
from proxy.wire.conversation_delta import Reading, Turns
from proxy.wire.input_parts import ANTHROPIC_ROLES, is_system
from proxy.wire.shapes import ByType, by_type, error_event, lane_events, obj, plain, unread, whole_events
from proxy.wire.sse import SSESplitter, parse_fields
from proxy.wire.template import Templates

_ERROR_TYPES: dict[str, str] = {
    "invalid_request": "invalid_request_error",
    "authentication": "authentication_error",
    "permission": "permission_error",
    "not_found": "not_found_error",
    "too_large": "request_too_large",
    "rate_limit": "rate_limit_error",
    "upstream": "api_error",
    "timeout": "timeout_error",
    "guardrail": "invalid_request_error",
    "overloaded": "overloaded_error",
}

_KEPT_BLOCKS = ("thinking", "redacted_thinking")
"""Blocks a rewritten response keeps: the API rejects a follow-up turn whose tool_use lost the signed
thinking block before it, and thinking is not the visible text we replace."""

_STRUCTURE_EVENTS = frozenset({"message_start", "content_block_start", "content_block_stop"})
_MESSAGE_FIELDS = frozenset({"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage",
                             "container", "context_management"})
"""The fields of a Message; others (a ``completion`` as the legacy API put it) are checked whole and
never kept in what the proxy renders (see ``proxy.wire.shapes``)."""
_BLOCK = by_type(text=obj("type", "text", "citations"), thinking=obj("type", "thinking", "signature"),
                 redacted_thinking=obj("type", "data"),
                 tool_use=obj("type", "id", "name", "input", "caller", "toolset_name"))
"""The blocks the codec reads field by field (server-tool blocks have every string checked)."""
_STOP_DETAILS = obj("type", "category")
"""A refusal's details: its ``explanation`` is text, outside the shape, so checked."""
_MESSAGE = obj(*_MESSAGE_FIELDS, content=_BLOCK, stop_details=_STOP_DETAILS)
_EVENT = by_type(
    message_start=obj("type", message=_MESSAGE),
    content_block_start=obj("type", "index", content_block=_BLOCK),
    content_block_delta=obj("type", "index", delta=by_type(
        text_delta=obj("type", "text"), thinking_delta=obj("type", "thinking"),
        signature_delta=obj("type", "signature"), citations_delta=obj("type", "citation"),
        input_json_delta=obj("type", "partial_json"))),
    content_block_stop=obj("type", "index"),
    message_delta=obj("type", "usage", "context_management",
                      delta=obj("stop_reason", "stop_sequence", "container", stop_details=_STOP_DETAILS)),
    message_stop=obj("type"), ping=obj("type"))
"""Every event the codec reads, down to its blocks and deltas (``proxy.wire.shapes``): whatever lies
outside is checked (in a delta, as a lane per field)."""
_DELTA_EVENT = _EVENT.shapes["content_block_delta"]
_DELTAS = _DELTA_EVENT.children["delta"]
assert isinstance(_DELTAS, ByType)
_DELTA_SHAPES = _DELTAS.shapes


def _plain_event(name: str, data: dict[str, Any]) -> bool:
    """A text delta event with nothing but its known fields (the hot path skips ``unread``)."""
    delta = data.get("delta")
    return (name == "content_block_delta" and _DELTA_EVENT.keys.issuperset(data) and type(delta) is dict
            and plain(delta, _DELTA_SHAPES.get(delta.get("type"))))  # type: ignore[arg-type]


_ASCII_ESCAPE = re.compile(rb"\\u00[4-7]")
"""A JSON escape of a letter or ``_`` (and a few other ASCII characters): what could spell an event
type the frame's bytes do not (``note_sent``)."""
_QUIET_EVENTS = frozenset({"ping", "message_stop"})
"""Event types without text (after ``_event_type``: an SDK reads a misnamed event by its data.type)."""
_SERVER_BLOCKS = ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
                  "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "mcp_tool_use",
                  "mcp_tool_result", "tool_search_tool_result", "container_upload")
"""Blocks of tools that run at Anthropic: not calls the client makes, but shown (queries, results,
code output): every string in them is checked whole."""
_OPAQUE_KEYS = frozenset({"id", "type", "tool_use_id", "encrypted_content", "encrypted_index", "signature", "data",
                          "file_id", "page_age", "media_type", "cache_control"})
"""Keys whose strings are identifiers or opaque blobs, not text a client renders."""


def _strings(value: Any) -> list[str]:
    """Every client-renderable string in a block (identifiers and opaque blobs left out)."""
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in _OPAQUE_KEYS for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(loads(a) == loads(b))
    except ValueError:
        return False


def _thinking_lane(index: int) -> str:
    return f"thinking#{index}"


def _block_events(index: int, block: dict[str, Any]) -> list[Event]:
    """The text a (start of a) content block shows: text, thinking, citations, server tool blocks.
    Tool use is decoded by the caller; an unknown block type fails closed."""
    kind = block.get("type")
    field = "text" if kind == "text" else "thinking" if kind == "thinking" else None
    if field is not None and not isinstance(block.get(field), str | None):
        return [Unvetted(f"a {kind} block whose {field} is not a string")]  # the client would print it
    if kind == "text":
        events: list[Event] = [TextDelta(block["text"])] if isinstance(block.get("text"), str) and block["text"] \
            else []
        return events + [WholeText(t, 0, "citation") for t in _strings(block.get("citations"))]
    if kind == "thinking":
        text = block.get("thinking")
        return [TextDelta(text, 0, _thinking_lane(index))] if isinstance(text, str) and text else []
    if kind in ("redacted_thinking", "tool_use"):
        return []  # redacted thinking is an encrypted blob; tool_use is decoded by the caller
    if kind in _SERVER_BLOCKS:
        return [WholeText(t, 0, str(kind)) for t in _strings(block)]
    return [Unvetted(f"content block {kind!r}")]


def error_object(message: str, kind: ErrorKind, extra: dict[str, str] | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"type": _ERROR_TYPES[kind], "message": message}
    if extra:
        err.update(extra)
    return {"type": "error", "error": err}


def _event_type(name: str, data: dict[str, Any]) -> str:
    """What an SDK takes the event for: it skips only nameless, ``ping`` and ``error`` events by
    name and types every other one by its ``data.type`` (anthropic-python ``_streaming.py``; the
    TypeScript SDK the same, after checking the name is one of the six message events). A name that
    disagrees with its ``data.type`` is therefore read by the type, or the client would show a delta
    the proxy took for something else."""
    kind = data.get("type")
    return kind if name not in ("ping", "error") and isinstance(kind, str) else name


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {dumps(data)}\n\n"


def _args_object(arguments: str) -> dict[str, Any]:
    """``tool_use.input`` must be an object: parse the JSON text, ``{}`` when it isn't one."""
    try:
        value = loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _finish_reason(message: AssistantMessage, finish: FinishKind) -> str:
    if finish == "filtered":
        return "refusal"
    return "tool_use" if message.tool_calls else "end_turn"


_TEXT_TYPES = ("text", None)
"""A block's ``type`` read as a text block: ``text``, or none (absent or null) when it carries a
``text`` string, as the input screen reads it (``input_parts._kind``: lenient servers infer a block's
type from its keys, so an untyped system block is system prompt to them and must arm the canary)."""


def _text_of(content: Any) -> str:
    """Text of a ``content`` / ``system`` that is a string or a list of blocks (text blocks only)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") in _TEXT_TYPES and isinstance(b.get("text"), str))
    return ""


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _history(messages: list[dict[str, Any]]) -> list[HistoryToolCall]:
    results: dict[str, bool] = {}
    for m in messages:
        if m.get("role") == "user":
            for b in _blocks(m.get("content")):
                if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str):
                    results[b["tool_use_id"]] = not b.get("is_error", False)
    calls: list[HistoryToolCall] = []
    for m in messages:
        if m.get("role") == "assistant":
            for b in _blocks(m.get("content")):
                if b.get("type") == "tool_use":
                    cid = str(b.get("id", ""))
                    calls.append(HistoryToolCall(cid, str(b.get("name", "")), dumps(b.get("input", {})),
                                                 results.get(cid)))
    return calls


def _content_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    out += [{"type": "tool_use", "id": c.call_id, "name": c.name, "input": _args_object(c.arguments)}
            for c in message.tool_calls]
    return out

_ERROR_TOP = frozenset({"type", "error", "request_id"})
_ERROR_INNER = frozenset({"type", "message", "details"})
"""An ``error`` event's fields (``{"type": "error", "error": {"type": "overloaded_error", "message":
...}, "request_id": ...}``): a frame with only these is relayed as the upstream sent it."""


class _QuickBlock(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None


class _QuickMessage(msgspec.Struct, gc=False):
    role: Any = None
    content: str | list[_QuickBlock] | msgspec.UnsetType = msgspec.UNSET
    """Blocks as their type and text only: tool results and images are skipped, not built (a block
    that is not an object makes the whole quick decode decline)."""


class _QuickRequest(msgspec.Struct, gc=False):
    """What ``parse_request`` reads of a request (``quick_view``); tools and the rest are skipped."""

    model: Any = None
    stream: Any = None
    system: Any = ""
    messages: list[_QuickMessage] | None = None


_QUICK = quick_decoder(_QuickRequest)


def _quick_text(content: str | list[_QuickBlock]) -> str:
    """``_text_of`` of a quick-decoded content."""
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if b.type in _TEXT_TYPES and isinstance(b.text, str))


def _whole_history(body: JsonBody) -> list[HistoryToolCall]:
    return _history(body.data["messages"])


def _fold(read: Reading, messages: Sequence[_QuickMessage]) -> Reading | None:
    """``read`` with more messages: what ``parse_request`` does, on the same values (None for a
    message it would refuse: the whole path then decides)."""
    system: list[str] | None = None
    last_user_text = read.last_user_text
    for m in messages:
        role, content = m.role, m.content
        if not isinstance(role, str) or content is msgspec.UNSET:
            return None
        if role == "system" or (role != "user" and role != "assistant" and is_system(role, ANTHROPIC_ROLES)):
            system = [*(system or read.system), _quick_text(content)]
        elif role == "user" and (t := _quick_text(content)):
            last_user_text = t  # the last user turn with text (an agent's last one may hold only tool results)
    return Reading(read.model, read.stream, read.system if system is None else tuple(system), last_user_text)


def _read_whole(raw: bytes) -> tuple[Reading, list[_QuickMessage]] | None:
    quick = _QUICK(raw)
    if (quick is None or quick.messages is None or not isinstance(quick.model, str)
            or not isinstance(quick.system, (str, list)) or not isinstance(quick.stream, (bool, type(None)))):
        return None
    read = _fold(Reading(quick.model, quick.stream, (_text_of(quick.system),), ""), quick.messages)
    return None if read is None else (read, quick.messages)


_TURNS = Turns(_read_whole, _fold, _QuickMessage, b'{"role":"guardproxy-probe","content":""}')
"""Bodies of recent requests: an agent's next turn is read from the messages it adds (``turns``)."""


class AnthropicMessages(TurnsWireFormat[Reading]):
    name = "anthropic"
    turns = _TURNS

    def view_of(self, read: Reading, body: JsonBody, *, stream: bool) -> RequestView:
        return RequestView(model=read.model, stream=stream or bool(read.stream),
                           system_prompt="\n".join(p for p in read.system if p),
                           last_user_text=read.last_user_text, history=LazyHistory(partial(_whole_history, body)))

    def parse_request(self, body: dict[str, Any], *, stream: bool) -> RequestView:
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise BadRequest("messages: Input should be a valid list of message objects")
        for n, m in enumerate(messages):
            if not isinstance(m.get("role"), str) or not isinstance(m.get("content"), (str, list)):
                raise BadRequest(f"messages.{n}: needs a string 'role' and a string or list 'content'")
        model = body.get("model")
        if not isinstance(model, str):
            raise BadRequest("model: Input should be a valid string")
        system = body.get("system", "")
        if not isinstance(system, (str, list)):
            raise BadRequest("system: Input should be a string or a list of text blocks")
        # Claude Code also sends mid-conversation ``system`` role messages: they are system prompt too.
        parts = [_text_of(system)] + [_text_of(m["content"]) for m in messages
                                      if m["role"] == "system" or is_system(m["role"], ANTHROPIC_ROLES)]
        # The last user turn in an agent loop often holds only tool_result blocks: take the last text.
        user_texts = [t for m in messages if m["role"] == "user" and (t := _text_of(m["content"]))]
        return RequestView(model=model, stream=stream or bool(body.get("stream")),
                           system_prompt="\n".join(p for p in parts if p),
                           last_user_text=user_texts[-1] if user_texts else "", history=LazyHistory(partial(_history, messages)))

    def new_stream(self, *, sse: bool = True) -> StreamCodec:
        return MessagesStream()

    def message_of(self, data: Any) -> AssistantMessage:
        blocks = _blocks(data["content"])
        calls = [ToolCall(str(b.get("id", "")), str(b.get("name", "")), dumps(b.get("input", {})))
                 for b in blocks if b.get("type") == "tool_use"]
        annotations = [str(c[k]) for b in blocks if b.get("type") == "text" for c in _blocks(b.get("citations"))
                       for k in ("url", "title", "document_title", "cited_text") if c.get(k)]
        return AssistantMessage(text="".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text"),
                                tool_calls=calls, finish_reason=data.get("stop_reason"), annotations=annotations,
                                provider_parts=[copy.deepcopy(b) for b in blocks if b.get("type") in _KEPT_BLOCKS])

    def events_of(self, data: Any) -> tuple[Event, ...]:
        if not isinstance(data.get("content"), list):
            raise TypeError("not a Messages response: no content")
        events: list[Event] = whole_events(unread(data, _MESSAGE))
        for index, b in enumerate(_blocks(data["content"])):
            events += _block_events(index, b)
            if b.get("type") == "tool_use":
                key = str(index)
                events += [ToolCallStart(key, str(b.get("id", "")), str(b.get("name", ""))),
                           ToolCallArgsDelta(key, dumps(b.get("input", {}))), ToolCallEnd(key)]
        if data.get("stop_reason"):
            events.append(Finish(str(data["stop_reason"])))
        return tuple(events)

    def render_response(self, body: bytes, message: AssistantMessage, finish: FinishKind,
                        replaced: Replaced | None) -> bytes:
        data = known_only(loads(body), _MESSAGE_FIELDS)
        # Nothing of the original stays: thinking blocks may hold what was blocked (no tool_use that
        # would need their signature remains either).
        data["content"] = _content_blocks(message)
        data["stop_reason"] = _finish_reason(message, finish)
        data["stop_sequence"] = None
        return body_bytes(data, replaced)

    def retext_body(self, body: bytes, texts: dict[Lane, str]) -> bytes:
        data = loads(body)
        blocks, done = [], False
        for b in _blocks(data.get("content")):  # the text blocks collapse into the first one
            if b.get("type") == "text":
                if done:
                    continue
                b, done = {**b, "text": texts.get((0, "text"), b.get("text", ""))}, True
            blocks.append(b)
        data["content"] = blocks
        return dumps(data).encode()

    def http_error(self, status: int, message: str, kind: ErrorKind,
                   extra: dict[str, str] | None = None) -> bytes:
        body = error_object(message, kind, extra)
        body["request_id"] = f"req_guardproxy{uuid.uuid4().hex[:24]}"
        return dumps(body).encode()

    def with_system(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        out = copy.copy(body)
        system = body.get("system")
        if isinstance(system, list):
            out["system"] = [*system, {"type": "text", "text": text}]
        else:
            out["system"] = f"{system}\n\n{text}" if isinstance(system, str) and system else text
        return out

    def with_tool_feedback(self, body: dict[str, Any], message: AssistantMessage,
                           results: list[tuple[ToolCall, str]]) -> dict[str, Any]:
        # All results of one assistant turn go in the single user message that follows it. The calls
        # were not run, so the results are errors (which is also what the history will then say).
        # ``provider_parts`` are the turn's signed thinking blocks, exactly as received: they must come
        # first, unchanged, or the API rejects the replayed tool_use (see the module docstring).
        out = copy.copy(body)
        feedback = [{"type": "tool_result", "tool_use_id": call.call_id, "content": text, "is_error": True}
                    for call, text in results]
        thinking = [copy.deepcopy(p) for p in message.provider_parts if p.get("type") in _KEPT_BLOCKS]
        out["messages"] = [*body.get("messages", []),
                           {"role": "assistant", "content": thinking + _content_blocks(message)},
                           {"role": "user", "content": feedback}]
        return out

    def judge_request(self, model: str, prompt: str, *, temperature: float | None = 0.0
                      ) -> tuple[str, dict[str, Any]]:
        # max_tokens is required by the Messages API.
        body: dict[str, Any] = {"model": model, "max_tokens": 1024, "temperature": temperature, "stream": False,
                                "messages": [{"role": "user", "content": prompt}]}
        return "/v1/messages", with_temperature(body, temperature)


class MessagesStream(SplitStream[SSESplitter]):
    def __init__(self) -> None:
        super().__init__(SSESplitter())
        self._message: dict[str, Any] = {}
        """The upstream's ``message_start`` message, to render our own start in its likeness."""
        self._output_tokens = 0
        self._open_tools: dict[int, tuple[str | None, list[str]]] = {}
        """Open tool_use blocks -> the input their start gave (JSON, None when empty) and the
        fragments so far: the SDK keeps the start's input only when no fragment carries any."""
        self._blocks = 0
        """Blocks started so far: the SDK appends each to its content and addresses a delta by list
        position, so a block must start at the index that position is, and deltas go to the last one."""
        self._server_inputs: set[int] = set()
        """Open server / MCP tool-use blocks: their streamed input is a lane of its own."""
        self._sent_start = False
        self._sent_last_index = -1
        self._sent_open: set[int] = set()
        """Blocks the client has seen start but not stop: closed before anything we append."""
        self._thinking: dict[int, tuple[dict[str, Any], list[str], list[str]]] = {}
        """Open thinking blocks by index: the start block, thinking and signature fragments."""
        self._thought: list[tuple[int, dict[str, Any]]] = []
        """Complete thinking / redacted_thinking blocks (index, block), for ``provider_parts``."""
        self._templates = Templates("text")
        """The shape of the last text_delta event: later ones decode from their bytes (``template``)."""

    # -- decoding ---------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[Frame]:
        # A read of one whole text delta of the learnt shape skips the splitter too (``template``).
        template = self._templates.current
        if template is not None and not self._split.held and (frame := template.match(data)) is not None:
            return [frame]
        return [self._decode(raw) for raw in self._split.feed(data)]

    def _decode(self, raw: bytes) -> Frame:
        # A text_delta's decode reads no codec state and changes none: templates need no condition.
        template = self._templates.current
        if template is not None and (frame := template.match(raw)) is not None:
            return frame
        frame = self._decode_frame(raw)
        self._templates.learn(raw, frame, self._decode_frame)
        return frame

    def _decode_frame(self, raw: bytes) -> Frame:
        sse = parse_fields(raw)
        if sse.foreign:  # the SDKs skip a line that is no SSE field, other clients may read it
            return Frame(raw, unreadable=True)
        if not sse.has_data:
            # comments, and events that carry nothing: an event name of this API shows nothing new
            return Frame(raw, tuple(label_events(sse, sse.event if sse.event in _EVENT.shapes else None)))
        data = output_object(sse.data)
        if data is None:
            return Frame(raw, unreadable=True)
        if sse.event is None or sse.event == "ping":
            # The SDKs skip these by name, whatever their data says; clients that read events by
            # data.type would show them. Only a ping is the same event for both.
            if data.get("type") != "ping":
                return Frame(raw, unreadable=True)
            return Frame(raw, (*label_events(sse, "ping"), *whole_events(unread(data, _EVENT))))
        try:
            name = _event_type(sse.event, data)
            events = self._events(name, data)
            if not _plain_event(name, data) and (found := unread(data, _EVENT, f"{name}#{data.get('index', '')}")):
                events += lane_events(found) if name == "content_block_delta" else whole_events(found)
            if sse.labels or sse.event != name:
                events[:0] = label_events(sse, name)
            return Frame(raw, tuple(events), last=name == "message_stop")
        except (LookupError, TypeError, ValueError, AttributeError):
            return Frame(raw, (Unvetted(f"a malformed {sse.event!r} event"),))

    def _events(self, name: str, data: dict[str, Any]) -> list[Event]:
        if name in _QUIET_EVENTS:
            return []
        if name == "content_block_delta":
            index = int(data["index"])
            if index != self._blocks - 1:  # the SDK and the proxy would add it to different texts
                return [Unvetted("a delta for a block other than the last started")]
            return self._on_delta(index, data["delta"])
        if name == "content_block_start":
            index = int(data["index"])
            if index != self._blocks:  # the SDK would pair it with another index's deltas
                return [Unvetted("a content block started out of order")]
            self._blocks += 1
            self._templates.current = None  # a text delta's template holds the index it was learnt at
            return self._on_block_start(index, data["content_block"])
        if name == "content_block_stop":
            index = int(data["index"])
            if index in self._thinking:
                self._close_thinking(index)
                return [LaneEnd(0, _thinking_lane(index))]
            if index in self._server_inputs:
                self._server_inputs.discard(index)
                return [LaneEnd(0, f"server_tool#{index}")]
            return self._end_tool(index)
        if name == "message_delta":
            self._output_tokens = int((data.get("usage") or {}).get("output_tokens", self._output_tokens))
            reason = (data.get("delta") or {}).get("stop_reason")
            return [*self._close_tools(), Finish(str(reason))] if reason else []
        if name == "message_start":
            message = data["message"]
            self._message = known_only(message, _MESSAGE_FIELDS)
            if self._message.get("content"):
                return [Unvetted("content in message_start")]
            self._output_tokens = int((self._message.get("usage") or {}).get("output_tokens", 0))
            return []
        if name == "error":
            err = data.get("error")
            msg = err.get("message") if isinstance(err, dict) else None
            return [error_event(data, str(msg or "upstream error"), _ERROR_TOP, _ERROR_INNER)]
        return [Unvetted(f"event {name!r}")]

    def _on_delta(self, index: int, delta: dict[str, Any]) -> list[Event]:
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            return [TextDelta(delta["text"])] if delta["text"] else []
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            if index in self._thinking:
                self._thinking[index][1].append(delta["thinking"])
            return [TextDelta(delta["thinking"], 0, _thinking_lane(index))] if delta["thinking"] else []
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            if index in self._thinking:
                self._thinking[index][2].append(delta["signature"])
            return []
        if kind == "citations_delta" and isinstance(delta.get("citation"), dict):
            return [WholeText(t, 0, "citation") for t in _strings(delta["citation"])]
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            if not delta["partial_json"]:
                return []
            if index in self._open_tools:
                self._open_tools[index][1].append(delta["partial_json"])
                return [ToolCallArgsDelta(str(index), delta["partial_json"])]
            if index in self._server_inputs:  # a server tool's input (a query)
                return [TextDelta(delta["partial_json"], 0, f"server_tool#{index}")]
            return [Unvetted("input_json_delta for a block that takes no input")]
        return [Unvetted(f"delta {kind!r}")]

    def _on_block_start(self, index: int, block: dict[str, Any]) -> list[Event]:
        events = _block_events(index, block)
        if block.get("type") in _KEPT_BLOCKS:
            self._thinking[index] = (copy.deepcopy(block), [], [])
        if block.get("type") in ("server_tool_use", "mcp_tool_use"):
            self._server_inputs.add(index)
        if block.get("type") != "tool_use":
            return events
        # Some gateways send the whole input here, with no fragments: it counts only if none follows.
        self._open_tools[index] = (dumps(block["input"]) if block.get("input") else None, [])
        events.append(ToolCallStart(str(index), str(block.get("id", "")), str(block.get("name", ""))))
        return events

    def _end_tool(self, index: int) -> list[Event]:
        if index not in self._open_tools:
            return []
        given, fragments = self._open_tools.pop(index)
        if fragments:  # the SDK's input: the fragments alone; a reader of the start shows its input
            if given is not None and not _same_json(given, "".join(fragments)):
                return [Unvetted("a tool_use block whose start input and fragments differ"), ToolCallEnd(str(index))]
            return [ToolCallEnd(str(index))]
        end = ToolCallEnd(str(index))
        return [ToolCallArgsDelta(str(index), given), end] if given is not None else [end]

    def _close_thinking(self, index: int) -> None:
        block, thinking, signature = self._thinking.pop(index)
        if block.get("type") == "thinking":
            block["thinking"] = str(block.get("thinking") or "") + "".join(thinking)
            block["signature"] = str(block.get("signature") or "") + "".join(signature)
        self._thought.append((index, block))

    def provider_parts(self) -> list[dict[str, Any]]:
        """The complete ``thinking`` (with its ``signature``) and ``redacted_thinking`` blocks, in
        block order, as the Messages API's content blocks: what ``with_tool_feedback`` replays."""
        return [copy.deepcopy(block) for _, block in sorted(self._thought, key=lambda t: t[0])]

    def _close_tools(self) -> list[Event]:
        return [e for i in sorted(self._open_tools) for e in self._end_tool(i)]

    # -- what the client has ------------------------------------------------------------------
    def note_sent(self, frame: Frame) -> None:
        # Only start/stop frames change what we track. A frame that spells none of their names and
        # escapes no ASCII letter (an escape could spell one in its data's type, which is what the
        # client goes by, see ``_event_type``) is none of them, whatever its fields: the bulk (deltas)
        # returns after a few C scans of its bytes, without parsing its fields (``parse_fields``:
        # 2.57 us a delta before, 0.74 after, ``bench.wire_cost --baseline``).
        raw = frame.raw
        if b"content_block_st" not in raw and b"message_start" not in raw \
                and (b"\\u00" not in raw or _ASCII_ESCAPE.search(raw) is None):
            return
        sse = parse_fields(raw)
        if sse.event in (None, "ping", "error"):
            return
        try:
            data = loads(sse.data)
            index = int(data.get("index", -1))
            kind = _event_type(str(sse.event), data)
        except (LookupError, ValueError, TypeError, AttributeError):
            return
        if kind not in _STRUCTURE_EVENTS:
            return
        if kind == "message_start":
            self._sent_start = True
        elif kind == "content_block_start":
            self._sent_last_index = max(self._sent_last_index, index)
            self._sent_open.add(index)
        else:
            self._sent_open.discard(index)

    # -- rendering -----------------------------------------------------------------------------
    def _start_if_needed(self) -> str:
        """A ``message_start`` when the client has none yet: the SDK raises on anything before it."""
        if self._sent_start:
            return ""
        self._sent_start = True
        head = {k: v for k, v in self._message.items() if k not in ("content", "stop_reason", "stop_sequence")}
        message = {"id": f"msg_guardproxy{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                   "model": "", **head, "content": [], "stop_reason": None, "stop_sequence": None}
        message.setdefault("usage", {"input_tokens": 0, "output_tokens": 0})
        return _event("message_start", {"type": "message_start", "message": message})

    def render_replaced(self, replaced: Replaced) -> bytes:
        # An unknown event name (see the module docstring); after a message_start for strict parsers.
        return (self._start_if_needed() + _event(REPLACED_EVENT, replaced.payload())).encode()

    def render_tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> bytes:
        out = [self.render_replaced(replaced).decode() if replaced else self._start_if_needed()]
        out += [_event("content_block_stop", {"type": "content_block_stop", "index": i})
                for i in sorted(self._sent_open)]
        self._sent_open.clear()
        index = self._sent_last_index + 1
        if message.text:
            out.append(self._block(index, {"type": "text", "text": ""},
                                   {"type": "text_delta", "text": message.text}))
            index += 1
        for call in message.tool_calls:
            out.append(self._block(index, {"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}},
                                   {"type": "input_json_delta",
                                    "partial_json": dumps(_args_object(call.arguments))}))
            index += 1
        self._sent_last_index = index - 1
        out.append(_event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": _finish_reason(message, finish), "stop_sequence": None},
            "usage": {"output_tokens": self._output_tokens}}))
        out.append(_event("message_stop", {"type": "message_stop"}))
        return "".join(out).encode()

    @staticmethod
    def _block(index: int, start: dict[str, Any], delta: dict[str, Any]) -> str:
        return (_event("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": start})
                + _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                + _event("content_block_stop", {"type": "content_block_stop", "index": index}))

    def render_error(self, message: str, kind: ErrorKind) -> bytes:
        return _event("error", error_object(message, kind)).encode()

    def retext(self, frame: Frame, texts: dict[Lane, str]) -> bytes:
        text = texts[(0, "text")]
        sse = parse_fields(frame.raw)
        data = loads(sse.data)
        if data.get("type") == "content_block_start":
            data["content_block"]["text"] = text
        else:
            data["delta"]["text"] = text
        return _event(sse.event or str(data.get("type")), data).encode()
