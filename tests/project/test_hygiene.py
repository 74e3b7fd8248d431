"""Secrets hygiene and access: API keys in every auth form and text that trips a guardrail never show
up in logs, the audit log, ``/metrics`` or (for the blocked text) the client's bytes; the access
token is required when set and never forwarded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import structlog
from structlog.testing import capture_logs

from tests.fakes.faulty import APIS, assert_http_error, headers_for, request_for
from tests.fakes.proxy import ProxyServer, free_port
from tests.fakes.upstream import FakeUpstream, Reply

BLOCKED = "AKIAQ7XR4K2MZT9BWP3N"
KEYS = {"authorization": "Bearer sk-proj-HYGIENEbearer0123456789", "x-api-key": "sk-ant-HYGIENExapikey0123",
        "x-goog-api-key": "AIzaHYGIENEgoog0123456789abcdefghijk", "api-key": "HYGIENEazure0123456789"}
QUERY_KEY = "AIzaHYGIENEquery0123456789abcdefghijk"
NEEDLES = [BLOCKED, QUERY_KEY, *(v.removeprefix("Bearer ") for v in KEYS.values())]


@pytest.fixture(scope="module")
def audited(upstream_server: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyServer, Path]]:
    audit = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    with ProxyServer(upstream_server.url, audit_log=str(audit)) as p:  # the shipped default policy
        yield p, audit


@pytest.mark.parametrize("api", APIS)
def test_keys_and_blocked_text_stay_out_of_logs_audit_and_metrics(audited: tuple[ProxyServer, Path],
                                                                  upstream: FakeUpstream, api: str,
                                                                  capfd: pytest.CaptureFixture[str]) -> None:
    proxy, audit = audited
    seen_by_client = b""
    with capture_logs() as logs:
        for stream in (True, False):
            for name, value in KEYS.items():
                upstream.queue(Reply(text=f"the key is {BLOCKED} as you asked, and more words after it"))
                path, body = request_for(api, stream=stream)
                sep = "&" if "?" in path else "?"
                r = httpx.post(f"{proxy.url}{path}{sep}key={QUERY_KEY}", json=body,
                               headers={**headers_for(api), name: value}, timeout=20)
                assert r.status_code == 200, r.text
                assert b"withheld because it contained a credential" in r.content, r.content[-300:]
                seen_by_client += r.content
        metrics = httpx.get(proxy.url + "/metrics").text
    out, err = capfd.readouterr()
    sent = [s for s in upstream.seen if "key" in s.query]
    assert sent and all(QUERY_KEY in s.query for s in sent)  # the client's own key still reaches upstream
    haystacks = {"client": seen_by_client.decode("utf-8", "replace"), "stdout": out, "stderr": err,
                 "structlog": json.dumps(logs, default=str), "metrics": metrics,
                 "audit": audit.read_text() if audit.exists() else ""}
    assert 'reason_code="secret_leak"' in metrics
    assert "secret_leak" in haystacks["audit"]
    for where, text in haystacks.items():
        for needle in NEEDLES:
            if where == "client" and needle != BLOCKED:
                continue  # the client's own key is its own business; only the blocked text must not be there
            assert needle not in text, f"{needle} leaked into {where}"


# ----------------------------------------------------------------------------------- access token
@pytest.fixture(scope="module")
def locked(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, auth_token="t0ken-for-tests") as p:
        yield p


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
@pytest.mark.parametrize("api", APIS)
def test_the_access_token_is_required_and_not_forwarded(locked: ProxyServer, upstream: FakeUpstream, api: str,
                                                        stream: bool) -> None:
    path, body = request_for(api, stream=stream)
    for wrong in ({}, {"x-guardproxy-token": "nope"}, {"x-guardproxy-token": ""}):
        r = httpx.post(locked.url + path, json=body, headers={**headers_for(api), **wrong})
        assert r.status_code == 401
        assert_http_error(api, 401, r.content)
    assert upstream.seen == []
    r = httpx.post(locked.url + path, json=body, headers={**headers_for(api), "x-guardproxy-token": "t0ken-for-tests"})
    assert r.status_code == 200
    assert len(upstream.seen) == 1
    assert "t0ken-for-tests" not in json.dumps(upstream.seen[0].headers)
    assert all(k.lower() != "x-guardproxy-token" for k in upstream.seen[0].headers)


def test_serving_beyond_loopback_without_a_token_is_refused() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARDPROXY_")}
    r = subprocess.run([sys.executable, "-m", "proxy", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
                       capture_output=True, text=True, timeout=30, env=env, check=False, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode != 0
    assert "GUARDPROXY_AUTH_TOKEN" in r.stderr


def test_structlog_is_left_as_found() -> None:
    assert structlog.is_configured() in (True, False)  # capture_logs restores the configuration
