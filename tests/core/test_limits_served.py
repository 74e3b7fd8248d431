"""Bounds on what an answer may cost (issue #17, class 9), over the real proxy: a frame that never ends,
an answer past the size limit, too many tool calls and tool arguments nested past the depth limit all
end with the API's error (fail closed), never a 500, a RecursionError or unbounded memory; and while
such answers are processed, ``/healthz`` on the same proxy keeps answering."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.apis import raw_call
from tests.fakes.classifier import FakeClassifier
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply, sse

SMALL = {"max_frame_bytes": 64 * 1024, "max_response_bytes": 1024 * 1024}
BASE = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse({**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def chat_tool_frames(calls: list[tuple[str, str]]) -> list[bytes]:
    """A chat stream whose tool calls each arrive whole in one frame (``arguments`` as given)."""
    frames = [chat_chunk({"role": "assistant", "content": ""})]
    frames += [chat_chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                           "function": {"name": name, "arguments": args}}]})
               for i, (name, args) in enumerate(calls)]
    return [*frames, chat_chunk({}, "tool_calls"), b"data: [DONE]\n\n"]


@pytest.fixture(scope="module")
def small(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, None, **SMALL) as p:
        yield p


def failed_closed(api: str, status: int, raw: bytes) -> bool:
    """An HTTP error in the API's format, or a 200 stream that ends with the API's error."""
    if status == 502:
        return b"error" in raw
    return status == 200 and (b'"error"' in raw or b"event: error" in raw)


@pytest.mark.parametrize("api", ["chat", "anthropic", "responses", "gemini"])
def test_a_frame_that_never_ends_fails_closed(small: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    endless = b"data: {\"x\": \"" + b"a" * 200_000  # no closing quote, no blank line: never a frame
    upstream.queue(Reply(raw_frames=[endless]))
    res = raw_call(small.url, api, stream=True)
    assert failed_closed(api, res.status, res.raw), res.raw[:300]
    assert b"a" * 1000 not in res.raw


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_an_answer_past_the_size_limit_fails_closed(small: ProxyServer, upstream: FakeUpstream, api: str,
                                                    stream: bool) -> None:
    text = "word " * 300_000  # 1.5 MB against a 1 MiB limit
    upstream.queue(Reply(text=text, deltas=[text[i:i + 50_000] for i in range(0, len(text), 50_000)]))
    res = raw_call(small.url, api, stream=stream)
    assert failed_closed(api, res.status, res.raw), res.raw[:300]
    assert b"MAX_RESPONSE_BYTES" in res.raw
    assert len(res.raw) < 1024 * 1024 + 4096  # what was vetted before the bound, then the error


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", ["chat", "anthropic", "responses", "gemini"])
def test_too_many_tool_calls_fail_closed(default_proxy: ProxyServer, upstream: FakeUpstream, api: str,
                                         stream: bool) -> None:
    upstream.queue(Reply(text="", tool_calls=[("noop", {"n": i}) for i in range(300)]))
    res = raw_call(default_proxy.url, api, stream=stream)
    assert failed_closed(api, res.status, res.raw), res.raw[:300]
    assert b"MAX_TOOL_CALLS" in res.raw and b'"noop"' not in res.raw


@pytest.mark.parametrize("stream", [True, False])
def test_tool_arguments_nested_past_the_limit_fail_closed_without_recursion(default_proxy: ProxyServer,
                                                                            upstream: FakeUpstream,
                                                                            stream: bool) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    if stream:
        upstream.queue(Reply(raw_frames=chat_tool_frames([("Write", deep)])))
        res = raw_call(default_proxy.url, "chat", stream=True)
    else:
        res = _unary_deep(default_proxy, upstream, deep)
    assert failed_closed("chat", res.status, res.raw), res.raw[:300]
    assert b"MAX_JSON_DEPTH" in res.raw and res.status != 500


WORD_POLICY = """
[[stream_guardrails]]
id = "word"
kind = "regex"
patterns = ["FORBIDDEN"]
replacement = "[withheld: word]"
"""


@pytest.mark.parametrize("api", ["chat", "anthropic", "responses", "gemini"])
def test_the_depth_bound_applies_before_the_whole_text_checks(upstream_server: FakeUpstream, api: str) -> None:
    """Deep arguments holding a word a stream guardrail blocks: the bound rejects them first, so the
    tool-argument check (which would have found the word) never runs on them."""
    upstream_server.reset()
    deep: Any = "FORBIDDEN"
    for _ in range(100):
        deep = {"a": deep}
    with ProxyServer(upstream_server.url, WORD_POLICY) as p:
        upstream_server.queue(Reply(text="", tool_calls=[("Write", deep)]))
        res = raw_call(p.url, api, stream=True)
    assert failed_closed(api, res.status, res.raw), res.raw[:300]
    assert b"MAX_JSON_DEPTH" in res.raw and b"withheld: word" not in res.raw


def test_a_flood_of_one_character_deltas_held_for_a_message_check_ends_at_the_byte_bound(
        upstream_server: FakeUpstream) -> None:
    """With a message check, delivery is buffered: every frame is held until the verdict (about 800
    bytes of memory per one-character delta). What bounds that memory is ``MAX_RESPONSE_BYTES``: the
    flood ends there with the API's error, and the check never runs on a message that never ended."""
    upstream_server.reset()
    frames = [chat_chunk({"role": "assistant", "content": ""})] + [chat_chunk({"content": "a"})] * 12_000
    with FakeClassifier() as classifier:
        checked = (f'[[message_guardrails]]\nid = "classifier"\nkind = "webhook"\n'
                   f'url = "{classifier.url}/webhook"\n')
        with ProxyServer(upstream_server.url, checked, **SMALL) as p:
            upstream_server.queue(Reply(raw_frames=[*frames, chat_chunk({}, "stop"), b"data: [DONE]\n\n"]))
            res = raw_call(p.url, "chat", stream=True)
    assert failed_closed("chat", res.status, res.raw), res.raw[:300]
    assert b"MAX_RESPONSE_BYTES" in res.raw and b'"content": "a"' not in res.raw
    assert classifier.webhook_bodies == []


