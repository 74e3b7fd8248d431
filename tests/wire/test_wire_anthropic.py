"""Anthropic Messages wire format: stream decoding, rendered tails parsed by the official SDK, bodies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import pytest
from aiohttp import web
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
    WholeText,
)
from proxy.core.choice_guard import ChoiceGuard
from proxy.wire.anthropic import AnthropicMessages, MessagesStream
from proxy.wire.base import BadRequest, Replaced
from proxy.wire.sse import parse_fields
from tests.fakes.served import serve_here


def sse(name: str, data: dict[str, Any], nl: str = "\n") -> bytes:
    return f"event: {name}{nl}data: {json.dumps(data)}{nl}{nl}".encode()


MESSAGE_START = sse("message_start", {"type": "message_start", "message": {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
    "content": [], "stop_reason": None, "stop_sequence": None,
    "usage": {"input_tokens": 25, "output_tokens": 1}}})
PING = sse("ping", {"type": "ping"})
MESSAGE_STOP = sse("message_stop", {"type": "message_stop"})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def delta(index: int, d: dict[str, Any]) -> bytes:
    return sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})


def text(index: int, t: str) -> bytes:
    return delta(index, {"type": "text_delta", "text": t})


def block_stop(index: int) -> bytes:
    return sse("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(reason: str, tokens: int = 15) -> bytes:
    return sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                                 "usage": {"output_tokens": tokens}})


TEXT_TURN = [
    MESSAGE_START, block_start(0, {"type": "text", "text": ""}), PING,
    text(0, "Hello"), text(0, " there, "), b": keep-alive comment\n\n", text(0, "friend."),
    block_stop(0), message_delta("end_turn"), MESSAGE_STOP,
]

TOOL_TURN = [
    MESSAGE_START,
    block_start(0, {"type": "thinking", "thinking": ""}),
    delta(0, {"type": "thinking_delta", "thinking": "The user wants weather."}),
    delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk"}),
    block_stop(0),
    block_start(1, {"type": "text", "text": ""}), text(1, "Let me check."), block_stop(1),
    block_start(2, {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}}),
    delta(2, {"type": "input_json_delta", "partial_json": ""}),
    delta(2, {"type": "input_json_delta", "partial_json": "{\"locati"}),
    PING,
    delta(2, {"type": "input_json_delta", "partial_json": "on\": \"Paris\"}"}),
    block_stop(2),
    block_start(3, {"type": "tool_use", "id": "toolu_01B", "name": "get_time", "input": {}}),
    delta(3, {"type": "input_json_delta", "partial_json": "{\"tz\": \"CET\"}"}),
    block_stop(3),
    message_delta("tool_use", 89), MESSAGE_STOP,
]

CITATION_TURN = [
    MESSAGE_START, block_start(0, {"type": "text", "text": ""}), text(0, "The grass is green."),
    delta(0, {"type": "citations_delta", "citation": {
        "type": "char_location", "cited_text": "The grass is green.", "document_index": 0,
        "document_title": "Facts", "start_char_index": 0, "end_char_index": 19}}),
    block_stop(0),
    message_delta("end_turn"), MESSAGE_STOP,
]

ERROR_TURN = [
    MESSAGE_START, block_start(0, {"type": "text", "text": ""}), text(0, "Partial"),
    sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
]

CRLF_TURN = [
    sse("message_start", json.loads(parse_fields(MESSAGE_START).data), "\r\n"),
    sse("content_block_start", {"type": "content_block_start", "index": 0,
                                "content_block": {"type": "text", "text": ""}}, "\r\n"),
    sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                "delta": {"type": "text_delta", "text": "crlf"}}, "\r\n"),
    sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                          "usage": {"output_tokens": 3}}, "\r\n"),
]

FIXTURES = {"text": TEXT_TURN, "tool": TOOL_TURN, "citation": CITATION_TURN, "error": ERROR_TURN,
            "crlf": CRLF_TURN}


def decode(chunks: list[bytes]) -> list[Frame]:
    codec = MessagesStream()
    frames = [f for c in chunks for f in codec.feed(c)]
    return frames + codec.flush()


def events(frames: list[Frame]) -> list[Any]:
    return [e for f in frames for e in f.events]


# -- decoding ---------------------------------------------------------------------------------------

def test_text_turn_decodes_to_text_deltas_and_end_turn() -> None:
    # A comment's text is shown by clients that print the stream: checked whole (``label_events``).
    assert events(decode(TEXT_TURN)) == [TextDelta("Hello"), TextDelta(" there, "),
                                         WholeText("keep-alive comment", 0, "sse"), TextDelta("friend."),
                                         Finish("end_turn")]


def test_tool_turn_decodes_sequential_calls_keyed_by_block_index_and_thinking_as_its_own_lane() -> None:
    assert events(decode(TOOL_TURN)) == [
        TextDelta("The user wants weather.", 0, "thinking#0"), LaneEnd(0, "thinking#0"),
        TextDelta("Let me check."),
        ToolCallStart("2", "toolu_01A", "get_weather"), ToolCallArgsDelta("2", "{\"locati"),
        ToolCallArgsDelta("2", "on\": \"Paris\"}"), ToolCallEnd("2"),
        ToolCallStart("3", "toolu_01B", "get_time"), ToolCallArgsDelta("3", "{\"tz\": \"CET\"}"),
        ToolCallEnd("3"),
        Finish("tool_use"),
    ]


def test_citations_are_checked_whole() -> None:
    assert events(decode(CITATION_TURN)) == [
        TextDelta("The grass is green."), WholeText("The grass is green.", 0, "citation"),
        WholeText("Facts", 0, "citation"), Finish("end_turn")]


@pytest.mark.parametrize("frame", [
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"nameless"}}\n\n',
    b'event: ping\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}\n\n',
    b'event: ping\ndata: {"text":"no type"}\n\n',
    b'event: content_block_delta\nData: {"type":"content_block_delta"}\n\n',
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bare"}}\n\n',
])
def test_content_the_sdks_skip_but_other_clients_read_is_unreadable(frame: bytes) -> None:
    """The SDKs drop nameless and ``ping`` events by name and lines that are no SSE field; clients
    that read events by data.type, or every line, would show them: the answer fails closed."""
    assert [f.unreadable for f in decode([MESSAGE_START, frame])] == [False, True]


@pytest.mark.parametrize("frame", [PING, b"event: ping\n\n", b"retry: 10\n\n", b'data: {"type":"ping"}\n\n'])
def test_pings_comments_and_fields_without_content_are_relayed(frame: bytes) -> None:
    assert decode([MESSAGE_START, frame])[1] == Frame(frame)


@pytest.mark.parametrize(("frame", "shown"), [(b": keepalive\n\n", "keepalive"), (b"id: 7\nretry: 10\n\n", "7"),
                                              (b"id: x\nretry: 1s\n\n", "x\n1s")])
def test_comments_ids_and_odd_retries_are_checked_whole(frame: bytes, shown: str) -> None:
    """curl and clients that print the stream show them (an upstream could put a secret there)."""
    assert decode([MESSAGE_START, frame])[1] == Frame(frame, (WholeText(shown, 0, "sse"),))


def test_in_stream_error_becomes_stream_error() -> None:
    assert events(decode(ERROR_TURN)) == [TextDelta("Partial"), StreamError("Overloaded")]


def test_crlf_framing_and_an_unterminated_last_frame_still_decode() -> None:
    frames = decode([*CRLF_TURN, b"event: message_stop\ndata: {\"type\":\"message_stop\"}"])
    assert events(frames) == [TextDelta("crlf"), Finish("max_tokens")]
    assert len(frames) == 5


def test_tool_call_left_open_is_ended_by_the_finish() -> None:
    chunks = [MESSAGE_START, block_start(0, {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}),
              message_delta("tool_use")]
    assert events(decode(chunks)) == [ToolCallStart("0", "t", "f"), ToolCallArgsDelta("0", '{"a":1}'),
                                      ToolCallEnd("0"), Finish("tool_use")]


@pytest.mark.parametrize("junk", [
    b"event: content_block_delta\ndata: {not json\n\n",
    b"event: content_block_delta\ndata: [1, 2]\n\n",
    b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\n",
    b"event: content_block_start\ndata: {\"index\":\"x\",\"content_block\":3}\n\n",
    b"event: message_delta\ndata: {\"delta\":7}\n\n",
    b"event: error\ndata: {\"error\":\"boom\"}\n\n",
    b"\xff\xfe\n\n",
    b"retry: 10\n\n",
])
def test_malformed_frames_pass_through_without_events_or_exceptions(junk: bytes) -> None:
    frames = decode([junk])
    assert b"".join(f.raw for f in frames) == junk
    assert all(not isinstance(e, (TextDelta, ToolCallStart)) for e in events(frames))


@pytest.mark.parametrize("name", FIXTURES)
def test_concatenated_raw_frames_equal_the_input(name: str) -> None:
    data = b"".join(FIXTURES[name])
    assert b"".join(f.raw for f in decode([data])) == data


@pytest.mark.parametrize("name", FIXTURES)
def test_frames_do_not_depend_on_where_the_bytes_were_split(name: str) -> None:
    data = b"".join(FIXTURES[name])
    whole = decode([data])
    for i in range(len(data) + 1):
        assert decode([data[:i], data[i:]]) == whole


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(FIXTURES)), cuts=st.lists(st.integers(min_value=0, max_value=4000)))
def test_frames_do_not_depend_on_random_chunkings(name: str, cuts: list[int]) -> None:
    data = b"".join(FIXTURES[name])
    bounds = sorted({c % (len(data) + 1) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *bounds], [*bounds, len(data)], strict=True)]
    assert decode(chunks) == decode([data])


def test_retext_replaces_only_the_text_and_keeps_the_event_line() -> None:
    codec = MessagesStream()
    frame = codec.feed(text(0, "my secret"))[0]
    raw = codec.retext(frame, {(0, "text"): "my ******"})
    assert raw.startswith(b"event: content_block_delta\n")
    again = MessagesStream()
    again.feed(MESSAGE_START + block_start(0, {"type": "text", "text": ""}))
    assert again.feed(raw)[0].events == (TextDelta("my ******"),)


# -- the official SDK parses what we render ------------------------------------------------------------

@dataclass
class FakeUpstream:
    base_url: str = ""
    status: int = 200
    body: bytes = b""
    content_type: str = "text/event-stream"
    requests: list[dict[str, Any]] = field(default_factory=list)
    client: anthropic.AsyncAnthropic | None = None


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    fake = FakeUpstream()

    async def handle(request: web.Request) -> web.Response:
        fake.requests.append({"headers": dict(request.headers), "body": await request.json()})
        return web.Response(status=fake.status, body=fake.body, content_type=fake.content_type)

    async with (serve_here(lambda app: app.router.add_post("/v1/messages", handle)) as fake.base_url,
                anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.base_url, max_retries=0) as sdk):
        fake.client = sdk
        yield fake


def client(fake: FakeUpstream) -> anthropic.AsyncAnthropic:
    assert fake.client is not None
    return fake.client


REQUEST: dict[str, Any] = {"model": "claude-opus-4-8", "max_tokens": 100,
                           "messages": [{"role": "user", "content": "hi"}]}
REPLACED = Replaced("canary", "system_prompt_leak", "[withheld]")


def sent_then_tail(chunks: list[bytes], n_sent: int, message: AssistantMessage, finish: Any,
                   replaced: Replaced | None) -> bytes:
    """What the client gets: the first ``n_sent`` upstream frames, then the codec's tail."""
    codec = MessagesStream()
    frames = [f for c in chunks for f in codec.feed(c)]
    for f in frames[:n_sent]:
        codec.note_sent(f)
    return b"".join(f.raw for f in frames[:n_sent]) + codec.render_tail(message, finish, replaced)


