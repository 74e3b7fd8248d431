"""Responses text deltas read from a learnt template (``proxy.wire.responses_template``) are exactly
what the full decode reads: the same frames and events, and the same codec state after each frame is
decoded and sent, whatever the stream holds: escapes and unicode in the text, other item ids, indexes
and sequence numbers, and bent frames (keys reordered, escaped or repeated, extra fields, raw bytes,
numbers no JSON encoder writes), which must take the full decode."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from guardrails.datamodel import Frame, TextDelta
from proxy.wire import responses_template
from proxy.wire.openai_responses import OpenAIResponses, ResponsesStream
from tests.stream_support import cut_by

DELTA = "response.output_text.delta"
TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6) | st.sampled_from(
    ['"', "\\", "a\"b", "\n", "\x01", "é", "🙂", "\u2028", "g", "p", " ", "delta", '","delta":"x'])
RAW_MIDDLES = st.sampled_from([b"\xff", b"\xc3", b"a\x01b", b"a\\u0041", b"\\n", b"\\ud800", b"\\ud83d\\ude42",
                               b"\\uD800x", b"\\\\ud800", b"\xed\xa0\x80", b"x\x7fy", b"a\tb", b"\\x", b"ok"])


def _sse(data: dict[str, Any] | str, name: str | None = DELTA, *, compact: bool = True, ascii_only: bool = False) -> bytes:
    text = data if isinstance(data, str) else json.dumps(
        data, ensure_ascii=ascii_only, separators=(",", ":") if compact else None)
    return (f"event: {name}\n" if name is not None else "").encode() + f"data: {text}\n\n".encode()


def _delta_event(draw: st.DrawFn, seq: int, text: str) -> dict[str, Any]:
    ev: dict[str, Any] = {"type": DELTA, "item_id": draw(st.sampled_from(["msg_1", "msg_1", "msg_2", "m\u00e9"])),
                          "output_index": draw(st.sampled_from([0, 0, 0, 1])),
                          "content_index": draw(st.sampled_from([0, 0, 0, 1])), "delta": text,
                          "logprobs": [], "sequence_number": seq}
    if draw(st.booleans()):
        ev["obfuscation"] = draw(st.sampled_from(["", "aB3", "x" * 12, 'q"\\']))
    return ev


@st.composite
def frames(draw: st.DrawFn, seq: int) -> bytes:
    kind = draw(st.sampled_from(["text"] * 10 + [
        "raw", "reordered", "extra", "repeated", "escaped_key", "ascii", "spaced", "unnamed", "renamed",
        "logprobs", "no_logprobs", "odd_number", "string_index", "id_line", "refusal", "done", "part",
        "item", "comment", "big_seq"]))
    text = draw(TEXTS)
    ev = _delta_event(draw, seq, text)
    if kind == "text":
        return _sse(ev)
    if kind == "raw":  # bytes no encoder writes, spliced where the text stands
        return _sse({**ev, "delta": "\x00MARK"}).replace(b"\\u0000MARK", draw(RAW_MIDDLES))
    if kind == "reordered":
        keys = draw(st.permutations(list(ev)))
        return _sse({k: ev[k] for k in keys})
    if kind == "extra":
        return _sse({**ev, draw(st.sampled_from(["note", "summary_index", "delta2"])): text})
    if kind == "repeated":  # the same key twice: the full decode refuses the frame
        key = draw(st.sampled_from(["delta", "item_id", "sequence_number", "type", "logprobs"]))
        body = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
        return _sse(body[:-1] + f',"{key}":{json.dumps(ev[key])}}}')
    if kind == "escaped_key":
        key = draw(st.sampled_from(['"delta"', '"item_id"', '"type"', '"sequence_number"']))
        body = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
        return _sse(body.replace(key, key[:2] + f"\\u{ord(key[2]):04x}" + key[3:], 1))
    if kind == "ascii":
        return _sse(ev, ascii_only=True)
    if kind == "spaced":
        return _sse(ev, compact=False)
    if kind == "unnamed":
        return _sse(ev, None)
    if kind == "renamed":
        return _sse(ev, "response.refusal.delta")
    if kind == "logprobs":
        return _sse({**ev, "logprobs": [{"token": text, "logprob": -0.5, "bytes": [104], "top_logprobs": []}]})
    if kind == "no_logprobs":
        return _sse({k: v for k, v in ev.items() if k != "logprobs"})
    if kind == "odd_number":  # numbers the slots must not read: a fraction, a sign, a leading zero, a huge one
        body = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
        odd = draw(st.sampled_from(["4.0", "-1", "04", "1e2", "-0", "99999999999999999999", "true", "null"]))
        return _sse(body.replace(f'"sequence_number":{seq}', f'"sequence_number":{odd}'))
    if kind == "string_index":
        return _sse({**ev, "output_index": "0"})
    if kind == "id_line":
        return b"id: 7\n" + _sse(ev)
    if kind == "refusal":
        return _sse({**ev, "type": "response.refusal.delta"}, "response.refusal.delta")
    if kind == "done":
        return _sse({"type": "response.output_text.done", "item_id": ev["item_id"], "output_index": 0,
                     "content_index": 0, "text": text, "logprobs": [], "sequence_number": seq},
                    "response.output_text.done")
    if kind == "part":
        return _sse({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0,
                     "content_index": draw(st.sampled_from([0, 1])),
                     "part": {"type": "output_text", "text": "", "annotations": []}, "sequence_number": seq},
                    "response.content_part.added")
    if kind == "item":
        return _sse({"type": "response.output_item.added", "output_index": draw(st.sampled_from([0, 1])),
                     "item": {"id": "msg_2", "type": "message", "status": "in_progress", "role": "assistant",
                              "content": []}, "sequence_number": seq}, "response.output_item.added")
    if kind == "comment":
        return b": keep-alive\n\n"
    return _sse({**ev, "sequence_number": 10 ** 16 + seq})


_HEAD = [
    _sse({"type": "response.created", "response": {"id": "resp_1", "object": "response", "created_at": 1,
                                                   "model": "m", "status": "in_progress", "output": []},
          "sequence_number": 0}, "response.created"),
    _sse({"type": "response.output_item.added", "output_index": 0, "item": {
        "id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        "sequence_number": 1}, "response.output_item.added"),
    _sse({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0,
          "part": {"type": "output_text", "text": "", "annotations": []}, "sequence_number": 2},
         "response.content_part.added"),
]


@st.composite
def streams(draw: st.DrawFn) -> list[bytes]:
    n = draw(st.integers(1, 40))
    return [*_HEAD, *(draw(frames(3 + i)) for i in range(n))]


def _full_decode_only() -> ResponsesStream:
    codec = OpenAIResponses().new_stream()
    assert isinstance(codec, ResponsesStream)
    codec._learns = responses_template.MAX_LEARNS  # never learns: every frame takes the full decode
    return codec


def _plain(value: Any) -> Any:
    """An object's state as plain values, for comparing two codecs (ids of objects left out)."""
    if isinstance(value, dict):
        return {k if isinstance(k, str | tuple) else "#": _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    slots = [s for c in type(value).__mro__ for s in getattr(c, "__slots__", ())]
    if hasattr(value, "__dict__") or slots:
        fields = {**getattr(value, "__dict__", {}), **{s: getattr(value, s) for s in slots if hasattr(value, s)}}
        return {k: _plain(v) for k, v in fields.items()}
    return value


def _state(codec: ResponsesStream) -> Any:
    kept = [(raw, ev) for raw, ev in codec._decoded._kept.values()]
    fields = {k: v for k, v in vars(codec).items() if k not in ("_split", "_template", "_learns")}
    return _plain({**fields, "_decoded": kept, "_unsettled": list(codec._unsettled.values())})


def _run(codec: ResponsesStream, reads: list[bytes]) -> tuple[list[Frame], list[Any]]:
    """Every frame decoded, each noted as sent right after its read, and the state after each read."""
    frames_out: list[Frame] = []
    states: list[Any] = []
    for read in [*reads, None]:
        got = codec.feed(read) if read is not None else codec.flush()
        states.append(_state(codec))  # what the decode left, before anything is sent
        for frame in got:
            codec.note_sent(frame)
        frames_out += got
        states.append(_state(codec))
    return frames_out, states


@settings(max_examples=400, deadline=None)
@given(streams(), st.lists(st.integers(16, 400), min_size=1, max_size=20), st.booleans())
def test_template_read_equals_the_full_decode(stream: list[bytes], cuts: list[int], frame_reads: bool) -> None:
    reads = stream if frame_reads else cut_by(b"".join(stream), cuts)
    fast, full = OpenAIResponses().new_stream(), _full_decode_only()
    assert isinstance(fast, ResponsesStream)
    fast_frames, fast_states = _run(fast, reads)
    full_frames, full_states = _run(full, reads)
    assert fast_frames == full_frames
    assert fast_states == full_states


def _text(seq: int, text: str, **extra: Any) -> bytes:
    return _sse({"type": DELTA, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text,
                 "logprobs": [], "sequence_number": seq, **extra})


def test_a_plain_stream_learns_its_template_and_reads_deltas_from_it() -> None:
    codec = OpenAIResponses().new_stream()
    assert isinstance(codec, ResponsesStream)
    codec.feed(b"".join(_HEAD) + _text(3, "Hel", obfuscation="ab"))
    template = codec._template
    assert template is not None
    raw = _text(4, 'lo "\u00e9"\n', obfuscation="xyz12")
    assert template.match(raw) is not None  # read from the bytes, not decoded
    assert codec.feed(raw) == [Frame(raw, (TextDelta('lo "\u00e9"\n', 0, "text"),))]


def test_bent_frames_miss_the_template() -> None:
    codec = OpenAIResponses().new_stream()
    assert isinstance(codec, ResponsesStream)
    codec.feed(b"".join(_HEAD) + _text(3, "a"))
    template = codec._template
    assert template is not None
    plain = _text(4, "b")
    assert template.match(plain) is not None
    bent = [plain.replace(b'"delta":"b"', b'"delta":"b","delta":"c"'),   # a repeated key
            plain.replace(b'"delta"', b'"d\\u0065lta"'),                 # an escaped key
            plain.replace(b'"sequence_number":4', b'"sequence_number":04'),
            plain.replace(b'"delta":"b"', b'"delta":"\\ud800"'),         # a lone surrogate
            plain.replace(b'"delta":"b"', b'"delta":"\xff"'),            # invalid UTF-8
            plain.replace(b'"logprobs":[]', b'"logprobs":[{"token":"b","logprob":0,"bytes":[98]}]'),
            plain.replace(b"}\n\n", b',"note":"x"}\n\n'),
            b"id: 1\n" + plain]
    for raw in bent:
        assert template.match(raw) is None, raw
    # the full decode reads them: a repeated key fails the frame closed
    assert codec.feed(bent[0]) == [Frame(bent[0], unreadable=True)]
