"""Fault tooling for the reliability suites: a raw-socket upstream that misbehaves below HTTP, a
leak probe for a ``ProxyServer`` (open fds, tasks on its loop), and per-API request and error
helpers that read bodies in each API's own shape.

The raw server exists because the aiohttp fake can only misbehave after it has parsed a request and
chosen a reply; resets before any header and bytes that are not HTTP need a plain socket.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, Self

from tests.fakes.proxy import ProxyServer

Mode = Literal["reset", "garbage", "close", "truncated", "count"]

APIS = ("chat", "responses", "anthropic", "gemini", "gemini_array")
"""The four client APIs; Gemini twice, for its SSE and its JSON-array stream."""


class RawServer:
    """A loopback server on a plain socket, in a thread of its own: each connection, one at a time, is
    handed to ``handle`` and closed after it. ``connections`` counts them; ``closed`` is set once one
    was closed. A subclass implements ``handle``."""

    def __init__(self) -> None:
        self.connections = 0
        self.closed = threading.Event()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            with conn:
                self.handle(conn)
            self.closed.set()


class FaultyServer(RawServer):
    """Accepts connections on loopback and, once the request head has arrived, misbehaves:

    - ``reset``: RST (SO_LINGER 0) before any response byte;
    - ``garbage``: writes bytes that are not an HTTP response, then closes;
    - ``close``: a clean FIN with no response;
    - ``truncated``: a 200 head promising more JSON body than it sends, then a FIN;
    - ``count``: answers nothing and closes; it only counts who came (a host that must see nothing).
    """

    def __init__(self, mode: Mode = "reset") -> None:
        super().__init__()
        self.mode = mode

    def handle(self, conn: socket.socket) -> None:
        conn.settimeout(2)
        try:
            read_head(conn)
            if self.mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif self.mode == "garbage":
                conn.sendall(b"THIS IS NOT HTTP\x00\xff\r\n\r\n")
            elif self.mode == "truncated":
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: 400\r\n\r\n{\"id\": \"chatcmpl-1\", \"choi")
        except OSError:
            pass


def read_all(s: socket.socket) -> bytes:
    """What the peer sent until it closed, reset or went quiet past the socket's timeout."""
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def read_head(conn: socket.socket) -> bytes:
    """The bytes up to the end of the request head (or all there were, if the peer stopped first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


# ----------------------------------------------------------------------------------- leak probe
def fd_count() -> int:
    """Open fds of this process (the proxy, the fakes and the clients all run in it)."""
    return len(os.listdir("/proc/self/fd"))


def task_count(proxy: ProxyServer) -> int:
    async def count() -> int:
        return len(asyncio.all_tasks())

    assert proxy.loop is not None
    return asyncio.run_coroutine_threadsafe(count(), proxy.loop).result(5)


def poll(cond: Callable[[], bool], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def _settled(proxy: ProxyServer, timeout: float = 1.0) -> tuple[int, int]:
    """(fds, tasks) once two samples 30 ms apart agree: finished connections have wound down."""
    end = time.monotonic() + timeout
    last = (fd_count(), task_count(proxy))
    while time.monotonic() < end:
        time.sleep(0.03)
        now = (fd_count(), task_count(proxy))
        if now == last:
            return now
        last = now
    return last


class Baseline:
    """Open fds and proxy tasks now; ``assert_back`` polls until both are back to (or below) it."""

    def __init__(self, proxy: ProxyServer) -> None:
        self.proxy = proxy
        self.fds, self.tasks = _settled(proxy)

    def assert_back(self, timeout: float = 5.0) -> None:
        ok = poll(lambda: fd_count() <= self.fds and task_count(self.proxy) <= self.tasks, timeout)
        assert ok, (f"leak: fds {fd_count()} (baseline {self.fds}), "
                    f"tasks {task_count(self.proxy)} (baseline {self.tasks})")


# ----------------------------------------------------------------------------------- requests
def request_for(api: str, *, stream: bool = True, text: str = "hello") -> tuple[str, dict[str, Any]]:
    """(path with query, JSON body) of a minimal request in ``api``'s format."""
    if api == "chat":
        return "/v1/chat/completions", {"model": "m", "stream": stream,
                                        "messages": [{"role": "user", "content": text}]}
    if api == "responses":
        return "/v1/responses", {"model": "m", "stream": stream, "input": text}
    if api == "anthropic":
        return "/v1/messages", {"model": "m", "max_tokens": 100, "stream": stream,
                                "messages": [{"role": "user", "content": text}]}
    method = "streamGenerateContent" if stream else "generateContent"
    query = "?alt=sse" if api == "gemini" and stream else ""
    return f"/v1beta/models/m:{method}{query}", {"contents": [{"role": "user", "parts": [{"text": text}]}]}


def headers_for(api: str) -> dict[str, str]:
    if api == "anthropic":
        return {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    if api.startswith("gemini"):
        return {"x-goog-api-key": "gk-test"}
    return {"authorization": "Bearer sk-test"}


def fake_api(api: str) -> str:
    """The fake upstream's name for ``api``."""
    return {"gemini_array": "gemini"}.get(api, api)


def assert_http_error(api: str, status: int, body: bytes) -> dict[str, Any]:
    """``body`` parses as ``api``'s HTTP error shape; returns the error object."""
    data = json.loads(body)
    assert isinstance(data, dict), body
    if api == "anthropic":
        assert data["type"] == "error" and isinstance(data["error"]["type"], str), data
        assert isinstance(data["error"]["message"], str)
        return dict(data["error"])
    err = data["error"]
    assert isinstance(err["message"], str) and err["message"], data
    if api.startswith("gemini"):
        assert err["code"] == status and isinstance(err["status"], str), data
    else:
        assert "type" in err, data
    assert "Traceback" not in body.decode("utf-8", "replace")
    return dict(err)


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) per SSE frame (CRLF or LF)."""
    out: list[tuple[str | None, str]] = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        event, data = None, []
        for line in block.decode("utf-8").split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if event is not None or data:
            out.append((event, "\n".join(data)))
    return out


def assert_stream_error(api: str, raw: bytes) -> None:
    """The stream ends with ``api``'s own mid-stream error (wire-formats.md, gotcha 4)."""
    if api == "gemini":
        at = raw.rfind(b'{"error"')
        assert at >= 0, raw[-300:]
        assert not raw[:at].endswith(b"data: "), "Gemini's mid-stream error must be a bare write"
        assert "code" in json.loads(raw[at:])["error"], raw[at:]
        return
    if api == "gemini_array":
        data = json.loads(raw)  # still one well-formed JSON array
        assert isinstance(data, list) and "error" in data[-1], raw[-300:]
        return
    events = sse_events(raw)
    assert events, raw
    if api == "chat":
        assert "error" in json.loads(events[-1][1]), events[-1]
    elif api == "anthropic":
        assert events[-1][0] == "error" and json.loads(events[-1][1])["type"] == "error", events[-1]
    else:
        names = [e for e, _ in events]
        assert "error" in names or "response.failed" in names, names[-3:]
        assert names[-1] in ("response.failed", "error"), names[-3:]
