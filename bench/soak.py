"""Soak: mixed traffic through the proxy for a bounded time against upstreams that misbehave the way
real ones do, reporting requests, 5xx by cause, stream completeness, RSS and open fds over time.
Not part of the test suite.

    .venv/bin/python -m bench.soak --seconds 90 --concurrency 24

Traffic: the four APIs (Gemini's SSE and JSON-array streams), streamed and not, plain answers, tool
calls, a secret the stream check replaces, and an LLM judge on every answer (a message guardrail
whose side call goes to the request's own upstream). Each request names its scenario in a header
the fake upstream reads, so every outcome is judged against what that upstream did:

- the three upstreams (OpenAI, Anthropic, Gemini bases) close idle keep-alive connections after 1 s,
  3 s and 5 s, and clients pause 0-1.5 s between requests, so pooled connections meet those closes;
- the Anthropic upstream is stopped and started again (twice), its open streams cut;
- some answers are reset mid-stream, stall past the proxy's read timeout, end with the API's
  in-stream error, or are a 429 / 503 the upstream sends.

Judged per request: a 5xx is ``upstream_sent`` (the upstream answered it), ``upstream_down`` (sent
while the Anthropic upstream was restarting), or ``proxy`` (anything else: must be 0); a stream that
answered 200 is ``complete`` (its API's own ending), ``api_error`` (ended with the API's in-stream
error) or ``truncated`` (it just stops: must be 0); an ``api_error`` where the upstream did nothing
wrong is ``unexpected_error`` (must be 0); a request with no answer in 30 s is ``hung`` (must be 0).
It exits 1 when any must-be-0 count is not, or RSS / fds kept growing (the last third of the run
above the middle third by more than ``--rss-slack-mb`` / ``--fd-slack``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import random
import resource
import sys
import threading
import time
from collections import Counter
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.faulty import APIS, fake_api, fd_count, headers_for, request_for, sse_events, task_count
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

SECRET = "AKIAQ7XR4K2MZT9BWP3N"
READ_TIMEOUT_S = 2.0
"""The proxy's upstream read timeout; the stall scenario stalls past it."""
SCENARIOS = (["ok"] * 14 + ["tools"] * 3 + ["secret", "status429", "status503", "reset", "error_frame",
                                              "stall", "split"])
IDLE_CLOSE_S = {"openai": 1.0, "anthropic": 3.0, "gemini": 5.0}

POLICY = """
[defaults]
mode = "interactive"
delivery = "live"

[[stream_guardrails]]
id = "no-secrets"
kind = "secrets"
action = "replace"

[[message_guardrails]]
id = "soak-judge"
kind = "llm_judge"
upstream = "request"
model = "soak-judge"
prompt = "User asked: {user_query}\\nAgent answered: {agent_output}\\nAnswer PASS or VIOLATION."
timeout_s = 3.0
action = "replace"
"""

_scenario: contextvars.ContextVar[str] = contextvars.ContextVar("scenario", default="ok")


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def reply_for(kind: str) -> Reply:
    text = "soak words " * random.randint(1, 30)
    if kind == "secret":
        return Reply(text=text + f" {SECRET} " + text)
    if kind == "tools":
        return Reply(text="Reading it.", tool_calls=[("read_file", {"path": "README.md"})])
    if kind == "status429":
        return Reply(status=429)
    if kind == "status503":
        return Reply(status=503)
    if kind == "reset":
        return Reply(text=text, break_after_frames=3)
    if kind == "error_frame":
        return Reply(text=text, error_frame_after=3, error_message="Overloaded")
    if kind == "stall":
        return Reply(text=text, stall_after_frames=2, stall_s=READ_TIMEOUT_S + 1.0)
    if kind == "split":
        return Reply(text=text, split_bytes=7)
    return Reply(text=text)


class _ByScenario:
    """Stands for the fake's reply queue: the reply of the scenario the request names."""

    def __bool__(self) -> bool:
        return True

    def popleft(self) -> Reply:
        return reply_for(_scenario.get())

    def extend(self, replies: Any) -> None:  # (the fake's ``queue``; unused here)
        pass

    def clear(self) -> None:
        pass


