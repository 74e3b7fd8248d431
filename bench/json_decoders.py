"""Which JSON decoder for the hot path: the standard library, ``orjson`` or ``msgspec``, measured on the
bodies and frames guardproxy actually parses (``python -m bench.json_decoders``).

Inputs: an agent-shaped request (15 KB system prompt, tools, 50 KB history: parsed once per request),
a short chat request, a small chat completion body, and one streamed chat chunk (parsed once per delta).
Each decoder parses each input ``N`` times; the table shows microseconds per parse (median of 5 runs)
and the ratio to the standard library. Decoders that are not installed are skipped.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.common import completion_body, request_body, stream_frames


def _inputs() -> dict[str, bytes]:
    chunk = stream_frames("bench-d20")[3]
    return {"agent request (66 KB)": request_body("bench-agent", False),
            "short chat request": request_body("bench-sys", False),
            "chat completion body": completion_body("bench-d20"),
            "stream chunk (one delta)": chunk[len(b"data: "):].strip()}


def _decoders() -> dict[str, Callable[[bytes], Any]]:
    out: dict[str, Callable[[bytes], Any]] = {"json": json.loads}
    try:
        import orjson
        out["orjson"] = orjson.loads
    except ImportError:
        pass
    try:
        import msgspec
        out["msgspec"] = msgspec.json.decode
    except ImportError:
        pass
    return out


def _time(fn: Callable[[bytes], Any], data: bytes, n: int) -> float:
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(data)
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    decoders = _decoders()
    print("| input | " + " | ".join(f"{d} µs" for d in decoders) + " | " +
          " | ".join(f"{d} vs json" for d in decoders if d != "json") + " |")
    print("|:---|" + "---:|" * (2 * len(decoders) - 1))
    for name, data in _inputs().items():
        n = 200 if len(data) > 10_000 else 20_000
        us = {d: _time(fn, data, n) for d, fn in decoders.items()}
        ratios = [f"{us['json'] / us[d]:.1f}x faster" for d in decoders if d != "json"]
        print(f"| {name} | " + " | ".join(f"{v:.2f}" for v in us.values()) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