async def sdk_stream(fake: FakeUpstream, body: bytes) -> tuple[str, Any, list[Any]]:
    """The SDK's ``messages.stream`` helper: its text, final message and raw events."""
    fake.body = body
    async with client(fake).messages.stream(**REQUEST) as stream:
        seen = [event async for event in stream]
        final = await stream.get_final_message()
    texts = "".join(e.text for e in seen if e.type == "text")
    return texts, final, seen


async def test_tail_with_nothing_sent_is_a_complete_stream_for_the_sdk(upstream: FakeUpstream) -> None:
    body = sent_then_tail(TEXT_TURN, 0, AssistantMessage(text="[withheld]"), "filtered", REPLACED)
    texts, final, seen = await sdk_stream(upstream, body)
    assert texts == "[withheld]"
    assert final.stop_reason == "refusal"
    assert final.model == "claude-opus-4-8"  # the upstream's own head, though it was never sent
    assert [e.type for e in seen][:2] == ["message_start", "output.message.replaced"]


async def test_tail_with_no_upstream_head_synthesizes_a_message_start(upstream: FakeUpstream) -> None:
    body = MessagesStream().render_tail(AssistantMessage(text="ok"), "normal", None)
    texts, final, _ = await sdk_stream(upstream, body)
    assert (texts, final.stop_reason, final.model) == ("ok", "end_turn", "")
    assert final.id.startswith("msg_guardproxy")


