"""Many bounded rules over a growing text, run only where one of their keywords occurs.

``KeywordIndex`` is built once per policy: one Aho-Corasick automaton (``pyahocorasick``) over
every rule's keywords, lowercased. ``KeywordScanner`` is one stream's state. On each call it
runs the automaton over the new text only (plus the ``reach - 1`` characters before it, where a
keyword may have begun), and keeps each keyword found as a *pending hit* of its rules. A pending
hit is tried with its rule's regex, anchored at the keyword (or up to ``back`` characters before
it), until the rule matches, or the text after the keyword can no longer continue a match (for
a token: whitespace; for an assignment: its ``alive`` grammar), or the rule's width has passed.

Why Aho-Corasick (measured in bench/guard_cost.py and the README): one C pass over the new
characters costs about 0.9 µs per 3-8 character delta for 150 keywords; one ``re`` alternation
of the same keywords costs about 37 µs (CPython tries every branch at every offset); Hyperscan's
streaming mode costs about 0.3 µs but matches UTF-8 bytes, not the characters the pipeline counts,
and keeps native per-stream state. Cost per call: O(len(delta) + reach) for the automaton, plus
one regex attempt per pending hit, and hits die at the first character that cannot continue them.

A match is *settled* (reported) when more text can no longer change it: at once for a rule that
ends in a fixed count, one character after its end for a rule that ends in a lookahead, and at
``final``. ``horizon`` is the earliest offset a match could still start at: the earliest pending
hit, else the start of the trailing run of non-space characters (a keyword still arriving, and
the characters a rule allows before its keyword, never contain whitespace), bounded by ``reach``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import ahocorasick

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


@dataclass(frozen=True, slots=True)
class ScanRule:
    """A rule in the form the scanner runs it."""

    number: int
    """Position in the index (the tie-break between matches that start at one offset)."""
    name: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    alive: re.Pattern[str]
    """``alive.fullmatch(text, keyword_start)``: the text since the keyword may still grow into a match."""
    back: int
    width: int
    """The longest text the pattern can match (bounded: the scanner's window)."""
    shortest: int
    """The shortest text the pattern can match: no match holding a hit ends before that much text
    follows the hit's earliest start, so it is not tried earlier."""
    waits: bool
    """The pattern ends in a lookahead: a match is settled only once a character follows it."""


TOKEN_ALIVE = r"\S*"
"""Default ``alive`` grammar: a token rule's hit dies at the first whitespace after its keyword."""


def scan_rule(number: int, name: str, keywords: Sequence[str], regex: str, *, back: int = 0,
              alive: str = TOKEN_ALIVE, flags: int = 0) -> ScanRule:
    pattern = re.compile(regex, flags)
    shortest, width = map(int, re._parser.parse(regex, flags).getwidth())  # type: ignore[attr-defined]
    if width >= re._parser.MAXREPEAT:  # type: ignore[attr-defined]
        raise ValueError(f"rule {name!r} must have a bounded width")
    return ScanRule(number, name, tuple(k.lower() for k in keywords), pattern, re.compile(alive, flags),
                    back, width, max(1, shortest), _ends_in_lookahead(regex, flags))


def _ends_in_lookahead(regex: str, flags: int) -> bool:
    return _last_is_lookahead(list(re._parser.parse(regex, flags)))  # type: ignore[attr-defined]


def _last_is_lookahead(items: list[tuple[object, object]]) -> bool:
    """Whether some way through ``items`` (a parsed regex) ends in a lookahead."""
    if not items:
        return False
    op, arg = str(items[-1][0]), items[-1][1]
    if op == "ASSERT_NOT" or (op == "ASSERT" and arg[0] == 1):  # type: ignore[index]
        return True
    if op == "SUBPATTERN":
        return _last_is_lookahead(list(arg[3]))  # type: ignore[index]
    if op == "BRANCH":
        return any(_last_is_lookahead(list(alt)) for alt in arg[1])  # type: ignore[index]
    return False


class KeywordIndex:
    """The automaton over every rule's keywords; shared by every stream of a policy."""

    def __init__(self, rules: Sequence[ScanRule]) -> None:
        if not rules:
            raise ValueError("a keyword index needs at least one rule")
        by_keyword: dict[str, list[ScanRule]] = {}
        for rule in rules:
            if not rule.keywords:
                raise ValueError(f"rule {rule.name!r} has no keyword")
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(rule)
        self.automaton = ahocorasick.Automaton()
        for keyword, owners in by_keyword.items():
            self.automaton.add_word(keyword, (len(keyword), tuple(owners)))
        self.automaton.make_automaton()
        self.rules = tuple(rules)
        self.reach = max(len(k) for k in by_keyword)
        """The longest keyword: one that ends in new text starts at most ``reach - 1`` before it."""
        self.lead = max(r.back for r in rules) + self.reach
        self.window = max(max(r.width + r.back for r in rules) + 1, self.lead)
        """No match is longer, nor starts further back from a keyword still arriving."""

    def finds_none(self, text: str) -> bool:
        """Whether no keyword occurs in ``text``: then a scanner fed it, in any pieces, never holds a
        hit (each piece is lowered as ``quiet_horizon`` lowers it, and a keyword found in a piece
        is found in the whole) and reports nothing, ``final`` or not."""
        lowered = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)
        return next(iter(self.automaton.iter(lowered)), None) is None


