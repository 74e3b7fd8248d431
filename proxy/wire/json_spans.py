"""Rewrite chosen strings of a JSON body in place, every other byte kept as it was.

A redaction must not re-serialise the body: key order, spacing, number spellings, escapes and
whatever the proxy does not understand all reach the upstream as the client wrote them. So the
body is scanned once for the *spans* of the string literals at the wanted paths (the standard
library's C scanner reads each string and skips each other value whole), and only those literals
are replaced by the JSON encoding of their new text.

A wanted path that occurs twice (a duplicate key) is refused: the upstream's parser may read the
other copy than the one that was checked. Cost: only paid when something is rewritten; linear in
the body (values off the wanted paths are skipped by the C scanner, whose objects are dropped).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.scanner import make_scanner
from typing import Any

Path = tuple[str | int, ...]

_skip = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # (typeshed types it as its own class)
_WS = " \t\n\r"


class SpliceError(ValueError):
    """The body cannot be rewritten safely (duplicate key on a rewritten path, not UTF-8 JSON)."""


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WS:
        i += 1
    return i


class _Finder:
    __slots__ = ("prefixes", "spans", "text", "wanted")

    def __init__(self, text: str, wanted: set[Path]) -> None:
        self.text, self.wanted = text, wanted
        self.prefixes = {p[:n] for p in wanted for n in range(len(p))}
        self.spans: dict[Path, tuple[int, int]] = {}

    def value(self, i: int, path: Path) -> int:
        """Scan the value starting at ``i`` (no leading space); returns where it ends."""
        s = self.text
        if path in self.wanted:
            if s[i] != '"':
                raise SpliceError("a rewritten value is not a string")
            if path in self.spans:
                raise SpliceError("a rewritten string's key occurs twice in its object")
            _, end = scanstring(s, i + 1)
            self.spans[path] = (i, end)
            return int(end)
        if path not in self.prefixes or s[i] not in "{[":
            _, end = _skip(s, i)
            return int(end)
        if s[i] == "[":
            return self._array(i, path)
        return self._object(i, path)

    def _array(self, i: int, path: Path) -> int:
        s, n = self.text, 0
        i = _ws(s, i + 1)
        if s[i] == "]":
            return i + 1
        while True:
            i = _ws(s, self.value(i, (*path, n)))
            n += 1
            if s[i] == "]":
                return i + 1
            i = _ws(s, i + 1)  # ","

    def _object(self, i: int, path: Path) -> int:
        s = self.text
        i = _ws(s, i + 1)
        if s[i] == "}":
            return i + 1
        seen: set[str] = set()
        while True:
            key, i = scanstring(s, i + 1)
            if key in seen and (*path, key) in self.prefixes | self.wanted:
                raise SpliceError("a rewritten string's key occurs twice in its object")
            seen.add(key)
            i = _ws(s, _ws(s, i) + 1)  # ":"
            i = _ws(s, self.value(i, (*path, key)))
            if s[i] == "}":
                return i + 1
            i = _ws(s, i + 1)  # ","


def _literal(text: str) -> str:
    """The JSON literal of ``text``: characters as they are, except that a lone surrogate (which
    only an escape can carry) stays an escape."""
    literal = json.dumps(text, ensure_ascii=False)
    try:
        literal.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(text)
    return literal


def splice(body: bytes, replacements: Mapping[Path, str]) -> bytes:
    """``body`` with the string at each path replaced by its new text. Raises ``SpliceError``."""
    if not replacements:
        return body
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpliceError("the body is not UTF-8") from exc
    finder = _Finder(text, set(replacements))
    try:
        finder.value(_ws(text, 0), ())
    except (IndexError, ValueError, StopIteration) as exc:
        if isinstance(exc, SpliceError):
            raise
        raise SpliceError("the body could not be scanned") from exc
    if set(finder.spans) != set(replacements):
        raise SpliceError("a rewritten string was not found in the body")
    out: list[str] = []
    at = 0
    for path, (start, end) in sorted(finder.spans.items(), key=lambda kv: kv[1][0]):
        out += [text[at:start], _literal(replacements[path])]
        at = end
    out.append(text[at:])
    return "".join(out).encode("utf-8")


def value_at(data: Any, path: Path) -> Any:
    for key in path:
        data = data[key]
    return data
