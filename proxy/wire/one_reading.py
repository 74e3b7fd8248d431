"""One reading of a JSON document: one that repeats a key is refused, in a request body on guarded
routes (``read_once``) and in what the upstream sends as output (``proxy.wire.base.loads_output``).

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
Cost: about 2 us per KB of body (a 66 KB agent turn: ~0.15 ms; see docs/security.md). An agent's
next turn pays for what it adds only: a body that extends a recent body proven clean (the
conversation's earlier turn, ``proxy.wire.conversation_delta`` says why this is exact) is checked in
its added items (``repeated_in_items``), ahead of the early send.

Gemini's parser (proto JSON) reads every message field under two spellings, ``systemInstruction`` and
``system_instruction``: an object giving both is a repeat too. Gemini clients write camelCase, so the
pairs are looked at (with the standard library's parser) only when the snake_case name of such a
field occurs (``_GEMINI_FIELDS``; a tool's ``file_path`` argument is not one).

A parser that matches keys case-insensitively (Go's ``encoding/json``) reads ``"Messages"`` or
``"ſystem"`` as the field the proxy reads only as ``messages`` or ``system``: on the OpenAI and
Anthropic wires ``read_once(folds=...)`` refuses such a key too, from the object decoded here (for a
later turn, from its added items): ``proxy.wire.key_folds``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from proxy.wire.key_folds import FoldedKey, KeyFolds, folded_key, folded_message

_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()


class RepeatedKey(ValueError):
    """A JSON object gives ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__("a JSON object repeats a key")
        self.key = key


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` that refuses a repeated key (``RepeatedKey``)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return out


_pairs = unique_pairs

UNPROVEN: Any = object()
"""``count_proven``'s answer when the count proves nothing: the caller reads pair by pair."""


def count_proven(raw: bytes) -> Any:
    """``raw`` decoded when the colon count proves that no object of it lost a pair to a repeated key
    (see above: C speed, one decode and one encode); ``UNPROVEN`` when it repeats one, spells an
    escape the count cannot see past (``\\u003a``; any ``\\u003`` is taken as one, one search
    instead of two), or msgspec does not decode it."""
    if b"\\u003" in raw:
        return UNPROVEN
    try:
        decoded = _DECODE.decode(raw)
        kept = _ENCODE.encode(decoded).count(b":")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeEncodeError):
        return UNPROVEN
    return decoded if raw.count(b":") == kept else UNPROVEN


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


_ESCAPED_LETTER = re.compile(rb"\\u00[5-7][0-9a-fA-F]")
"""A ``\\u`` escape of ``_`` or a lower-case letter: a key may spell a snake_case name with it
(``system\\u005finstruction``), which Gemini unescapes and reads as ``systemInstruction``."""


def _spelled_by_escapes(raw: bytes) -> bool:
    """Whether a snake_case field name appears once escapes are undone (msgspec writes every key's
    ``_`` and letters plainly). Only for bodies that escape such a character: non-ASCII text
    (``\\u00e9``) costs nothing more; a body msgspec refuses is looked at pair by pair."""
    try:
        encoded = _ENCODE.encode(_DECODE.decode(raw))
    except (msgspec.DecodeError, RecursionError):
        return True
    return _SNAKE_FIELD.search(encoded) is not None


def _spelled_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _pairs(pairs)
    for key in out:
        camel = _SNAKE_OF.get(key)
        if camel is not None and camel in out:
            raise RepeatedKey(f"{camel}' and '{key}")
    return out


def repeated_key(raw: bytes, *, spellings: bool = False) -> str | None:
    """The first key some object of ``raw`` repeats, or None (also None for a body that is not JSON:
    its reader refuses it with its own 400). ``spellings``: Gemini, where ``fooBar`` and ``foo_bar``
    name one field."""
    return read_once(raw, spellings=spellings)[0]


def read_once(raw: bytes, *, spellings: bool = False, added: bytes | None = None,
              folds: KeyFolds | None = None) -> tuple[str | None, dict[str, Any] | None]:
    """(``repeated_key``, the body decoded when that took a whole decode and it is an object): the
    caller hands the object on (``JsonBody``), so what needs it later does not decode again.
    ``added``: what ``raw`` adds to a recent body proven clean that it extends
    (``WireFormat.added_to_clean``): then only that is checked (``repeated_in_items``), when it is a
    sequence of values. ``folds``: the API's levels the proxy reads (``proxy.wire.key_folds``); a key
    there that folds onto a field name without being it is answered as a ``FoldedKey``, from the
    object the repeat check decoded (for ``added``, its items only)."""
    if added is not None:
        proven, key, items = _in_items(added, spellings)
        if proven:
            if key is None and folds is not None:
                key = folded_key(items, folds.items)
            return key, None
    if spellings and (_SNAKE_FIELD.search(raw) or _ESCAPED_LETTER.search(raw) and _spelled_by_escapes(raw)):
        key, loaded = _slow(raw, _spelled_pairs)
        return key or (folds.folded(loaded) if folds is not None else None), None
    decoded = count_proven(raw)
    if decoded is not UNPROVEN:
        key = None if folds is None else folds.folded(decoded)
        return key, decoded if key is None and type(decoded) is dict else None
    key, loaded = _slow(raw, _pairs)
    return key or (folds.folded(loaded) if folds is not None else None), None


def repeated_in_items(added: bytes, *, spellings: bool = False) -> tuple[bool, str | None]:
    """The check of a body that extends a kept clean one by ``added`` (``Turns.added_to_clean``):
    (whether ``added`` is a sequence of ``,value``, the first key an object in those values repeats).
    The body repeats a key exactly when they do (``proxy.wire.conversation_delta``: the objects around
    them are a clean body's, their keys unchanged). Checked as ``[null`` + added + ``]``, one JSON
    value only when ``added`` is such a sequence, by the same colon count as a whole body."""
    return _in_items(added, spellings)[:2]


def _in_items(added: bytes, spellings: bool) -> tuple[bool, str | None, Any]:
    """``repeated_in_items``, and the values read (the list ``[None, *values]``; None unless proven)."""
    text = b"[null" + added + b"]"
    if not added.isascii():
        try:
            added.decode("utf-8")
        except UnicodeDecodeError:
            return False, None, None
    try:
        decoded = _DECODE.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return False, None, None
    if type(decoded) is not list:
        return False, None, None
    if spellings and (_SNAKE_FIELD.search(added) or _ESCAPED_LETTER.search(added)
                      and _SNAKE_FIELD.search(_ENCODE.encode(decoded))):
        return _proven(text, _spelled_pairs)
    if b"\\u003" not in added and text.count(b":") == _ENCODE.encode(decoded).count(b":"):
        return True, None, decoded
    return _proven(text, _pairs)


def _proven(text: bytes, hook: Any) -> tuple[bool, str | None, Any]:
    """The standard library's reading of ``text``: (whether it read it, the repeated key, the value)."""
    try:
        value = json.loads(text, object_pairs_hook=hook)
    except RepeatedKey as found:
        return True, found.key, None
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False, None, None  # not proven here: the whole body is checked
    return True, None, value


TOO_DEEP = "\x00too deep"
"""``read_once``'s answer for a body nested past what the parsers read: no reading of it can be
checked, and an upstream whose parser has no depth limit could still read it, so it is refused like a
repeat (before anything goes upstream) rather than passed as clean."""


def _slow(raw: bytes, hook: Any) -> tuple[str | None, Any]:
    """(The key ``raw`` repeats, or None; its value when it was read whole and repeats none)."""
    try:
        return None, json.loads(raw, object_pairs_hook=hook)
    except RepeatedKey as found:
        return found.key, None
    except RecursionError:
        return TOO_DEEP, None
    except (ValueError, UnicodeDecodeError):
        return None, None  # not JSON: the reader refuses it with its own 400, before anything is sent


def repeated_message(key: str) -> str:
    """The 400's text (the key is the client's own, shown only when short and printable)."""
    if isinstance(key, FoldedKey):
        return folded_message(key)
    if key == TOO_DEEP:
        return "the request body nests JSON too deeply to be read one way; flatten it"
    if len(key) > 80 or not key.isprintable():
        key = "a key"
    if "' and '" in key:
        return f"the request body gives both '{key}' in one JSON object (two spellings of one field); send one"
    return f"the request body gives the key '{key}' twice in one JSON object; send each key once"
