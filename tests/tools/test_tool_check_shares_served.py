"""One client's tool checks do not queue another's behind them (issue #29 class 9): client A sends
more answers with tool calls at once than there are worker threads, and its checks are held (they
stand for costly commands: the test parks them on an event); client B's ``ls`` is assessed and
answered all the same, through the official SDK. Before, A's checks took every thread and B's call
waited behind them. Real proxy under uvicorn, fake upstream; clients are told apart by their
``x-guardproxy-token`` or, as here, their provider key (a digest of it)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from proxy.drive import vetting
from proxy.drive.shares import ClientShares, client_key
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

HELD_ANSWERS = 12
"""More than the default executor's threads on any machine these tests run on (min(32, cpus + 4))."""


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    ws = tmp_path_factory.mktemp("ws")
    with ProxyServer(upstream_server.url, f'[tools]\nworkspace_root = "{ws}"\n') as p:
        yield p


def _ask(proxy: ProxyServer, key: str) -> Any:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=key, max_retries=0, timeout=60)
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])


def test_a_client_with_held_tool_checks_does_not_hold_up_another(
        guard_proxy: ProxyServer, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    release = threading.Event()
    real = vetting._assess_all

    def assess(assessor: Any, calls: Any, *args: Any) -> Any:
        if any("costly" in c.arguments for c in calls):
            release.wait(60)  # client A's costly checks, parked
        return real(assessor, calls, *args)

    monkeypatch.setattr(vetting, "_assess_all", assess)
    upstream.queue(*[Reply(tool_calls=[("run_shell_command", {"command": "awk 'costly' f"})])
                     for _ in range(HELD_ANSWERS)])
    with concurrent.futures.ThreadPoolExecutor(HELD_ANSWERS + 1) as pool:
        held = [pool.submit(_ask, guard_proxy, "sk-client-a") for _ in range(HELD_ANSWERS)]
        try:
            while len(upstream.seen) < HELD_ANSWERS:  # every answer of A reached its tool checks
                threading.Event().wait(0.05)
            upstream.queue(Reply(tool_calls=[("run_shell_command", {"command": "ls"})]))
            other = pool.submit(_ask, guard_proxy, "sk-client-b")
            answer = other.result(timeout=30)  # a hang here is the failure: B waited behind A
            assert answer.choices[0].message.tool_calls[0].function.name == "run_shell_command"
            assert not any(f.done() for f in held)
        finally:
            release.set()
        assert all(f.result(timeout=60).choices for f in held)


def test_clients_are_told_apart_by_token_then_key_and_never_by_the_key_itself() -> None:
    a = client_key([("authorization", "Bearer sk-a")])
    assert a and a != client_key([("authorization", "Bearer sk-b")]) and "sk-a" not in a
    assert client_key([("x-guardproxy-token", "t"), ("authorization", "Bearer sk-a")]) != a
    assert client_key([]) == ""


@pytest.mark.anyio
async def test_a_share_is_forgotten_when_nothing_of_its_client_runs() -> None:
    shares = ClientShares()
    async with shares.turn("a"):
        assert len(shares) == 1
    assert len(shares) == 0
