"""Bent JSON, and what several parsers read of it (the request-side differential fuzzer,
``tests/edge/test_request_differential_fuzz.py``).

A body is built as a tree whose objects are lists of pairs (``Obj``), so one key may be given twice,
in another case, or spelled with ``\\u`` escapes, and is written with chosen whitespace and escapes
(``write``). The bytes the proxy forwards are then read the way real parsers disagree on
(``READINGS``): the standard library's (the last of a repeated key wins), a first-wins one, Go's
``encoding/json`` (keys matched case-insensitively, ASCII and Unicode simple folds, last wins; no
BOM), and protobuf's JSON mapping behind Gemini (a field under its camelCase or its snake_case name,
last or first wins). ``model_reads`` takes one reading and lists the texts the model reads from it,
per API, written from the APIs' documentation rather than from the proxy's readers: every role but
the assistant's own turns, every ``text`` of a content list alone and each run of adjacent ones
joined, tool results however nested (a structured one's keys too).
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

BOM = b"\xef\xbb\xbf"


class Obj:
    """A JSON object as its pairs, in order (a key may repeat)."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[list[Any]]) -> None:
        self.pairs = pairs


@dataclass(frozen=True, slots=True)
class Num:
    """A number written as given (``1e0``, ``1.0``, ``10E-1``)."""

    text: str


def tree(value: Any) -> Any:
    """A plain JSON value as a tree of ``Obj``."""
    if isinstance(value, dict):
        return Obj([[k, tree(v)] for k, v in value.items()])
    if isinstance(value, list):
        return [tree(v) for v in value]
    return value


def objects(node: Any) -> Iterator[Obj]:
    """Every object of a tree, outermost first."""
    if isinstance(node, Obj):
        yield node
        for _, v in node.pairs:
            yield from objects(v)
    elif isinstance(node, list):
        for v in node:
            yield from objects(v)


def scrubbed(node: Any, needles: list[str], instead: str = "nothing to see") -> Any:
    """A copy of ``node`` with every needle replaced, in keys and strings."""
    if isinstance(node, str):
        for n in needles:
            node = node.replace(n, instead)
        return node
    if isinstance(node, Obj):
        return Obj([[scrubbed(k, needles, instead), scrubbed(v, needles, instead)] for k, v in node.pairs])
    if isinstance(node, list):
        return [scrubbed(v, needles, instead) for v in node]
    return copy.copy(node)


Trail = list[tuple[Any, int]]
"""The containers from the root to a string (or key) holding a needle: each (Obj or list, index)."""


def trail(node: Any, needles: list[str]) -> Trail | None:
    if isinstance(node, str):
        return [] if any(n in node for n in needles) else None
    if isinstance(node, Obj):
        for i, (k, v) in enumerate(node.pairs):
            if any(n in k for n in needles):
                return [(node, i)]
            sub = trail(v, needles)
            if sub is not None:
                return [(node, i), *sub]
    elif isinstance(node, list):
        for i, v in enumerate(node):
            sub = trail(v, needles)
            if sub is not None:
                return [(node, i), *sub]
    return None


# -- writing -------------------------------------------------------------------------------------
@dataclass(slots=True)
class Style:
    rng: random.Random
    space: float = 0.0
    """Chance of whitespace at each token boundary."""
    escape_keys: float = 0.0
    """Chance that a key's character is written as a ``\\u`` escape."""
    escape_text: float = 0.0
    """The same for a string value's characters (non-ASCII ones too: ``ensure_ascii`` style)."""
    bom: bool = False
    encoding: str = "utf-8"
    """The body's bytes: UTF-8, or UTF-16/32 (RFC 8259 says UTF-8; Python's ``json.loads`` of bytes,
    behind many Python servers, detects the others)."""


_SPACES = (" ", "\n", "\t", "\r\n", "  ")


def _ws(style: Style) -> str:
    return style.rng.choice(_SPACES) if style.space and style.rng.random() < style.space else ""


def _escape(o: int, rng: random.Random) -> str:
    if o > 0xFFFF:
        o -= 0x10000
        return _escape(0xD800 + (o >> 10), rng) + _escape(0xDC00 + (o & 0x3FF), rng)
    h = f"{o:04x}"
    return "\\u" + (h.upper() if rng.random() < 0.5 else h)


