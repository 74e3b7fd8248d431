"""The proxy's HTTP server bounds what a client may make it hold before it is authenticated
(``proxy.downstream.server_limits``, ``read_body``): silent and slow heads get 408, oversized heads
and too many headers 431, a body that pauses too long 408 in the API's format, and a request without
a valid token is answered 401 from its head, its body never read. Raw sockets on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.faulty import read_all
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream

TOKEN = "limits-token-1234"


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, "[defaults]\nholdback_chars = 0\n", auth_token=TOKEN,
                     head_timeout_s=0.5, body_idle_timeout_s=0.5, max_head_bytes=16 * 1024, max_headers=40) as p:
        yield p


def _connect(proxy: ProxyServer) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    return s


def test_a_silent_connection_is_closed_with_408(proxy: ProxyServer) -> None:
    with _connect(proxy) as s:
        assert read_all(s).startswith(b"HTTP/1.1 408")


def test_a_head_sent_a_byte_at_a_time_is_cut_at_the_deadline(proxy: ProxyServer) -> None:
    head = b"GET /healthz HTTP/1.1\r\nhost: x\r\n" + b"x-pad: " + b"a" * 200 + b"\r\n\r\n"
    with _connect(proxy) as s:
        try:
            for i in range(len(head)):
                s.sendall(head[i:i + 1])
                time.sleep(0.05)  # the whole head would take 12 s
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = read_all(s)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]


def test_an_oversized_header_is_refused_before_it_is_all_sent(proxy: ProxyServer) -> None:
    others: list[int] = []

    def meanwhile() -> None:  # the event loop stays free for everyone else
        others.append(httpx.get(proxy.url + "/healthz", timeout=10).status_code)

    with _connect(proxy) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ")
        sent = 0
        try:
            for _ in range(64 * 16):  # up to 64 MiB
                s.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        t = threading.Thread(target=meanwhile)
        t.start()
        t.join(15)
        answer = read_all(s)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:100]
    assert sent < 64 * 1024 * 1024  # cut long before the whole header
    assert others == [200]


def test_a_long_request_line_gets_414(proxy: ProxyServer) -> None:
    with _connect(proxy) as s:
        s.sendall(b"GET /" + b"a" * 40_000 + b" HTTP/1.1\r\nhost: x\r\n\r\n")
        assert read_all(s).startswith(b"HTTP/1.1 414")


def test_too_many_header_lines_get_431(proxy: ProxyServer) -> None:
    with _connect(proxy) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n" + b"".join(b"x-h%d: v\r\n" % i for i in range(60)) + b"\r\n")
        assert read_all(s).startswith(b"HTTP/1.1 431")


def test_a_body_that_pauses_too_long_gets_408_in_the_api_format(proxy: ProxyServer) -> None:
    with _connect(proxy) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                  + f"x-guardproxy-token: {TOKEN}\r\ncontent-length: 1000\r\n\r\n".encode() + b'{"model":')
        answer = read_all(s)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert "too slowly" in body["error"]["message"]


def test_without_the_token_the_body_is_never_waited_for(proxy: ProxyServer) -> None:
    with _connect(proxy) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                  b"content-length: 30000000\r\n\r\n")  # the body never comes
        answer = s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


def test_ordinary_requests_pass(proxy: ProxyServer) -> None:
    r = httpx.get(proxy.url + "/healthz", headers={f"x-h{i}": "v" for i in range(30)}, timeout=10)
    assert r.status_code == 200
    with httpx.Client(timeout=10) as c:  # a keep-alive connection, idle a while between requests
        assert c.get(proxy.url + "/healthz").status_code == 200
        time.sleep(0.8)
        assert c.get(proxy.url + "/healthz").status_code == 200


def test_a_second_request_on_a_kept_connection_gets_its_own_deadline(proxy: ProxyServer) -> None:
    with _connect(proxy) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        s.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")  # the second head, never finished
        assert read_all(s).startswith(b"HTTP/1.1 408")


def test_a_pipelined_head_left_unfinished_gets_its_deadline(proxy: ProxyServer) -> None:
    with _connect(proxy) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\nGET /healthz HTTP/1.1\r\nhost: x\r\n")
        answer = read_all(s)
    assert answer.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 408" in answer, answer[:300]
