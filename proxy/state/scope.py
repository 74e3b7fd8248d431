"""Whose state a request reads and writes: a digest of the upstream credential it carries.

The credential is the value of the first of ``authorization`` (without ``Bearer ``), ``x-api-key``,
``x-goog-api-key``, ``api-key`` or the ``key`` query parameter (Gemini's two spellings of one key land
in one scope). The scope is a digest of it (``Sealer.digest``: keyed when ``GUARDPROXY_STATE_KEY`` is
set), never the credential. A request without one shares the scope ``anonymous``.

Why the credential: it is what the upstream checks before it lets a request name stored state, so a
client that could chain on an id can present it; a client with another credential cannot read, fill
or evict this one's entries, whatever ids it names. Another key of the same provider project is
another scope (its chained turns are unseen here: ``unseen_prompt``).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl

from proxy.state.seal import Sealer

_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")
ANONYMOUS = "anonymous"


def credential_of(header: Mapping[str, str], query: str) -> str | None:
    for name in _HEADERS:
        value = header.get(name)
        if value:
            return value[7:] if value[:7].lower() == "bearer " else value
    if query:  # (read decoded: ``%6Bey=`` is ``key=`` to the upstream)
        for name, value in parse_qsl(query, keep_blank_values=False):
            if name == "key" and value:
                return value
    return None


def scope_of(sealer: Sealer, header: Mapping[str, str], query: str) -> str:
    credential = credential_of(header, query)
    if credential is None:
        return ANONYMOUS
    return sealer.digest(b"credential\0" + credential.strip().encode()).hex()[:32]