def _string(s: str, chance: float, rng: random.Random) -> str:
    out = ['"']
    for c in s:
        o = ord(c)
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append(f"\\u{o:04x}")
        elif chance and rng.random() < chance:
            out.append(_escape(o, rng))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _write(node: Any, style: Style, out: list[str]) -> None:
    if isinstance(node, Obj):
        out.append("{")
        for n, (k, v) in enumerate(node.pairs):
            out += ["," if n else "", _ws(style), _string(k, style.escape_keys, style.rng), _ws(style), ":",
                    _ws(style)]
            _write(v, style, out)
        out += [_ws(style), "}"]
    elif isinstance(node, list):
        out.append("[")
        for n, v in enumerate(node):
            out += ["," if n else "", _ws(style)]
            _write(v, style, out)
        out += [_ws(style), "]"]
    elif isinstance(node, str):
        out.append(_string(node, style.escape_text, style.rng))
    elif isinstance(node, Num):
        out.append(node.text)
    else:
        out.append(json.dumps(node))


def write(node: Any, style: Style) -> bytes:
    out: list[str] = [_ws(style)]
    _write(node, style, out)
    out.append(_ws(style))
    text = "".join(out)
    if style.encoding != "utf-8":
        return text.encode(style.encoding, "surrogatepass")
    return (BOM if style.bom else b"") + text.encode("utf-8", "surrogatepass")


# -- readings -------------------------------------------------------------------------------------
class _Pairs(list[tuple[str, Any]]):
    """An object as the standard library's parser saw it: every pair, in order."""


def _parse(raw: bytes) -> Any:
    return json.loads(raw, object_pairs_hook=_Pairs)  # (bytes: a UTF-8 BOM is accepted, as json.loads does)


def _resolve(node: Any, key: Callable[[str], str], first: bool, null_keeps: bool = False) -> Any:
    """``null_keeps``: a later ``null`` leaves the value a key already has (Go: null into a string or
    struct field "has no effect")."""
    if isinstance(node, _Pairs):
        out: dict[str, Any] = {}
        for k, v in node:
            k = key(k)
            if (first or null_keeps and v is None) and k in out:
                continue
            out[k] = _resolve(v, key, first, null_keeps)
        return out
    if isinstance(node, list):
        return [_resolve(v, key, first, null_keeps) for v in node]
    return node


def _go_char(c: str) -> str:
    """Go's ``foldName`` of one character: ASCII letters upper-cased, any other the smallest of its
    simple case-fold orbit (``ſ`` -> ``S``, the Kelvin sign -> ``K``). The orbit is taken as the
    character with its single-character upper and lower cases, which is wider than Go's for a few
    (``ı``): wider only makes this reading read more."""
    forms = {c, c.upper(), c.lower(), c.upper().lower(), c.lower().upper()}
    return min(f for f in forms if len(f) == 1)


def _go_key(k: str) -> str:
    folded = "".join(_go_char(c) for c in k)
    # The APIs' field names are lower-case ASCII: a key folding onto one reads as that name.
    return folded.lower() if folded.isascii() else k


_SNAKE = re.compile(r"_([a-z0-9])")


def _proto_key(k: str) -> str:
    """Protobuf's JSON parser takes a field under its proto name (snake_case) or its JSON name."""
    return _SNAKE.sub(lambda m: m.group(1).upper(), k)


Reading = Callable[[bytes], Any]


def _reading(key: Callable[[str], str], first: bool, go: bool = False) -> Reading:
    def read(raw: bytes) -> Any:
        if go and (raw.startswith(BOM) or b"\x00" in raw):
            return None  # Go's decoder refuses a BOM, and UTF-16/32: the upstream answers its own 400
        try:
            return _resolve(_parse(raw), key, first, null_keeps=go)
        except ValueError:
            return None  # (this parser refuses the body: nothing of it reaches the model)
    return read


def _same(k: str) -> str:
    return k


READINGS: dict[str, Reading] = {
    "json (last wins)": _reading(_same, False),
    "first wins": _reading(_same, True),
    "Go encoding/json": _reading(_go_key, False, go=True),
    "proto JSON (last wins)": _reading(_proto_key, False),
    "proto JSON (first wins)": _reading(_proto_key, True),
}


def readings_for(api: str) -> dict[str, Reading]:
    """The parsers an upstream of ``api`` may read a body with: protobuf's JSON mapping for Gemini,
    Go's case-insensitive matching for the OpenAI-compatible and Anthropic-compatible servers."""
    wanted = ("json (last wins)", "first wins",
              *(("proto JSON (last wins)", "proto JSON (first wins)") if api == "gemini" else ("Go encoding/json",)))
    return {name: READINGS[name] for name in wanted}


