"""``guardproxy serve --workers N``: several processes on one port, metrics summed across them."""

from __future__ import annotations

import re

import httpx

from tests.fakes.faulty import headers_for, poll, request_for
from tests.fakes.process import ProxyProcess
from tests.fakes.upstream import FakeUpstream, Reply
from tests.test_ops import metric


def _scrape(proxy: ProxyProcess) -> str:
    return httpx.get(proxy.url + "/metrics", headers=proxy.headers, timeout=5).text


def test_workers_share_the_port_and_every_scrape_sums_all_workers(upstream: FakeUpstream) -> None:
    with ProxyProcess(upstream.url, "--workers", "2") as proxy:
        # guardproxy_workers is 1 per live worker: it reads 2 only when a scrape sums both processes.
        assert poll(lambda: metric(_scrape(proxy), "guardproxy_workers") == 2, 30.0), _scrape(proxy)
        path, body = request_for("chat")
        n = 12
        for _ in range(n):
            upstream.queue(Reply(text="hello from a worker"))
        with httpx.Client(headers=headers_for("chat")) as client:  # fresh connection per request below
            for _ in range(n):
                r = client.post(proxy.url + path, json=body, headers={"connection": "close"}, timeout=10)
                assert r.status_code == 200
        for _ in range(6):  # whichever worker answers the scrape, it reports every request
            text = _scrape(proxy)
            assert metric(text, "guardproxy_requests_total", route="openai_chat", status="200") == n
            assert metric(text, "guardproxy_upstream_latency_seconds_count", provider="openai") == n
            assert re.search(r"^# TYPE guardproxy_requests_total counter$", text, re.MULTILINE)
    assert proxy.proc is not None and proxy.proc.returncode == 0, proxy.stderr()
