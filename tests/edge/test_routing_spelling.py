"""Routing by spelling (issue 10.1): however a client spells a model endpoint, it is guarded or
refused, and the upstream receives the one canonical spelling the proxy routed on.

Each spelling is sent as raw bytes over a socket (httpx would normalise the path) to the proxy, whose
upstream answers with a credential in the text: the client must see the replacement, never the key.
"""

from __future__ import annotations

import json
import socket

import pytest

from proxy.edge.routes import BadPath, resolve
from tests.adversarial import LEAKY, SECRET
from tests.fakes.faulty import assert_http_error, headers_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply


def raw_post(proxy: ProxyServer, target: str, body: dict[str, object], headers: dict[str, str],
             method: str = "POST") -> tuple[int, bytes]:
    """A request written by hand, the target exactly as given."""
    return raw_send(proxy, target, json.dumps(body).encode(), headers, method)


def raw_send(proxy: ProxyServer, target: str, payload: bytes, headers: dict[str, str],
             method: str = "POST") -> tuple[int, bytes]:
    """``raw_post`` with the body's bytes as given."""
    head = f"{method} {target} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s:
        s.sendall(head.encode("latin-1") + f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode()
                  + payload)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head_bytes.lower():
        rest = _dechunk(rest)
    return int(data.split(b" ", 2)[1]), rest


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2:]
    return out


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": "m", "input": "hi"}
MESSAGES = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

# (target as the client spells it, body, API for its headers, path the upstream must receive)
SPELLINGS = [
    ("/v1/chat/completion%73", CHAT, "chat", "/v1/chat/completions"),
    ("/v1/chat/completions/", CHAT, "chat", "/v1/chat/completions"),
    ("/v1//chat//completions", CHAT, "chat", "/v1/chat/completions"),
    ("/V1/Chat/Completions", CHAT, "chat", "/v1/chat/completions"),
    ("/v1/%63hat/completions", CHAT, "chat", "/v1/chat/completions"),
    ("/v1beta/openai/chat/completions", CHAT, "chat", "/v1beta/openai/chat/completions"),
    ("/openai/deployments/gpt4/chat/completions?api-version=2024-10-21", CHAT, "chat",
     "/deployments/gpt4/chat/completions"),
    ("/some/gateway/prefix/v1/chat/completions", CHAT, "chat", "/some/gateway/prefix/v1/chat/completions"),
    ("/v1/%72esponses", RESPONSES, "responses", "/v1/responses"),
    ("/v1/responses/", RESPONSES, "responses", "/v1/responses"),
    ("/v1/me%73sages", MESSAGES, "anthropic", "/v1/messages"),
    ("/v1/messages/?beta=true", MESSAGES, "anthropic", "/v1/messages"),
    ("/ANTHROPIC/V1/MESSAGES", MESSAGES, "anthropic", "/v1/messages"),
    ("/v1beta/models/m%3AgenerateContent", GEMINI, "gemini", "/v1beta/models/m:generateContent"),
    ("/v1beta/models/m:GenerateContent", GEMINI, "gemini", "/v1beta/models/m:generateContent"),
    ("/V1BETA/models/m:generateContent/", GEMINI, "gemini", "/v1beta/models/m:generateContent"),
    ("/v1beta/tunedModels/mine:generateContent", GEMINI, "gemini", "/v1beta/tunedModels/mine:generateContent"),
    ("/v1/projects/p/locations/l/publishers/google/models/m:generateContent", GEMINI, "gemini",
     "/v1/projects/p/locations/l/publishers/google/models/m:generateContent"),
]


@pytest.mark.parametrize(("target", "body", "api", "canonical"), SPELLINGS, ids=[s[0] for s in SPELLINGS])
def test_every_spelling_of_a_model_endpoint_is_guarded_and_sent_canonical(
        secrets_guard: ProxyServer, upstream: FakeUpstream, target: str, body: dict[str, object], api: str,
        canonical: str) -> None:
    upstream.queue(Reply(text=LEAKY))
    status, resp = raw_post(secrets_guard, target, body, headers_for(api))
    assert status == 200, resp
    assert SECRET.encode() not in resp
    assert b"[withheld: credential]" in resp
    assert [s.path for s in upstream.seen] == [canonical]


