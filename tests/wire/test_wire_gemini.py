"""Gemini wire format: SSE and JSON-array stream decoding, rendered tails parsed by google-genai, bodies."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from aiohttp import web
from google import genai
from google.genai import errors, types
from hypothesis import given, settings
from hypothesis import strategies as st

from guardrails.datamodel import (
    AssistantMessage,
    Finish,
    Frame,
    HistoryToolCall,
    LaneEnd,
    StreamError,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unvetted,
    WholeText,
)
from proxy.core.stream_guard import StreamGuard
from proxy.wire.base import BadRequest, Replaced, StreamCodec
from proxy.wire.gemini import ArraySplitter, Gemini, GeminiArrayStream, GeminiSSEStream
from tests.fakes.served import serve_here

WIRE = Gemini()
REPLACED = Replaced("secrets", "secret_leak", "[withheld]")
USAGE_PARTIAL = {"promptTokenCount": 11, "totalTokenCount": 11}
USAGE = {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18}
META = {"modelVersion": "gemini-2.5-flash", "responseId": "rsp-7f3a"}


def chunk(parts: list[dict[str, Any]] | None, finish: str | None = None, usage: dict[str, Any] | None = None,
          **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {}
    if parts is not None:
        cand["content"] = {"parts": parts, "role": "model"}
    if finish:
        cand["finishReason"] = finish
    cand["index"] = 0
    return {"candidates": [cand], "usageMetadata": usage or USAGE_PARTIAL, **META, **extra}


def sse(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\r\n\r\n".encode()


def array(objs: list[dict[str, Any]], indent: int | None = None) -> list[bytes]:
    """The upstream's JSON-array framing: ``[{...}``, ``,\\r\\n{...}``..., ``]``."""
    out = [("[" if i == 0 else ",\r\n") + json.dumps(o, indent=indent) for i, o in enumerate(objs)]
    return [o.encode() for o in out] + [b"]"]


THOUGHT = {"text": "The user greets me; answer {politely}.", "thought": True}
TEXT_CHUNKS = [
    chunk([THOUGHT, {"text": "Hello from "}]),
    chunk([{"text": "the \"upstream\" {not a brace} ]"}]),
    chunk([{"text": ".", "thoughtSignature": "c2lnLXRleHQ="}], "STOP", USAGE),
]
CALL_A = {"functionCall": {"id": "call_a", "name": "read_file", "args": {"file_path": "/srv/a.py"}},
          "thoughtSignature": "c2lnLWE="}
CALL_B = {"functionCall": {"name": "list_dir", "args": {"path": "/srv", "depth": 2, "glob": ["*.py"]}}}
TOOL_CHUNKS = [
    chunk([{"text": "Let me look."}]),
    chunk([CALL_A, CALL_B]),
    chunk([], "STOP", USAGE),
]
ERROR_BARE = b'{\n  "error": {\n    "code": 503,\n    "message": "The model is overloaded.",\n' \
             b'    "status": "UNAVAILABLE"\n  }\n}\n'
SAFETY_CHUNKS = [chunk([{"text": "Sure, the"}]),
                 chunk(None, "SAFETY", USAGE, promptFeedback=None)]

SSE_TEXT = [sse(c) for c in TEXT_CHUNKS]
SSE_TOOL = [sse(c) for c in TOOL_CHUNKS]
SSE_PING = [SSE_TEXT[0], b": ping\r\n\r\n", *SSE_TEXT[1:]]
SSE_ERROR = [SSE_TEXT[0], ERROR_BARE]
SSE_DATA_ERROR = [SSE_TEXT[0], b'data: {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}\n\n']
SSE_SAFETY = [sse(c) for c in SAFETY_CHUNKS]
ARRAY_TEXT = array(TEXT_CHUNKS, indent=2)
ARRAY_TOOL = array(TOOL_CHUNKS)
ARRAY_ERROR = [array(TEXT_CHUNKS[:1])[0], b",\r\n" + ERROR_BARE.strip(), b"]"]

TEXT_EVENTS = [TextDelta("Hello from "), TextDelta('the "upstream" {not a brace} ]'), TextDelta("."),
               Finish("STOP")]
TOOL_EVENTS = [
    TextDelta("Let me look."),
    ToolCallStart("0", "call_a", "read_file"), ToolCallArgsDelta("0", '{"file_path":"/srv/a.py"}'),
    ToolCallEnd("0"),
    ToolCallStart("1", "", "list_dir"), ToolCallArgsDelta("1", '{"path":"/srv","depth":2,"glob":["*.py"]}'),
    ToolCallEnd("1"),
    Finish("STOP"),
]

