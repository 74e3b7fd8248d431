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

import sys
from collections import OrderedDict
from typing import Any

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
        return texts, missing

    def remember(self, key: str, texts: tuple[str, ...]) -> None:
        """Keep ``texts`` under ``key`` (replacing what was there); an entry larger than the whole
        budget is not kept (a later request naming it is a miss)."""
        size = _ENTRY_BYTES + sys.getsizeof(key) + sum(map(sys.getsizeof, texts))
        old = self._entries.pop(key, None)
        if old is not None:
            self.used_bytes -= old[1]
        if size > self.budget_bytes:
            return
        self._entries[key] = (texts, size)
        self.used_bytes += size
        while self.used_bytes > self.budget_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.used_bytes -= evicted

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries


def kind_of(key: str) -> str:
    """``response``, ``conversation``, ``prompt`` or ``cache`` (a metric label, never the id)."""
    return key.partition(":")[0]


def cache_key(name: Any) -> str | None:
    """The key of a Gemini ``cachedContent`` name (``cachedContents/abc``; a bare id is read as that),
    None for a name of another type."""
    if not isinstance(name, str):
        return None
    return f"cache:{name if '/' in name else 'cachedContents/' + name}"