class SoakUpstream(FakeUpstream):
    """The fake upstream, answering each request by the scenario in its ``x-soak-scenario`` header,
    closing idle connections after ``keepalive_timeout`` and stopping abruptly (open answers get
    0.2 s)."""

    shutdown_timeout = 0.2

    def __init__(self, keepalive_s: float, port: int = 0) -> None:
        self.keepalive_timeout = keepalive_s
        super().__init__(port)
        self.replies = _ByScenario()  # type: ignore[assignment]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        _scenario.set(request.headers.get("x-soak-scenario", "ok"))
        return await super()._handle(request)


def stream_outcome(api: str, raw: bytes) -> str:
    """``complete``, ``api_error`` or ``truncated`` (see the module docstring)."""
    try:
        if api == "gemini_array":
            data = json.loads(raw)
            last = data[-1] if isinstance(data, list) and data else {}
            if "error" in last:
                return "api_error"
            return "complete" if last.get("candidates", [{}])[0].get("finishReason") else "truncated"
        if api == "gemini":
            tail = raw.rstrip()
            at = tail.rfind(b"\n")
            last_line = tail[at + 1:]
            if last_line.startswith(b'{"error"'):
                return "api_error"
            events = sse_events(raw)
            last = json.loads(events[-1][1]) if events else {}
            return "complete" if last.get("candidates", [{}])[0].get("finishReason") else "truncated"
        events = sse_events(raw)
        if not events:
            return "truncated"
        name, data = events[-1]
        if api == "chat":
            if data == "[DONE]":
                return "complete"
            return "api_error" if "error" in json.loads(data) else "truncated"
        if api == "anthropic":
            return {"message_stop": "complete", "error": "api_error"}.get(name or "", "truncated")
        return {"response.completed": "complete", "response.incomplete": "complete", "error": "api_error",
                "response.failed": "api_error"}.get(name or "", "truncated")
    except (ValueError, IndexError, KeyError, AttributeError, TypeError):
        return "truncated"


class Restarts:
    """When the Anthropic upstream was down: [start, end) windows on the monotonic clock."""

    def __init__(self) -> None:
        self.windows: list[tuple[float, float]] = []
        self.down_since: float | None = None

    def overlaps(self, t0: float, t1: float) -> bool:
        if self.down_since is not None and t1 >= self.down_since:
            return True
        return any(t0 < end + 0.5 and t1 > start for start, end in self.windows)


async def worker(session: aiohttp.ClientSession, base: str, end: float, stats: Counter[str],
                 restarts: Restarts) -> None:
    while time.monotonic() < end:
        await asyncio.sleep(random.uniform(0.0, 1.5))  # think time: pooled connections idle
        api = random.choice(APIS)
        stream = api == "gemini_array" or random.random() < 0.75
        kind = random.choice(SCENARIOS)
        path, body = request_for(api, stream=stream, text="soak question")
        headers = {**headers_for(api), "x-soak-scenario": kind}
        t0 = time.monotonic()
        stats["requests"] += 1
        try:
            async with session.post(base + path, json=body, headers=headers) as r:
                raw = await r.read()
                status = r.status
        except TimeoutError:
            stats["hung"] += 1
            print("hung:", api, kind, file=sys.stderr)
            continue
        except aiohttp.ClientError as exc:
            stats[f"client_{type(exc).__name__}"] += 1
            stats["truncated"] += 1  # the proxy ended the response without an ending of the API's own
            print("cut:", api, kind, repr(exc), file=sys.stderr)
            continue
        t1 = time.monotonic()
        down = fake_api(api) == "anthropic" and restarts.overlaps(t0, t1)
        stats[f"status_{status}"] += 1
        if b"Traceback" in raw:
            stats["traceback"] += 1
        if status >= 500:
            cause = ("upstream_sent" if kind == "status503" and status == 503
                     else "upstream_down" if down else "proxy")
            stats[f"5xx_{cause}"] += 1
            if cause == "proxy":
                print("5xx:", api, kind, status, raw[:200], file=sys.stderr)
        elif status == 200 and stream:
            outcome = stream_outcome(api, raw)
            stats[f"stream_{outcome}"] += 1
            if outcome == "truncated":
                stats["truncated"] += 1
                print("truncated:", api, kind, raw[-200:], file=sys.stderr)
            elif outcome == "api_error" and kind not in ("reset", "error_frame", "stall") and not down:
                stats["unexpected_error"] += 1
                print("unexpected error:", api, kind, raw[-300:], file=sys.stderr)


