"""One way per client API to make a request through the proxy with the official SDK and with raw
HTTP, so behaviour tests can run the same scenario over every wire format."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import openai
from google import genai
from google.genai import types

APIS = ["chat", "responses", "anthropic", "gemini", "gemini_array"]


@dataclass
class Result:
    text: str = ""
    finish: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    replaced: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes = b""


def request_for(api: str, *, stream: bool, system: str = "You are a helpful assistant.",
                user: str = "hello", history: list[Any] | None = None) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) for a raw HTTP request in ``api``'s format."""
    if api == "chat":
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}, *(history or [])]
        return "/v1/chat/completions", {"model": "m", "stream": stream, "messages": msgs}
    if api == "responses":
        return "/v1/responses", {"model": "m", "stream": stream, "instructions": system,
                                 "input": [{"type": "message", "role": "user", "content": user}, *(history or [])]}
    if api == "anthropic":
        return "/v1/messages", {"model": "m", "max_tokens": 100, "stream": stream, "system": system,
                                "messages": [{"role": "user", "content": user}, *(history or [])]}
    method = "streamGenerateContent" if stream else "generateContent"
    query = "?alt=sse" if api == "gemini" and stream else ""
    return f"/v1beta/models/m:{method}{query}", {
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": [{"role": "user", "parts": [{"text": user}]}, *(history or [])]}


def raw_call(base: str, api: str, *, stream: bool, headers: dict[str, str] | None = None,
             **kw: Any) -> Result:
    path, body = request_for(api, stream=stream, **kw)
    with httpx.stream("POST", base + path, json=body, headers=headers or {}, timeout=20) as r:
        raw = b"".join(r.iter_raw())
        return Result(status=r.status_code, headers=dict(r.headers), raw=raw)


def sdk_call(base: str, api: str, *, stream: bool, system: str = "You are a helpful assistant.",
             user: str = "hello", headers: dict[str, str] | None = None) -> Result:
    """The official SDK's view of the answer (raises what the SDK raises)."""
    res = Result()
    if api in ("chat", "responses"):
        client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0,
                               default_headers=headers or {})
        if api == "chat":
            msgs: Any = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            if not stream:
                r = client.chat.completions.with_raw_response.create(model="m", messages=msgs)
                res.headers = dict(r.headers)
                c = r.parse().choices[0]
                res.text, res.finish = c.message.content or "", c.finish_reason
                res.tool_calls = [(t.function.name, json.loads(t.function.arguments))  # type: ignore[union-attr]
                                  for t in c.message.tool_calls or []]
                return res
            args: dict[int, list[str]] = {}
            names: dict[int, str] = {}
            for chunk in client.chat.completions.create(model="m", messages=msgs, stream=True):
                extra = (chunk.model_extra or {}).get("guardproxy")
                if extra:
                    res.replaced.append(extra)
                for ch in chunk.choices:
                    res.text += ch.delta.content or ""
                    res.finish = ch.finish_reason or res.finish
                    for tc in ch.delta.tool_calls or []:
                        if tc.function and tc.function.name:
                            names[tc.index] = tc.function.name
                        args.setdefault(tc.index, []).append(tc.function.arguments or "" if tc.function else "")
            res.tool_calls = [(names[i], json.loads("".join(a))) for i, a in sorted(args.items())]
            return res
        if not stream:
            rr = client.responses.with_raw_response.create(model="m", instructions=system, input=user)
            res.headers = dict(rr.headers)
            resp = rr.parse()
            res.text, res.finish = resp.output_text, resp.status
            res.tool_calls = [(o.name, json.loads(o.arguments)) for o in resp.output if o.type == "function_call"]
            return res
        for ev in client.responses.create(model="m", instructions=system, input=user, stream=True):
            if ev.type == "response.output_text.delta":
                res.text += ev.delta
            elif ev.type == "output.message.replaced":
                res.replaced.append(ev.to_dict())
            elif ev.type in ("response.completed", "response.incomplete"):
                res.finish = ev.response.status
                res.tool_calls = [(o.name, json.loads(o.arguments)) for o in ev.response.output
                                  if o.type == "function_call"]
        return res
    if api == "anthropic":
        ac = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0, default_headers=headers or {})
        amsgs: Any = [{"role": "user", "content": user}]
        if not stream:
            ar = ac.messages.with_raw_response.create(model="claude-opus-4-8", max_tokens=100, system=system,
                                                      messages=amsgs)
            res.headers = dict(ar.headers)
            m = ar.parse()
        else:
            with ac.messages.stream(model="claude-opus-4-8", max_tokens=100, system=system, messages=amsgs) as s:
                for ev in s:
                    if ev.type == "output.message.replaced":  # type: ignore[comparison-overlap]
                        res.replaced.append(ev.to_dict())
                m = s.get_final_message()
        res.text = "".join(b.text for b in m.content if b.type == "text")
        res.tool_calls = [(b.name, b.input) for b in m.content if b.type == "tool_use"]  # type: ignore[misc]
        res.finish = m.stop_reason
        return res
    gc = genai.Client(api_key="gk", http_options=types.HttpOptions(base_url=base, api_version="v1beta",
                                                                   headers=headers or {}))
    cfg = types.GenerateContentConfig(system_instruction=system)
    chunks = (gc.models.generate_content_stream(model="m", contents=user, config=cfg) if stream
              else [gc.models.generate_content(model="m", contents=user, config=cfg)])
    for chunk in chunks:
        extra = (chunk.model_extra or {}).get("guardproxy") if chunk.model_extra else None
        if extra:
            res.replaced.append(extra)
        for cand in chunk.candidates or []:
            for part in (cand.content.parts if cand.content else None) or []:
                res.text += part.text or ""
                if part.function_call:
                    res.tool_calls.append((part.function_call.name or "", dict(part.function_call.args or {})))
            res.finish = cand.finish_reason.value if cand.finish_reason else res.finish
    return res


FILTERED = {"chat": "content_filter", "responses": "incomplete", "anthropic": "refusal",
            "gemini": "SAFETY", "gemini_array": "SAFETY"}
NORMAL = {"chat": "stop", "responses": "completed", "anthropic": "end_turn", "gemini": "STOP",
          "gemini_array": "STOP"}


def responses_text(client: openai.OpenAI, stream: bool, **kw: object) -> tuple[str, str]:
    """(the text the client shows, the response id) of a Responses call with ``client``, streamed or
    not: the id of ``response.completed``, or of ``response.created`` when the stream never completed."""
    if not stream:
        r = client.responses.create(model="gpt-x", **kw)  # type: ignore[call-overload]
        return r.output_text, r.id
    text, rid = "", ""
    for ev in client.responses.create(model="gpt-x", stream=True, **kw):  # type: ignore[call-overload]
        if ev.type == "response.created":
            rid = ev.response.id
        elif ev.type == "response.output_text.delta":
            text += ev.delta
        elif ev.type == "response.completed":
            text, rid = ev.response.output_text or text, ev.response.id
    return text, rid
