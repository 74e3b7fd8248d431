"""OpenAI Chat Completions: ``data: <chunk>`` frames, no ``event:`` lines, ``data: [DONE]`` at the end.

Tool calls stream keyed by ``index``; only the first delta of an index carries ``id`` and ``name``.
The replaced signal rides as ``event: output.message.replaced`` on a chunk-shaped payload with an
empty delta, which the official SDK yields as a harmless empty chunk (DESIGN.md, measured).
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

from guardrails.datamodel import (
    AssistantMessage,
    Event,
    Finish,
    Frame,
    HistoryToolCall,
    LazyHistory,
    RequestView,
    StreamError,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from proxy.sse import SSESplitter, parse_fields
from proxy.wire.base import (
    REPLACED_EVENT,
    BadRequest,
    ErrorKind,
    FinishKind,
    Replaced,
    StreamCodec,
    WireFormat,
    dumps,
    loads,
    with_temperature,
)

_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    "invalid_request": ("invalid_request_error", None),
    "authentication": ("authentication_error", "invalid_api_key"),
    "permission": ("permission_error", None),
    "not_found": ("invalid_request_error", "not_found"),
    "too_large": ("invalid_request_error", "request_too_large"),
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "upstream": ("server_error", "upstream_error"),
    "timeout": ("server_error", "upstream_timeout"),
    "guardrail": ("invalid_request_error", "content_filter"),
    "overloaded": ("server_error", "overloaded"),
}


def error_object(message: str, kind: ErrorKind, extra: dict[str, str] | None = None) -> dict[str, Any]:
    etype, code = _ERROR_TYPES[kind]
    err: dict[str, Any] = {"message": message, "type": etype, "param": None, "code": code}
    if extra:
        err.update(extra)
    return {"error": err}


def _content_text(content: Any) -> str:
    """Text of a message ``content`` that is a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


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
            fn = tc.get("function") or {} if isinstance(tc, dict) else {}
            cid = str(tc.get("id", "")) if isinstance(tc, dict) else ""
            calls.append(HistoryToolCall(cid, str(fn.get("name", "")), str(fn.get("arguments", "")),
                                         results.get(cid)))
    return calls


class OpenAIChat(WireFormat):
    name = "openai_chat"

    def parse_request(self, body: dict[str, Any], *, stream: bool) -> RequestView:
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise BadRequest("'messages' must be an array of message objects")
        model = body.get("model")
        if not isinstance(model, str):
            raise BadRequest("'model' must be a string")
        system = "\n".join(_content_text(m.get("content")) for m in messages
                           if m.get("role") in ("system", "developer"))
        users = [m for m in messages if m.get("role") == "user"]
        return RequestView(model=model, stream=bool(body.get("stream")), system_prompt=system,
                           last_user_text=_content_text(users[-1].get("content")) if users else "",
                           history=LazyHistory(partial(_history, messages)))

    def new_stream(self, *, sse: bool = True) -> StreamCodec:
        return ChatStream()

    def decode_response(self, body: bytes) -> AssistantMessage:
        data = loads(body)
        choice = data["choices"][0]
        msg = choice.get("message") or {}
        calls = [ToolCall(str(tc.get("id", "")), str((tc.get("function") or {}).get("name", "")),
                          str((tc.get("function") or {}).get("arguments", "")))
                 for tc in msg.get("tool_calls") or []]
        annotations = [str(a.get("url_citation", {}).get("url", "")) for a in msg.get("annotations") or []
                       if isinstance(a, dict)]
        return AssistantMessage(text=msg.get("content") or "", tool_calls=calls,
                                finish_reason=choice.get("finish_reason"), annotations=annotations)

    def render_response(self, body: bytes, message: AssistantMessage, finish: FinishKind,
                        replaced: Replaced | None) -> bytes:
        data = loads(body)
        choice = data["choices"][0]
        choice["message"] = _message_dict(message)
        choice["finish_reason"] = _finish_reason(message, finish)
        del data["choices"][1:]
        if replaced:
            data["guardproxy"] = replaced.payload()
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
        extra: list[dict[str, Any]] = [_message_dict(message)]
        extra += [{"role": "tool", "tool_call_id": call.call_id, "content": text} for call, text in results]
        out["messages"] = [*body.get("messages", []), *extra]
        return out

    def judge_request(self, model: str, prompt: str, *, temperature: float | None = 0.0
                      ) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": model, "temperature": temperature, "stream": False,
                                "messages": [{"role": "user", "content": prompt}]}
        return "/v1/chat/completions", with_temperature(body, temperature)


