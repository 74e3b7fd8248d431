"""Load: 1,000 concurrent streams through the proxy (guardrails on), every one delivered complete and
byte-for-byte, memory bounded, and fds and tasks back to baseline afterwards."""

from __future__ import annotations

import asyncio
import resource
import time

import aiohttp
import pytest

from tests.fakes.faulty import Baseline, fake_api, fd_count, headers_for, poll, request_for, task_count
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

STREAMS = 1000
LOAD_APIS = ("chat", "responses", "anthropic", "gemini", "gemini_array")


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.fixture(scope="module", autouse=True)
def enough_fds() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * STREAMS + 512)), hard))


async def _run(base: str, n: int, expected: dict[str, bytes]) -> list[tuple[str, bytes]]:
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=60)) as s:
        async def one(i: int) -> tuple[str, bytes]:
            api = LOAD_APIS[i % len(LOAD_APIS)]
            path, body = request_for(api)
            async with s.post(base + path, json=body, headers=headers_for(api)) as r:
                assert r.status == 200, await r.text()
                return api, await r.read()

        return await asyncio.gather(*(one(i) for i in range(n)))


def test_a_thousand_concurrent_streams_arrive_whole_and_in_order(upstream: FakeUpstream) -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = min(STREAMS, (soft - 256) // 4)  # client, proxy in and out, upstream: four fds per stream
    expected = {api: upstream.expected_stream_bytes(fake_api(api), Reply(), "m", alt_sse=api == "gemini")
                for api in LOAD_APIS}
    fds0 = fd_count()
    with ProxyServer(upstream.url, upstream_read_timeout_s=30.0,  # the shipped default policy
                     upstream_connect_timeout_s=30.0) as proxy:  # 1,000 connects on a busy machine
        asyncio.run(_run(proxy.url, 50, expected))  # warm up pools and caches
        base = Baseline(proxy)
        rss0 = rss_kb()
        t = time.monotonic()
        results = asyncio.run(_run(proxy.url, n, expected))
        took = time.monotonic() - t
        rss1 = rss_kb()
        bad = [api for api, raw in results if raw != expected[api]]
        assert len(results) == n and not bad, f"{len(bad)} streams differ: {bad[:5]}"
        growth_mb = (rss1 - rss0) / 1024
        print(f"\nload: {n} streams in {took:.2f} s, RSS {rss0 // 1024} -> {rss1 // 1024} MB (+{growth_mb:.1f} MB)")
        assert growth_mb < 150, growth_mb
        # Every exchange's task is gone; the sockets left are the idle upstream keep-alive pool
        # (two fds per pooled connection, this process holding both ends), at most one per stream.
        assert poll(lambda: task_count(proxy) <= base.tasks, 10)
        assert fd_count() <= base.fds + 2 * n
    # With the proxy stopped, its pool and listening socket are closed: back to where we started.
    assert poll(lambda: fd_count() <= fds0, 10), (fd_count(), fds0)