Mode = Literal["sse", "array"]
# google-genai's async client subclasses aiohttp's ClientSession, which aiohttp deprecates.
AIOHTTP_SUBCLASS = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")


def codec(mode: Mode) -> GeminiSSEStream | GeminiArrayStream:
    stream = WIRE.new_stream(sse=mode == "sse")
    assert isinstance(stream, GeminiSSEStream | GeminiArrayStream)
    return stream


def decode(mode: Mode, pieces: list[bytes]) -> list[Frame]:
    c = codec(mode)
    frames = [f for p in pieces for f in c.feed(p)]
    return frames + c.flush()


def events(frames: list[Frame]) -> list[Any]:
    return [e for f in frames for e in f.events]


def answer_events(frames: list[Frame]) -> list[Any]:
    """The events of the answer lane (thought lanes are tested on their own)."""
    return [e for e in events(frames) if not isinstance(e, LaneEnd)
            and not (isinstance(e, TextDelta) and e.channel != "text")]


# -- decoding ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "fixture", "expected"), [
    ("sse", SSE_TEXT, TEXT_EVENTS),
    ("sse", SSE_PING, [TEXT_EVENTS[0], WholeText("ping", 0, "sse"), *TEXT_EVENTS[1:]]),
    ("sse", SSE_TOOL, TOOL_EVENTS),
    ("sse", SSE_ERROR, [TextDelta("Hello from "), StreamError("The model is overloaded.")]),
    ("sse", SSE_DATA_ERROR, [TextDelta("Hello from "), StreamError("boom")]),
    ("sse", SSE_SAFETY, [TextDelta("Sure, the"), Finish("SAFETY")]),
    ("array", ARRAY_TEXT, TEXT_EVENTS),
    ("array", ARRAY_TOOL, TOOL_EVENTS),
    ("array", ARRAY_ERROR, [TextDelta("Hello from "), StreamError("The model is overloaded.")]),
])
def test_golden_streams_decode_to_the_expected_events(mode: Mode, fixture: list[bytes],
                                                      expected: list[Any]) -> None:
    assert answer_events(decode(mode, fixture)) == expected


def test_thought_parts_are_a_lane_of_their_own_ended_by_the_answer_and_a_ping_is_checked_whole() -> None:
    frames = decode("sse", SSE_PING)
    assert frames[0].text == "Hello from "
    assert frames[0].events[:3] == (TextDelta(THOUGHT["text"], 0, "thought"), LaneEnd(0, "thought"),
                                    TextDelta("Hello from "))
    assert frames[1] == Frame(b": ping\r\n\r\n", (WholeText("ping", 0, "sse"),))


def test_array_frames_are_one_per_element_and_the_closing_bracket_stands_alone() -> None:
    frames = decode("array", [b"".join(ARRAY_TEXT) + b"\n"])
    assert [f.raw for f in frames] == [*ARRAY_TEXT, b"\n"]
    assert frames[-2].events == () and frames[-1].events == ()


def test_array_splitter_tracks_escapes_and_strings_across_feeds() -> None:
    s = ArraySplitter()
    assert s.feed(b'[{"a": "x\\') == []
    assert s.feed(b'"}"}') == [b'[{"a": "x\\"}"}']
    assert s.feed(b',{"b": [1, {"c": "]"}]}]') == [b',{"b": [1, {"c": "]"}]}', b"]"]
    assert s.flush() == b""


def test_malformed_frames_carry_no_events_and_never_raise() -> None:
    pieces = [b"data: {not json\r\n\r\n", b"data: [1, 2]\r\n\r\n", b"event: x\r\n\r\n", b"data: {\"cand"]
    frames = decode("sse", pieces)
    assert events(frames) == [WholeText("x", 0, "sse")]  # an event name is checked like a comment
    assert b"".join(f.raw for f in frames) == b"".join(pieces)
    assert [f.unreadable for f in frames] == [True, True, False, True]
    frames = decode("array", [b"[{\"candidates\": 3}, {oops}, {\"trunc"])
    assert events(frames) == [Unvetted("candidates of an unknown shape")]  # fails closed


BARE = b'{"candidates": [{"content": {"parts": [{"text": "bare"}], "role": "model"}, "index": 0}]}'


@pytest.mark.parametrize("frame", [
    sse(TEXT_CHUNKS[0]).replace(b"\r\n\r\n", b"\r\n" + BARE + b"\r\n\r\n"),  # two chunks for google-genai
    BARE + b"\r\n" + sse(TEXT_CHUNKS[0]),
    BARE + b"\r\n" + BARE + b"\r\n\r\n",
    b"Data: " + BARE + b"\r\n\r\n",
    b"the key is here\r\n\r\n",
    b'["bare", "array"]\r\n\r\n',
])
def test_a_bare_line_that_is_not_one_chunk_alone_is_unreadable(frame: bytes) -> None:
    assert [f.unreadable for f in decode("sse", [SSE_TEXT[0], frame])] == [False, True]


