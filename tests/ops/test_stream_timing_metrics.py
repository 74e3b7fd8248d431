"""``/metrics`` shows what holding back costs: per-frame hold delay and time to first byte, both
upstream and delivered, measured on a real proxy streaming from a real fake upstream."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.faulty import headers_for, request_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import metric


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini", "responses"])
def test_hold_delay_and_first_byte_are_in_metrics(default_proxy: ProxyServer, upstream: FakeUpstream,
                                                  api: str) -> None:
    before = httpx.get(default_proxy.url + "/metrics").text
    words = ["The", "deployment", "finished", "in", "about", "four", "minutes", "and", "the", "checks", "went", "green"]
    upstream.queue(Reply(text=" ".join(words)))
    path, body = request_for(api)
    r = httpx.post(default_proxy.url + path, json=body, headers=headers_for(api))
    assert r.status_code == 200
    text = httpx.get(default_proxy.url + "/metrics").text
    assert "# TYPE guardproxy_stream_hold_seconds histogram" in text
    held = metric(text, "guardproxy_stream_hold_seconds_count") - metric(before, "guardproxy_stream_hold_seconds_count")
    assert held >= len(words) - 1  # every text frame is followed from arrival to release
    for stage in ("upstream", "delivered"):
        count = "guardproxy_time_to_first_byte_seconds_count"
        assert metric(text, count, stage=stage) == metric(before, count, stage=stage) + 1
