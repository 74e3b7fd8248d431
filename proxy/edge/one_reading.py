"""One reading of a request body: a JSON object that repeats a key is refused on guarded routes.

The proxy's decoders keep the last of two values for one key; an upstream's parser may keep the
first. A body with ``"messages"`` (or ``system``, ``instructions``, ``systemInstruction``, a message's
``content``, a held-state name...) given twice is then checked as one request and answered as
another: the canary armed with a system prompt the upstream never reads, the input guardrails
screening a user text the upstream does not see. No JSON serializer a client uses writes a key twice,
so such a body is refused with the API's 400 rather than re-serialised (re-serialising would change
every guarded body's bytes and could not be sent before it is read).

Detection is exact and runs in C: every key-value pair of a JSON text has exactly one colon outside
strings, and a string's colons survive a decode and an encode unchanged. So the raw body has as many
colons as msgspec's re-encoding of its decoded object exactly when no object lost a pair to a
repeated key. Only ``\\u003a`` (an escaped colon) breaks the count; a body spelling it, or one msgspec
does not decode, is checked by the standard library's parser with a hook that sees every pair.
Cost: about 2 us per KB of body (a 66 KB agent turn: ~0.15 ms; see docs/security.md).

Gemini's parser (proto JSON) reads every message field under two spellings, ``systemInstruction`` and
``system_instruction``: an object giving both is a repeat too. Gemini clients write camelCase, so the
pairs are looked at (with the standard library's parser) only when the snake_case name of such a
field occurs (``_GEMINI_FIELDS``; a tool's ``file_path`` argument is not one).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any

import msgspec

_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()


class _Repeated(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return out


_GEMINI_FIELDS = (
    "systemInstruction", "cachedContent", "functionCall", "functionResponse", "inlineData", "fileData",
    "executableCode", "codeExecutionResult", "generationConfig", "toolConfig", "safetySettings",
    "thoughtSignature", "functionDeclarations", "functionCallingConfig", "allowedFunctionNames",
    "responseMimeType", "responseSchema", "responseJsonSchema", "candidateCount", "maxOutputTokens",
    "googleSearch", "codeExecution", "urlContext", "videoMetadata", "mimeType", "fileUri", "displayName",
)
"""Gemini's message fields with two spellings (a proto field's camelCase and snake_case names). Only
these are paired: keys of maps and ``Struct`` values (a tool's ``args``, a schema's ``properties``)
are the client's own and keep their spelling upstream."""
_UPPER = re.compile(r"[A-Z]")


def _snake(key: str) -> str:
    return _UPPER.sub(lambda m: "_" + m.group().lower(), key)


_SNAKE_OF = {_snake(name): name for name in _GEMINI_FIELDS}
_SNAKE_FIELD = re.compile(b'"(?:' + b"|".join(re.escape(k.encode()) for k in _SNAKE_OF) + rb')"\s*:')


def _spelled_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _pairs(pairs)
    for key in out:
        camel = _SNAKE_OF.get(key)
        if camel is not None and camel in out:
            raise _Repeated(f"{camel}' and '{key}")
    return out


def repeated_key(raw: bytes, *, spellings: bool = False) -> str | None:
    """The first key some object of ``raw`` repeats, or None (also None for a body that is not JSON:
    its reader refuses it with its own 400). ``spellings``: Gemini, where ``fooBar`` and ``foo_bar``
    name one field."""
    return read_once(raw, spellings=spellings)[0]


def read_once(raw: bytes, *, spellings: bool = False) -> tuple[str | None, dict[str, Any] | None]:
    """(``repeated_key``, the body decoded when that took a whole decode and it is an object): the
    caller hands the object on (``JsonBody``), so what needs it later does not decode again. A body
    that extends one checked before (an agent's next turn) has only what it adds checked
    (``_Extensions``)."""
    if spellings and _SNAKE_FIELD.search(raw):
        return _slow(raw, _spelled_pairs), None
    if len(raw) >= _EXTENSIONS.min_bytes:
        if _EXTENSIONS.extends_checked(raw):
            return None, None
        found = _whole(raw)
        if found[0] is None and found[1] is not None:  # checked whole, and valid JSON: kept
            _EXTENSIONS.keep(raw)
        return found
    return _whole(raw)


