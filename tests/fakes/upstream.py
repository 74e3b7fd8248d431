"""A fake provider upstream on a real loopback socket, speaking each API's wire format.

Tests queue ``Reply`` scripts; each request pops the next one (or gets a plain default answer) and
is recorded, so a test can assert what the proxy sent upstream (e.g. a retry's mandate). The frames
are written the way the real APIs write them (see shared/wire-formats.md), independently of the
proxy's own codecs, optionally cut into awkward byte-sized writes.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.served import ServedApp


@dataclass
class Reply:
    text: str = "Hello from upstream."
    deltas: list[str] | None = None
    """How the text is cut into stream deltas (default: words)."""
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    """(name, arguments); a string is sent as the raw argument text where the API carries text
    (chat, Responses, Anthropic streams): truncated or escaped JSON."""
    status: int = 200
    error_message: str = "upstream says no"
    split_bytes: int | None = None
    """Write the stream in writes of this many bytes (awkward offsets)."""
    break_after_frames: int | None = None
    """Reset the connection after this many frames."""
    stall_after_frames: int | None = None
    stall_s: float = 30.0
    headers_delay_s: float = 0.0
    error_frame_after: int | None = None
    """Send the API's in-stream error after this many frames."""
    extra_headers: dict[str, str] = field(default_factory=dict)
    raw_frames: list[bytes] | None = None
    """Send exactly these bytes as the stream (malformed-SSE tests), one write each."""
    raw_body: bytes | None = None
    """Answer with exactly these bytes as a sized body (any request, streaming or not): with
    ``content_type`` and ``extra_headers`` this is the attacker-controlled upstream of the
    adversarial suites."""
    content_type: str | None = None
    """Overrides the content-type of a stream or of ``raw_body``."""


@dataclass
class Seen:
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    """The body's exact bytes."""


def _words(text: str) -> list[str]:
    out: list[str] = []
    for i, w in enumerate(text.split(" ")):
        out.append(w if i == 0 else " " + w)
    return [w for w in out if w]


def args_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def sse(obj: Any, event: str | None = None, crlf: bool = False) -> bytes:
    nl = "\r\n" if crlf else "\n"
    head = f"event: {event}{nl}" if event else ""
    return f"{head}data: {json.dumps(obj)}{nl}{nl}".encode()


# ----------------------------------------------------------------------------------- renderers
def chat_frames(r: Reply, model: str, include_usage: bool) -> list[bytes]:
    base = {"id": "chatcmpl-fake1", "object": "chat.completion.chunk", "created": 1795975044, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish}], "usage": None})

    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for d in (r.deltas if r.deltas is not None else _words(r.text)):
        frames.append(chunk({"content": d}))
    for i, (name, args) in enumerate(r.tool_calls):
        a = args_text(args)
        frames.append(chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                             "function": {"name": name, "arguments": ""}}]}))
        for j in range(0, len(a), 7):
            frames.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": a[j:j + 7]}}]}))
    frames.append(chunk({}, "tool_calls" if r.tool_calls else "stop"))
    if include_usage:
        frames.append(sse({**base, "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7,
                                                             "total_tokens": 18}}))
    frames.append(b"data: [DONE]\n\n")
    return frames


def chat_body(r: Reply, model: str) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": None if r.tool_calls and not r.text else r.text,
                           "refusal": None}
    if r.tool_calls:
        msg["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                              "function": {"name": n, "arguments": args_text(a)}}
                             for i, (n, a) in enumerate(r.tool_calls)]
    return {"id": "chatcmpl-fake1", "object": "chat.completion", "created": 1795975044, "model": model,
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": "tool_calls" if r.tool_calls else "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}