async def test_tail_after_partial_text_closes_the_block_and_continues_the_text(upstream: FakeUpstream) -> None:
    body = sent_then_tail(TEXT_TURN, 4, AssistantMessage(text=" [withheld]"), "filtered", REPLACED)
    texts, final, seen = await sdk_stream(upstream, body)
    assert texts == "Hello [withheld]"
    assert final.stop_reason == "refusal"
    assert [b.type for b in final.content] == ["text", "text"]
    replaced = [e for e in seen if e.type == "output.message.replaced"]
    assert len(replaced) == 1


async def test_raw_stream_yields_the_replaced_signal_with_its_payload(upstream: FakeUpstream) -> None:
    upstream.body = sent_then_tail(TEXT_TURN, 4, AssistantMessage(text="x"), "filtered", REPLACED)
    stream = await client(upstream).messages.create(**REQUEST, stream=True)
    seen = [event async for event in stream]
    signal = next(e for e in seen if e.type == "output.message.replaced")
    assert signal.to_dict() == REPLACED.payload()


async def test_tail_after_a_completed_tool_call_appends_the_next_call(upstream: FakeUpstream) -> None:
    # Sent: thinking, text, the first tool_use block through its stop (frames 0..13).
    sent = TOOL_TURN.index(block_stop(2)) + 1
    message = AssistantMessage(tool_calls=[ToolCall("toolu_02", "get_time", '{"tz": "UTC"}')])
    texts, final, _ = await sdk_stream(upstream, sent_then_tail(TOOL_TURN, sent, message, "normal", None))
    assert texts == "Let me check."
    assert final.stop_reason == "tool_use"
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert final.content[2].input == {"location": "Paris"}
    assert (final.content[3].id, final.content[3].input) == ("toolu_02", {"tz": "UTC"})


