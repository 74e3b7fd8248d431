"""Proxy CPU per request on the unary path, in process, without sockets (``python -m bench.request_cost``).

One ``Exchange`` per request, end to end (routing, policy choice, body parse, guard setup, the
answer's checks, the reply), against an upstream that answers at once from memory and a client
``send`` that drops what it gets: what is left is what guardproxy itself spends per request, without
uvicorn's HTTP parsing or aiohttp's client (which the bare relay pays too). Bodies: the bench's
``sys`` (180-character system prompt) and ``agent`` (15 KB system prompt, eight tools, 50 KB of
history) requests, the same body every time, and ``agent-grow``: that agent's conversation turn by
turn (``request_bodies``: 20 turns, each a tool call and its result longer, then again from turn
1). One at a time, and 32 at once (the upstream yields to the event loop before it answers, so the
requests interleave as they do under load: what one request leaves for the cycle collector is paid
there). Median of rounds, µs of this process's CPU time per request; guardrails off (gp-off) and the
default policy (gp-default) side by side.

``--cold``: one request at a time, gp-off and gp-default in turn, with the caches evicted before
each (2 MB of memory touched and some unrelated Python run, as the upstream's wait, the client and
the other processes leave them on a shared machine); the median wall time per request. Through
sockets at one request at a time, guardproxy's added latency is nearer this cold figure than the
warm one: with this eviction the answer's decode and checks (``Turn.on_body``, agent request) took
89 µs against 17 warm, and 97 in a live proxy at c=1 (stage timestamps); which is why fewer
bytecodes did not shrink the c=1 figures in proportion. How deep a live wait evicts is a guess:
whole requests read higher here than through sockets (agent: ~180 µs added against ~150)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from bench.common import completion_body, request_bodies
from config.settings import Settings
from proxy.drive.services import Services
from proxy.edge.app import create_app
from proxy.edge.exchange import Exchange

MODELS = {"sys": "bench-sys", "agent": "bench-agent", "agent-grow": "bench-agent-grow"}
YIELDS = 3
"""Turns of the event loop the upstream takes to answer (other requests run meanwhile)."""


class _Answer:
    """What ``Upstream.request`` returns, answered from memory."""

    def __init__(self, body: bytes) -> None:
        self.status = 200
        self.headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        self.content_length = len(body)
        self.content_type = "application/json"
        self._body = body

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        await asyncio.sleep(0)
        yield self._body

    def arrived_whole(self) -> bytes | None:
        return self._body  # a small answer arrives whole with its head, as from ``proxy.upstream.http1``

    async def read(self) -> bytes:
        return self._body

    async def read_at_most(self, most: int) -> bytes | None:
        return self._body if len(self._body) <= most else None

    def close(self) -> None:
        pass


class _Upstream:
    def __init__(self, body: bytes) -> None:
        self.bases = {"openai": "http://upstream", "anthropic": "http://upstream", "gemini": "http://upstream"}
        self._body = body

    async def request(self, method: str, url: str, headers: Any, body: bytes | None, *, decode: bool = False) -> Any:
        for _ in range(YIELDS):
            await asyncio.sleep(0)
        return _Answer(self._body)

    def send_now(self, method: str, url: str, headers: Any, body: bytes | None) -> Any:
        return self  # sent at once (``proxy.upstream.forwarding.Upstream.send_now``); ``answered`` waits for it

    async def answered(self, sent: Any, *, decode: bool = False) -> Any:
        return await self.request("POST", "", (), None)


async def _drop(message: Any) -> None:
    return None


def _scope(body: bytes) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
            "query_string": b"", "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                                             (b"authorization", b"Bearer sk-bench"),
                                             (b"content-length", str(len(body)).encode())]}


async def _per_request_us(services: Services, bodies: list[bytes], n: int, concurrency: int = 1) -> float:
    scopes = [_scope(body) for body in bodies]

    async def one_after_another() -> None:
        for turn in range(n // concurrency):
            k = turn % len(bodies)
            await Exchange(services, scopes[k], bodies[k], _drop).run()

    t0 = time.process_time()
    await asyncio.gather(*[one_after_another() for _ in range(concurrency)])
    return (time.process_time() - t0) / (n // concurrency * concurrency) * 1e6


def _services(enabled: bool, model: str) -> Services:
    services = create_app(Settings(guardrails_enabled=enabled)).services
    services.upstream = _Upstream(completion_body(model))  # type: ignore[assignment]
    return services


async def _run(rounds: int, n: int) -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # no request log lines
    print("| request | concurrent | gp-off µs | gp-default µs | added µs |")
    print("|:---|---:|---:|---:|---:|")
    for kind, model in MODELS.items():
        body = request_bodies(model, stream=False)
        off, on = _services(False, model), _services(True, model)
        for s in (off, on):
            await _per_request_us(s, body, 64, 32)  # warm: caches, first-turn prompt indexes
        gc.freeze()  # as the app does once started (``GuardProxy._lifespan``)
        for concurrency in (1, 32):
            times: dict[str, list[float]] = {"off": [], "on": []}
            for _ in range(rounds):
                times["off"].append(await _per_request_us(off, body, n, concurrency))
                times["on"].append(await _per_request_us(on, body, n, concurrency))
            a, b = statistics.median(times["off"]), statistics.median(times["on"])
            print(f"| {kind} | {concurrency} | {a:,.1f} | {b:,.1f} | {b - a:,.1f} |")


_EVICT = bytearray(2 * 1024 * 1024)
_UNRELATED = [json.dumps({"a": list(range(50)), "b": {str(i): i for i in range(50)}}) for _ in range(100)]


def _evict() -> None:
    """Push this process's data and code out of the CPU's caches, as a wait on the network does."""
    for i in range(0, len(_EVICT), 64):
        _EVICT[i] ^= 1
    for text in _UNRELATED:
        json.loads(text)


async def _run_cold(n: int) -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    print("| request | gp-off µs, caches cold | gp-default µs, caches cold | added µs |")
    print("|:---|---:|---:|---:|")
    for kind, model in MODELS.items():
        bodies = request_bodies(model, stream=False)
        contenders = {"off": _services(False, model), "on": _services(True, model)}
        for s in contenders.values():
            await _per_request_us(s, bodies, 64, 1)
        gc.freeze()
        scopes = [_scope(body) for body in bodies]
        times: dict[str, list[float]] = {"off": [], "on": []}
        for turn in range(n):
            k = turn % len(bodies)
            for name in ("off", "on") if turn % 2 else ("on", "off"):
                _evict()
                t0 = time.perf_counter()
                await Exchange(contenders[name], scopes[k], bodies[k], _drop).run()
                times[name].append(time.perf_counter() - t0)
        a, b = (statistics.median(times[name]) * 1e6 for name in ("off", "on"))
        print(f"| {kind} | {a:,.1f} | {b:,.1f} | {b - a:,.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.request_cost", description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("-n", type=int, default=320, help="requests per round (with --cold: per contender)")
    parser.add_argument("--cold", action="store_true", help="one at a time, caches evicted before each request")
    args = parser.parse_args()
    asyncio.run(_run_cold(args.n * 2) if args.cold else _run(args.rounds, args.n))


if __name__ == "__main__":
    main()
