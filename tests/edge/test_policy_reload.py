"""Live policy reload: file change and SIGHUP (in every worker), last good policy kept on error, and a
request keeps the policy it started with while reloads happen under load."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import httpx
import pytest

from tests.fakes.faulty import headers_for, poll, request_for
from tests.fakes.process import ProxyProcess
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import metric

ZEBRA = "the animal you asked about is a zebra of course"


def policy_text(marker: str) -> str:
    return f"""
[defaults]
holdback_chars = 16

[[stream_guardrails]]
id = "no-striped-horses"
kind = "regex"
patterns = ["zebra"]
window = 16
replacement = "[policy {marker}]"
"""


def ask(url: str, *, stream: bool = False, headers: dict[str, str] | None = None,
        api: str = "chat") -> httpx.Response:
    path, body = request_for(api, stream=stream)
    return httpx.post(url + path, json=body, headers={**headers_for(api), **(headers or {})}, timeout=15)


def readyz(url: str) -> dict[str, object]:
    body: dict[str, object] = httpx.get(url + "/readyz", timeout=5).json()
    return body


def test_a_changed_file_is_reloaded_and_a_bad_one_keeps_the_last_good(tmp_path: Path,
                                                                      upstream: FakeUpstream) -> None:
    file = tmp_path / "policy.toml"
    file.write_text(policy_text("A"))
    with ProxyServer(upstream.url, policy_file=str(file)) as proxy:
        first = readyz(proxy.url)["policy_version"]
        upstream.queue(Reply(text=ZEBRA))
        r = ask(proxy.url)
        assert "[policy A]" in r.text and r.headers["x-guardproxy-policy"] == first
        assert r.headers["x-guardproxy-guardrails"] == "no-striped-horses"

        file.write_text(policy_text("B"))
        assert poll(lambda: readyz(proxy.url)["policy_version"] != first, 10.0)
        second = readyz(proxy.url)["policy_version"]
        upstream.queue(Reply(text=ZEBRA))
        r = ask(proxy.url)
        assert "[policy B]" in r.text and r.headers["x-guardproxy-policy"] == second

        file.write_text(policy_text("C").replace('kind = "regex"', 'kind = "telepathy"'))
        assert poll(lambda: readyz(proxy.url)["last_reload_error"] is not None, 10.0)
        status = readyz(proxy.url)
        assert status["policy_version"] == second and "kind" in str(status["last_reload_error"])
        assert metric(httpx.get(proxy.url + "/metrics").text, "guardproxy_policy_reloads_total",
                      outcome="error") >= 1
        upstream.queue(Reply(text=ZEBRA))
        assert "[policy B]" in ask(proxy.url).text


def test_sighup_reloads_every_worker(tmp_path: Path, upstream: FakeUpstream) -> None:
    file = tmp_path / "policy.toml"
    file.write_text(policy_text("A"))
    with ProxyProcess(upstream.url, "--workers", "2", GUARDPROXY_POLICY=str(file),
                      GUARDPROXY_WATCH_POLICY="false") as proxy:
        assert poll(lambda: metric(httpx.get(proxy.url + "/metrics").text, "guardproxy_workers") == 2, 30.0)
        old = readyz(proxy.url)["policy_version"]
        file.write_text(policy_text("B"))
        proxy.signal(signal.SIGHUP)
        # Each worker counts its own reload; a scrape sums them: 2 means both workers reloaded.
        assert poll(lambda: metric(httpx.get(proxy.url + "/metrics").text, "guardproxy_policy_reloads_total",
                                   outcome="ok") == 2, 15.0), proxy.stderr()
        for _ in range(8):
            upstream.queue(Reply(text=ZEBRA))
            r = ask(proxy.url, headers={"connection": "close"})
            assert "[policy B]" in r.text and r.headers["x-guardproxy-policy"] != old


@pytest.mark.slow
def test_reload_under_load_loses_no_stream_and_mixes_no_policies(tmp_path: Path, upstream: FakeUpstream) -> None:
    file = tmp_path / "policy.toml"
    file.write_text(policy_text("A"))
    n = 12
    results: list[tuple[str, bytes]] = []
    lock = threading.Lock()
    order: list[str] = []

    def stream(url: str) -> None:
        path, body = request_for("chat", stream=True)
        with httpx.stream("POST", url + path, json=body, headers=headers_for("chat"), timeout=20) as r:
            raw = b"".join(r.iter_raw())
            with lock:
                results.append((r.headers["x-guardproxy-policy"], raw))
                order.append("done")

    with ProxyServer(upstream.url, policy_file=str(file), upstream_read_timeout_s=10.0) as proxy:
        version_a = readyz(proxy.url)["policy_version"]
        upstream.queue(*[Reply(text=ZEBRA, stall_after_frames=2, stall_s=3.0) for _ in range(2 * n)])
        first = [threading.Thread(target=stream, args=(proxy.url,)) for _ in range(n)]
        for t in first:
            t.start()
        assert poll(lambda: upstream.open_streams == n, 10.0)  # all of them mid-stream, under A
        file.write_text(policy_text("B"))
        assert poll(lambda: readyz(proxy.url)["policy_version"] != version_a, 10.0)
        with lock:
            order.append("reloaded")
        second = [threading.Thread(target=stream, args=(proxy.url,)) for _ in range(n)]
        for t in second:
            t.start()
        for t in first + second:
            t.join(30)
    assert len(results) == 2 * n  # no stream lost
    assert order[0] == "reloaded"  # the first streams were still open when the new policy went live
    by_version: dict[str, str] = {}
    for version, raw in results:
        assert raw.rstrip().endswith(b"data: [DONE]"), raw[-200:]
        marks = {m for m in ("A", "B") if f"[policy {m}]".encode() in raw}
        assert len(marks) == 1, raw  # one policy per request, from first byte to last
        assert by_version.setdefault(version, marks.pop()) in "AB"
        assert b"zebra" not in raw
    assert by_version == {version_a: "A", readyz_version(by_version, version_a): "B"}


def readyz_version(by_version: dict[str, str], old: object) -> str:
    return next(v for v in by_version if v != old)