STREAM_SPELLINGS = [
    ("/v1beta/models/m%3AstreamGenerateContent?alt=sse", "alt=sse"),
    ("/v1beta/models/m:streamgeneratecontent?%61lt=%73se", "alt=sse"),
    ("/v1beta/models/m:streamGenerateContent?alt=SSE&key=k", "key=k&alt=sse"),
    ("/v1beta/models/m:streamGenerateContent?$alt=sse", "alt=sse"),
    ("/v1beta/models/m:streamGenerateContent", ""),
    ("/v1beta/models/m:streamGenerateContent?alt=json", ""),
]


@pytest.mark.parametrize(("target", "query"), STREAM_SPELLINGS, ids=[s[0] for s in STREAM_SPELLINGS])
def test_gemini_streams_are_guarded_however_alt_is_spelled(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                           target: str, query: str) -> None:
    upstream.queue(Reply(text=LEAKY, deltas=["The key is AKIAQ7XR", "4K2MZT9BWP3N as requested."]))
    status, resp = raw_post(secrets_guard, target, GEMINI, headers_for("gemini"))
    assert status == 200, resp
    assert SECRET.encode() not in resp and b"AKIAQ7XR" not in resp
    assert [(s.path, s.query) for s in upstream.seen] == [("/v1beta/models/m:streamGenerateContent", query)]


@pytest.mark.parametrize("target", ["/v1beta/models/m:streamGenerateContent?alt=proto",
                                    "/v1beta/models/m:streamGenerateContent?alt=sse&alt=json"])
def test_an_alt_the_proxy_cannot_read_is_refused(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                 target: str) -> None:
    status, resp = raw_post(secrets_guard, target, GEMINI, headers_for("gemini"))
    assert status == 400
    assert_http_error("gemini", 400, resp)
    assert upstream.seen == []


REFUSED = [
    ("POST", "/v1/completions", "chat"), ("POST", "/v1/complet%69ons", "chat"),
    ("POST", "/v1beta/openai/completions", "chat"), ("POST", "/openai/deployments/d/completions", "chat"),
    ("POST", "/v1/complete", "anthropic"),
    ("GET", "/v1/responses/resp_123", "responses"), ("GET", "/v1/responses/resp_123?stream=true", "responses"),
    ("POST", "/v1/responses/resp_123/cancel", "responses"),
    ("GET", "/v1/chat/completions", "chat"), ("GET", "/v1/chat/completions/chatcmpl-1", "chat"),
    ("GET", "/v1/chat/completions/chatcmpl-1/messages", "chat"),
    ("POST", "/v1/chat/completions/chatcmpl-1", "chat"),
    ("GET", "/v1/conversations/conv_1/items", "chat"), ("POST", "/v1/threads/runs", "chat"),
    ("GET", "/v1/threads/t/messages", "chat"), ("POST", "/v1/batches", "chat"),
    ("GET", "/v1/messages/batches/b/results", "anthropic"), ("POST", "/v1/messages/batches", "anthropic"),
    ("POST", "/v1beta/models/m:batchGenerateContent", "gemini"), ("POST", "/v1beta/models/m:generateText", "gemini"),
    ("POST", "/v1beta/models/m:generateAnswer", "gemini"), ("POST", "/v1beta/models/m:predict", "gemini"),
    ("GET", "/v1beta/models/m:generateContent", "gemini"), ("PUT", "/v1/chat/completions", "chat"),
    ("GET", "/v1/messages", "anthropic"), ("POST", "/v1beta/interactions", "gemini"),
    ("POST", "/v1/images/generations", "chat"), ("POST", "/v1/audio/transcriptions", "chat"),
    ("POST", "/v1/realtime/calls", "chat"),
    # a model method with more around it than ``{model}:{method}`` at the end of the path
    ("POST", "/v1beta/models/m:generateContent:x", "gemini"),
    ("POST", "/v1beta/models/m:streamGenerateContent:x?alt=sse", "gemini"),
    ("POST", "/v1beta/models/m%3AgenerateContent%3Ax", "gemini"),
    ("POST", "/v1beta/models/m:generateContent.json", "gemini"),
    ("POST", "/v1beta/models/m:generateContent/x", "gemini"),
    ("POST", "/v1beta/tunedModels/t:generateContentX", "gemini"),
    ("POST", "/v1beta/models/m:generateContent%20", "gemini"),
]


