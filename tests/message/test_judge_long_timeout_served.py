"""A judge that times out on an answer longer than one judge part (``max_chars``) does not let it
through: a long answer is a cause the content chose (pad the answer until the judge is slow, and it
passes unjudged). The answer is withheld as ``unjudgeable`` unless the policy says
``on_long_timeout = "pass"``; a timeout on a short answer still fails open. Real proxy, fake
upstream whose judge calls hang, the official SDKs as clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apis import APIS, raw_call, sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

JUDGE = """
[[message_guardrails]]
id = "judge"
kind = "llm_judge"
prompt = "Reply: {agent_output} Respond with exactly PASS or VIOLATION."
timeout_s = 0.3
max_chars = 1000
action = "replace"
replacement = "[withheld: not judged]"
"""
SHORT = "A short answer the judge would read in one part."
LONG = "Padding the answer so the judge needs several parts to read it. " * 40  # ~2,600 characters


@pytest.fixture
def slow_judge(upstream_server: FakeUpstream) -> Iterator[FakeUpstream]:
    upstream_server.reset()
    upstream_server.judge_delay_s = 2.0
    yield upstream_server
    upstream_server.judge_delay_s = 0.0


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_a_long_answer_whose_judge_times_out_is_withheld(slow_judge: FakeUpstream, tmp_path: Path, api: str,
                                                         stream: bool) -> None:
    audit = tmp_path / "audit.jsonl"
    with ProxyServer(slow_judge.url, JUDGE, audit_log=str(audit)) as p:
        slow_judge.queue(Reply(text=LONG, deltas=[LONG[i:i + 200] for i in range(0, len(LONG), 200)]))
        seen = sdk_call(p.url, api, stream=stream)
        assert "Padding the answer" not in seen.text
        assert "[withheld: not judged]" in seen.text
        slow_judge.queue(Reply(text=SHORT, deltas=[SHORT]))
        assert sdk_call(p.url, api, stream=stream).text == SHORT  # a short answer: the judge's outage
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    assert any(e.get("reason_code") == "unjudgeable" for e in events)
    assert "timeout" in [e.get("detail") for e in events if e["event"] == "fail_open"]
    assert "Padding" not in audit.read_text()


def test_the_policy_may_let_a_long_answer_pass_on_a_timeout(slow_judge: FakeUpstream) -> None:
    policy = JUDGE + 'on_long_timeout = "pass"\n'
    with ProxyServer(slow_judge.url, policy) as p:
        slow_judge.queue(Reply(text=LONG))
        res = raw_call(p.url, "chat", stream=False)
        assert res.status == 200 and b"Padding the answer" in res.raw
