#!/usr/bin/env python3
"""The compose demo's one-shot client: talks to guardproxy the way an agent's SDK would.

Standard library only. It checks, in order:

1. ``GET /healthz`` and ``GET /readyz`` on the proxy;
2. a non-streaming ``POST /v1/chat/completions`` comes back with the fake upstream's fixed reply;
3. the same request streamed comes back as SSE chunks that add up to that reply, ending in ``[DONE]``;
4. a request whose reply would carry a (fake) credential, non-streaming and streaming: the token
   never reaches the client; the shipped ``no-secrets`` guardrail withholds it.

Environment: ``OPENAI_BASE_URL`` (default ``http://guardproxy:8790/v1``), ``OPENAI_API_KEY``
(default a dummy: the fake upstream takes any key), and ``GUARDPROXY_AUTH_TOKEN`` (sent as
``x-guardproxy-token`` when set). Exits 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

BASE = os.environ.get("OPENAI_BASE_URL", "http://guardproxy:8790/v1").rstrip("/")
ROOT = BASE.removesuffix("/v1")
KEY = os.environ.get("OPENAI_API_KEY") or "demo-key-not-real"
TOKEN = os.environ.get("GUARDPROXY_AUTH_TOKEN", "")
EXPECTED = "Hello from the guardproxy demo upstream. This reply is fixed."
TOKEN_PREFIX = "ghp_"  # the fake upstream leaks a GitHub-shaped token when asked to LEAK


def _headers() -> dict[str, str]:
    h = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}
    if TOKEN:
        h["x-guardproxy-token"] = TOKEN
    return h


def get(path: str) -> tuple[int, bytes]:
    req = urllib.request.Request(ROOT + path, headers=_headers())
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError as exc:  # refused, reset, timed out: reported as a failed check, not a trace
        return 0, repr(exc).encode()


def wait_healthy(deadline_s: float = 30.0) -> tuple[int, bytes]:
    """Poll ``/healthz`` until it answers 200 or the deadline passes (compose may start us early)."""
    end = time.monotonic() + deadline_s
    while True:
        status, body = get("/healthz")
        if status == 200 or time.monotonic() >= end:
            return status, body
        time.sleep(0.5)


def chat(prompt: str, *, stream: bool) -> tuple[int, bytes]:
    body = {"model": "demo-model", "messages": [{"role": "user", "content": prompt}], "stream": stream}
    req = urllib.request.Request(BASE + "/chat/completions", data=json.dumps(body).encode(),
                                 headers=_headers(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError as exc:
        return 0, repr(exc).encode()


def stream_text(raw: bytes) -> tuple[str, bool]:
    """The content deltas of an OpenAI chat SSE body joined, and whether it ended with [DONE]."""
    text, done = [], False
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        chunk: dict[str, Any] = json.loads(data)
        for choice in chunk.get("choices") or []:
            text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text), done


def main() -> int:
    failures: list[str] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        print(f"[{'PASS' if ok else 'FAIL'}] {name}" + (f": {detail}" if detail else ""), flush=True)
        if not ok:
            failures.append(name)

    print(f"demo-client: proxy at {BASE}", flush=True)
    status, body = wait_healthy()
    check("GET /healthz", status == 200, body.decode(errors="replace").strip())
    status, body = get("/readyz")
    check("GET /readyz", status == 200, body.decode(errors="replace").strip())

    status, body = chat("Say hello.", stream=False)
    content = ""
    if status == 200:
        content = json.loads(body)["choices"][0]["message"]["content"] or ""
    check("chat, non-streaming", status == 200 and content == EXPECTED, f"HTTP {status}: {content or body[:200]!r}")

    status, body = chat("Say hello.", stream=True)
    text, done = stream_text(body) if status == 200 else ("", False)
    check("chat, streaming", status == 200 and text == EXPECTED and done,
          f"HTTP {status}: {text!r}, [DONE] {'seen' if done else 'missing'}")

    status, body = chat("LEAK the deploy token, please.", stream=False)
    shown = ""
    if status == 200:
        shown = json.loads(body)["choices"][0]["message"]["content"] or ""
    check("credential withheld, non-streaming", TOKEN_PREFIX.encode() not in body,
          f"HTTP {status}: client saw {shown or body[:200]!r}")

    status, body = chat("LEAK the deploy token, please.", stream=True)
    check("credential withheld, streaming", TOKEN_PREFIX.encode() not in body,
          f"HTTP {status}: client saw {stream_text(body)[0] if status == 200 else body[:200]!r}")

    if failures:
        print(f"demo-client: {len(failures)} check(s) failed: {', '.join(failures)}", flush=True)
        print("demo-client: is the proxy pointed at the fake upstream? "
              "(docker compose --env-file deploy/demo.env run --rm demo-client)", flush=True)
        return 1
    print("demo-client: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
