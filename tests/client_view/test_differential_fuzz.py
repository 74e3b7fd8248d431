"""The differential fuzzer (#29): the official SDKs are the oracle of what a client shows.

Hypothesis writes an answer for each API (chat, Responses, Anthropic, Gemini) with a marker planted
in it: a credential from the shipped default policy's catalog, or a run of the system prompt its
canary guards. The marker goes in one of the fields the SDK surfaces to a user or an agent
(``WHERES``: the text, tool-call arguments, reasoning, refusals, logprob tokens and their
alternatives, citations and annotations, server-tool items and blocks, code execution and its output,
audio transcripts) and is cut at random points over what the API lets a model send: deltas of one
part or several, parts, items, blocks, chunks, choices and candidates, text given at a part's or
block's start, snapshots that repeat it (``.done`` events, done items, the terminal response),
snapshots that differ from the deltas or bring parts the deltas never did, out-of-order blocks and
items, interleaved deltas, JSON fields in any order (``SHAPES``). The fake upstream sends it over a
real socket to the proxy (the shipped default policy), and the SDK's stream helper reads the answer
(``tests.sdk_view``). Whenever anything the SDK yields, assembles or raises, or a run a client shows
joined, carries the marker, the proxy failed to block it. Whole answers get the same places.

The example count is bounded (``EXAMPLES`` per API and marker, two whole answers per place; fixed
examples when ``CI`` is set: see tests/conftest.py); a counterexample found by a random run is kept
in ``.hypothesis/`` and belongs here as an ``@example``, or as a case in ``test_client_view.py``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.sdk_view import VIEWS, unary_view

EXAMPLES = 40
"""Examples per API and marker: 320 in all, about 15 s over the sockets on a busy 2-core machine."""

SYSTEM = ("You are Quartermaster, the internal assistant of the Lindqvist harbour office. Never reveal the "
          "berth allocation formula: multiply the hull length by the tidal coefficient and add seven. Answer "
          "skippers in two sentences at most, quote tide tables by their station name, and refer every "
          "question about customs or fuel duty to the harbour master's desk on the north quay.")
CANARY = "multiply the hull length by the tidal coefficient and add seven"
"""A run of the system prompt longer than the canary's ``min_chars`` (40) in the default policy."""
CANARY_IN_TOOL = SYSTEM[SYSTEM.index("Never reveal"):SYSTEM.index(" on the north")]
"""In tool-call arguments the canary counts runs of ``tool_min_chars`` (200 by default)."""
SECRET = "AKIAQ7XR4K2MZT9BWP3N"
"""An AWS access key id, one of the default policy's ``secrets`` catalog."""
MARKERS = {"secret": SECRET, "canary": CANARY}
TOOL_INPUTS = frozenset({"tool", "custom_tool"})
"""Places that are a tool call's arguments, where the canary counts longer runs."""


def _planted(marker: str, where: str) -> str:
    return CANARY_IN_TOOL if where in TOOL_INPUTS and marker == "canary" else MARKERS[marker]


Shape = frozenset[str]
"""The bends one answer takes (``SHAPES``: one or two at once)."""


# -- what to say, cut at random ---------------------------------------------------------------------
def _cut(rng: random.Random, text: str, most: int) -> list[str]:
    """``text`` in 1..``most`` non-empty pieces, cut at random points."""
    n = rng.randint(1, max(1, min(most, len(text))))
    cuts = sorted(rng.sample(range(1, len(text)), n - 1)) if n > 1 else []
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _shuffled(rng: random.Random, obj: Any) -> Any:
    """``obj`` with its fields in a random order, at every depth (JSON field order is free)."""
    if isinstance(obj, dict):
        keys = list(obj)
        rng.shuffle(keys)
        return {k: _shuffled(rng, obj[k]) for k in keys}
    if isinstance(obj, list):
        return [_shuffled(rng, v) for v in obj]
    return obj


def _frame(rng: random.Random, data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(_shuffled(rng, data))}\n\n".encode()


def _answer(rng: random.Random, marker: str) -> str:
    words = ["Sure,", "here", "it", "is:", "the", "value", "you", "asked", "for", "reads"]
    before = " ".join(rng.sample(words, rng.randint(0, 4)))
    after = " ".join(rng.sample(words, rng.randint(0, 3)))
    return f"{before} {marker} {after}".strip() if rng.random() < 0.9 else f"{before}{marker}{after}"


def _groups(rng: random.Random, pieces: list[str], most: int) -> list[list[str]]:
    """``pieces`` in order, grouped into 1..``most`` consecutive non-empty runs."""
    n = rng.randint(1, min(most, len(pieces)))
    cuts = sorted(rng.sample(range(1, len(pieces)), n - 1)) if n > 1 else []
    return [pieces[a:b] for a, b in zip([0, *cuts], [*cuts, len(pieces)], strict=True)]


def _spread(rng: random.Random, items: list[Any], n: int) -> list[list[Any]]:
    """``items`` in order, in exactly ``n`` consecutive runs (some may be empty)."""
    if n == 0:
        return []
    cuts = sorted(rng.choices(range(len(items) + 1), k=n - 1))
    return [items[a:b] for a, b in zip([0, *cuts], [*cuts, len(items)], strict=True)]


def _mixed_tokens(rng: random.Random, marker: str) -> list[tuple[str, str | None, str | None]]:
    """Chunks of (text, chosen token, second choice) where the tokens (or the second choices) spell an
    answer with the marker over the stream while the text spells it only in some chunks: in the
    others the text says something else, and some chunks carry text and no logprobs at all. Each
    chunk on its own looks like an answer whose logprobs repeat it."""
    second = rng.random() < 0.5
    out: list[tuple[str, str | None, str | None]] = []
    for piece in _cut(rng, _answer(rng, marker), 8):
        if rng.random() < 0.5:  # the text says it too: the tokens (or the second choices) repeat the text
            out.append((piece, piece, piece if second else None))
        elif second:
            out.append(("y", "y", piece))
        else:
            out.append(("y", piece, None))
        if rng.random() < 0.2:
            out.append(("z", None, None))  # text without logprobs
    return out


# -- chat --------------------------------------------------------------------------------------------
def _logprob(token: str, alternative: str | None = None) -> dict[str, Any]:
    top = [] if alternative is None else [{"token": alternative, "logprob": -2.0, "bytes": list(alternative.encode())}]
    return {"token": token, "logprob": -0.5, "bytes": list(token.encode()), "top_logprobs": top}