def _whole(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    if b"\\u003" not in raw:
        try:
            decoded = _DECODE.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            if raw.count(b":") == _ENCODE.encode(decoded).count(b":"):
                return None, decoded if type(decoded) is dict else None
    return _slow(raw, _pairs), None


def _slow(raw: bytes, hook: Any) -> str | None:
    try:
        json.loads(raw, object_pairs_hook=hook)
    except _Repeated as found:
        return found.key
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return None


def repeated_message(key: str) -> str:
    """The 400's text (the key is the client's own, shown only when short and printable)."""
    if len(key) > 80 or not key.isprintable():
        key = "a key"
    if "' and '" in key:
        return f"the request body gives both '{key}' in one JSON object (two spellings of one field); send one"
    return f"the request body gives the key '{key}' twice in one JSON object; send each key once"


_PROBE = b'{"guardproxy-one-reading-probe":0}'
_CHUNK = 4096


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    at = 0
    while at + _CHUNK <= n and a[at:at + _CHUNK] == b[at:at + _CHUNK]:
        at += _CHUNK
    lo, hi = at, min(at + _CHUNK, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Extensions:
    """Bodies that passed the check, each with the offset in it where a list can take one more item
    (its anchor, once proven), so that the next turn of a conversation (the same bytes with items
    inserted at the anchor) is checked by its inserted items alone.

    Why that is exact. P passed: no object of P repeats a key. At an anchor ``a`` of P the parser is
    inside a list, right after an item (proven once per body by decoding P with a probe item inserted
    there: the decode succeeds and the probe comes out as an object of its own only when ``a`` is
    outside every string and in a list after an item; after an object's member, at the top level or
    after ``[`` the text is not JSON). A body N = P[:a] + X + P[a:], where ``[`` + X[1:] + ``]`` is one
    JSON list (so X is ``,`` and whole values), parses as P with X's values inserted as items of that
    list: N's objects are P's and X's, so N repeats a key exactly when X does; and N's anchor is
    ``a + len(X)``, after X's last item. Anything else (a client that rewrites earlier items, a body
    that extends nothing kept) is checked whole. Bytes are compared exactly (no digest)."""

    def __init__(self, budget_bytes: int = 32 * 1024 * 1024, per_group: int = 8, min_bytes: int = 8192) -> None:
        self.budget_bytes, self.per_group, self.min_bytes = budget_bytes, per_group, min_bytes
        self.used = 0
        self._groups: OrderedDict[bytes, list[list[Any]]] = OrderedDict()
        """First bytes -> [[body, anchor or None, tried], ...], most recent last."""

    def extends_checked(self, raw: bytes) -> bool:
        group = self._groups.get(raw[:256])
        if not group:
            return False
        self._groups.move_to_end(raw[:256])
        for entry in reversed(group):
            body, anchor, tried = entry
            if raw == body:
                return True
            if len(raw) <= len(body):
                continue
            if anchor is None:
                if tried:
                    continue
                entry[2] = True
                anchor = self._prove(body, _common_prefix(body, raw))
                if anchor is None:
                    continue
                entry[1] = anchor
            added = len(raw) - len(body)
            if not (raw.startswith(body[:anchor]) and raw.endswith(body[anchor:])):
                continue
            inserted = raw[anchor:anchor + added]
            if inserted[:1] != b"," or len(inserted) < 2:
                continue
            if not _items_pass(inserted):
                return False  # the inserted items are looked at whole (they may repeat a key)
            self._add(raw[:256], [raw, anchor + added, True])
            return True
        return False

    def keep(self, raw: bytes) -> None:
        if _PROBE[2:-4] in raw:
            return  # a body that names the probe's key is never anchored
        self._add(raw[:256], [raw, None, False])

    def _prove(self, body: bytes, at: int) -> int | None:
        try:
            probed = _ENCODE.encode(_DECODE.decode(body[:at] + b"," + _PROBE + body[at:]))
        except (msgspec.DecodeError, RecursionError):
            return None
        return at if probed.count(_PROBE) == 1 else None

    def _add(self, key: bytes, entry: list[Any]) -> None:
        group = self._groups.setdefault(key, [])
        self._groups.move_to_end(key)
        group.append(entry)
        self.used += len(entry[0])
        while len(group) > self.per_group:
            self.used -= len(group.pop(0)[0])
        while self.used > self.budget_bytes and self._groups:
            _, oldest = self._groups.popitem(last=False)
            self.used -= sum(len(e[0]) for e in oldest)


def _items_pass(inserted: bytes) -> bool:
    """``,value,value...`` that holds no repeated key (False also when it is not that shape)."""
    piece = b"[" + inserted[1:] + b"]"
    if b"\\u003" in piece:
        return False
    try:
        decoded = _DECODE.decode(piece)
    except (msgspec.DecodeError, RecursionError):
        return False
    return type(decoded) is list and piece.count(b":") == _ENCODE.encode(decoded).count(b":")


_EXTENSIONS = _Extensions()
