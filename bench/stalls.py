"""The longest event-loop stall, and the memory, each adversarial answer costs the proxy.

``python -m bench.stalls [--out bench/results/stalls.md]``

The proxy runs in this process under uvicorn with the shipped default policy (canary + secrets),
and again with a message check added (a webhook on the upstream that answers pass: delivery is then
buffered, every frame held until the verdict, the worst case for memory held per delta); a
monitor task on its loop sleeps 1 ms at a time and records how late it wakes (the stall every other
stream and ``/healthz`` would see). The adversarial answers come from a small upstream in another
process, and the request is made by ``curl`` in a third, so neither competes for this loop or this
process's GIL. Memory is the process's peak RSS during the input above its RSS before it (the peak is
reset through ``/proc/self/clear_refs`` first; Linux). The target is a stall under 100 ms per input.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

_BASE = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {**_BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _tools(calls: list[tuple[str, str]]) -> bytes:
    frames = [_chunk({"role": "assistant", "content": ""})]
    frames += [_chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                       "function": {"name": n, "arguments": a}}]}) for i, (n, a) in enumerate(calls)]
    return b"".join([*frames, _chunk({}, "tool_calls"), b"data: [DONE]\n\n"])


def _deltas(pieces: list[str]) -> bytes:
    frames = [_chunk({"role": "assistant", "content": ""})] + [_chunk({"content": p}) for p in pieces]
    return b"".join([*frames, _chunk({}, "stop"), b"data: [DONE]\n\n"])


def _unary(text: str) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}).encode()


def _endless_deltas(count: int) -> Iterator[bytes]:
    """``count`` one-character deltas, made as they are sent (the proxy's byte bound cuts them)."""
    yield _chunk({"role": "assistant", "content": ""})
    frame = _chunk({"content": "a"})
    for _ in range(0, count, 1000):
        yield frame * 1000
    yield _chunk({}, "stop") + b"data: [DONE]\n\n"


CHECKED_POLICY = """
[[stream_guardrails]]
id = "no-secrets"
kind = "secrets"

[[message_guardrails]]
id = "classifier"
kind = "webhook"
url = "{upstream}/webhook"
timeout_s = 30
"""

Scenario = tuple[bool, Callable[[], bytes | Iterator[bytes]], bool]
"""(streamed, the answer's bytes, run with the message check)."""
SCENARIOS: dict[str, Scenario] = {
    "baseline: 200 word deltas": (True, lambda: _deltas(["word "] * 200), False),
    "huge tool arguments (240 KB of sk-sk-...)": (True, lambda: _tools(
        [("Write", json.dumps({"file_path": "a.txt", "content": "sk-" * 80_000}))]), False),
    "10,000 tool calls": (True, lambda: _tools([("noop", "{}")] * 10_000), False),
    "100,000 levels of JSON nesting in tool arguments": (True, lambda: _tools(
        [("Write", "[" * 100_000 + "]" * 100_000)]), False),
    "300,000 one-character deltas": (True, lambda: _deltas(["a"] * 300_000), False),
    "20 MB non-streamed answer": (False, lambda: _unary("word " * 4_000_000), False),
    "non-streamed 240 KB of sk-sk-...": (False, lambda: _unary("sk-" * 80_000), False),
    "message check: 300,000 one-character deltas": (True, lambda: _deltas(["a"] * 300_000), True),
    "message check: 3,000,000 one-character deltas (past MAX_RESPONSE_BYTES)": (
        True, lambda: _endless_deltas(3_000_000), True),
}


# ----------------------------------------------------------------------------------- upstream
def serve(port: int) -> None:
    """The upstream process: ``POST /v1/chat/completions`` answers the scenario named by ``model``."""
    from aiohttp import web

    cache: dict[str, bytes] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if request.path == "/webhook":
            return web.json_response({"decision": "pass"})
        name = body["model"]
        stream, make, _ = SCENARIOS[name]
        made = cache[name] if name in cache else make()
        if isinstance(made, bytes):
            cache[name] = made
        if request.query.get("warm"):
            return web.Response(status=204)
        if not stream:
            assert isinstance(made, bytes)
            return web.Response(body=made, content_type="application/json")
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        try:
            if isinstance(made, bytes):
                for i in range(0, len(made), 65536):
                    await resp.write(made[i:i + 65536])
            else:
                for piece in made:
                    await resp.write(piece)
            await resp.write_eof()
        except ConnectionError:
            pass  # the proxy stopped reading at its bound
        return resp

    app = web.Application(client_max_size=1 << 20)
    app.router.add_post("/v1/chat/completions", handle)
    app.router.add_post("/webhook", handle)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ----------------------------------------------------------------------------------- proxy side
def _kb(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _reset_peak_rss() -> int:
    """Reset the peak-RSS mark to the current RSS (kB), which it returns."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _kb("VmRSS")


class GcWatch:
    """The longest garbage collection (any generation) since ``reset``: a stall no code path owns,
    paid by whichever request allocates when the collector runs over every object held."""

    def __init__(self) -> None:
        self.worst, self._start = 0.0, 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.worst = max(self.worst, time.perf_counter() - self._start)


class LagMonitor:
    """Sleeps ``tick`` seconds at a time on the loop and keeps the worst oversleep."""

    def __init__(self, tick: float = 0.001) -> None:
        self.tick, self.worst = tick, 0.0

    async def run(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(self.tick)
            self.worst = max(self.worst, time.perf_counter() - t - self.tick)


async def _curl(url: str, name: str, stream: bool, query: str = "") -> tuple[int, int]:
    body = json.dumps({"model": name, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
    proc = await asyncio.create_subprocess_exec(
        "curl", "-s", "--max-time", "300", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "-H",
        "content-type: application/json", "--data-binary", body, url + "/v1/chat/completions" + query,
        stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    status, size = out.decode().split()
    return int(status), int(size)


async def _start_proxy(upstream: str, checked: bool) -> tuple[str, Callable[[], Awaitable[None]]]:
    """The proxy on a free port (the default policy, or ``CHECKED_POLICY``): its URL and a stopper."""
    import uvicorn

    from config.policy import parse_policy
    from config.settings import Settings
    from proxy.edge.app import create_app

    port = _free_port()
    settings = Settings(port=port, openai_base_url=upstream, upstream_read_timeout_s=120)
    policy = parse_policy(CHECKED_POLICY.format(upstream=upstream), source="<bench>") if checked else None
    server = uvicorn.Server(uvicorn.Config(create_app(settings, policy), host="127.0.0.1", port=port,
                                           log_level="error", lifespan="on", access_log=False, ws="none"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)

    async def stop() -> None:
        server.should_exit = True
        await serving
    return f"http://127.0.0.1:{port}", stop


async def measure(upstream: str, only: str | None) -> list[dict[str, object]]:
    monitor, collections = LagMonitor(), GcWatch()
    watching = asyncio.create_task(monitor.run())
    rows: list[dict[str, object]] = []
    for checked in (False, True):
        url, stop = await _start_proxy(upstream, checked)
        for name, (stream, _, with_check) in SCENARIOS.items():
            if with_check != checked or (only and only not in name):
                continue
            await _curl(upstream, name, stream, "?warm=1")  # the upstream builds its bytes; the proxy stays cold
            gc.collect()
            rss0 = _reset_peak_rss()
            monitor.worst = collections.worst = 0.0
            t = time.perf_counter()
            status, size = await _curl(url, name, stream)
            took = time.perf_counter() - t
            rows.append({"input": name, "status": status, "bytes_to_client": size, "seconds": round(took, 2),
                         "max_stall_ms": round(monitor.worst * 1000, 1),
                         "max_gc_ms": round(collections.worst * 1000, 1),
                         "peak_rss_mb": round((_kb("VmHWM") - rss0) / 1024, 1)})
            print(json.dumps(rows[-1]), file=sys.stderr)
        await stop()
    watching.cancel()
    return rows


def render(rows: list[dict[str, object]]) -> str:
    head = "| input | status | bytes to client | wall s | longest loop stall ms | longest GC ms | peak RSS growth MB |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        flag = "" if float(str(r["max_stall_ms"])) < 100 else " (over 100 ms)"
        lines.append(f"| {r['input']} | {r['status']} | {r['bytes_to_client']} | {r['seconds']} | "
                     f"{r['max_stall_ms']}{flag} | {r['max_gc_ms']} | {r['peak_rss_mb']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stalls", description=__doc__)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help="write the table (markdown) here too")
    parser.add_argument("--only", help="run the inputs whose name holds this text")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    port = _free_port()
    upstream = subprocess.Popen([sys.executable, "-m", "bench.stalls", "--serve", str(port)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        rows = asyncio.run(measure(f"http://127.0.0.1:{port}", args.only))
    finally:
        upstream.terminate()
        upstream.wait(10)
    table = render(rows)
    print(table)
    if args.out:
        Path(args.out).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
