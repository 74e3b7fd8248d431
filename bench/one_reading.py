"""What refusing repeated keys costs per guarded request (``python -m bench.one_reading``).

``proxy.wire.one_reading.repeated_key`` (msgspec decode + encode, colons counted) beside what a request
already costs to read (the wire's quick view, msgspec's whole decode) and the two alternatives it was
chosen over: the standard library's parser with a hook that sees every pair (exact, slower), and
re-serialising every body from what the proxy read (msgspec decode + encode, no refusal, but new bytes
upstream). Interleaved rounds, median microseconds per body; bounded (ROUNDS x N parses). The quick
view reads a repeated body from its kept reading (``proxy.wire.conversation_delta``), as an agent's
next turn is read: the lower bound of today's cost.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from bench.common import request_body
from proxy.wire.base import JsonBody
from proxy.wire.one_reading import _pairs, repeated_key
from proxy.wire.openai_chat import OpenAIChat

ROUNDS, N = 7, 200


def main() -> None:
    dec, enc, chat = msgspec.json.Decoder(), msgspec.json.Encoder(), OpenAIChat()
    bodies = {"agent request (66 KB)": request_body("bench-agent", True),
              "short chat request": request_body("bench-sys", True)}
    ways: dict[str, Callable[[bytes], Any]] = {
        "quick view (today's read)": lambda b: chat.quick_view(JsonBody(b), stream=True),
        "msgspec whole decode": dec.decode,
        "repeated_key (chosen)": repeated_key,
        "json + pairs hook": lambda b: json.loads(b, object_pairs_hook=_pairs),
        "re-serialise (msgspec)": lambda b: enc.encode(dec.decode(b)),
    }
    gc.collect()
    gc.freeze()  # as the proxy runs (proxy.edge.app): the collector walks only what requests allocate
    for label, body in bodies.items():
        runs: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(ROUNDS):
            for name, fn in ways.items():
                t0 = time.perf_counter()
                for _ in range(N):
                    fn(body)
                runs[name].append((time.perf_counter() - t0) / N * 1e6)
        print(f"\n{label} ({len(body):,} bytes)")
        base = statistics.median(runs["msgspec whole decode"])
        for name, xs in runs.items():
            med = statistics.median(xs)
            print(f"  {name:28s} {med:9.1f} us  {med / base:5.2f}x msgspec decode")


if __name__ == "__main__":
    main()
