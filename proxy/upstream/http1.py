"""The HTTP/1.1 client that forwards to the upstream: pooled keep-alive connections, parsed by llhttp.

Why our own and not aiohttp's ``ClientSession`` (which this replaced, and which still serves the
bench's bare relay and the side calls through httpx): a reverse proxy needs one request written and
one answer read per exchange, and aiohttp's client builds a request object, a response object,
header multidicts, a payload writer, a stream reader and two timers around it. Measured on a
non-streaming request with a system prompt at 32 concurrent, its Python cost was about a fifth of
guardproxy's CPU per passthrough request. What is kept here is what a proxy uses:

- one pool of idle keep-alive connections per origin (most recently used first, none idle longer
  than the pool's idle limit or what the upstream announced in ``Keep-Alive: timeout=``, unbounded in
  number like the aiohttp connector it replaced with ``limit=0``);
- the request head and body in one write;
- the answer parsed by ``httptools`` (Node's llhttp, already installed under uvicorn), strict about
  framing: conflicting lengths, bad chunking or a body cut short are errors, never a guess;
- the body handed over as it arrives, with back-pressure (reading pauses above ``HIGH_WATER``
  buffered bytes);
- a connect timeout, and a read timeout that counts only while the upstream owes bytes (not while
  reading is paused because the client is slow).

A connection goes back to the pool when its answer is complete (the unread body stays with the
answer), and only if both sides allow keep-alive. An answer read until the connection closes (no
length, not chunked) is complete at the close. An idle connection the upstream closed is dropped
from the pool when the close arrives, or when it is taken from the pool with the close already
waiting on its socket. A request written into a reused connection just as the upstream closes it is
sent once more, on a new connection, only when the upstream provably never took it in (see
``_Connection.replayable`` and docs/upstream.md): no byte of an answer arrived, the connection ended
by the upstream's close or reset (not a stall), and the upstream's TCP stack acknowledged none of the
request's bytes.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import select
import socket
import ssl
import struct
import sys
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

import httptools

from config.errors import UpstreamError
from config.settings import SettingsError

KEEPALIVE_S = 4.0
"""An idle connection older than this is closed rather than reused (the pool's default; the setting
``upstream_idle_s`` overrides it). Below the idle timeouts of the servers upstreams commonly run on
(uvicorn, Node and Apache close idle connections after 5 s): reusing a connection the upstream is
about to close races its close."""
KEEPALIVE_MARGIN_S = 1.0
"""An upstream that announces ``Keep-Alive: timeout=N`` is not reused past ``N - 1`` s (or ``N / 2``
when that is longer): its close must not meet a request on the way."""
HIGH_WATER = 128 * 1024
"""Bytes buffered from an answer before reading pauses (aiohttp's stream reader used 2 x 64 KiB)."""
MAX_HEAD_BYTES = 256 * 1024
"""An answer whose headers pass this is refused: they are held in memory whole."""
_KEEP_ALIVE_TIMEOUT = re.compile(rb"(?:^|[,;\s])timeout\s*=\s*\"?(\d+(?:\.\d+)?)", re.IGNORECASE)
_TCP_INFO = getattr(socket, "TCP_INFO", None) if sys.platform == "linux" else None
_POLLRDHUP: int = getattr(select, "POLLRDHUP", 0)
"""The peer's close, as its own poll event (Linux); elsewhere it shows as readable (POLLIN)."""
_TCP_INFO_BYTES_ACKED = struct.Struct("=Q")
"""``tcpi_bytes_acked`` (Linux 4.1+, RFC 4898's ``tcpEStatsAppHCThruOctetsAcked``) sits at byte 120
of ``struct tcp_info``, whose layout only ever grows at its end."""
_TCP_INFO_OFFSET = 120
_NO_BODY_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"})
"""Methods whose empty body is sent without ``content-length: 0`` (RFC 9110 8.6)."""




@dataclass(frozen=True, slots=True, eq=False)
class Origin:
    """Where requests go; one per upstream base (hashed by identity: it keys the idle pool)."""

    host: str
    port: int
    tls: bool
    head: bytes
    """``host`` header line, sent first in every request (and ``proxy-authorization`` when a plain
    HTTP upstream is reached through a forward proxy that wants it)."""
    proxy: ForwardProxy | None = None
    """The forward proxy in between (``HTTPS_PROXY`` / ``HTTP_PROXY``), None: straight there."""
    prefix: str = ""
    """Put before each request target: ``http://host:port`` when a plain HTTP upstream is reached
    through a forward proxy (absolute form, RFC 9112 3.2.2); else empty (origin form)."""


@dataclass(frozen=True, slots=True)
class ForwardProxy:
    """An HTTP forward proxy: ``https`` upstreams are reached through a ``CONNECT`` tunnel, plain
    ``http`` ones by sending it the request in absolute form."""

    host: str
    port: int
    authorization: str = ""
    """``Basic ...`` from the proxy URL's user and password, or empty."""


def forward_proxies(environ: Mapping[str, str]) -> tuple[dict[str, ForwardProxy], str]:
    """The forward proxies the environment names, by upstream scheme (``HTTPS_PROXY`` for ``https``,
    ``HTTP_PROXY`` for ``http``; lower-case names too, as curl and the SDKs read them), and
    ``NO_PROXY``. A proxy URL that is not ``http://host[:port]`` is refused (SOCKS and TLS to the
    proxy are not supported)."""
    found: dict[str, ForwardProxy] = {}
    for scheme in ("https", "http"):
        url = environ.get(f"{scheme}_proxy") or environ.get(f"{scheme.upper()}_PROXY") or ""
        if not url:
            continue
        if "://" not in url:
            url = "http://" + url
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise SettingsError(f"{scheme.upper()}_PROXY: only an http:// forward proxy is supported, "
                                f"not {parts.scheme}://")
        auth = ""
        if parts.username is not None:
            creds = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            auth = "Basic " + base64.b64encode(creds.encode()).decode("ascii")
        found[scheme] = ForwardProxy(parts.hostname, parts.port or 80, auth)
    return found, environ.get("no_proxy") or environ.get("NO_PROXY") or ""


class Answer:
    """One response: status and headers once they are in, then the body as it arrives.

    ``chunks()`` yields whatever has arrived since the last read, joined; it raises ``UpstreamError``
    when the connection breaks or stalls before the answer is complete. ``close()`` gives up on an
    answer that is not complete (its connection is closed, not reused)."""

    __slots__ = (
        "_conn",
        "_done",
        "_error",
        "_head_in",
        "_interim",
        "_parts",
        "_replayable",
        "_request",
        "_size",
        "_waiter",
        "raw_headers",
        "resent",
        "status",
    )

    def __init__(self, conn: _Connection, request: _Request) -> None:
        self.status = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self._conn: _Connection | None = conn
        self._request: _Request | None = request
        """What was sent, kept until the head is in: sent once more when the connection it went out
        on proves stale (``Pool.answered``)."""
        self._replayable = False
        self.resent = False
        """The request went out a second time, on a new connection (``Pool.answered``)."""
        self._parts: list[bytes] = []
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self._done = False
        self._error: UpstreamError | None = None
        self._head_in = False
        self._interim = False

    async def head(self) -> None:
        """Wait for the status line and headers."""
        while not self._head_in:
            if self._error is not None:
                raise self._error
            await self._wait()

    async def chunks(self) -> AsyncIterator[bytes]:
        parts = self._parts
        while True:
            if parts:
                chunk = parts[0] if len(parts) == 1 else b"".join(parts)
                parts.clear()
                self._size = 0
                if (conn := self._conn) is not None and conn.paused:
                    conn.resume()
                yield chunk
                del chunk
            elif self._error is not None:
                raise self._error
            elif self._done:
                return
            else:
                await self._wait()

    def arrived(self) -> bytes | None:
        """The whole body when it is all in already (a small answer arrives with its head), taken
        without a read; else None."""
        if not self._done or self._error is not None:
            return None
        body = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        self._parts.clear()
        return body

    async def read(self) -> bytes:
        if (body := self.arrived()) is not None:
            return body
        return b"".join([c async for c in self.chunks()])

    def close(self) -> None:
        if not self._done and (conn := self._conn) is not None:
            self._conn = None
            conn.abandon(self)
        self._done = True  # a read after close ends at once rather than wait for bytes that never come
        self._parts.clear()

    async def _wait(self) -> None:
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if (waiter := self._waiter) is not None and not waiter.done():
            waiter.set_result(None)

    # Fed by the connection (its parser's callbacks).

    def _feed(self, data: bytes) -> bool:
        """Take body bytes; ``True`` when reading should pause."""
        self._parts.append(data)
        self._size += len(data)
        self._wake()
        return self._size > HIGH_WATER

    def _finish(self) -> None:
        self._done = True
        self._conn = None
        self._wake()

    def _fail(self, error: UpstreamError, *, replayable: bool = False) -> None:
        if not self._done:
            self._error = error
            self._replayable = replayable
            self._conn = None
            self._wake()


@dataclass(frozen=True, slots=True, eq=False)
class _Request:
    """One request as it goes on the wire (kept to send it once more on a new connection)."""

    pool: Pool
    origin: Origin
    method: str
    target: str
    head: str
    body: bytes | None


class _Connection(asyncio.Protocol):
    """One keep-alive connection; at most one answer in flight."""

    __slots__ = (
        "_acked_at_send",
        "_answer",
        "_head_bytes",
        "_head_only",
        "_last_rx",
        "_loop",
        "_parser",
        "_pool",
        "_rx",
        "_sock",
        "_timer",
        "_transport",
        "_unacked_at_close",
        "closed",
        "idle_limit",
        "idle_since",
        "origin",
        "paused",
        "reused",
    )

    def __init__(self, pool: Pool, origin: Origin) -> None:
        self._pool = pool
        self.origin = origin
        self._loop = pool.loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._answer: Answer | None = None
        self._head_bytes = 0
        self._head_only = False
        self._last_rx = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._sock: socket.socket | None = None
        self._rx = False
        """Some byte arrived since the current request was sent."""
        self._acked_at_send: int | None = None
        """The upstream TCP stack's acknowledged byte count when a request went out on this
        connection reused (None: fresh, or not known on this platform)."""
        self._unacked_at_close = False
        self.paused = False
        self.closed = False
        self.reused = False
        """The connection already carried an exchange and waited in the pool since."""
        self.idle_since = 0.0
        self.idle_limit = pool.idle_s

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's are not asyncio.Transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            self._sock = sock
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # pragma: no cover - platform-specific
                pass

    def data_received(self, data: bytes) -> None:
        self._last_rx = self._loop.time()
        self._rx = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._break("it switched protocols")
        except httptools.HttpParserError as exc:
            self._break(f"not HTTP/1.1 ({exc})")

    def eof_received(self) -> bool | None:
        # The upstream closed its side. Whether it had taken in the request in flight is read now,
        # while the socket is still open (the transport closes it once this returns).
        if self._answer is not None and self._acked_at_send is not None and not self._rx:
            self._unacked_at_close = self._bytes_acked() == self._acked_at_send
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timer()
        self._pool.forget(self)
        # The parser holds this protocol for its callbacks: drop it, or the pair is cyclic garbage
        # that only the cycle collector frees (no bytes arrive after the connection is lost).
        self._parser = None  # type: ignore[assignment]
        answer, self._answer = self._answer, None
        if answer is None:
            return
        if answer._head_in and self._reads_until_close(answer):
            answer._finish()
        else:
            if (exc is not None and self._acked_at_send is not None and not self._rx
                    and not self._unacked_at_close):  # reset: asyncio's socket is still open here
                self._unacked_at_close = self._bytes_acked() == self._acked_at_send
            answer._fail(_failure(answer, type(exc).__name__ if exc is not None else "closed early"),
                         replayable=self.replayable())

    def replayable(self) -> bool:
        """The request in flight provably never reached the upstream's HTTP server, so sending it
        again cannot apply it twice (RFC 9110 9.2.2: "some means to detect that the original request
        was never applied"; docs/upstream.md): it went out on a reused connection, no byte of any
        answer arrived, the connection ended by the upstream's close or reset (not a stall, not bytes
        that are not HTTP), and the upstream's TCP stack acknowledged none of its bytes. Where the
        acknowledged count cannot be read (not Linux), never."""
        return self.reused and not self._rx and self._unacked_at_close

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self._answer is None:
            raise httptools.HttpParserError("an answer nobody asked for")
        self._answer.raw_headers = []
        self._head_bytes = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value)
        if self._head_bytes > MAX_HEAD_BYTES:
            raise httptools.HttpParserError("headers too large")
        assert self._answer is not None
        self._answer.raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        answer = self._answer
        assert answer is not None
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue, 103 Early Hints): the real one follows
            answer._interim = True
            return
        answer.status = status
        answer._head_in = True
        answer._wake()
        if self._head_only:  # a HEAD's answer has no body whatever its length says; not reused
            self._answer = None
            answer._finish()
            self.close()

    def on_body(self, body: bytes) -> None:
        if (answer := self._answer) is not None and answer._feed(body) and not self.paused:
            assert self._transport is not None
            self.paused = True
            self._transport.pause_reading()

    def on_message_complete(self) -> None:
        answer = self._answer
        if answer is None:
            return
        if answer._interim:
            answer._interim = False
            return
        self._answer = None
        self._cancel_timer()
        answer._finish()
        if self.paused:  # paused by this answer's last bytes: the next answer reads from the start
            self.resume()
        if self._parser.should_keep_alive() and not self.closed:
            if (limit := _announced_idle_limit(answer.raw_headers)) is not None:
                self.idle_limit = min(self._pool.idle_s, limit)
            self._pool.release(self)
        else:
            self.close()

    # used by the pool and the answer

    def send(self, request: _Request) -> Answer:
        assert self._transport is not None
        method, target, head, body = request.method, request.target, request.head, request.body
        if not (target.isascii() and target.isprintable()) or " " in target:
            target = _escape_target(target)
        data = f"{method} {self.origin.prefix}{target} HTTP/1.1\r\n".encode("latin-1") + self.origin.head + _encode(head)
        answer = self._answer = Answer(self, request)
        self._head_only = method == "HEAD"
        self._rx = self._unacked_at_close = False
        self._acked_at_send = self._bytes_acked() if self.reused else None
        self._last_rx = self._loop.time()
        self._timer = self._loop.call_at(self._last_rx + self._pool.read_timeout, self._on_timer)
        if body:
            if len(body) < 16384:
                self._transport.write(data + body)
            else:
                self._transport.writelines((data, body))
        else:
            self._transport.write(data)
        return answer

    def closing(self) -> bool:
        return self._transport is None or self._transport.is_closing()

    def resume(self) -> None:
        self.paused = False
        if self._transport is not None and not self.closed:
            self._transport.resume_reading()

    def abandon(self, answer: Answer) -> None:
        if self._answer is answer:
            self._answer = None
            self.close()

    def close(self) -> None:
        self._cancel_timer()
        if not self.closed:
            self.closed = True
            self._pool.forget(self)
            if self._transport is not None:
                self._transport.close()

    def _break(self, detail: str, *, timeout: bool = False) -> None:
        answer, self._answer = self._answer, None
        if answer is not None:
            answer._fail(_failure(answer, detail, timeout=timeout))
        if self._transport is not None:
            self._transport.abort()
        self.close()

    def _on_timer(self) -> None:
        self._timer = None
        if self._answer is None or self.closed:
            return
        now = self._loop.time()
        due = self._last_rx + self._pool.read_timeout
        if self.paused:  # the client is slow, not the upstream: count from when reading resumes
            self._last_rx = now
            due = now + self._pool.read_timeout
        elif now >= due:
            self._break("stalled", timeout=True)
            return
        self._timer = self._loop.call_at(due, self._on_timer)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def waiting(self) -> bool:
        """Bytes or the upstream's close wait unread on this idle connection's socket: the loop has
        not handled them yet (both mean it is not to be reused)."""
        if self._sock is None:
            return False
        try:
            poller = select.poll()
            poller.register(self._sock.fileno(), select.POLLIN | _POLLRDHUP)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def _bytes_acked(self) -> int | None:
        """How many bytes the upstream's TCP stack has acknowledged on this connection (Linux's
        ``tcpi_bytes_acked``); None when that cannot be read."""
        if self._sock is None or _TCP_INFO is None:
            return None
        try:
            info = self._sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _TCP_INFO_OFFSET + 8)
        except (OSError, ValueError):
            return None
        if len(info) < _TCP_INFO_OFFSET + 8:
            return None
        return int(_TCP_INFO_BYTES_ACKED.unpack_from(info, _TCP_INFO_OFFSET)[0])

    def _reads_until_close(self, answer: Answer) -> bool:
        """The answer's body ends where the connection does (no length, not chunked, may have a body)."""
        if answer.status in (204, 304):
            return False
        chunked = False
        for name, value in answer.raw_headers:
            name = name.lower()
            if name == b"content-length":
                return False
            if name == b"transfer-encoding":  # a final coding other than chunked reads to the close too
                chunked = value.rsplit(b",", 1)[-1].strip().lower() == b"chunked"
        return not chunked


