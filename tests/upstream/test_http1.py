"""guardproxy's upstream HTTP/1.1 client (``proxy.upstream.http1``) against scripted servers on loopback.

Each test runs under both event loops the proxy may get (uvloop, as ``guardproxy serve`` runs, and
asyncio's own). The servers are raw sockets that write exactly the bytes a test scripts, so framing
the client must refuse (a body cut short, conflicting lengths, an answer nobody asked for) is real.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Self

import pytest
import trustme
import uvloop

from config.errors import UpstreamError
from proxy.upstream import http1
from proxy.upstream.http1 import HIGH_WATER, Pool
from tests.fakes.faulty import RawServer, read_head

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@pytest.fixture(params=["uvloop", "asyncio"])
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, None]], None]:
    return uvloop.run if request.param == "uvloop" else asyncio.run  # type: ignore[return-value]


class Scripted:
    """A loopback server whose every connection runs ``handler``; counts connections and heads."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.heads: list[bytes] = []
        self.server: asyncio.Server | None = None

    tls: ssl.SSLContext | None = None

    async def __aenter__(self) -> Self:
        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @classmethod
    def answering(cls, reply: Callable[[bytes, bytes], bytes], tls: ssl.SSLContext | None = None) -> Self:
        """Answers every request of a connection with ``reply(head, body)``, keeping it open."""
        async def loop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                body = await srv.read_request(reader)
                writer.write(reply(srv.heads[-1], body))

        srv = cls(loop)
        srv.tls = tls
        return srv

    @classmethod
    def answering_once(cls, answer: bytes) -> Self:
        """Answers the first request of each connection with ``answer``, then closes it."""
        async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await srv.read_request(reader)
            writer.write(answer)
            await writer.drain()

        srv = cls(once)
        return srv

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http{'s' if self.tls else ''}://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return await reader.readexactly(length) if length else b""


def ok(body: bytes, *extra: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n%s\r\n%s" % (
        len(body), b"".join(h + b"\r\n" for h in extra), body)


def pool(read_timeout: float = 5.0) -> Pool:
    return Pool(connect_timeout=2.0, read_timeout=read_timeout)


async def fetch(p: Pool, url: str, body: bytes | None = b"{}", method: str = "POST") -> tuple[int, bytes]:
    answer = await p.request(method, url, [("content-type", "application/json")], body)
    return answer.status, await answer.read()


def test_keep_alive_connections_are_reused_and_the_request_is_framed(run: Any) -> None:
    async def main() -> None:
        async with Scripted.answering(lambda head, body: ok(b"got " + body)) as srv:
            p = pool()
            for i in range(5):
                assert await fetch(p, srv.url + f"/v1/x?i={i}", b'{"n":%d}' % i) == (200, b'got {"n":%d}' % i)
            assert srv.connections == 1
            head = srv.heads[-1]
            assert head.startswith(b"POST /v1/x?i=4 HTTP/1.1\r\nhost: 127.0.0.1:")
            assert b"content-type: application/json\r\n" in head and b"content-length: 7\r\n" in head
            p.close()

    run(main())


def test_get_without_body_sends_no_length_and_head_answers_have_no_body(run: Any) -> None:
    async def main() -> None:
        def reply(head: bytes, body: bytes) -> bytes:
            return b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n" if head.startswith(b"HEAD") else ok(b"x" * 10)

        async with Scripted.answering(reply) as srv:
            p = pool()
            assert await fetch(p, srv.url + "/models", b"", method="GET") == (200, b"x" * 10)
            assert b"content-length" not in srv.heads[-1]
            assert await fetch(p, srv.url + "/models", b"", method="HEAD") == (200, b"")
            assert await fetch(p, srv.url + "/models", b"", method="GET") == (200, b"x" * 10)
            p.close()

    run(main())


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nhi",
    b"HTTP/1.1 200 OK\r\n\r\nhi",  # no length, not chunked: the body ends at the close
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: identity\r\n\r\nhi",  # a final coding other than chunked: the same
    b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nhi",
])
def test_answers_that_end_the_connection_are_whole_and_not_reused(run: Any, answer: bytes) -> None:
    async def main() -> None:
        async with Scripted.answering_once(answer) as srv:
            p = pool()
            assert await fetch(p, srv.url + "/a") == (200, b"hi")
            assert await fetch(p, srv.url + "/a") == (200, b"hi")
            assert srv.connections == 2
            p.close()

    run(main())


