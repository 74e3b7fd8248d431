"""``x-guardproxy-mode`` (issue #17, class 7): only the two modes are values, the operator can pin the
mode, and a request that asks for something else gets a 400 in its own API's error format."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.apis import APIS, Result, raw_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

JUDGE = """
[[message_guardrails]]
id = "judge"
kind = "llm_judge"
prompt = "Reply: {agent_output}\\nRespond with exactly PASS or VIOLATION."
action = "retry"
max_attempts = 2
replacement = "[withheld]"
"""
PINNED = '[defaults]\nmode = "non-interactive"\nmode_pinned = true\n' + JUDGE


@pytest.fixture(scope="module")
def pinned(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, PINNED) as p:
        yield p


@pytest.fixture(scope="module")
def open_mode(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, JUDGE) as p:
        yield p


def _judged_a_violation(proxy: ProxyServer, upstream: FakeUpstream, api: str,
                        headers: dict[str, str] | None = None) -> Result:
    """A unary call whose answer the judge finds a violation (the retry, if there is one, passes)."""
    upstream.queue(Reply(text="a denial"))
    upstream.judge_replies.append("VIOLATION")
    return raw_call(proxy.url, api, stream=False, headers=headers)


def error_text(api: str, raw: bytes) -> str:
    body = json.loads(raw)
    return str(body["error"]["message"])


@pytest.mark.parametrize("value", ["interactive-ish", "yes", "", "non_interactive"])
@pytest.mark.parametrize("api", APIS)
def test_an_unknown_mode_gets_a_400_in_the_apis_format(open_mode: ProxyServer, upstream: FakeUpstream, api: str,
                                                      value: str) -> None:
    res = raw_call(open_mode.url, api, stream=True, headers={"x-guardproxy-mode": value})
    assert res.status == 400
    assert "x-guardproxy-mode" in error_text(api, res.raw)
    assert upstream.seen == []


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_a_pinned_non_interactive_mode_cannot_be_talked_into_interactive(pinned: ProxyServer,
                                                                        upstream: FakeUpstream, api: str) -> None:
    res = raw_call(pinned.url, api, stream=False, headers={"x-guardproxy-mode": "interactive"})
    assert res.status == 400 and "pinned" in error_text(api, res.raw)
    res = _judged_a_violation(pinned, upstream, api, {"x-guardproxy-mode": "Non-Interactive"})
    assert res.status == 400 and "judge_violation" in res.raw.decode()
    res = _judged_a_violation(pinned, upstream, api)
    assert res.status == 400 and "judge_violation" in res.raw.decode()


def test_an_open_mode_follows_the_header_in_any_case(open_mode: ProxyServer, upstream: FakeUpstream) -> None:
    res = _judged_a_violation(open_mode, upstream, "chat", {"x-guardproxy-mode": "NON-INTERACTIVE"})
    assert res.status == 400 and "judge_violation" in res.raw.decode()
    res = _judged_a_violation(open_mode, upstream, "chat", {"x-guardproxy-mode": "interactive"})
    assert res.status == 200 and b"Hello from upstream." in res.raw  # retried, and the retry passed


UNSET = '[defaults]\nmode = "non-interactive"\n' + JUDGE
UNPINNED = '[defaults]\nmode = "non-interactive"\nmode_pinned = false\n' + JUDGE


@pytest.fixture(scope="module")
def non_interactive(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, UNSET) as p:
        yield p


@pytest.fixture(scope="module")
def unpinned(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, UNPINNED) as p:
        yield p


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_non_interactive_policy_is_pinned_by_default(non_interactive: ProxyServer, upstream: FakeUpstream,
                                                       api: str) -> None:
    """Without ``mode_pinned``, a client asking for interactive cannot turn the operator's clean failure
    into a retried or replaced answer: a 400, and nothing goes upstream."""
    res = raw_call(non_interactive.url, api, stream=False, headers={"x-guardproxy-mode": "interactive"})
    assert res.status == 400 and "pinned" in error_text(api, res.raw)
    assert upstream.seen == []
    res = _judged_a_violation(non_interactive, upstream, api, {"x-guardproxy-mode": "non-interactive"})
    assert res.status == 400 and "judge_violation" in res.raw.decode()


def test_an_interactive_policy_still_lets_a_client_ask_for_non_interactive(open_mode: ProxyServer,
                                                                          upstream: FakeUpstream) -> None:
    res = _judged_a_violation(open_mode, upstream, "anthropic", {"x-guardproxy-mode": "non-interactive"})
    assert res.status == 400 and "judge_violation" in res.raw.decode()


def test_an_operator_may_let_clients_ask_for_interactive(unpinned: ProxyServer, upstream: FakeUpstream) -> None:
    res = _judged_a_violation(unpinned, upstream, "chat", {"x-guardproxy-mode": "interactive"})
    assert res.status == 200 and b"Hello from upstream." in res.raw  # retried, and the retry passed
