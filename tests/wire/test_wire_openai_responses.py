"""OpenAI Responses wire format: decoding, byte-split invariance, and what the proxy renders, checked
by the official openai SDK against a real local HTTP server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import Response

from guardrails.datamodel import (
    AssistantMessage,
    Event,
    Finish,
    Frame,
    StreamError,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    WholeText,
)
from proxy.wire.base import BadRequest, Replaced
from proxy.wire.openai_responses import OpenAIResponses, ResponsesStream
from tests.fakes.served import serve_here

WIRE = OpenAIResponses()
REPLACED = Replaced("canary", "system_prompt_leak", "I can't share that.")


# -- recorded-style fixtures ----------------------------------------------------------------------
def ev(t: str, seq: int, **fields: Any) -> bytes:
    data = json.dumps({"type": t, **fields, "sequence_number": seq}, separators=(",", ":"))
    return f"event: {t}\ndata: {data}\n\n".encode()


RESP = {"id": "resp_68a1", "object": "response", "created_at": 1795975044, "status": "in_progress",
        "background": False, "error": None, "incomplete_details": None, "instructions": None,
        "max_output_tokens": None, "model": "gpt-5-2026-08-07", "output": [], "parallel_tool_calls": True,
        "previous_response_id": None, "reasoning": {"effort": "medium", "summary": None}, "store": False,
        "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
        "top_p": 1.0, "truncation": "disabled", "usage": None, "metadata": {}}
USAGE = {"input_tokens": 11, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
         "output_tokens": 7,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 18}
REASONING = {"id": "rs_1", "type": "reasoning", "summary": []}
MSG = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
PART = {"type": "output_text", "text": "", "annotations": []}
HELLO = "Hello, world."
WHERE = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
DONE_MSG = {**MSG, "status": "completed", "content": [{**PART, "text": HELLO}]}

TEXT_TURN = b"".join([
    ev("response.created", 0, response=RESP),
    ev("response.in_progress", 1, response=RESP),
    ev("response.output_item.added", 2, output_index=0, item=REASONING),
    ev("response.output_item.done", 3, output_index=0, item=REASONING),
    ev("response.output_item.added", 4, output_index=1, item=MSG),
    ev("response.content_part.added", 5, **WHERE, part=PART),
    ev("response.output_text.delta", 6, **WHERE, delta="Hello", logprobs=[]),
    b": keep-alive\n\n",
    ev("response.output_text.delta", 7, **WHERE, delta=", wor", logprobs=[]),
    ev("response.output_text.delta", 8, **WHERE, delta="ld.", logprobs=[]),
    ev("response.output_text.done", 9, **WHERE, text=HELLO, logprobs=[]),
    ev("response.content_part.done", 10, **WHERE, part={**PART, "text": HELLO}),
    ev("response.output_item.done", 11, output_index=1, item=DONE_MSG),
    ev("response.completed", 12, response={**RESP, "status": "completed", "output": [REASONING, DONE_MSG],
                                           "usage": USAGE}),
])


def fc(n: int, args: str, status: str = "in_progress") -> dict[str, Any]:
    return {"id": f"fc_{n}", "type": "function_call", "status": status, "arguments": args,
            "call_id": f"call_{n}", "name": "get_weather"}


PARIS, TOKYO = '{"location": "Paris"}', '{"location": "Tokyo"}'
TOOL_TURN = b"".join([
    ev("response.created", 0, response=RESP),
    ev("response.in_progress", 1, response=RESP),
    ev("response.output_item.added", 2, output_index=0, item=fc(0, "")),
    ev("response.function_call_arguments.delta", 3, item_id="fc_0", output_index=0, delta='{"locati'),
    ev("response.function_call_arguments.delta", 4, item_id="fc_0", output_index=0, delta='on": "Pa'),
    ev("response.function_call_arguments.delta", 5, item_id="fc_0", output_index=0, delta='ris"}'),
    ev("response.function_call_arguments.done", 6, item_id="fc_0", output_index=0, arguments=PARIS),
    ev("response.output_item.done", 7, output_index=0, item=fc(0, PARIS, "completed")),
    ev("response.output_item.added", 8, output_index=1, item=fc(1, "")),
    ev("response.function_call_arguments.delta", 9, item_id="fc_1", output_index=1, delta=TOKYO),
    ev("response.function_call_arguments.done", 10, item_id="fc_1", output_index=1, arguments=TOKYO),
    ev("response.output_item.done", 11, output_index=1, item=fc(1, TOKYO, "completed")),
    ev("response.completed", 12, response={**RESP, "status": "completed", "usage": USAGE,
                                           "output": [fc(0, PARIS, "completed"), fc(1, TOKYO, "completed")]}),
])

PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
CTC = {"id": "ctc_1", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_p",
       "name": "apply_patch", "input": ""}
CUSTOM_TURN = b"".join([
    ev("response.created", 0, response=RESP),
    ev("response.output_item.added", 1, output_index=0, item=CTC),
    ev("response.custom_tool_call_input.delta", 2, item_id="ctc_1", output_index=0, delta=PATCH[:20]),
    ev("response.custom_tool_call_input.delta", 3, item_id="ctc_1", output_index=0, delta=PATCH[20:]),
    ev("response.custom_tool_call_input.done", 4, item_id="ctc_1", output_index=0, input=PATCH),
    ev("response.output_item.done", 5, output_index=0, item={**CTC, "status": "completed", "input": PATCH}),
    ev("response.completed", 6, response={**RESP, "status": "completed"}),
])

ERROR_TURN = b"".join([
    ev("response.created", 0, response=RESP),
    ev("response.output_item.added", 1, output_index=0, item=MSG),
    ev("response.content_part.added", 2, item_id="msg_1", output_index=0, content_index=0, part=PART),
    ev("response.output_text.delta", 3, item_id="msg_1", output_index=0, content_index=0, delta="Hi",
       logprobs=[]),
    ev("error", 4, code="server_error", message="The server had an error", param=None),
    ev("response.failed", 5, response={**RESP, "status": "failed", "error": {
        "code": "server_error", "message": "The server had an error"}}),
])

REFUSAL_TURN = b"".join([
    ev("response.created", 0, response=RESP),
    ev("response.output_item.added", 1, output_index=0, item=MSG),
    ev("response.content_part.added", 2, item_id="msg_1", output_index=0, content_index=0,
       part={"type": "refusal", "refusal": ""}),
    ev("response.refusal.delta", 3, item_id="msg_1", output_index=0, content_index=0, delta="I can't"),
    ev("response.output_text.annotation.added", 4, item_id="msg_1", output_index=0, content_index=0,
       annotation_index=0, annotation={"type": "url_citation", "url": "https://x"}),
    ev("response.incomplete", 5, response={**RESP, "status": "incomplete",
                                           "incomplete_details": {"reason": "content_filter"}}),
])

FIXTURES = {"text": TEXT_TURN, "tool": TOOL_TURN, "custom": CUSTOM_TURN, "error": ERROR_TURN,
            "refusal": REFUSAL_TURN}


def decode(data: bytes, chunks: list[int] | None = None) -> tuple[ResponsesStream, list[Frame]]:
    codec = ResponsesStream()
    frames: list[Frame] = []
    pos = 0
    for size in chunks or []:
        frames += codec.feed(data[pos:pos + size])
        pos += size
    frames += codec.feed(data[pos:])
    return codec, frames + codec.flush()


def events(frames: list[Frame]) -> list[Event]:
    return [e for f in frames for e in f.events]


# -- decoding -------------------------------------------------------------------------------------
def test_text_turn_decodes_to_text_deltas_and_a_stop_finish() -> None:
    _, frames = decode(TEXT_TURN)
    assert events(frames) == [TextDelta("Hello"), WholeText("keep-alive", 0, "sse"), TextDelta(", wor"),
                              TextDelta("ld."), Finish("stop")]
    assert len(frames) == 14  # the keep-alive comment is a frame of its own, its text checked whole


def test_tool_turn_decodes_two_calls_keyed_by_item_id_with_fragmented_args() -> None:
    _, frames = decode(TOOL_TURN)
    assert events(frames) == [
        ToolCallStart("fc_0", "call_0", "get_weather"), ToolCallArgsDelta("fc_0", '{"locati'),
        ToolCallArgsDelta("fc_0", 'on": "Pa'), ToolCallArgsDelta("fc_0", 'ris"}'), ToolCallEnd("fc_0"),
        ToolCallStart("fc_1", "call_1", "get_weather"), ToolCallArgsDelta("fc_1", TOKYO), ToolCallEnd("fc_1"),
        Finish("stop"),
    ]


def test_custom_tool_call_is_a_tool_call_whose_arguments_are_the_raw_input() -> None:
    _, frames = decode(CUSTOM_TURN)
    assert events(frames) == [ToolCallStart("ctc_1", "call_p", "apply_patch"),
                              ToolCallArgsDelta("ctc_1", PATCH[:20]), ToolCallArgsDelta("ctc_1", PATCH[20:]),
                              ToolCallEnd("ctc_1"), Finish("stop")]


def test_error_event_then_failed_gives_one_stream_error_and_a_failed_finish() -> None:
    _, frames = decode(ERROR_TURN)
    assert events(frames) == [TextDelta("Hi"), StreamError("The server had an error"), Finish("failed")]


def test_failed_without_error_event_still_reports_the_error() -> None:
    data = ev("response.failed", 0, response={**RESP, "status": "failed",
                                               "error": {"code": "server_error", "message": "boom"}})
    assert events(decode(data)[1]) == [StreamError("boom"), Finish("failed")]


def test_refusal_is_guarded_as_text_annotations_whole_and_incomplete_finishes_with_its_reason() -> None:
    _, frames = decode(REFUSAL_TURN)
    assert events(frames) == [TextDelta("I can't"), WholeText("https://x", 0, "annotation"),
                              Finish("content_filter")]


def test_tool_item_seen_only_when_done_still_yields_a_complete_call() -> None:
    data = ev("response.output_item.done", 0, output_index=0, item=fc(0, PARIS, "completed"))
    assert events(decode(data)[1]) == [ToolCallStart("fc_0", "call_0", "get_weather"),
                                       ToolCallArgsDelta("fc_0", PARIS), ToolCallEnd("fc_0")]


def test_an_open_tool_call_is_ended_by_the_terminal_event() -> None:
    data = ev("response.output_item.added", 0, output_index=0, item=fc(0, "")) + ev(
        "response.incomplete", 1, response={**RESP, "status": "incomplete",
                                            "incomplete_details": {"reason": "max_output_tokens"}})
    assert events(decode(data)[1])[-2:] == [ToolCallEnd("fc_0"), Finish("max_output_tokens")]


def test_malformed_and_unknown_frames_pass_through_without_events() -> None:
    data = b"data: {not json\n\nevent: x\ndata: [1]\n\ndata: {\"type\":\"response.queued\"}\n\ntrailing"
    _, frames = decode(data)
    assert [f.events for f in frames] == [(), (), (), ()]
    assert [f.unreadable for f in frames] == [True, True, False, True]
    assert b"".join(f.raw for f in frames) == data


@pytest.mark.parametrize("frame", [b'{"type":"response.output_text.delta","delta":"bare"}\n\n',
                                   b'event: response.output_text.delta\nData: {"delta":"x"}\n\n'])
def test_a_line_that_is_no_sse_field_is_unreadable(frame: bytes) -> None:
    assert [f.unreadable for f in decode(frame)[1]] == [True]


def test_comments_and_fields_without_data_are_relayed() -> None:
    data = b": keepalive\n\nid: 4\nretry: 100\n\nevent: x\n\n"
    assert [(f.raw, f.unreadable) for f in decode(data)[1]] == [
        (b": keepalive\n\n", False), (b"id: 4\nretry: 100\n\n", False), (b"event: x\n\n", False)]


@pytest.mark.parametrize("name", FIXTURES)
def test_frames_do_not_depend_on_where_the_bytes_were_split(name: str) -> None:
    data = FIXTURES[name]
    _, whole = decode(data)
    for offset in range(len(data) + 1):
        _, split = decode(data, [offset])
        assert split == whole, offset
        assert b"".join(f.raw for f in split) == data


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(FIXTURES)), sizes=st.lists(st.integers(1, 64), max_size=200))
def test_frames_do_not_depend_on_random_chunkings(name: str, sizes: list[int]) -> None:
    data = FIXTURES[name]
    _, frames = decode(data, sizes)
    assert frames == decode(data)[1]
    assert b"".join(f.raw for f in frames) == data


def test_retext_replaces_only_the_delta_and_keeps_the_sequence_number() -> None:
    _, frames = decode(TEXT_TURN)
    frame = next(f for f in frames if f.text == "Hello")
    raw = ResponsesStream().retext(frame, {(0, "text"): "[redacted]"})
    assert raw.startswith(b"event: response.output_text.delta\ndata: ")
    assert json.loads(raw.split(b"data: ", 1)[1]) == {"type": "response.output_text.delta", **WHERE,
                                                      "delta": "[redacted]", "logprobs": [],
                                                      "sequence_number": 6}


# -- what the proxy renders, through the official SDK ----------------------------------------------
@dataclass
class Served:
    base: str = ""
    reply: tuple[bytes, int, str] = (b"", 200, "text/event-stream")

    def serve(self, body: bytes, status: int = 200, content_type: str = "text/event-stream") -> None:
        self.reply = (body, status, content_type)

    def client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self.base + "/v1", api_key="sk-test", max_retries=0)


@pytest.fixture
async def server() -> AsyncIterator[Served]:
    served = Served()

    async def handle(request: web.Request) -> web.Response:
        body, status, ctype = served.reply
        return web.Response(body=body, status=status, content_type=ctype)

    async with serve_here(lambda app: app.router.add_post("/v1/responses", handle)) as served.base:
        yield served


@dataclass
class Seen:
    types: list[str]
    text: str
    final: Any
    replaced: list[Any]


async def stream_with_sdk(served: Served, body: bytes) -> Seen:
    """Stream ``body`` with ``responses.create(stream=True)`` and again with the stricter
    ``responses.stream()`` helper (which checks item bookkeeping and response identity)."""
    served.serve(body)
    types: list[str] = []
    text, final = "", None
    replaced: list[Any] = []
    async with served.client() as client:
        async for e in await client.responses.create(model="gpt-5", input="hi", stream=True):
            types.append(e.type)
            if e.type == "response.output_text.delta":
                text += e.delta
            if str(e.type) == "output.message.replaced":  # parsed as a stand-in model, not raised
                replaced.append(e)
            final = getattr(e, "response", final)
        async with client.responses.stream(model="gpt-5", input="hi") as helper:
            async for _ in helper:
                pass
            if types[-1] == "response.completed":
                assert (await helper.get_final_response()).output_text.endswith(text[-5:])
    return Seen(types, text, final, replaced)


def sent_prefix(data: bytes, upto: int) -> tuple[ResponsesStream, bytes]:
    """Decode ``data``; the client got its first ``upto`` frames (the rest were held and dropped)."""
    codec, frames = decode(data)
    for f in frames[:upto]:
        codec.note_sent(f)
    return codec, b"".join(f.raw for f in frames[:upto])


def sequence_numbers(body: bytes) -> list[int]:
    lines = [line for line in body.split(b"\n") if line.startswith(b"data: ")]
    return [json.loads(line[6:])["sequence_number"] for line in lines]


async def test_tail_with_nothing_sent_is_a_complete_stream_with_the_signal_after_created(
        server: Served) -> None:
    codec, _ = decode(TEXT_TURN)
    body = codec.render_tail(AssistantMessage(text="I can't share that."), "normal", REPLACED)
    seen = await stream_with_sdk(server, body)
    assert seen.types[:3] == ["response.created", "response.in_progress", "output.message.replaced"]
    assert seen.text == "I can't share that." and seen.types[-1] == "response.completed"
    assert seen.final.id == "resp_68a1" and seen.final.output_text == "I can't share that."
    assert seen.replaced[0].reason_code == "system_prompt_leak"
    assert sequence_numbers(body) == list(range(len(sequence_numbers(body))))


async def test_tail_mid_text_closes_the_open_message_then_adds_the_replacement(server: Served) -> None:
    codec, prefix = sent_prefix(TEXT_TURN, 9)  # up to and including the delta ", wor"
    body = prefix + codec.render_tail(AssistantMessage(text=" [removed]"), "normal", REPLACED)
    seen = await stream_with_sdk(server, body)
    assert seen.text == "Hello, wor [removed]"
    assert seen.final.status == "completed" and seen.final.usage.total_tokens == 18
    assert [i.type for i in seen.final.output] == ["reasoning", "message", "message"]
    assert seen.final.output[1].content[0].text == "Hello, wor"
    assert sequence_numbers(body) == list(range(len(sequence_numbers(body))))


async def test_filtered_tail_ends_incomplete_with_content_filter(server: Served) -> None:
    codec, prefix = sent_prefix(TEXT_TURN, 7)
    body = prefix + codec.render_tail(AssistantMessage(text=""), "filtered", None)
    seen = await stream_with_sdk(server, body)
    assert seen.text == "Hello" and seen.types[-1] == "response.incomplete"
    assert seen.final.incomplete_details.reason == "content_filter"


async def test_tail_after_completed_tool_calls_keeps_them_and_adds_new_calls(server: Served) -> None:
    codec, prefix = sent_prefix(TOOL_TURN, 12)  # everything but response.completed
    extra = ToolCall("call_9", "get_weather", '{"location": "Rome"}')
    body = prefix + codec.render_tail(AssistantMessage(text="Also Rome.", tool_calls=[extra]), "normal",
                                      REPLACED)
    seen = await stream_with_sdk(server, body)
    calls = [(i.call_id, i.arguments) for i in seen.final.output if i.type == "function_call"]
    assert calls == [("call_0", PARIS), ("call_1", TOKYO), ("call_9", '{"location": "Rome"}')]
    assert seen.text == "Also Rome."


async def test_tail_renders_a_custom_call_as_custom_and_closes_an_open_refusal(server: Served) -> None:
    codec, _ = decode(CUSTOM_TURN)
    _, frames = decode(REFUSAL_TURN)
    for f in frames[:4]:
        codec.note_sent(f)
    body = b"".join(f.raw for f in frames[:4]) + codec.render_tail(
        AssistantMessage(tool_calls=[ToolCall("call_p", "apply_patch", PATCH)]), "normal", None)
    seen = await stream_with_sdk(server, body)
    assert seen.final.output[0].content[0].refusal == "I can't"
    assert (seen.final.output[1].type, seen.final.output[1].input) == ("custom_tool_call", PATCH)


async def test_nothing_follows_a_terminal_event_the_client_already_has() -> None:
    codec, _ = sent_prefix(TEXT_TURN, 14)
    assert codec.render_tail(AssistantMessage(text="x"), "normal", REPLACED) == b""
    assert codec.render_error("late", "guardrail") == b""


async def test_render_error_is_an_error_event_then_response_failed_and_the_sdk_does_not_raise(
        server: Served) -> None:
    codec, prefix = sent_prefix(TEXT_TURN, 7)
    body = prefix + codec.render_error("Blocked by guardrail canary", "guardrail")
    seen = await stream_with_sdk(server, body)
    assert seen.types[-2:] == ["error", "response.failed"]
    assert seen.final.error.code == "invalid_prompt"  # Codex fails the turn without retrying
    assert seen.final.error.message == "Blocked by guardrail canary"
    assert sequence_numbers(body) == list(range(len(sequence_numbers(body))))


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_a_sent_frame_it_decoded_is_noted_as_the_same_bytes_parsed_anew(name: str) -> None:
    # ``note_sent`` reads the delta frames it decoded from what it kept; a frame with other bytes
    # objects (a rewritten frame, one it forgot) is parsed. Both must leave the same client state.
    for upto in range(len(decode(FIXTURES[name])[1]) + 1):
        kept, frames = decode(FIXTURES[name])
        parsed, _ = decode(FIXTURES[name])
        for f in frames[:upto]:
            kept.note_sent(f)
            parsed.note_sent(Frame(bytes(bytearray(f.raw)), f.events))
        message = AssistantMessage(text="[withheld]", tool_calls=[ToolCall("call_9", "get_time", "{}")])
        assert kept.render_tail(message, "filtered", REPLACED) == parsed.render_tail(message, "filtered", REPLACED)


def test_tail_output_holds_every_delta_the_client_was_sent_in_order() -> None:
    # The deltas are joined to their part's or call's text only when something reads it: the
    # tail's closing events and its final output must still hold all of them, after what the part
    # or the call began with, and a ``.done`` without its text keeps what the deltas made.
    at = {"item_id": "msg_1", "output_index": 0}
    frames = [
        ev("response.created", 0, response=RESP),
        ev("response.output_item.added", 1, output_index=0, item=MSG),
        ev("response.content_part.added", 2, **at, content_index=0, part={**PART, "text": "Pre"}),
        ev("response.output_text.delta", 3, **at, content_index=0, delta="a", logprobs=[]),
        ev("response.output_text.delta", 4, **at, content_index=0, delta="b", logprobs=[]),
        ev("response.output_text.done", 5, **at, content_index=0, logprobs=[]),
        ev("response.content_part.added", 6, **at, content_index=1, part=PART),
        ev("response.output_text.delta", 7, **at, content_index=1, delta="c", logprobs=[]),
        ev("response.output_text.delta", 8, **at, content_index=1, delta="d", logprobs=[]),
        ev("response.output_item.added", 9, output_index=1, item=fc(0, '{"loc')),
        ev("response.function_call_arguments.delta", 10, item_id="fc_0", output_index=1, delta='ation": '),
        ev("response.function_call_arguments.delta", 11, item_id="fc_0", output_index=1, delta='"Paris"}'),
    ]
    codec, _ = sent_prefix(b"".join(frames), len(frames))
    tail = codec.render_tail(AssistantMessage(), "normal", None)
    done = [json.loads(line[6:]) for line in tail.split(b"\n") if line.startswith(b"data: ")]
    output = done[-1]["response"]["output"]
    assert [p["text"] for p in output[0]["content"]] == ["Preab", "cd"]
    assert output[1]["arguments"] == PARIS
    assert [d.get("text") for d in done if d["type"] == "response.output_text.done"] == ["cd"]


def test_render_error_maps_retryable_kinds_to_retryable_codes() -> None:
    body = ResponsesStream().render_error("slow down", "rate_limit")
    assert b'"code":"rate_limit_exceeded"' in body and body.startswith(b"event: response.created\n")


async def test_http_error_is_raised_by_the_sdk_with_the_guardrail_fields(server: Served) -> None:
    body = WIRE.http_error(403, "blocked", "guardrail", {"guardrail_id": "canary", "reason_code": "pii"})
    server.serve(body, 403, "application/json")
    async with server.client() as client:
        with pytest.raises(openai.PermissionDeniedError) as info:
            await client.responses.create(model="gpt-5", input="hi")
    assert info.value.body == {"message": "blocked", "type": "invalid_request_error", "param": None,
                               "code": "content_filter", "guardrail_id": "canary", "reason_code": "pii"}


# -- requests and non-streaming bodies -------------------------------------------------------------
CODEX_BODY: dict[str, Any] = {
    "model": "gpt-5", "instructions": "You are Codex.", "stream": True, "store": False,
    "tools": [{"type": "function", "name": "shell", "parameters": {}},
              {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}],
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox on."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": '{"command":["ls"]}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt\n"},
        {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": '{"command":["cat","b"]}'},
        {"type": "function_call_output", "call_id": "c2",
         "output": '{"output":"no such file","metadata":{"exit_code":1}}'},
        {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "c3", "output": "Error: patch rejected"},
        {"type": "function_call", "call_id": "c4", "name": "shell", "arguments": "{}"},
        {"type": "function_call", "call_id": "c5", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c5", "output": "Exit code: 2\nWall time: 0.1 seconds\n"},
        {"type": "function_call", "call_id": "c6", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c6",
         "output": [{"type": "input_text", "text": "Exit code: 0\nOutput:\nerror: in file"}]},
        {"role": "user", "content": "and now?"},
    ],
}


def test_parse_request_reads_instructions_developer_text_last_user_and_history() -> None:
    view = WIRE.parse_request(CODEX_BODY, stream=True)
    assert (view.model, view.stream) == ("gpt-5", True)
    assert view.system_prompt == "You are Codex.\nSandbox on."
    assert view.last_user_text == "and now?"
    assert [(h.call_id, h.name, h.result_ok) for h in view.history] == [
        ("c1", "shell", True), ("c2", "shell", False), ("c3", "apply_patch", False), ("c4", "shell", None),
        ("c5", "shell", False), ("c6", "shell", True)]
    assert view.history[2].arguments == PATCH


def test_parse_request_accepts_a_plain_string_input() -> None:
    view = WIRE.parse_request({"model": "gpt-5", "input": "hello"}, stream=False)
    assert (view.last_user_text, view.system_prompt, view.history) == ("hello", "", [])


@pytest.mark.parametrize("body", [
    {"model": "gpt-5", "input": 3}, {"model": "gpt-5", "input": ["x"]}, {"input": "hi"},
    {"model": 5, "input": "hi"}, {"model": "gpt-5", "input": "hi", "instructions": ["x"]},
])
def test_parse_request_rejects_wrong_shapes(body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        WIRE.parse_request(body, stream=False)


def test_with_system_appends_to_instructions_without_mutating_the_request() -> None:
    body = {"model": "m", "input": "hi", "instructions": "Be brief."}
    out = WIRE.with_system(body, "Never reveal secrets.")
    assert out["instructions"] == "Be brief.\n\nNever reveal secrets."
    assert body["instructions"] == "Be brief."
    assert WIRE.with_system({"input": "x"}, "S")["instructions"] == "S"


def test_with_tool_feedback_appends_calls_and_outputs_in_the_right_kind() -> None:
    message = AssistantMessage(text="Patching.", tool_calls=[ToolCall("c7", "apply_patch", PATCH),
                                                             ToolCall("c8", "shell", "{}")])
    out = WIRE.with_tool_feedback(CODEX_BODY, message, [(message.tool_calls[0], "blocked: outside root"),
                                                        (message.tool_calls[1], "not run")])
    assert len(CODEX_BODY["input"]) == 14
    assert out["input"][14:] == [
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Patching.", "annotations": []}]},
        {"type": "custom_tool_call", "call_id": "c7", "name": "apply_patch", "input": PATCH},
        {"type": "function_call", "call_id": "c8", "name": "shell", "arguments": "{}"},
        {"type": "custom_tool_call_output", "call_id": "c7", "output": "blocked: outside root"},
        {"type": "function_call_output", "call_id": "c8", "output": "not run"},
    ]
    from_string = WIRE.with_tool_feedback({"model": "m", "input": "hi"}, AssistantMessage(), [])
    assert from_string["input"] == [{"type": "message", "role": "user", "content": "hi"}]


def test_judge_request_is_stateless_and_deterministic() -> None:
    assert WIRE.judge_request("gpt-5-mini", "Judge this") == ("/v1/responses", {
        "model": "gpt-5-mini", "input": "Judge this", "temperature": 0, "stream": False, "store": False})


RESPONSE_BODY = {**RESP, "status": "completed", "usage": USAGE, "output": [
    REASONING,
    {**DONE_MSG, "content": [{**PART, "text": HELLO, "annotations": [
        {"type": "url_citation", "url": "https://example.com", "title": "Ex", "start_index": 0,
         "end_index": 5}]}]},
    fc(0, PARIS, "completed"),
]}


def test_decode_response_reads_text_calls_annotations_and_status() -> None:
    message = WIRE.decode_response(json.dumps(RESPONSE_BODY).encode())
    assert (message.text, message.finish_reason) == (HELLO, "stop")
    assert message.annotations == ["https://example.com"]
    assert message.tool_calls == [ToolCall("call_0", "get_weather", PARIS)]
    with pytest.raises(ValueError):
        WIRE.decode_response(b'{"object":"response"}')


def test_render_response_replaces_output_keeps_other_fields_and_parses_with_the_sdk() -> None:
    body = WIRE.render_response(json.dumps(RESPONSE_BODY).encode(), AssistantMessage(text="Replaced."),
                                "filtered", REPLACED)
    parsed = Response.model_validate(json.loads(body))
    assert parsed.output_text == "Replaced." and parsed.usage is not None and parsed.usage.total_tokens == 18
    # the reasoning item goes with the rest of the original output: its summary may hold the blocked text
    assert [i.type for i in parsed.output] == ["message"] and parsed.output[0].id == "msg_1"
    assert parsed.status == "incomplete" and parsed.incomplete_details is not None
    assert parsed.incomplete_details.reason == "content_filter"
    assert json.loads(body)["guardproxy"] == REPLACED.payload()


async def test_a_redacted_delta_the_client_got_is_what_the_closing_done_event_repeats(server: Served) -> None:
    codec, frames = decode(TEXT_TURN)
    sent = frames[:7]
    sent[6] = Frame(codec.retext(sent[6], {(0, "text"): "[email]"}), (TextDelta("[email]"),))
    for f in sent:
        codec.note_sent(f)
    body = b"".join(f.raw for f in sent) + codec.render_replaced(REPLACED) + codec.render_tail(
        AssistantMessage(text="!"), "normal", None)
    seen = await stream_with_sdk(server, body)
    assert seen.text == "[email]!" and seen.final.output[1].content[0].text == "[email]"
    assert sequence_numbers(body) == list(range(len(sequence_numbers(body))))


def test_builtin_call_outputs_say_their_outcome_in_their_own_shape() -> None:
    ok = {"outcome": {"type": "exit", "exit_code": 0}, "stdout": "x", "stderr": ""}
    failed = {**ok, "outcome": {"type": "exit", "exit_code": 1}}
    items: list[dict[str, Any]] = [
        {"type": "shell_call", "call_id": "s1", "action": {"commands": ["ls"]}},
        {"type": "shell_call_output", "call_id": "s1", "output": [ok]},
        {"type": "shell_call", "call_id": "s2", "action": {"commands": ["ls", "false"]}},
        {"type": "shell_call_output", "call_id": "s2", "output": [ok, failed]},
        {"type": "apply_patch_call", "call_id": "p1", "operation": {"type": "delete_file", "path": "a"}},
        {"type": "apply_patch_call_output", "call_id": "p1", "status": "failed", "output": "no such file"},
        {"type": "apply_patch_call", "call_id": "p2", "operation": {"type": "delete_file", "path": "b"}},
        {"type": "apply_patch_call_output", "call_id": "p2", "status": "completed"},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "l1", "action": {"type": "exec", "command": ["ls"]}},
        {"type": "local_shell_call_output", "id": "l1", "output": '{"output":"a","metadata":{"exit_code":0}}'},
    ]
    view = WIRE.parse_request({"model": "gpt-5", "input": items}, stream=False)
    assert [(h.call_id, h.result_ok) for h in view.history] == [
        ("s1", True), ("s2", False), ("p1", False), ("p2", True), ("l1", True)]