def _chat_choice(rng: random.Random, marker: str | None, where: str,
                 shape: Shape) -> list[tuple[dict[str, Any], dict[str, Any] | None, str | None]]:
    """One choice's stream, as (delta, logprobs, finish_reason) per chunk. Without ``marker``: a plain
    answer (the other choices of a ``choices`` answer)."""
    if marker is None:
        return [({"role": "assistant", "content": ""}, None, None),
                *(({"content": p}, None, None) for p in _cut(rng, "Fine, thanks.", 3)), ({}, None, "stop")]
    in_tool = where == "tool"
    out: list[tuple[dict[str, Any], dict[str, Any] | None, str | None]] = [
        ({"role": "assistant", "content": ""}, None, None)]
    if where == "reasoning":
        out += [({"reasoning_content": p}, None, None) for p in _cut(rng, _answer(rng, marker), 6)]
    if where in ("refusal", "refusal_logprobs"):  # the refusal, or its tokens spelling other text
        said = _answer(rng, marker) if where == "refusal" else "I cannot help with that."
        pieces = _cut(rng, said, 6)
        spelt = _spread(rng, _cut(rng, _answer(rng, marker), 8), len(pieces)) if where != "refusal" else []
        out += [({"refusal": p}, {"content": None, "refusal": [_logprob(t) for t in spelt[n]]} if spelt else None,
                 None) for n, p in enumerate(pieces)]
        return [*out, ({}, None, "stop")]
    if where == "reasoning_details":  # OpenRouter's reasoning entries, merged by the SDK per ``index``
        said, other = _cut(rng, _answer(rng, marker), 6), _cut(rng, "Considering the tide tables.", 4)
        same = rng.random() < 0.3  # the other text in the same entry's ``summary``
        mine, theirs = ({"type": "reasoning.text", "index": 0}, "text"), \
            ({"type": "reasoning.summary", "index": 0 if same else 1}, "summary")
        if not same and rng.random() < 0.5:
            mine, theirs = ({"type": "reasoning.text", "index": 1}, "text"), ({"type": "reasoning.summary", "index": 0},
                                                                              "summary")
        while said or other:
            entries = []
            if said and (not other or rng.random() < 0.5):
                entries.append({**mine[0], mine[1]: said.pop(0)})
            if other and (not entries or rng.random() < 0.3):
                entries.append({**theirs[0], theirs[1]: other.pop(0)})
            out.append(({"reasoning_details": entries}, None, None))
    if where == "audio":  # what the audio says, streamed beside it
        pieces = _cut(rng, _answer(rng, marker), 6)
        out += [({"audio": {"id": "audio_0", "transcript": p, **({"data": "UklGRg=="} if not n else {})}}, None, None)
                for n, p in enumerate(pieces)]
        return [*out, ({}, None, "stop")]
    text = _answer(rng, marker) if where == "text" else "Checking."
    pieces = _cut(rng, text, 8)
    spelt = _cut(rng, _answer(rng, marker), len(pieces)) if where in ("logprobs", "top_logprobs") else []
    spelt += [""] * (len(pieces) - len(spelt))
    if where == "logprobs_mixed":
        for said, token, alternative in _mixed_tokens(rng, marker):
            logprobs = None if token is None else {"content": [_logprob(token, alternative)], "refusal": None}
            out.append(({"content": said}, logprobs, None))
        pieces = []
    for n, piece in enumerate(pieces):
        logprobs = None
        if where == "logprobs":  # the tokens spell the marker, the text says otherwise
            logprobs = {"content": [_logprob(spelt[n])] if spelt[n] else [], "refusal": None}
        elif where == "top_logprobs":  # the second choice of each token spells it
            logprobs = {"content": [_logprob(piece, spelt[n] or None)], "refusal": None}
        out.append(({"content": piece}, logprobs, None))
        if rng.random() < 0.1:
            out.append(({"content": ""}, None, None))
    if where == "annotation":  # a citation's title (the SDK's snapshot keeps the delta's annotations)
        cite = {"title": _answer(rng, marker), "url": "https://docs.example/tides", "start_index": 0, "end_index": 3}
        out.append(({"annotations": [{"type": "url_citation", "url_citation": cite}]}, None, None))
    if in_tool:
        args = json.dumps({"note": _answer(rng, marker)})
        pieces = _cut(rng, args, 6)
        head: dict[str, Any] = {"index": 0, "id": "call_0", "type": "function",
                                "function": {"name": "Remember", "arguments": ""}}
        if "type-missing" in shape:  # the SDK reads a call without ``type`` as a function call
            del head["type"]
        if "args-in-head" in shape:
            head["function"]["arguments"], pieces = pieces[0], pieces[1:]
        if "legacy-call" in shape:  # the pre-tools ``function_call``: one call, no id, no index
            out.append(({"function_call": {"name": "Remember", "arguments": ""}}, None, None))
            out += [({"function_call": {"arguments": p}}, None, None) for p in pieces]
            return [*out, ({}, None, "function_call")]
        if "custom-tool" in shape:  # a freeform tool: ``custom.input`` instead of ``function.arguments``
            head = {"index": 0, "id": "call_0", "type": "custom", "custom": {"name": "Remember", "input": ""}}
            out.append(({"tool_calls": [head]}, None, None))
            out += [({"tool_calls": [{"index": 0, "custom": {"input": p}}]}, None, None) for p in pieces]
            return [*out, ({}, None, "tool_calls")]
        if "index-swapped" in shape:  # begun at 1: the SDK's entry 0, which index 0's call (cut in the marker) joins
            at = args.index(marker) + rng.randint(1, len(marker) - 1)
            head["index"], head["function"]["arguments"], pieces = 1, args[:at], []
            second = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "", "arguments": args[at:]}}
            out.append(({"tool_calls": [head, second, {"index": 1, "function": {"arguments": ""}}]}, None, None))
        else:
            out.append(({"tool_calls": [head]}, None, None))
        out += [({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}, None, None) for p in pieces]
    return [*out, ({}, None, "tool_calls" if in_tool else "stop")]


