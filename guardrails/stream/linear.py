"""Operators' patterns on a linear-time engine: Python syntax and meaning, RE2 underneath.

A deny pattern is the operator's, and a backtracking engine lets one pattern stall every stream of
the proxy: ``(a+)+$`` over a 26-character answer froze the event loop for 6-10 s, doubling with
each character. Patterns are parsed with Python's own parser (the syntax operators write and the
flags ``i m s x`` mean what they mean in Python), written out for RE2 (``_prefix.to_re2``: ``\\d
\\w \\s`` spelled as Python's Unicode classes) and compiled by ``google-re2``, whose matching time is
linear in the text for any pattern. What RE2 cannot run (lookarounds, backreferences, conditional,
atomic or possessive groups) is refused when the policy loads, naming the pattern. Differences
that remain: ``\\b`` is an ASCII word boundary, and ``$`` without ``m`` matches only at the very end.

The ``google-re2`` binding converts the whole subject to UTF-8 on every call, so a call on the
accumulated message would cost O(len(message)) per delta. Scanners only ever read from a start
offset near the end: both classes hand RE2 the text from one character before that offset (the
character ``\\b`` and ``^`` look at) and shift the offsets back. Cost per call: O(len(text) - pos).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import re2

from guardrails.stream._prefix import prefix_closure, to_re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported once, by us, not on stderr
_OPTIONS.max_mem = 8 << 20  # per compiled pattern; past it RE2 falls back to slower (still linear) paths


@dataclass(frozen=True, slots=True)
class Span:
    """A match of a ``LinearPattern``: offsets into the whole text."""

    begin: int
    finish: int

    def start(self) -> int:
        return self.begin

    def end(self) -> int:
        return self.finish


def compile_linear(source: str) -> re2._Regexp:
    """RE2 for ``source`` (Python syntax); ValueError naming what RE2 cannot run."""
    try:
        return re2.compile(source, _OPTIONS)
    except re2.error as exc:
        raise ValueError(str(exc.args[0] if exc.args else exc)) from exc


class LinearPattern:
    """``finditer`` as ``re.Pattern`` has it, on RE2."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.source = to_re2(pattern, flags)
        self._re2 = compile_linear(self.source)

    def finditer(self, string: str, pos: int = 0) -> Iterator[Span]:
        base = max(0, pos - 1)
        for match in self._re2.finditer(string[base:], pos - base):
            yield Span(match.start() + base, match.end() + base)


class LinearClosure:
    """The prefix closure of a pattern on RE2 (see ``_horizon.Closure``): where the text could still
    grow into a match, without backtracking, whatever the operator wrote."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._re2 = compile_linear(f"(?:{prefix_closure(pattern, flags, re2=True)})\\z")

    @property
    def compiled(self) -> LinearClosure:
        return self

    def search(self, string: str, pos: int = 0) -> Span | None:
        found = self._re2.search(string[pos:])
        return None if found is None else Span(found.start() + pos, found.end() + pos)

    def viable(self, text: str, at: int) -> bool:
        return self._re2.match(text[at:]) is not None