def _announced_idle_limit(headers: list[tuple[bytes, bytes]]) -> float | None:
    """How long a connection may idle by the upstream's ``Keep-Alive: timeout=N`` (RFC 2068 19.7.1.1,
    still sent by Apache, Node and others): ``N - 1`` s, or ``N / 2`` when that is longer."""
    for name, value in headers:
        if len(name) == 10 and name.lower() == b"keep-alive" and (m := _KEEP_ALIVE_TIMEOUT.search(value)):
            announced = float(m.group(1))
            return max(announced - KEEPALIVE_MARGIN_S, announced / 2)
    return None


def _failure(answer: Answer, detail: str, *, timeout: bool = False) -> UpstreamError:
    """Before the status line the upstream counts as unreachable (nothing was answered); after it,
    the answer broke or stalled."""
    if not answer._head_in:
        if timeout:
            return UpstreamError("the upstream did not answer in time", timeout=True, reason="unreachable")
        return UpstreamError(f"the upstream is unreachable: {detail}", timeout=False, reason="unreachable")
    if timeout:
        return UpstreamError("the upstream stalled past the read timeout", timeout=True)
    return UpstreamError(f"the upstream connection broke: {detail}", timeout=False)


def _head(method: str, headers: Mapping[str, str] | Sequence[tuple[str, str]], body: bytes | None) -> str:
    """The header lines after the request line and ``host`` (``content-length`` added), blank line
    included."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    lines = [f"{k}: {v}\r\n" for k, v in pairs]
    if body or (body is not None and method not in _NO_BODY_METHODS):
        lines.append(f"content-length: {len(body)}\r\n")
    lines.append("\r\n")
    head = "".join(lines)
    if head.count("\n") != len(lines) or head.count("\r") != len(lines):
        raise UpstreamError("a request header holds a line break", timeout=False, reason="unreachable")
    return head


def _escape_target(target: str) -> str:
    """Percent-escape what may not stand in a request line: the path and query arrive as the client's
    bytes read as latin-1, so each such character is one byte."""
    return "".join(c if "!" <= c <= "~" else "".join(f"%{b:02X}" for b in c.encode("utf-8" if ord(c) > 255 else "latin-1"))
                   for c in target)


def _encode(head: str) -> bytes:
    """Header lines, latin-1 (what the client sent, as the server decoded it) or UTF-8 otherwise."""
    try:
        return head.encode("latin-1")
    except UnicodeEncodeError:
        return head.encode()


class Pool:
    """Idle connections per origin, most recently used first."""

    def __init__(self, *, connect_timeout: float, read_timeout: float, tls: ssl.SSLContext | None = None,
                 idle_s: float = KEEPALIVE_S, on_resend: Callable[[], None] | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        """``tls``: how ``https`` upstreams are verified; by default the system's trust store with
        hostname checks (``ssl.create_default_context``), made on the first TLS connection.
        ``idle_s``: how long a connection may wait in the pool (less when the upstream says so).
        ``on_resend``: called each time a request is sent once more (a metric).
        ``environ``: where ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``NO_PROXY`` are read (the process's
        environment by default)."""
        self.loop = asyncio.get_running_loop()
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.idle_s = idle_s
        self.resends = 0
        self._on_resend = on_resend
        """Requests sent once more because the reused connection they went out on proved stale."""
        self._idle: dict[Origin, list[_Connection]] = {}
        self._origins: dict[str, Origin] = {}
        self._tls = tls
        self._proxies, self._no_proxy = forward_proxies(os.environ if environ is None else environ)

    async def request(self, method: str, url: str, headers: Mapping[str, str] | Sequence[tuple[str, str]],
                      body: bytes | None) -> Answer:
        """Send one request; return once the answer's status and headers are in."""
        request = self._request(method, url, headers, body)
        conn = self._idle_connection(request.origin) or await self._connect(request.origin)
        return await self.answered(conn.send(request))

    def send_now(self, method: str, url: str, headers: Mapping[str, str] | Sequence[tuple[str, str]],
                 body: bytes | None) -> Answer | None:
        """Send one request at once, without a suspension, on an idle connection: its bytes are
        written before this returns (``answered`` then waits for its head). None, and nothing sent,
        when no connection to the origin is idle (``request`` would have to connect first)."""
        request = self._request(method, url, headers, body)
        conn = self._idle_connection(request.origin)
        return None if conn is None else conn.send(request)

    @staticmethod
    async def answered(answer: Answer) -> Answer:
        """``answer`` once its status and headers are in. A request whose reused connection proved
        stale before the upstream took it in (``_Connection.replayable``) is sent once more on a new
        connection, and that answer is returned; never a third time, never once an answer byte came."""
        try:
            await answer.head()
        except UpstreamError:
            request, answer._request = answer._request, None
            if not answer._replayable or request is None:
                answer.close()
                raise
            return await request.pool._resend(request)
        except BaseException:  # cancelled (a time-bounded side call): the connection goes
            answer.close()
            raise
        answer._request = None
        return answer

    async def _resend(self, request: _Request) -> Answer:
        self.resends += 1
        if self._on_resend is not None:
            self._on_resend()
        answer = (await self._connect(request.origin)).send(request)
        answer.resent = True
        answer._request = None  # a fresh connection: its failure is the upstream's, not the pool's
        try:
            await answer.head()
        except BaseException:
            answer.close()
            raise
        return answer

    def release(self, conn: _Connection) -> None:
        conn.idle_since = self.loop.time()
        conn.reused = True
        self._idle.setdefault(conn.origin, []).append(conn)

    def forget(self, conn: _Connection) -> None:
        idle = self._idle.get(conn.origin)
        if idle and conn in idle:
            idle.remove(conn)

    def close(self) -> None:
        for idle in list(self._idle.values()):
            for conn in list(idle):
                conn.close()
        self._idle.clear()

    def _request(self, method: str, url: str, headers: Mapping[str, str] | Sequence[tuple[str, str]],
                 body: bytes | None) -> _Request:
        origin, target = self._split(url)
        return _Request(self, origin, method, target, _head(method, headers, body), body)

    def _idle_connection(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if (not conn.closed and self.loop.time() - conn.idle_since < conn.idle_limit and not conn.closing()
                    and not conn.waiting()):
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin) -> _Connection:
        tls = self._tls_context() if origin.tls else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                if origin.proxy is not None and tls is not None:
                    return await self._tunnel(origin, origin.proxy, tls)
                host, port = (origin.host, origin.port) if origin.proxy is None else (origin.proxy.host,
                                                                                     origin.proxy.port)
                _, conn = await self.loop.create_connection(
                    lambda: _Connection(self, origin), host, port, ssl=tls,
                    server_hostname=origin.host if tls is not None else None)
        except TimeoutError as exc:
            raise UpstreamError("the upstream did not answer in time", timeout=True, reason="unreachable") from exc
        except (OSError, ssl.SSLError) as exc:
            raise UpstreamError(f"the upstream is unreachable: {type(exc).__name__}", timeout=False,
                                reason="unreachable") from exc
        return conn

    async def _tunnel(self, origin: Origin, proxy: ForwardProxy, tls: ssl.SSLContext) -> _Connection:
        """A TLS connection to ``origin`` through ``proxy``'s ``CONNECT`` tunnel (RFC 9110 9.3.6): the
        proxy sees the host and port, never the requests."""
        transport, tunnel = await self.loop.create_connection(_TunnelOpening, proxy.host, proxy.port)
        try:
            authority = f"[{origin.host}]:{origin.port}" if ":" in origin.host else f"{origin.host}:{origin.port}"
            auth = f"proxy-authorization: {proxy.authorization}\r\n" if proxy.authorization else ""
            transport.write(f"CONNECT {authority} HTTP/1.1\r\nhost: {authority}\r\n{auth}\r\n".encode("latin-1"))
            status = await tunnel.status
            if status // 100 != 2:
                raise UpstreamError(f"the upstream is unreachable: the forward proxy answered CONNECT "
                                    f"with {status}", timeout=False, reason="unreachable")
            conn = _Connection(self, origin)
            secure = await self.loop.start_tls(transport, conn, tls, server_hostname=origin.host)
        except BaseException:
            transport.close()
            raise
        assert secure is not None
        conn.connection_made(secure)
        return conn

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def _split(self, url: str) -> tuple[Origin, str]:
        """``scheme://host[:port]`` (its parse cached: the upstream bases are few) and the target."""
        sep = url.find("/", url.find("//") + 2)
        base, target = (url, "/") if sep < 0 else (url[:sep], url[sep:])
        if (origin := self._origins.get(base)) is None:
            origin = self._origins[base] = self._via_proxy(_origin(base))
        return origin, target

    def _via_proxy(self, origin: Origin) -> Origin:
        """``origin`` as reached through the forward proxy for its scheme, unless ``NO_PROXY`` names
        it (``urllib``'s matching, as curl reads it: a host, a domain suffix, ``*``)."""
        proxy = self._proxies.get("https" if origin.tls else "http")
        if proxy is None:
            return origin
        hostport = f"{origin.host}:{origin.port}"
        bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # (not in typeshed)
        if self._no_proxy and bypass(hostport, {"no": self._no_proxy}):
            return origin
        if origin.tls:
            return Origin(origin.host, origin.port, True, origin.head, proxy)
        netloc = origin.head[len(b"host: "):-2].decode("ascii")
        head = origin.head + (f"proxy-authorization: {proxy.authorization}\r\n".encode("latin-1")
                              if proxy.authorization else b"")
        return Origin(origin.host, origin.port, False, head, proxy, f"http://{netloc}")


