"""Bad input from clients: every bad request gets a clear 4xx in the client's own API format (never a
stack trace), path and header tricks cannot point the proxy at another host, and the wire decoders
take any bytes or JSON without raising anything but ``BadRequest``."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.wire.anthropic import AnthropicMessages
from proxy.wire.base import BadRequest, WireFormat
from proxy.wire.gemini import Gemini
from proxy.wire.openai_chat import OpenAIChat
from proxy.wire.openai_responses import OpenAIResponses
from tests.fakes.faulty import APIS, Baseline, FaultyServer, assert_http_error, headers_for, request_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream


@pytest.fixture(scope="module")
def small_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, max_body_bytes=1000) as p:
        yield p


def post(proxy: ProxyServer, api: str, content: bytes, path: str | None = None) -> httpx.Response:
    p, _ = request_for(api)
    return httpx.post(proxy.url + (path or p), content=content,
                      headers={**headers_for(api), "content-type": "application/json"})


WRONG_SHAPES: dict[str, list[Any]] = {
    "chat": [{"model": "m", "messages": "hi"}, {"model": "m", "messages": [1, 2]}, {"model": "m"}],
    "responses": [{"model": "m", "input": 5}, {"model": "m", "input": [7]}],
    "anthropic": [{"model": "m", "max_tokens": 5, "messages": "hi"},
                  {"model": "m", "max_tokens": 5, "messages": [{"role": 1, "content": None}]}],
    "gemini": [{"contents": "hi"}, {"contents": [1]}, {}],
    "gemini_array": [{"contents": {"parts": []}}],
}


@pytest.mark.parametrize("api", APIS)
def test_bad_bodies_get_a_400_in_the_api_format(small_proxy: ProxyServer, upstream: FakeUpstream,
                                                api: str) -> None:
    b = Baseline(small_proxy)
    bodies = [b"{not json", b"[1, 2]", b'"a string"', b"", b'{"messages": "\xff\xfe"}', b"\xff" * 10,
              *(json.dumps(x).encode() for x in WRONG_SHAPES[api])]
    for body in bodies:
        r = post(small_proxy, api, body)
        assert r.status_code == 400, (body, r.text)
        err = assert_http_error(api, 400, r.content)
        assert "Traceback" not in err["message"] and len(err["message"]) < 500
    # nothing that bad went upstream: no request had left a connection idle (on a warm connection the
    # body goes out as it is read, and a refused one is cut off: tests/edge/test_early_send.py)
    assert upstream.seen == []
    b.assert_back()


@pytest.mark.parametrize("api", APIS)
def test_an_oversized_body_is_a_413_in_the_api_format(small_proxy: ProxyServer, upstream: FakeUpstream,
                                                      api: str) -> None:
    _, body = request_for(api, text="x" * 2000)
    r = post(small_proxy, api, json.dumps(body).encode())
    assert r.status_code == 413
    assert_http_error(api, 413, r.content)
    assert upstream.seen == []
    _, body = request_for(api, text="small")
    assert post(small_proxy, api, json.dumps(body).encode()).status_code == 200


def raw_request(proxy: ProxyServer, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """A request written by hand (httpx normalises paths)."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        s.sendall(head.encode("latin-1") + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
                  + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


TRICKS = [
    "/v1/../v1/chat/completions", "/v1/%2e%2e/v1/chat/completions", "/v1/%2E%2E/secret",
    "/v1%2Fchat%2Fcompletions", "/v1/chat%2fcompletions", "//evil.example/v1/chat/completions",
    "/v1/./chat/completions", "/v1/chat/completions/..", "/gemini/..%2Fv1/chat/completions",
    "/v1beta/models/m%2F..%2F..%2Fx:generateContent", "/openai/../anthropic/v1/messages",
    "/v1\\..\\chat/completions",
]


@pytest.mark.parametrize("target", TRICKS)
def test_path_tricks_are_refused_and_reach_no_host(default_proxy: ProxyServer, upstream: FakeUpstream,
                                                   target: str) -> None:
    _, body = request_for("chat")
    status, resp = raw_request(default_proxy, f"POST {target} HTTP/1.1\r\nhost: x\r\n"
                                              "content-type: application/json\r\n", json.dumps(body).encode())
    assert status in (400, 404), resp
    assert "error" in json.loads(resp)
    assert upstream.seen == []


