"""``guardproxy tail`` as people use it: filters (guardrail, event, decision, policy), passes only on
request, aligned columns, colour that never lets a record's own text reach the terminal raw."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from proxy.commands.tail import Filter, brief
from tests.edge.test_policy_reload import ask
from tests.fakes.faulty import poll
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import ROOT

TOKEN = "ops-token-tail"
POLICY = """
[[stream_guardrails]]
id = "no-zebra"
kind = "regex"
patterns = ["zebra"]
action = "replace"

[[stream_guardrails]]
id = "note-giraffe"
kind = "regex"
patterns = ["giraffe"]
action = "log"
"""


def _tail(proxy: ProxyServer, upstream: FakeUpstream, texts: list[str], *args: str) -> list[str]:
    tail = subprocess.Popen([sys.executable, "-m", "proxy", "tail", "--url", proxy.url, "--token", TOKEN, *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert poll(lambda: proxy.app.feed.subscribers == 1, 20.0)
    for text in texts:
        upstream.queue(Reply(text=text))
        ask(proxy.url, headers={"x-guardproxy-token": TOKEN})
    out, err = tail.communicate(timeout=30)
    assert tail.returncode == 0, err
    return out.splitlines()


@pytest.fixture
def proxy(upstream: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream.url, POLICY, auth_token=TOKEN) as server:
        yield server


def test_passes_are_hidden_unless_asked_for(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    lines = _tail(proxy, upstream, ["a giraffe here", "a zebra there"], "--limit", "1")
    assert len(lines) == 1 and "no-zebra" in lines[0] and "replace" in lines[0]
    both = _tail(proxy, upstream, ["a giraffe here", "a zebra there"], "--limit", "2", "--passes")
    assert "note-giraffe" in both[0] and "log" in both[0] and "no-zebra" in both[1]


def test_filters_by_guardrail_decision_and_policy(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    lines = _tail(proxy, upstream, ["a zebra there", "a giraffe here"], "--limit", "1", "--guardrail", "note-giraffe",
                  "--passes")
    assert "note-giraffe" in lines[0]
    lines = _tail(proxy, upstream, ["a giraffe here", "a zebra there"], "--limit", "1", "--decision", "log")
    assert "note-giraffe" in lines[0]
    lines = _tail(proxy, upstream, ["a zebra there"], "--limit", "1", "--policy", "default")
    assert "default" in lines[0] and "no-zebra" in lines[0]


def test_colour_marks_the_decision_and_never_a_records_own_text() -> None:
    record = {"ts": "2026-12-05T10:00:00.123456Z", "event": "tool_call.assessed", "rule": "egress",
              "reason_code": "egress_not_allowed", "decision": "block", "request_id": "r1",
              "tool": "Bash\x1b]0;pwned\x07\x1b[2K", "policy_name": "strict"}
    shown = brief(record, colour=True)
    assert "\x1b[31mblock" in shown
    assert shown.count("\x1b") == 2  # the colour's start and reset, nothing from the tool name
    assert "\\u001b]0;pwned" in shown and "strict" in shown
    assert "\x1b" not in brief(record, colour=False)
    assert Filter().shows(record) and not Filter(policies=["default"]).shows(record)
    assert not Filter().shows({**record, "decision": "allow"})
    assert Filter(passes=True).shows({**record, "decision": "allow"})
