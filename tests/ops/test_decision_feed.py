"""Visible decisions: the policy and guardrails on each response, the live feed ``GET /events``
(SSE, behind the token) and ``guardproxy tail`` following it."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from proxy.commands.tail import sse_data
from tests.edge.test_policy_reload import ZEBRA, ask, policy_text
from tests.fakes.faulty import poll
from tests.fakes.process import ProxyProcess
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import ROOT

TOKEN = "ops-token-1234"


def test_the_feed_streams_each_decision_and_needs_the_token(upstream: FakeUpstream) -> None:
    got: list[dict[str, object]] = []

    def follow(url: str) -> None:
        with httpx.stream("GET", url + "/events", headers={"x-guardproxy-token": TOKEN},
                          timeout=httpx.Timeout(10.0, read=20.0)) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            for data in sse_data(r.iter_lines()):
                got.append(json.loads(data))
                if got[-1]["event"] == "message.replaced" or len(got) >= 5:
                    return

    with ProxyServer(upstream.url, policy_text("A"), auth_token=TOKEN) as proxy:
        assert httpx.get(proxy.url + "/events", timeout=5).status_code == 401
        reader = threading.Thread(target=follow, args=(proxy.url,))
        reader.start()
        assert poll(lambda: proxy.app.feed.subscribers == 1, 10.0)
        upstream.queue(Reply(text=ZEBRA))
        r = ask(proxy.url, headers={"x-guardproxy-token": TOKEN})
        reader.join(20)
        assert "[policy A]" in r.text
        request_id = r.headers["x-guardproxy-request-id"]
        tripped = [e for e in got if e["event"] == "guardrail.tripped"]
        assert tripped and tripped[0]["guardrail_id"] == "no-striped-horses"
        assert all(e["request_id"] == request_id for e in got)
        assert not any("zebra" in json.dumps(e) for e in got)  # the blocked text stays out of the feed
        assert poll(lambda: proxy.app.feed.subscribers == 0, 10.0)


def test_guardproxy_tail_prints_decisions(upstream: FakeUpstream) -> None:
    with ProxyServer(upstream.url, policy_text("A"), auth_token=TOKEN) as proxy:
        tail = subprocess.Popen([sys.executable, "-m", "proxy", "tail", "--url", proxy.url, "--token", TOKEN,
                                 "--limit", "1"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        assert poll(lambda: proxy.app.feed.subscribers == 1, 20.0)
        upstream.queue(Reply(text=ZEBRA))
        ask(proxy.url, headers={"x-guardproxy-token": TOKEN})
        out, err = tail.communicate(timeout=20)
    assert tail.returncode == 0, err
    assert "guardrail.tripped" in out and "no-striped-horses" in out and "zebra" not in out


def test_an_open_feed_does_not_hold_up_shutdown(tmp_path: Path, upstream: FakeUpstream) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(policy_text("A"))
    proxy = ProxyProcess(upstream.url, GUARDPROXY_AUTH_TOKEN=TOKEN, GUARDPROXY_POLICY=str(policy),
                         GUARDPROXY_SHUTDOWN_GRACE_S="60").start()
    watcher = subprocess.Popen([sys.executable, "-m", "proxy", "tail", "--url", proxy.url, "--token", TOKEN],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        upstream.queue(*[Reply(text=ZEBRA)] * 50)
        # The watcher is subscribed once it prints a decision made after it connected.
        line = ""
        for _ in range(50):
            ask(proxy.url, headers={"x-guardproxy-token": TOKEN})
            if select.select([watcher.stdout], [], [], 0.2)[0]:
                line = watcher.stdout.readline()
                break
        assert "guardrail.tripped" in line
        # SIGTERM: the feed ends at once instead of holding the 60 s grace period (stop() kills after 20 s).
        assert proxy.stop() in (0, -15), proxy.stderr()  # uvicorn re-raises SIGTERM once it has stopped
        code = watcher.wait(20)
        assert code == 0, watcher.communicate()
    finally:
        proxy.stop()
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
