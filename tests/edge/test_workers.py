"""``guardproxy serve --workers N``: several processes on one port, metrics summed across them, one
decision feed across them."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx

from proxy.commands.tail import sse_data
from tests.fakes.faulty import headers_for, poll, request_for
from tests.fakes.process import ProxyProcess
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import metric


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


def test_a_feed_subscriber_sees_the_decisions_of_every_worker(upstream: FakeUpstream) -> None:
    """One ``/events`` connection lands on one worker; the decisions other workers make reach it too."""
    secret = "AKIA" + "Q7XW2NBRT4LZ8PKV"
    records: list[dict[str, object]] = []
    stop = threading.Event()

    def follow(url: str) -> None:
        with httpx.stream("GET", url + "/events", timeout=httpx.Timeout(10.0, read=60.0)) as r:
            for data in sse_data(r.iter_lines()):
                records.append(json.loads(data))
                if stop.is_set():
                    return

    def trips() -> dict[str, object]:
        return {str(e["request_id"]): e["worker"] for e in list(records) if e["event"] == "guardrail.tripped"}

    with ProxyProcess(upstream.url, "--workers", "2") as proxy:
        assert poll(lambda: metric(_scrape(proxy), "guardproxy_workers") == 2, 30.0), _scrape(proxy)
        reader = threading.Thread(target=follow, args=(proxy.url,), daemon=True)
        reader.start()
        path, body = request_for("chat", stream=False)
        sent: list[str] = []
        with httpx.Client(headers=headers_for("chat")) as client:
            def ask() -> None:
                upstream.queue(Reply(text=f"the key is {secret} ok"))
                r = client.post(proxy.url + path, json=body, headers={"connection": "close"}, timeout=10)
                assert r.status_code == 200 and secret not in r.text
                sent.append(r.headers["x-guardproxy-request-id"])

            for _ in range(80):  # until the kernel has handed requests to both workers
                ask()
                if len(set(trips().values())) == 2:
                    break
                time.sleep(0.05)
            assert len(set(trips().values())) == 2, trips()
            latest = len(sent)
            for _ in range(8):
                ask()
        assert poll(lambda: set(sent[latest:]) <= trips().keys(), 10.0), (sent[latest:], trips())
        stop.set()
        upstream.queue(Reply(text=f"the key is {secret} ok"))
        httpx.post(proxy.url + path, json=body, headers=headers_for("chat"), timeout=10)
        reader.join(10)
        assert not any(secret in json.dumps(e) for e in records)
    assert proxy.proc is not None and proxy.proc.returncode == 0, proxy.stderr()