def test_array_bytes_outside_the_elements_are_unreadable() -> None:
    frames = decode("array", [b'[{"candidates": []},\r\n"text", {"candidates": []},\r\n["x"],\r\n{"candidates": []}]', b" ok"])
    assert [f.unreadable for f in frames] == [False, True, True, False, False, True]
    frames = decode("array", [b'[\n {"candidates": []} ,\n\t{"candidates": []}\n]\n'])
    assert not any(f.unreadable for f in frames)


def test_a_bare_json_chunk_alone_is_read_as_google_genai_reads_it() -> None:
    frames = decode("sse", [SSE_TEXT[0], BARE + b"\r\n\r\n", b": keepalive\r\n\r\n", b"id: 3\r\n\r\n"])
    assert [f.unreadable for f in frames] == [False, False, False, False]
    assert frames[1].text == "bare" and frames[2:] == [Frame(b": keepalive\r\n\r\n", (WholeText("keepalive", 0, "sse"),)),
                                                       Frame(b"id: 3\r\n\r\n", (WholeText("3", 0, "sse"),))]


ALL = [("sse", SSE_TEXT), ("sse", SSE_TOOL), ("sse", SSE_ERROR), ("sse", SSE_PING), ("sse", SSE_SAFETY),
       ("array", ARRAY_TEXT), ("array", ARRAY_TOOL), ("array", ARRAY_ERROR)]


@pytest.mark.parametrize(("mode", "fixture"), ALL)
def test_frames_do_not_depend_on_where_the_bytes_were_split(mode: Mode, fixture: list[bytes]) -> None:
    data = b"".join(fixture)
    whole = decode(mode, [data])
    assert b"".join(f.raw for f in whole) == data
    for cut in range(1, len(data)):
        assert decode(mode, [data[:cut], data[cut:]]) == whole, cut


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=200))
def test_frames_survive_random_chunkings(case: tuple[Mode, list[bytes]], sizes: list[int]) -> None:
    mode, fixture = case
    data = b"".join(fixture)
    pieces, pos = [], 0
    for n in sizes:
        pieces.append(data[pos:pos + n])
        pos += n
    pieces.append(data[pos:])
    frames = decode(mode, pieces)
    assert b"".join(f.raw for f in frames) == data
    assert frames == decode(mode, [data])


def test_retext_replaces_only_the_visible_text() -> None:
    cases: list[tuple[Mode, bytes]] = [("sse", SSE_TEXT[0]), ("array", ARRAY_TEXT[0])]
    for mode, raw in cases:
        c = codec(mode)
        frame = c.feed(raw)[0]
        out = c.retext(frame, {(0, "text"): "Hi ****"})
        again = codec(mode).feed(out + (b"]" if mode == "array" else b""))
        assert again[0].text == "Hi ****"
        assert THOUGHT in json.loads(out[out.index(b"{"):])["candidates"][0]["content"]["parts"]
        assert out.startswith(b"data: " if mode == "sse" else b"[")


# -- rendered tails, parsed by google-genai against a real local server ----------------------------------

@dataclass
class Upstream:
    base_url: str = ""
    pieces: list[bytes] = field(default_factory=list)
    status: int = 200
    content_type: str = "text/event-stream"
    paths: list[str] = field(default_factory=list)


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    fake = Upstream()

    async def handle(request: web.Request) -> web.StreamResponse:
        fake.paths.append(request.path_qs)
        resp = web.StreamResponse(status=fake.status, headers={"Content-Type": fake.content_type})
        await resp.prepare(request)
        for piece in fake.pieces:  # one write per piece: a bare error must be its own network read
            await resp.write(piece)
            await asyncio.sleep(0.005)
        await resp.write_eof()
        return resp

    async with serve_here(lambda app: app.router.add_post("/{tail:.*}", handle)) as fake.base_url:
        yield fake


def client(fake: Upstream) -> genai.Client:
    return genai.Client(api_key="k", http_options=types.HttpOptions(
        base_url=fake.base_url, api_version="v1beta", retry_options=types.HttpRetryOptions(attempts=1)))


