"""A small HTTP forward proxy on loopback, as a company's egress proxy (squid, tinyproxy) is one:
``CONNECT host:port`` opens a tunnel (for TLS upstreams); a request in absolute form
(``POST http://host:port/path``) is relayed to that origin. It records what it was asked, so a test
can tell that traffic went through it, and can demand ``Proxy-Authorization``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Self


class ForwardProxy:
    def __init__(self, *, require_auth: str | None = None) -> None:
        """``require_auth``: the ``Proxy-Authorization`` value demanded (407 without it)."""
        self.require_auth = require_auth
        self.connects: list[str] = []
        """The authority of every CONNECT."""
        self.requests: list[str] = []
        """The request line of every request relayed in absolute form (the first of its connection)."""
        self.refused = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="forward-proxy")
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the forward proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        line, *fields = head.decode("latin-1").split("\r\n")
        method, target, _ = line.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields if f)}
        if self.require_auth is not None and headers.get("proxy-authorization") != self.require_auth:
            self.refused += 1
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n"
                         b"proxy-authenticate: Basic realm=\"test\"\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            self.connects.append(target)
            try:
                up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port))
            except OSError:
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                writer.close()
                return
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await self._pipe(reader, writer, up_reader, up_writer)
            return
        if not target.startswith("http://"):
            writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            writer.close()
            return
        self.requests.append(line)
        authority = target[len("http://"):].split("/", 1)[0]
        host, _, port = authority.rpartition(":")
        up_reader, up_writer = await asyncio.open_connection(host, int(port or 80))
        # An origin server accepts the absolute form (RFC 9112 3.2.2): the head goes on as it came,
        # minus the proxy's own header, and the rest of the connection is piped.
        kept = [f for f in fields if f and not f.lower().startswith("proxy-authorization:")]
        up_writer.write(("\r\n".join([line, *kept]) + "\r\n\r\n").encode("latin-1"))
        await self._pipe(reader, writer, up_reader, up_writer)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> None:
        async def one_way(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(one_way(reader, up_writer), one_way(up_reader, writer))