async def test_tail_mid_thinking_closes_it_and_invalid_arguments_become_an_empty_object(
        upstream: FakeUpstream) -> None:
    message = AssistantMessage(text="Blocked.", tool_calls=[ToolCall("toolu_x", "run", "{not json")])
    texts, final, _ = await sdk_stream(upstream, sent_then_tail(TOOL_TURN, 2, message, "normal", None))
    assert texts == "Blocked."
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[2].input == {}


@pytest.mark.parametrize("name", [b"message_delta", b"content_block_delta"])
async def test_tail_continues_after_a_block_start_whose_type_is_spelled_with_an_escape(
        upstream: FakeUpstream, name: bytes) -> None:
    # The SDK types an event by its data's type, here a block start under another event name and
    # with an escaped letter: the client has two blocks, so the tail closes the second and adds a third.
    escaped = (b'event: ' + name + b'\ndata: {"type": "content_block_\\u0073tart", "index": 1, '
               b'"content_block": {"type": "text", "text": ""}}\n\n')
    chunks = [MESSAGE_START, block_start(0, {"type": "text", "text": ""}), text(0, "Hello"), block_stop(0),
              escaped, text(1, " there")]
    body = sent_then_tail(chunks, len(chunks), AssistantMessage(text="[withheld]"), "filtered", REPLACED)
    _, final, _ = await sdk_stream(upstream, body)
    assert [b.text for b in final.content] == ["Hello", " there", "[withheld]"]