def test_an_absolute_url_target_never_reaches_its_host(default_proxy: ProxyServer, upstream: FakeUpstream) -> None:
    _, body = request_for("chat")
    with FaultyServer("count") as evil:
        status, resp = raw_request(default_proxy, f"POST http://{evil.host}/v1/chat/completions HTTP/1.1\r\n"
                                                  f"host: {evil.host}\r\ncontent-type: application/json\r\n",
                                   json.dumps(body).encode())
        assert evil.connections == 0
    # Either refused, or sent to the configured upstream: never to the host in the target.
    assert status == 400 or (status == 200 and len(upstream.seen) == 1), (status, resp)


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_routing_headers_cannot_redirect_the_upstream(default_proxy: ProxyServer, upstream: FakeUpstream,
                                                      api: str) -> None:
    path, body = request_for(api, stream=False)
    with FaultyServer("count") as evil:
        tricks = {"host": evil.host, "x-forwarded-host": evil.host, "x-forwarded-proto": "https",
                  "x-forwarded-port": str(evil.port), "forwarded": f"host={evil.host};proto=http",
                  "x-original-url": f"http://{evil.host}/", "x-rewrite-url": f"http://{evil.host}/",
                  "connection": "keep-alive, x-hop-secret", "x-hop-secret": "must-not-travel",
                  "proxy-authorization": "Basic c2VjcmV0", "te": "trailers", "upgrade": "h2c"}
        r = httpx.post(default_proxy.url + path, json=body, headers={**headers_for(api), **tricks})
        assert evil.connections == 0
    assert r.status_code == 200, r.text
    assert len(upstream.seen) == 1
    sent = {k.lower(): v for k, v in upstream.seen[0].headers.items()}
    for name in ("x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "forwarded", "x-hop-secret",
                 "proxy-authorization", "te", "upgrade"):
        assert name not in sent, name
    assert sent["host"] == f"127.0.0.1:{upstream.port}"


# ----------------------------------------------------------------------------------- fuzzing
WIRES: list[WireFormat] = [OpenAIChat(), OpenAIResponses(), AnthropicMessages(), Gemini()]
CODECS = [(w, sse) for w in WIRES for sse in ((True, False) if isinstance(w, Gemini) else (True,))]
JSON_CODECS = CODECS

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=5),
    max_leaves=20)
KEYS = ["type", "choices", "delta", "content", "text", "candidates", "parts", "index", "tool_calls",
        "function", "arguments", "finish_reason", "finishReason", "error", "message", "content_block",
        "response", "item", "output_index", "functionCall", "args", "name", "id", "partial_json"]
frames_json = st.recursive(
    st.none() | st.integers() | st.text(max_size=10),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(KEYS), kids, max_size=5),
    max_leaves=25)


def _frame(obj: Any, event: str | None, crlf: bool) -> bytes:
    nl = "\r\n" if crlf else "\n"
    return ((f"event: {event}{nl}" if event else "") + f"data: {json.dumps(obj)}{nl}{nl}").encode()


def _feed_all(wire: WireFormat, sse: bool, chunks: list[bytes]) -> bytes:
    codec = wire.new_stream(sse=sse)
    out = b""
    for c in chunks:
        out += b"".join(f.raw for f in codec.feed(c))
    out += b"".join(f.raw for f in codec.flush())
    return out


@pytest.mark.parametrize(("wire", "sse"), CODECS, ids=lambda x: getattr(x, "name", str(x)))
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.binary(max_size=64), max_size=8))
def test_codecs_take_random_bytes_and_keep_them(wire: WireFormat, sse: bool, data: list[bytes]) -> None:
    assert _feed_all(wire, sse, data) == b"".join(data)


@pytest.mark.parametrize(("wire", "sse"), JSON_CODECS, ids=lambda x: getattr(x, "name", str(x)))
@settings(max_examples=60, deadline=None, derandomize=True)
@given(objs=st.lists(st.tuples(frames_json, st.sampled_from([None, "message_start", "content_block_delta",
                                                              "response.output_text.delta", "error"]),
                               st.booleans()), min_size=1, max_size=6),
       cut=st.integers(min_value=1, max_value=50))
def test_codecs_take_random_json_frames_and_keep_them(wire: WireFormat, sse: bool, objs: list[Any], cut: int) -> None:
    if sse:
        raw = b"".join(_frame(o, e, crlf) for o, e, crlf in objs)
    else:
        raw = b"[" + b",\r\n".join(json.dumps(o).encode() for o, _, _ in objs) + b"]"
    chunks = [raw[i:i + cut] for i in range(0, len(raw), cut)]
    assert _feed_all(wire, sse, chunks) == raw


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
@settings(max_examples=50, deadline=None, derandomize=True)
@given(body=st.dictionaries(st.sampled_from(["model", "messages", "input", "contents", "system", "instructions",
                                             "systemInstruction", "tools", "stream", "max_tokens", "role",
                                             "content", "parts"]), json_values, max_size=6)
       | st.dictionaries(st.sampled_from(["messages", "input", "contents"]),
                         st.lists(st.dictionaries(st.sampled_from(["role", "content", "parts", "type", "text",
                                                                   "tool_calls", "function_call"]),
                                                  json_values, max_size=4), max_size=3), min_size=1),
       stream=st.booleans())
def test_parse_request_raises_only_bad_request(wire: WireFormat, body: dict[str, Any], stream: bool) -> None:
    try:
        wire.parse_request(body, stream=stream)
    except BadRequest:
        pass
