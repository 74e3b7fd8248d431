"""Fail-closed decoding (issues 10.5 and 10.7): what the proxy cannot read is never relayed because
its decoder did not understand it. An upstream hides a credential where some client would still find
it: a ``data:`` line that is not JSON, a truncated chunk, a line that is no SSE field (the SDKs skip
it; curl, agents with their own parsers and google-genai read it), an Anthropic event the SDKs skip
by name but other clients read by its ``data.type``, a Gemini bare JSON line beside ``data:`` lines,
a unary body that is not the API's JSON. The answer must end with the API's well-formed error and
hold no byte of the credential in the raw response (httpx), in what the official SDK yields, or in
its error. Legitimate SSE lines that carry nothing (comments, ``id:``, ``retry:``, ``event:``) still
pass byte for byte."""

from __future__ import annotations

import json

import pytest

from tests.adversarial import SECRET, STREAM_APIS, Seen, client_sees, frames_for
from tests.apis import raw_call, sdk_call
from tests.fakes.faulty import assert_http_error, assert_stream_error
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import (
    FakeUpstream,
    Reply,
    anthropic_body,
    gemini_body,
    gemini_chunks,
    responses_body,
)

CLEAN = Reply(text="Nothing to see here.")
EVENT_NAME = {"responses": "response.output_text.delta", "anthropic": "content_block_delta"}


def _chunk_with_secret(api: str) -> dict[str, object]:
    """A chunk of ``api`` whose text is the credential (what a lenient client would render)."""
    text = f"key {SECRET}. "
    if api == "chat":
        return {"id": "c", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    if api == "responses":
        return {"type": "response.output_text.delta", "item_id": "msg_fake1", "output_index": 0,
                "content_index": 0, "delta": text, "sequence_number": 5}
    if api == "anthropic":
        return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}]}


def _bad_frame(api: str, how: str) -> bytes:
    chunk = json.dumps(_chunk_with_secret(api))
    head = f"event: {EVENT_NAME[api]}\n" if api in EVENT_NAME else ""
    return {
        "not-json": f"{head}data: {chunk[:-1]} trailing words\n\n",
        "truncated": f"{head}data: {chunk[:-20]}\n\n",
        "not-an-object": f"{head}data: [{chunk}]\n\n",
        "bare-json-line": f"{chunk}\n\n",
        "bare-text-line": f"the key is {SECRET}\n\n",
        "capitalised-field": f"{head}Data: {chunk}\n\n",
        "bare-line-after-data": f"{head}data: {{}}\n{chunk}\n\n",
        "bare-line-before-data": f"{chunk}\n{head}data: {{}}\n\n",
        "nameless": f"data: {chunk}\n\n",
        "text-after-done": f"data: [DONE] key {SECRET}\n\n",
        "ping-named": f"event: ping\ndata: {chunk}\n\n",
    }[how].encode()


ANY_API = ("not-json", "truncated", "not-an-object", "bare-text-line", "capitalised-field",
           "bare-line-after-data", "bare-line-before-data")
CASES = [(api, how) for api in STREAM_APIS for how in ANY_API]
CASES += [(api, "bare-json-line") for api in STREAM_APIS if api != "gemini"]
CASES += [("anthropic", "nameless"), ("anthropic", "ping-named"), ("chat", "text-after-done")]


@pytest.mark.parametrize(("api", "how"), CASES, ids=[f"{a}-{h}" for a, h in CASES])
def test_a_frame_some_client_reads_but_the_proxy_cannot_ends_with_the_api_error(
        secrets_guard: ProxyServer, upstream: FakeUpstream, api: str, how: str) -> None:
    frames = frames_for(api, CLEAN)
    frames = [*frames[:3], _bad_frame(api, how), *frames[3:]]
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(Reply(raw_frames=frames)))
    assert SECRET not in seen.everything()
    assert "4K2MZT9BWP3N" not in seen.everything()
    _assert_api_error(api, seen)