async def sdk_stream(fake: Upstream, pieces: list[bytes], *, sync: bool) -> list[types.GenerateContentResponse]:
    fake.pieces = pieces
    sdk = client(fake)  # keep a reference: a collected Client closes its HTTP client mid-stream
    if sync:  # the sync client in a thread, so the server keeps running on this loop
        return await asyncio.to_thread(
            lambda: list(sdk.models.generate_content_stream(model="gemini-2.5-flash", contents="hi")))
    stream = await sdk.aio.models.generate_content_stream(model="gemini-2.5-flash", contents="hi")
    return [c async for c in stream]


def sent_then(mode: Mode, fixture: list[bytes], n_sent: int) -> tuple[StreamCodec, list[bytes]]:
    """Decode ``fixture``, mark its first ``n_sent`` frames as sent; return the codec and those bytes."""
    c = codec(mode)
    frames = [f for p in fixture for f in c.feed(p)]
    for f in frames[:n_sent]:
        c.note_sent(f)
    return c, [f.raw for f in frames[:n_sent]]


def seen_text(chunks: list[types.GenerateContentResponse]) -> str:
    parts = [p for c in chunks if c.candidates and c.candidates[0].content
             for p in c.candidates[0].content.parts or []]
    return "".join(p.text for p in parts if p.text and not p.thought)


def finish(chunks: list[types.GenerateContentResponse]) -> Any:
    return [c.candidates[0].finish_reason for c in chunks if c.candidates and c.candidates[0].finish_reason]


@AIOHTTP_SUBCLASS
@pytest.mark.parametrize("sync", [True, False])
async def test_tail_with_nothing_sent_is_a_complete_stream_for_the_sdk(upstream: Upstream, sync: bool) -> None:
    c, sent = sent_then("sse", SSE_TEXT, 0)
    tail = c.render_tail(AssistantMessage(text="[withheld]"), "filtered", REPLACED)
    assert b"event:" not in tail and not tail.startswith(b":") and tail.endswith(b"\r\n\r\n")
    chunks = await sdk_stream(upstream, [*sent, tail], sync=sync)
    assert seen_text(chunks) == "[withheld]"
    assert finish(chunks) == [types.FinishReason.SAFETY]
    assert json.loads(tail[6:])["guardproxy"] == REPLACED.payload()
    assert upstream.paths == ["/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"]


@AIOHTTP_SUBCLASS
@pytest.mark.parametrize("sync", [True, False])
async def test_tail_mid_text_continues_the_text_and_copies_usage_and_ids(upstream: Upstream, sync: bool) -> None:
    c, sent = sent_then("sse", SSE_TEXT, 1)
    c.feed(b"")  # nothing new: the second chunk was held back and dropped
    tail = c.render_tail(AssistantMessage(text="[withheld]"), "normal", REPLACED)
    chunks = await sdk_stream(upstream, [*sent, tail], sync=sync)
    assert seen_text(chunks) == "Hello from [withheld]"
    assert finish(chunks) == [types.FinishReason.STOP]
    last = chunks[-1]
    assert (last.response_id, last.model_version) == ("rsp-7f3a", "gemini-2.5-flash")
    assert last.usage_metadata is not None and last.usage_metadata.total_token_count == 18


@AIOHTTP_SUBCLASS
@pytest.mark.parametrize("sync", [True, False])
async def test_tail_after_a_completed_tool_call_adds_text_and_the_next_call(upstream: Upstream,
                                                                            sync: bool) -> None:
    c, sent = sent_then("sse", SSE_TOOL, 1)  # the text was sent; the tool-call chunk is held
    c.feed(b"")
    calls = [ToolCall("call_a", "read_file", '{"file_path":"/srv/a.py"}'), ToolCall("", "noop", "{oops")]
    tail = c.render_tail(AssistantMessage(text=" One call was blocked.", tool_calls=calls), "normal", None)
    chunks = await sdk_stream(upstream, [*sent, tail], sync=sync)
    assert seen_text(chunks) == "Let me look. One call was blocked."
    fcs = [fc for ch in chunks for fc in (ch.function_calls or [])]
    assert [(f.id, f.name, f.args) for f in fcs] == [("call_a", "read_file", {"file_path": "/srv/a.py"}),
                                                    (None, "noop", {})]
    content = chunks[-1].candidates[0].content if chunks[-1].candidates else None
    assert content is not None and content.parts is not None
    assert content.parts[1].thought_signature == b"sig-a"  # the upstream's signature is kept
    assert finish(chunks) == [types.FinishReason.STOP]


@AIOHTTP_SUBCLASS
async def test_tail_after_the_finish_was_sent_still_parses(upstream: Upstream) -> None:
    c, sent = sent_then("sse", SSE_TOOL, 3)
    tail = c.render_tail(AssistantMessage(text="extra"), "filtered", REPLACED)
    chunks = await sdk_stream(upstream, [*sent, tail], sync=False)
    assert seen_text(chunks) == "Let me look.extra"


