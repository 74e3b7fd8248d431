"""The system prompt spelled through ``top_logprobs`` alternatives, one token a chunk: the chosen
tokens say something harmless, the second choices, read one after another (what a client that
prints the alternatives shows), are the prompt. Each rank's alternatives are a lane the canary reads
as it streams; before, each chunk's alternatives were checked alone and the prompt went through.
Real proxy, fake upstream (chat and Gemini), the official SDKs as clients: the alternatives the SDK
yields never spell a run of the prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from google import genai
from google.genai import types

from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

SYSTEM = (Path(__file__).parent.parent / "data" / "gemini_cli_system_prompt.txt").read_text(encoding="utf-8")
EXCERPT = ("Rigorously adhere to existing project conventions when reading or modifying code. Analyze "
           "surrounding code, tests, and configuration first.")
WORDS = [w + " " for w in EXCERPT.split()]
POLICY = """
[defaults]
holdback_chars = 0

[[stream_guardrails]]
id = "leak"
kind = "canary"
replacement = "[withheld: system prompt]"
"""
HEADER = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def _chat_frames() -> list[bytes]:
    frames = []
    for word in WORDS:
        entry = {"token": "ok ", "logprob": -0.1, "bytes": None,
                 "top_logprobs": [{"token": "ok ", "logprob": -0.1, "bytes": None},
                                  {"token": word, "logprob": -2.0, "bytes": None}]}
        choice = {"index": 0, "delta": {"content": "ok "}, "logprobs": {"content": [entry]}, "finish_reason": None}
        frames.append(f"data: {json.dumps({**HEADER, 'choices': [choice]})}\n\n".encode())
    done = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    frames += [f"data: {json.dumps({**HEADER, 'choices': [done]})}\n\n".encode(), b"data: [DONE]\n\n"]
    return frames


def _gemini_frames() -> list[bytes]:
    frames = []
    for word in WORDS:
        cand = {"content": {"role": "model", "parts": [{"text": "ok "}]}, "index": 0,
                "logprobsResult": {"chosenCandidates": [{"token": "ok ", "logProbability": -0.1}],
                                   "topCandidates": [{"candidates": [{"token": "ok ", "logProbability": -0.1},
                                                                     {"token": word, "logProbability": -2.0}]}]}}
        frames.append(f"data: {json.dumps({'candidates': [cand]})}\n\n".encode())
    last = {"content": {"role": "model", "parts": [{"text": ""}]}, "index": 0, "finishReason": "STOP"}
    frames.append(f"data: {json.dumps({'candidates': [last]})}\n\n".encode())
    return frames


def _no_run(shown: str) -> bool:
    squeezed = "".join(ch for ch in shown.lower() if ch.isalnum())
    copied = "".join(ch for ch in EXCERPT.lower() if ch.isalnum())
    return not any(copied[i:i + 40] in squeezed for i in range(len(copied) - 39))


def test_chat_alternatives_spelling_the_prompt_are_withheld(guard_proxy: ProxyServer, upstream: FakeUpstream) -> None:
    upstream.queue(Reply(raw_frames=_chat_frames()))
    client = openai.OpenAI(base_url=guard_proxy.url + "/v1", api_key="sk-test", max_retries=0)
    text, alternatives = "", []
    msgs: Any = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
    for chunk in client.chat.completions.create(model="m", messages=msgs, stream=True, logprobs=True, top_logprobs=2):
        for ch in chunk.choices:
            text += ch.delta.content or ""
            for entry in (ch.logprobs.content or []) if ch.logprobs else []:
                alternatives += [a.token for a in entry.top_logprobs[1:]]
    assert _no_run("".join(alternatives)), alternatives
    assert "[withheld: system prompt]" in text


def test_gemini_alternatives_spelling_the_prompt_are_withheld(guard_proxy: ProxyServer,
                                                              upstream: FakeUpstream) -> None:
    upstream.queue(Reply(raw_frames=_gemini_frames()))
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=guard_proxy.url))
    alternatives, text = [], ""
    config = types.GenerateContentConfig(system_instruction=SYSTEM, response_logprobs=True, logprobs=2)
    for chunk in client.models.generate_content_stream(model="m", contents="hi", config=config):
        for cand in chunk.candidates or []:
            text += "".join(p.text or "" for p in (cand.content.parts if cand.content else None) or [])
            result = cand.logprobs_result
            for top in (result.top_candidates or []) if result else []:
                alternatives += [c.token or "" for c in (top.candidates or [])[1:]]
    assert _no_run("".join(alternatives)), alternatives
    assert "[withheld: system prompt]" in text
