"""Invisible characters: the one definition of the set, and the text a reader sees of a stream.

A client renders none of Unicode's Default_Ignorable_Code_Point characters (zero-width spaces and
joiners, soft hyphens, word joiners, bidi marks, variation selectors, tags), so ``AKIA`` + U+200B +
the rest of a key shows as the key. The checks that look for a shape (a credential, personal data, a
deny pattern) must read the text as the reader does: ``VisibleText`` keeps one stream's text with them
dropped, and maps what a check reports in it (a horizon, a redaction span) back to the raw text.

Cost: no invisible character is ASCII, so an ASCII delta is told apart by ``str.isascii`` (O(1) in
CPython: a flag of the string); any other delta by one search of ``INVISIBLE_RUN`` (C). Only a stream
that carries one pays for the mapping (``guardrails.stream.ArmedSet``).
"""

from __future__ import annotations

import re
from bisect import bisect_right

_IGNORABLE_RANGES = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
INVISIBLE = dict.fromkeys(cp for lo, hi in _IGNORABLE_RANGES for cp in range(lo, hi + 1))
"""Unicode's Default_Ignorable_Code_Point characters as a ``str.translate`` table that drops them."""
INVISIBLE_RUN = re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _IGNORABLE_RANGES) + "]+")
"""A run of them (the same set)."""
_MARKS_KEPT = 32
"""Runs of dropped characters a ``VisibleText`` remembers before it forgets those behind the horizon."""


def drop_invisible(text: str) -> str:
    """``text`` as a reader sees it: every invisible character dropped."""
    return text if text.isascii() else text.translate(INVISIBLE)


def shows_as_is(text: str) -> bool:
    """Whether ``text`` holds no invisible character (True for ASCII without a search)."""
    return text.isascii() or INVISIBLE_RUN.search(text) is None


class VisibleText:
    """One stream's text with its invisible characters dropped (``text``), grown delta by delta, and
    where each of its characters stands in the raw text.

    The map is a list of the runs dropped: ``_at[i]`` is the visible offset a run stood before and
    ``_dropped[i]`` how many characters were dropped before that offset in all (runs at the same
    offset are one). Visible character ``v`` stands at raw offset ``v + _dropped[i]`` for the last
    ``_at[i] <= v``: a binary search, O(log runs). ``forget_before`` drops the runs no later question
    needs, so a stream holds the runs of about its held tail."""

    __slots__ = ("_at", "_dropped", "text")

    def __init__(self) -> None:
        self.text = ""
        self._at: list[int] = []
        self._dropped: list[int] = []

    def add(self, raw: str) -> str:
        """Append the raw ``raw``; returns what a reader sees of it."""
        if shows_as_is(raw):
            shown = raw
        else:
            shown = self._drop_runs(raw)
        text, self.text = self.text, ""  # detached: CPython grows the one-owner string in place
        text += shown
        self.text = text
        return shown

    def _drop_runs(self, raw: str) -> str:
        at, dropped = self._at, self._dropped
        base = len(self.text)
        total = dropped[-1] if dropped else 0
        kept: list[str] = []
        start = removed = 0
        for run in INVISIBLE_RUN.finditer(raw):
            kept.append(raw[start:run.start()])
            offset = base + run.start() - removed
            removed += run.end() - run.start()
            start = run.end()
            if at and at[-1] == offset:  # the run goes on from the delta before
                dropped[-1] = total + removed
            else:
                at.append(offset)
                dropped.append(total + removed)
        kept.append(raw[start:])
        return "".join(kept)

    def raw_offset(self, visible: int) -> int:
        """Where visible character ``visible`` stands in the raw text."""
        i = bisect_right(self._at, visible)
        return visible + (self._dropped[i - 1] if i else 0)

    def raw_horizon(self, visible: int) -> int:
        """A horizon in the raw text: just after the visible character before ``visible``, so the
        invisible characters between it and ``visible`` (or at the very end) are held with it."""
        return self.raw_offset(visible - 1) + 1 if visible > 0 else 0

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The raw span from visible character ``start`` to the one before ``end``: every invisible
        character between them is inside it."""
        first = self.raw_offset(start)
        return first, (self.raw_offset(end - 1) + 1 if end > start else first)

    def forget_before(self, visible: int) -> None:
        """No later question asks about an offset below ``visible - 1`` (a horizon of every check that
        reads this text): the runs before it are folded into the first one kept."""
        at = self._at
        if len(at) <= _MARKS_KEPT:
            return
        i = bisect_right(at, visible - 1)
        if i > 1:
            del at[:i - 1]
            del self._dropped[:i - 1]
