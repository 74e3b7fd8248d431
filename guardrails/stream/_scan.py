"""Shared machinery of the pattern-based stream checks: a tail scanner and a randomness test.

Pure functions and per-stream state only; nothing here keeps global mutable state.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar

# How close to the maximum entropy a value must come to count as random. Random keys of 16 to 64
# characters land at about 0.85-0.95 of log2(min(length, alphabet)); English identifiers, paths
# and placeholders land well below. 0.75 keeps the rare low-entropy real key without letting
# hand-written values through.
RANDOMNESS_RATIO = 0.75
# Four characters in a row that step by one code point ("1234", "abcd") mark a hand-typed value.
SEQUENCE_RUN = 4
# A character repeated this many times in a row marks a placeholder ("XXXX", "0000", "****").
REPEAT_RUN = 4
# From this length a value may hold one run of either kind by chance (see ``_has_run``).
LONG_VALUE = 24
# Words that mark a value as an illustration rather than a credential (compared lowercased).
PLACEHOLDER_WORDS = (
    "example", "your", "here", "placeholder", "dummy", "sample", "redacted", "fake", "changeme",
    "insert", "replace",
)


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s own character distribution. O(len(value))."""
    n = len(value)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _alphabet_size(value: str) -> int:
    """The size of the character classes ``value`` draws from (hex, alphanumerics, symbols)."""
    if all(c in "0123456789abcdef" for c in value) or all(c in "0123456789ABCDEF" for c in value):
        return 16
    size = 0
    size += 10 if any(c.isdigit() for c in value) else 0
    size += 26 if any(c.islower() for c in value) else 0
    size += 26 if any(c.isupper() for c in value) else 0
    size += 16 if any(not c.isalnum() for c in value) else 0
    return max(size, 2)


def _has_run(value: str, step: int, length: int) -> bool:
    """True when ``length`` consecutive characters each differ from the previous by ``step``, in
    a value shorter than ``LONG_VALUE``. A longer one needs a run one longer, or two runs: a
    random 32-hex key holds one ``5678`` or ``0000`` about once in 70 draws (and a format then
    lost that one key), while hand-typed values (``abcd1234efgh5678``) hold several."""
    run, runs = 1, 0
    for a, b in itertools.pairwise(value):
        run = run + 1 if ord(b) - ord(a) == step else 1
        if run == length:
            runs += 1
        if run > length or run == length and (runs >= 2 or len(value) < LONG_VALUE):
            return True
    return False


def looks_random(value: str, *, min_classes: int = 2, need_digit: bool = False) -> bool:
    """Whether ``value`` looks like a generated credential rather than a word, path or placeholder.

    A real key is random: it mixes character classes (``min_classes`` of lowercase, uppercase and
    digits), repeats no character four times in a row, contains no counting run and no placeholder
    word, and its entropy is close to the maximum for its length and alphabet. A 32-character
    random base62 key fails this about once in 200; a kebab-case identifier or ``XXXX`` never passes.
    """
    lowered = value.lower()
    if any(word in lowered for word in PLACEHOLDER_WORDS):
        return False
    classes = (any(c.islower() for c in value), any(c.isupper() for c in value),
               any(c.isdigit() for c in value))
    if sum(classes) < min_classes or (need_digit and not classes[2]) or not any(classes[:2]):
        return False
    if _has_run(lowered, 0, REPEAT_RUN) or _has_run(lowered, 1, SEQUENCE_RUN):
        return False
    ceiling = math.log2(min(len(value), _alphabet_size(value)))
    return shannon_entropy(value) >= RANDOMNESS_RATIO * ceiling


def split_lookbehinds(regex: str) -> tuple[str, str]:
    """Split the leading negative lookbehinds off ``regex``: ``(lookbehinds, rest)``.

    Why: a lookbehind at the start of an alternative stops CPython's engine from skipping, in C,
    the positions whose first character cannot start a match; the secrets alternation ran five
    times slower with them. Callers match the rest and then test the lookbehinds alone with
    ``re.compile(lookbehinds).match(text, match.start())``, which sees the real preceding text.
    The cost of moving them: finditer consumes a rejected candidate, so a match that starts
    inside it is not tried. For the built-in patterns such a match would sit inside a longer
    token or digit run, which its own lookbehind refuses in all but contrived layouts.
    """
    end = 0
    while regex.startswith("(?<!", end):
        depth, i, in_class = 0, end, False
        while True:
            ch = regex[i]
            if ch == "\\":
                i += 2
                continue
            if in_class:
                in_class = ch != "]" or regex[i - 1] == "["
            elif ch == "[":
                in_class = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        end = i + 1
    return regex[:end], regex[end:]


