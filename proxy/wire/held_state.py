"""Names of state the upstream holds for later requests (a Gemini ``cachedContent``), read alike
by every wire format that can name it (Gemini's own API and its OpenAI-compatible chat layer)."""

from __future__ import annotations

from typing import Any

import msgspec


def cache_key(name: Any) -> str | None:
    """``RequestView.held``'s key for a ``cachedContent`` name (``cachedContents/abc``; a bare id is
    read as that), None for a name of another type."""
    if not isinstance(name, str):
        return None
    return f"cache:{name if '/' in name else 'cachedContents/' + name}"

def held_caches(*names: Any) -> tuple[str, ...] | None:
    """``RequestView.held`` of a cache named as ``cachedContent`` and/or ``cached_content`` (absent:
    UNSET or None); None for a name that is not a string. Both spellings in one body are both held:
    which one the upstream reads is its JSON parser's choice, not the proxy's."""
    keys: list[str] = []
    for name in names:
        if name is msgspec.UNSET or name is None:
            continue
        key = cache_key(name)
        if key is None:
            return None
        keys.append(key)
    return tuple(dict.fromkeys(keys))
