"""The load driver: an asyncio aiohttp client in its own process, driven by JSON lines on stdin.

``python -m bench.driver`` reads one command per line and answers one JSON line per command, so one
warm process serves a whole run (no interpreter start-up inside a measurement). Every loop is bounded
in count and in time; every target is a loopback URL handed over by ``bench.run``.

Commands (``op``):
- ``load``: closed loop, ``concurrency`` workers for ``duration`` s after ``warmup`` s; latency
  percentiles, req/s, the server's CPU per request (``cpu_pid``), bodies verified.
- ``streams``: ``count`` streams at ``concurrency`` (capped at ``time_cap`` s); time to first token,
  total time, completion rate, bodies verified, and with ``cpu_pid`` the server's utime+stime per
  delta over the whole run.
- ``cpu``: ``count`` streams one after another; the server's utime+stime per delta.
- ``hold``: ``n`` streams opened at once (or ``batch`` at a time, each batch open before the next)
  and kept open; the server's VmRSS before and while open.
- ``first_token``: ``count`` rounds of one stream to each of ``urls`` in turn, one at a time; time
  to first token per contender, and each one's difference from the bare relay's in the same round.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bench.common import (
    completion_body,
    content_for,
    install_uvloop,
    parse_model,
    proc_cpu_s,
    proc_rss_kib,
    raise_fd_limit,
    request_bodies,
    request_body,
    stream_frames,
)

MASTER_KEY = "sk-bench-master"
_HEADERS = {"authorization": f"Bearer {MASTER_KEY}", "content-type": "application/json"}
_FIRST_CONTENT = re.compile(rb'"content":"[^"]')


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s) + 0.5) - 1))]


def ms(values: list[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for q in (50, 90, 99):
        v = pct(values, q)
        out[f"p{q}_ms"] = None if v is None else round(v * 1000, 3)
    out["mean_ms"] = round(statistics.fmean(values) * 1000, 3) if values else None
    return out


def sse_content(raw: bytes) -> str:
    parts = []
    for line in raw.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            try:
                for c in json.loads(line[6:]).get("choices") or []:
                    parts.append((c.get("delta") or {}).get("content") or "")
            except ValueError:
                return "<unparseable>"
    return "".join(parts)


class Checker:
    """``bytes``: the body equals what the upstream sent. ``content``: the text does (LiteLLM re-encodes)."""

    def __init__(self, model: str, stream: bool, mode: str) -> None:
        self.mode, self.stream = mode, stream
        self.expected = b"".join(stream_frames(model)) if stream else completion_body(model)
        self.text = content_for(parse_model(model))

    def ok(self, body: bytes) -> bool:
        if self.mode == "bytes":
            return body == self.expected
        if self.stream:
            return body.rstrip().endswith(b"data: [DONE]") and sse_content(body) == self.text
        try:
            return bool(json.loads(body)["choices"][0]["message"]["content"] == self.text)
        except (ValueError, KeyError, IndexError, TypeError):
            return False


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)
    ok: int = 0
    verified: int = 0
    errors: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    done_at: list[float] = field(default_factory=list)


async def one(session: aiohttp.ClientSession, url: str, body: bytes, stream: bool, check: Checker,
              tally: Tally, record: bool) -> None:
    t0 = time.perf_counter()
    first: float | None = None
    try:
        async with session.post(url, data=body, headers=_HEADERS) as resp:
            if not stream:
                raw = await resp.read()
            else:
                chunks: list[bytes] = []
                async for chunk in resp.content.iter_any():
                    chunks.append(chunk)
                    if first is None and _FIRST_CONTENT.search(b"".join(chunks[-2:])):
                        first = time.perf_counter()
                raw = b"".join(chunks)
            status = resp.status
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        tally.errors += 1
        key = type(exc).__name__
        tally.statuses[key] = tally.statuses.get(key, 0) + 1
        return
    t1 = time.perf_counter()
    tally.done_at.append(t1)
    tally.statuses[str(status)] = tally.statuses.get(str(status), 0) + 1
    if not record:
        return
    if status == 200:
        tally.ok += 1
        tally.verified += check.ok(raw)
    else:
        tally.errors += 1
    tally.latencies.append(t1 - t0)
    if first is not None:
        tally.ttft.append(first - t0)


def _session(timeout: float) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False),
                                 timeout=aiohttp.ClientTimeout(total=timeout), auto_decompress=False)


async def op_load(cmd: dict[str, Any]) -> dict[str, Any]:
    url, model, stream = cmd["url"], cmd["model"], bool(cmd.get("stream", False))
    conc, duration, warmup = int(cmd["concurrency"]), float(cmd["duration"]), float(cmd.get("warmup", 0.5))
    max_requests = int(cmd.get("max_requests", 200_000))
    check, bodies, tally = Checker(model, stream, cmd.get("verify", "bytes")), request_bodies(model, stream), Tally()
    pid = cmd.get("cpu_pid")
    issued = 0
    async with _session(float(cmd.get("timeout", 30))) as session:
        t_warm = time.perf_counter() + warmup
        t_end = t_warm + duration

        async def worker() -> None:
            nonlocal issued
            turn = 0  # each worker is one client: its own conversation when the model grows one
            while time.perf_counter() < t_end and issued < max_requests:
                issued += 1
                body = bodies[turn % len(bodies)]
                turn += 1
                await one(session, url, body, stream, check, tally, time.perf_counter() >= t_warm)

        workers = [asyncio.ensure_future(worker()) for _ in range(conc)]
        await asyncio.sleep(max(0.0, t_warm - time.perf_counter()))
        cpu0 = proc_cpu_s(pid) if pid else None
        await asyncio.sleep(max(0.0, t_end - time.perf_counter()))
        cpu1 = proc_cpu_s(pid) if pid else None
        done_in_window = sum(1 for t in tally.done_at if t_warm <= t <= t_end)
        _, late = await asyncio.wait(workers, timeout=float(cmd.get("timeout", 30)))
        for w in late:
            w.cancel()
    out: dict[str, Any] = {"requests": len(tally.latencies), "ok": tally.ok, "verified": tally.verified,
                           "errors": tally.errors, "statuses": tally.statuses,
                           "rps": round(done_in_window / duration, 1), **ms(tally.latencies)}
    if cpu0 is not None and cpu1 is not None and done_in_window:
        out["server_cpu_ms_per_req"] = round((cpu1 - cpu0) * 1000 / done_in_window, 4)
        out["server_cpu_util"] = round((cpu1 - cpu0) / duration, 3)
    return out


async def op_streams(cmd: dict[str, Any]) -> dict[str, Any]:
    url, model = cmd["url"], cmd["model"]
    conc, count, cap = int(cmd["concurrency"]), int(cmd["count"]), float(cmd.get("time_cap", 30))
    check, body, tally = Checker(model, True, cmd.get("verify", "bytes")), request_body(model, True), Tally()
    issued = 0
    pid = cmd.get("cpu_pid")
    t0 = time.perf_counter()
    cpu0 = proc_cpu_s(int(pid)) if pid else None
    async with _session(cap) as session:

        async def worker() -> None:
            nonlocal issued
            while issued < count and time.perf_counter() - t0 < cap:
                issued += 1
                await one(session, url, body, True, check, tally, True)

        workers = [asyncio.ensure_future(worker()) for _ in range(conc)]
        _, late = await asyncio.wait(workers, timeout=cap + 5)
        for w in late:
            w.cancel()
    wall = time.perf_counter() - t0
    cpu1 = proc_cpu_s(int(pid)) if pid else None
    ttft = ms(tally.ttft)
    out: dict[str, Any] = {"streams": count, "issued": issued, "completed": tally.ok, "verified": tally.verified,
                           "errors": tally.errors, "statuses": tally.statuses, "wall_s": round(wall, 3),
                           "completion_rate": round(tally.ok / count, 4),
                           "ttft": ttft, "total": ms(tally.latencies)}
    deltas = tally.ok * parse_model(model).deltas
    if cpu0 is not None and cpu1 is not None and deltas:
        out["cpu_s"] = round(cpu1 - cpu0, 3)
        out["us_per_delta"] = round((cpu1 - cpu0) / deltas * 1e6, 3)
    return out


async def op_cpu(cmd: dict[str, Any]) -> dict[str, Any]:
    url, model, count, pid = cmd["url"], cmd["model"], int(cmd["count"]), int(cmd["pid"])
    check, body, tally = Checker(model, True, cmd.get("verify", "bytes")), request_body(model, True), Tally()
    async with _session(float(cmd.get("time_cap", 60))) as session:
        await one(session, url, body, True, check, Tally(), False)  # warm the connection
        t0, cpu0 = time.perf_counter(), proc_cpu_s(pid)
        for _ in range(count):
            await one(session, url, body, True, check, tally, True)
            if time.perf_counter() - t0 > float(cmd.get("time_cap", 60)):
                break
        cpu1, wall = proc_cpu_s(pid), time.perf_counter() - t0
    deltas = len(tally.latencies) * parse_model(model).deltas
    return {"streams": len(tally.latencies), "deltas": deltas, "verified": tally.verified,
            "errors": tally.errors, "cpu_s": round(cpu1 - cpu0, 3), "wall_s": round(wall, 3),
            "us_per_delta": round((cpu1 - cpu0) / max(deltas, 1) * 1e6, 3)}


async def op_hold(cmd: dict[str, Any]) -> dict[str, Any]:
    url, model, n, pid = cmd["url"], cmd["model"], int(cmd["n"]), int(cmd["pid"])
    body = request_body(model, True)
    opened = 0
    all_open, release = asyncio.Event(), asyncio.Event()
    errors: dict[str, int] = {}
    await asyncio.sleep(0.5)
    rss_before = proc_rss_kib(pid)
    t0 = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def hold() -> None:
            nonlocal opened
            try:
                async with session.post(url, data=body, headers=_HEADERS) as resp:
                    seen = b""
                    async for chunk in resp.content.iter_any():
                        seen += chunk
                        if _FIRST_CONTENT.search(seen):
                            break
                    else:
                        raise ValueError("ended before any content")
                    opened += 1
                    if opened == n:
                        all_open.set()
                    await release.wait()
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1

        batch = int(cmd.get("batch", 0)) or n
        tasks: list[asyncio.Future[None]] = []
        deadline = t0 + float(cmd.get("open_timeout", 30))
        for first in range(0, n, batch):
            tasks += [asyncio.ensure_future(hold()) for _ in range(min(batch, n - first))]
            while opened + sum(errors.values()) < len(tasks) and time.perf_counter() < deadline:
                await asyncio.sleep(0.02)
        try:
            await asyncio.wait_for(all_open.wait(), timeout=max(0.1, deadline - time.perf_counter()))
        except TimeoutError:
            pass
        open_s = time.perf_counter() - t0
        samples = []
        for _ in range(4):
            await asyncio.sleep(0.4)
            samples.append(proc_rss_kib(pid))
        still_open = opened
        release.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    rss_open = max(samples)
    return {"n": n, "opened": still_open, "errors": errors, "open_s": round(open_s, 2),
            "rss_before_kib": rss_before, "rss_open_kib": rss_open,
            "kib_per_stream": round((rss_open - rss_before) / max(still_open, 1), 2)}


async def op_first_token(cmd: dict[str, Any]) -> dict[str, Any]:
    """One stream at a time, contenders in turn (the order rotates each round), so no stream waits
    behind another one's start and drift lands on every contender alike. ``extra_ms``: each
    contender's TTFT minus the bare relay's of the same round."""
    urls: dict[str, str] = cmd["urls"]
    model, count = cmd["model"], int(cmd["count"])
    check, body = Checker(model, True, cmd.get("verify", "bytes")), request_body(model, True)
    names = list(urls)
    ttft: dict[str, list[float]] = {n: [] for n in names}
    total: dict[str, list[float]] = {n: [] for n in names}
    extra: dict[str, list[float]] = {n: [] for n in names}
    verified = dict.fromkeys(names, 0)
    async with _session(float(cmd.get("timeout", 30))) as session:
        for name in names:  # a warm connection to each
            await one(session, urls[name], body, True, check, Tally(), False)
        for r in range(count):
            this: dict[str, float] = {}
            for name in names[r % len(names):] + names[:r % len(names)]:
                tally = Tally()
                await one(session, urls[name], body, True, check, tally, True)
                verified[name] += tally.verified
                if tally.ttft:
                    this[name] = tally.ttft[0]
                    total[name] += tally.latencies
            for name, t in this.items():
                ttft[name].append(t)
                if "bare-relay" in this:
                    extra[name].append(t - this["bare-relay"])
    return {name: {"streams": count, "verified": verified[name], "ttft": _spread(ttft[name]),
                   "total": _spread(total[name]), "extra_ms": _spread(extra[name])} for name in names}


async def op_paired(cmd: dict[str, Any]) -> dict[str, Any]:
    """Non-streaming requests one at a time, contenders in turn (the order rotates each round): each
    round's latencies are taken under the same machine state, so the machine's drift, which moves
    whole rounds of ``op_load`` by more than the differences sought at c=1, lands on every contender
    alike. Each contender keeps its own conversation (``request_bodies``: the same body every turn,
    or a growing one). ``extra_ms``: a contender's latency minus ``base``'s of the same round;
    ``p50_diff_ms``: the difference of the two medians (the figure ``op_load`` rounds give)."""
    urls: dict[str, str] = cmd["urls"]
    model, count, base = cmd["model"], int(cmd["count"]), cmd["base"]
    check, bodies = Checker(model, False, cmd.get("verify", "bytes")), request_bodies(model, False)
    names = list(urls)
    lat: dict[str, list[float]] = {n: [] for n in names}
    extra: dict[str, list[float]] = {n: [] for n in names}
    verified = dict.fromkeys(names, 0)
    async with _session(float(cmd.get("timeout", 30))) as session:
        for name in names:  # a warm connection to each, and its first turn (a cold cache) left out
            for body in bodies[:2]:
                await one(session, urls[name], body, False, check, Tally(), False)
        for r in range(count):
            this: dict[str, float] = {}
            for name in names[r % len(names):] + names[:r % len(names)]:
                tally = Tally()
                await one(session, urls[name], bodies[r % len(bodies)], False, check, tally, True)
                verified[name] += tally.verified
                if tally.ok and tally.latencies:
                    this[name] = tally.latencies[0]
            for name, t in this.items():
                lat[name].append(t)
                if base in this:
                    extra[name].append(t - this[base])
    out: dict[str, Any] = {}
    base_p50 = pct(lat[base], 50)
    for name in names:
        p50 = pct(lat[name], 50)
        diff = None if p50 is None or base_p50 is None else round((p50 - base_p50) * 1000, 3)
        out[name] = {"requests": len(lat[name]), "verified": verified[name], "latency": _spread(lat[name]),
                     "extra_ms": _spread(extra[name]), "p50_diff_ms": diff}
    return out


def _spread(values: list[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for q in (25, 50, 75):
        v = pct(values, q)
        out[f"p{q}_ms"] = None if v is None else round(v * 1000, 3)
    return out


OPS = {"load": op_load, "streams": op_streams, "cpu": op_cpu, "hold": op_hold, "first_token": op_first_token,
       "paired": op_paired}


async def serve() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        cmd = json.loads(line)
        try:
            result = await OPS[cmd["op"]](cmd)
        except Exception as exc:  # noqa: BLE001 - reported to the orchestrator, which records it
            result = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def main() -> None:
    raise_fd_limit()
    install_uvloop()
    asyncio.run(serve())


if __name__ == "__main__":
    main()
