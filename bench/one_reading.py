"""What refusing repeated keys and folding keys costs per guarded request (``python -m bench.one_reading``).

``proxy.wire.one_reading.repeated_key`` (msgspec decode + encode, colons counted) beside what a request
already costs to read (the wire's quick view, msgspec's whole decode) and the two alternatives it was
chosen over: the standard library's parser with a hook that sees every pair (exact, slower), and
re-serialising every body from what the proxy read (msgspec decode + encode, no refusal, but new bytes
upstream). Interleaved rounds, median microseconds per body; bounded (ROUNDS x N parses). The quick
view reads a repeated body from its kept reading (``proxy.wire.conversation_delta``), as an agent's
next turn is read: the lower bound of today's cost.

The case-folding check (``proxy.wire.key_folds``) side by side: ``read_once`` without and with the
chat wire's ``folds`` (before / after), the walk alone on the decoded body, and the byte prefilter it
was chosen over (a ``bytes.translate`` pass keeping only what a folding key is made of, then one
search): on the agent body and on a Claude Code-shaped Anthropic body whose tool inputs and schemas
carry camelCase keys (objects the walk must fold key by key). Then an agent's later turn, checked in
the items it adds (``read_once(added=...)``), without and with the folds.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from bench.common import request_bodies, request_body
from proxy.wire.base import JsonBody
from proxy.wire.key_folds import FOLDS, folded_key
from proxy.wire.one_reading import _pairs, read_once, repeated_key
from proxy.wire.openai_chat import OpenAIChat

ROUNDS, N = 7, 200

_KEEP = bytearray(range(256))
_DROP = bytes(c for c in range(256) if chr(c).islower() or chr(c).isdigit() or chr(c) in "_ \t\r\n" or 0x80 <= c <= 0xBF)
for _c in range(256):
    if chr(_c).isupper() and _c < 128 or _c in (0xC4, 0xC5, 0xE2):
        _KEEP[_c] = ord("A")
    elif chr(_c) not in '"\\:':
        _KEEP[_c] = ord("#")
_TABLE = bytes(_KEEP)


def _byte_prefilter(raw: bytes) -> bool:
    """The rejected design: whether some key-shaped string (``"...":``) holds an upper-case letter or
    the lead byte of ``ſ``/``K``/``ı``/``İ`` among key characters (plus a ``\\u`` search)."""
    return b'A":' in raw.translate(_TABLE, _DROP) or b"\\u" in raw


def _claude_code_body(chat: bytes) -> bytes:
    """The chat agent body in Anthropic's shape, as Claude Code writes it: blocks, cache markers,
    TodoWrite calls whose input (and schema) carry camelCase keys."""
    d = json.loads(chat)
    todo = {"name": "TodoWrite", "description": "Plan.", "input_schema": {"type": "object", "properties": {
        "todos": {"type": "array", "items": {"type": "object", "properties": {
            "content": {"type": "string"}, "activeForm": {"type": "string"}, "status": {"type": "string"}}}}}}}
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(d["messages"][1:]):
        role = "assistant" if m["role"] == "assistant" else "user"
        blocks: list[dict[str, Any]] = [{"type": "text", "text": m.get("content") or "ok"}]
        if role == "assistant" and i % 4 == 0:
            blocks.append({"type": "tool_use", "id": f"t{i}", "name": "TodoWrite", "input": {"todos": [
                {"content": "Fix the Build", "activeForm": "Fixing the Build", "status": "pending"}]}})
        messages.append({"role": role, "content": blocks})
    body = {"model": "claude", "max_tokens": 4096, "stream": True, "system": [
        {"type": "text", "text": d["messages"][0]["content"], "cache_control": {"type": "ephemeral"}}],
        "tools": [todo], "messages": messages}
    return json.dumps(body, separators=(",", ":")).encode()


def _median_us(fn: Callable[[], Any], runs: list[float]) -> None:
    t0 = time.perf_counter()
    for _ in range(N):
        fn()
    runs.append((time.perf_counter() - t0) / N * 1e6)


def main() -> None:
    dec, enc, chat = msgspec.json.Decoder(), msgspec.json.Encoder(), OpenAIChat()
    agent = request_body("bench-agent", True)
    bodies = {"agent request (66 KB)": (agent, "openai_chat"),
              "short chat request": (request_body("bench-sys", True), "openai_chat"),
              "Claude Code-shaped agent request": (_claude_code_body(agent), "anthropic")}
    gc.collect()
    gc.freeze()  # as the proxy runs (proxy.edge.app): the collector walks only what requests allocate
    for label, (body, wire) in bodies.items():
        folds, decoded = FOLDS[wire], dec.decode(body)
        ways: dict[str, Callable[[], Any]] = {
            "quick view (today's read)": lambda b=body: chat.quick_view(JsonBody(b), stream=True),
            "msgspec whole decode": lambda b=body: dec.decode(b),
            "repeated_key (chosen)": lambda b=body: repeated_key(b),
            "json + pairs hook": lambda b=body: json.loads(b, object_pairs_hook=_pairs),
            "re-serialise (msgspec)": lambda b=body: enc.encode(dec.decode(b)),
            "read_once, before": lambda b=body: read_once(b),
            "read_once + folds, after": lambda b=body, f=folds: read_once(b, folds=f),
            "folded_key walk alone": lambda d=decoded, f=folds: folded_key(d, f.top),
            "byte prefilter (rejected)": lambda b=body: _byte_prefilter(b),
        }
        if wire != "openai_chat":
            del ways["quick view (today's read)"]
        runs: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(ROUNDS):
            for name, fn in ways.items():
                _median_us(fn, runs[name])
        print(f"\n{label} ({len(body):,} bytes)")
        base = statistics.median(runs["msgspec whole decode"])
        for name, xs in runs.items():
            med = statistics.median(xs)
            print(f"  {name:28s} {med:9.1f} us  {med / base:5.2f}x msgspec decode")
    _later_turns(chat)


def _later_turns(chat: OpenAIChat) -> None:
    """An agent's later turns (``agent-grow``: each one a tool call and its result longer), read as
    the edge reads them: the check on what the turn adds, before and with the folds."""
    turns = request_bodies("bench-agent-grow", True)
    for raw in turns[:2]:  # kept (the second proves the anchor)
        _, decoded = read_once(raw, added=chat.added_to_clean(raw))
        chat.quick_view(JsonBody(raw, decoded, repeat_free=True), stream=True)
    later = turns[2]
    added = chat.added_to_clean(later)
    assert added is not None
    folds = FOLDS["openai_chat"]
    ways: dict[str, Callable[[], Any]] = {"read_once(added), before": lambda: read_once(later, added=added),
                                          "read_once(added) + folds, after": lambda: read_once(
                                              later, added=added, folds=folds)}
    runs: dict[str, list[float]] = {w: [] for w in ways}
    for _ in range(ROUNDS):
        for name, fn in ways.items():
            _median_us(fn, runs[name])
    print(f"\nagent's later turn ({len(later):,} bytes, adds {len(added):,})")
    for name, xs in runs.items():
        print(f"  {name:32s} {statistics.median(xs):9.1f} us")


if __name__ == "__main__":
    main()