async def test_replaced_signal_alone_before_anything_was_sent_keeps_the_sdk_happy(
        upstream: FakeUpstream) -> None:
    codec = MessagesStream()
    body = codec.render_replaced(REPLACED) + codec.render_tail(AssistantMessage(text="retry"), "normal", None)
    assert body.count(b"event: message_start") == 1
    texts, final, _ = await sdk_stream(upstream, body)
    assert (texts, final.stop_reason) == ("retry", "end_turn")


async def test_render_error_makes_the_sdk_raise_its_status_error(upstream: FakeUpstream) -> None:
    codec = MessagesStream()
    frames = codec.feed(b"".join(TEXT_TURN[:4]))
    for f in frames:
        codec.note_sent(f)
    upstream.body = b"".join(f.raw for f in frames) + codec.render_error("Overloaded", "overloaded")
    with pytest.raises(anthropic.APIStatusError) as info:
        async with client(upstream).messages.stream(**REQUEST) as stream:
            async for _ in stream:
                pass
    assert info.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


async def test_http_error_body_maps_to_the_sdk_exception_and_keeps_the_extras(upstream: FakeUpstream) -> None:
    upstream.status, upstream.content_type = 429, "application/json"
    upstream.body = AnthropicMessages().http_error(429, "slow down", "rate_limit",
                                                   {"guardrail_id": "g1", "reason_code": "pii"})
    with pytest.raises(anthropic.RateLimitError) as info:
        await client(upstream).messages.create(**REQUEST)
    body = info.value.body
    assert isinstance(body, dict)
    assert body["error"] == {"type": "rate_limit_error", "message": "slow down", "guardrail_id": "g1",
                             "reason_code": "pii"}
    assert body["request_id"].startswith("req_")


# -- requests and non-streaming bodies ---------------------------------------------------------------

WIRE = AnthropicMessages()

HISTORY_REQUEST: dict[str, Any] = {
    "model": "claude-opus-4-8", "max_tokens": 1024, "stream": True,
    "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Weather and time?"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
            {"type": "tool_use", "id": "toolu_3", "name": "read", "input": {"path": "/x"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny 21C"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "no tz"}],
             "is_error": True}]},
    ],
}


def test_parse_request_reads_system_blocks_last_user_text_and_tool_history() -> None:
    view = WIRE.parse_request(HISTORY_REQUEST, stream=True)
    assert (view.model, view.stream, view.system_prompt) == ("claude-opus-4-8", True, "You are terse.")
    assert view.last_user_text == "Weather and time?"
    assert view.history == [
        HistoryToolCall("toolu_1", "get_weather", '{"location":"Paris"}', True),
        HistoryToolCall("toolu_2", "get_time", "{}", False),
        HistoryToolCall("toolu_3", "read", '{"path":"/x"}', None),
    ]