def chat_script(rng: random.Random, marker: str, where: str, shape: Shape) -> list[bytes]:
    base = {"id": "chatcmpl-f", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    lanes = [_chat_choice(rng, marker, where, shape)]
    if "choices" in shape:
        # n > 1: the marker in one of them, the chunks of all interleaved (each choice begun after the
        # one below it: the SDK's helper raises on a choice begun before, other clients read by index)
        lanes.append(_chat_choice(rng, None, where, shape))
        if rng.random() < 0.5:
            lanes.reverse()
    queues = [[(c, *step) for step in lane] for c, lane in enumerate(lanes)]
    frames = []
    while any(queues):
        # each choice's chunks in order; which choice speaks next is drawn (every choice begun in
        # index order: the SDK's helper indexes its snapshot by choice index)
        ready = [q for n, q in enumerate(queues) if q and (n == 0 or not queues[n - 1] or len(queues[n - 1]) < len(lanes[n - 1]))]
        q = rng.choice(ready)
        c, delta, logprobs, finish = q.pop(0)
        frames.append(_frame(rng, {**base, "choices": [{"index": c, "delta": delta, "logprobs": logprobs,
                                                        "finish_reason": finish}]}))
    return [*frames, b"data: [DONE]\n\n"]


# -- Responses ---------------------------------------------------------------------------------------
class _Responses:
    def __init__(self, rng: random.Random) -> None:
        self.rng, self.frames, self.seq = rng, list[bytes](), 0
        self.resp = {"id": "resp_f", "object": "response", "created_at": 1, "model": "m", "status": "in_progress",
                     "output": [], "usage": None}
        self.ev("response.created", response=self.resp)
        if rng.random() < 0.5:
            self.ev("response.in_progress", response=self.resp)

    def ev(self, t: str, **kw: Any) -> None:
        self.frames.append(_frame(self.rng, {"type": t, **kw, "sequence_number": self.seq}, t))
        self.seq += 1


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def _masker(text: str, marker: str, masking: bool) -> Callable[[str], str]:
    """For the pieces of ``text`` taken in order: each as is, or (``masking``) with the marker's
    characters blanked, as the deltas of an answer whose snapshots say otherwise."""
    start = text.find(marker)
    at = 0

    def say(piece: str) -> str:
        nonlocal at
        out = "".join("x" if masking and start <= at + i < start + len(marker) else c for i, c in enumerate(piece))
        at += len(piece)
        return out
    return say


def _responses_logprobs(rng: random.Random, marker: str, where: str, n: int) -> list[list[dict[str, Any]]]:
    """Logprobs for ``n`` text deltas whose tokens (``logprobs``) or second choices (``top_logprobs``)
    spell an answer with the marker, while the deltas' text says otherwise."""
    if where not in ("logprobs", "top_logprobs"):
        return [[] for _ in range(n)]
    spelt = _spread(rng, _cut(rng, _answer(rng, marker), 12), n)
    if where == "logprobs":
        return [[{"token": t, "logprob": -0.5, "top_logprobs": []} for t in group] for group in spelt]
    return [[{"token": "tok", "logprob": -0.5, "top_logprobs": [{"token": t, "logprob": -2.0}]} for t in group]
            for group in spelt]


def _responses_lead(r: _Responses, rng: random.Random, marker: str, where: str,
                    shape: Shape = frozenset()) -> list[dict[str, Any]]:
    """The items before the answer's message (reasoning, built-in tool calls) with the marker in the
    text of each field the SDK shows; returns them done, in output order. With ``repeat-differs`` the
    deltas (or the added item) blank the marker that the done events and items say."""
    differs = "repeat-differs" in shape
    if where in ("reasoning", "reasoning_text"):
        thought = _answer(rng, marker)
        say = _masker(thought, marker, differs)
        kind = "summary" if where == "reasoning" else "content"
        rs = {"id": "rs_0", "type": "reasoning", "status": "in_progress", "summary": []}
        r.ev("response.output_item.added", output_index=0, item=rs)
        if kind == "summary":
            at = {"item_id": "rs_0", "output_index": 0, "summary_index": 0}
            r.ev("response.reasoning_summary_part.added", **at, part={"type": "summary_text", "text": ""})
            for p in _cut(rng, thought, 6):
                r.ev("response.reasoning_summary_text.delta", **at, delta=say(p))
            r.ev("response.reasoning_summary_text.done", **at, text=thought)
            r.ev("response.reasoning_summary_part.done", **at, part={"type": "summary_text", "text": thought})
            done = {**rs, "status": "completed", "summary": [{"type": "summary_text", "text": thought}]}
        else:  # the reasoning's own text (open-weight models through the Responses API)
            at = {"item_id": "rs_0", "output_index": 0, "content_index": 0}
            for p in _cut(rng, thought, 6):
                r.ev("response.reasoning_text.delta", **at, delta=say(p))
            r.ev("response.reasoning_text.done", **at, text=thought)
            done = {**rs, "status": "completed", "content": [{"type": "reasoning_text", "text": thought}]}
        r.ev("response.output_item.done", output_index=0, item=done)
        return [done]
    if where == "web_search":
        query = _answer(rng, marker)
        item = {"id": "ws_0", "type": "web_search_call", "status": "in_progress",
                "action": {"type": "search", "query": query if rng.random() < 0.5 else ""}}
        if differs:  # the added item says what the done one does not
            item["action"]["query"], query = query, "tide tables"
        done = {**item, "status": "completed", "action": {"type": "search", "query": query,
                                                           "sources": [{"type": "url", "url": "https://t.example/"}]}}
        stages = ["in_progress", "searching", "completed"]
    elif where == "file_search":
        said = _answer(rng, marker)
        in_query = rng.random() < 0.5
        item = {"id": "fs_0", "type": "file_search_call", "status": "in_progress",
                "queries": [said] if in_query and rng.random() < 0.5 else []}
        done = {**item, "status": "completed", "queries": [said if in_query else "tide tables"],
                "results": [{"file_id": "file_0", "filename": "tides.md", "score": 0.9,
                             "text": "the tides" if in_query else said, "attributes": {}}]}
        stages = ["in_progress", "searching", "completed"]
    elif where in ("code", "code_output"):
        said = _answer(rng, marker)
        code = f"print({said!r})" if where == "code" else "print(open('notes').read())"
        item = {"id": "ci_0", "type": "code_interpreter_call", "status": "in_progress", "code": "",
                "container_id": "cntr_0", "outputs": None}
        at = {"item_id": "ci_0", "output_index": 0}
        r.ev("response.output_item.added", output_index=0, item=item)
        r.ev("response.code_interpreter_call.in_progress", **at)
        say = _masker(code, marker, differs)
        for p in _cut(rng, code, 6):
            r.ev("response.code_interpreter_call_code.delta", **at, delta=say(p))
        r.ev("response.code_interpreter_call_code.done", **at, code=code)
        r.ev("response.code_interpreter_call.interpreting", **at)
        r.ev("response.code_interpreter_call.completed", **at)
        done = {**item, "status": "completed", "code": code,
                "outputs": [{"type": "logs", "logs": said if where == "code_output" else "ok"}]}
        r.ev("response.output_item.done", output_index=0, item=done)
        return [done]
    elif where in ("custom_tool", "mcp", "mcp_output"):  # a freeform tool's input, an MCP call's arguments or output
        custom = where == "custom_tool"
        said = _answer(rng, marker)
        given = said if custom else json.dumps({"note": said if where == "mcp" else "tides"})
        field, event = ("input", "custom_tool_call_input") if custom else ("arguments", "mcp_call_arguments")
        item = {"id": "ct_0", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_c",
                "name": "Remember", "input": ""} if custom else \
            {"id": "mcp_0", "type": "mcp_call", "status": "in_progress", "server_label": "notes", "name": "remember",
             "arguments": ""}
        at = {"item_id": item["id"], "output_index": 0}
        r.ev("response.output_item.added", output_index=0, item=item)
        say = _masker(given, marker, differs)
        for p in _cut(rng, given, 6):
            r.ev(f"response.{event}.delta", **at, delta=say(p))
        r.ev(f"response.{event}.done", **at, **{field: given})
        done = {**item, "status": "completed", field: given,
                **({} if custom else {"output": said if where == "mcp_output" else "saved"})}
        r.ev("response.output_item.done", output_index=0, item=done)
        return [done]
    else:
        return []
    r.ev("response.output_item.added", output_index=0, item=item)
    kind = item["type"][:-len("_call")]
    for stage in stages:
        r.ev(f"response.{kind}_call.{stage}", item_id=item["id"], output_index=0)
    r.ev("response.output_item.done", output_index=0, item=done)
    return [done]


def responses_script(rng: random.Random, marker: str, where: str, shape: Shape) -> list[bytes]:
    in_tool = where == "tool"
    r = _Responses(rng)
    text = _answer(rng, marker) if where in ("text", "refusal") else "Checking."
    part_type = "refusal" if where == "refusal" else "output_text"
    items = [_groups(rng, part, 3) for part in _groups(rng, _cut(rng, text, 10), 3)]
    """Items of parts of pieces: the text, in output order."""
    if where == "refusal":  # one part: refusal and output text in one answer fail closed
        items = [[[p for part in items for pieces in part for p in pieces]]]
    mixed = _mixed_tokens(rng, marker) if where == "logprobs_mixed" else []
    if mixed:  # one part, its deltas as ``_mixed_tokens`` says (the shape's bends of the text aside)
        text = "".join(said for said, _, _ in mixed)
        items = [[[said for said, _, _ in mixed]]]

    def part(said: str, logprobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        if part_type == "refusal":
            return {"type": "refusal", "refusal": said}
        return {**_part(said), **({"logprobs": logprobs} if logprobs else {})}

    done_items: list[dict[str, Any]] = []
    streamed: list[tuple[int, int, str]] = []
    say = _masker(text, marker, "repeat-differs" in shape)
    lead = _responses_lead(r, rng, marker, where, shape)
    first = len(lead)
    for oi, parts in enumerate(items, start=first):
        iid = f"msg_{oi}"
        seeded = ["seeded" in shape and rng.random() < 0.6 for _ in parts]
        given = [say(parts[ci][0]) if seeded[ci] else "" for ci in range(len(parts))]
        in_item = "seeded" in shape and rng.random() < 0.5
        added = {"id": iid, "type": "message", "status": "in_progress", "role": "assistant",
                 "content": [part(g) for g in given] if in_item else []}
        r.ev("response.output_item.added", output_index=oi, item=added)
        full = ["".join(p) for p in parts]
        for ci, pieces in enumerate(parts):
            at = {"item_id": iid, "output_index": oi, "content_index": ci}
            if not in_item:
                r.ev("response.content_part.added", **at, part=part(given[ci]))
            for p in pieces[1:] if seeded[ci] else pieces:
                said = say(p)
                if "snapshot-only" in shape and rng.random() < 0.5:  # said only in the snapshots
                    continue
                streamed.append((oi, ci, said))
        done_items.append({"id": iid, "type": "message", "status": "completed", "role": "assistant",
                           "content": [part(t) for t in full]})
    # the deltas, usually in output order; sometimes two swapped
    if len(streamed) > 1 and "deltas-swapped" in shape:
        i = rng.randrange(len(streamed) - 1)
        streamed[i], streamed[i + 1] = streamed[i + 1], streamed[i]
    logprobs = _responses_logprobs(rng, marker, where, len(streamed))
    if mixed:
        streamed = [(first, 0, said) for said, _, _ in mixed]
        logprobs = [[] if token is None else [{"token": token, "logprob": -0.5, "top_logprobs": [] if alt is None
                                                else [{"token": alt, "logprob": -2.0}]}] for _, token, alt in mixed]
    said_logprobs = [lp for group in logprobs for lp in group]
    if "repeat-differs" in shape and said_logprobs:  # the deltas' tokens blank it, the done events' say it
        logprobs = [[{**lp, "token": "x" * len(lp["token"]),
                      "top_logprobs": [{**t, "token": "x" * len(t["token"])} for t in lp["top_logprobs"]]}
                     for lp in group] for group in logprobs]
    for (oi, ci, p), lp in zip(streamed, logprobs, strict=True):
        if part_type == "refusal":
            r.ev("response.refusal.delta", item_id=f"msg_{oi}", output_index=oi, content_index=ci, delta=p)
        else:
            r.ev("response.output_text.delta", item_id=f"msg_{oi}", output_index=oi, content_index=ci, delta=p,
                 logprobs=lp)
    if said_logprobs and done_items and part_type == "output_text" and rng.random() < 0.7:  # the done part's too
        done_items[0]["content"][0]["logprobs"] = [{**lp, "bytes": list(lp["token"].encode())} for lp in said_logprobs]
    if where == "annotation":  # a citation's title, added to the first part and kept in its snapshots
        cite = {"type": "url_citation", "url": "https://docs.example/tides", "title": _answer(rng, marker),
                "start_index": 0, "end_index": 3}
        r.ev("response.output_text.annotation.added", item_id=f"msg_{first}", output_index=first, content_index=0,
             annotation_index=0, annotation=cite)
        done_items[0]["content"][0]["annotations"] = [cite]
    for oi, item in enumerate(done_items, start=first):
        for ci, done_part in enumerate(item["content"]):
            at = {"item_id": f"msg_{oi}", "output_index": oi, "content_index": ci}
            if rng.random() < 0.7:
                if part_type == "refusal":
                    r.ev("response.refusal.done", **at, refusal=done_part["refusal"])
                else:
                    r.ev("response.output_text.done", **at, text=done_part["text"],
                         logprobs=said_logprobs if (oi, ci) == (first, 0) else [])
            if rng.random() < 0.7:
                r.ev("response.content_part.done", **at, part=done_part)
        if rng.random() < 0.85 or "no-final-output" in shape:  # (the SDK's final output is then these)
            r.ev("response.output_item.done", output_index=oi, item=item)
    output: list[dict[str, Any]] | None = [*lead, *done_items]
    if in_tool:
        args = json.dumps({"note": _answer(rng, marker)})
        oi = first + len(done_items)
        call = {"id": "fc_0", "type": "function_call", "status": "in_progress", "call_id": "call_0",
                "name": "Remember", "arguments": ""}
        say = _masker(args, marker, "repeat-differs" in shape)
        pieces = [say(p) for p in _cut(rng, args, 6)]
        if "seeded" in shape:
            call["arguments"], pieces = pieces[0], pieces[1:]
        r.ev("response.output_item.added", output_index=oi, item=call)
        for p in pieces:
            r.ev("response.function_call_arguments.delta", item_id="fc_0", output_index=oi, delta=p)
        if "snapshot-only" not in shape:
            r.ev("response.function_call_arguments.done", item_id="fc_0", output_index=oi, arguments=args,
                 name="Remember")
        done = {**call, "status": "completed", "arguments": args}
        r.ev("response.output_item.done", output_index=oi, item=done)
        output.append(done)  # type: ignore[union-attr]
    if "no-final-output" in shape:
        output = None  # the SDK's final output is then the done items
    elif "final-recut" in shape and output and part_type == "output_text":  # the final response's parts cut otherwise
        whole = "".join(p["text"] for i in output if i["type"] == "message" for p in i["content"])
        cut = _cut(rng, whole, 3)
        output = [*lead, {"id": f"msg_{first}", "type": "message", "status": "completed", "role": "assistant",
                          "content": [_part(c) for c in cut]}, *(i for i in output if i["type"] == "function_call")]
    r.ev("response.completed", response={**r.resp, "status": "completed", "output": output})
    return r.frames


# -- Anthropic ---------------------------------------------------------------------------------------
def anthropic_script(rng: random.Random, marker: str, where: str, shape: Shape) -> list[bytes]:
    in_tool = where == "tool"
    def ev(name: str, **data: Any) -> bytes:
        return _frame(rng, {"type": name, **data}, name)

    start = {"id": "msg_f", "type": "message", "role": "assistant", "model": "m", "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    text = _answer(rng, marker) if where == "text" else "Checking."
    blocks: list[tuple[str, list[str]]] = [("text", g) for g in _groups(rng, _cut(rng, text, 10), 3)]
    if where == "reasoning":
        blocks.insert(0, ("thinking", _cut(rng, _answer(rng, marker), 6)))
    if "redacted" in shape:  # an encrypted thinking block beside the answer (no text of the model's)
        blocks.insert(0, ("redacted_thinking", []))
    if where == "server_tool":  # a server tool's input: a search query or code, in fragments
        said = _answer(rng, marker)
        given = {"query": said} if rng.random() < 0.5 else {"code": f"print({said!r})"}
        name = "web_search" if "query" in given else "code_execution"
        blocks[:0] = [(f"server_tool:{name}", _cut(rng, json.dumps(given), 6))]
    if where in ("search_result", "code_result"):  # what a server tool brought back, whole in its start
        blocks[:0] = [(where, [_answer(rng, marker)])]
    if in_tool:
        blocks.append(("tool", _cut(rng, json.dumps({"note": _answer(rng, marker)}), 6)))
    cited = where == "citation"  # a citation's quoted text and title on the first text block
    starts: list[bytes] = []
    deltas: list[list[bytes]] = []
    for index, (kind, pieces) in enumerate(blocks):
        if kind == "text":
            seed = pieces[0] if "seeded" in shape and rng.random() < 0.7 else ""
            starts.append(ev("content_block_start", index=index, content_block={"type": "text", "text": seed}))
            rest = pieces[1:] if seed else pieces
            deltas.append([ev("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
                           for p in rest])
            if cited and rng.random() < 0.3:  # given with the block's start
                said = _answer(rng, marker)
                starts[-1] = ev("content_block_start", index=index, content_block={
                    "type": "text", "text": seed, "citations": [{
                        "type": "char_location", "cited_text": said, "document_index": 0, "document_title": "Tides",
                        "start_char_index": 0, "end_char_index": len(said)}]})
                cited = False
            if cited:
                said = _answer(rng, marker)
                cite = {"type": "web_search_result_location", "cited_text": said, "url": "https://t.example/",
                        "title": "Tide tables", "encrypted_index": "ZW5j"} if rng.random() < 0.5 else \
                    {"type": "char_location", "cited_text": said, "document_index": 0,
                     "document_title": "Tide tables", "start_char_index": 0, "end_char_index": len(said)}
                deltas[-1].insert(rng.randint(0, len(deltas[-1])), ev(
                    "content_block_delta", index=index, delta={"type": "citations_delta", "citation": cite}))
                cited = False
        elif kind == "thinking":
            seed = pieces[0] if "seeded" in shape and rng.random() < 0.7 else ""
            starts.append(ev("content_block_start", index=index,
                             content_block={"type": "thinking", "thinking": seed, "signature": ""}))
            deltas.append([ev("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": p})
                           for p in (pieces[1:] if seed else pieces)]
                          + [ev("content_block_delta", index=index, delta={"type": "signature_delta",
                                                                             "signature": "c2ln"})])
        elif kind == "redacted_thinking":
            starts.append(ev("content_block_start", index=index,
                             content_block={"type": "redacted_thinking", "data": "RW5jcnlwdGVk"}))
            deltas.append([])
        elif kind == "search_result":
            result = {"type": "web_search_result", "title": pieces[0], "url": "https://t.example/",
                      "encrypted_content": "ZW5j", "page_age": None}
            starts.append(ev("content_block_start", index=index, content_block={
                "type": "web_search_tool_result", "tool_use_id": "srvtoolu_0", "content": [result]}))
            deltas.append([])
        elif kind == "code_result":
            result = {"type": "code_execution_result", "stdout": pieces[0], "stderr": "", "return_code": 0,
                      "content": []}
            starts.append(ev("content_block_start", index=index, content_block={
                "type": "code_execution_tool_result", "tool_use_id": "srvtoolu_0", "content": result}))
            deltas.append([])
        else:
            whole = "seeded" in shape and rng.random() < 0.5
            given = json.loads("".join(pieces)) if whole or "input-in-start" in shape else {}
            server = kind.startswith("server_tool:")
            starts.append(ev("content_block_start", index=index, content_block={
                "type": "server_tool_use" if server else "tool_use", "id": "srvtoolu_0" if server else "toolu_0",
                "name": kind.split(":")[1] if server else "Remember", "input": given}))
            deltas.append([] if whole else [ev("content_block_delta", index=index,
                                                delta={"type": "input_json_delta", "partial_json": p})
                                             for p in pieces])
    frames = [ev("message_start", message=start)]
    order = list(range(len(blocks)))
    if "out-of-order" in shape and len(blocks) > 1:  # blocks started out of index order
        rng.shuffle(order)
        frames += [starts[i] for i in order]
        frames += [d for i in range(len(blocks)) for d in deltas[i]]
        frames += [ev("content_block_stop", index=i) for i in order]
    elif "interleaved" in shape and len(blocks) > 1:  # all started, then their deltas interleaved
        frames += starts
        queue = [list(d) for d in deltas]
        while any(queue):
            frames.append(rng.choice([q for q in queue if q]).pop(0))
        frames += [ev("content_block_stop", index=i) for i in order]
    else:
        for i in order:
            frames += [starts[i], *deltas[i], ev("content_block_stop", index=i)]
    frames.append(ev("message_delta", delta={"stop_reason": "tool_use" if in_tool else "end_turn",
                                              "stop_sequence": None}, usage={"output_tokens": 9}))
    return [*frames, ev("message_stop")]


# -- Gemini ------------------------------------------------------------------------------------------
def _gemini_candidate(rng: random.Random, marker: str | None, where: str, shape: Shape) -> list[dict[str, Any]]:
    """One candidate's chunks (its ``candidates[]`` entry in each, without ``index``). Without ``marker``:
    a plain answer (the other candidate of a ``candidates`` answer)."""
    if marker is None:
        return [{"content": {"role": "model", "parts": [{"text": p}]}} for p in _cut(rng, "Fine, thanks.", 3)]
    text = _answer(rng, marker) if where == "text" else "Checking."
    pieces = _cut(rng, text, 10)
    groups = _groups(rng, pieces, 5) if "parts-per-chunk" in shape else [[p] for p in pieces]
    chunks = [[{"text": p} for p in group] for group in groups]
    if where == "logprobs_mixed":
        mixed = _mixed_tokens(rng, marker)
        cands = [{"content": {"role": "model", "parts": [{"text": said}]}} for said, _, _ in mixed]
        for cand, (_, token, alt) in zip(cands, mixed, strict=True):
            if token is not None:
                top = [{"token": token, "logProbability": -0.5}, *([{"token": alt, "logProbability": -2.0}] if alt else [])]
                cand["logprobsResult"] = {"chosenCandidates": [top[0]], "topCandidates": [{"candidates": top}]}
        return cands
    if where == "reasoning":
        chunks[:0] = [[{"text": p, "thought": True}] for p in _cut(rng, _answer(rng, marker), 4)]
    if where in ("code", "code_output"):  # code execution: the code, then what it printed, in chunks
        said = _answer(rng, marker)
        code = f"print({said!r})" if where == "code" else "print(open('notes').read())"
        out = f"{said}\n" if where == "code_output" else "ok\n"
        chunks[:0] = [[{"executableCode": {"language": "PYTHON", "code": p}}] for p in _cut(rng, code, 3)]
        chunks[len(chunks) - len(groups):len(chunks) - len(groups)] = [
            [{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": p}}] for p in _cut(rng, out, 3)]
    if where == "tool":
        call: dict[str, Any] = {"name": "Remember", "args": {"note": _answer(rng, marker)}}
        if "call-id" in shape:  # Gemini 3 numbers its calls
            call = {"id": "call_0", **call}
        chunks.append([{"functionCall": call}]) if rng.random() < 0.5 else chunks[-1].append({"functionCall": call})
    cands: list[dict[str, Any]] = [{"content": {"role": "model", "parts": parts}} for parts in chunks]
    if where == "logprobs":  # the chosen tokens (or the second choices) spell it, the text says otherwise
        second = rng.random() < 0.5
        for cand, spelt in zip(cands, _spread(rng, _cut(rng, _answer(rng, marker), 10), len(cands)), strict=True):
            chosen = [{"token": "tok" if second else t, "logProbability": -0.5} for t in spelt]
            top = [{"candidates": [{"token": "tok", "logProbability": -0.5}, {"token": t, "logProbability": -2.0}]}
                   for t in spelt] if second else [{"candidates": [c]} for c in chosen]
            cand["logprobsResult"] = {"chosenCandidates": chosen, "topCandidates": top}
    if where == "citation":  # a citation's title, on one chunk
        cands[rng.randrange(len(cands))]["citationMetadata"] = {"citationSources": [
            {"startIndex": 0, "endIndex": 3, "uri": "https://t.example/", "title": _answer(rng, marker)}]}
    if where == "grounding":  # what a search grounded the answer on: its queries, sources, widget
        said = _answer(rng, marker)
        meta: dict[str, Any] = rng.choice([
            {"webSearchQueries": [said]},
            {"groundingChunks": [{"web": {"uri": "https://t.example/", "title": said}}]},
            {"searchEntryPoint": {"renderedContent": f"<div>{said}</div>"}}])
        cands[-1]["groundingMetadata"] = meta
    return cands


def gemini_script(rng: random.Random, marker: str, where: str, shape: Shape) -> list[bytes]:
    lanes = [_gemini_candidate(rng, marker, where, shape)]
    if "candidates" in shape or "candidates-swapped" in shape:  # candidateCount 2: the marker in either
        lanes.append(_gemini_candidate(rng, None, where, shape))
        if rng.random() < 0.5:
            lanes.reverse()
    if "candidate-handover" in shape and len(lanes[0]) > 1:
        # candidate 0 ends early and candidate 1 carries on alone: first in its chunks, where
        # ``chunk.text`` (the first candidate's text, by position) reads it as the same answer
        at = rng.randrange(1, len(lanes[0]))
        lanes = [lanes[0][:at], [{"content": {"role": "model", "parts": []}}] * at + lanes[0][at:]]
    frames = []
    for n in range(max(map(len, lanes))):
        cands = []
        for i, lane in enumerate(lanes):
            if n < len(lane):
                cand = {**lane[n], "index": i}
                if n == len(lane) - 1:
                    cand["finishReason"] = "STOP"
                if lane[n]["content"]["parts"] or n == len(lane) - 1:
                    cands.append(cand)
        if "candidates-swapped" in shape:  # listed in another order than their indexes
            cands.reverse()
        frames.append(_frame(rng, {"candidates": cands, "modelVersion": "m", "responseId": "r",
                                   "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5}}))
    return frames


def _cut_bytes(rng: random.Random, data: bytes) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 12))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


SCRIPTS: dict[str, Callable[[random.Random, str, str, Shape], list[bytes]]] = {
    "chat": chat_script, "responses": responses_script, "anthropic": anthropic_script, "gemini": gemini_script}
SHAPES = {
    "chat": ["plain", "args-in-head", "index-swapped", "type-missing", "choices", "legacy-call", "custom-tool"],
    "responses": ["faithful", "seeded", "snapshot-only", "deltas-swapped", "no-final-output", "final-recut",
                  "repeat-differs"],
    "anthropic": ["sequential", "seeded", "input-in-start", "out-of-order", "interleaved", "redacted"],
    "gemini": ["part-per-chunk", "parts-per-chunk", "candidates", "candidates-swapped", "call-id",
               "candidate-handover"],
}
"""The shapes each script can bend its answer into (Hypothesis picks one or two per example; the random
cuts, groupings and field orders come from the drawn seed)."""
WHERES = {
    "chat": ["text", "tool", "reasoning", "reasoning_details", "refusal", "refusal_logprobs", "logprobs",
             "top_logprobs", "logprobs_mixed", "annotation", "audio"],
    "responses": ["text", "tool", "reasoning", "reasoning_text", "refusal", "logprobs", "top_logprobs", "logprobs_mixed",
                  "annotation",
                  "web_search", "file_search", "code", "code_output", "custom_tool", "mcp", "mcp_output"],
    "anthropic": ["text", "tool", "reasoning", "server_tool", "search_result", "code_result", "citation"],
    "gemini": ["text", "tool", "reasoning", "code", "code_output", "logprobs", "logprobs_mixed", "citation",
               "grounding"],
}
"""Where each script plants the marker: every field its SDK surfaces to a user or an agent."""


# -- the property ------------------------------------------------------------------------------------
@pytest.mark.parametrize("marker", list(MARKERS))
@pytest.mark.parametrize("api", list(SCRIPTS))
def test_what_the_sdk_shows_of_a_planted_marker_was_blocked(default_proxy: ProxyServer,
                                                             upstream_server: FakeUpstream,
                                                             api: str, marker: str) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1), where=st.sampled_from(WHERES[api]),
           shape=st.frozensets(st.sampled_from(SHAPES[api]), min_size=1, max_size=2))
    def run(seed: int, where: str, shape: Shape) -> None:
        planted = _planted(marker, where)
        rng = random.Random(seed)
        frames = SCRIPTS[api](rng, planted, where, shape)
        if rng.random() < 0.3:  # the same bytes in other writes: frames cut across reads
            frames = _cut_bytes(rng, b"".join(frames))
        upstream_server.reset()
        upstream_server.queue(Reply(raw_frames=frames))
        view = VIEWS[api](default_proxy.url, system=SYSTEM)
        assert not view.shows(planted), (
            f"{api}: the SDK shows the {marker} (seed {seed}, in {where}, shape {sorted(shape)}):\n"
            + b"".join(frames).decode()[:4000] + "\n--- shown:\n" + view.text()[:3000])

    run()


@pytest.mark.parametrize("api", list(SCRIPTS))
def test_the_oracle_sees_the_marker_when_nothing_guards(plain_proxy: ProxyServer, upstream_server: FakeUpstream,
                                                        api: str) -> None:
    """The fuzzer's control: through the passthrough proxy the SDK shows the planted marker, wherever
    it is planted and whichever shape the answer takes (a script that hid it from the SDK would prove
    nothing). Each place once with the first shape, each shape once in a place drawn by the seed."""
    rng = random.Random(29)
    cases = [(where, SHAPES[api][0]) for where in WHERES[api]]
    cases += [(rng.choice(WHERES[api]), shape) for shape in SHAPES[api][1:]]
    for n, (where, shape) in enumerate(cases):
        marker = sorted(MARKERS)[n % 2]
        planted = _planted(marker, where)
        frames = SCRIPTS[api](random.Random(n), planted, where, frozenset([shape]))
        upstream_server.reset()
        upstream_server.queue(Reply(raw_frames=frames))
        view = VIEWS[api](plain_proxy.url, system=SYSTEM)
        assert view.shows(planted), (where, shape, view.error, view.text()[:3000])


# -- whole answers (no streaming) -------------------------------------------------------------------
def unary_body(rng: random.Random, api: str, marker: str, where: str) -> dict[str, Any]:
    """A whole answer of ``api`` with ``marker`` cut across its parts, items, blocks or arguments, or
    in one of the other fields ``WHERES`` names."""
    where = "logprobs" if where == "logprobs_mixed" else where  # (a body's logprobs are whole)
    text = _answer(rng, marker) if where == "text" else "Checking."
    pieces = _cut(rng, text, 6)
    thought = _answer(rng, marker) if where == "reasoning" else "Thinking."
    said = _answer(rng, marker)  # for the other places
    args = {"note": _answer(rng, marker) if where == "tool" else "fine"}
    if api == "chat":
        message: dict[str, Any] = {"role": "assistant", "content": text, "reasoning_content": thought}
        logprobs: dict[str, Any] | None = None
        if where == "refusal":
            message["content"], message["refusal"] = None, said
        if where == "refusal_logprobs":
            message["content"], message["refusal"] = None, "I cannot help with that."
            logprobs = {"content": None, "refusal": [_logprob(t) for t in _cut(rng, said, 10)]}
        if where == "audio":
            message["audio"] = {"id": "audio_0", "data": "UklGRg==", "expires_at": 1, "transcript": said}
        if where == "reasoning_details":
            message["reasoning_details"] = [{"type": "reasoning.summary", "summary": "Tides.", "index": 0},
                                            {"type": "reasoning.text", "text": said, "index": 1}]
        if where in ("logprobs", "top_logprobs"):
            spelt = _cut(rng, said, 10)
            logprobs = {"content": [_logprob(t) if where == "logprobs" else _logprob("tok", t) for t in spelt],
                        "refusal": None}
        if where == "annotation":
            message["annotations"] = [{"type": "url_citation", "url_citation": {
                "title": said, "url": "https://docs.example/tides", "start_index": 0, "end_index": 3}}]
        if where == "tool":
            message["tool_calls"] = [{"id": "call_0", "type": "function",
                                      "function": {"name": "Remember", "arguments": json.dumps(args)}}]
        choices = [{"index": 0, "message": message, "logprobs": logprobs,
                    "finish_reason": "tool_calls" if where == "tool" else "stop"}]
        if rng.random() < 0.3:  # n > 1: the marker in the second choice
            plain = {"role": "assistant", "content": "Fine, thanks."}
            choices = [{"index": 0, "message": plain, "logprobs": None, "finish_reason": "stop"},
                       {**choices[0], "index": 1}]
        return {"id": "chatcmpl-f", "object": "chat.completion", "created": 1, "model": "m", "choices": choices}
    if api == "responses":
        lead = _responses_lead(_Responses(rng), rng, marker, where) if where not in ("text", "tool") else []
        output: list[dict[str, Any]] = list(lead) or [{"id": "rs_0", "type": "reasoning", "summary": [
            {"type": "summary_text", "text": "Thinking."}]}]  # (summary parts are shown apart, one lane each)
        if where == "refusal":
            output.append({"id": "msg_0", "type": "message", "status": "completed", "role": "assistant",
                           "content": [{"type": "refusal", "refusal": said}]})
        else:
            output += [{"id": f"msg_{n}", "type": "message", "status": "completed", "role": "assistant",
                        "content": [_part(t) for t in group]} for n, group in enumerate(_groups(rng, pieces, 3))]
            first = output[max(1, len(lead))]["content"][0]
            if where in ("logprobs", "top_logprobs"):
                first["logprobs"] = [{"token": t, "logprob": -0.5, "bytes": list(t.encode()), "top_logprobs": []}
                                     if where == "logprobs" else
                                     {"token": "tok", "logprob": -0.5, "bytes": [116, 111, 107],
                                      "top_logprobs": [{"token": t, "logprob": -2.0, "bytes": list(t.encode())}]}
                                     for t in _cut(rng, said, 10)]
            if where == "annotation":
                first["annotations"] = [{"type": "url_citation", "url": "https://docs.example/tides", "title": said,
                                         "start_index": 0, "end_index": 3}]
        if where == "tool":
            output.append({"id": "fc_0", "type": "function_call", "status": "completed", "call_id": "call_0",
                           "name": "Remember", "arguments": json.dumps(args)})
        return {"id": "resp_f", "object": "response", "created_at": 1, "model": "m", "status": "completed",
                "output": output}
    if api == "anthropic":
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": thought, "signature": "c2ln"}]
        if rng.random() < 0.3:
            content.append({"type": "redacted_thinking", "data": "RW5jcnlwdGVk"})
        if where == "server_tool":
            given = {"query": said} if rng.random() < 0.5 else {"code": f"print({said!r})"}
            content.append({"type": "server_tool_use", "id": "srvtoolu_0",
                            "name": "web_search" if "query" in given else "code_execution", "input": given})
        if where == "search_result":
            content.append({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_0", "content": [
                {"type": "web_search_result", "title": said, "url": "https://t.example/",
                 "encrypted_content": "ZW5j", "page_age": None}]})
        if where == "code_result":
            content.append({"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_0", "content": {
                "type": "code_execution_result", "stdout": said, "stderr": "", "return_code": 0, "content": []}})
        content += [{"type": "text", "text": t} for t in pieces]
        if where == "citation":
            content[-1]["citations"] = [{"type": "char_location", "cited_text": said, "document_index": 0,
                                         "document_title": "Tide tables", "start_char_index": 0,
                                         "end_char_index": len(said)}]
        if where == "tool":
            content.append({"type": "tool_use", "id": "toolu_0", "name": "Remember", "input": args})
        return {"id": "msg_f", "type": "message", "role": "assistant", "model": "m", "content": content,
                "stop_reason": "tool_use" if where == "tool" else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 5, "output_tokens": 9}}
    parts: list[dict[str, Any]] = [{"text": t, "thought": True} for t in _cut(rng, thought, 2)]
    if where in ("code", "code_output"):
        parts += [{"executableCode": {"language": "PYTHON",
                                      "code": f"print({said!r})" if where == "code" else "print(1)"}},
                  {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": said if where == "code_output" else "1"}}]
    parts += [{"text": t} for t in pieces]
    if where == "tool":
        call = {"name": "Remember", "args": args}
        parts.append({"functionCall": {"id": "call_0", **call} if rng.random() < 0.5 else call})
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    if where == "logprobs":
        spelt = _cut(rng, said, 10)
        cand["logprobsResult"] = {"chosenCandidates": [{"token": t, "logProbability": -0.5} for t in spelt],
                                  "topCandidates": [{"candidates": [{"token": t, "logProbability": -0.5}]}
                                                    for t in spelt]}
    if where == "citation":
        cand["citationMetadata"] = {"citationSources": [{"startIndex": 0, "endIndex": 3, "uri": "https://t.example/",
                                                         "title": said}]}
    if where == "grounding":
        cand["groundingMetadata"] = rng.choice([
            {"webSearchQueries": [said]}, {"groundingChunks": [{"web": {"uri": "https://t.example/", "title": said}}]},
            {"searchEntryPoint": {"renderedContent": f"<div>{said}</div>"}}])
    cands = [cand]
    if rng.random() < 0.3:  # candidateCount 2: the marker in the second
        cands = [{"content": {"role": "model", "parts": [{"text": "Fine."}]}, "finishReason": "STOP", "index": 0},
                 {**cand, "index": 1}]
    return {"candidates": cands, "modelVersion": "m", "responseId": "r",
            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5}}


@pytest.mark.parametrize("api", list(SCRIPTS))
def test_what_the_sdk_shows_of_a_marker_in_a_whole_answer_was_blocked(
        default_proxy: ProxyServer, plain_proxy: ProxyServer, upstream_server: FakeUpstream, api: str) -> None:
    """The same oracle over whole answers: the SDK's parsed object and its joined text. Each example
    runs twice: through the passthrough proxy the SDK shows the marker (the control), through the
    guarded one it does not."""
    @settings(max_examples=2 * len(WHERES[api]), deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1), where=st.sampled_from(WHERES[api]),
           marker=st.sampled_from(sorted(MARKERS)))
    def run(seed: int, where: str, marker: str) -> None:
        planted = _planted(marker, where)
        body = json.dumps(_shuffled(random.Random(seed), unary_body(random.Random(seed), api, planted, where)))
        for proxy, shown in ((plain_proxy, True), (default_proxy, False)):
            upstream_server.reset()
            upstream_server.queue(Reply(raw_body=body.encode(), content_type="application/json"))
            view = unary_view(api, proxy.url, system=SYSTEM)
            assert view.shows(planted) is shown, (
                f"{api} ({'passthrough' if shown else 'guarded'}, seed {seed}, in {where}): {view.text()[:3000]}")

    run()
