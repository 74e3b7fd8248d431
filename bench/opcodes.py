"""Bytecodes the proxy runs per request and per streamed frame, in process (``python -m bench.opcodes``).

Time on a shared two-core VM swings by a third from one minute to the next; the number of Python
bytecodes a request executes does not. This counts them with a tracer (``sys.settrace`` with
``f_trace_opcodes``), guardrails off (gp-off) against the default policy (gp-default), on the bench's
own requests: ``sys`` and ``agent`` non-streaming (``bench.request_cost``'s in-memory upstream and
client), and a 200-delta ``sys`` stream read one frame at a time. It prints the totals and the
functions where gp-default adds the most. A bytecode is not a fixed cost (a C call such as a JSON
decode or a regex scan counts as one), so read it beside ``bench.request_cost``'s µs: it tells
which Python layers a change removed, not how fast the C under them runs.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
from collections.abc import AsyncIterator, Callable
from types import FrameType
from typing import Any

from bench.common import request_bodies, stream_frames
from bench.request_cost import _drop, _scope, _services
from proxy.edge.exchange import Exchange

Counts = collections.Counter[str]


def _where(frame: FrameType) -> str:
    code = frame.f_code
    path = code.co_filename.split("site-packages/")[-1]
    for root in sys.path:
        if root and path.startswith(root + "/"):
            path = path[len(root) + 1:]
            break
    if code.co_filename == "<string>":  # a dataclass's generated __init__: name its class
        return f"<init of {type(frame.f_locals.get('self')).__name__}>"
    return f"{path}:{code.co_name}"


def _tracer(counts: Counts) -> Callable[[FrameType, str, Any], Any]:
    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            counts[_where(frame)] += 1
        return trace
    return trace


class _Stream:
    """A streaming answer read one frame per read (a paced upstream)."""

    def __init__(self, frames: list[bytes]) -> None:
        self.status, self.content_length, self.content_type = 200, None, "text/event-stream"
        self.headers = [("content-type", "text/event-stream")]
        self._frames = frames

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        for frame in self._frames:
            await asyncio.sleep(0)
            yield frame

    def arrived_whole(self) -> bytes | None:
        return None  # a stream arrives frame by frame

    async def read(self) -> bytes:
        return b"".join(self._frames)

    async def read_at_most(self, most: int) -> bytes | None:
        whole = b"".join(self._frames)
        return whole if len(whole) <= most else None

    def close(self) -> None:
        pass


class _StreamingUpstream:
    def __init__(self, frames: list[bytes]) -> None:
        self.bases = {"openai": "http://upstream", "anthropic": "http://upstream", "gemini": "http://upstream"}
        self._frames = frames

    async def request(self, method: str, url: str, headers: Any, body: bytes | None, *, decode: bool = False) -> Any:
        await asyncio.sleep(0)
        return _Stream(self._frames)

    def send_now(self, method: str, url: str, headers: Any, body: bytes | None) -> Any:
        return self

    async def answered(self, sent: Any, *, decode: bool = False) -> Any:
        return await self.request("POST", "", (), None)


async def _count(enabled: bool, model: str, stream: bool, n: int) -> Counts:
    services = _services(enabled, model)
    if stream:
        services.upstream = _StreamingUpstream(stream_frames(model))  # type: ignore[assignment]
    bodies = request_bodies(model, stream=stream)
    scopes = [_scope(b) for b in bodies]
    for k in range(8):  # warm: caches, first-turn indexes, templates
        await Exchange(services, scopes[k % len(bodies)], bodies[k % len(bodies)], _drop).run()
    counts: Counts = collections.Counter()
    sys.settrace(_tracer(counts))
    try:
        for k in range(n):
            await Exchange(services, scopes[k % len(bodies)], bodies[k % len(bodies)], _drop).run()
    finally:
        sys.settrace(None)
    return counts


def _report(title: str, off: Counts, on: Counts, per: float, top: int) -> None:
    total_off, total_on = sum(off.values()) / per, sum(on.values()) / per
    print(f"\n## {title}: gp-off {total_off:,.0f}, gp-default {total_on:,.0f}, added {total_on - total_off:,.0f}\n")
    print("| added | gp-default | gp-off | where |")
    print("|---:|---:|---:|:---|")
    added = sorted(set(off) | set(on), key=lambda k: off[k] - on[k])
    for key in added[:top]:
        print(f"| {(on[key] - off[key]) / per:,.1f} | {on[key] / per:,.1f} | {off[key] / per:,.1f} | `{key}` |")


async def _main(n: int, top: int) -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # no request log lines
    for kind, model in (("sys", "bench-sys"), ("agent", "bench-agent")):
        off, on = await _count(False, model, False, n), await _count(True, model, False, n)
        _report(f"bytecodes per `{kind}` request", off, on, n, top)
    model = "bench-sys-d200-p1"
    frames = len(stream_frames(model))
    off, on = await _count(False, model, True, 2), await _count(True, model, True, 2)
    _report(f"bytecodes per frame of a {frames}-frame `sys` stream", off, on, 2 * frames, top)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.opcodes", description=__doc__)
    parser.add_argument("-n", type=int, default=64, help="requests counted per contender")
    parser.add_argument("--top", type=int, default=25, help="functions listed")
    args = parser.parse_args()
    asyncio.run(_main(args.n, args.top))


if __name__ == "__main__":
    main()
