"""A scripted Gemini API on a loopback socket, for driving a real Gemini CLI through the proxy.

The "model" is a Python callable (a ``Brain``): it gets each main-turn request body and returns the
parts of the next model turn (a ``functionCall`` part, or text). Everything else the CLI may call
around a turn gets a valid, boring answer so the CLI never stalls in retries:

- ``:streamGenerateContent?alt=sse``: SSE frames ``data: {json}\\r\\n\\r\\n`` (exactly what the CLI's
  bundled SDK splits on), the last one with ``finishReason: "STOP"`` and ``usageMetadata``;
- ``:streamGenerateContent`` without ``alt``: the JSON-array form;
- ``:generateContent``: one GenerateContentResponse;
- JSON-mode utility calls (``generationConfig.responseMimeType == "application/json"``, e.g. the
  model router or the next-speaker check): schema-valid JSON built from ``responseJsonSchema``,
  without consulting the brain (shared/wire-formats.md §4.6: anything else stalls the CLI ~100 s);
- ``:countTokens`` -> ``{"totalTokens": N}``, ``:embedContent`` / ``:batchEmbedContents`` -> vectors,
  ``GET .../models`` -> an empty list; any other path -> 404 (recorded in ``unexpected``).

Every request is recorded (``seen``), in arrival order, with the time it arrived.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.served import ServedApp

Parts = list[dict[str, Any]]
Brain = Callable[[dict[str, Any]], Parts]
"""Main-turn request body -> the parts of the model's reply."""


@dataclass
class Seen:
    method: str
    path: str
    query: str
    body: Any
    kind: str
    """"turn" (answered by the brain), "json" (JSON-mode utility call), "count", "embed", "models",
    "unexpected"."""
    reply: Parts | None = None
    at: float = field(default_factory=time.monotonic)


def function_call(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        fc["id"] = call_id
    return {"functionCall": fc}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def instance_of(schema: Any, depth: int = 0) -> Any:
    """A minimal value valid against a JSON schema (the subset Gemini CLI's utility calls use)."""
    if not isinstance(schema, dict) or depth > 12:
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return instance_of(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    kind = str(kind or "object").lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: instance_of(props.get(k, {}), depth + 1) for k in schema.get("required") or props}
    if kind == "array":
        n = int(schema.get("minItems") or 0)
        return [instance_of(schema.get("items", {}), depth + 1) for _ in range(n)]
    if kind == "string":
        return "x" * int(schema.get("minLength") or 0) or "ok"
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def _response(parts: Parts, model: str, *, finish: str | None = "STOP") -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
            "modelVersion": model, "responseId": "fake-response"}


def _chunks(parts: Parts, model: str) -> list[dict[str, Any]]:
    """Text is streamed in two pieces; a function call arrives whole (as the real API sends it)."""
    out: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if "text" in part and len(part["text"]) > 1 and last:
            t = part["text"]
            out.append(_response([{"text": t[: len(t) // 2]}], model, finish=None))
            out.append(_response([{"text": t[len(t) // 2:]}], model))
        else:
            out.append(_response([part], model, finish="STOP" if last else None))
    return out or [_response([{"text": ""}], model)]


class ScriptedGemini(ServedApp):
    """The Gemini API on one loopback port, in a thread with its own event loop."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.seen: list[Seen] = []
        self.errors: list[str] = []
        """Exceptions raised by the brain (answered with HTTP 500, so the CLI fails visibly)."""
        self._lock = threading.Lock()
        super().__init__("scripted-gemini")

    def turns(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.kind == "turn"]

    def unexpected(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.kind == "unexpected"]

    def routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._handle)

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path, query = request.path, request.query_string
        model, _, method = path.rpartition("/")[2].partition(":")
        seen = Seen(request.method, path, query, body, "unexpected")

        if request.method == "GET" and path.rstrip("/").endswith("/models"):
            seen.kind = "models"
            self._record(seen)
            return web.json_response({"models": []})
        if request.method != "POST" or "/models/" not in path or not method:
            self._record(seen)
            return web.json_response({"error": {"code": 404, "message": f"no route {path}",
                                                "status": "NOT_FOUND"}}, status=404)
        if method == "countTokens":
            seen.kind = "count"
            self._record(seen)
            return web.json_response({"totalTokens": 100})
        if method in ("embedContent", "batchEmbedContents"):
            seen.kind = "embed"
            self._record(seen)
            one = {"values": [0.0] * 8}
            n = len(body.get("requests") or []) if isinstance(body, dict) else 0
            return web.json_response({"embeddings": [one] * n} if method == "batchEmbedContents"
                                     else {"embedding": one})
        if method not in ("generateContent", "streamGenerateContent") or not isinstance(body, dict):
            self._record(seen)
            return web.json_response({"error": {"code": 404, "message": f"no method {method}",
                                                "status": "NOT_FOUND"}}, status=404)

        config = body.get("generationConfig") or body.get("generation_config") or {}
        if config.get("responseMimeType", config.get("response_mime_type")) == "application/json":
            seen.kind = "json"
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            parts: Parts = [{"text": json.dumps(instance_of(schema))}]
        else:
            seen.kind = "turn"
            try:
                parts = self.brain(body)
            except Exception as exc:  # noqa: BLE001 - reported to the test, answered as a 500
                self.errors.append(f"{type(exc).__name__}: {exc}")
                self._record(seen)
                return web.json_response({"error": {"code": 500, "message": f"fake brain: {exc}",
                                                    "status": "INTERNAL"}}, status=500)
        seen.reply = parts
        self._record(seen)

        if method == "generateContent":
            return web.json_response(_response(parts, model))
        chunks = _chunks(parts, model)
        resp = web.StreamResponse(status=200)
        if request.query.get("alt") == "sse":
            resp.content_type = "text/event-stream"
            await resp.prepare(request)
            for c in chunks:
                await resp.write(b"data: " + json.dumps(c).encode() + b"\r\n\r\n")
        else:
            resp.content_type = "application/json"
            await resp.prepare(request)
            for i, c in enumerate(chunks):
                await resp.write((b"[" if i == 0 else b",\r\n") + json.dumps(c).encode())
            await resp.write(b"]")
        await resp.write_eof()
        return resp
