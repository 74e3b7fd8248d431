"""Smaller edge holes (issue 10.5 and 10.9): a compressed body despite ``accept-encoding: identity``
is decoded before it is checked (or fails closed), ``Expect: 100-continue`` does not hang, and the ops
routes that name the guardrails need the token."""

from __future__ import annotations

import gzip
import json
import socket
import zlib
from collections.abc import Iterator

import httpx
import pytest

from tests.adversarial import LEAKY, SECRET, SECRETS_POLICY
from tests.apis import raw_call, sdk_call
from tests.fakes.faulty import assert_http_error, assert_stream_error
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply, anthropic_body, chat_body, gemini_chunks


def _deflate_raw(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


CODINGS = {"gzip": gzip.compress, "deflate": zlib.compress, "deflate-raw": _deflate_raw,
           "identity, gzip": gzip.compress}


@pytest.mark.parametrize("coding", list(CODINGS))
def test_a_compressed_unary_body_is_decoded_then_checked(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                         coding: str) -> None:
    body = json.dumps(chat_body(Reply(text=LEAKY), "m")).encode()
    header = "deflate" if coding == "deflate-raw" else coding
    upstream.queue(Reply(raw_body=CODINGS[coding](body), extra_headers={"content-encoding": header}))
    res = raw_call(secrets_guard.url, "chat", stream=False)
    assert res.status == 200
    assert "content-encoding" not in res.headers
    assert SECRET.encode() not in res.raw and b"[withheld: credential]" in res.raw
    assert upstream.seen[0].headers.get("Accept-Encoding") == "identity"


def test_a_compressed_stream_is_decoded_then_checked(secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    frames = b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in gemini_chunks(
        Reply(text=LEAKY, deltas=["The key is AKIAQ7", "XR4K2MZT9BWP3N as requested."]), "m"))
    upstream.queue(Reply(raw_body=gzip.compress(frames), content_type="text/event-stream",
                         extra_headers={"content-encoding": "gzip"}))
    res = sdk_call(secrets_guard.url, "gemini", stream=True)
    assert SECRET not in res.text and "AKIAQ7" not in res.text
    assert "[withheld: credential]" in res.text


@pytest.mark.parametrize(("coding", "payload"), [
    ("br", b"\x1b\x03\x00\xf8\xa5@\x04"), ("zstd", b"(\xb5/\xfd"), ("gzip", gzip.compress(b"{}" * 50, mtime=0)[:-12]),
    ("gzip", b"not gzip at all"), ("compress", b"\x1f\x9d"), ("gzip, gzip", gzip.compress(gzip.compress(b"{}")))],
    # ids of their own: a gzip member's header holds the time it was made, so ids drawn from the bytes
    # differed between the pytest-xdist workers that collected them a second apart
    ids=["br", "zstd", "gzip-cut", "gzip-not", "compress", "gzip-twice"])
def test_a_body_that_cannot_be_decoded_fails_closed(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                    coding: str, payload: bytes) -> None:
    upstream.queue(Reply(raw_body=payload, extra_headers={"content-encoding": coding}))
    res = raw_call(secrets_guard.url, "anthropic", stream=False)
    assert res.status == 502
    assert_http_error("anthropic", 502, res.raw)
    metrics = httpx.get(secrets_guard.url + "/metrics").text
    assert 'guardproxy_fail_closed_total{reason="content_encoding"}' in metrics


def test_a_stream_whose_compression_breaks_midway_ends_with_the_api_error(secrets_guard: ProxyServer,
                                                                          upstream: FakeUpstream) -> None:
    text = "word " * 4000
    frames = b"".join(f"event: {t}\ndata: {json.dumps(d)}\n\n".encode() for t, d in [
        ("message_start", {"type": "message_start", "message": anthropic_body(Reply(text=""), "m")}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}})])
    upstream.queue(Reply(raw_frames=[gzip.compress(frames)[:-40]], extra_headers={"content-encoding": "gzip"}))
    res = raw_call(secrets_guard.url, "anthropic", stream=True)
    assert res.status in (200, 502)
    if res.status == 200:
        assert_stream_error("anthropic", res.raw)
    else:
        assert_http_error("anthropic", 502, res.raw)


def test_passthrough_keeps_the_compressed_bytes(secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    payload = gzip.compress(b'{"data": []}')
    upstream.queue(Reply(raw_body=payload, extra_headers={"content-encoding": "gzip"}))
    r = httpx.get(secrets_guard.url + "/v1/files", headers={"accept-encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip" and r.json() == {"data": []}


def test_expect_100_continue_neither_hangs_nor_travels(secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with socket.create_connection(("127.0.0.1", secrets_guard.port), timeout=10) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                  b"expect: 100-continue\r\nauthorization: Bearer sk\r\n"
                  + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode())
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 100"), first
        s.sendall(body)
        data = first
        while chunk := s.recv(65536):
            data += chunk
    assert b"HTTP/1.1 200" in data and b"Hello from upstream." in data
    assert "expect" not in {k.lower() for k in upstream.seen[0].headers}


@pytest.fixture(scope="module")
def token_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, SECRETS_POLICY, auth_token="tok-123") as p:
        yield p


@pytest.mark.parametrize("path", ["/readyz", "/metrics"])
def test_ops_routes_that_name_guardrails_need_the_token(token_proxy: ProxyServer, path: str) -> None:
    for given in ({}, {"x-guardproxy-token": "wrong"}):
        r = httpx.get(token_proxy.url + path, headers=given)
        if path == "/readyz":  # the bare status stays open for probes; the details need the token
            assert r.status_code == 200 and r.json() == {"status": "ready"}
        else:
            assert r.status_code == 401
    ok = httpx.get(token_proxy.url + path, headers={"x-guardproxy-token": "tok-123"})
    assert ok.status_code == 200
    assert httpx.get(token_proxy.url + path, headers={"authorization": "Bearer tok-123"}).status_code == 200
    if path == "/readyz":
        assert ok.json()["stream_guardrails"] == ["secrets"]


def test_healthz_stays_open(token_proxy: ProxyServer) -> None:
    assert httpx.get(token_proxy.url + "/healthz").status_code == 200