async def test_filtered_tail_with_nothing_to_say_has_no_content_but_a_finish(upstream: Upstream) -> None:
    c, sent = sent_then("sse", SSE_SAFETY, 1)
    tail = c.render_tail(AssistantMessage(), "filtered", None)
    assert "content" not in json.loads(tail[6:])["candidates"][0]
    chunks = await sdk_stream(upstream, [*sent, tail], sync=True)
    assert seen_text(chunks) == "Sure, the" and finish(chunks) == [types.FinishReason.SAFETY]


async def test_line_separators_in_rendered_text_are_escaped_for_the_cli_frame_regex(upstream: Upstream) -> None:
    tail = codec("sse").render_tail(AssistantMessage(text="a\u2028b\u2029c"), "normal", None)
    assert "\u2028".encode() not in tail and b"\\u2028" in tail
    chunks = await sdk_stream(upstream, [tail], sync=True)
    assert seen_text(chunks) == "a\u2028b\u2029c"


async def test_normal_tail_with_nothing_to_say_still_has_a_non_empty_part(upstream: Upstream) -> None:
    # An empty ``parts`` makes the JS SDK's chat drop the whole model turn.
    tail = codec("sse").render_tail(AssistantMessage(), "normal", None)
    assert json.loads(tail[6:])["candidates"][0]["content"]["parts"] == [{"text": ""}]
    chunks = await sdk_stream(upstream, [tail], sync=True)
    assert finish(chunks) == [types.FinishReason.STOP]


async def test_replaced_signal_alone_is_a_harmless_chunk_for_the_sdk(upstream: Upstream) -> None:
    c, sent = sent_then("sse", SSE_TEXT, 1)
    pieces = [*sent, c.render_replaced(REPLACED), c.render_tail(AssistantMessage(text="!"), "normal", None)]
    assert all(not p.startswith((b":", b"event")) for p in pieces)
    chunks = await sdk_stream(upstream, pieces, sync=True)
    assert seen_text(chunks) == "Hello from !" and len(chunks) == 3


@AIOHTTP_SUBCLASS
@pytest.mark.parametrize("sync", [True, False])
async def test_render_error_makes_the_sdk_raise_its_api_error(upstream: Upstream, sync: bool) -> None:
    c, sent = sent_then("sse", SSE_TEXT, 1)
    err = c.render_error("upstream went away", "upstream")
    assert json.loads(err) == {"error": {"code": 500, "message": "upstream went away", "status": "INTERNAL"}}
    assert not err.startswith(b"data:")
    with pytest.raises(errors.ServerError) as info:
        await sdk_stream(upstream, [*sent, err], sync=sync)
    assert (info.value.code, info.value.status, info.value.message) == (500, "INTERNAL", "upstream went away")