# -- what the model reads -------------------------------------------------------------------------
class _Texts:
    def __init__(self) -> None:
        self.out: list[str] = []

    def add(self, value: Any) -> None:
        if isinstance(value, str):
            self.out.append(value)

    def run(self, items: list[Any], inner: Callable[[Any], None] | None = None) -> None:
        """A content list: each text, and each run of adjacent texts joined (the model reads them
        as one text); ``inner`` reads what else an item holds (a tool result's blocks)."""
        run: list[str] = []
        for item in items:
            text = item if isinstance(item, str) else item.get("text") if isinstance(item, dict) else None
            if isinstance(text, str):
                self.out.append(text)
                run.append(text)
                continue
            self._joined(run)
            run = []
            if inner is not None:
                inner(item)
        self._joined(run)

    def _joined(self, run: list[str]) -> None:
        if len(run) > 1:
            self.out += ["".join(run), "\n".join(run)]

    def content(self, value: Any, inner: Callable[[Any], None] | None = None) -> None:
        if isinstance(value, str):
            self.out.append(value)
        elif isinstance(value, list):
            self.run(value, inner)

    def walk(self, value: Any, depth: int = 0) -> None:
        """Every key and string of a structured tool result."""
        if isinstance(value, str):
            self.out.append(value)
        elif depth < 200 and isinstance(value, dict):
            for k, v in value.items():
                self.out.append(k)
                self.walk(v, depth + 1)
        elif depth < 200 and isinstance(value, list):
            for v in value:
                self.walk(v, depth + 1)


def _chat(data: dict[str, Any], t: _Texts) -> None:
    for m in data.get("messages") or []:
        if isinstance(m, dict) and m.get("role") != "assistant":
            t.content(m.get("content"))
            t.add(m.get("name"))  # (OpenAI puts a participant's name into the prompt)


def _responses_items(items: Any, t: _Texts) -> None:
    if isinstance(items, str):
        t.add(items)
        return
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") != "assistant":
            t.content(item.get("content"))
        elif isinstance(kind, str) and (kind.endswith("_output") or kind == "mcp_call"):
            output = item.get("output")
            if isinstance(output, list):
                t.run(output, t.walk)
            else:
                t.walk(output)


def _responses(data: dict[str, Any], t: _Texts) -> None:
    _responses_items(data.get("instructions"), t)
    _responses_items(data.get("input"), t)
    _responses_items(data.get("items"), t)  # a conversation being created
    prompt = data.get("prompt")
    variables = prompt.get("variables") if isinstance(prompt, dict) else None
    for value in variables.values() if isinstance(variables, dict) else ():
        t.content([value])  # a string, or an input_text (filled into the stored prompt)


def _anthropic(data: dict[str, Any], t: _Texts) -> None:
    def inner(block: Any) -> None:
        if isinstance(block, dict):
            t.content(block.get("content"), inner)  # a tool_result's (or search result's) blocks

    t.content(data.get("system"), inner)
    for m in data.get("messages") or []:
        if isinstance(m, dict) and m.get("role") != "assistant":
            t.content(m.get("content"), inner)


def _listed(value: Any) -> Any:
    """Protobuf's JSON parser behind Gemini takes one object where a list is due as a list of it
    (Google's own REST examples send ``"parts": {"text": ...}``)."""
    return [value] if isinstance(value, dict) else value


def _gemini(data: dict[str, Any], t: _Texts) -> None:
    def inner(part: Any) -> None:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            t.walk(part["functionResponse"].get("response"))

    system = data.get("systemInstruction")
    if isinstance(system, dict):
        t.content(_listed(system.get("parts")), inner)
    else:
        t.add(system)
    for c in _listed(data.get("contents")) or []:
        if isinstance(c, dict) and c.get("role") != "model":
            t.content(_listed(c.get("parts")), inner)


_READERS: dict[str, Callable[[dict[str, Any], _Texts], None]] = {
    "chat": _chat, "responses": _responses, "anthropic": _anthropic, "gemini": _gemini}


def model_reads(api: str, data: Any) -> list[str]:
    """The texts the model reads of a request of ``api`` read as ``data`` (none unless an object)."""
    t = _Texts()
    if isinstance(data, dict):
        _READERS[api](data, t)
    return t.out
