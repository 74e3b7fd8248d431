"""Per-client policies: the proxy token picks the policy, then the route; a client header only when
the operator allows it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.edge.test_policy_reload import ZEBRA, ask, policy_text
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name, text in (("default", policy_text("default")), ("strict", policy_text("strict")),
                       ("lax", "empty = true\n[defaults]\nholdback_chars = 0\n")):
        (tmp_path / f"{name}.toml").write_text(text)
        out[name] = str(tmp_path / f"{name}.toml")
    return out


@pytest.fixture
def proxy(files: dict[str, str], upstream: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream.url, policy_file=files["default"], auth_token="admin-token",
                     policies={"strict": files["strict"], "lax": files["lax"]},
                     client_tokens={"team-a-token": "strict", "team-b-token": "lax"},
                     route_policies={"anthropic": "lax"}) as p:
        yield p


def _policy_of(proxy: ProxyServer, upstream: FakeUpstream, token: str, api: str = "chat",
               **headers: str) -> str:
    upstream.queue(Reply(text=ZEBRA))
    r = ask(proxy.url, api=api, headers={"x-guardproxy-token": token, **headers})
    assert r.status_code == 200, r.text
    name = r.headers["x-guardproxy-policy"].split("@")[0]
    assert ("zebra" in r.text) == (name == "lax")
    return name


def test_the_token_picks_the_policy(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    assert _policy_of(proxy, upstream, "team-a-token") == "strict"
    assert _policy_of(proxy, upstream, "team-b-token") == "lax"
    assert _policy_of(proxy, upstream, "admin-token") == "default"
    assert ask(proxy.url, headers={"x-guardproxy-token": "team-c-token"}).status_code == 401


def test_the_route_picks_the_policy_when_the_token_does_not(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    assert _policy_of(proxy, upstream, "admin-token", api="anthropic") == "lax"
    assert _policy_of(proxy, upstream, "team-a-token", api="anthropic") == "strict"


def test_a_client_header_cannot_pick_a_weaker_policy_unless_allowed(files: dict[str, str], proxy: ProxyServer,
                                                                    upstream: FakeUpstream) -> None:
    assert _policy_of(proxy, upstream, "admin-token", **{"x-guardproxy-policy": "lax"}) == "default"
    assert _policy_of(proxy, upstream, "team-a-token", **{"x-guardproxy-policy": "lax"}) == "strict"
    with ProxyServer(upstream.url, policy_file=files["default"], policies={"lax": files["lax"]},
                     allow_policy_header=True) as open_proxy:
        assert _policy_of(open_proxy, upstream, "", **{"x-guardproxy-policy": "lax"}) == "lax"
        assert _policy_of(open_proxy, upstream, "", **{"x-guardproxy-policy": "nonesuch"}) == "default"


def test_a_token_naming_an_unknown_policy_stops_the_start(files: dict[str, str], upstream: FakeUpstream) -> None:
    from config.policy import PolicyError

    with pytest.raises(PolicyError, match="unknown policies"):
        ProxyServer(upstream.url, policy_file=files["default"], client_tokens={"t": "nonesuch"})
