"""Upstream errors kept whole: an in-stream error event reaches the client with its type, code and
status as the upstream sent them (clients decide from them whether and when to retry: the SDKs and
Claude Code back off on overloaded and rate-limit errors), its free text checked like model text.

The official SDKs are the clients; the fake upstream speaks each API over a real socket.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from tests.adversarial import SECRET
from tests.conftest import NO_GUARDS
from tests.fakes.faulty import fake_api, headers_for, request_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply, stream_error

TEXT = "Let me think about that for a moment and then answer properly."


@pytest.fixture(scope="module")
def unguarded(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    """Guardrails on, but none configured: nothing checks the text."""
    with ProxyServer(upstream_server.url, NO_GUARDS) as p:
        yield p


def _raw(base: str, api: str, status: int = 200) -> bytes:
    path, body = request_for(api, stream=True)
    r = httpx.post(base + path, json=body, headers=headers_for(api), timeout=30)
    assert r.status_code == status, r.text
    return r.content


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_with_no_guardrail_the_error_event_relays_byte_for_byte(unguarded: ProxyServer, upstream: FakeUpstream,
                                                                 api: str) -> None:
    upstream.queue(Reply(text=TEXT, error_frame_after=3, error_message="Overloaded"))
    direct = _raw(upstream.url, api)
    upstream.queue(Reply(text=TEXT, error_frame_after=3, error_message="Overloaded"))
    through = _raw(unguarded.url, api)
    error = stream_error(fake_api(api), "Overloaded")
    assert direct.endswith(error) and through.endswith(error), through[-300:]
    # Every frame before it as sent too (the fake stamps "created" per second: compared apart).
    assert through.split(b'"created"')[0] == direct.split(b'"created"')[0]


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_with_guardrails_the_error_event_keeps_its_type_and_code(secrets_guard: ProxyServer,
                                                                 upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=TEXT, error_frame_after=3, error_message="Overloaded"))
    raw = _raw(secrets_guard.url, api)
    assert raw.endswith(stream_error(fake_api(api), "Overloaded")), raw[-300:]


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_an_error_whose_text_trips_keeps_its_type_and_code_and_loses_its_text(
        secrets_guard: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    message = f"quota exceeded for key {SECRET}"
    upstream.queue(Reply(text=TEXT, error_frame_after=3, error_message=message))
    raw = _raw(secrets_guard.url, api)
    assert SECRET.encode() not in raw
    sent = stream_error(fake_api(api), message)
    kept = sent.replace(json.dumps(message).encode(),
                        json.dumps("[guardproxy: the upstream's error message was removed by a guardrail]").encode())
    assert raw.endswith(kept), raw[-300:]


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_a_secret_in_the_error_type_ends_with_the_apis_generic_error(secrets_guard: ProxyServer,
                                                                     upstream: FakeUpstream, api: str) -> None:
    """Only the free text can be replaced: a type or code that trips gives the generic error."""
    sent = stream_error(fake_api(api), "Overloaded").replace(b"UNAVAILABLE", SECRET.encode()) \
        .replace(b"overloaded_error", SECRET.encode()).replace(b"server_error", SECRET.encode())
    upstream.queue(Reply(text=TEXT, error_frame_after=3))
    frames = _raw(upstream.url, api)
    head = frames[:frames.rindex(stream_error(fake_api(api), "upstream says no"))]
    upstream.queue(Reply(raw_frames=[head, sent]))
    path, body = request_for(api, stream=True)
    r = httpx.post(secrets_guard.url + path, json=body, headers=headers_for(api), timeout=30)
    raw = r.content  # a 502 when nothing had left the hold-back yet, else the API's in-stream error
    assert r.status_code in (200, 502)
    assert SECRET.encode() not in raw
    assert b"the upstream reported an error in the stream" in raw


def test_the_anthropic_sdk_sees_the_overloaded_error_mid_stream(secrets_guard: ProxyServer,
                                                                upstream: FakeUpstream) -> None:
    client = anthropic.Anthropic(base_url=secrets_guard.url, api_key="sk-ant-test", max_retries=0)
    upstream.queue(Reply(text=TEXT, error_frame_after=4, error_message="Overloaded"))
    with pytest.raises(anthropic.APIStatusError) as caught, client.messages.stream(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
        for _ in stream.text_stream:
            pass
    body = caught.value.body
    assert isinstance(body, dict) and body["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_the_anthropic_sdk_gets_overloaded_error_for_a_529(secrets_guard: ProxyServer,
                                                          upstream: FakeUpstream) -> None:
    client = anthropic.Anthropic(base_url=secrets_guard.url, api_key="sk-ant-test", max_retries=0)
    upstream.queue(Reply(status=529, error_message="Overloaded"))
    with pytest.raises(anthropic.OverloadedError) as caught:
        client.messages.create(model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 529


def test_the_openai_sdk_sees_the_upstreams_error_mid_stream(secrets_guard: ProxyServer,
                                                            upstream: FakeUpstream) -> None:
    client = openai.OpenAI(base_url=secrets_guard.url + "/v1", api_key="sk-test", max_retries=0)
    upstream.queue(Reply(text=TEXT, error_frame_after=4, error_message="The server is overloaded"))
    with pytest.raises(openai.APIError) as caught:
        for _ in client.chat.completions.create(model="gpt-x", stream=True,
                                                messages=[{"role": "user", "content": "hi"}]):
            pass
    assert caught.value.message == "The server is overloaded"
    assert caught.value.type == "server_error"


def test_the_genai_sdk_sees_the_503_mid_stream(secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    client = genai.Client(api_key="gk-test", http_options=genai_types.HttpOptions(
        base_url=secrets_guard.url, retry_options=genai_types.HttpRetryOptions(attempts=1)))
    upstream.queue(Reply(text=TEXT, error_frame_after=3, error_message="The model is overloaded."))
    with pytest.raises(genai_errors.APIError) as caught:
        for _ in client.models.generate_content_stream(model="gemini-x", contents="hi"):
            pass
    assert isinstance(caught.value, genai_errors.ServerError)
    assert (caught.value.code, caught.value.status, caught.value.message) == (
        503, "UNAVAILABLE", "The model is overloaded.")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_an_error_answer_keeps_its_status_and_its_message_is_checked(
        secrets_guard: ProxyServer, upstream: FakeUpstream, api: str, stream: bool) -> None:
    message = f"quota exceeded for key {SECRET}"
    path, body = request_for(api, stream=stream)
    upstream.queue(Reply(status=429, error_message=message))
    direct = httpx.post(upstream.url + path, json=body, headers=headers_for(api), timeout=30)
    upstream.queue(Reply(status=429, error_message=message))
    r = httpx.post(secrets_guard.url + path, json=body, headers=headers_for(api), timeout=30)
    assert r.status_code == 429 and r.headers["retry-after"] == "7"
    assert SECRET.encode() not in r.content
    replaced = json.dumps("[guardproxy: the upstream's error message was removed by a guardrail]").encode()
    assert r.content == direct.content.replace(json.dumps(message).encode(), replaced)
