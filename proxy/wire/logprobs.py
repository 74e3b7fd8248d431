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
    of their own (``logprobs``; checked whole with ``whole``, for a text given whole). The
    alternatives of each rank are a lane too (``top_logprobs/<rank>``): the k-th alternatives of the
    stream's tokens, one after another, are the text a client shows when it prints that rank, so a
    prompt spelled one token a chunk through second choices is read as the canary reads a delta; a
    rank whose alternatives are the chosen tokens themselves, rank 0 when decoding is greedy, is
    not one, that text being checked already.
    All alternatives, and ``bytes`` that spell something else than the tokens, are also checked whole
    per call (a client may decode and show either). Not read: a text that hops between ranks from
    token to token."""
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
    ranks: list[list[str]] = []
    for t in entries:
        tops = t.get("top_logprobs") or []
        for rank, a in enumerate(tops if type(tops) is list else [tops]):
            if isinstance(a, dict):
                token, spelled = str(a.get("token") or ""), _spelled_bytes([a])
                while len(ranks) <= rank:
                    ranks.append([])
                ranks[rank].append(token)
                checked += [token, spelled] if spelled and spelled != token else [token]
            else:  # not an alternative's object: what a client printing it shows
                checked += texts(a)
    tokens_chosen = [str(t.get("token") or "") for t in entries]
    for rank, tokens in enumerate(ranks):
        if tokens == tokens_chosen:  # the chosen tokens themselves (greedy: rank 0), checked above
            continue
        if text := "".join(tokens):
            out.append(WholeText(text, c, "top_logprobs") if whole else TextDelta(text, c, f"top_logprobs/{rank}"))
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