async def test_a_guardrail_error_mid_stream_is_a_client_error(upstream: Upstream) -> None:
    err = codec("sse").render_error("blocked by policy", "guardrail")
    with pytest.raises(errors.ClientError) as info:
        await sdk_stream(upstream, [err], sync=True)
    assert (info.value.code, info.value.status) == (400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(("status", "kind", "expected"), [
    (400, "guardrail", "INVALID_ARGUMENT"), (403, "permission", "PERMISSION_DENIED"),
    (404, "not_found", "NOT_FOUND"), (429, "rate_limit", "RESOURCE_EXHAUSTED"),
    (500, "upstream", "INTERNAL"), (503, "overloaded", "UNAVAILABLE"), (504, "timeout", "DEADLINE_EXCEEDED"),
])
async def test_http_errors_are_raised_by_the_sdk_with_their_status(upstream: Upstream, status: int, kind: Any,
                                                                   expected: str) -> None:
    extra = {"guardrail_id": "secrets", "reason_code": "secret_leak"}
    body = WIRE.http_error(status, "Blocked by guardproxy", kind, extra)
    upstream.status, upstream.content_type = status, "application/json"
    with pytest.raises(errors.APIError) as info:
        await sdk_stream(upstream, [body], sync=True)
    assert (info.value.code, info.value.status, info.value.message) == (status, expected, "Blocked by guardproxy")
    detail = json.loads(body)["error"]["details"][0]
    assert detail == {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "secret_leak",
                      "domain": "guardproxy", "metadata": extra}


# -- JSON-array mode: no official SDK reads it, so the whole body must stay one valid JSON array -------

def test_array_tail_with_nothing_sent_is_a_whole_array() -> None:
    c, _ = sent_then("array", ARRAY_TEXT, 0)
    assert c.media_type == "application/json"
    body = json.loads(c.render_tail(AssistantMessage(text="[withheld]"), "filtered", REPLACED))
    assert len(body) == 1 and body[0]["guardproxy"] == REPLACED.payload()
    assert body[0]["candidates"][0] == {"content": {"parts": [{"text": "[withheld]"}], "role": "model"},
                                        "finishReason": "SAFETY", "index": 0}


def test_array_tail_mid_stream_uses_the_upstream_separator_and_closes_the_array() -> None:
    c, sent = sent_then("array", ARRAY_TEXT, 2)
    tail = c.render_tail(AssistantMessage(text="!"), "normal", None)
    assert tail.startswith(b",\r\n{") and tail.endswith(b"}]")
    body = json.loads(b"".join(sent) + tail)
    assert [len(body), body[-1]["candidates"][0]["finishReason"], body[-1]["responseId"]] == [3, "STOP", "rsp-7f3a"]
    assert c.render_tail(AssistantMessage(), "normal", None) == b""  # already closed


def test_array_replaced_then_tail_then_error_keep_the_array_valid() -> None:
    c, sent = sent_then("array", ARRAY_TOOL, 1)
    body = b"".join(sent) + c.render_replaced(REPLACED) + c.render_tail(AssistantMessage(), "normal", None)
    assert [e.get("guardproxy") for e in json.loads(body)] == [None, REPLACED.payload(), None]
    c, sent = sent_then("array", ARRAY_TOOL, 1)
    body = json.loads(b"".join(sent) + c.render_error("boom", "overloaded"))
    assert body[-1] == {"error": {"code": 503, "message": "boom", "status": "UNAVAILABLE"}}
    assert json.loads(codec("array").render_error("x", "timeout"))[0]["error"]["code"] == 504


def test_array_stream_is_closed_by_its_own_bracket_frame() -> None:
    c, _ = sent_then("array", ARRAY_TEXT, 4)
    assert c.render_tail(AssistantMessage(text="late"), "normal", None) == b""
    assert c.render_error("late", "upstream") == b""


# -- requests ---------------------------------------------------------------------------------------------

CLI_BODY: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "Read a.py and b.py"}]},
        {"role": "model", "parts": [
            {"functionCall": {"id": "read_file_1", "name": "read_file", "args": {"file_path": "/srv/a.py"}},
             "thoughtSignature": "skip_thought_signature_validator"},
            {"functionCall": {"id": "read_file_2", "name": "read_file", "args": {"file_path": "/srv/b.py"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "read_file_1", "name": "read_file", "response": {"output": "x = 1"}}},
            {"functionResponse": {"id": "read_file_2", "name": "read_file",
                                  "response": {"error": "ENOENT"}}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "run_shell", "args": {"command": "ls"}}},
                                    {"functionCall": {"name": "web_fetch", "args": {"url": "http://x"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "run_shell", "response": {"output": "a.py"}}}]},
    ],
    "systemInstruction": {"parts": [{"text": "You are a CLI agent."}, {"text": "Be brief."}]},
    "tools": [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {"type": "object"}}]}],
    "generationConfig": {"temperature": 1},
}


def test_parse_request_reads_system_user_text_and_tool_history() -> None:
    view = WIRE.parse_request(CLI_BODY, stream=True, model="gemini-3-pro-preview")
    assert (view.model, view.stream) == ("gemini-3-pro-preview", True)
    assert view.system_prompt == "You are a CLI agent.Be brief."
    assert view.last_user_text == "Read a.py and b.py"
    assert view.history == [
        HistoryToolCall("read_file_1", "read_file", '{"file_path":"/srv/a.py"}', True),
        HistoryToolCall("read_file_2", "read_file", '{"file_path":"/srv/b.py"}', False),
        HistoryToolCall("", "run_shell", '{"command":"ls"}', True),
        HistoryToolCall("", "web_fetch", '{"url":"http://x"}', None),
    ]


def test_history_matches_responses_by_id_else_by_name_in_order() -> None:
    def call(name: str, cid: str = "") -> dict[str, Any]:
        return {"functionCall": {"name": name, "args": {}, **({"id": cid} if cid else {})}}

    def result(name: str, cid: str = "", error: bool = False) -> dict[str, Any]:
        response = {"error": "failed"} if error else {"output": "ok"}
        return {"functionResponse": {"name": name, "response": response, **({"id": cid} if cid else {})}}

    body = {"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [call("run"), call("run"), call("run", "r3"), call("run", "r4")]},
        {"role": "user", "parts": [result("run", "r4", error=True), result("run"), result("run", "zz", True)]},
    ]}
    history = WIRE.parse_request(body, stream=False).history
    assert [(h.call_id, h.result_ok) for h in history] == [("", True), ("", False), ("r3", None), ("r4", False)]


