"""Logprobs, as the OpenAI APIs send them (chat ``logprobs.content``, Responses ``logprobs``): each
entry repeats a token of the text it belongs to (``token``, and its UTF-8 ``bytes``) and offers the
alternatives the model weighed (``top_logprobs``). A client can show all of them, so all are checked.
"""

from __future__ import annotations

from typing import Any

from guardrails.datamodel import Event, TextDelta, WholeText
from proxy.wire.shapes import texts


class TokenLanes:
    """The runs a client shows of one stream's logprobs, per choice, as lanes across the stream.

    A client that renders logprobs joins them over the whole stream: the chosen tokens, the text their
    ``bytes`` spell (as the API docs say to rebuild it), and each rank of alternatives. A per-chunk
    comparison misses a run that equals the text in one chunk and differs in the next (half a key in
    the text, the other half only in the tokens). So each run is *dormant* while it equals what was
    checked already (the chosen tokens: the answer's text since the first logprobs, contiguous; the
    bytes and each rank: the chosen tokens), and a lane of its own from the first chunk where it
    differs, seeded with the chosen tokens before it (the run was equal to them until then): the
    chosen tokens' lane is ``logprobs``, the others ``logprobs/bytes`` and ``top_logprobs/<rank>``. A
    chunk with text but no logprobs ends the chosen tokens' dormancy (``text_only``); a run that
    appears after the first tokens is a lane from the start. Keeps the chosen tokens of each choice
    (only in streams that carry logprobs)."""

    __slots__ = ("_active", "_chosen", "_seen", "dormant")

    def __init__(self) -> None:
        self._chosen: dict[int, list[str]] = {}
        self._seen: dict[int, set[str]] = {}
        self._active: set[tuple[int, str]] = set()
        self.dormant = False
        """Some choice's chosen tokens still equal its text: every chunk of it must be read (no
        shortcut past ``text_only``)."""

    def events(self, c: int, chosen: str, said: str, runs: dict[str, str]) -> list[Event]:
        """One chunk of choice ``c``: its chosen tokens, the text they should spell, its other runs."""
        before = self._chosen.setdefault(c, [])
        out = self._run(c, "logprobs", chosen, said, before)
        seen = self._seen.setdefault(c, set())
        for lane in runs.keys() - seen:
            if any(before):  # begun after the first tokens: it never equalled them
                self._active.add((c, lane))
            seen.add(lane)
        for lane in seen:
            out += self._run(c, lane, runs.get(lane, ""), chosen, before)
        before.append(chosen)
        self.dormant = any((k, "logprobs") not in self._active for k in self._chosen)
        return out

    @property
    def tracking(self) -> bool:
        """Some choice carried logprobs: decoding a chunk changes this state (no probing decodes)."""
        return bool(self._chosen)

    def text_only(self, c: int, said: str) -> list[Event]:
        """A chunk of choice ``c`` with text ``said`` and no logprobs."""
        if c not in self._chosen or not said:
            return []
        return self.events(c, "", said, {})

    def _run(self, c: int, lane: str, text: str, equal_to: str, before: list[str]) -> list[Event]:
        if (c, lane) in self._active:
            return [TextDelta(text, c, lane)] if text else []
        if text == equal_to:
            return []
        self._active.add((c, lane))
        seeded = "".join(before) + text
        return [TextDelta(seeded, c, lane)] if seeded else []


def token_events(entries: list[dict[str, Any]], said: str, c: int = 0, *, whole: bool = False,
                 lanes: TokenLanes | None = None) -> list[Event]:
    """Logprob entries (``{token, bytes, top_logprobs: [{token, bytes}]}``) against the text ``said``
    that they spell. In a stream (``lanes``), the chosen tokens, what their bytes spell and each
    rank of alternatives are lanes across the stream (``TokenLanes``). For a text given whole
    (``whole``): chosen tokens that spell it exactly were checked with it, any others are checked
    whole, and so is each rank whose alternatives are not the chosen tokens themselves (rank 0 when
    decoding is greedy).
    All alternatives, and ``bytes`` that spell something else than the tokens, are also checked whole
    per call (a client may decode and show either). Not read: a text that hops between ranks from
    token to token."""
    chosen = "".join(str(t.get("token") or "") for t in entries)
    out: list[Event] = []
    checked: list[str] = []
    if chosen != said and lanes is None:
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
                token, spelled_alt = str(a.get("token") or ""), _spelled_bytes([a])
                while len(ranks) <= rank:
                    ranks.append([])
                ranks[rank].append(token)
                checked += [token, spelled_alt] if spelled_alt and spelled_alt != token else [token]
            else:  # not an alternative's object: what a client printing it shows
                checked += texts(a)
    if lanes is not None:
        runs = {f"top_logprobs/{rank}": "".join(tokens) for rank, tokens in enumerate(ranks)}
        if any(isinstance(t.get("bytes"), list) for t in entries):
            runs["logprobs/bytes"] = spelled
        out += lanes.events(c, chosen, said, runs)
    else:
        for rank, tokens in enumerate(ranks):
            if (text := "".join(tokens)) and text != chosen:  # (greedy: rank 0 is the chosen tokens)
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