def _assert_api_error(api: str, seen: Seen) -> None:
    """The answer ends with the API's own error: a 502 before anything was sent, else the in-stream
    error; the SDK raises it (it does not end quietly)."""
    if seen.raw.status == 200:
        assert_stream_error(api, seen.raw.raw)
    else:
        assert_http_error(api, 502, seen.raw.raw)
    assert seen.sdk_error is not None


def test_a_bare_json_chunk_alone_in_a_gemini_frame_is_read_as_google_genai_reads_it(
        secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    """google-genai takes a frame of bare JSON for a chunk (the API writes its mid-stream error so):
    the proxy reads it the same way, so its text is checked like any other."""
    frames = frames_for("gemini", CLEAN)
    frames = [*frames[:1], _bad_frame("gemini", "bare-json-line"), *frames[1:]]
    seen = client_sees(secrets_guard.url, "gemini", lambda: upstream.queue(Reply(raw_frames=frames)))
    assert SECRET not in seen.everything()
    assert seen.sdk is not None and "[withheld: credential]" in seen.sdk.text, seen.sdk_error


KEEPALIVES = {
    "comment": b": keepalive\n\n",
    "id-and-retry": b"id: 17\nretry: 3000\n\n",
    "event-without-data": b"event: keepalive\n\n",
}


@pytest.mark.parametrize("line", list(KEEPALIVES))
@pytest.mark.parametrize("api", STREAM_APIS)
def test_sse_lines_that_carry_nothing_are_relayed_byte_for_byte(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                                api: str, line: str) -> None:
    frames = frames_for(api, CLEAN)
    frames = [*frames[:2], KEEPALIVES[line], *frames[2:]]
    upstream.queue(Reply(raw_frames=frames))
    raw = raw_call(secrets_guard.url, api, stream=True)
    assert raw.status == 200 and raw.raw == b"".join(frames)
    # The SDKs' own limits: google-genai reads every line that is not ``data: `` as JSON, and openai
    # dispatches a frame with an id or a name but no data as an event whose empty data it parses.
    if api == "anthropic" or (line == "comment" and api != "gemini"):
        upstream.queue(Reply(raw_frames=frames))
        assert sdk_call(secrets_guard.url, api, stream=True).text == CLEAN.text


# ------------------------------------------------------------------ non-streaming
UNARY_BODIES = {
    "not-json": f"Sure, the key is {SECRET}.".encode(),
    "truncated": json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content":
                                                                 f"key {SECRET}. and more"}}]}).encode()[:-30],
    "sse-to-unary": f'data: {{"choices":[{{"index":0,"delta":{{"content":"key {SECRET}. "}}}}]}}\n\n'.encode(),
}


@pytest.mark.parametrize("how", list(UNARY_BODIES))
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_unary_body_the_proxy_cannot_read_is_a_502(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                     api: str, how: str) -> None:
    """A 2xx body that is not the API's JSON (text, truncated JSON, an event stream) is never relayed
    unread: the raw client gets the API's 502, the SDK raises it."""
    ctype = "text/event-stream" if how == "sse-to-unary" else "application/json"
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(Reply(raw_body=UNARY_BODIES[how],
                                                                            content_type=ctype)), stream=False)
    assert SECRET not in seen.everything()
    assert seen.raw.status == 502 and seen.sdk_error is not None
    assert_http_error(api, 502, seen.raw.raw)


