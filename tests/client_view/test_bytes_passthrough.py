"""With no guardrail acting, a client's stream is the upstream's stream byte for byte, however the
upstream cut its writes."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

CASES = {
    "chat": ("/v1/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}),
    "responses": ("/v1/responses", {"model": "m", "stream": True, "input": "x"}),
    "anthropic": ("/v1/messages", {"model": "m", "stream": True, "max_tokens": 5,
                                   "messages": [{"role": "user", "content": "x"}]}),
    "gemini": ("/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}),
    "gemini_array": ("/v1beta/models/m:streamGenerateContent", {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}),
}
TEXT = "Clean answer with ünïcödé — 漢字 and emoji 🙂 split awkwardly across many small writes."


@pytest.mark.parametrize("proxy_name", ["default_proxy", "plain_proxy"])
@pytest.mark.parametrize("api", list(CASES))
@pytest.mark.parametrize("split", [None, 1, 7])
def test_stream_bytes_equal_upstream_bytes(request: pytest.FixtureRequest, upstream: FakeUpstream,
                                           proxy_name: str, api: str, split: int | None) -> None:
    proxy: ProxyServer = request.getfixturevalue(proxy_name)
    reply = Reply(text=TEXT, tool_calls=[("read_file", {"file_path": "a.txt"})], split_bytes=split)
    upstream.queue(reply)
    path, body = CASES[api]
    with httpx.stream("POST", proxy.url + path, json=body, timeout=10) as r:
        assert r.status_code == 200
        got = b"".join(r.iter_raw())
    kind = "gemini" if api.startswith("gemini") else api
    want = upstream.expected_stream_bytes(kind, reply, "m", alt_sse=api == "gemini")
    assert got == want
