"""What a cluster needs from a running ``guardproxy serve`` (real processes): metrics on a port of
their own that answers without the admin token, the audit log reopened on SIGUSR1 after a rotation
(also through the ``--workers`` supervisor, which must not die of it), and the audit log on standard
output (``AUDIT_LOG=-``) for a log pipeline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fakes.proxy import free_port

REPO = Path(__file__).resolve().parents[2]
TOKEN = "admin-token-for-tests"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(REPO / "deploy" / "fake_upstream.py"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


def _serve(upstream: str, env: dict[str, str], *args: str, stdout: int | None = subprocess.DEVNULL
           ) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GUARDPROXY_")}
    proc = subprocess.Popen([sys.executable, "-m", "proxy", "serve", *args], cwd=REPO, text=True,
                            env={**clean, "PYTHONPATH": str(REPO), "GUARDPROXY_PORT": str(port),
                                 "GUARDPROXY_OPENAI_BASE_URL": upstream, **env},
                            stdout=stdout, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc, port
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.3)


def _leak(port: int) -> None:
    r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=30,
                   headers={"authorization": "Bearer demo", "x-guardproxy-token": TOKEN},
                   json={"model": "demo", "messages": [{"role": "user", "content": "LEAK"}]})
    assert r.status_code == 200 and "withheld" in r.text


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_metrics_port_and_audit_rotation_under_workers(upstream: str, tmp_path: Path) -> None:
    audit, mport = tmp_path / "audit.jsonl", free_port()
    proc, port = _serve(upstream, {"GUARDPROXY_AUTH_TOKEN": TOKEN, "GUARDPROXY_METRICS_PORT": str(mport),
                                   "GUARDPROXY_AUDIT_LOG": str(audit)}, "--workers", "2")
    try:
        _leak(port)
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).status_code == 401
        scraped = httpx.get(f"http://127.0.0.1:{mport}/metrics", timeout=10)
        assert scraped.status_code == 200 and "guardproxy_requests_total" in scraped.text
        assert 'reason_code="secret_leak"' in scraped.text
        assert httpx.get(f"http://127.0.0.1:{mport}/events", timeout=10).status_code == 404
        assert httpx.get(f"http://127.0.0.1:{mport}/v1/models", timeout=10).status_code == 404

        first = _lines(audit)
        assert any(r["event"] == "guardrail.tripped" for r in first)
        rotated = tmp_path / "audit.jsonl.1"
        audit.rename(rotated)  # what logrotate does, then it signals
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while not audit.exists():  # each worker reopens when its loop runs the handler
            assert time.monotonic() < deadline, "the audit log was not reopened"
            time.sleep(0.2)
        for _ in range(4):  # both workers, whichever takes each request
            _leak(port)
        assert proc.poll() is None, "SIGUSR1 ended the supervisor"
        assert any(r["event"] == "guardrail.tripped" for r in _lines(audit))
        assert len(_lines(rotated)) >= len(first)  # a worker still between signal and reopen may add one
    finally:
        _stop(proc)


def test_the_audit_log_on_standard_output(upstream: str) -> None:
    proc, port = _serve(upstream, {"GUARDPROXY_AUDIT_LOG": "-"}, stdout=subprocess.PIPE)
    try:
        _leak(port)
    finally:
        _stop(proc)
    assert proc.stdout is not None
    records = [json.loads(line) for line in proc.stdout.read().splitlines() if line.startswith("{")]
    tripped = [r for r in records if r["event"] == "guardrail.tripped"]
    assert tripped and tripped[0]["reason_code"] == "secret_leak"
    assert "ghp_" not in json.dumps(records)