def _error_with_content(api: str) -> bytes:
    """The API's in-stream error, carrying model content beside it (the SDKs raise on the error and
    show nothing; a client that reads the rest of the object would show the content)."""
    chunk = _chunk_with_secret(api)
    if api == "chat":
        return f"data: {json.dumps(chunk | {'error': {'message': 'overloaded', 'type': 'server_error'}})}\n\n".encode()
    if api == "responses":
        ev = {"type": "error", "code": "server_error", "message": "overloaded", "sequence_number": 5,
              "delta": f"key {SECRET}."}
        return f"event: error\ndata: {json.dumps(ev)}\n\n".encode()
    if api == "anthropic":
        ev = {"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}, "delta": chunk["delta"]}
        return f"event: error\ndata: {json.dumps(ev)}\n\n".encode()
    return json.dumps(chunk | {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}).encode() + b"\n\n"


@pytest.mark.parametrize("api", STREAM_APIS)
def test_an_error_event_carrying_content_does_not_relay_it(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                           api: str) -> None:
    frames = frames_for(api, CLEAN)
    frames = [*frames[:3], _error_with_content(api)]
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(Reply(raw_frames=frames)))
    assert SECRET not in seen.everything()
    _assert_api_error(api, seen)


# ------------------------------------------------------------------ Gemini's JSON-array stream
def _array_with(junk: bytes, where: str) -> list[bytes]:
    """A Gemini JSON-array stream (no ``alt=sse``) with ``junk`` between two elements or after ``]``."""
    first, *rest = [json.dumps(c).encode() for c in gemini_chunks(CLEAN, "m")]
    if where == "between":
        return [b"[" + first, b",\r\n" + junk + b"\r\n" + b",\r\n".join(rest) + b"]"]
    return [b"[" + first, b",\r\n" + b",\r\n".join(rest) + b"]", junk]


ARRAY_JUNK = {
    "text-between": (f"the key is {SECRET}".encode(), "between"),
    "string-element": (f'"the key is {SECRET}",'.encode(), "between"),
    "array-element": (f'["the key is {SECRET}"],'.encode(), "between"),
    "text-after": (f"\r\nthe key is {SECRET}".encode(), "after"),
}


@pytest.mark.parametrize("how", list(ARRAY_JUNK))
def test_bytes_outside_the_gemini_array_elements_fail_closed(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                             how: str) -> None:
    """A client that reads the array with a JSON parser (or prints it) would see what lies between
    or after the elements; the proxy only reads the elements: anything else fails closed."""
    upstream.queue(Reply(raw_frames=_array_with(*ARRAY_JUNK[how])))
    raw = raw_call(secrets_guard.url, "gemini_array", stream=True)
    assert SECRET not in raw.raw.decode("utf-8", "replace")
    if raw.status == 200:
        assert_stream_error("gemini_array", raw.raw)
    else:
        assert_http_error("gemini", 502, raw.raw)


def test_a_clean_gemini_array_with_any_whitespace_passes_byte_for_byte(secrets_guard: ProxyServer,
                                                                       upstream: FakeUpstream) -> None:
    frames = [b"[\n  " + f.removeprefix(b"[") for f in _array_with(b" \t", "between")]
    frames[-1] = frames[-1].removesuffix(b"]") + b"\n]\n"
    upstream.queue(Reply(raw_frames=frames))
    raw = raw_call(secrets_guard.url, "gemini_array", stream=True)
    assert raw.status == 200 and raw.raw == b"".join(frames)


# ------------------------------------------------------------------ chat fields outside the message
def _chat_extra(where: str, stream: bool) -> dict[str, object]:
    """A chat chunk (or body) that carries the credential outside the message: in a choice field
    (``text``, as legacy completions put it) or a top-level field (``citations``, as Perplexity does)."""
    text = f"key {SECRET}."
    msg = {"delta" if stream else "message": {"role": "assistant", "content": "Nothing to see here."}}
    choice: dict[str, object] = {"index": 0, **msg, "finish_reason": None if stream else "stop"}
    body: dict[str, object] = {"id": "c", "object": "chat.completion.chunk" if stream else "chat.completion",
                               "created": 1, "model": "m", "choices": [choice]}
    if where == "choice":
        choice["text"] = text
    else:
        body["citations"] = [f"https://example.com/{text}"]
    return body


