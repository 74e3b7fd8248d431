"""A finished request's objects are freed by reference counting, not left to the cycle collector.

A reference cycle among one request's objects (the turn machine holding a bound method of its driver,
a lane guard's callback holding its owner) keeps all of them, the decoded request body included,
alive until a collection of the oldest generation finds them. At 32 concurrent agent-sized requests
(a 66 KB body each) that collector cost more CPU than the guardrails themselves
(``bench/request_cost.py``). Every API, streamed and not, with stream checks, a tool call assessed
and a trip that re-asks upstream: nothing of ``proxy``, ``guardrails`` or ``config`` may be cyclic
garbage once the request is done.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.adversarial import SECRET
from tests.apis import APIS, raw_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

POLICY = """
[defaults]
holdback_chars = 16

[[stream_guardrails]]
id = "leak"
kind = "canary"
min_chars = 20
action = "replace"

[[stream_guardrails]]
id = "no-secrets"
kind = "secrets"
action = "retry"
max_attempts = 1

[tools]
workspace_root = "/workspace"
"""
OWN_PACKAGES = ("proxy", "guardrails", "config")


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def _idle(p: ProxyServer) -> None:
    """Wait until the proxy's exchanges have all returned (the client may have its last byte first)."""
    end = time.monotonic() + 5
    while p.app._active and time.monotonic() < end:
        time.sleep(0.005)


def _cyclic_garbage(p: ProxyServer, requests: Iterator[None]) -> Counter[str]:
    """Our own objects that only the cycle collector would have freed, while ``requests`` ran."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in requests:
            pass
        _idle(p)
        gc.collect()
        return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage
                       if type(o).__module__.split(".")[0] in OWN_PACKAGES)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_guarded_request_leaves_no_reference_cycles(proxy: ProxyServer, upstream: FakeUpstream, api: str,
                                                      stream: bool) -> None:
    def requests() -> Iterator[None]:
        upstream.queue(Reply(text="A plain answer, nothing to see here."))
        assert raw_call(proxy.url, api, stream=stream).status == 200
        yield None
        upstream.queue(Reply(tool_calls=[("read_file", {"file_path": "/workspace/a.txt"})]))
        assert raw_call(proxy.url, api, stream=stream).status == 200
        yield None
        upstream.queue(Reply(text=f"the key is {SECRET} ok"), Reply(text="Corrected."))
        assert raw_call(proxy.url, api, stream=stream).status == 200
        yield None

    raw_call(proxy.url, api, stream=stream)  # warm: caches filled on the first request are not garbage
    _idle(proxy)
    assert _cyclic_garbage(proxy, requests()) == Counter()