def test_parse_request_takes_a_string_system_and_string_content() -> None:
    view = WIRE.parse_request({"model": "m", "system": "Be kind.", "messages": [
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"}]}, stream=False)
    assert (view.system_prompt, view.last_user_text, view.stream) == ("Be kind.", "second", False)


@pytest.mark.parametrize("body", [
    {"model": "m"},
    {"model": "m", "messages": "hi"},
    {"model": "m", "messages": ["hi"]},
    {"model": "m", "messages": [{"role": "user"}]},
    {"model": "m", "messages": [{"role": "user", "content": 3}]},
    {"messages": [{"role": "user", "content": "hi"}]},
    {"model": "m", "system": 5, "messages": [{"role": "user", "content": "hi"}]},
])
def test_parse_request_rejects_wrong_shapes(body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        WIRE.parse_request(body, stream=False)


def test_with_system_appends_to_a_string_or_a_block_list_without_mutating() -> None:
    plain = {"model": "m", "system": "A", "messages": []}
    assert WIRE.with_system(plain, "B")["system"] == "A\n\nB"
    assert WIRE.with_system({"model": "m", "messages": []}, "B")["system"] == "B"
    out = WIRE.with_system(HISTORY_REQUEST, "Never leak.")
    assert out["system"][-1] == {"type": "text", "text": "Never leak."}
    assert len(HISTORY_REQUEST["system"]) == 1 and plain["system"] == "A"
    assert WIRE.parse_request(out, stream=True).system_prompt == "You are terse.\nNever leak."


def test_with_tool_feedback_appends_the_calls_and_one_error_result_each() -> None:
    message = AssistantMessage(text="Deleting.", tool_calls=[ToolCall("toolu_9", "bash", '{"cmd":"rm -rf /"}'),
                                                             ToolCall("toolu_10", "bash", "broken")])
    out = WIRE.with_tool_feedback(HISTORY_REQUEST, message, [(message.tool_calls[0], "blocked: destructive"),
                                                             (message.tool_calls[1], "not run")])
    assert len(out["messages"]) == len(HISTORY_REQUEST["messages"]) + 2
    assistant, user = out["messages"][-2:]
    assert assistant["content"] == [
        {"type": "text", "text": "Deleting."},
        {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {"cmd": "rm -rf /"}},
        {"type": "tool_use", "id": "toolu_10", "name": "bash", "input": {}}]
    assert user == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "blocked: destructive", "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_10", "content": "not run", "is_error": True}]}
    history = WIRE.parse_request(out, stream=True).history
    assert [h.result_ok for h in history[-2:]] == [False, False]
    assert len(HISTORY_REQUEST["messages"]) == 3


RESPONSE = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
    "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Grass is green.", "citations": [
            {"type": "web_search_result_location", "cited_text": "grass is green", "url": "https://e.x/g",
             "title": "Grass", "encrypted_index": "abc"}]},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 11, "output_tokens": 7, "cache_creation_input_tokens": 0,
              "cache_read_input_tokens": 0}}


def test_decode_response_reads_text_calls_finish_and_citations() -> None:
    message = WIRE.decode_response(json.dumps(RESPONSE).encode())
    assert message.text == "Grass is green."
    assert message.tool_calls == [ToolCall("toolu_1", "get_weather", '{"location":"Paris"}')]
    assert message.finish_reason == "tool_use"
    assert message.annotations == ["https://e.x/g", "Grass", "grass is green"]


def test_render_response_replaces_output_drops_thinking_and_parses_as_an_sdk_message() -> None:
    body = WIRE.render_response(json.dumps(RESPONSE).encode(), AssistantMessage(text="[withheld]"),
                                "filtered", REPLACED)
    data = json.loads(body)
    assert data["guardproxy"] == REPLACED.payload()
    message = anthropic.types.Message.model_validate(data)
    assert [b.type for b in message.content] == ["text"]  # thinking may hold what was blocked
    assert isinstance(message.content[0], anthropic.types.TextBlock)
    assert (message.content[0].text, message.stop_reason) == ("[withheld]", "refusal")
    assert (message.id, message.usage.output_tokens) == (RESPONSE["id"], 7)
    assert WIRE.decode_response(body).text == "[withheld]"


def test_render_response_with_tool_calls_ends_with_tool_use() -> None:
    message = AssistantMessage(tool_calls=[ToolCall("toolu_5", "f", '{"a": [1]}')])
    data = json.loads(WIRE.render_response(json.dumps(RESPONSE).encode(), message, "normal", None))
    assert data["stop_reason"] == "tool_use" and "guardproxy" not in data
    assert data["content"][-1] == {"type": "tool_use", "id": "toolu_5", "name": "f", "input": {"a": [1]}}


