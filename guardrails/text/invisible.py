"""Invisible characters: the one definition of the set, and the text a reader sees of a stream.

A client renders none of Unicode's Default_Ignorable_Code_Point characters (zero-width spaces and
joiners, soft hyphens, word joiners, bidi marks, variation selectors, tags), so ``AKIA`` + U+200B +
the rest of a key shows as the key. Nor the three interlinear annotation characters U+FFF9-U+FFFB
(General_Category Cf, not Default_Ignorable: for internal use, "ignored" by a client that does not
support them, which is every chat client); they are in the set too. The other Cf characters outside
it are visible: the Prepended_Concatenation_Marks (U+0600-U+0605, U+06DD, U+070F, U+0890-U+0891,
U+08E2, U+110BD, U+110CD: signs drawn over the digits that follow) and the Egyptian hieroglyph
format controls (U+13430-U+13438: they lay out hieroglyphs, or show as glyphs where unsupported).

Look-alike letters show as the letters they imitate: Cyrillic ``а`` in ``аlice@corp.com``, ``А`` in
``AKIА...``, Greek ``ο`` in a deny phrase; and full-width or mathematical letters and digits as the
ASCII ones. ``guardrails.text.confusables.shape_table`` maps each to that ASCII character, one
character to one.

The checks that look for a shape (a credential, personal data, a deny pattern) must read the text as
the reader does: ``VisibleText`` keeps one stream's text with the invisible characters dropped and
the look-alikes read as ASCII, and maps what a check reports in it (a horizon, a redaction span) back
to the raw text (a look-alike keeps its offset: only dropped characters move them).

Cost: no invisible character and no look-alike is ASCII, so an ASCII delta is told apart by
``str.isascii`` (O(1) in CPython: a flag of the string); any other delta by one search of
``disguises`` (C, a bitmap per character). Only a stream that carries one pays for the mapping and the
translation (``guardrails.stream.ArmedSet``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache

from guardrails.text.confusables import shape_table

_IGNORABLE_RANGES = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
INVISIBLE = dict.fromkeys(cp for lo, hi in _IGNORABLE_RANGES for cp in range(lo, hi + 1))
"""Unicode's Default_Ignorable_Code_Point characters and U+FFF9-U+FFFB as a ``str.translate`` table
that drops them."""
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


@cache
def disguises() -> re.Pattern[str]:
    """One character that may not read as itself: an invisible one or a look-alike of the BMP, or any
    character beyond it (built once, with ``shape_table``; ``build_stream_guardrails`` builds it).
    ``re`` tests the BMP part of a class by a bitmap (O(1) per character) and the rest by a scan of
    its ranges (hundreds here: ten times slower), so beyond the BMP the class is one range, and what
    it finds there (emoji, mathematical letters, tags) ``reads_as_is`` tells apart."""
    codes = sorted({code for code in (*shape_table(), *INVISIBLE) if code <= 0xFFFF})
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    bmp = "".join(re.escape(chr(lo)) + (f"-{re.escape(chr(hi))}" if hi > lo else "") for lo, hi in runs)
    return re.compile(f"[{bmp}\U00010000-\U0010FFFF]")


@cache
def read_table() -> dict[int, str | None]:
    """``str.translate`` table that drops the invisible characters and reads look-alikes as ASCII."""
    return {**shape_table(), **INVISIBLE}


def reads_as_is(text: str) -> bool:
    """Whether ``text`` reads as it is: no invisible character, no look-alike (True for ASCII without
    a search; one search more for each character beyond the BMP, an emoji often)."""
    if text.isascii():
        return True
    search, at = disguises().search, 0
    while (found := search(text, at)) is not None:
        char = found.group()
        if char <= "\uffff" or ord(char) in read_table():
            return False
        at = found.end()  # beyond the BMP and read as itself: an emoji, most often
    return True


def as_read(text: str) -> str:
    """``text`` as a reader reads it: invisible characters dropped, look-alikes read as ASCII."""
    return text if text.isascii() else text.translate(read_table())


class VisibleText:
    """One stream's text as a reader reads it (``text``: invisible characters dropped, look-alikes
    read as ASCII), grown delta by delta, and where each of its characters stands in the raw text.

    The map is a list of the runs dropped: ``_at[i]`` is the visible offset a run stood before and
    ``_dropped[i]`` how many characters were dropped before that offset in all (runs at the same
    offset are one). Visible character ``v`` stands at raw offset ``v + _dropped[i]`` for the last
    ``_at[i] <= v``: a binary search, O(log runs). ``forget_before`` drops the runs no later question
    needs, so a stream holds the runs of about its held tail."""

    __slots__ = ("_at", "_dropped", "_read", "text")

    def __init__(self) -> None:
        self.text = ""
        self._at: list[int] = []
        self._dropped: list[int] = []
        self._read = read_table()

    def add(self, raw: str) -> str:
        """Append the raw ``raw``; returns what a reader reads of it."""
        if raw.isascii():
            shown = raw
        else:  # one translation, not a search first: on a stream that carried one, most such deltas do
            shown = raw.translate(self._read)
            if len(shown) != len(raw):
                self._note_dropped(raw)
        text, self.text = self.text, ""  # detached: CPython grows the one-owner string in place
        text += shown
        self.text = text
        return shown

    def _note_dropped(self, raw: str) -> None:
        """Record the runs of invisible characters of ``raw``, about to be appended without them."""
        at, dropped = self._at, self._dropped
        base = len(self.text)
        total = dropped[-1] if dropped else 0
        removed = 0
        for run in INVISIBLE_RUN.finditer(raw):
            offset = base + run.start() - removed
            removed += run.end() - run.start()
            if at and at[-1] == offset:  # the run goes on from the delta before
                dropped[-1] = total + removed
            else:
                at.append(offset)
                dropped.append(total + removed)

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