def restart_loop(holder: dict[str, SoakUpstream], restarts: Restarts, at: list[float], t0: float) -> None:
    """Stop and start the Anthropic upstream at the given seconds into the run (a thread)."""
    for when in at:
        time.sleep(max(0.0, t0 + when - time.monotonic()))
        old = holder["anthropic"]
        restarts.down_since = time.monotonic()
        old.stop()
        time.sleep(0.5)
        holder["anthropic"] = SoakUpstream(IDLE_CLOSE_S["anthropic"], old.port).start()
        restarts.windows.append((restarts.down_since, time.monotonic()))
        restarts.down_since = None
        print(json.dumps({"restarted": "anthropic", "down_s": round(restarts.windows[-1][1]
                                                                     - restarts.windows[-1][0], 2)}), flush=True)


async def run(args: argparse.Namespace, proxy: ProxyServer, holder: dict[str, SoakUpstream]) -> dict[str, Any]:
    stats: Counter[str] = Counter()
    samples: list[dict[str, float]] = []
    restarts = Restarts()
    t0 = time.monotonic()
    end = t0 + args.seconds
    restarter = threading.Thread(target=restart_loop, daemon=True,
                                 args=(holder, restarts, [args.seconds * 0.4, args.seconds * 0.7], t0))
    restarter.start()
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=30)) as session:
        tasks = [asyncio.create_task(worker(session, proxy.url, end, stats, restarts))
                 for _ in range(args.concurrency)]
        while time.monotonic() < end:
            await asyncio.sleep(min(args.sample_s, max(0.0, end - time.monotonic())))
            for up in holder.values():
                up.seen.clear()  # the fake records every request; that is not the proxy's memory
            s = {"t_s": round(time.monotonic() - t0, 1), "requests": stats["requests"],
                 "rss_mb": round(rss_mb(), 1), "fds": fd_count(), "proxy_tasks": task_count(proxy)}
            samples.append(s)
            print(json.dumps(s), flush=True)
        await asyncio.gather(*tasks)
    restarter.join(10)
    resends = proxy.app.services.upstream._pool.resends if proxy.app.services.upstream._pool else 0
    return {"stats": dict(stats), "samples": samples, "resends": resends}


def growth(samples: list[dict[str, float]], key: str) -> float:
    if len(samples) < 3:
        return 0.0
    third = len(samples) // 3
    mid = max(s[key] for s in samples[third:2 * third])
    last = max(s[key] for s in samples[2 * third:])
    return last - mid


MUST_BE_ZERO = ("5xx_proxy", "truncated", "unexpected_error", "hung", "traceback")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=90.0)
    p.add_argument("--concurrency", type=int, default=24)
    p.add_argument("--sample-s", type=float, default=10.0)
    p.add_argument("--rss-slack-mb", type=float, default=50.0)
    p.add_argument("--fd-slack", type=int, default=4 * 24)
    p.add_argument("--old-pool", action="store_true",
                   help="the upstream pool as it was before #36, for comparison: idle connections kept 15 s, "
                        "no look at an idle socket before reuse, no resend")
    args = p.parse_args(argv)
    extra: dict[str, Any] = {}
    if args.old_pool:
        from proxy.upstream import http1
        http1._Connection.waiting = lambda self: False  # type: ignore[method-assign]
        http1._Connection.replayable = lambda self: False  # type: ignore[method-assign]
        extra["upstream_idle_s"] = 15.0
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    holder = {name: SoakUpstream(s).start() for name, s in IDLE_CLOSE_S.items()}
    try:
        with ProxyServer(holder["openai"].url, POLICY, anthropic_base_url=holder["anthropic"].url,
                         gemini_base_url=holder["gemini"].url, upstream_read_timeout_s=READ_TIMEOUT_S,
                         **extra) as proxy:
            result = asyncio.run(run(args, proxy, holder))
    finally:
        for up in holder.values():
            up.stop()
    stats = result["stats"]
    rss_growth, fd_growth = growth(result["samples"], "rss_mb"), growth(result["samples"], "fds")
    summary = {**stats, "resent_on_a_new_connection": result["resends"],
               "rss_growth_last_third_mb": rss_growth, "fd_growth_last_third": fd_growth}
    print(json.dumps({"summary": summary}), flush=True)
    ok = (all(stats.get(k, 0) == 0 for k in MUST_BE_ZERO) and rss_growth <= args.rss_slack_mb
          and fd_growth <= args.fd_slack)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
