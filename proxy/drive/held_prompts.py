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

Kept in the state store (``proxy.state``): in memory for one process, a SQLite file shared by
``serve --workers N``, Valkey/Redis shared by replicas (``GUARDPROXY_STATE_URL``). Each entry lives in
the scope of the upstream credential that created it (``proxy.state.scope``), one member per text
(sealed when the store is shared and ``GUARDPROXY_STATE_KEY`` is set), for no longer than the
upstream keeps what it names (``held_prompts_max_ttl_s``; a cache's ``expireTime``). Budgets in bytes
as stored: per scope and in all (``proxy.state.base``). Every call waits at most ``timeout_s`` and
raises ``StoreUnavailable`` past it; the edge applies ``unseen_prompt``. Nothing here is logged.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from datetime import datetime
from typing import Any

from guardrails.datamodel import RequestView
from proxy.state import Store, StoreUnavailable
from proxy.state.seal import Sealer, Unsealable
from proxy.wire.base import BadRequest, load_json_body
from proxy.wire.gemini import cached_system
from proxy.wire.held_state import cache_key, held_caches
from proxy.wire.openai_responses import held_state, system_items

CACHE_DEFAULT_TTL_S = 3600.0
"""A Gemini cache created without ``ttl`` or ``expireTime`` lives an hour (Gemini's default)."""


UNSEEN = "\0unseen"
"""The member of a conversation that holds a text this scope never saw (``HeldPrompts.mark_unseen``):
its entry is a miss. A member, not a deletion: a turn of the conversation that ran beside and joins
its texts when it ends keeps it (a join keeps every member), so the conversation stays unseen."""


class HeldPrompts:
    """Key (``kind:id``, as in ``RequestView.held``) -> the system texts the upstream holds under it,
    per scope, in a ``Store``."""

    def __init__(self, store: Store, sealer: Sealer, timeout_s: float = 0.05,
                 max_ttl_s: float = 30 * 24 * 3600.0) -> None:
        self.store, self.sealer, self.timeout_s, self.max_ttl_s = store, sealer, timeout_s, max_ttl_s
        self.unreadable = 0
        """Entries that failed to open (another key, changed in the store): answered as misses."""

    async def _bounded(self, call: Any) -> Any:
        if not self.store.waits:
            return await call
        try:
            async with asyncio.timeout(self.timeout_s):
                return await call
        except TimeoutError:
            raise StoreUnavailable(f"no answer within {self.timeout_s * 1000:.0f} ms") from None
        except OSError as exc:  # (an engine that let one through)
            raise StoreUnavailable(f"{type(exc).__name__}") from None

    async def recall(self, scope: str, keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the texts held under the known keys, in order; the keys this scope never saw or has
        forgotten: a stored prompt's always). Raises ``StoreUnavailable``."""
        texts: tuple[str, ...] = ()
        missing: tuple[str, ...] = ()
        for key in keys:
            if key.startswith(("prompt:", "item:")):
                missing += (key,)  # (never created through the proxy: not looked up)
                continue
            found = await self._bounded(self.store.get(scope, key))
            if found is None:
                missing += (key,)
                continue
            try:
                opened = tuple(self.sealer.open(scope, key, v) for v in found)
            except Unsealable:
                self.unreadable += 1
                missing += (key,)
                continue
            if UNSEEN in opened:
                missing += (key,)
                continue
            texts += opened
        if len(keys) > 1:
            texts = tuple(dict.fromkeys(texts))  # (a conversation and a response of it hold the same texts)
        return texts, missing

    async def remember(self, scope: str, key: str, texts: tuple[str, ...], ttl_s: float | None = None,
                       *, join: bool = False) -> bool:
        """Keep ``texts`` under ``key`` (in place of what was there, or joined to it); False: not kept
        (larger than a scope's budget: a later request naming it is a miss). Raises ``StoreUnavailable``."""
        ttl = self.max_ttl_s if ttl_s is None or math.isnan(ttl_s) else min(ttl_s, self.max_ttl_s)
        if ttl <= 0:
            await self.forget(scope, key)
            return False
        seal, ident = self.sealer.seal, self.sealer.member_id
        members = {ident(t): seal(scope, key, t) for t in texts}
        return bool(await self._bounded(self.store.put(scope, key, members, ttl, join=join)))

    async def remember_turn(self, scope: str, view: RequestView, recalled: tuple[str, ...],
                            state_ids: tuple[str, ...]) -> None:
        """What a later request naming this turn's answers (``state_ids``) or its conversation finds
        upstream: the texts it had from earlier turns (``recalled``: all seen) plus its own input's
        (``view.kept``). Only for a turn the upstream took (it named an answer)."""
        if not state_ids:
            return
        # Each text once: a client that sends its developer message again on every chained turn would
        # otherwise grow the chain's texts (and the canary's prompt, indexed anew each turn) by a copy a turn.
        texts = tuple(dict.fromkeys((*recalled, *(t for t in view.kept or () if t))))
        for state_id in state_ids:
            await self.remember(scope, f"response:{state_id}", texts)
        for key in view.held:
            if key.startswith("conversation:"):
                # Joined to what is held now (atomically, in the store), not put in its place: a
                # conversation only grows upstream, and another turn of it that ended while this one
                # ran (its developer message now upstream) is not in what this turn recalled.
                await self.remember(scope, key, texts, join=True)

    async def forget(self, scope: str, key: str) -> None:
        """Drop ``key`` (a later request naming it is a miss)."""
        await self._bounded(self.store.delete(scope, key))

    async def forget_unseen(self, scope: str, view: RequestView) -> None:
        """A turn relayed with held state this scope never saw (``unseen_prompt = "pass"``, or a store
        that failed): whatever the upstream put into its conversation from there (an ``item_reference``'s
        developer message, another turn's) is now held in it, so the conversation is marked unseen
        (``mark_unseen``) and its later turns are misses too, not armed as "seen" with its older prompts."""
        for key in view.held:
            if key.startswith("conversation:"):
                await self.mark_unseen(scope, key)

    async def mark_unseen(self, scope: str, key: str) -> None:
        """``key`` holds what this scope never saw: a miss from now on, whatever joins it later."""
        await self.remember(scope, key, (UNSEEN,))

    async def forget_unwatched(self, scope: str, view: RequestView) -> None:
        """A turn that put system texts (``view.kept``) into a conversation without being remembered (its
        policy has no canary): the conversation is marked unseen (``mark_unseen``), so a later request
        naming it under a policy with a canary is a miss (``unseen_prompt``), not armed as seen without those texts."""
        if view.kept:
            for key in view.held:
                if key.startswith("conversation:"):
                    await self.mark_unseen(scope, key)


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
    ``cachedContents``; ``openai_responses``, a conversation); None when the body cannot be read or does not show every
    system text it keeps (``_all_seen``)."""
    try:
        data = load_json_body(body)
    except BadRequest:
        return None
    if kind == "gemini":
        system = cached_system(data)
        return None if system is None else tuple(t for t in (system,) if t)
    texts = system_items(data)
    if texts is None or not _all_seen(data.get("items")):
        return None
    return tuple(t for t in texts if t)


def _all_seen(items: Any) -> bool:
    """Whether a conversation's initial ``items`` show every system text they put upstream: an
    ``item_reference`` pulls in a stored item by its id (a developer message the proxy never saw), and
    a system or developer item of another ``type`` than a message is not read by ``system_items``.
    Such a conversation is not remembered (its later turns are misses, ``unseen_prompt``), never
    remembered as holding less than it does (armed as "seen" without the prompt)."""
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "item_reference" or (
                item.get("role") in ("system", "developer") and item.get("type", "message") != "message"):
            return False
    return True


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


def created_ttl(kind: str, body: bytes, answer: bytes, now: float | None = None) -> float | None:
    """How long the upstream keeps what a create request made (seconds from ``now``): a Gemini cache's
    ``expireTime`` as answered, else the ``ttl`` asked for, else Gemini's default hour; None (the
    store's longest) for a conversation, which the upstream keeps until it is deleted."""
    if kind != "gemini":
        return None
    now = time.time() if now is None else now
    try:
        data = json.loads(answer)
        expire = data.get("expireTime") if isinstance(data, dict) else None
        if isinstance(expire, str):
            # (Gemini writes nanoseconds; ``fromisoformat`` reads up to microseconds)
            stamp = re.sub(r"(\.\d{6})\d+", r"\1", expire.replace("Z", "+00:00"))
            return datetime.fromisoformat(stamp).timestamp() - now
    except (ValueError, UnicodeDecodeError, RecursionError, OverflowError):
        pass
    try:
        asked = json.loads(body).get("ttl")
        if isinstance(asked, str) and asked.endswith("s") and math.isfinite(seconds := float(asked[:-1])):
            return seconds
    except (ValueError, UnicodeDecodeError, RecursionError, AttributeError, OverflowError):
        pass
    return CACHE_DEFAULT_TTL_S