class Anchors:
    """Where a match may begin: a cheap prefilter that lets a scanner skip its regex on most deltas.

    ``parts`` are ``(regex, back)`` pairs: every match of the scanned pattern that starts at ``s``
    must contain, at some ``p`` in ``[s, s + back]``, text that ``regex`` matches (reading only
    characters of the match, with no lookbehind), so that ``s >= p - back``. Where several parts
    match at one offset the largest ``back`` counts. ``reach`` is the longest text any part
    reads: an anchor that ends in the new text starts at most ``reach - 1`` characters before it.
    ``quick``, when given, is a character class that matches the *last* character of every text
    a part matches: new text without one completes no anchor, and one class search over the
    delta is several times cheaper than the alternation over the delta and the ``reach`` before.

    The alternation has no capturing groups on purpose: CPython's engine runs several times slower
    with them. Which part matched is asked again, part by part, only at the (rare) offsets found.
    """

    def __init__(self, parts: Sequence[tuple[str, int]], *, quick: str | None = None) -> None:
        ordered = sorted(set(parts), key=lambda part: (-part[1], part[0]))
        self.pattern = re.compile("|".join(f"(?:{rx})" for rx, _ in ordered))
        self.quick = re.compile(quick) if quick else None
        self.reach = max(widest(rx) for rx, _ in ordered)
        self._parts = [(re.compile(rx), back) for rx, back in ordered]

    def back(self, text: str, at: int) -> int:
        """How far before ``at`` a match that holds the anchor found at ``at`` may start."""
        if len(self._parts) > 1:
            for part, back in self._parts:
                if part.match(text, at):
                    return back
        return self._parts[0][1]


def widest(regex: str) -> int:
    """The longest text ``regex`` can match (anchors must be bounded)."""
    widest = int(re._parser.parse(regex).getwidth()[1])  # type: ignore[attr-defined]
    if widest >= re._parser.MAXREPEAT:  # type: ignore[attr-defined]
        raise ValueError(f"an anchor must have a bounded width: {regex!r}")
    return widest


class MatchLike(Protocol):
    def start(self) -> int: ...

    def end(self) -> int: ...


M = TypeVar("M", bound=MatchLike)
M_co = TypeVar("M_co", bound=MatchLike, covariant=True)


class PatternLike(Protocol[M_co]):
    """What a scanner needs of a compiled pattern: ``re.Pattern`` or ``linear.LinearPattern``."""

    def finditer(self, string: str, pos: int = ...) -> Iterator[M_co]: ...


def literal_prefix(pattern: re.Pattern[str]) -> str | None:
    """A regex for the literal characters every match of ``pattern`` starts with, or None.

    Leading zero-width assertions (``\\b``, ``^``) are skipped: dropping them only weakens the
    condition. The prefix is compiled with the pattern's case folding, so it accepts at least the
    text the pattern's own literals accept.
    """
    parsed = re._parser.parse(pattern.pattern, pattern.flags)  # type: ignore[attr-defined]
    chars: list[str] = []
    for op, arg in parsed:
        if str(op) == "AT" and not chars:
            continue
        if str(op) != "LITERAL":
            break
        chars.append(re.escape(chr(arg)))
    if not chars:
        return None
    return f"(?i:{''.join(chars)})" if parsed.state.flags & re.IGNORECASE else "".join(chars)


NO_ANCHORS: dict[int, int] = {}
"""Shared by every scanner that has found no anchor yet (never written: a scanner makes its own
dict on its first anchor), so an idle stream holds no empty dict per scanner."""


