#!/usr/bin/env python3
"""A keyless stand-in for an OpenAI-compatible provider, for guardproxy's container demo.

Standard library only (it runs in the stock ``python:3.11-slim`` image). It answers

* ``POST /v1/chat/completions`` non-streaming (``chat.completion``) and streaming (SSE
  ``chat.completion.chunk`` frames, ``finish_reason`` and ``data: [DONE]``), with a fixed reply;
* ``GET /healthz`` with ``ok`` (the compose healthcheck);
* ``GET /v1/models`` with a one-model list;
* anything else with an OpenAI-shaped 404.

When the last user message contains the word ``LEAK`` the reply carries a fake, random-looking
GitHub token, so the demo can show the proxy's ``secrets`` guardrail withholding it. The token is
assembled at run time and is not a credential.

    python deploy/fake_upstream.py --host 127.0.0.1 --port 0

prints ``fake-upstream listening on http://HOST:PORT`` (the real port when 0 was asked) and serves
until interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Hello from the guardproxy demo upstream. This reply is fixed."
# Fake and random-looking on purpose (the secrets guardrail ignores placeholders); split so that
# no scanner mistakes this file for one holding a token.
FAKE_TOKEN = "ghp_" + "Wsb4jpCydvEQqNrNs3jEpqRM7iwLdovKTTus"
LEAK_REPLY = f"Sure, the deploy token is {FAKE_TOKEN} and it works for every repo."
LEAK_TRIGGER = "LEAK"
MAX_BODY = 8 * 1024 * 1024


def reply_for(body: dict[str, Any]) -> str:
    """The fixed reply, or the leaking one when the last user message asks for it."""
    messages = body.get("messages") or []
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):  # content parts
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return LEAK_REPLY if LEAK_TRIGGER in str(content or "") else REPLY
    return REPLY


def words(text: str) -> list[str]:
    """Cut a reply into stream deltas: one word each, with the space kept in front."""
    parts = text.split(" ")
    return [parts[0]] + [" " + p for p in parts[1:]]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-upstream/1"

    # ------------------------------------------------------------------ helpers
    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("fake-upstream: %s\n" % (format % args))

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        """One HTTP/1.1 chunk, flushed at once (one SSE frame per write)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    # ------------------------------------------------------------------ routes
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            data = b"ok\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [
                {"id": "demo-model", "object": "model", "created": 0, "owned_by": "guardproxy-demo"}]})
        else:
            self._error(404, f"no route {path}", "not_found_error")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            self._error(413, "request body too large")
            return
        raw = self.rfile.read(length) if length else b""
        if path != "/v1/chat/completions":
            self._error(404, f"no route {path}", "not_found_error")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            self._error(400, f"invalid JSON body: {exc}")
            return
        if not isinstance(body, dict):
            self._error(400, "the JSON body is not an object")
            return
        text = reply_for(body)
        model = str(body.get("model") or "demo-model")
        cid = "chatcmpl-" + uuid.uuid4().hex[:24]
        created = int(time.time())
        usage = {"prompt_tokens": 11, "completion_tokens": len(words(text)),
                 "total_tokens": 11 + len(words(text))}
        if body.get("stream"):
            self._stream(cid, created, model, text, usage,
                         bool((body.get("stream_options") or {}).get("include_usage")))
            return
        self._send_json(200, {
            "id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": usage,
        })

    def _stream(self, cid: str, created: int, model: str, text: str, usage: dict[str, int],
                include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def frame(choices: list[dict[str, Any]], usage_: dict[str, int] | None = None) -> None:
            chunk = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                     "choices": choices, "usage": usage_}
            self._chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")

        frame([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": None},
                "logprobs": None, "finish_reason": None}])
        for piece in words(text):
            frame([{"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}])
        frame([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}])
        if include_usage:
            frame([], usage)
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="listen address (default 127.0.0.1; the compose demo passes 0.0.0.0)")
    parser.add_argument("--port", type=int, default=9000, help="listen port (0: any free port)")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    host, port = str(server.server_address[0]), int(server.server_address[1])
    print(f"fake-upstream listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