def tls_context(ca_bundle: str | None = None) -> ssl.SSLContext:
    """How TLS upstreams are verified: the system's trust store (``SSL_CERT_FILE`` / ``SSL_CERT_DIR``
    replace it, as OpenSSL reads them) with hostname checks, plus the CAs in ``ca_bundle``."""
    context = ssl.create_default_context()
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise SettingsError(f"GUARDPROXY_UPSTREAM_CA_BUNDLE: cannot load {ca_bundle!r} as PEM "
                                f"certificates ({getattr(exc, 'strerror', None) or type(exc).__name__})") from None
    return context


class _TunnelOpening(asyncio.Protocol):
    """Reads the forward proxy's answer to ``CONNECT``: its status once the head is in."""

    def __init__(self) -> None:
        self.status: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._head = b""

    def data_received(self, data: bytes) -> None:
        if self.status.done():
            return
        self._head += data
        if b"\r\n\r\n" in self._head:
            line = self._head.split(b"\r\n", 1)[0].split()
            ok = len(line) >= 2 and line[0].startswith(b"HTTP/1.") and line[1].isdigit()
            self.status.set_result(int(line[1]) if ok else 502)
        elif len(self._head) > MAX_HEAD_BYTES:
            self.status.set_result(502)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.status.done():
            self.status.set_exception(ConnectionResetError("the forward proxy closed the connection"))


def _origin(base: str) -> Origin:
    scheme, _, netloc = base.partition("://")
    if scheme not in ("http", "https") or not netloc or "@" in netloc:
        raise UpstreamError(f"not an upstream URL this proxy can call: {scheme}://…", timeout=False,
                            reason="unreachable")
    tls = scheme == "https"
    host, port = netloc, 443 if tls else 80
    if netloc.startswith("["):  # [v6]:port
        end = netloc.index("]")
        host, rest = netloc[1:end], netloc[end + 1:]
        if rest.startswith(":"):
            port = int(rest[1:])
    elif ":" in netloc:
        host, _, p = netloc.rpartition(":")
        port = int(p)
    if not netloc.isascii():
        raise UpstreamError("an upstream host must be given in ASCII (punycode)", timeout=False,
                            reason="unreachable")
    return Origin(host, port, tls, f"host: {netloc}\r\n".encode("ascii"))