class TailScanner(Generic[M]):
    """Reports each match of ``pattern`` in a growing text once, as soon as it is settled.

    ``floor`` is the first offset not yet ruled out. Every call runs the regex over
    ``text[floor:]`` (``finditer`` with a start position, so lookbehinds and ``\\b`` still see the
    text before it, and nothing is copied), and after a pass that found nothing settled ``floor``
    moves to ``len(text) - window``: a match starting earlier would be longer than ``window``.
    Cost per call: O(len(delta) + window), however long the text grows.

    With ``anchors``, the regex starts instead at the earliest offset at or above ``floor`` where
    an anchor says a match may begin, and does not run at all when there is none; anchors are
    searched for only where they can end in the new text. No match can start below that offset,
    so the matches found, and ``floor``, are exactly those of a pass from ``floor``. Cost per
    call: one class search over the delta while no anchor is within ``window`` of the end.

    A match is *settled* when more text can no longer change it:

    - the built-in patterns end in a lookahead that reads at most ``slack + 1`` characters past
      the match and consume nothing that lookahead accepts, so a match with more than ``slack``
      characters after it is final;
    - ``is_final(match)`` may declare a match final at once (fixed-length prefixes of a secret);
    - a match as long as ``window`` is reported as it stands (user patterns may grow unbounded),
      unless the pattern is ``end_sensitive`` (it reads past its match: ``$``, ``\\Z``, ``\\b``):
      then a match that ends within ``slack`` characters of the text's end waits for more text or ``final``,
      as the characters after it decide whether it is one at all;
    - at ``final`` (end of message) every match is settled.

    A match that is not settled stops the pass: later matches end later still. It is looked at
    again on the next call, and its start is still above ``floor`` because it is shorter than
    ``window``. Empty matches are ignored (a pattern that can match nothing would trip on every
    delta).
    """

    __slots__ = ("_anchors", "_by_length", "_floor", "_found", "_is_final", "_seen", "pattern", "pending", "slack",
                 "window")

    def __init__(self, pattern: PatternLike[M], window: int, *, slack: int = 0,
                 is_final: Callable[[M], bool] | None = None,
                 anchors: Anchors | None = None, end_sensitive: bool = False) -> None:
        self.pattern = pattern
        self.window = window
        self.slack = slack
        self._by_length = not end_sensitive
        self._is_final = is_final
        self._floor = 0
        self._anchors = anchors
        self._seen = 0  # the text's length when anchors were last searched for
        self._found = NO_ANCHORS  # anchor offset -> earliest start of a match holding it
        self.pending: int | None = None
        """Start of the match the last call found but could not settle yet (None: there was none)."""

    @property
    def floor(self) -> int:
        """The first offset the next call will scan from (tests assert it trails the end by
        no more than ``window`` plus the last delta)."""
        return self._floor

    @property
    def found(self) -> dict[int, int]:
        """Anchors found and not yet passed: offset -> earliest start of a match holding it."""
        return self._found

    @property
    def anchors(self) -> Anchors | None:
        return self._anchors

    @property
    def idle(self) -> bool:
        """No anchor found and alive, no match pending: the next call depends only on the new text."""
        return not self._found and self.pending is None

    @property
    def since(self) -> int:
        """Where the next call's anchor search starts at the latest (anchored scanners)."""
        reach = self._anchors.reach if self._anchors is not None else 1
        return max(self._floor, self._seen - reach + 1)

    def passed(self, end: int) -> None:
        """What a call on a text of length ``end`` does when the new text completes no anchor (the
        caller has searched for them, over at least ``since`` to ``end``) and the scanner is ``idle``."""
        self.pending = None
        self._seen = end
        if self._floor < end - self.window:  # noqa: PLR1730 - as ``next`` moves it
            self._floor = end - self.window

    def next(self, text: str, *, final: bool = False) -> M | None:
        """The first settled match at or after ``floor``, which then moves past it; else None."""
        end = len(text)
        start = self._floor
        self.pending = None
        if self._anchors is not None:
            if not self._found and (end == self._seen or self._quiet(text, end)):
                if start < end - self.window:
                    self._floor = end - self.window
                return None
            start = self._first_start(text, end)
        if start >= 0:
            for match in self.pattern.finditer(text, start):
                if match.end() == match.start():
                    continue
                settled = (final or match.end() + self.slack < end
                           or (self._by_length and end - match.start() >= self.window)
                           or (self._is_final is not None and self._is_final(match)))
                if not settled:
                    self.pending = match.start()
                    break
                self._floor = match.end()
                return match
        self._floor = max(self._floor, end - self.window)
        return None

    def defer(self, floor: int, start: int) -> None:
        """Undo the call to ``next`` that began at ``floor``: its match waits, as one not settled
        yet would, because a match may still begin at ``start``, before it."""
        self._floor = floor
        self.pending = start

    def resume_at(self, offset: int) -> None:
        """The match ``next`` just returned is taken to end at ``offset`` (a shorter reading of it,
        above its start): the next call scans from there, not past the whole match."""
        self._floor = offset

    def _quiet(self, text: str, end: int) -> bool:
        """True, having taken note of the new text, when it completes no anchor."""
        anchors = self._anchors
        assert anchors is not None
        if anchors.quick is not None:
            hit = anchors.quick.search(text, self._seen)
        else:
            since = self._seen - anchors.reach + 1
            hit = anchors.pattern.search(text, max(self._floor, since))
        if hit is not None:
            return False
        self._seen = end
        return True

    def _first_start(self, text: str, end: int) -> int:
        """The earliest offset at or above ``floor`` where a match may start, or -1 for none.

        Anchors that end in the new text (``text[seen:]``) start at or after ``seen - reach + 1``;
        the ones that ended earlier were found by an earlier call. Found anchors below ``floor``
        are dropped: a match that holds one would start below ``floor``.
        """
        anchors, found, floor = self._anchors, self._found, self._floor
        assert anchors is not None
        if end > self._seen and not self._quiet(text, end):
            search = anchors.pattern.search
            hit = search(text, max(self._seen - anchors.reach + 1, floor))
            if hit is not None and found is NO_ANCHORS:
                found = self._found = {}
            while hit is not None:
                at = hit.start()
                earliest = at - anchors.back(text, at)
                found[at] = min(found.get(at, earliest), earliest)
                hit = search(text, at + 1)
            self._seen = end
        for at in [at for at in found if at < floor]:
            del found[at]
        if not found:
            return -1
        return max(floor, min(found.values()))
