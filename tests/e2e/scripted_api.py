"""A scripted model API on loopback for a real agent behind the proxy: Anthropic Messages (Claude
Code) and OpenAI Responses over SSE (Codex with a custom provider).

``POST /v1/messages`` (streamed or not; Claude Code adds ``?beta=true``) and ``POST /v1/responses``
are answered by ``model(body)``, which returns the turn as ``(text, [(tool_name, arguments), ...])``;
tool-call ids are unique per run, as the real APIs' are. ``/v1/messages/count_tokens`` answers a
count. Anything else is recorded as unexpected and answered 404."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.served import ServedApp
from tests.fakes.upstream import Reply, responses_frames, sse

Turn = tuple[str, list[tuple[str, dict[str, Any]]]]


@dataclass
class Request:
    path: str
    body: dict[str, Any]


class ScriptedAPI(ServedApp):
    def __init__(self, model: Callable[[dict[str, Any]], Turn]) -> None:
        self.model = model
        self.seen: list[Request] = []
        self.unexpected: list[str] = []
        self.errors: list[str] = []
        self._ids = itertools.count(1)
        super().__init__("scripted-api")

    def routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else {}
        if request.path == "/v1/messages/count_tokens":
            return web.json_response({"input_tokens": 42})
        if request.method != "POST" or request.path not in ("/v1/messages", "/v1/responses"):
            self.unexpected.append(f"{request.method} {request.path}")
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no"}},
                                     status=404)
        self.seen.append(Request(request.path, body))
        try:
            text, calls = self.model(body)
        except Exception as exc:  # noqa: BLE001 - reported to the test, answered as the API would
            self.errors.append(repr(exc))
            return web.json_response({"type": "error", "error": {"type": "api_error", "message": repr(exc)}},
                                     status=500)
        if request.path == "/v1/responses":
            return await self._responses(request, body, text, calls)
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks += [{"type": "tool_use", "id": f"toolu_e2e{next(self._ids)}", "name": n, "input": a} for n, a in calls]
        message = {"id": f"msg_e2e{next(self._ids)}", "type": "message", "role": "assistant",
                   "model": body.get("model", "claude"), "content": blocks,
                   "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                   "usage": {"input_tokens": 42, "output_tokens": 7}}
        if not body.get("stream"):
            return web.json_response(message)
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for frame in _frames(message):
            await resp.write(frame)
        await resp.write_eof()
        return resp

    async def _responses(self, request: web.Request, body: dict[str, Any], text: str,
                         calls: list[tuple[str, dict[str, Any]]]) -> web.StreamResponse:
        turn = next(self._ids)
        frames = responses_frames(Reply(text=text, tool_calls=list(calls)), str(body.get("model", "gpt-5")))
        unique = [f.replace(b'"call_id": "call_', f'"call_id": "call_e2e{turn}_'.encode())
                  .replace(b'"fc_', f'"fc_e2e{turn}_'.encode())
                  .replace(b'"resp_fake1"', f'"resp_e2e{turn}"'.encode()) for f in frames]
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for frame in unique:
            await resp.write(frame)
        await resp.write_eof()
        return resp


def _frames(message: dict[str, Any]) -> list[bytes]:
    start = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 42, "output_tokens": 1}}
    out = [sse({"type": "message_start", "message": start}, "message_start")]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            out.append(sse({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                           "content_block_start"))
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            head = {**block, "input": {}}
            out.append(sse({"type": "content_block_start", "index": i, "content_block": head}, "content_block_start"))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(sse({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta"))
        out.append(sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    out.append(sse({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 7}}, "message_delta"))
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return out
