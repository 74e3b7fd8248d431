"""Frames decoded from a learnt template (``proxy.wire.template``) are exactly the frames the full
decode reads: the same events, the same framing, the same codec state, whatever the text holds
(quotes, escapes, control characters, invalid UTF-8) and however the bytes are cut into reads."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from guardrails.datamodel import Frame, TextDelta
from proxy.wire.anthropic import AnthropicMessages, MessagesStream
from proxy.wire.base import StreamCodec
from proxy.wire.openai_chat import ChatStream, OpenAIChat
from proxy.wire.template import MAX_LEARNS
from tests.stream_support import cut_by

HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _chunk(delta: dict[str, Any], *, finish: str | None = None, index: int = 0, compact: bool = True,
           extra: dict[str, Any] | None = None) -> bytes:
    body = {**HEAD, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
            **(extra or {})}
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":") if compact else None)
    return f"data: {text}\n\n".encode()


TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6) | st.sampled_from(
    ['"', "\\", "a\"b", "\n", "\x01", "é", "🙂", "\u2028", "[DONE]", "g", "p", " ", "content"])

# Raw bytes standing where a text's JSON string is: what a template must refuse, or read as the full decode does.
RAW_MIDDLES = st.sampled_from([b"\xff", b"\xc3", b"a\x01b", b"a\\u0041", b"\\n", b"\xed\xa0\x80", b"\xef\xbf\xbf",
                               b"x\x7fy", b"a\tb", b"\xf0\x9f\x99\x82", b"ok"])


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["text"] * 8 + ["raw", "role", "reasoning", "refusal", "tool", "finish",
                                                "extra", "parts", "spaced", "choice1", "empty"]))
    text = draw(TEXTS)
    if kind == "text":
        return _chunk({"content": text})
    if kind == "raw":  # bytes no encoder writes, spliced where the text stands
        return _chunk({"content": "\x00MARK"}).replace(b"\\u0000MARK", draw(RAW_MIDDLES))
    if kind == "role":
        return _chunk({"role": "assistant", "content": text})
    if kind == "reasoning":
        return _chunk({"reasoning_content": text})
    if kind == "refusal":
        return _chunk({"content": "", "refusal": text})
    if kind == "tool":
        return _chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": text}}]})
    if kind == "finish":
        return _chunk({}, finish="stop")
    if kind == "extra":
        return _chunk({"content": text}, extra={"note": text})
    if kind == "parts":
        return _chunk({"content": [{"type": "text", "text": text}]})
    if kind == "spaced":
        return _chunk({"content": text}, compact=False)
    if kind == "choice1":
        return _chunk({"content": text}, index=1)
    return _chunk({"content": ""})


def _decode_all(codec: StreamCodec, reads: list[bytes]) -> list[Frame]:
    out: list[Frame] = []
    for read in reads:
        out += codec.feed(read)
    return out + codec.flush()


def _full_decode_only() -> ChatStream:
    codec = OpenAIChat().new_stream()
    assert isinstance(codec, ChatStream)
    codec._templates._learns = MAX_LEARNS  # never learns: every frame takes the full decode
    return codec


def _state(codec: ChatStream) -> tuple[Any, ...]:
    return codec._head, codec._sent_choices, codec._open_tools, codec._reasoning


@settings(max_examples=400, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=40), st.lists(st.integers(1, 400), min_size=1, max_size=20),
       st.sampled_from(["frames", "cut", "whole"]))
def test_template_decode_equals_the_full_decode(stream: list[bytes], cuts: list[int], reading: str) -> None:
    data = b"".join(stream) + b"data: [DONE]\n\n"
    # One read per frame (a paced stream), the bytes cut anywhere (UTF-8 split across reads), or the
    # first frame, then the rest in one read (a burst decoded from the template the first taught, in
    # one call: ``TextTemplate.match_run``).
    reads = [*stream, b"data: [DONE]\n\n"] if reading == "frames" else cut_by(data, cuts) if reading == "cut" \
        else [stream[0], data[len(stream[0]):]]
    fast, full = OpenAIChat().new_stream(), _full_decode_only()
    assert isinstance(fast, ChatStream)
    assert _decode_all(fast, reads) == _decode_all(full, reads)
    assert _state(fast) == _state(full)


def test_a_plain_stream_learns_its_template_and_decodes_frames_from_it() -> None:
    codec = OpenAIChat().new_stream()
    assert isinstance(codec, ChatStream)
    first = codec.feed(_chunk({"role": "assistant", "content": ""}) + _chunk({"content": "Hel"}))
    assert codec._templates.current is not None
    raw = _chunk({"content": "lo \u00e9"})
    assert codec.feed(raw) == [Frame(raw, (TextDelta("lo \u00e9"),))]
    assert [f.events for f in first] == [(), (TextDelta("Hel"),)]


def test_text_with_an_escape_takes_the_full_decode() -> None:
    codec = OpenAIChat().new_stream()
    codec.feed(_chunk({"content": "a"}))
    raw = _chunk({"content": "\u0041"}).replace(b'"A"', b'"\\u0041"')
    assert codec.feed(raw) == [Frame(raw, (TextDelta("A"),))]


def _event(name: str, data: dict[str, Any], *, compact: bool = True) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":") if compact else None)
    return f"event: {name}\ndata: {text}\n\n".encode()


def _delta(index: int, delta: dict[str, Any], **kw: Any) -> bytes:
    return _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}, **kw)


@st.composite
def anthropic_events(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["text"] * 8 + ["raw", "start_text", "start_thinking", "thinking", "start_tool",
                                                "tool", "stop", "citation", "extra", "spaced", "named", "ping"]))
    text, index = draw(TEXTS), draw(st.integers(0, 2))
    if kind == "text":
        return _delta(index, {"type": "text_delta", "text": text})
    if kind == "raw":
        return _delta(index, {"type": "text_delta", "text": "\x00MARK"}).replace(b"\\u0000MARK", draw(RAW_MIDDLES))
    if kind == "start_text":
        return _event("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "text", "text": ""}})
    if kind == "start_thinking":
        return _event("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "thinking", "thinking": ""}})
    if kind == "thinking":
        return _delta(index, {"type": "thinking_delta", "thinking": text})
    if kind == "start_tool":
        return _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": "t", "name": "f", "input": {}}})
    if kind == "tool":
        return _delta(index, {"type": "input_json_delta", "partial_json": text})
    if kind == "stop":
        return _event("content_block_stop", {"type": "content_block_stop", "index": index})
    if kind == "citation":
        return _delta(index, {"type": "citations_delta", "citation": {"type": "char_location", "cited_text": text}})
    if kind == "extra":
        return _delta(index, {"type": "text_delta", "text": text, "note": text})
    if kind == "spaced":
        return _delta(index, {"type": "text_delta", "text": text}, compact=False)
    if kind == "named":  # a name that disagrees with its data's type: read by the type, labels checked
        return _event("message_delta", {"type": "content_block_delta", "index": index,
                                        "delta": {"type": "text_delta", "text": text}})
    return _event("ping", {"type": "ping"})


_START = _event("message_start", {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": None,
    "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})
_STOP = _event("message_stop", {"type": "message_stop"})


def _anthropic_full_decode_only() -> MessagesStream:
    codec = AnthropicMessages().new_stream()
    assert isinstance(codec, MessagesStream)
    codec._templates._learns = MAX_LEARNS
    return codec


def _anthropic_state(codec: MessagesStream) -> tuple[Any, ...]:
    return codec._message, codec._open_tools, codec._server_inputs, codec._thinking, codec._thought


@settings(max_examples=300, deadline=None)
@given(st.lists(anthropic_events(), min_size=1, max_size=40), st.lists(st.integers(1, 400), min_size=1, max_size=20),
       st.booleans())
def test_anthropic_template_decode_equals_the_full_decode(stream: list[bytes], cuts: list[int],
                                                         frame_reads: bool) -> None:
    events = [_START, *stream, _STOP]
    reads = events if frame_reads else cut_by(b"".join(events), cuts)
    fast, full = AnthropicMessages().new_stream(), _anthropic_full_decode_only()
    assert isinstance(fast, MessagesStream)
    assert _decode_all(fast, reads) == _decode_all(full, reads)
    assert _anthropic_state(fast) == _anthropic_state(full)


def test_an_anthropic_text_stream_learns_its_template() -> None:
    codec = AnthropicMessages().new_stream()
    assert isinstance(codec, MessagesStream)
    codec.feed(_START + _event("content_block_start", {"type": "content_block_start", "index": 0,
                                                       "content_block": {"type": "text", "text": ""}})
                + _delta(0, {"type": "text_delta", "text": "Hel"}))
    assert codec._templates.current is not None
    raw = _delta(0, {"type": "text_delta", "text": "lo"})
    assert codec.feed(raw) == [Frame(raw, (TextDelta("lo"),))]