@pytest.mark.parametrize("where", ["choice", "top-level"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
def test_chat_text_outside_the_message_is_checked(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                  where: str, stream: bool) -> None:
    body = _chat_extra(where, stream)
    if stream:
        frames = frames_for("chat", CLEAN)
        reply = Reply(raw_frames=[frames[0], f"data: {json.dumps(body)}\n\n".encode(), *frames[1:]])
    else:
        reply = Reply(raw_body=json.dumps(body).encode(), content_type="application/json")
    seen = client_sees(secrets_guard.url, "chat", lambda: upstream.queue(reply), stream=stream)
    assert SECRET not in seen.everything()
    assert seen.sdk is not None and "[withheld: credential]" in seen.sdk.text, seen.sdk_error


# ------------------------------------------------------------------ fields the API does not define
EXTRA_FIELD = {"responses": "output_text", "anthropic": "completion", "gemini": "text"}
"""A top-level field some client reads (the Responses SDKs' ``output_text``, the legacy Anthropic
API's ``completion``, google-genai's ``text``), sent by the upstream in the object itself."""


def _with_extra_field(api: str, stream: bool) -> Reply:
    extra = {EXTRA_FIELD[api]: f"key {SECRET}."}
    if not stream:
        body = {"responses": responses_body, "anthropic": anthropic_body, "gemini": gemini_body}[api](CLEAN, "m")
        return Reply(raw_body=json.dumps(body | extra).encode(), content_type="application/json")
    frames = frames_for(api, CLEAN)
    at = 1 if api == "gemini" else 0  # response.created / message_start, or a Gemini chunk
    head, _, data = frames[at].partition(b"data: ")
    obj = json.loads(data)
    if api == "gemini":
        obj |= extra
    else:
        obj["response" if api == "responses" else "message"] |= extra
    frames[at] = head + b"data: " + json.dumps(obj).encode() + b"\n\n"
    return Reply(raw_frames=frames)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
@pytest.mark.parametrize("api", list(EXTRA_FIELD))
def test_text_in_a_field_the_api_does_not_define_is_checked(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                            api: str, stream: bool) -> None:
    reply = _with_extra_field(api, stream)
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(reply), stream=stream)
    assert SECRET not in seen.everything()
    assert seen.sdk is not None and "[withheld: credential]" in seen.sdk.text, seen.sdk_error


# ------------------------------------------------------------------ Responses logprobs
def _responses_with_logprobs(stream: bool, where: str) -> Reply:
    """Logprobs whose tokens (or alternatives) spell the credential, beside a harmless text."""
    chosen = [{"token": f"key {SECRET}", "logprob": -0.1, "top_logprobs": []}]
    alternatives = [{"token": "Nothing", "logprob": -0.1, "top_logprobs": [{"token": SECRET, "logprob": -2.0}]}]
    logprobs = chosen if where == "tokens" else alternatives
    if not stream:
        body = responses_body(CLEAN, "m")
        body["output"][0]["content"][0]["logprobs"] = logprobs
        return Reply(raw_body=json.dumps(body).encode(), content_type="application/json")
    frames = frames_for("responses", CLEAN)
    for n, frame in enumerate(frames):
        if b"response.output_text.delta" in frame:
            head, _, data = frame.partition(b"data: ")
            ev = json.loads(data) | {"logprobs": logprobs}
            frames[n] = head + b"data: " + json.dumps(ev).encode() + b"\n\n"
            break
    return Reply(raw_frames=frames)


@pytest.mark.parametrize("where", ["tokens", "alternatives"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
def test_responses_logprobs_are_checked(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                        stream: bool, where: str) -> None:
    reply = _responses_with_logprobs(stream, where)
    seen = client_sees(secrets_guard.url, "responses", lambda: upstream.queue(reply), stream=stream)
    assert SECRET not in seen.everything()
    assert seen.sdk is not None and "[withheld: credential]" in seen.sdk.text, seen.sdk_error