def _unary_deep(proxy: ProxyServer, upstream: FakeUpstream, deep: str) -> Any:
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "Write", "arguments": deep}}]}}]}
    upstream.queue(Reply(raw_body=json.dumps(body).encode()))
    return raw_call(proxy.url, "chat", stream=False)


def test_a_conversation_carrying_deep_arguments_in_its_history_still_gets_an_answer(
        default_proxy: ProxyServer, upstream: FakeUpstream) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    history = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "Write", "arguments": deep}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "ok"}]
    res = raw_call(default_proxy.url, "chat", stream=False, history=history)
    assert res.status == 200


# ----------------------------------------------------------------------------- /healthz under load
ADVERSARIAL: dict[str, Any] = {
    "huge tool arguments (240 KB of sk-sk-...)": lambda: Reply(raw_frames=chat_tool_frames(
        [("Write", json.dumps({"file_path": "a.txt", "content": "sk-" * 80_000}))])),
    "10,000 tool calls": lambda: Reply(raw_frames=chat_tool_frames([("noop", "{}")] * 10_000)),
    "100,000 levels of JSON nesting": lambda: Reply(raw_frames=chat_tool_frames([("Write", "[" * 100_000 + "]" * 100_000)])),
    "20 MB non-streamed answer": lambda: Reply(text="word " * 4_000_000),
    "50,000 one-character deltas": lambda: Reply(text="a" * 50_000, deltas=["a"] * 50_000),
}
HEALTHZ_BOUND_S = 2.0
"""Generous, so a busy test machine does not fail it; the stalls themselves are measured in bench/."""


def _poll_healthz(url: str, stop: threading.Event, worst: list[float], errors: list[str]) -> None:
    with httpx.Client(timeout=HEALTHZ_BOUND_S) as client:
        while True:  # at least one probe, even when the answer was handled before the first one
            t = time.monotonic()
            try:
                client.get(url + "/healthz").raise_for_status()
            except httpx.HTTPError as exc:
                errors.append(type(exc).__name__)
            worst.append(time.monotonic() - t)
            if stop.is_set():
                return
            time.sleep(0.02)


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_healthz_keeps_answering_while_an_adversarial_answer_is_processed(default_proxy: ProxyServer,
                                                                          upstream: FakeUpstream, name: str) -> None:
    upstream.queue(ADVERSARIAL[name]())
    stop, worst, errors = threading.Event(), [], []
    poller = threading.Thread(target=_poll_healthz, args=(default_proxy.url, stop, worst, errors))
    poller.start()
    try:
        stream = "non-streamed" not in name
        res = raw_call(default_proxy.url, "chat", stream=stream)
        assert res.status in (200, 502)
    finally:
        stop.set()
        poller.join(10)
    assert not errors, f"/healthz failed {len(errors)} time(s) ({errors[:3]}) during: {name}"
    assert len(worst) >= 1


REDOS_POLICY = """
[[stream_guardrails]]
id = "emails"
kind = "regex"
patterns = ["(a+)+$", "([a-zA-Z0-9._%+-]+)+@x\\\\.com"]
"""


@pytest.mark.parametrize("stream", [True, False])
def test_healthz_keeps_answering_while_a_catastrophic_pattern_meets_its_worst_input(
        upstream_server: FakeUpstream, stream: bool) -> None:
    """A backtracking engine needs seconds (doubling per character) for these patterns on this input;
    on RE2 they are linear, so the proxy keeps serving ``/healthz`` throughout."""
    upstream_server.reset()
    text = "a" * 20_000 + "!"
    with ProxyServer(upstream_server.url, REDOS_POLICY) as p:
        upstream_server.queue(Reply(text=text, deltas=[text[i:i + 100] for i in range(0, len(text), 100)]))
        stop, worst, errors = threading.Event(), [], []
        poller = threading.Thread(target=_poll_healthz, args=(p.url, stop, worst, errors))
        poller.start()
        try:
            res = raw_call(p.url, "chat", stream=stream)
        finally:
            stop.set()
            poller.join(10)
    assert res.status == 200  # passed or blocked ("$" also matches where the text so far ends): either way, done
    assert not errors and len(worst) >= 1
