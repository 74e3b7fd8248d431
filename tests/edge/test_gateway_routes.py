"""Route policies by provider (``GUARDPROXY_ROUTE_POLICIES``): every spelling that reaches a provider
gets that provider's policy, an endpoint key narrows it, an unknown key stops the start, and the
proxy's own ``x-guardproxy-*`` headers never reach the upstream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from config.policy import PolicyError
from tests.edge.test_policy_reload import ZEBRA, policy_text
from tests.fakes.faulty import headers_for, request_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name in ("default", "strict", "narrow"):
        (tmp_path / f"{name}.toml").write_text(policy_text(name))
        out[name] = str(tmp_path / f"{name}.toml")
    return out


@pytest.fixture
def proxy(files: dict[str, str], upstream: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream.url, policy_file=files["default"],
                     policies={"strict": files["strict"], "narrow": files["narrow"]},
                     route_policies={"anthropic": "strict", "gemini": "strict", "openai/responses": "narrow"},
                     allow_policy_header=True) as p:
        yield p


def _policy(proxy: ProxyServer, upstream: FakeUpstream, path: str, api: str, **headers: str) -> str:
    upstream.queue(Reply(text=ZEBRA))
    _, body = request_for(api, stream=False)
    r = httpx.post(proxy.url + path, json=body, headers={**headers_for(api), **headers}, timeout=15)
    assert r.status_code == 200, r.text
    name = r.headers["x-guardproxy-policy"].split("@")[0]
    assert f"[policy {name}]" in r.text and "zebra" not in r.text
    return name


@pytest.mark.parametrize(("path", "api", "expected"), [
    ("/anthropic/v1/chat/completions", "chat", "strict"),  # Anthropic's OpenAI-compatible endpoint
    ("/anthropic/v1/messages", "anthropic", "strict"),
    ("/v1/messages", "anthropic", "strict"),
    ("/v1beta/openai/chat/completions", "chat", "strict"),  # Gemini's OpenAI layer
    ("/gemini/v1/chat/completions", "chat", "strict"),
    ("/v1beta/models/m:generateContent", "gemini", "strict"),
    ("/v1/chat/completions", "chat", "default"),
    ("/v1/responses", "responses", "narrow"),
    ("/openai/v1/responses", "responses", "narrow"),
])
def test_every_spelling_that_reaches_a_provider_gets_its_policy(proxy: ProxyServer, upstream: FakeUpstream,
                                                                path: str, api: str, expected: str) -> None:
    assert _policy(proxy, upstream, path, api) == expected


@pytest.mark.parametrize("key", ["anthropc", "openai/completions", "anthropic/v1/messages", "bedrock"])
def test_an_unknown_route_key_stops_the_start(files: dict[str, str], upstream: FakeUpstream, key: str) -> None:
    with pytest.raises(PolicyError, match="ROUTE_POLICIES: unknown route"):
        ProxyServer(upstream.url, policy_file=files["default"], policies={"strict": files["strict"]},
                    route_policies={key: "strict"})


def test_the_first_version_s_wire_keys_still_name_openai_s_endpoints(files: dict[str, str],
                                                                       upstream: FakeUpstream) -> None:
    with ProxyServer(upstream.url, policy_file=files["default"], policies={"strict": files["strict"]},
                     route_policies={"openai_chat": "strict"}) as proxy:
        assert _policy(proxy, upstream, "/v1/chat/completions", "chat") == "strict"
        assert _policy(proxy, upstream, "/v1/responses", "responses") == "default"


def test_the_proxy_s_own_headers_never_reach_the_upstream(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    ours = {"x-guardproxy-policy": "strict", "x-guardproxy-mode": "interactive",
            "x-guardproxy-egress-grant": "example.com", "x-guardproxy-anything": "secret-ish"}
    _policy(proxy, upstream, "/v1/chat/completions", "chat", **ours)
    upstream.queue(Reply(text="files"))
    httpx.get(proxy.url + "/v1/files", headers={**headers_for("chat"), **ours}, timeout=15)  # a passthrough
    assert len(upstream.seen) == 2
    for seen in upstream.seen:
        assert not [k for k in seen.headers if k.lower().startswith("x-guardproxy-")], seen.headers
