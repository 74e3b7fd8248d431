"""One authorisation model for what is not a model call (``proxy.edge.access``): the admin routes are
never more open than the model routes, a client token is no admin token, the bare readiness status
stays open for probes, a listen beyond loopback without any token does not start, and the decision
feed bounds its subscribers in number and in what each may have waiting."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from config.settings import Settings, SettingsError
from proxy.edge.app import create_app
from proxy.ops.feed import DecisionFeed
from tests.edge.test_policy_reload import ZEBRA, ask, policy_text
from tests.fakes.faulty import poll
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import ROOT

ADMIN = "admin-token-5678"
CLIENT = "client-token-1234"


@pytest.mark.parametrize("path", ["/metrics", "/events"])
def test_with_only_client_tokens_the_admin_routes_answer_nobody(upstream: FakeUpstream, path: str) -> None:
    with ProxyServer(upstream.url, policy_text("A"), client_tokens={CLIENT: "default"}) as proxy:
        assert ask(proxy.url).status_code == 401  # the model routes need a token
        assert httpx.get(proxy.url + path, timeout=5).status_code == 401
        for given in ({"x-guardproxy-token": CLIENT}, {"authorization": f"Bearer {CLIENT}"}):
            assert httpx.get(proxy.url + path, headers=given, timeout=5).status_code == 401


def test_readiness_tells_anyone_only_its_status(upstream: FakeUpstream) -> None:
    with ProxyServer(upstream.url, policy_text("A"), client_tokens={CLIENT: "default"}) as proxy:
        for given in ({}, {"x-guardproxy-token": CLIENT}):
            r = httpx.get(proxy.url + "/readyz", headers=given, timeout=5)
            assert r.status_code == 200 and r.json() == {"status": "ready"}
        assert httpx.get(proxy.url + "/healthz", timeout=5).status_code == 200


def test_the_admin_token_opens_what_a_client_token_does_not(upstream: FakeUpstream) -> None:
    with ProxyServer(upstream.url, policy_text("A"), auth_token=ADMIN, client_tokens={CLIENT: "default"}) as proxy:
        upstream.queue(Reply(text="hello"))
        assert ask(proxy.url, headers={"x-guardproxy-token": CLIENT}).status_code == 200
        assert httpx.get(proxy.url + "/metrics", headers={"x-guardproxy-token": CLIENT}, timeout=5).status_code == 401
        assert httpx.get(proxy.url + "/metrics", headers={"x-guardproxy-token": ADMIN}, timeout=5).status_code == 200
        assert httpx.get(proxy.url + "/metrics", headers={"authorization": f"bearer {ADMIN}"},
                         timeout=5).status_code == 200
        full = httpx.get(proxy.url + "/readyz", headers={"x-guardproxy-token": ADMIN}, timeout=5).json()
        assert full["stream_guardrails"] == ["no-striped-horses"]
        bare = httpx.get(proxy.url + "/readyz", headers={"x-guardproxy-token": CLIENT}, timeout=5).json()
        assert bare == {"status": "ready"}


def test_without_any_token_on_loopback_the_admin_routes_are_as_open_as_the_model_routes(
        upstream: FakeUpstream) -> None:
    with ProxyServer(upstream.url, policy_text("A")) as proxy:
        assert httpx.get(proxy.url + "/metrics", timeout=5).status_code == 200
        assert "stream_guardrails" in httpx.get(proxy.url + "/readyz", timeout=5).json()


def test_an_app_listening_beyond_loopback_without_any_token_is_not_built() -> None:
    with pytest.raises(SettingsError, match="GUARDPROXY_AUTH_TOKEN"):
        create_app(Settings(host="0.0.0.0"))
    create_app(Settings(host="0.0.0.0", client_tokens={CLIENT: "default"}))  # admin routes closed: allowed
    create_app(Settings(host="0.0.0.0", allow_unauthenticated_remote=True))  # the operator's explicit waiver


def test_serve_beyond_loopback_without_any_token_exits() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "proxy", "serve", "--host", "0.0.0.0", "--port", "0"], env=env,
                       cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 2 and "refusing to listen on 0.0.0.0" in r.stderr and "Traceback" not in r.stderr


def _follow(url: str, got: list[bytes], ready: threading.Event) -> None:
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=20) as s:
        s.sendall(f"GET /events HTTP/1.1\r\nhost: x\r\nx-guardproxy-token: {ADMIN}\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(4096)
        ready.set()
        got.append(data)
        while b"guardrail.tripped" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        got.append(data)


def test_subscribers_past_the_limit_are_refused_and_the_others_keep_reading(upstream: FakeUpstream) -> None:
    with ProxyServer(upstream.url, policy_text("A"), auth_token=ADMIN, feed_max_subscribers=2) as proxy:
        idle = socket.create_connection(("127.0.0.1", proxy.port))  # subscribes, never reads
        idle.sendall(f"GET /events HTTP/1.1\r\nhost: x\r\nx-guardproxy-token: {ADMIN}\r\n\r\n".encode())
        got: list[bytes] = []
        ready = threading.Event()
        reader = threading.Thread(target=_follow, args=(proxy.url, got, ready))
        reader.start()
        assert poll(lambda: proxy.app.feed.subscribers == 2, 10.0)
        third = httpx.get(proxy.url + "/events", headers={"x-guardproxy-token": ADMIN}, timeout=5)
        assert third.status_code == 503 and "FEED_MAX_SUBSCRIBERS" in third.text
        upstream.queue(Reply(text=ZEBRA))
        assert "[policy A]" in ask(proxy.url, headers={"x-guardproxy-token": ADMIN}).text
        reader.join(20)
        assert b"guardrail.tripped" in got[-1]
        idle.close()
        assert poll(lambda: proxy.app.feed.subscribers == 0, 10.0)
        # a place freed is a place taken again
        with httpx.stream("GET", proxy.url + "/events", headers={"x-guardproxy-token": ADMIN}, timeout=5) as r:
            assert r.status_code == 200


async def _settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_a_subscriber_that_does_not_read_holds_at_most_its_buffer() -> None:
    dropped = Counter("dropped", "x", registry=CollectorRegistry())
    feed = DecisionFeed(dropped, max_subscribers=2, buffer_bytes=4096)
    slow, fast = feed.subscribe(), feed.subscribe()
    # a place is taken when the iteration starts: start both, then give each one record
    first = [asyncio.ensure_future(anext(slow)), asyncio.ensure_future(anext(fast))]
    await _settle()
    record = {"event": "tool_call.assessed", "request_id": "r", "rule": "paths", "path": "x" * 300}
    feed.publish(record)
    await _settle()
    assert all(t.done() for t in first)
    assert feed.full
    for _ in range(2000):
        feed.publish(record)
        assert (await anext(fast))[0] == "tool_call.assessed"  # the fast one keeps up and loses nothing
    assert dropped._value.get() > 1900  # the slow one lost what did not fit in its buffer
    assert sum(s.waiting for s in feed._subscribers) <= 4096
    await slow.aclose()
    await fast.aclose()
    assert feed.subscribers == 0
