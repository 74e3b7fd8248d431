"""System prompts the upstream holds for later requests, as this process saw them go up.

A request can carry a system prompt its body does not show: a Responses turn names its
``previous_response_id`` (the earlier turns' input items, system and developer messages among them,
carry over upstream; ``instructions`` do not) or a ``conversation`` (items kept upstream); a Gemini
request names a ``cachedContent`` created with a ``systemInstruction``; a Responses request names a
stored ``prompt`` (written in OpenAI's dashboard: never seen by the proxy). The canary can only
watch for a prompt the proxy knows, so the edge remembers what went up:

- a guarded Responses answer's id -> the system texts in effect for its later turns (its own
  ``previous_response_id``'s or ``conversation``'s, plus the request's system and developer items);
  and the conversation's key -> the same;
- a ``POST .../cachedContents`` passed through -> its ``systemInstruction``, under the ``name`` the
  upstream answered; ``POST /v1/conversations`` -> its items' system texts, under the id.

A request that names such state is then armed with the remembered texts (``recall``); state the
process never saw (another worker's, from before a restart, evicted, a stored prompt) is a miss,
and the canary's ``unseen_prompt`` policy says whether the request is relayed or refused.

Bounded: an LRU by bytes (``budget_bytes``, ``GUARDPROXY_HELD_PROMPTS_BYTES``). Each entry is counted
at its key plus every text it holds, even when it shares its text objects with the turn before it (a
chain of turns reuses one tuple of texts, so the real memory is usually far less than counted): the
budget bounds memory from above. Per process, not shared between ``serve --workers`` processes.
Nothing here is logged; the texts are never written anywhere.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict
from typing import Any

from guardrails.datamodel import RequestView
from proxy.wire.base import BadRequest, load_json_body
from proxy.wire.gemini import cached_system
from proxy.wire.held_state import cache_key, held_caches
from proxy.wire.openai_responses import held_state, system_items

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024
_ENTRY_BYTES = 120
"""An ``OrderedDict`` slot, its links and the tuple holding the texts, roughly."""


class HeldPrompts:
    """Key (``kind:id``, as in ``RequestView.held``) -> the system texts the upstream holds under it.
    LRU by bytes. Not thread-safe: one per process, used from the event loop."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self.used_bytes = 0
        self._entries: OrderedDict[str, tuple[tuple[str, ...], int]] = OrderedDict()

    def recall(self, keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the texts held under the known keys, in order; the keys this process never saw, or has
        forgotten: a stored prompt's always)."""
        texts: tuple[str, ...] = ()
        missing: tuple[str, ...] = ()
        for key in keys:
            found = self._entries.get(key)
            if found is None:
                missing += (key,)
                continue
            self._entries.move_to_end(key)
            texts += found[0]
        if len(keys) > 1:
            texts = tuple(dict.fromkeys(texts))  # (a conversation and a response of it hold the same texts)
        return texts, missing

    def remember(self, key: str, texts: tuple[str, ...]) -> None:
        """Keep ``texts`` under ``key`` (replacing what was there); an entry larger than the whole
        budget is not kept (a later request naming it is a miss)."""
        size = _ENTRY_BYTES + sys.getsizeof(key) + sum(map(sys.getsizeof, texts))
        self.forget(key)
        if size > self.budget_bytes:
            return
        self._entries[key] = (texts, size)
        self.used_bytes += size
        while self.used_bytes > self.budget_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.used_bytes -= evicted

    def remember_turn(self, view: RequestView, recalled: tuple[str, ...], state_ids: tuple[str, ...]) -> None:
        """What a later request naming this turn's answers (``state_ids``) or its conversation finds
        upstream: the texts it had from earlier turns (``recalled``: all seen) plus its own input's
        (``view.kept``)."""
        if not state_ids and not view.held:
            return
        # Each text once: a client that sends its developer message again on every chained turn would
        # otherwise grow the chain's texts (and the canary's prompt, indexed anew each turn) by a copy a turn.
        texts = tuple(dict.fromkeys((*recalled, *(t for t in view.kept or () if t))))
        for state_id in state_ids:
            self.remember(f"response:{state_id}", texts)
        for key in view.held:
            if key.startswith("conversation:"):
                # Joined to what is held now, not put in its place: a conversation only grows upstream, and
                # another turn of it that ended while this one ran (its developer message now upstream)
                # is not in what this turn recalled when it began.
                now = self._entries.get(key)
                self.remember(key, tuple(dict.fromkeys((*now[0], *texts))) if now is not None else texts)

    def forget(self, key: str) -> None:
        """Drop ``key`` (a later request naming it is a miss)."""
        old = self._entries.pop(key, None)
        if old is not None:
            self.used_bytes -= old[1]

    def forget_unwatched(self, view: RequestView) -> None:
        """A turn that put system texts (``view.kept``) into a conversation without being remembered (its
        policy has no canary): the conversation is forgotten, so a later request naming it under a
        policy with a canary is a miss (``unseen_prompt``), not armed as seen without those texts."""
        if view.kept:
            for key in view.held:
                if key.startswith("conversation:"):
                    self.forget(key)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries


def kind_of(key: str) -> str:
    """``response``, ``conversation``, ``prompt``, ``item`` or ``cache`` (a metric label, never the id)."""
    return key.partition(":")[0]


_FIELDS = {"response": "'previous_response_id'", "conversation": "'conversation'", "prompt": "'prompt'",
           "item": "an 'item_reference' input item", "cache": "'cachedContent'"}
_MARKS = (b"previous_response_id", b"conversation", b'"prompt"', b"item_reference", b"cachedContent",
          b"cached_content", b"\\u")


def may_name_held(body: bytes) -> bool:
    """Whether a request body could name state the upstream holds (``RequestView.held``), a key spelled
    with JSON escapes included: such a body is read before it goes upstream when the policy refuses
    what it has not seen (a refused request must not run upstream)."""
    return any(mark in body for mark in _MARKS)


_TOP_NAMES = {"openai_responses": (b'"previous_response_id"', b'"conversation"', b'"prompt"'),
              "gemini": (b'"cachedContent"', b'"cached_content"')}


def _held_of(wire: str, name: str, value: Any) -> tuple[str, ...] | None:
    if wire == "gemini":
        return held_caches(value) if name in ("cachedContent", "cached_content") else ()
    fields = ("previous_response_id", "conversation", "prompt")
    return held_state(*(value if name == f else None for f in fields)) if name in fields else ()


def held_in_every_spelling(wire: str, body: bytes, held: tuple[str, ...]) -> tuple[str, ...]:
    """``held`` with the state every other top-level spelling of its fields names: a key given twice
    (``"previous_response_id"`` and ``"previous_response\\u005fid"``, or the same one twice) is read
    by the proxy's decoders as the last, by an upstream's parser perhaps as the first. All of them are
    then held: all remembered, or a miss. Bodies holding neither a field name twice nor a JSON escape
    are not decoded again (one byte count per name)."""
    names = _TOP_NAMES.get(wire)
    if names is None or (b"\\u" not in body and all(body.count(n) < 2 for n in names)):
        return held
    top: list[tuple[str, Any]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal top
        top = items  # (the outermost object is the last one closed)
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return held
    extra = [k for name, value in top for k in _held_of(wire, name, value) or ()]
    return tuple(dict.fromkeys((*held, *extra)))


def unseen_message(kinds: list[str]) -> str:
    """The client's 400 for held state of ``kinds`` this process never saw (``unseen_prompt = "refuse"``)."""
    fields = " and ".join(_FIELDS[k] for k in kinds)
    return (f"guardproxy has not seen the system prompt that {fields} keeps upstream (it went up through "
            "another guardproxy process, before a restart or straight to the provider, or it is a prompt "
            "stored in the provider's console), so it cannot check that the answer does not repeat it: send "
            "the system prompt in this request instead")


def created_texts(kind: str, body: bytes) -> tuple[str, ...] | None:
    """The system texts a create request asks the upstream to keep (``Route.keeps``: ``gemini``, a
    ``cachedContents``; ``openai_responses``, a conversation); None when the body cannot be read."""
    try:
        data = load_json_body(body)
    except BadRequest:
        return None
    if kind == "gemini":
        system = cached_system(data)
        return None if system is None else tuple(t for t in (system,) if t)
    texts = system_items(data)
    return None if texts is None else tuple(t for t in texts if t)


def created_key(kind: str, answer: bytes) -> str | None:
    """The key the upstream's answer to a create request names (a cache's ``name``, a conversation's
    ``id``); None when it names none."""
    try:
        data = json.loads(answer)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if kind == "gemini":
        return cache_key(data.get("name"))
    cid = data.get("id")
    return f"conversation:{cid}" if isinstance(cid, str) else None
