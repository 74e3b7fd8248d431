"""Soak: N minutes of mixed traffic through the proxy (all four APIs, streaming and not, with faults
mixed in), reporting errors, RSS and open fds over time. Not part of the test suite.

    .venv/bin/python -m bench.soak --minutes 10 --concurrency 64

It exits 1 when an unexpected error happened or RSS / fds kept growing (the last third of the run
above the middle third by more than ``--rss-slack-mb`` / ``--fd-slack``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import time
from collections import Counter
from typing import Any

import aiohttp

from tests.fakes.faulty import APIS, fd_count, headers_for, request_for, task_count
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


SCENARIOS = ["ok"] * 14 + ["secret", "status429", "reset", "error_frame", "split"]


def reply_for(kind: str) -> Reply:
    text = "soak words " * random.randint(1, 40)
    if kind == "secret":
        return Reply(text=text + " AKIAQ7XR4K2MZT9BWP3N " + text)
    if kind == "status429":
        return Reply(status=429)
    if kind == "reset":
        return Reply(text=text, break_after_frames=3)
    if kind == "error_frame":
        return Reply(text=text, error_frame_after=3)
    if kind == "split":
        return Reply(text=text, split_bytes=7)
    return Reply(text=text)


async def worker(session: aiohttp.ClientSession, base: str, upstream: FakeUpstream, end: float,
                 stats: Counter[str]) -> None:
    while time.monotonic() < end:
        api = random.choice(APIS)
        stream = api == "gemini_array" or random.random() < 0.8
        kind = random.choice(SCENARIOS)
        reply = reply_for(kind)
        upstream.queue(reply)  # order across workers does not matter: every check below is shape-only
        path, body = request_for(api, stream=stream)
        try:
            async with session.post(base + path, json=body, headers=headers_for(api)) as r:
                raw = await r.read()
                stats[f"status_{r.status}"] += 1
                if r.status == 500 or b"Traceback" in raw:
                    stats["unexpected"] += 1
                    print("unexpected:", api, kind, r.status, raw[:200], file=sys.stderr)
        except (TimeoutError, aiohttp.ClientError) as exc:
            # A reset upstream mid-stream may end a passthrough response abruptly; anything else counts.
            stats[f"client_{type(exc).__name__}"] += 1
        stats["requests"] += 1


async def run(args: argparse.Namespace, proxy: ProxyServer, upstream: FakeUpstream) -> dict[str, Any]:
    stats: Counter[str] = Counter()
    samples: list[dict[str, float]] = []
    t0 = time.monotonic()
    end = t0 + args.minutes * 60
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=60)) as session:
        tasks = [asyncio.create_task(worker(session, proxy.url, upstream, end, stats))
                 for _ in range(args.concurrency)]
        while time.monotonic() < end:
            await asyncio.sleep(min(args.sample_s, max(0.0, end - time.monotonic())))
            upstream.seen.clear()  # the fake records every request; that is not the proxy's memory
            s = {"t_s": round(time.monotonic() - t0, 1), "requests": stats["requests"],
                 "unexpected": stats["unexpected"], "rss_mb": round(rss_mb(), 1), "fds": fd_count(),
                 "proxy_tasks": task_count(proxy)}
            samples.append(s)
            print(json.dumps(s), flush=True)
        await asyncio.gather(*tasks)
    return {"stats": dict(stats), "samples": samples}


def growth(samples: list[dict[str, float]], key: str) -> float:
    if len(samples) < 3:
        return 0.0
    third = len(samples) // 3
    mid = max(s[key] for s in samples[third:2 * third])
    last = max(s[key] for s in samples[2 * third:])
    return last - mid


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--sample-s", type=float, default=10.0)
    p.add_argument("--rss-slack-mb", type=float, default=50.0)
    p.add_argument("--fd-slack", type=int, default=4 * 64)
    args = p.parse_args(argv)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    upstream = FakeUpstream().start()
    try:
        with ProxyServer(upstream.url, upstream_read_timeout_s=10.0) as proxy:
            result = asyncio.run(run(args, proxy, upstream))
    finally:
        upstream.stop()
    rss_growth, fd_growth = growth(result["samples"], "rss_mb"), growth(result["samples"], "fds")
    summary = {**result["stats"], "rss_growth_last_third_mb": rss_growth, "fd_growth_last_third": fd_growth}
    print(json.dumps({"summary": summary}), flush=True)
    ok = (result["stats"].get("unexpected", 0) == 0 and rss_growth <= args.rss_slack_mb
          and fd_growth <= args.fd_slack)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
