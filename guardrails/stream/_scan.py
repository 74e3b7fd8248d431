"""Shared machinery of the pattern-based stream checks: a tail scanner and a randomness test.

Pure functions and per-stream state only; nothing here keeps global mutable state.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable

# How close to the maximum entropy a value must come to count as random. Random keys of 16 to 64
# characters land at about 0.85-0.95 of log2(min(length, alphabet)); English identifiers, paths
# and placeholders land well below. 0.75 keeps the rare low-entropy real key without letting
# hand-written values through.
RANDOMNESS_RATIO = 0.75
# Four characters in a row that step by one code point ("1234", "abcd") mark a hand-typed value.
SEQUENCE_RUN = 4
# A character repeated this many times in a row marks a placeholder ("XXXX", "0000", "****").
REPEAT_RUN = 4
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
    """True when ``length`` consecutive characters each differ from the previous by ``step``."""
    run = 1
    for a, b in itertools.pairwise(value):
        run = run + 1 if ord(b) - ord(a) == step else 1
        if run >= length:
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


class TailScanner:
    """Reports each match of ``pattern`` in a growing text once, as soon as it is settled.

    ``floor`` is the first offset not yet ruled out. Every call runs the regex over
    ``text[floor:]`` (``finditer`` with a start position, so lookbehinds and ``\\b`` still see the
    text before it, and nothing is copied), and after a pass that found nothing settled ``floor``
    moves to ``len(text) - window``: a match starting earlier would be longer than ``window``.
    Cost per call: O(len(delta) + window), however long the text grows.

    A match is *settled* when more text can no longer change it:

    - the built-in patterns end in a lookahead that reads at most ``slack + 1`` characters past
      the match and consume nothing that lookahead accepts, so a match with more than ``slack``
      characters after it is final;
    - ``is_final(match)`` may declare a match final at once (fixed-length prefixes of a secret);
    - a match as long as ``window`` is reported as it stands (user patterns may grow unbounded);
    - at ``final`` (end of message) every match is settled.

    A match that is not settled stops the pass: later matches end later still. It is looked at
    again on the next call, and its start is still above ``floor`` because it is shorter than
    ``window``. Empty matches are ignored (a pattern that can match nothing would trip on every
    delta).
    """

    def __init__(self, pattern: re.Pattern[str], window: int, *, slack: int = 0,
                 is_final: Callable[[re.Match[str]], bool] | None = None) -> None:
        self.pattern = pattern
        self.window = window
        self.slack = slack
        self._is_final = is_final
        self._floor = 0

    @property
    def floor(self) -> int:
        """The first offset the next call will scan from (tests assert it trails the end by
        no more than ``window`` plus the last delta)."""
        return self._floor

    def next(self, text: str, *, final: bool = False) -> re.Match[str] | None:
        """The first settled match at or after ``floor``, which then moves past it; else None."""
        end = len(text)
        for match in self.pattern.finditer(text, self._floor):
            if match.end() == match.start():
                continue
            settled = (final or match.end() + self.slack < end or end - match.start() >= self.window
                       or (self._is_final is not None and self._is_final(match)))
            if not settled:
                break
            self._floor = match.end()
            return match
        self._floor = max(self._floor, end - self.window)
        return None