def _message_dict(message: AssistantMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.text or None, "refusal": None}
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.call_id, "type": "function",
                              "function": {"name": c.name, "arguments": c.arguments}}
                             for c in message.tool_calls]
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
        self._open_tools: set[int] = set()

    # -- decoding ---------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[Frame]:
        return [self._decode(raw) for raw in self._split.feed(data)]

    def flush(self) -> list[Frame]:
        rest = self._split.flush()
        return [self._decode(rest)] if rest.strip() else ([Frame(rest)] if rest else [])

    def _decode(self, raw: bytes) -> Frame:
        try:
            return self._decode_frame(raw)
        except (TypeError, AttributeError, ValueError, KeyError):
            return Frame(raw)  # a frame of an unexpected shape is relayed, never raised on

    def _decode_frame(self, raw: bytes) -> Frame:
        sse = parse_fields(raw)
        if not sse.has_data or sse.data.startswith("[DONE]"):
            return Frame(raw, self._close_tools())
        try:
            chunk = loads(sse.data)
        except ValueError:
            return Frame(raw)
        if not isinstance(chunk, dict):
            return Frame(raw)
        if chunk.get("error"):
            err = chunk["error"]
            msg = err.get("message") if isinstance(err, dict) else None
            return Frame(raw, (StreamError(str(msg or "upstream error")),))
        if not self._head and "id" in chunk:
            self._head = {k: chunk[k] for k in ("id", "object", "created", "model", "system_fingerprint")
                          if k in chunk}
        events: list[Event] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                events.append(TextDelta(content))
            for tc in delta.get("tool_calls") or []:
                events.extend(self._tool_events(tc))
            if choice.get("finish_reason"):
                events.extend(self._close_tools())
                events.append(Finish(str(choice["finish_reason"])))
        return Frame(raw, tuple(events))

    def _tool_events(self, tc: Any) -> list[Event]:
        if not isinstance(tc, dict):
            return []
        index = int(tc.get("index", 0))
        key = str(index)
        fn = tc.get("function") or {}
        events: list[Event] = []
        if index not in self._open_tools:
            self._open_tools.add(index)
            events.append(ToolCallStart(key, str(tc.get("id", "")), str(fn.get("name", ""))))
        args = fn.get("arguments")
        if isinstance(args, str) and args:
            events.append(ToolCallArgsDelta(key, args))
        return events

    def _close_tools(self) -> tuple[Event, ...]:
        ends = tuple(ToolCallEnd(str(i)) for i in sorted(self._open_tools))
        self._open_tools.clear()
        return ends

    # -- what the client has ------------------------------------------------------------------
    def note_sent(self, frame: Frame) -> None:
        if frame.events or b'"role"' in frame.raw:
            self._sent_role = True
        for e in frame.events:
            if isinstance(e, ToolCallStart):
                self._sent_tool_indexes.add(int(e.key))

    # -- rendering -----------------------------------------------------------------------------
    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        head = self._head or {"id": "chatcmpl-guardproxy", "object": "chat.completion.chunk",
                              "created": 0, "model": ""}
        return {**head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

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
        out.append("data: [DONE]\n\n")
        return "".join(out).encode()

    def render_error(self, message: str, kind: ErrorKind) -> bytes:
        return f"data: {dumps(error_object(message, kind))}\n\n".encode()

    def retext(self, frame: Frame, text: str) -> bytes:
        chunk = loads(parse_fields(frame.raw).data)
        chunk["choices"][0]["delta"]["content"] = text
        return f"data: {dumps(chunk)}\n\n".encode()
