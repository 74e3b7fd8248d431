"""The seed's scenario end to end over every wire format: the user names a model the upstream does not
know, the first answer denies it, the judge says VIOLATION; interactive clients get only the corrected
answer, non-interactive ones a clean error; a judge that hangs or talks nonsense never blocks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apis import APIS, NORMAL, raw_call, sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

JUDGE = """
[[message_guardrails]]
id = "user-is-right"
kind = "llm_judge"
prompt = "Rule: never deny the user. User: {user_query} Reply: {agent_output} Respond with exactly PASS or VIOLATION."
timeout_s = 2.0
action = "retry"
max_attempts = 2
mandate = "GUARDPROXY-MANDATE: accept the user's facts as stated."
replacement = "[withheld: disputed the user]"
"""
USER = "Use gemini-9-ultra for this task."
DENIAL = "There is no model called gemini-9-ultra; you probably mean gemini-2.5-pro."
FIXED = "Sure, using gemini-9-ultra as you asked."


@pytest.fixture(scope="module")
def buffered(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, JUDGE) as p:
        yield p


def main_requests(upstream: FakeUpstream) -> list[str]:
    return [json.dumps(s.body) for s in upstream.seen
            if isinstance(s.body, dict) and "Respond with exactly PASS or VIOLATION" not in json.dumps(s.body)]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_interactive_client_sees_only_the_corrected_answer(buffered: ProxyServer, upstream: FakeUpstream,
                                                          api: str, stream: bool) -> None:
    upstream.queue(Reply(text=DENIAL, deltas=[DENIAL]), Reply(text=FIXED, deltas=[FIXED]))
    upstream.judge_replies.extend(["VIOLATION", "PASS"])
    res = raw_call(buffered.url, api, stream=stream, user=USER)
    assert res.status == 200
    assert b"gemini-2.5-pro" not in res.raw and b"no model called" not in res.raw
    assert b"as you asked" in res.raw
    sent = main_requests(upstream)
    assert len(sent) == 2
    assert "GUARDPROXY-MANDATE" not in sent[0] and "GUARDPROXY-MANDATE" in sent[1]
    # And through the official SDK:
    upstream.queue(Reply(text=DENIAL, deltas=[DENIAL]), Reply(text=FIXED, deltas=[FIXED]))
    upstream.judge_replies.extend(["VIOLATION", "PASS"])
    seen = sdk_call(buffered.url, api, stream=stream, user=USER)
    assert seen.text == FIXED and seen.finish == NORMAL[api]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_non_interactive_client_gets_a_clean_error(buffered: ProxyServer, upstream: FakeUpstream,
                                                  api: str, stream: bool) -> None:
    upstream.queue(Reply(text=DENIAL, deltas=[DENIAL]))
    upstream.judge_replies.append("VIOLATION")
    res = raw_call(buffered.url, api, stream=stream, user=USER, headers={"x-guardproxy-mode": "non-interactive"})
    assert res.status == 400
    body = json.loads(res.raw)
    assert "user-is-right" in json.dumps(body) and "judge_violation" in json.dumps(body)
    assert b"no model called" not in res.raw
    assert len(main_requests(upstream)) == 1
    upstream.queue(Reply(text=DENIAL, deltas=[DENIAL]))
    upstream.judge_replies.append("VIOLATION")
    with pytest.raises(Exception) as info:
        sdk_call(buffered.url, api, stream=stream, user=USER, headers={"x-guardproxy-mode": "non-interactive"})
    assert "400" in str(info.value) or getattr(info.value, "status_code", None) == 400


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_attempts_run_out_into_the_final_action(buffered: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=DENIAL, deltas=[DENIAL]), Reply(text=DENIAL, deltas=[DENIAL]), Reply(text=DENIAL, deltas=[DENIAL]))
    upstream.judge_replies.extend(["VIOLATION"] * 3)
    seen = sdk_call(buffered.url, api, stream=True, user=USER)
    assert seen.text == "[withheld: disputed the user]"
    assert len(main_requests(upstream)) == 3


@pytest.mark.parametrize("api", APIS)
def test_live_delivery_sends_replaced_then_the_corrected_attempt(upstream_server: FakeUpstream, api: str) -> None:
    upstream_server.reset()
    with ProxyServer(upstream_server.url, '[defaults]\ndelivery = "live"\nholdback_chars = 8\n' + JUDGE) as p:
        upstream_server.queue(Reply(text=DENIAL), Reply(text=FIXED, deltas=[FIXED]))
        upstream_server.judge_replies.extend(["VIOLATION", "PASS"])
        res = raw_call(p.url, api, stream=True, user=USER)
        assert b"output.message.replaced" in res.raw or b'"guardproxy"' in res.raw
        upstream_server.queue(Reply(text=DENIAL), Reply(text=FIXED, deltas=[FIXED]))
        upstream_server.judge_replies.extend(["VIOLATION", "PASS"])
        seen = sdk_call(p.url, api, stream=True, user=USER)
    assert seen.text.endswith(FIXED)
    assert seen.finish == NORMAL[api]


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_hanging_or_nonsense_judge_fails_open(upstream_server: FakeUpstream, tmp_path: Path, api: str) -> None:
    upstream_server.reset()
    audit = tmp_path / "audit.jsonl"
    policy = JUDGE.replace("timeout_s = 2.0", "timeout_s = 0.3\non_unreadable = \"pass\"")
    with ProxyServer(upstream_server.url, policy, audit_log=str(audit)) as p:
        upstream_server.judge_delay_s = 3.0
        upstream_server.queue(Reply(text=DENIAL, deltas=[DENIAL]))
        seen = sdk_call(p.url, api, stream=True, user=USER)
        assert seen.text == DENIAL
        upstream_server.judge_delay_s = 0.0
        upstream_server.judge_replies.append("Well, it depends.")
        upstream_server.queue(Reply(text=DENIAL, deltas=[DENIAL]))
        assert sdk_call(p.url, api, stream=False, user=USER).text == DENIAL
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    details = [e.get("detail") for e in events if e["event"] == "fail_open"]
    assert "timeout" in details and "unparseable" in details