def test_judge_request_is_stateless_non_streaming_and_deterministic() -> None:
    path, body = WIRE.judge_request("claude-haiku-4-5", "Judge this.")
    assert path == "/v1/messages"
    assert body["temperature"] == 0 and body["stream"] is False and body["max_tokens"] > 0
    assert body["messages"] == [{"role": "user", "content": "Judge this."}]
    assert WIRE.parse_request(body, stream=False).last_user_text == "Judge this."


# -- provider parts: signed thinking survives a tool-feedback round --------------------------------------

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk"
THINKING_TOOL_TURN = [
    MESSAGE_START,
    block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    delta(0, {"type": "thinking_delta", "thinking": "The user wants "}),
    PING,
    delta(0, {"type": "thinking_delta", "thinking": "the file removed."}),
    delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
    block_stop(0),
    block_start(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}),
    block_stop(1),
    block_start(2, {"type": "text", "text": ""}), text(2, "Deleting."), block_stop(2),
    block_start(3, {"type": "tool_use", "id": "toolu_01A", "name": "bash", "input": {}}),
    delta(3, {"type": "input_json_delta", "partial_json": "{\"cmd\": \"rm -rf /\"}"}),
    block_stop(3),
    message_delta("tool_use", 89), MESSAGE_STOP,
]
THINKING_BLOCKS = [
    {"type": "thinking", "thinking": "The user wants the file removed.", "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"},
]


def assert_thinking_then_tool_use(out: dict[str, Any]) -> None:
    assistant, user = out["messages"][-2:]
    assert assistant == {"role": "assistant", "content": [
        *THINKING_BLOCKS,
        {"type": "text", "text": "Deleting."},
        {"type": "tool_use", "id": "toolu_01A", "name": "bash", "input": {"cmd": "rm -rf /"}}]}
    assert user["content"] == [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "blocked",
                                "is_error": True}]


@pytest.mark.parametrize("split", [None, 7])
def test_stream_signed_thinking_is_replayed_before_the_tool_use(split: int | None) -> None:
    codec = MessagesStream()
    guard = ChoiceGuard(lambda _: None, holdback=0)
    data = b"".join(THINKING_TOOL_TURN)
    pieces = [data] if split is None else [data[i:i + split] for i in range(0, len(data), split)]
    for piece in pieces:
        for frame in codec.feed(piece):
            guard.push(frame)
    for frame in codec.flush():
        guard.push(frame)
    guard.end()
    message = guard.message()
    assert message.text == "Deleting."  # thinking is never visible text
    message.provider_parts = codec.provider_parts()
    assert message.provider_parts == THINKING_BLOCKS
    out = WIRE.with_tool_feedback(HISTORY_REQUEST, message, [(message.tool_calls[0], "blocked")])
    assert_thinking_then_tool_use(out)


def test_an_unfinished_thinking_block_is_not_a_provider_part() -> None:
    codec = MessagesStream()
    codec.feed(b"".join(THINKING_TOOL_TURN[:5]))
    assert codec.provider_parts() == []


def test_unary_signed_thinking_is_replayed_before_the_tool_use() -> None:
    body = {**RESPONSE, "content": [*THINKING_BLOCKS, {"type": "text", "text": "Deleting."},
                                    {"type": "tool_use", "id": "toolu_01A", "name": "bash",
                                     "input": {"cmd": "rm -rf /"}}]}
    message = WIRE.decode_response(json.dumps(body).encode())
    assert message.provider_parts == THINKING_BLOCKS
    out = WIRE.with_tool_feedback(HISTORY_REQUEST, message, [(message.tool_calls[0], "blocked")])
    assert_thinking_then_tool_use(out)
    assert out["messages"][-2]["content"][0] is not message.provider_parts[0]  # a copy, not shared
