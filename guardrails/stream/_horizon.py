"""The horizon of a tail scanner: the earliest offset that could still become part of a match.

A match that the scanner reports later starts at or after its ``floor`` and is one of:

1. the match it found but could not settle yet (``TailScanner.pending``);
2. a match holding an anchor it has already found (``TailScanner.found``): such a match starts in
   ``[at - back, at]`` and, since it is not complete, the rest of the text from its start is a
   prefix of a match (the pattern's prefix closure accepts it up to the end);
3. a match whose anchor is not complete yet: the text from its start is a prefix of its lead and
   anchor (``tail``: a regex for those prefixes, searched only over the last ``tail_reach``
   characters). A scanner without anchors searches the pattern's whole closure instead.

The horizon is the smallest of those starts, never below the previous horizon (the closures are
prefix-closed, so a start that was not viable stays so) nor the floor. Cost per call: the tail
search over the new text and the few characters before it (``re``, in C), plus one anchored test
per found anchor still alive (rare: an anchor is a key's prefix, an "@", four close digits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from guardrails.stream._prefix import first_chars, prefix_closure
from guardrails.stream._scan import NO_ANCHORS, MatchLike, TailScanner

# Found anchors whose matches are tested for viability one by one; past this many, the horizon
# holds from the earliest of them. Ordinary text has none or one within a scanner's window.
MAX_TESTED_ANCHORS = 4


class Searcher(Protocol):
    def search(self, string: str, pos: int = ...) -> MatchLike | None: ...


class ClosureLike(Protocol):
    """``Closure`` (``re``, our own patterns) or ``linear.LinearClosure`` (RE2, operators')."""

    @property
    def compiled(self) -> Searcher: ...

    def viable(self, text: str, at: int) -> bool: ...


class Closure:
    """A pattern's prefix closure compiled for ``re``: ``search`` finds the leftmost offset ``>= start``
    from which the text could still grow into a match, ``viable`` tells it for exactly ``at``."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        # An empty rest of the text is always viable; any other must start with a first character
        # of the pattern: the lookahead lets the engine reject most offsets without entering the
        # closure (a third of the cost on prose).
        first = first_chars(pattern, flags)
        guard = f"(?={first})" if first else ""
        self.compiled = re.compile(f"\\Z|{guard}(?:{prefix_closure(pattern, flags)})\\Z")

    def search(self, text: str, start: int) -> int:
        found = self.compiled.search(text, start)
        return len(text) if found is None else found.start()

    def viable(self, text: str, at: int) -> bool:
        return self.compiled.match(text, at) is not None


@dataclass(frozen=True, slots=True)
class HorizonParts:
    """What a provider compiles once for its scanners' horizons (see the module docstring)."""

    full: ClosureLike
    tail: ClosureLike | None = None
    tail_reach: int = 0

    def arm(self) -> ScanHorizon:
        return ScanHorizon(self.full, self.tail, self.tail_reach)


class ScanHorizon:
    """Follows one ``TailScanner``; call ``update`` after every pass of the scanner. Written for
    the hot path: one regex search per call while no anchor is pending, few Python calls."""

    __slots__ = ("_alive", "_full", "_tail", "_tail_reach", "value")

    def __init__(self, full: ClosureLike, tail: ClosureLike | None = None, tail_reach: int = 0) -> None:
        self._full = full
        self._tail = full.compiled if tail is None else tail.compiled
        self._tail_reach = tail_reach if tail is not None else -1
        self._alive = NO_ANCHORS  # found anchor -> first start not yet ruled out (its own dict once one is)
        self.value = 0

    @property
    def idle(self) -> bool:
        """No found anchor is followed (the next update depends on the tail search alone)."""
        return not self._alive

    def update(self, scanner: TailScanner[Any], text: str) -> int:
        end = len(text)
        low = max(scanner.floor, self.value)
        start = low
        if self._tail_reach >= 0 and end - self._tail_reach > low:
            start = end - self._tail_reach
        hit = self._tail.search(text, start)
        best = end if hit is None else hit.start()
        if scanner.found or self._alive:
            best = min(best, self._found(scanner, text, low))
        pending = scanner.pending
        if pending is not None and pending < best:
            best = pending
        self.value = max(best, low)
        return self.value

    def _found(self, scanner: TailScanner[Any], text: str, low: int) -> int:
        found, alive, end = scanner.found, self._alive, len(text)
        if alive is NO_ANCHORS:
            alive = self._alive = {}
        if len(found) > MAX_TESTED_ANCHORS:
            # Text dense with anchors (a run of digits, "sk-sk-sk-"): each test reads to the end of
            # the text, so hold from the earliest of them instead (safe, and bounded by the window).
            alive.clear()
            return min((max(earliest, low) for at, earliest in found.items() if at >= low), default=end)
        for at in [at for at in alive if at not in found or at < low]:
            del alive[at]
        best = end
        viable = self._full.viable
        for at, earliest in found.items():
            if at < low:
                continue
            start = max(alive.get(at, earliest), low)
            while start <= at and not viable(text, start):
                start += 1
            alive[at] = start
            if start <= at:
                best = min(best, start)
        return best
