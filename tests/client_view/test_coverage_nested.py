"""What no decoder reads is still checked (issue 10): fields the API does not define inside the
objects the proxy decodes (a chat tool call, an Anthropic delta, a Responses event or item, a Gemini
content or function call), SSE field values beside the data (``event:``, ``id:``, comments), and
Responses ``.done`` events whose logprobs differ from what the deltas carried.

Same method as ``test_coverage_choices``: exact upstream bytes over a real socket, the proxy under
uvicorn, the official SDKs as clients; no byte of the blocked secret in the raw response, in any field
of anything the SDK yields, or in the SDK's error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.client_view.test_coverage_choices import (
    CHAT_BODY,
    HEAD,
    POLICY,
    REPLACEMENT,
    SECRET,
    TAIL,
    assert_clean,
    cand,
    chat_body,
    chat_sdk_stream,
    chat_stream,
    chunk,
    delta,
    gem,
    gemini_sdk_stream,
    genai_client,
    oai,
    raw_post,
    sse_frames,
)
from tests.client_view.test_coverage_fields import (
    ANTHROPIC_BODY,
    END,
    RESP,
    RESPONSES_BODY,
    START,
    Seq,
    anthropic_body,
    anthropic_sdk_stream,
    block,
    claude,
    clean_raw_then_sdk,
    ev,
    message_item,
    responses_body,
    responses_sdk_stream,
    responses_turn,
    text_block,
)
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

PADDING = "Padding text that carries the answer well past the hold-back window. "
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def sdk_view(read: Callable[[], Any]) -> str:
    """Everything the SDK shows: what it yields, or its error (the SDK may raise on odd bytes)."""
    try:
        seen = read()
    except Exception as exc:  # noqa: BLE001 - what the SDK raises is part of what the client sees
        return f"{exc!s}\n{getattr(exc, 'body', '')!r}"
    return seen[0] if isinstance(seen, tuple) else str(seen)


def assert_clean_raw_and_sdk(proxy: ProxyServer, upstream: FakeUpstream, frames: list[bytes], path: str,
                             body: dict[str, Any], sdk_stream: Callable[[ProxyServer], Any]) -> None:
    """The same upstream bytes twice: the raw response and what the SDK shows hold no byte of the secret."""
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, path, body)
    assert status == 200
    assert_clean(raw)
    upstream.queue(Reply(raw_frames=frames))
    assert_clean(sdk_view(lambda: sdk_stream(proxy)))


def counted(proxy: ProxyServer, prefix: str) -> float:
    """The value of the ``/metrics`` sample whose line starts with ``prefix`` (0 when absent)."""
    for line in httpx.get(proxy.url + "/metrics").text.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def coverage_trips(proxy: ProxyServer) -> float:
    return counted(proxy, 'guardproxy_stream_guardrail_trips_total{guardrail_id="guardproxy-coverage"')


def unreadable_answers(proxy: ProxyServer) -> float:
    return counted(proxy, 'guardproxy_fail_closed_total{reason="unreadable"}')


# -- unread fields inside known objects: chat ----------------------------------------------------------
def tool_delta(**entry: Any) -> dict[str, Any]:
    return delta(0, tool_calls=[{"index": 0, **entry}])


CHAT_NESTED = {
    "tool-call-field-split": [
        chunk([tool_delta(id="call_1", type="function", function={"name": "get", "arguments": ""}, note=HEAD)]),
        chunk([tool_delta(function={"arguments": "{}"}, note=TAIL)])],
    "function-field": [chunk([tool_delta(id="call_1", type="function",
                                         function={"name": "get", "arguments": "{}", "description": SECRET})])],
    "field-named-by-the-secret": [chunk([tool_delta(id="call_1", type="function",
                                                    function={"name": "get", "arguments": "{}"}, **{SECRET: 1})])],
    "content-part-field": [chunk([delta(0, content=[{"type": "text", "text": "Hello", "note": SECRET}])])],
    "logprob-bytes": [chunk([{**delta(0, content="ok"), "logprobs": {"content": [
        {"token": "ok", "logprob": 0.0, "bytes": list(SECRET.encode()), "top_logprobs": []}]}}])],
    "top-level-field-split": [
        f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'output_text': HEAD, 'choices': []})}\n\n"
        .encode(),
        f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'output_text': TAIL, 'choices': []})}\n\n"
        .encode()],
}


@pytest.mark.parametrize("frames", list(CHAT_NESTED.values()), ids=list(CHAT_NESTED))
def test_chat_stream_fields_nobody_decodes_are_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                       frames: list[bytes]) -> None:
    turn = chat_stream(chunk([delta(0, role="assistant", content="")]), *frames,
                       chunk([delta(0, content=PADDING)]), chunk([delta(0, finish="stop")]))
    upstream.queue(Reply(raw_frames=turn))
    status, raw = raw_post(proxy, "/v1/chat/completions", {**CHAT_BODY, "stream": True})
    assert status == 200
    assert_clean(raw)
    assert REPLACEMENT.encode() in raw  # (logprob bytes spell the secret only once decoded)
    upstream.queue(Reply(raw_frames=turn))
    assert_clean(sdk_view(lambda: chat_sdk_stream(proxy)))


@pytest.mark.parametrize("message", [
    {"content": None, "tool_calls": [{"id": "call_1", "type": "function", "note": SECRET,
                                      "function": {"name": "get", "arguments": "{}"}}]},
    {"content": [{"type": "text", "text": "fine", "note": SECRET}]},
    {"content": "fine", "annotations": [{"type": "url_citation", "note": SECRET, "url_citation": {
        "url": "https://x.example", "title": "t", "start_index": 0, "end_index": 1}}]},
], ids=["tool-call-field", "content-part-field", "annotation-field"])
def test_chat_unary_fields_nobody_decodes_are_checked_and_not_kept(proxy: ProxyServer, upstream: FakeUpstream,
                                                                   message: dict[str, Any]) -> None:
    upstream.queue(Reply(raw_body=chat_body(message)))
    r = oai(proxy).chat.completions.create(**CHAT_BODY)  # type: ignore[call-overload]
    assert_clean(r.model_dump_json())
    assert r.choices[0].finish_reason == "content_filter"


def test_chat_clean_stream_with_unknown_harmless_fields_and_comments_passes_byte_for_byte(
        proxy: ProxyServer, upstream: FakeUpstream) -> None:
    turn = chat_stream(b": OPENROUTER PROCESSING\n\n", chunk([delta(0, role="assistant", content="")]),
                       chunk([tool_delta(id="call_1", type="function", function={"name": "get", "arguments": ""},
                                         provider_note="cached")]),
                       b"id: 42\n" + chunk([tool_delta(function={"arguments": "{}"}, provider_note="cached")]),
                       chunk([delta(0, finish="tool_calls")]))
    upstream.queue(Reply(raw_frames=turn))
    status, raw = raw_post(proxy, "/v1/chat/completions", {**CHAT_BODY, "stream": True})
    assert status == 200 and raw == b"".join(turn)


# -- Anthropic -------------------------------------------------------------------------------------------
ANTHROPIC_NESTED = {
    "text-delta-field-split": block(0, {"type": "text", "text": ""},
                                    {"type": "text_delta", "text": "Hello ", "note": HEAD},
                                    {"type": "text_delta", "text": "world. ", "note": TAIL}),
    "text-block-field": block(0, {"type": "text", "text": "", "note": SECRET}, {"type": "text_delta", "text": "Hi"}),
    "event-field": [ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
                    ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Hi"},
                                               "note": SECRET}),
                    ev("content_block_stop", {"index": 0})],
    "tool-use-field": block(0, {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}, "note": SECRET},
                            {"type": "input_json_delta", "partial_json": "{}"}),
}


@pytest.mark.parametrize("blocks", list(ANTHROPIC_NESTED.values()), ids=list(ANTHROPIC_NESTED))
def test_anthropic_stream_fields_nobody_decodes_are_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                            blocks: list[bytes]) -> None:
    frames = [START, *blocks, *text_block(1, PADDING), *END]
    assert_clean_raw_and_sdk(proxy, upstream, frames, "/v1/messages", {**ANTHROPIC_BODY, "stream": True}, anthropic_sdk_stream)


def test_anthropic_refusal_explanation_is_checked(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    details = {"type": "refusal", "category": None, "explanation": f"because {SECRET}"}
    frames = [START, *text_block(0, PADDING),
              ev("message_delta", {"delta": {"stop_reason": "refusal", "stop_sequence": None,
                                             "stop_details": details}, "usage": {"output_tokens": 5}}),
              ev("message_stop", {})]
    upstream.queue(Reply(raw_frames=frames))
    _, raw = raw_post(proxy, "/v1/messages", {**ANTHROPIC_BODY, "stream": True})
    assert_clean(raw)


@pytest.mark.parametrize("content", [
    [{"type": "text", "text": "fine", "note": SECRET}],
    [{"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}, "description": SECRET}],
], ids=["text-block-field", "tool-use-field"])
def test_anthropic_unary_fields_nobody_decodes_are_checked_and_not_kept(
        proxy: ProxyServer, upstream: FakeUpstream, content: list[dict[str, Any]]) -> None:
    upstream.queue(Reply(raw_body=anthropic_body(*content)))
    message = claude(proxy).messages.create(**ANTHROPIC_BODY)  # type: ignore[call-overload]
    assert_clean(message.model_dump_json(warnings=False))
    assert message.stop_reason == "refusal"


# -- Responses -------------------------------------------------------------------------------------------
def patched(frames: list[bytes], event_type: str, change: Callable[[dict[str, Any]], None]) -> list[bytes]:
    """``frames`` with every event of ``event_type`` changed in place by ``change``."""
    out = []
    for frame in frames:
        name, data = frame.decode().split("\n")[:2]
        event = json.loads(data.removeprefix("data: "))
        if event["type"] == event_type:
            change(event)
            frame = f"{name}\ndata: {json.dumps(event)}\n\n".encode()
        out.append(frame)
    return out


def _split_note(event: dict[str, Any]) -> None:
    event["note"] = {"Hello ": HEAD, "world. ": TAIL}.get(event["delta"], " and so on.")


RESPONSES_NESTED: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "text-delta-field-split": ("response.output_text.delta", _split_note),
    "item-field": ("response.output_item.done", lambda e: e["item"].update(note=SECRET)),
    "part-field": ("response.content_part.done", lambda e: e["part"].update(note=SECRET)),
    "terminal-event-field": ("response.completed", lambda e: e.update(note=SECRET)),
    "output-item-in-the-terminal-response": ("response.completed",
                                             lambda e: e["response"]["output"][0].update(note=SECRET)),
    "event-type-that-is-no-name": ("response.in_progress", lambda e: e.update(type=SECRET)),
}


@pytest.mark.parametrize(("event_type", "change"), list(RESPONSES_NESTED.values()), ids=list(RESPONSES_NESTED))
def test_responses_stream_fields_nobody_decodes_are_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                            event_type: str,
                                                            change: Callable[[dict[str, Any]], None]) -> None:
    turn = responses_turn(["Hello ", "world. ", PADDING])
    s = Seq()
    turn.insert(1, s("response.in_progress", response=RESP))
    frames = patched(turn, event_type, change)
    assert_clean_raw_and_sdk(proxy, upstream, frames, "/v1/responses", {**RESPONSES_BODY, "stream": True}, responses_sdk_stream)


@pytest.mark.parametrize("item", [
    {**message_item("fine"), "note": SECRET},
    {**message_item("fine"), "content": [{"type": "output_text", "text": "fine", "annotations": [], "note": SECRET}]},
    {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "c1", "name": "get", "arguments": "{}",
     "description": SECRET},
], ids=["item-field", "part-field", "function-call-field"])
def test_responses_unary_fields_nobody_decodes_are_checked_and_not_kept(proxy: ProxyServer, upstream: FakeUpstream,
                                                                        item: dict[str, Any]) -> None:
    upstream.queue(Reply(raw_body=responses_body(item)))
    r = oai(proxy).responses.create(**RESPONSES_BODY)  # type: ignore[call-overload]
    assert_clean(r.model_dump_json(warnings=False))
    assert r.status == "incomplete"


# -- Gemini ----------------------------------------------------------------------------------------------
GEMINI_NESTED = {
    "content-field-split": [gem([{**cand(0, {"text": "Hello "}), "content": {
                                "role": "model", "parts": [{"text": "Hello "}], "note": HEAD}}]),
                            gem([{**cand(0, {"text": "world. "}), "content": {
                                "role": "model", "parts": [{"text": "world. "}], "note": TAIL}}])],
    "function-call-field": [gem([cand(0, {"functionCall": {"name": "get", "args": {}, "description": SECRET}})])],
    "logprob-field": [gem([cand(0, {"text": "ok"}, logprobsResult={
        "chosenCandidates": [{"token": "ok", "logProbability": 0.0, "note": SECRET}]})])],
}


@pytest.mark.parametrize("chunks", list(GEMINI_NESTED.values()), ids=list(GEMINI_NESTED))
def test_gemini_stream_fields_nobody_decodes_are_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                         chunks: list[dict[str, Any]]) -> None:
    frames = sse_frames([*chunks, gem([cand(0, {"text": PADDING}, finish="STOP")])])
    assert_clean_raw_and_sdk(proxy, upstream, frames, "/v1beta/models/m:streamGenerateContent?alt=sse", GEMINI_BODY, gemini_sdk_stream)


def test_gemini_unary_content_field_is_checked_and_not_kept(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    body = gem([{**cand(0, {"text": "fine"}, finish="STOP"), "content": {
        "role": "model", "parts": [{"text": "fine"}], "note": SECRET}}])
    upstream.queue(Reply(raw_body=json.dumps(body).encode()))
    status, raw = raw_post(proxy, "/v1beta/models/m:generateContent", GEMINI_BODY)
    assert status == 200
    assert_clean(raw)
    upstream.queue(Reply(raw_body=json.dumps(body).encode()))
    client = genai_client(proxy)  # held: the SDK closes its connection pool when the client goes
    r = client.models.generate_content(model="m", contents="hi")
    assert_clean(r.model_dump_json(warnings=False))


def test_gemini_function_call_streamed_in_pieces_fails_closed_and_is_counted(proxy: ProxyServer,
                                                                            upstream: FakeUpstream) -> None:
    """Gemini 3 can stream a call's arguments (``partialArgs``): the tool rules need the whole call, and
    the client joins pieces the proxy does not."""
    before = coverage_trips(proxy)
    call = {"name": "run", "partialArgs": [{"jsonPath": "$.cmd", "stringValue": "curl x | sh"}], "willContinue": True}
    frames = sse_frames([gem([cand(0, {"functionCall": call})]),
                         gem([cand(0, {"functionCall": {"name": "run", "args": {}}}, finish="STOP")])])
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, "/v1beta/models/m:streamGenerateContent?alt=sse", GEMINI_BODY)
    assert status == 502 and b"curl x" not in raw
    assert coverage_trips(proxy) == before + 1


# -- SSE field values beside the data -------------------------------------------------------------------
def _chat_turn() -> list[bytes]:
    return chat_stream(chunk([delta(0, role="assistant", content="")]), chunk([delta(0, content="Hello. ")]),
                       chunk([delta(0, content=PADDING)]), chunk([delta(0, finish="stop")]))


def _anthropic_turn() -> list[bytes]:
    return [START, *text_block(0, "Hello. ", PADDING), *END]


def _gemini_turn() -> list[bytes]:
    return sse_frames([gem([cand(0, {"text": "Hello. "})]), gem([cand(0, {"text": PADDING}, finish="STOP")])])


TURNS: dict[str, tuple[Callable[[], list[bytes]], str, dict[str, Any]]] = {
    "chat": (_chat_turn, "/v1/chat/completions", {**CHAT_BODY, "stream": True}),
    "anthropic": (_anthropic_turn, "/v1/messages", {**ANTHROPIC_BODY, "stream": True}),
    "responses": (lambda: responses_turn(["Hello. ", PADDING]), "/v1/responses", {**RESPONSES_BODY, "stream": True}),
    "gemini": (_gemini_turn, "/v1beta/models/m:streamGenerateContent?alt=sse", GEMINI_BODY),
}


def _renamed(frame: bytes) -> bytes:
    """The frame under the event name ``SECRET`` (its data keeps its own type)."""
    lines = frame.split(b"\n")
    if lines[0].startswith(b"event:"):
        lines = lines[1:]
    return b"event: " + SECRET.encode() + b"\n" + b"\n".join(lines)


BENDS: dict[str, Callable[[bytes], bytes]] = {
    "event-name": _renamed,
    "id": lambda f: b"id: " + SECRET.encode() + b"\n" + f,
    "comment": lambda f: b": " + SECRET.encode() + b"\n" + f,
    "comment-alone": lambda f: b": " + HEAD.encode() + TAIL.encode() + b"\n\n" + f,
    "retry-that-is-no-number": lambda f: b"retry: " + SECRET.encode() + b"\n" + f,
}


@pytest.mark.parametrize("api", list(TURNS))
@pytest.mark.parametrize("bend", list(BENDS))
def test_sse_field_values_beside_the_data_are_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                      api: str, bend: str) -> None:
    make, path, body = TURNS[api]
    frames = make()
    frames[1] = BENDS[bend](frames[1])
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, path, body)
    assert_clean(raw)
    assert status in (200, 502)


def test_sse_ids_and_comments_of_a_clean_stream_pass_byte_for_byte(proxy: ProxyServer,
                                                                   upstream: FakeUpstream) -> None:
    frames = _anthropic_turn()
    frames[2] = b": keep-alive\nid: 7\nretry: 3000\n" + frames[2]
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, "/v1/messages", {**ANTHROPIC_BODY, "stream": True})
    assert status == 200 and raw == b"".join(frames)


# -- Responses: .done events whose logprobs differ from the deltas' -------------------------------------
def _lp(*tokens: str, top: str | None = None) -> list[dict[str, Any]]:
    alternatives = [{"token": top, "logprob": -1.0, "bytes": []}] if top else []
    return [{"token": t, "logprob": 0.0, "bytes": [], "top_logprobs": alternatives} for t in tokens]


def _set_logprobs(where: str, logprobs: list[dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
    def change(event: dict[str, Any]) -> None:
        if where == "event":
            event["logprobs"] = logprobs
        elif where == "part":
            event["part"]["logprobs"] = logprobs
        else:
            event["item"]["content"][0]["logprobs"] = logprobs
    return change


DONE_LOGPROBS = {
    "output_text.done-token": ("response.output_text.done", "event", _lp("Hello. ", SECRET)),
    "output_text.done-alternative": ("response.output_text.done", "event", _lp("Hello. ", top=SECRET)),
    "content_part.done-token": ("response.content_part.done", "part", _lp(SECRET)),
    "output_item.done-alternative": ("response.output_item.done", "item", _lp("Hello. ", top=SECRET)),
}


@pytest.mark.parametrize(("event_type", "where", "logprobs"), list(DONE_LOGPROBS.values()), ids=list(DONE_LOGPROBS))
def test_responses_done_logprobs_that_differ_from_the_deltas_are_checked(
        proxy: ProxyServer, upstream: FakeUpstream, event_type: str, where: str,
        logprobs: list[dict[str, Any]]) -> None:
    turn = responses_turn(["Hello. ", PADDING], logprobs=True)
    frames = patched(turn, event_type, _set_logprobs(where, logprobs))
    final = clean_raw_then_sdk(proxy, upstream, frames, "/v1/responses", {**RESPONSES_BODY, "stream": True},
                               responses_sdk_stream)
    assert final is not None and final.status == "incomplete"


def test_responses_done_logprobs_equal_to_the_deltas_pass_byte_for_byte(proxy: ProxyServer,
                                                                        upstream: FakeUpstream) -> None:
    turn = responses_turn(["Hello. ", PADDING], logprobs=True)
    upstream.queue(Reply(raw_frames=turn))
    status, raw = raw_post(proxy, "/v1/responses", {**RESPONSES_BODY, "stream": True})
    assert status == 200 and raw == b"".join(turn)


def test_anthropic_clean_stream_with_unknown_harmless_fields_passes_byte_for_byte(
        proxy: ProxyServer, upstream: FakeUpstream) -> None:
    frames = [START, *block(0, {"type": "text", "text": "", "note": "cached"},
                            {"type": "text_delta", "text": "Hello ", "note": "fine"}, {"type": "text_delta",
                                                                                      "text": PADDING}), *END]
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, "/v1/messages", {**ANTHROPIC_BODY, "stream": True})
    assert status == 200 and raw == b"".join(frames)
    upstream.queue(Reply(raw_frames=frames))
    with claude(proxy).messages.stream(**ANTHROPIC_BODY) as stream:  # type: ignore[arg-type]
        assert stream.get_final_message().content[0].text == "Hello " + PADDING  # type: ignore[union-attr]



# -- README coverage rows without a test of their own elsewhere -----------------------------------------
def _responses_lane_turn(delta_type: str, **where: Any) -> list[bytes]:
    s = Seq()
    pieces = ["The key is ", HEAD, TAIL, " as asked. ", PADDING]
    return [s("response.created", response=RESP),
            *[s(delta_type, item_id="it_1", output_index=0, **where, delta=p) for p in pieces],
            s("response.completed", response={**RESP, "status": "completed"})]


@pytest.mark.parametrize(("delta_type", "where"), [
    ("response.reasoning_text.delta", {"content_index": 0}),
    ("response.audio.transcript.delta", {}),
    ("response.code_interpreter_call_code.delta", {}),
    ("response.mcp_call_arguments.delta", {}),
], ids=["reasoning-text", "audio-transcript", "code-interpreter-code", "mcp-arguments"])
def test_responses_text_deltas_beside_the_answer_are_checked_across_deltas(
        proxy: ProxyServer, upstream: FakeUpstream, delta_type: str, where: dict[str, Any]) -> None:
    frames = _responses_lane_turn(delta_type, **where)
    assert_clean_raw_and_sdk(proxy, upstream, frames, "/v1/responses", {**RESPONSES_BODY, "stream": True}, responses_sdk_stream)


def test_gemini_grounding_metadata_is_checked(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    grounding = {"webSearchQueries": [f"find {SECRET}"], "searchEntryPoint": {"renderedContent": "<div/>"}}
    frames = sse_frames([gem([cand(0, {"text": "Hello. "})]),
                         gem([cand(0, {"text": PADDING}, finish="STOP", groundingMetadata=grounding)])])
    assert_clean_raw_and_sdk(proxy, upstream, frames, "/v1beta/models/m:streamGenerateContent?alt=sse", GEMINI_BODY, gemini_sdk_stream)


@pytest.mark.parametrize("stream", [True, False])
def test_gemini_part_without_a_decoder_fails_closed(proxy: ProxyServer, upstream: FakeUpstream, stream: bool) -> None:
    chunk_ = gem([cand(0, {"inlineData": {"mimeType": "text/plain", "data": "QUtJQQ=="}}, finish="STOP")])
    before = coverage_trips(proxy)
    if stream:
        upstream.queue(Reply(raw_frames=sse_frames([chunk_])))
        status, raw = raw_post(proxy, "/v1beta/models/m:streamGenerateContent?alt=sse", GEMINI_BODY)
    else:
        upstream.queue(Reply(raw_body=json.dumps(chunk_).encode()))
        status, raw = raw_post(proxy, "/v1beta/models/m:generateContent", GEMINI_BODY)
    assert status == 502 and b"QUtJQQ" not in raw
    assert b"error" in raw
    assert coverage_trips(proxy) == before + 1


# -- a key written twice: parsers keep the last value, raw clients show both ------------------------------
def _twice(frame: bytes, field: bytes) -> bytes:
    """``frame`` with ``"<field>": "<SECRET>",`` written before its own ``field``."""
    return frame.replace(b'"' + field + b'":', b'"' + field + b'": "' + SECRET.encode() + b'", "' + field + b'":', 1)


DUPLICATES: dict[str, tuple[Callable[[], list[bytes]], bytes, int, str, dict[str, Any]]] = {
    "chat": (_chat_turn, b"content", 1, "/v1/chat/completions", {**CHAT_BODY, "stream": True}),
    "anthropic": (_anthropic_turn, b"text", 2, "/v1/messages", {**ANTHROPIC_BODY, "stream": True}),
    "responses": (lambda: responses_turn(["Hello. ", PADDING]), b"delta", 3, "/v1/responses",
                  {**RESPONSES_BODY, "stream": True}),
    "gemini": (_gemini_turn, b"text", 0, "/v1beta/models/m:streamGenerateContent?alt=sse", GEMINI_BODY),
}


@pytest.mark.parametrize("api", list(DUPLICATES))
def test_a_key_written_twice_fails_closed(proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    make, field, at, path, body = DUPLICATES[api]
    frames = make()
    frames[at] = _twice(frames[at], field)
    assert SECRET.encode() in frames[at]
    before = unreadable_answers(proxy)
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, path, body)
    assert_clean(raw)
    assert status == 502 or b"error" in raw
    assert unreadable_answers(proxy) == before + 1


UNARY_REPLIES = {
    "chat": ("/v1/chat/completions", CHAT_BODY, chat_body({"content": "fine"})),
    "anthropic": ("/v1/messages", ANTHROPIC_BODY, anthropic_body({"type": "text", "text": "fine"})),
    "gemini": ("/v1beta/models/m:generateContent", GEMINI_BODY,
               json.dumps(gem([cand(0, {"text": "fine"}, finish="STOP")])).encode()),
    "responses": ("/v1/responses", RESPONSES_BODY, responses_body(message_item("fine"))),
}
PADDINGS: dict[str, Callable[[bytes], bytes]] = {
    "plain": lambda reply: reply,
    # The lost pair's four quotes made up by ``\u0022`` escapes in the value the parser keeps (they come
    # back as ``\"`` when re-encoded): a count of quotes balanced, and the first value reached curl users.
    "escaped quotes balance the count": lambda reply: reply.replace(b'"fine"', b'"fine' + b"\\u0022" * 4 + b'"', 1),
}


@pytest.mark.parametrize(("api", "padding"), [*((api, "plain") for api in UNARY_REPLIES),
                                              *((api, "escaped quotes balance the count")
                                                for api in ("chat", "anthropic", "gemini"))])
def test_a_unary_body_with_a_key_written_twice_is_a_502(proxy: ProxyServer, upstream: FakeUpstream, api: str,
                                                        padding: str) -> None:
    path, body, reply = UNARY_REPLIES[api]
    field = b"content" if b'"content": "fine"' in reply else b"text"
    before = unreadable_answers(proxy)
    upstream.queue(Reply(raw_body=_twice(PADDINGS[padding](reply), field)))
    status, raw = raw_post(proxy, path, body)
    assert status == 502
    assert_clean(raw)
    assert unreadable_answers(proxy) == before + 1


# -- a tool call's name is output too (agents show it and keep it in the conversation) -------------------
def _named_call_frames(api: str) -> list[bytes]:
    if api == "chat":
        return chat_stream(chunk([delta(0, role="assistant", content="")]),
                           chunk([tool_delta(id="call_1", type="function", function={"name": SECRET, "arguments": ""})]),
                           chunk([tool_delta(function={"arguments": "{}"})]), chunk([delta(0, finish="tool_calls")]))
    if api == "anthropic":
        return [START, *block(0, {"type": "tool_use", "id": "toolu_1", "name": SECRET, "input": {}},
                              {"type": "input_json_delta", "partial_json": "{}"}), *END]
    if api == "responses":
        s = Seq()
        item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "c1", "name": SECRET,
                "arguments": ""}
        return [s("response.created", response=RESP), s("response.output_item.added", output_index=0, item=item),
                s("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta="{}"),
                s("response.function_call_arguments.done", item_id="fc_1", output_index=0, arguments="{}"),
                s("response.output_item.done", output_index=0, item={**item, "status": "completed", "arguments": "{}"}),
                s("response.completed", response={**RESP, "status": "completed"})]
    return sse_frames([gem([cand(0, {"functionCall": {"name": SECRET, "args": {}}}, finish="STOP")])])


@pytest.mark.parametrize("api", list(TURNS))
def test_a_tool_calls_name_is_checked(proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    _, path, body = TURNS[api]
    frames = _named_call_frames(api)
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, path, body)
    assert status == 200
    assert_clean(raw)
    assert REPLACEMENT.encode() in raw
