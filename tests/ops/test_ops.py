"""Operations: ``/metrics`` (Prometheus text), ``/readyz``, ``guardproxy check-policy``, and graceful
shutdown letting an open stream finish."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.fakes.faulty import headers_for, poll, request_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

ROOT = Path(__file__).resolve().parents[2]
_SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? '
                     r'-?[0-9.e+Inf-]+$')


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_are_prometheus_text_and_count_what_happened(default_proxy: ProxyServer,
                                                             upstream: FakeUpstream) -> None:
    before = httpx.get(default_proxy.url + "/metrics").text
    upstream.queue(Reply(text="an answer with AKIAQ7XR4K2MZT9BWP3N inside it and then some more words"),
                   Reply(status=429))
    for api in ("chat", "chat"):
        path, body = request_for(api)
        httpx.post(default_proxy.url + path, json=body, headers=headers_for(api))
    # A request is counted once its response has gone out, so the count can trail the client by a
    # moment: read until the second request shows (bounded), then compare exactly.
    deadline = time.monotonic() + 10
    while True:
        r = httpx.get(default_proxy.url + "/metrics")
        text = r.text
        done = metric(text, "guardproxy_requests_total", route="openai_chat", status="429") > \
            metric(before, "guardproxy_requests_total", route="openai_chat", status="429")
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    for line in text.splitlines():
        assert line.startswith(("# HELP ", "# TYPE ")) or _SAMPLE.match(line), line
    assert metric(text, "guardproxy_requests_total", route="openai_chat", status="200") == \
        metric(before, "guardproxy_requests_total", route="openai_chat", status="200") + 1
    assert metric(text, "guardproxy_requests_total", route="openai_chat", status="429") == \
        metric(before, "guardproxy_requests_total", route="openai_chat", status="429") + 1
    assert "# TYPE guardproxy_upstream_latency_seconds histogram" in text
    assert metric(text, "guardproxy_upstream_latency_seconds_count") >= 2
    assert metric(text, "guardproxy_upstream_latency_seconds_bucket", provider="openai", le="+Inf") >= 2
    assert metric(text, "guardproxy_stream_guardrail_trips_total", guardrail_id="no-secrets",
                  reason_code="secret_leak") >= 1
    assert "# TYPE guardproxy_message_checks_total counter" in text  # fail_open counts: tests/upstream/test_faults.py


def test_readyz_reports_the_loaded_policy(default_proxy: ProxyServer) -> None:
    r = httpx.get(default_proxy.url + "/readyz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ready" and body["policy_loaded"] is True
    assert "no-secrets" in body["stream_guardrails"]


@pytest.mark.parametrize(("toml", "names"), [
    ('[[stream_guardrails]]\nid = "x"\nkind = "secrets"\nactoin = "replace"\n', "actoin"),
    ('[[stream_guardrails]]\nid = "x"\nkind = "telepathy"\n', "kind"),
    ('[defaults]\nholdback_chars = "lots"\n', "holdback_chars"),
    ('[defaults]\nmode = "sometimes"\n', "mode"),
    ('[[stream_guardrails]]\nid = "x"\nkind = "regex"\npatterns = ["("]\n', "pattern"),
    ("this is = not [toml", ""),
])
def test_check_policy_names_the_bad_field(tmp_path: Path, toml: str, names: str) -> None:
    bad = tmp_path / "BAD.toml"
    bad.write_text(toml)
    r = subprocess.run([sys.executable, "-m", "proxy", "check-policy", str(bad)], capture_output=True, text=True,
                       timeout=30, cwd=ROOT, check=False)
    assert r.returncode != 0
    assert names in r.stderr + r.stdout, r.stderr
    assert "Traceback" not in r.stderr


def test_check_policy_accepts_the_shipped_policies() -> None:
    for args in ([], [str(ROOT / "config" / "policies" / "user-is-right.toml")]):
        r = subprocess.run([sys.executable, "-m", "proxy", "check-policy", *args], capture_output=True, text=True,
                           timeout=30, cwd=ROOT, check=False)
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("api", ["chat", "gemini"])
def test_graceful_shutdown_lets_an_open_stream_finish(upstream: FakeUpstream, api: str) -> None:
    proxy = ProxyServer(upstream.url, shutdown_grace_s=5.0).start()
    upstream.queue(Reply(text="slow words arriving one by one here", stall_after_frames=2, stall_s=0.6))
    expected = upstream.expected_stream_bytes(api, Reply(text="slow words arriving one by one here"), "m")
    path, body = request_for(api)
    got: list[bytes] = []

    def read() -> None:
        with httpx.stream("POST", proxy.url + path, json=body, headers=headers_for(api), timeout=10) as r:
            got.append(b"".join(r.iter_raw()))

    reader = threading.Thread(target=read)
    reader.start()
    assert poll(lambda: upstream.open_streams == 1)
    stopper = threading.Thread(target=proxy.stop)  # asks uvicorn to exit while the stream is open
    t = time.monotonic()
    stopper.start()
    reader.join(10)
    stopper.join(10)
    assert got == [expected]
    assert not proxy.thread.is_alive()
    assert time.monotonic() - t < 5.0
    with pytest.raises(httpx.ConnectError):
        httpx.get(proxy.url + "/healthz")
