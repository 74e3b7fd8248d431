"""An OpenAI-compatible upstream on uvicorn, in its own process: what a team's gateway or a
self-hosted model server runs on. Its keep-alive timeout is a command-line choice (uvicorn closes an
idle connection after it: 5 s by default), and the process can be killed and started again on the
same port, as an upstream restarts.

    python -m tests.fakes.uvicorn_upstream --port 8000 --keep-alive 0.5

``POST /v1/chat/completions`` answers a chat completion, streamed when asked: ``n`` words (the
request's ``max_tokens``, default 5), one chunk each, ``delay_ms`` apart (the request's
``metadata.delay_ms``, default 0), then a finish chunk and ``[DONE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Self

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _chunk(i: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-uv", "object": "chat.completion.chunk", "created": 1, "model": "uv-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            kind = (await receive())["type"]
            await send({"type": kind + ".complete"})
            if kind == "lifespan.shutdown":
                return
    if scope["type"] != "http":
        return
    raw = b""
    while True:
        message = await receive()
        raw += message.get("body", b"")
        if not message.get("more_body"):
            break
    try:
        req = json.loads(raw or b"{}")
    except ValueError:
        req = {}
    words = int(req.get("max_tokens") or 5)
    delay = float((req.get("metadata") or {}).get("delay_ms") or 0) / 1000
    if not req.get("stream"):
        body = json.dumps({
            "id": "chatcmpl-uv", "object": "chat.completion", "created": 1, "model": "uv-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": " ".join(["word"] * words)}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": words, "total_tokens": words + 1},
        }).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": _chunk(0, {"role": "assistant", "content": ""}),
                "more_body": True})
    for i in range(words):
        if delay:
            await asyncio.sleep(delay)
        await send({"type": "http.response.body", "body": _chunk(i, {"content": f"w{i} "}), "more_body": True})
    await send({"type": "http.response.body", "body": _chunk(words, {}, "stop") + b"data: [DONE]\n\n"})


class UvicornUpstream:
    """The server above in a child process, on a fixed loopback port kept across restarts."""

    def __init__(self, keep_alive_s: float = 5.0, port: int = 0) -> None:
        if not port:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
        self.port = port
        self.keep_alive_s = keep_alive_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Self:
        env = {**os.environ, "PYTHONPATH": os.getcwd()}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.uvicorn_upstream", "--port", str(self.port),
             "--keep-alive", str(self.keep_alive_s)], env=env, stdout=subprocess.DEVNULL)
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.02)
        self.kill()
        raise RuntimeError("the uvicorn upstream did not start")

    def kill(self) -> None:
        """Gone at once, as a crash or an OOM kill: open connections are reset or closed mid-answer."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    import uvicorn

    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--keep-alive", type=float, default=5.0)
    args = p.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, timeout_keep_alive=args.keep_alive,  # type: ignore[arg-type]
                log_level="warning", access_log=False, lifespan="on")


if __name__ == "__main__":
    main()
