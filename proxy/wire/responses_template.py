"""``DeltaTemplate``: a Responses stream's ``response.output_text.delta`` events read from their bytes
alone, once one has been decoded in full (used by ``openai_responses``).

A Responses answer is hundreds of frames like ``event: response.output_text.delta\\ndata: {"type":
"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"<text>",
"logprobs":[],"sequence_number":7}``: unlike a chat chunk, more than the text changes from one to the
next (the sequence number always, the item and indexes at times, and the ``obfuscation`` padding
some upstreams add), so ``proxy.wire.template``'s one-string template never matches. This one keeps
the learnt frame's bytes with a slot at each of those values, and reads a frame whose bytes are the
same outside the slots:

- Each slot is exactly one JSON token of the type the learnt frame had there: a string (quote to
  quote, its escapes the standard ones) or a small integer without sign, fraction or leading zero.
  With the bytes between the slots identical, the frame is the same JSON document with other values
  in the same places: the same keys in the same order (none repeated: the learnt frame passed the
  repeated-key test), the same SSE fields and the same single blank line at its end.
- A string slot's bytes must be valid UTF-8 (the full decode would replace invalid bytes) and free of
  surrogate escapes (``\\ud800``: the two JSON readers the full decode may use read a lone one
  differently); its other escapes read alike in every JSON reader, so it is read by one.
- ``logprobs`` stands only as the empty list (written between the slots); other values miss.
- The slots are found by reading the learnt frame's object pair by pair, and checked by a probe: a
  frame with other values in every slot must come out of the codec's stateless read (SSE fields,
  JSON, shape, labels) as the event the template says, with nothing else to show.

``match`` gives the event as the full decode's JSON reading would (a fresh dict, keys in the same
order); the codec then runs on it exactly what it runs after a full read (``OutputTexts.delta``,
``DecodedFrames.keep``), so the codec's state moves the same way. A frame that misses takes the
full decode. Written here rather than with a library: no JSON reader returns a document's token
positions, which is what the slots are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

TEXT_DELTA = "response.output_text.delta"
MAX_LEARNS = 8
"""Templates tried per stream before it stops: each costs a probe, which a stream whose frames never
fit one would otherwise pay on every delta."""

_INT_KEYS = frozenset({"sequence_number", "output_index", "content_index"})
_STR_KEYS = frozenset({"item_id", "delta", "obfuscation"})
_FIXED_KEYS = frozenset({"type", "logprobs"})

_WS = rb"[ \t]*"
_STRING = rb'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
"""One JSON string token, escapes included: it ends at its first unescaped quote."""
_INT_SLOT = rb"(0|[1-9][0-9]{0,15})"
_STR_SLOT = rb'((?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)'
"""A string's bytes between its quotes (which stand in the bytes around it)."""
_PAIR = re.compile(_WS + rb'"([a-z_]+)"' + _WS + rb":" + _WS
                   + rb"(" + _STRING + rb"|-?[0-9][0-9.eE+-]*|\[" + _WS + rb"\]|true|false|null)" + _WS + rb"([,}])")
"""One key and value of a flat object, then what follows the value."""
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_PROBE_INTS = (7, 12, 3)
_PROBE_STRS = ("p\u00e9\n\"q\\", "g", "o")

_string = msgspec.json.Decoder(str).decode

Read = Callable[[bytes], dict[str, Any] | None]
"""The codec's stateless read of a frame: its event when it is one plain text delta, else None."""


class DeltaTemplate:
    """The learnt frame's bytes around its slots, and the event it read as."""

    __slots__ = ("_base", "_pattern", "_slots", "fixed")

    def __init__(self, fixed: tuple[bytes, ...], slots: tuple[tuple[str, bool], ...], base: dict[str, Any]) -> None:
        self.fixed = fixed
        """The bytes before, between and after the slots (one more than there are slots)."""
        self._slots = slots
        """(key, whether an integer) per slot, in byte order."""
        self._base = base
        pattern = re.escape(fixed[0])
        for (_, whole), after in zip(slots, fixed[1:]):
            pattern += (_INT_SLOT if whole else _STR_SLOT) + re.escape(after)
        self._pattern = re.compile(pattern)

    def match(self, raw: bytes) -> dict[str, Any] | None:
        """``raw``'s event as the full decode reads it, when it is this template with other values in
        its slots; else None."""
        m = self._pattern.fullmatch(raw)
        if m is None:
            return None
        ev = self._base.copy()
        for (key, whole), value in zip(self._slots, m.groups()):
            if whole:
                ev[key] = int(value)
                continue
            try:
                text = value.decode()
            except UnicodeDecodeError:
                return None
            if "\\" in text:
                if _SURROGATE.search(text) is not None:
                    return None
                text = _string(f'"{text}"')
            ev[key] = text
        if "logprobs" in ev:
            ev["logprobs"] = []  # each event its own list, as each full read makes
        return ev

    def probe(self) -> tuple[bytes, dict[str, Any]]:
        """A frame of this template with other values in every slot, and the event it should read as."""
        ints, strs = iter(_PROBE_INTS), iter(_PROBE_STRS)
        raw, ev = self.fixed[0], self._base.copy()
        for (key, whole), after in zip(self._slots, self.fixed[1:]):
            if whole:
                ev[key] = number = next(ints)
                raw += str(number).encode() + after
            else:
                ev[key] = text = next(strs)
                raw += _json_string(text) + after
        return raw, ev


def _json_string(text: str) -> bytes:
    """``text``'s JSON string's bytes between its quotes, escaping what it must."""
    return msgspec.json.encode(text)[1:-1]


def learn(raw: bytes, ev: dict[str, Any], read: Read) -> DeltaTemplate | None:
    """The template of ``raw``, a frame the full decode read as the plain text delta ``ev``, or None
    when its shape is not one a template holds or the probe reads otherwise."""
    if b"\r" in raw or raw.find(b"\n\n") != len(raw) - 2 or not raw.endswith(b"}\n\n"):
        return None
    start = raw.find(b"data: {")
    if start < 0 or b"\n" in raw[start:-2]:
        return None
    fixed: list[bytes] = []
    slots: list[tuple[str, bool]] = []
    keys: list[str] = []
    pos, done = start + len(b"data: {"), 0
    while True:
        m = _PAIR.match(raw, pos)
        if m is None:
            return None
        key = m.group(1).decode()
        value = ev.get(key)
        keys.append(key)
        whole = key in _INT_KEYS and type(value) is int and value >= 0
        if whole or key in _STR_KEYS and type(value) is str:
            lead = 0 if whole else 1  # a string's slot is inside its quotes
            fixed.append(raw[done:m.start(2) + lead])
            slots.append((key, whole))
            done = m.end(2) - lead
        elif not (key == "type" and value == TEXT_DELTA or key == "logprobs" and value == []):
            return None
        pos = m.end()
        if m.group(3) == b"}":
            break
    if raw[pos:] != b"\n\n" or keys != list(ev) or "delta" not in keys:
        return None
    fixed.append(raw[done:])
    template = DeltaTemplate(tuple(fixed), tuple(slots), dict(ev))
    probe, expected = template.probe()
    return template if template.match(probe) == expected and read(probe) == expected else None
