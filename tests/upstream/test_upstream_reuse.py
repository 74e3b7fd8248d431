"""The upstream path against a real uvicorn upstream in its own process: keep-alive connections the
upstream closes when they idle, and an upstream that dies and comes back under load.

The proxy runs under uvicorn in this process (``ProxyServer``); clients are plain HTTP clients.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.fakes.proxy import ProxyServer
from tests.fakes.uvicorn_upstream import UvicornUpstream

pytestmark = pytest.mark.slow

KEEP_ALIVE_S = 0.05
CHAT = {"model": "uv-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
HEADERS = {"authorization": "Bearer sk-test"}


def test_requests_spaced_at_the_upstreams_keep_alive_timeout_never_meet_its_close() -> None:
    """Each client waits the upstream's keep-alive timeout, give or take up to a few milliseconds,
    between requests: the proxy's pooled connection is then closed by uvicorn just as the next
    request is sent into it. No request may fail for it (before the fix: 502s, see the commit)."""
    offsets = [(-3.0 + 0.025 * k) / 1000 for k in range(200)]  # -3 ms .. +1.975 ms, 25 us apart
    statuses: Counter[int] = Counter()
    failures: list[str] = []

    def client(proxy: ProxyServer, lane: int, lanes: int) -> None:
        with httpx.Client(base_url=proxy.url, headers=HEADERS, timeout=10) as c:
            for i, offset in enumerate(offsets[lane::lanes] * 2):
                time.sleep(KEEP_ALIVE_S + offset)
                r = c.post("/v1/chat/completions", json={**CHAT, "stream": i % 2 == 1})
                statuses[r.status_code] += 1
                if r.status_code != 200:
                    failures.append(f"{offset * 1000:+.2f} ms: {r.status_code} {r.text[:160]}")

    with UvicornUpstream(keep_alive_s=KEEP_ALIVE_S) as upstream, ProxyServer(upstream.url) as proxy:
        lanes = 1  # one client: the pooled connection's idle time is its own pause
        threads = [threading.Thread(target=client, args=(proxy, lane, lanes)) for lane in range(lanes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        pool = proxy.app.services.upstream._pool
        resends = getattr(pool, "resends", None)
    assert sum(statuses.values()) == 2 * len(offsets)
    assert not failures, f"{statuses}, resent {resends}:\n" + "\n".join(failures)
    print(f"statuses {dict(statuses)}, resent on a new connection: {resends}")


def _chat_stream(c: httpx.Client, words: int, delay_ms: int) -> tuple[int, str, bytes]:
    """One streamed chat through the proxy: status, how it ended, the raw body."""
    body = {**CHAT, "stream": True, "max_tokens": words, "metadata": {"delay_ms": delay_ms}}
    try:
        with c.stream("POST", "/v1/chat/completions", json=body) as r:
            raw = b"".join(r.iter_raw())
    except httpx.RemoteProtocolError:
        return 200, "cut", b""  # the proxy closed the stream without an ending: never acceptable
    if r.status_code != 200:
        return r.status_code, "status", raw
    return 200, _stream_ending(raw), raw


def _stream_ending(raw: bytes) -> str:
    """``complete``: every word and the finish; ``error``: the API's error frame ends it;
    ``truncated``: it just stops (looks complete to a lax client)."""
    frames = [f[len(b"data: "):] for f in raw.split(b"\n\n") if f.startswith(b"data: ")]
    if not frames:
        return "truncated"
    if frames[-1] == b"[DONE]":
        chunks = [json.loads(f) for f in frames[:-1]]
        if any(ch.get("error") for ch in chunks):
            return "error-then-done"
        if chunks and chunks[-1]["choices"] and chunks[-1]["choices"][0].get("finish_reason") == "stop":
            return "complete"
        return "truncated"
    last: dict[str, Any] = json.loads(frames[-1])
    return "error" if "error" in last else "truncated"


def test_an_upstream_that_dies_and_restarts_under_load() -> None:
    """Streams in flight when the upstream is killed end with the API's error (never a hang, never a
    stream that stops as if complete); requests while it is down get 502; once it is back, the next
    request succeeds: no connection from before the restart is used again."""
    upstream = UvicornUpstream(keep_alive_s=5.0).start()
    outcomes: Counter[str] = Counter()
    stop = threading.Event()
    bad: list[str] = []

    def load(proxy: ProxyServer) -> None:
        with httpx.Client(base_url=proxy.url, headers=HEADERS, timeout=15) as c:
            while not stop.is_set():
                status, ending, raw = _chat_stream(c, words=20, delay_ms=10)
                outcomes[f"{status} {ending}"] += 1
                if status == 200 and ending not in ("complete", "error"):
                    bad.append(f"{ending}: {raw[-300:]!r}")
                elif status not in (200, 502):
                    bad.append(f"{status}: {raw[:300]!r}")
                if status != 200:
                    time.sleep(0.05)  # the upstream is down: a client backs off

    try:
        with ProxyServer(upstream.url, upstream_read_timeout_s=10.0) as proxy:
            threads = [threading.Thread(target=load, args=(proxy,), daemon=True) for _ in range(4)]
            for t in threads:
                t.start()
            # Load first, so streams are in flight and connections idle in the pool.
            deadline = time.monotonic() + 60
            while outcomes["200 complete"] < 8 and time.monotonic() < deadline:
                time.sleep(0.05)
            if outcomes["200 complete"] < 8:
                stop.set()
                pytest.fail(f"no steady load before the kill: {dict(outcomes)}")
            upstream.kill()
            killed_at = dict(outcomes)
            time.sleep(0.5)
            upstream.start()
            back = dict(outcomes)
            stop.set()
            for t in threads:
                t.join(30)
            assert not any(t.is_alive() for t in threads), "a stream hung"
            # Right after the restart, on connections the pool may still hold from before it:
            with httpx.Client(base_url=proxy.url, headers=HEADERS, timeout=10) as c:
                for i in range(6):
                    r = c.post("/v1/chat/completions", json={**CHAT, "stream": i % 2 == 1})
                    assert r.status_code == 200, r.text
    finally:
        upstream.stop()
    assert not bad, "\n".join(bad)
    # The kill met streams in flight: some ended with the API's error.
    assert outcomes["200 error"] >= 1, (killed_at, back, dict(outcomes))
    print("outcomes", dict(outcomes))
