"""Tools for the adversarial suites: an upstream that sends exactly the bytes an attacker-controlled
(or merely deviant) provider could send, and the client's view of the answer, read three ways: the
raw bytes on the wire, what the official SDK yields, and the SDK's error when it raises.

The upstream is ``tests.fakes.upstream.FakeUpstream`` on a real loopback socket: ``Reply.raw_frames``
writes each given byte string as one write of a stream, ``Reply.raw_body`` answers with exactly those
bytes, and ``content_type`` / ``extra_headers`` set the rest. The frame builders below start from the
same renderers as the fake's normal answers (so the frames are what the real APIs send) and then
bend one thing: the line ends, an event's name, a field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.apis import Result, raw_call, sdk_call
from tests.fakes.upstream import Reply, anthropic_frames, chat_frames, gemini_chunks, responses_frames

SECRETS_POLICY = """
[defaults]
holdback_chars = 8

[[stream_guardrails]]
id = "secrets"
kind = "secrets"
replacement = "[withheld: credential]"
"""
"""The policy of the ``secrets_guard`` fixture (tests/conftest.py): the secrets check, text held 8 chars."""
SECRET = "AKIAQ7XR4K2MZT9BWP3N"
"""An AWS access key id: what the adversarial upstreams try to slip past the guard."""
LEAKY = f"The key is {SECRET} as requested."

STREAM_APIS = ("chat", "responses", "anthropic", "gemini")


def tags(text: str) -> str:
    """``text`` in Unicode tag characters (U+E0000 + its code point): drawn by no client, read by a
    model as the ASCII it mirrors ("ASCII smuggling")."""
    return "".join(chr(0xE0000 + ord(c)) for c in text)
"""The SSE APIs (Gemini's JSON-array stream has no SSE framing to bend)."""


def frames_for(api: str, reply: Reply, model: str = "m") -> list[bytes]:
    """The SSE frames a real upstream sends for ``reply``, each ending in ``\\n\\n``."""
    if api == "chat":
        return chat_frames(reply, model, False)
    if api == "responses":
        return responses_frames(reply, model)
    if api == "anthropic":
        return anthropic_frames(reply, model)
    return [f"data: {json.dumps(c)}\n\n".encode() for c in gemini_chunks(reply, model)]


def utf8_chat_frames(reply: Reply, model: str = "m") -> list[bytes]:
    """Chat frames with the text as UTF-8 (not ``\\u`` escapes), so one-byte writes split its characters."""
    out = []
    for frame in chat_frames(reply, model, False):
        if frame.startswith(b"data: {"):
            frame = f"data: {json.dumps(json.loads(frame[6:]), ensure_ascii=False)}\n\n".encode()
        out.append(frame)
    return out


def reframe(frames: list[bytes], endings: list[tuple[bytes, bytes]]) -> list[bytes]:
    """Each frame with its lines ended by ``line`` and its blank line by ``blank``, cycling through
    ``endings``: ``(b"\\n", b"\\r\\n")`` gives the ``\\n\\r\\n`` mix the WHATWG algorithm splits."""
    out = []
    for n, frame in enumerate(frames):
        line, blank = endings[n % len(endings)]
        lines = frame.removesuffix(b"\n\n").split(b"\n")
        out.append(b"".join(ln + line for ln in lines) + blank)
    return out


@dataclass
class Seen:
    """What a client saw of one answer."""

    raw: Result
    sdk: Result | None
    sdk_error: Exception | None

    def everything(self) -> str:
        """Every byte and every field the client could show: the raw body, the SDK's text, tool
        calls and replaced signals, and the text of its error."""
        parts = [self.raw.raw.decode("utf-8", "replace")]
        if self.sdk is not None:
            parts += [self.sdk.text, json.dumps(self.sdk.tool_calls), json.dumps(self.sdk.replaced)]
        if self.sdk_error is not None:
            parts += [str(self.sdk_error), repr(getattr(self.sdk_error, "body", ""))]
        return "\n".join(parts)


def client_sees(base: str, api: str, queue: Callable[[], None], *, stream: bool = True,
                **kw: Any) -> Seen:
    """The same scripted answer (``queue`` puts it on the fake upstream) read raw and by the SDK."""
    queue()
    raw = raw_call(base, api, stream=stream)
    queue()
    try:
        return Seen(raw, sdk_call(base, api, stream=stream, **kw), None)
    except Exception as exc:  # noqa: BLE001 - what the SDK raises is part of what the client sees
        return Seen(raw, None, exc)