_THROUGH_LAST_SPACE = re.compile(r".*[ \n\t\r]", re.DOTALL)
"""From a start, through the last whitespace character (a token starts after it); one C pass."""
_LOOKAHEAD_ROOM = 64
"""Characters past a rule's widest match that its closing lookahead may read (the rules' read one or
two; a rule with an unbounded lookahead is not one this scanner can bound)."""

Hit = tuple[int, int, ScanRule, int, bool]
"""(earliest match start, keyword start, rule, the text's length at which it is next tried, whether
a match of it already waited for the character after it)"""
_GROWTH = 2
"""A hit is tried once no shorter text can hold its match (its rule's shortest), then again once the
text since its earliest start has grown this many times (and once its rule's width has passed): a
few attempts in its life, not one per delta. A match that reaches the text's end and ends in a
lookahead waits for the next character: it is tried on the next delta the first time (a key
followed by prose is settled by the character after it), then as the others are (a value that
keeps growing)."""


class KeywordScanner:
    """One stream's pending keyword hits over an index; reports settled matches one at a time."""

    __slots__ = ("_index", "_pending", "_seen", "_spaced", "_token_start", "work")

    def __init__(self, index: KeywordIndex) -> None:
        self._index = index
        self.work = 0
        """Regex work so far: per attempt, the offsets tried times the characters each may read
        (the per-byte work bound test holds it to a constant times the text's length)."""
        self._seen = 0
        self._pending: list[Hit] = []
        self._token_start = 0
        self._spaced = 0  # how far the text was searched for whitespace

    @property
    def pending(self) -> int:
        return len(self._pending)

    def first_pending(self) -> tuple[int, int] | None:
        """The earliest start a pending hit's match could have, and its rule's number (the order in
        which ``next`` settles matches of one text), or None with no hit pending."""
        pending = self._pending
        return (pending[0][0], pending[0][2].number) if pending else None

    def next(self, text: str, *, final: bool = False) -> tuple[ScanRule, re.Match[str]] | None:
        """The earliest settled match among the pending hits (which then leaves them), or None."""
        if self.quiet_horizon(text) >= 0:
            return None
        return self._settle(text, final)

    def quiet_horizon(self, text: str) -> int:
        """Take the keywords of ``text``'s new characters; then, with no hit pending (``next`` would
        find nothing), ``horizon``; else -1. The per-delta call of a stream with no keyword in sight:
        one automaton pass over the new characters (and the ``reach - 1`` before them, where a keyword
        may have begun), one regex match for the last whitespace."""
        end, seen = len(text), self._seen
        if end > seen:
            index = self._index
            lo = seen - index.reach + 1
            if lo < 0:  # noqa: PLR1730 - max() is a builtin call per delta
                lo = 0
            segment = text[lo:end]
            segment = segment.lower() if segment.isascii() else segment.translate(_ASCII_LOWER)
            self._seen = end
            added = False
            for last, (length, owners) in index.automaton.iter(segment):
                if lo + last >= seen:
                    start = lo + last - length + 1
                    for rule in owners:
                        first = _earliest(text, start, rule.back)
                        self._pending.append((first, start, rule, first + rule.shortest, False))
                    added = True
            if added:  # (kept in order otherwise: ``_settle`` keeps a subsequence)
                self._pending.sort(key=lambda hit: (hit[0], hit[2].number))
        if self._pending:
            return -1
        if end > self._spaced:
            space = _THROUGH_LAST_SPACE.match(text, self._spaced)
            if space is not None:
                self._token_start = space.end()
            self._spaced = end
        lowest = end - self._index.lead
        return lowest if lowest > self._token_start else self._token_start  # noqa: FURB136 - max() is a call

    def horizon(self, text: str) -> int:
        end = len(text)
        if end > self._spaced:
            space = _THROUGH_LAST_SPACE.match(text, self._spaced)
            if space is not None:
                self._token_start = space.end()
            self._spaced = end
        lowest = end - self._index.lead
        if lowest < self._token_start:  # noqa: PLR1730 - max() is a builtin call per delta
            lowest = self._token_start
        for hit in self._pending:
            if hit[0] < lowest:  # noqa: PLR1730 - min() is a builtin call per hit
                lowest = hit[0]
        return lowest

    def _settle(self, text: str, final: bool) -> tuple[ScanRule, re.Match[str]] | None:
        end = len(text)
        keep: list[Hit] = []
        found: tuple[ScanRule, re.Match[str]] | None = None
        pending = self._pending
        for i, hit in enumerate(pending):
            first, start, rule, due, waited = hit
            if not final and end < due:
                # Not due: no match can have ended yet, or the last attempt found none and the text
                # has not grown enough since. Before a match can have ended, a hit whose text can
                # no longer grow into one dies (an anchored match of a short text).
                if end - first >= rule.shortest or rule.alive.fullmatch(text, start):
                    keep.append(hit)
                continue
            match = self._try(text, first, start, rule)
            if match is not None:
                if final or not rule.waits or match.end() < end:
                    found = (rule, match)
                    # Every other hit stays, the same rule's inside this match too: the caller may
                    # reject this match (not a credential), and a match of the same rule starting
                    # inside it may be one ('<password>aws_secret_access_key = <key>': the match at
                    # 'password' has the name as its value; the one at 'secret' holds the key).
                    keep.extend(pending[i + 1:])
                    break
                keep.append((first, start, rule, _grown(first, end, rule) if waited else end + 1, True))
            elif not final and end - first <= rule.width + 1 and rule.alive.fullmatch(text, start):
                keep.append((first, start, rule, _grown(first, end, rule), waited))
        self._pending = keep
        return found

    def _try(self, text: str, first: int, start: int, rule: ScanRule) -> re.Match[str] | None:
        """The rule's match that holds the keyword at ``start``: the leftmost one that starts in
        ``[first, start]``, each offset tried anchored (a search would go on trying every offset to
        the text's end: in a run of a keyword's letters, forty thousand 'a's for twitter's 21, once
        per offset). A match ends by ``start + width`` (plus room for a closing lookahead)."""
        stop = min(len(text), start + rule.width + _LOOKAHEAD_ROOM)
        self.work += (start - first + 1) * (stop - first + 1)
        pattern = rule.pattern
        for at in range(first, start + 1):
            match = pattern.match(text, at, stop)
            if match is not None:
                return match
        return None


def _grown(first: int, end: int, rule: ScanRule) -> int:
    """When a hit tried at ``end`` is next due: once its text has grown ``_GROWTH`` times, or its
    rule's width has passed (its last attempt), whichever comes first."""
    return min(first + _GROWTH * (end - first), first + rule.width + 2)


def _earliest(text: str, start: int, back: int) -> int:
    """The earliest start of a match that holds the keyword at ``start``: ``back`` characters
    before it, but never across whitespace (no rule allows it before its keyword)."""
    if not back:
        return start
    lo = max(0, start - back)
    space = max(text.rfind(" ", lo, start), text.rfind("\n", lo, start), text.rfind("\t", lo, start),
                text.rfind("\r", lo, start))
    return space + 1 if space >= 0 else lo