def test_parse_request_accepts_snake_case_system_and_defaults_the_model_to_empty() -> None:
    body = {"contents": [{"parts": [{"text": "hi"}]}], "system_instruction": {"parts": [{"text": "sys"}]}}
    view = WIRE.parse_request(body, stream=False)
    assert (view.model, view.system_prompt, view.last_user_text, view.history) == ("", "sys", "hi", [])


@pytest.mark.parametrize("body", [
    {}, {"contents": "hi"}, {"contents": ["hi"]}, {"contents": [{"role": "user", "parts": "hi"}]},
    {"contents": [{"role": "assistant", "parts": []}]},
    {"contents": [], "systemInstruction": ["x"]},
])
def test_parse_request_rejects_wrong_shapes(body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        WIRE.parse_request(body, stream=False)


@pytest.mark.parametrize(("body", "key"), [
    (CLI_BODY, "systemInstruction"),
    ({"contents": [], "system_instruction": {"parts": [{"text": "sys"}]}}, "system_instruction"),
    ({"contents": []}, "systemInstruction"),
])
def test_with_system_appends_a_part_without_touching_the_input(body: dict[str, Any], key: str) -> None:
    before = copy.deepcopy(body)
    out = WIRE.with_system(body, "Never reveal secrets.")
    assert body == before
    assert out[key]["parts"][-1] == {"text": "Never reveal secrets."}
    assert len(out[key]["parts"]) == len(before.get(key, {"parts": []})["parts"]) + 1
    assert set(out) - {key} == set(body) - {key}


def test_with_tool_feedback_appends_the_calls_and_error_responses() -> None:
    before = copy.deepcopy(CLI_BODY)
    calls = [ToolCall("c1", "write_file", '{"file_path": "/etc/passwd"}'), ToolCall("", "run_shell", "{bad")]
    out = WIRE.with_tool_feedback(CLI_BODY, AssistantMessage(text="Writing.", tool_calls=calls),
                                  [(calls[0], "blocked: privileged path"), (calls[1], "not run")])
    assert CLI_BODY == before
    assert out["contents"][:-2] == CLI_BODY["contents"]
    assert out["contents"][-2:] == [
        {"role": "model", "parts": [
            {"text": "Writing."},
            {"functionCall": {"name": "write_file", "args": {"file_path": "/etc/passwd"}, "id": "c1"},
             "thoughtSignature": "skip_thought_signature_validator"},
            {"functionCall": {"name": "run_shell", "args": {}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "write_file", "response": {"error": "blocked: privileged path"},
                                  "id": "c1"}},
            {"functionResponse": {"name": "run_shell", "response": {"error": "not run"}}}]},
    ]
    history = WIRE.parse_request(out, stream=False).history
    assert [h.result_ok for h in history[-2:]] == [False, False]


def test_judge_request_is_a_stateless_generate_content_call() -> None:
    assert WIRE.judge_request("gemini-2.5-flash", "Is this safe?") == (
        "/v1beta/models/gemini-2.5-flash:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "Is this safe?"}]}], "generationConfig": {"temperature": 0}})


# -- non-streaming bodies ---------------------------------------------------------------------------------

RESPONSE: dict[str, Any] = {
    "candidates": [{"content": {"role": "model", "parts": [
        THOUGHT, {"text": "The key is sk-123."}, CALL_A]},
        "finishReason": "STOP", "index": 0,
        "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"}]}],
    "usageMetadata": USAGE, **META,
}


def test_decode_response_reads_visible_text_calls_and_finish() -> None:
    msg = WIRE.decode_response(json.dumps(RESPONSE).encode())
    assert msg == AssistantMessage(text="The key is sk-123.", finish_reason="STOP",
                                   tool_calls=[ToolCall("call_a", "read_file", '{"file_path":"/srv/a.py"}')],
                                   provider_parts=[CALL_A])  # its signed call, for tool feedback
    assert WIRE.decode_response(b'{"promptFeedback": {"blockReason": "SAFETY"}}') == AssistantMessage()
    for bad in (b"nope", b"[1]", b'{"candidates": [3]}'):
        with pytest.raises(ValueError):
            WIRE.decode_response(bad)


