"""Logprobs, as the OpenAI APIs send them (chat ``logprobs.content``, Responses ``logprobs``): each
entry repeats a token of the text it belongs to (``token``, and its UTF-8 ``bytes``) and offers the
alternatives the model weighed (``top_logprobs``). A client can show all of them, so all are checked.
"""

from __future__ import annotations

from typing import Any

from guardrails.datamodel import Event, TextDelta, WholeText
from proxy.wire.shapes import texts


def token_events(entries: list[dict[str, Any]], said: str, c: int = 0, *, whole: bool = False) -> list[Event]:
    """Logprob entries (``{token, bytes, top_logprobs: [{token, bytes}]}``) against the text ``said``
    that they spell: chosen tokens that spell it exactly were checked with it, any others are a lane
    of their own (``logprobs``; checked whole with ``whole``, for a text given whole); ``bytes`` that spell something else than the tokens, and the
    alternatives, are checked whole (a client may decode and show either)."""
    chosen = "".join(str(t.get("token") or "") for t in entries)
    out: list[Event] = []
    checked: list[str] = []
    if chosen != said:
        if whole:
            checked.append(chosen)
        else:
            out.append(TextDelta(chosen, c, "logprobs"))
    spelled = _spelled_bytes(entries)
    checked += [spelled] if spelled and spelled != chosen else []
    for t in entries:
        tops = t.get("top_logprobs") or []
        for a in tops if type(tops) is list else [tops]:
            if isinstance(a, dict):
                token, spelled = str(a.get("token") or ""), _spelled_bytes([a])
                checked += [token, spelled] if spelled and spelled != token else [token]
            else:  # not an alternative's object: what a client printing it shows
                checked += texts(a)
    if any(checked):
        out.append(WholeText(" ".join(w for w in checked if w), c, "top_logprobs"))
    return out


def _spelled_bytes(entries: list[dict[str, Any]]) -> str:
    """What the entries' ``bytes`` spell, decoded as a client would (lenient UTF-8); "" when none."""
    data = bytearray()
    for t in entries:
        b = t.get("bytes")
        if isinstance(b, list):
            data += bytes(n for n in b if isinstance(n, int) and 0 <= n < 256)
    return data.decode("utf-8", errors="replace")
