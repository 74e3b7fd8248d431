"""The official SDKs pass the same calls through the proxy as against the upstream directly."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

WEATHER = {"location": "Paris", "unit": "celsius"}


@pytest.fixture(params=["default", "plain", "direct"])
def base(request: pytest.FixtureRequest, upstream: FakeUpstream) -> str:
    """The same calls through the proxy (default policy, guardrails off) and straight to the upstream."""
    if request.param == "direct":
        return upstream.url
    proxy: ProxyServer = request.getfixturevalue(f"{request.param}_proxy")
    return proxy.url


def oai(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)


def test_openai_chat_text(base: str, upstream: FakeUpstream) -> None:
    r = oai(base).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "Hello from upstream."
    assert r.choices[0].finish_reason == "stop"
    assert upstream.seen[-1].headers["Authorization"] == "Bearer sk-test"


def test_openai_chat_stream_and_tool_call(base: str, upstream: FakeUpstream) -> None:
    upstream.queue(Reply(text="Let me check.", tool_calls=[("get_weather", WEATHER)]))
    stream = oai(base).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "w"}],
                                               stream=True, stream_options={"include_usage": True})
    text, args, finish, usage = "", "", None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage.total_tokens
        for c in chunk.choices:
            text += c.delta.content or ""
            for tc in c.delta.tool_calls or []:
                args += tc.function.arguments or "" if tc.function else ""
            finish = c.finish_reason or finish
    assert text == "Let me check."
    assert json.loads(args) == WEATHER
    assert finish == "tool_calls" and usage == 18


def test_openai_chat_tool_call_unary(base: str, upstream: FakeUpstream) -> None:
    upstream.queue(Reply(text="", tool_calls=[("get_weather", WEATHER)]))
    r = oai(base).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "w"}])
    call = r.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == WEATHER  # type: ignore[union-attr]


def test_openai_responses_text_and_stream(base: str, upstream: FakeUpstream) -> None:
    client = oai(base)
    r = client.responses.create(model="gpt-x", input="hi")
    assert r.output_text == "Hello from upstream."
    upstream.queue(Reply(text="Streaming words here", tool_calls=[("get_weather", WEATHER)]))
    events = list(client.responses.create(model="gpt-x", input="hi", stream=True))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Streaming words here"
    done = [e for e in events if e.type == "response.completed"]
    assert len(done) == 1
    calls = [o for o in done[0].response.output if o.type == "function_call"]
    assert json.loads(calls[0].arguments) == WEATHER


def test_anthropic_messages(base: str, upstream: FakeUpstream) -> None:
    client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    r = client.messages.create(model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
    assert r.content[0].text == "Hello from upstream."  # type: ignore[union-attr]
    upstream.queue(Reply(text="Let me check.", tool_calls=[("get_weather", WEATHER)]))
    with client.messages.stream(model="claude-x", max_tokens=100,
                                messages=[{"role": "user", "content": "w"}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == "Let me check."
    assert final.stop_reason == "tool_use"
    assert final.content[1].input == WEATHER  # type: ignore[union-attr]
    n = client.messages.count_tokens(model="claude-x", messages=[{"role": "user", "content": "hi"}])
    assert n.input_tokens == 11


def test_anthropic_beta_query_and_tool_unary(base: str, upstream: FakeUpstream) -> None:
    client = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
    upstream.queue(Reply(text="", tool_calls=[("get_weather", WEATHER)]))
    r = client.beta.messages.create(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "w"}])
    assert r.content[0].input == WEATHER  # type: ignore[union-attr]
    # Claude Code's form: the query travels upstream untouched.
    with anthropic.Anthropic(base_url=base, api_key="k", max_retries=0) as c2:
        raw = c2.post("/v1/messages?beta=true", cast_to=object,
                      body={"model": "claude-x", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
    assert isinstance(raw, dict) and raw["type"] == "message"
    assert upstream.seen[-1].query == "beta=true"


@pytest.mark.parametrize("version", ["v1beta", "v1"])
def test_gemini_generate_and_stream(base: str, upstream: FakeUpstream, version: str) -> None:
    client = genai.Client(api_key="gk", http_options=types.HttpOptions(base_url=base, api_version=version))
    r = client.models.generate_content(model="gemini-x", contents="hi")
    assert r.text == "Hello from upstream."
    upstream.queue(Reply(text="Streamed from gemini", tool_calls=[("get_weather", WEATHER)]))
    text, calls, finish = "", [], None
    for chunk in client.models.generate_content_stream(model="gemini-x", contents="hi"):
        cand = chunk.candidates[0]  # type: ignore[index]
        for part in cand.content.parts or []:  # type: ignore[union-attr]
            text += part.text or ""
            if part.function_call:
                calls.append(part.function_call)
        finish = cand.finish_reason or finish
    assert text == "Streamed from gemini"
    assert calls[0].name == "get_weather" and calls[0].args == WEATHER
    assert finish == types.FinishReason.STOP
    assert upstream.seen[-1].headers["x-goog-api-key"] == "gk"
    assert client.models.count_tokens(model="gemini-x", contents="hi").total_tokens == 11


def test_passthrough_paths_both_ways(base: str, upstream: FakeUpstream) -> None:
    models = oai(base).models.list()
    assert [m.id for m in models] == ["fake-model"]


def _stream_gemini_json_array(base: str) -> list[dict[str, Any]]:
    import httpx

    with httpx.stream("POST", base + "/v1beta/models/gemini-x:streamGenerateContent",
                      json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, timeout=10) as r:
        raw = b"".join(r.iter_raw())
    data: list[dict[str, Any]] = json.loads(raw)
    return data


def test_gemini_json_array_mode(base: str, upstream: FakeUpstream) -> None:
    chunks = _stream_gemini_json_array(base)
    text = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert text == "Hello from upstream."