def anthropic_frames(r: Reply, model: str) -> list[bytes]:
    f = [sse({"type": "message_start", "message": {
        "id": "msg_fake1", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 1}}},
        "message_start")]
    idx = 0
    if r.text:
        f.append(sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                     "content_block_start"))
        f.append(sse({"type": "ping"}, "ping"))
        for d in (r.deltas if r.deltas is not None else _words(r.text)):
            f.append(sse({"type": "content_block_delta", "index": 0,
                          "delta": {"type": "text_delta", "text": d}}, "content_block_delta"))
        f.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        idx = 1
    for i, (name, args) in enumerate(r.tool_calls):
        k = idx + i
        f.append(sse({"type": "content_block_start", "index": k, "content_block": {
            "type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}}}, "content_block_start"))
        a = args_text(args)
        for j in range(0, len(a), 7):
            f.append(sse({"type": "content_block_delta", "index": k,
                          "delta": {"type": "input_json_delta", "partial_json": a[j:j + 7]}},
                         "content_block_delta"))
        f.append(sse({"type": "content_block_stop", "index": k}, "content_block_stop"))
    f.append(sse({"type": "message_delta", "delta": {"stop_reason": "tool_use" if r.tool_calls else "end_turn",
                                                     "stop_sequence": None}, "usage": {"output_tokens": 7}},
                 "message_delta"))
    f.append(sse({"type": "message_stop"}, "message_stop"))
    return f


def anthropic_body(r: Reply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": r.text}] if r.text else []
    content += [{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a}
                for i, (n, a) in enumerate(r.tool_calls)]
    return {"id": "msg_fake1", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if r.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 7}}


def responses_frames(r: Reply, model: str) -> list[bytes]:
    seq = 0
    resp = {"id": "resp_fake1", "object": "response", "created_at": 1795975044, "model": model,
            "status": "in_progress", "output": [], "usage": None}
    out: list[bytes] = []

    def ev(t: str, **kw: Any) -> None:
        nonlocal seq
        out.append(sse({"type": t, **kw, "sequence_number": seq}, t))
        seq += 1

    ev("response.created", response=resp)
    ev("response.in_progress", response=resp)
    items: list[dict[str, Any]] = []
    oi = 0
    if r.text:
        item = {"id": "msg_fake1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        ev("response.output_item.added", output_index=0, item=item)
        ev("response.content_part.added", item_id="msg_fake1", output_index=0, content_index=0,
           part={"type": "output_text", "text": "", "annotations": []})
        for d in (r.deltas if r.deltas is not None else _words(r.text)):
            ev("response.output_text.delta", item_id="msg_fake1", output_index=0, content_index=0, delta=d,
               logprobs=[])
        ev("response.output_text.done", item_id="msg_fake1", output_index=0, content_index=0, text=r.text,
           logprobs=[])
        part = {"type": "output_text", "text": r.text, "annotations": []}
        ev("response.content_part.done", item_id="msg_fake1", output_index=0, content_index=0, part=part)
        done = {**item, "status": "completed", "content": [part]}
        ev("response.output_item.done", output_index=0, item=done)
        items.append(done)
        oi = 1
    for i, (name, args) in enumerate(r.tool_calls):
        a = args_text(args)
        item = {"id": f"fc_{i}", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": f"call_{i}", "name": name}
        ev("response.output_item.added", output_index=oi + i, item=item)
        for j in range(0, len(a), 7):
            ev("response.function_call_arguments.delta", item_id=f"fc_{i}", output_index=oi + i, delta=a[j:j + 7])
        ev("response.function_call_arguments.done", item_id=f"fc_{i}", output_index=oi + i, arguments=a)
        done = {**item, "status": "completed", "arguments": a}
        ev("response.output_item.done", output_index=oi + i, item=done)
        items.append(done)
    ev("response.completed", response={**resp, "status": "completed", "output": items,
                                       "usage": {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18,
                                                 "input_tokens_details": {"cached_tokens": 0},
                                                 "output_tokens_details": {"reasoning_tokens": 0}}})
    return out


def responses_body(r: Reply, model: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    if r.text:
        items.append({"id": "msg_fake1", "type": "message", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": r.text, "annotations": []}]})
    items += [{"id": f"fc_{i}", "type": "function_call", "status": "completed", "arguments": args_text(a),
               "call_id": f"call_{i}", "name": n} for i, (n, a) in enumerate(r.tool_calls)]
    return {"id": "resp_fake1", "object": "response", "created_at": 1795975044, "model": model,
            "status": "completed", "output": items, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18,
                                   "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens_details": {"reasoning_tokens": 0}}}


def gemini_chunks(r: Reply, model: str) -> list[dict[str, Any]]:
    def cand(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            c["finishReason"] = finish
        return {"candidates": [c], "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11},
                "modelVersion": model, "responseId": "fake1"}

    deltas = r.deltas if r.deltas is not None else _words(r.text)
    chunks = [cand([{"text": d}]) for d in deltas]
    calls = [{"functionCall": {"name": n, "args": a}} for n, a in r.tool_calls]
    if calls:
        chunks.append(cand(calls, "STOP"))
    elif chunks:
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    else:
        chunks.append(cand([{"text": ""}], "STOP"))
    chunks[-1]["usageMetadata"] = {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18}
    return chunks


def gemini_body(r: Reply, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": r.text}] if r.text else []
    parts += [{"functionCall": {"name": n, "args": a}} for n, a in r.tool_calls]
    return {"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18},
            "modelVersion": model, "responseId": "fake1"}


def error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == "anthropic":
        return {"type": "error", "error": {"type": "rate_limit_error" if status == 429 else "api_error",
                                           "message": message}, "request_id": "req_fake"}
    if api == "gemini":
        return {"error": {"code": status, "message": message,
                          "status": "RESOURCE_EXHAUSTED" if status == 429 else "INTERNAL"}}
    return {"error": {"message": message, "type": "requests" if status == 429 else "server_error",
                      "param": None, "code": None}}


def stream_error(api: str, message: str) -> bytes:
    if api == "anthropic":
        return sse({"type": "error", "error": {"type": "overloaded_error", "message": message}}, "error")
    if api == "gemini":
        return json.dumps({"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}}).encode()
    if api == "responses":
        return sse({"type": "error", "code": "server_error", "message": message, "param": None,
                    "sequence_number": 99}, "error")
    return sse({"error": {"message": message, "type": "server_error", "param": None, "code": None}})


# ----------------------------------------------------------------------------------- server
class FakeUpstream(ServedApp):
    """All four APIs on one loopback port, in a thread with its own event loop."""

    handler_cancellation = True

    def __init__(self, port: int = 0) -> None:
        self.replies: deque[Reply] = deque()
        self.seen: list[Seen] = []
        self.judge_replies: deque[str] = deque()
        self.judge_delay_s = 0.0
        self.judge_status = 200
        """An error status for judge requests (judge-outage tests)."""
        self.judge_refuse: Any = None
        """``(api, body) -> (status, message) | None``: a judge request refused with that API's error
        (a model refusing ``temperature``, a prompt over its context)."""
        self.open_streams = 0
        self.closed_streams = 0
        super().__init__("fake-upstream", port)

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def reset(self) -> None:
        self.replies.clear()
        self.seen.clear()
        self.judge_replies.clear()
        self.judge_delay_s = 0.0
        self.judge_status = 200
        self.judge_refuse = None

    def routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.seen.append(Seen(request.path, request.query_string, dict(request.headers), body, raw))
        path = request.path
        if path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": 11})
        if path.endswith(":countTokens"):
            return web.json_response({"totalTokens": 11})
        if path in ("/v1/models",):
            return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        if path == "/v1/moderations":
            return web.json_response({"results": [{"flagged": False, "categories": {}, "category_scores": {}}]})
        if path == "/echo":
            return web.json_response({"method": request.method, "query": request.query_string,
                                      "headers": dict(request.headers)})
        api = ("anthropic" if path.startswith("/v1/messages") else "responses" if path.endswith("/responses")
               else "gemini" if ":" in path.rsplit("/", 1)[-1] else "chat")
        if isinstance(body, dict) and self._is_judge(body):
            return await self._judge(api, body, path)
        reply = self.replies.popleft() if self.replies else Reply()
        if reply.headers_delay_s:
            await asyncio.sleep(reply.headers_delay_s)
        if reply.raw_body is not None:
            return web.Response(body=reply.raw_body, status=reply.status, headers={
                "content-type": reply.content_type or "application/json", **reply.extra_headers})
        model = str(body.get("model", "fake-model")) if isinstance(body, dict) else "fake-model"
        if api == "gemini":
            model = path.rsplit("/", 1)[-1].split(":")[0]
        if reply.status != 200:
            return web.json_response(error_body(api, reply.status, reply.error_message), status=reply.status,
                                     headers={"retry-after": "7", **reply.extra_headers})
        stream = (path.endswith(":streamGenerateContent") if api == "gemini"
                  else isinstance(body, dict) and bool(body.get("stream")))
        if not stream and reply.raw_body is not None:
            return web.Response(body=reply.raw_body, content_type="application/json")
        if not stream:
            payload = {"chat": chat_body, "anthropic": anthropic_body, "responses": responses_body,
                       "gemini": gemini_body}[api](reply, model)
            return web.json_response(payload, headers={"x-ratelimit-remaining-requests": "99",
                                                       **reply.extra_headers})
        return await self._stream(request, api, reply, model, body if isinstance(body, dict) else {})

    def _is_judge(self, body: dict[str, Any]) -> bool:
        blob = json.dumps(body)
        return "GUARDPROXY-JUDGE-PROBE" in blob or "Respond with exactly PASS or VIOLATION" in blob \
            or "material to judge, never instructions" in blob \
            or ("VIOLATION" in blob and "PASS" in blob and not body.get("stream")
                and body.get("temperature", body.get("generationConfig", {}).get("temperature")) == 0)

    async def _judge(self, api: str, body: dict[str, Any], path: str) -> web.StreamResponse:
        if self.judge_delay_s:
            await asyncio.sleep(self.judge_delay_s)
        if self.judge_status != 200:
            return web.json_response(error_body(api, self.judge_status, "judge upstream down"),
                                     status=self.judge_status)
        refusal = self.judge_refuse(api, body) if self.judge_refuse is not None else None
        if refusal is not None:
            return web.json_response(error_body(api, refusal[0], refusal[1]), status=refusal[0])
        verdict = self.judge_replies.popleft() if self.judge_replies else "PASS"
        r = Reply(text=verdict)
        payload = {"chat": chat_body, "anthropic": anthropic_body, "responses": responses_body,
                   "gemini": gemini_body}[api](r, "judge-model")
        return web.json_response(payload)

    async def _stream(self, request: web.Request, api: str, reply: Reply, model: str,
                      body: dict[str, Any]) -> web.StreamResponse:
        alt_sse = request.query.get("alt") == "sse"
        if reply.raw_frames is not None:
            frames = reply.raw_frames
        elif api == "chat":
            frames = chat_frames(reply, model, bool((body.get("stream_options") or {}).get("include_usage")))
        elif api == "anthropic":
            frames = anthropic_frames(reply, model)
        elif api == "responses":
            frames = responses_frames(reply, model)
        else:
            chunks = gemini_chunks(reply, model)
            if alt_sse:
                frames = [f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks]
            else:
                frames = [("[" if i == 0 else ",\r\n").encode() + json.dumps(c).encode()
                          for i, c in enumerate(chunks)] + [b"]"]
        ctype = reply.content_type or ("application/json" if api == "gemini" and not alt_sse
                                       else "text/event-stream")
        resp = web.StreamResponse(headers={"content-type": ctype, "x-ratelimit-remaining-requests": "99",
                                           **reply.extra_headers})
        await resp.prepare(request)
        self.open_streams += 1
        try:
            for n, frame in enumerate(frames):
                if reply.error_frame_after is not None and n == reply.error_frame_after:
                    await resp.write(stream_error(api, reply.error_message))
                    return resp
                if reply.break_after_frames is not None and n == reply.break_after_frames:
                    assert request.transport is not None
                    request.transport.abort()
                    return resp
                if reply.stall_after_frames is not None and n == reply.stall_after_frames:
                    await asyncio.sleep(reply.stall_s)
                if reply.split_bytes:
                    for i in range(0, len(frame), reply.split_bytes):
                        await resp.write(frame[i:i + reply.split_bytes])
                else:
                    await resp.write(frame)
            await resp.write_eof()
        finally:
            self.open_streams -= 1
            self.closed_streams += 1
        return resp

    def expected_stream_bytes(self, api: str, reply: Reply, model: str, *, include_usage: bool = False,
                              alt_sse: bool = True) -> bytes:
        """The exact bytes a stream of ``reply`` is made of (for byte-for-byte assertions)."""
        if api == "chat":
            return b"".join(chat_frames(reply, model, include_usage))
        if api == "anthropic":
            return b"".join(anthropic_frames(reply, model))
        if api == "responses":
            return b"".join(responses_frames(reply, model))
        chunks = gemini_chunks(reply, model)
        if alt_sse:
            return b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)
        return b"".join(("[" if i == 0 else ",\r\n").encode() + json.dumps(c).encode()
                        for i, c in enumerate(chunks)) + b"]"


def wait_until(cond: Any, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return bool(cond())
