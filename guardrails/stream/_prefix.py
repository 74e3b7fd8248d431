"""Prefix closures of regular expressions: where a match could still begin at the end of a text.

``prefix_closure(pattern)`` writes a regex that matches every prefix of every text ``pattern``
matches (with its lookarounds and anchors dropped, so a superset: safe for holding back).
Searched as ``(?:closure)\\Z`` from a start offset, it finds the leftmost offset whose rest of the
text could still grow into a match: the *horizon* of a stream check (``_horizon.py``).

Why our own and not the ``regex`` package's ``partial=True``: measured on the project README's
text, a partial search of the secrets alternation over the last six characters cost 7.6 µs and
the PII alternation 22 µs per delta (the ``regex`` engine's setup per call), and it returns a full
match anywhere before the leftmost partial one. The closure is compiled once, with ``re`` for our
own patterns (a few hundred ns per delta) or with RE2 for operators' patterns, so a hostile
pattern cannot make the horizon search backtrack.

The closure is prefix-closed (a prefix of a viable tail is viable), so a horizon never moves
back: the search may start at the previous horizon. Cost: O(characters from the start offset to
the end) per search, times the closure's width for ``re``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from re import _constants as _c  # type: ignore[attr-defined]
from re import _parser as _p  # type: ignore[attr-defined]
from typing import Any

_CATEGORIES = {
    _c.CATEGORY_DIGIT: r"\d", _c.CATEGORY_NOT_DIGIT: r"\D", _c.CATEGORY_SPACE: r"\s",
    _c.CATEGORY_NOT_SPACE: r"\S", _c.CATEGORY_WORD: r"\w", _c.CATEGORY_NOT_WORD: r"\W",
}
# RE2's \d \w \s are ASCII; Python's (str patterns) are Unicode: spell Python's meaning for RE2.
_SPACE_RE2 = r"\t-\r\x1c-\x20\x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_CATEGORIES_RE2 = {_c.CATEGORY_DIGIT: r"\p{Nd}", _c.CATEGORY_WORD: r"\p{L}\p{N}_", _c.CATEGORY_SPACE: _SPACE_RE2}
_NEGATED_RE2 = {_c.CATEGORY_NOT_DIGIT: _c.CATEGORY_DIGIT, _c.CATEGORY_NOT_WORD: _c.CATEGORY_WORD,
                _c.CATEGORY_NOT_SPACE: _c.CATEGORY_SPACE}
_AT_RE2 = {_c.AT_BEGINNING: "^", _c.AT_BEGINNING_STRING: r"\A", _c.AT_END: "$", _c.AT_END_STRING: r"\z",
           _c.AT_BOUNDARY: r"\b", _c.AT_NON_BOUNDARY: r"\B"}
_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
_ZERO_WIDTH = {_c.AT, _c.ASSERT, _c.ASSERT_NOT}
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_ONE_CHAR = {_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN}


def _char(code: int, *, re2: bool) -> str:
    """One character, escaped so both ``re`` and RE2 read it literally, in or out of a class."""
    ch = chr(code)
    if ch.isascii() and ch.isalnum():
        return ch
    if ch.isascii() and ch.isprintable() and ch != " ":
        return "\\" + ch
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\x{{{code:x}}}" if re2 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


class _Writer:
    def __init__(self, groups: dict[int, Any], *, re2: bool, strict: bool = False) -> None:
        self._groups = groups
        self._re2 = re2
        self._strict = strict
        """Write the pattern itself for RE2: keep anchors, refuse what RE2 cannot run."""

    # -- the texts the pattern matches ----------------------------------------------------------
    def full(self, seq: Sequence[tuple[Any, Any]]) -> str:
        return "".join(self._full_item(op, av) for op, av in seq)

    def _full_item(self, op: Any, av: Any) -> str:
        if op in _ONE_CHAR:
            return self._one_char(op, av)
        if self._strict:
            self._refuse(op, av)
            if op is _c.AT:
                return _AT_RE2[av]
        if op in _ZERO_WIDTH:
            return ""
        if op is _c.BRANCH:
            return "(?:" + "|".join(self.full(b) for b in av[1]) + ")"
        if op is _c.SUBPATTERN:
            return self._flagged(av[1], av[2], self.full(av[3]))
        if op in _REPEATS:
            low, high, body = av
            top = "" if high == _c.MAXREPEAT else str(high)
            return f"(?:{self.full(body)}){{{low},{top}}}"
        if op is _c.GROUPREF:
            return f"(?:{self.full(self._groups[av])})"
        if op is _c.GROUPREF_EXISTS:
            return "(?:" + "|".join(self.full(b) for b in av[1:] if b is not None) + "|)"
        if op is getattr(_c, "ATOMIC_GROUP", None):
            return f"(?:{self.full(av)})"
        raise ValueError(f"unsupported regex construct: {op}")

    @staticmethod
    def _refuse(op: Any, av: Any) -> None:
        names = {_c.ASSERT: "a lookaround", _c.ASSERT_NOT: "a negative lookaround", _c.GROUPREF: "a backreference",
                 _c.GROUPREF_EXISTS: "a conditional group", getattr(_c, "ATOMIC_GROUP", None): "an atomic group",
                 getattr(_c, "POSSESSIVE_REPEAT", None): "a possessive quantifier"}
        if op in names:
            raise ValueError(f"{names[op]} cannot run in linear time")
        if op is _c.AT and av not in _AT_RE2:
            raise ValueError(f"the anchor {av} has no linear-time equivalent")

    def _one_char(self, op: Any, av: Any) -> str:
        if op is _c.LITERAL:
            return _char(av, re2=self._re2)
        if op is _c.NOT_LITERAL:
            return f"[^{_char(av, re2=self._re2)}]"
        if op is _c.ANY:
            return "."
        items, negate = [], ""
        for kind, value in av:
            if kind is _c.NEGATE:
                negate = "^"
            elif kind is _c.LITERAL:
                items.append(_char(value, re2=self._re2))
            elif kind is _c.RANGE:
                items.append(f"{_char(value[0], re2=self._re2)}-{_char(value[1], re2=self._re2)}")
            elif kind is _c.CATEGORY and self._re2:
                if value in _NEGATED_RE2:
                    if len(av) != 1 or negate:
                        raise ValueError("\\D, \\W or \\S inside a character class has no RE2 spelling")
                    return f"[^{_CATEGORIES_RE2[_NEGATED_RE2[value]]}]"
                items.append(_CATEGORIES_RE2[value])
            elif kind is _c.CATEGORY:
                items.append(_CATEGORIES[value])
            else:
                raise ValueError(f"unsupported character class item: {kind}")
        return f"[{negate}{''.join(items)}]"

    @staticmethod
    def _flagged(add: int, remove: int, body: str) -> str:
        on = "".join(letter for flag, letter in _FLAG_LETTERS if add & flag)
        off = "".join(letter for flag, letter in _FLAG_LETTERS if remove & flag)
        if not on and not off:
            return f"(?:{body})"
        return f"(?{on}{'-' + off if off else ''}:{body})"

    # -- every prefix of those texts --------------------------------------------------------------
    def prefix(self, seq: Sequence[tuple[Any, Any]]) -> str:
        """``P(x rest) = P(x) | x P(rest)``, written from the end so it nests instead of repeating."""
        out = ""
        for op, av in reversed([item for item in seq if item[0] not in _ZERO_WIDTH]):
            if op in _ONE_CHAR:
                out = f"(?:{self._one_char(op, av)}{out})?"
            elif op in _REPEATS and len(av[2]) == 1 and av[2][0][0] in _ONE_CHAR:
                # c{m,M} rest -> c{0,M} P(rest): accepts c^k rest for k < m too (a superset, so
                # still safe) but leaves the engine one way to read each text: no backtracking.
                top = "" if av[1] == _c.MAXREPEAT else str(av[1])
                out = f"{self._one_char(*av[2][0])}{{0,{top}}}{out}" if av[1] else out
            else:
                out = f"(?:{self._prefix_item(op, av)}|{self._full_item(op, av)}{out})"
        return out

    def _prefix_item(self, op: Any, av: Any) -> str:
        if op is _c.BRANCH:
            return "(?:" + "|".join(self.prefix(b) for b in av[1]) + ")"
        if op is _c.SUBPATTERN:
            return self._flagged(av[1], av[2], self.prefix(av[3]))
        if op in _REPEATS:
            _, high, body = av
            if high == 0:
                return ""
            top_all = "" if high == _c.MAXREPEAT else str(high)
            if len(body) == 1 and body[0][0] in _ONE_CHAR:
                return f"{self._one_char(*body[0])}{{0,{top_all}}}"
            top = "" if high == _c.MAXREPEAT else str(high - 1)
            return f"(?:{self.full(body)}){{0,{top}}}{self.prefix(body)}"
        if op is _c.GROUPREF:
            return self.prefix(self._groups[av])
        if op is _c.GROUPREF_EXISTS:
            return "(?:" + "|".join(self.prefix(b) for b in av[1:] if b is not None) + ")"
        if op is getattr(_c, "ATOMIC_GROUP", None):
            return self.prefix(av)
        raise ValueError(f"unsupported regex construct: {op}")


    # -- the characters a match can start with ------------------------------------------------------
    def first(self, seq: Sequence[tuple[Any, Any]]) -> tuple[list[str], bool] | None:
        """The character classes a non-empty match of ``seq`` starts with, and whether ``seq`` can
        match nothing; None when any character may start it (``.``, a negated class)."""
        out: list[str] = []
        for op, av in seq:
            if op in _ZERO_WIDTH:
                continue
            got = self._first_item(op, av)
            if got is None:
                return None
            out += got[0]
            if not got[1]:
                return out, False
        return out, True

    def _first_item(self, op: Any, av: Any) -> tuple[list[str], bool] | None:
        if op in (_c.LITERAL, _c.IN):
            char = self._one_char(op, av)
            return None if char.startswith("[^") else ([char], False)
        if op in _ONE_CHAR:
            return None
        if op is _c.SUBPATTERN:
            got = self.first(av[3])
            if got is None or not av[1] & re.IGNORECASE:
                return got
            return [f"(?i:{c})" for c in got[0]], got[1]
        if op in _REPEATS:
            got = self.first(av[2])
            return None if got is None else (got[0], got[1] or av[0] == 0)
        if op is _c.BRANCH:
            classes, nullable = [], False
            for branch in av[1]:
                got = self.first(branch)
                if got is None:
                    return None
                classes += got[0]
                nullable = nullable or got[1]
            return classes, nullable
        return None


def first_chars(pattern: str, flags: int = 0) -> str | None:
    """A regex for one character that every non-empty match of ``pattern`` starts with, or None
    when it cannot be told (any character may start it)."""
    parsed = _p.parse(pattern, flags)
    got = _Writer(_groups_of(parsed, {}), re2=False).first(list(parsed))
    if got is None or not got[0]:
        return None
    plain = "".join(c[1:-1] if c.startswith("[") else c for c in got[0] if not c.startswith("(?i:"))
    folded = [c for c in got[0] if c.startswith("(?i:")]
    parts = ([f"[{plain}]"] if plain else []) + folded
    body = "|".join(parts)
    return f"(?i:{body})" if parsed.state.flags & re.IGNORECASE else f"(?:{body})"


def _groups_of(seq: Any, found: dict[int, Any]) -> dict[int, Any]:
    for op, av in seq:
        if op is _c.SUBPATTERN:
            if av[0] is not None:
                found[av[0]] = av[3]
            _groups_of(av[3], found)
        elif op is _c.BRANCH:
            for branch in av[1]:
                _groups_of(branch, found)
        elif op in _REPEATS:
            _groups_of(av[2], found)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            _groups_of(av[1], found)
    return found


def prefix_closure(pattern: str, flags: int = 0, *, re2: bool = False) -> str:
    """A regex (for ``re``, or RE2 when ``re2``) matching every prefix of what ``pattern`` matches.

    Lookarounds, ``^``/``$``/``\\b`` are dropped and a backreference stands for anything its group
    can match: the closure accepts at least every real prefix. Raises ValueError on constructs it
    cannot write."""
    parsed = _p.parse(pattern, flags)
    on = "".join(letter for flag, letter in _FLAG_LETTERS if parsed.state.flags & flag)
    writer = _Writer(_groups_of(parsed, {}), re2=re2)
    body = writer.prefix(list(parsed))
    return f"(?{on}:{body})" if on else body


def to_re2(pattern: str, flags: int = 0) -> str:
    """``pattern`` (Python syntax and meaning) written for RE2. Raises ValueError naming what RE2
    cannot run: lookarounds, backreferences, conditionals, atomic groups, possessive quantifiers."""
    parsed = _p.parse(pattern, flags)
    on = "".join(letter for flag, letter in _FLAG_LETTERS if parsed.state.flags & flag)
    body = _Writer(_groups_of(parsed, {}), re2=True, strict=True).full(list(parsed))
    return f"(?{on}){body}" if on else body
