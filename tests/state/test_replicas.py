"""Two guardproxy processes behind a round-robin balancer: consecutive turns of one conversation land
on different replicas and every decision comes out as if one proxy had seen it all, because the
conversation itself carries the session (read-before-write, feedback rounds, egress grants)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.apis import raw_call
from tests.fakes.balancer import RoundRobin
from tests.fakes.process import ProxyProcess
from tests.fakes.upstream import FakeUpstream, Reply
from tests.tools.test_tools_served import read_history


def test_any_replica_serves_any_turn(tmp_path: Path, upstream: FakeUpstream) -> None:
    ws = tmp_path / "workspace"
    (ws / "src").mkdir(parents=True)
    target = ws / "src" / "app.py"
    target.write_text("print('hello')\n")
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[tools]\nworkspace_root = "{ws}"\negress_allow = ["api.github.com"]\n'
                      'on_block = "feedback"\nmax_feedback_rounds = 2\n')
    env = {"GUARDPROXY_POLICY": str(policy)}
    edit = ("Edit", {"file_path": str(target), "old_string": "hello", "new_string": "bye"})
    read = ("Read", {"file_path": str(target)})
    fetch = ("WebFetch", {"url": "https://docs.python.org/3/", "prompt": "read"})
    with ProxyProcess(upstream.url, **env) as a, ProxyProcess(upstream.url, **env) as b, \
            RoundRobin([a.port, b.port]) as lb:
        versions = {httpx.get(p.url + "/readyz").json()["policy_version"] for p in (a, b)}
        assert len(versions) == 1  # same policy, same version on both replicas

        # Turn 1 (replica A): an edit before any read is blocked and fed back; the model reads instead.
        upstream.queue(Reply(text="", tool_calls=[edit]), Reply(text="", tool_calls=[read]))
        t1 = raw_call(lb.url, "chat", stream=True)
        assert b'"Read"' in t1.raw and b'"Edit"' not in t1.raw
        assert len(upstream.seen) == 2  # one feedback round, inside the turn
        fed_back = json.dumps(upstream.seen[1].body)
        assert '"Edit"' in fed_back and '"role": "tool"' in fed_back  # the blocked call and its rationale

        # Turn 2 (replica B): the history now holds the read, so the same edit passes untouched.
        upstream.queue(Reply(text="Editing.", tool_calls=[edit]))
        t2 = raw_call(lb.url, "chat", stream=True, history=read_history("chat", str(target)))
        assert t2.raw == upstream.expected_stream_bytes("chat", Reply(text="Editing.", tool_calls=[edit]), "m")

        # Turn 3 (replica A): a fetch outside the allowlist is blocked; the feedback rounds run out.
        upstream.queue(*[Reply(text="", tool_calls=[fetch]) for _ in range(3)])
        t3 = raw_call(lb.url, "chat", stream=True)
        assert b"guardproxy blocked the tool call WebFetch" in t3.raw

        # Turn 4 (replica B): the user grants the host for the session (a header on each request).
        upstream.queue(Reply(text="Fetching.", tool_calls=[fetch]))
        t4 = raw_call(lb.url, "chat", stream=True, headers={"x-guardproxy-egress-grant": "docs.python.org"})
        assert t4.raw == upstream.expected_stream_bytes("chat", Reply(text="Fetching.", tool_calls=[fetch]), "m")

        assert lb.chosen[:4] == [a.port, b.port, a.port, b.port]  # each turn on the other replica