async def test_render_response_replaces_the_output_and_the_sdk_parses_it(upstream: Upstream) -> None:
    msg = AssistantMessage(text="[withheld]", tool_calls=[ToolCall("call_a", "read_file", '{"file_path":"/a"}')])
    body = WIRE.render_response(json.dumps(RESPONSE).encode(), msg, "normal", REPLACED)
    data = json.loads(body)
    assert data["guardproxy"] == REPLACED.payload() and data["usageMetadata"] == USAGE
    assert data["candidates"][0]["safetyRatings"] == RESPONSE["candidates"][0]["safetyRatings"]
    assert data["candidates"][0]["content"]["parts"][1]["thoughtSignature"] == "c2lnLWE="
    upstream.pieces, upstream.content_type = [body], "application/json"
    sdk = client(upstream)
    resp = await asyncio.to_thread(lambda: sdk.models.generate_content(model="gemini-2.5-flash", contents="hi"))
    assert resp.text == "[withheld]"
    assert resp.function_calls and resp.function_calls[0].args == {"file_path": "/a"}
    assert resp.candidates and resp.candidates[0].finish_reason == types.FinishReason.STOP
    assert upstream.paths == ["/v1beta/models/gemini-2.5-flash:generateContent"]


def test_render_response_filtered_with_nothing_to_say_drops_the_content() -> None:
    data = json.loads(WIRE.render_response(json.dumps(RESPONSE).encode(), AssistantMessage(), "filtered", None))
    cand = data["candidates"][0]
    assert "content" not in cand and cand["finishReason"] == "SAFETY" and "guardproxy" not in data
    data = json.loads(WIRE.render_response(b'{"promptFeedback": {}}', AssistantMessage(text="x"), "normal", None))
    assert data["candidates"][0]["content"]["parts"] == [{"text": "x"}]


# -- provider parts: real thought signatures survive a tool-feedback round -------------------------------

def streamed_message(mode: Mode, pieces: list[bytes]) -> AssistantMessage:
    """What the exchange builds after a stream: the guard's message plus the codec's provider parts."""
    c, guard = codec(mode), StreamGuard(None, holdback=0)
    for piece in pieces:
        for frame in c.feed(piece):
            guard.push(frame)
    for frame in c.flush():
        guard.push(frame)
    guard.end()
    message = guard.message()
    message.provider_parts = c.provider_parts()
    return message


def feedback_model_turn(message: AssistantMessage) -> dict[str, Any]:
    out = WIRE.with_tool_feedback(CLI_BODY, message, [(c, "blocked") for c in message.tool_calls])
    turn: dict[str, Any] = out["contents"][-2]
    return turn


@pytest.mark.parametrize(("mode", "fixture"), [("sse", SSE_TOOL), ("array", ARRAY_TOOL)])
def test_stream_function_call_signature_is_replayed_not_the_placeholder(mode: Mode, fixture: list[bytes]) -> None:
    message = streamed_message(mode, [b"".join(fixture)[i:i + 5] for i in range(0, len(b"".join(fixture)), 5)])
    assert message.provider_parts == [CALL_A]
    assert feedback_model_turn(message) == {"role": "model", "parts": [
        {"text": "Let me look."},
        {"functionCall": {"name": "read_file", "args": {"file_path": "/srv/a.py"}, "id": "call_a"},
         "thoughtSignature": "c2lnLWE="},
        {"functionCall": {"name": "list_dir", "args": {"path": "/srv", "depth": 2, "glob": ["*.py"]}}}]}


def test_a_signed_call_without_an_id_is_matched_by_name_and_args() -> None:
    unsigned = {"functionCall": {"name": "read_file", "args": {"file_path": "/srv/a.py"}}}
    signed = {"functionCall": {"name": "read_file", "args": {"file_path": "/srv/b.py"}},
              "thoughtSignature": "c2lnLWI="}
    message = streamed_message("sse", [sse(chunk([unsigned, signed], "STOP", USAGE))])
    assert message.provider_parts == [signed]
    parts = feedback_model_turn(message)["parts"]
    # The first call had none: the placeholder (the API wants one there); the second keeps its own.
    assert [p.get("thoughtSignature") for p in parts] == ["skip_thought_signature_validator", "c2lnLWI="]


def test_unary_function_call_signature_is_replayed() -> None:
    body = {"candidates": [{"content": {"parts": [THOUGHT, {"text": "Let me look."}, CALL_A, CALL_B],
                                        "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, **META}
    message = WIRE.decode_response(json.dumps(body).encode())
    assert message.provider_parts == [CALL_A]
    parts = feedback_model_turn(message)["parts"]
    assert parts[1] == {"functionCall": {"name": "read_file", "args": {"file_path": "/srv/a.py"}, "id": "call_a"},
                        "thoughtSignature": "c2lnLWE="}
    assert "thoughtSignature" not in parts[2]