def test_chunked_bodies_interim_answers_and_empty_answers(run: Any) -> None:
    async def main() -> None:
        answers = [
            (b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\ntrailer: t\r\n\r\n"),
            b"HTTP/1.1 204 No Content\r\n\r\n",
            ok(b"after"),
        ]

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for a in answers:
                await srv.read_request(reader)
                writer.write(a)
            await reader.read()

        async with Scripted(serve) as srv:
            p = pool()
            answer = await p.request("POST", srv.url + "/c", [], b"{}")
            assert answer.status == 200 and (b"link", b"</x>") not in answer.raw_headers
            assert await answer.read() == b"hello world"
            assert await fetch(p, srv.url + "/c") == (204, b"")
            assert await fetch(p, srv.url + "/c") == (200, b"after")
            assert srv.connections == 1
            p.close()

    run(main())


@pytest.mark.parametrize(("answer", "before_head"), [
    (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", False),  # cut short
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel", False),  # chunked, cut short
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n", False),  # bad chunk size
    (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nhi", True),  # conflicting lengths
    (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", True),
    (b"SSH-2.0-OpenSSH_9.6\r\n", True),  # not HTTP
    (b"", True),  # closed with no answer
    (b"HTTP/1.1 200 OK\r\nx: " + b"y" * 300_000 + b"\r\n\r\n", True),  # headers too large
])
def test_broken_framing_fails_closed(run: Any, answer: bytes, before_head: bool) -> None:
    async def main() -> None:
        async with Scripted.answering_once(answer) as srv:
            p = pool()
            with pytest.raises(UpstreamError) as caught:
                await fetch(p, srv.url + "/b")
            assert not caught.value.timeout
            assert (caught.value.reason == "unreachable") is before_head
            p.close()

    run(main())


def test_stalls_past_the_read_timeout_are_timeouts(run: Any) -> None:
    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await srv.read_request(reader)
            if len(srv.heads) == 2:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf")
            await reader.read()  # then nothing more

        async with Scripted(serve) as srv:
            p = pool(read_timeout=0.2)
            with pytest.raises(UpstreamError) as before:
                await fetch(p, srv.url + "/s")
            assert before.value.timeout and before.value.reason == "unreachable"
            answer = await p.request("POST", srv.url + "/s", [], b"{}")
            with pytest.raises(UpstreamError) as during:
                await answer.read()
            assert during.value.timeout and during.value.reason == "stalled"
            p.close()

    run(main())


def test_a_slow_reader_pauses_the_upstream_without_timing_out(run: Any) -> None:
    """Reading pauses once HIGH_WATER bytes wait; a reader slower than the read timeout is not a stall."""
    async def main() -> None:
        size = 40 * HIGH_WATER

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await srv.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size)
            for _ in range(40):
                writer.write(b"z" * HIGH_WATER)
                await writer.drain()
            await reader.read()

        async with Scripted(serve) as srv:
            p = pool(read_timeout=0.1)
            answer = await p.request("POST", srv.url + "/big", [], b"{}")
            got, biggest = 0, 0
            async for chunk in answer.chunks():
                got += len(chunk)
                biggest = max(biggest, len(chunk))
                if got < 4 * HIGH_WATER:
                    await asyncio.sleep(0.15)  # longer than the read timeout, while reading is paused
            assert got == size
            # Paused above the mark: one read never holds the whole body (socket buffers bound the rest).
            assert biggest < size // 4
            p.close()

    run(main())


def test_idle_connections_the_upstream_closed_are_not_reused(run: Any) -> None:
    async def main() -> None:
        # closes after one answer although it offered keep-alive
        async with Scripted.answering_once(ok(b"once")) as srv:
            p = pool()
            for _ in range(3):
                assert await fetch(p, srv.url + "/i") == (200, b"once")
                await asyncio.sleep(0.05)  # the close arrives while the connection is idle
            assert srv.connections == 3
            p.close()

    run(main())


def test_an_answer_nobody_asked_for_drops_the_connection(run: Any) -> None:
    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await srv.read_request(reader)
            writer.write(ok(b"one") + ok(b"smuggled"))
            await reader.read()

        async with Scripted(serve) as srv:
            p = pool()
            assert await fetch(p, srv.url + "/u") == (200, b"one")
            await asyncio.sleep(0.05)
            assert srv.connections == 1
            # The extra answer closed its connection: the next request's answer is its own.
            assert await fetch(p, srv.url + "/u") == (200, b"one")
            assert srv.connections == 2
            p.close()

    run(main())


def test_a_cancelled_request_closes_its_connection(run: Any) -> None:
    async def main() -> None:
        closed = asyncio.Event()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await srv.read_request(reader)
            if await reader.read() == b"":
                closed.set()

        async with Scripted(serve) as srv:
            p = pool()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await fetch(p, srv.url + "/slow")
            async with asyncio.timeout(5):
                await closed.wait()
            p.close()

    run(main())


def test_a_closed_answer_with_unread_body_is_not_reused(run: Any) -> None:
    async def main() -> None:
        async with Scripted.answering(lambda head, body: b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npart") as srv:
            p = pool()
            answer = await p.request("POST", srv.url + "/p", [], b"{}")
            answer.close()
            answer = await p.request("POST", srv.url + "/p", [], b"{}")
            answer.close()
            assert srv.connections == 2
            p.close()

    run(main())


def test_line_breaks_in_headers_are_refused_and_odd_targets_escaped(run: Any) -> None:
    async def main() -> None:
        async with Scripted.answering(lambda head, body: ok(b"")) as srv:
            p = pool()
            with pytest.raises(UpstreamError):
                await p.request("POST", srv.url + "/h", [("x-a", "1\r\nx-injected: 1")], b"{}")
            answer = await p.request("GET", srv.url + "/caf\xe9 x", [], None)
            await answer.read()
            assert srv.heads[-1].startswith(b"GET /caf%E9%20x HTTP/1.1\r\n")
            p.close()

    run(main())


def test_unreachable_upstream_is_not_a_timeout(run: Any) -> None:
    async def main() -> None:
        async with Scripted(lambda r, w: asyncio.sleep(0)) as srv:
            url = srv.url
        p = pool()
        with pytest.raises(UpstreamError) as caught:
            await fetch(p, url + "/gone")
        assert not caught.value.timeout and caught.value.reason == "unreachable"
        p.close()

    run(main())


def test_https_upstreams_are_verified(run: Any) -> None:
    """TLS with the default trust store and hostname checks; a certificate nobody vouches for, or one
    for another host, is an unreachable upstream (a 502), never a request sent in the clear."""
    ca = trustme.CA()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_tls)
    other_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("upstream.example").configure_cert(other_tls)
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)

    async def main() -> None:
        def reply(head: bytes, body: bytes) -> bytes:
            return ok(b"tls " + body)

        async with Scripted.answering(reply, server_tls) as srv:
            p = Pool(connect_timeout=2.0, read_timeout=5.0, tls=trusting)
            for _ in range(3):
                assert await fetch(p, srv.url + "/v1/x") == (200, b"tls {}")
            assert srv.connections == 1
            p.close()
            untrusting = pool()  # the system's trust store: the test CA is not in it
            with pytest.raises(UpstreamError) as caught:
                await fetch(untrusting, srv.url + "/v1/x")
            assert caught.value.reason == "unreachable" and not caught.value.timeout
            untrusting.close()
        async with Scripted.answering(reply, other_tls) as srv:
            p = Pool(connect_timeout=2.0, read_timeout=5.0, tls=trusting)
            with pytest.raises(UpstreamError) as caught:
                await fetch(p, srv.url + "/v1/x")
            assert caught.value.reason == "unreachable"
            p.close()

    run(main())


def test_an_answer_that_arrived_with_its_head_is_taken_whole(run: Any) -> None:
    async def main() -> None:
        async with Scripted.answering(lambda head, body: ok(b"small") if b"/small" in head else
                                      b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf") as srv:
            p = pool(read_timeout=0.2)
            answer = await p.request("POST", srv.url + "/small", [], b"{}")
            await asyncio.sleep(0.05)
            assert answer.arrived() == b"small"
            answer = await p.request("POST", srv.url + "/part", [], b"{}")
            assert answer.arrived() is None  # not all in: read it (here it stalls)
            with pytest.raises(UpstreamError):
                await answer.read()
            p.close()

    run(main())


class OneAnswerThenClose(RawServer):
    """Each connection gets one answer (offering keep-alive), then the server closes it outright, as a
    server's idle timeout does. ``requests`` counts the requests its code read: one that reached a
    closed socket is never among them."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    def handle(self, conn: socket.socket) -> None:
        read_head(conn)
        self.requests += 1
        conn.sendall(ok(b"answer %d" % self.requests))


def _stale_connection(p: Pool, srv: OneAnswerThenClose) -> None:
    """Wait, with the loop blocked, until the upstream's close is on the pooled connection's socket
    but not yet handled by the loop: the next request goes out into it."""
    assert srv.closed.wait(5)
    time.sleep(0.05)


def test_a_request_sent_into_a_close_the_upstream_already_made_goes_once_more_on_a_new_connection(
        run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The check of the idle socket would see the close first: switched off, the request really goes
    # out into the closed connection, as it does when the close is still on its way.
    monkeypatch.setattr(http1._Connection, "waiting", lambda self: False)

    async def main() -> None:
        with OneAnswerThenClose() as srv:
            p = pool()
            assert await fetch(p, srv.url + "/v1/x") == (200, b"answer 1")
            _stale_connection(p, srv)
            answer = p.send_now("POST", srv.url + "/v1/x", [("content-type", "application/json")], b"{}")
            assert answer is not None  # it went out on the pooled connection
            answer = await Pool.answered(answer)
            assert (answer.status, await answer.read(), answer.resent) == (200, b"answer 2", True)
            # The server's code read two requests: the one sent into its closed socket never arrived.
            assert (srv.requests, srv.connections, p.resends) == (2, 2, 1)
            p.close()

    run(main())


def test_an_idle_connection_whose_close_waits_unread_is_not_used(run: Any) -> None:
    async def main() -> None:
        with OneAnswerThenClose() as srv:
            p = pool()
            assert await fetch(p, srv.url + "/v1/x") == (200, b"answer 1")
            _stale_connection(p, srv)
            assert p.send_now("POST", srv.url + "/v1/x", [], b"{}") is None
            assert await fetch(p, srv.url + "/v1/x") == (200, b"answer 2")
            assert (srv.requests, p.resends) == (2, 0)
            p.close()

    run(main())


@pytest.mark.parametrize("then", [b"", b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 100 Continue\r\n\r\n"])
def test_a_request_the_upstream_took_in_is_never_sent_twice(run: Any, then: bytes) -> None:
    """The upstream read the request on a reused connection, then closed it: with no answer, with
    part of a head, after an interim answer. It may have acted on it: the failure is the client's."""
    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await srv.read_request(reader)
            writer.write(ok(b"first"))
            await srv.read_request(reader)
            writer.write(then)
            await writer.drain()

        async with Scripted(serve) as srv:
            p = pool()
            assert await fetch(p, srv.url + "/v1/x") == (200, b"first")
            with pytest.raises(UpstreamError):
                await fetch(p, srv.url + "/v1/x")
            assert (len(srv.heads), srv.connections, p.resends) == (2, 1, 0)
            p.close()

    run(main())


def test_a_reused_connection_that_stalls_is_not_sent_again(run: Any) -> None:
    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await srv.read_request(reader)
            writer.write(ok(b"first"))
            await srv.read_request(reader)
            await reader.read()

        async with Scripted(serve) as srv:
            p = pool(read_timeout=0.2)
            assert await fetch(p, srv.url + "/v1/x") == (200, b"first")
            with pytest.raises(UpstreamError) as caught:
                await fetch(p, srv.url + "/v1/x")
            assert caught.value.timeout
            assert (len(srv.heads), srv.connections, p.resends) == (2, 1, 0)
            p.close()

    run(main())


@pytest.mark.parametrize(("announced", "kept"), [(b"timeout=5, max=100", 4.0), (b"timeout=1", 0.5),
                                                 (b"max=3", 15.0), (b"timeout=30", 15.0)])
def test_the_idle_limit_follows_what_the_upstream_announces(run: Any, announced: bytes, kept: float) -> None:
    async def main() -> None:
        async with Scripted.answering(lambda head, body: ok(b"k", b"keep-alive: " + announced)) as srv:
            p = Pool(connect_timeout=2.0, read_timeout=5.0, idle_s=15.0)
            assert await fetch(p, srv.url + "/k", None, method="GET") == (200, b"k")
            (conn,) = next(iter(p._idle.values()))
            assert conn.idle_limit == kept
            conn.idle_since -= kept  # as if it had waited that long: not reused
            assert p.send_now("GET", srv.url + "/k", [], None) is None
            p.close()

    run(main())