@pytest.mark.parametrize(("method", "target", "api"), REFUSED, ids=[f"{m} {t}" for m, t, _ in REFUSED])
def test_model_endpoints_the_proxy_cannot_check_are_refused(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                           method: str, target: str, api: str) -> None:
    status, resp = raw_post(secrets_guard, target, CHAT, headers_for(api), method=method)
    assert status == 403, resp
    err = assert_http_error(api, 403, resp)
    assert "guardproxy does not relay" in str(err["message"])
    assert upstream.seen == []


def test_refusals_apply_only_while_guarding(plain_proxy: ProxyServer, upstream: FakeUpstream) -> None:
    status, _ = raw_post(plain_proxy, "/v1/completions", CHAT, headers_for("chat"))
    assert status == 200
    assert [s.path for s in upstream.seen] == ["/v1/completions"]


PASSED = [("GET", "/v1/models"), ("POST", "/v1/messages/count_tokens"), ("POST", "/v1beta/models/m:countTokens"),
          ("POST", "/v1/embeddings"), ("GET", "/v1/responses/resp_1/input_items"),
          ("DELETE", "/v1/responses/resp_1"), ("POST", "/v1/uploads/u/complete")]


@pytest.mark.parametrize(("method", "target"), PASSED, ids=[f"{m} {t}" for m, t in PASSED])
def test_endpoints_without_model_output_still_pass(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                  method: str, target: str) -> None:
    status, _ = raw_post(secrets_guard, target, CHAT, headers_for("chat"), method=method)
    assert status == 200
    assert [s.path for s in upstream.seen] == [target]


COMPACT_PAYLOADS = [
    b'{"model":"m","previous_response_id":"resp_1"}',
    b'{"model":"m","previous\\u005fresponse_id":"resp_1"}',            # an escape the upstream decodes
    b'{"model":"m","previous_response_id":"resp_1","previous_response_id":null}',  # first or last wins
]


@pytest.mark.parametrize("payload", COMPACT_PAYLOADS)
def test_compacting_a_stored_response_is_refused(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                 payload: bytes) -> None:
    # The compacted items would carry the upstream's stored original of an answer the proxy replaced.
    status, resp = raw_send(secrets_guard, "/v1/responses/compact", payload, headers_for("chat"))
    assert status == 403, resp
    assert "previous_response_id" in str(assert_http_error("responses", 403, resp)["message"])
    assert upstream.seen == []


def test_compacting_the_clients_own_items_passes(secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    body = {"model": "m", "input": [{"role": "user", "content": "hi"}], "previous_response_id": None}
    status, _ = raw_post(secrets_guard, "/v1/responses/compact", body, headers_for("chat"))
    assert status == 200
    assert [s.path for s in upstream.seen] == ["/v1/responses/compact"]


def test_a_background_response_is_refused(secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    status, resp = raw_post(secrets_guard, "/v1/responses", {**RESPONSES, "background": True}, headers_for("chat"))
    assert status == 400
    assert "background" in str(assert_http_error("responses", 400, resp)["message"])
    assert upstream.seen == []


def test_method_override_headers_never_reach_the_upstream(secrets_guard: ProxyServer, upstream: FakeUpstream) -> None:
    status, _ = raw_post(secrets_guard, "/v1/models", {}, {**headers_for("gemini"), "x-http-method-override": "POST",
                                                         "x-http-method": "POST"}, method="GET")
    assert status == 200
    sent = {k.lower() for k in upstream.seen[0].headers}
    assert "x-http-method-override" not in sent and "x-http-method" not in sent


@pytest.mark.parametrize("path", ["/v1/chat/completions%2F", "/v1/chat/completion%2573", "/v1/chat/completions%3F",
                                  "/v1/chat/completions;x=1", "/v1/chat/completions%", "/v1/%2e%2e/x"])
def test_structural_escapes_are_refused(path: str) -> None:
    with pytest.raises(BadPath):
        resolve(path, "POST", {}, "")


def test_a_gemini_unary_call_is_sent_without_alt() -> None:
    route = resolve("/v1beta/models/m:generateContent", "POST", {}, "alt=sse&key=k")
    assert (route.wire, route.stream, route.query) == ("gemini", False, "key=k")
