"""``regex``: the policy's own deny patterns, matched across deltas.

Each pattern has its own tail scanner: every delta the regex runs over the last ``window +
len(delta)`` characters (``spec.window``: the longest text a pattern may match). A match is
reported once it cannot grow (characters follow it), once it is ``window`` long, or at
``finish``, and never twice. Patterns are the user's: matches longer than ``window`` may be
reported later or not at all. They run on RE2 (``linear.py``), so a pattern's cost per delta is
linear in the ``window`` characters whatever the pattern; what RE2 cannot run (lookarounds,
backreferences) is refused when the policy loads. The horizon is the pattern's prefix closure,
also on RE2 (the literal prefix's on ``re``, which cannot backtrack on literals). A pattern
that opens with literal characters (``project`` in ``project\\s+nightingale``) runs only from
where they occur, and they are searched for in the new text alone: such a pattern costs
O(len(delta)) per delta while they are not within ``window`` of the end.
"""

from __future__ import annotations

import re
from re import _constants, _parser  # type: ignore[attr-defined]
from typing import Any

from config.policy import RegexGuardrail
from guardrails.decision import PASS, PATTERN_MATCH, Block, Decision
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream._horizon import Closure, HorizonParts
from guardrails.stream._scan import Anchors, TailScanner, literal_prefix
from guardrails.stream.linear import LinearClosure, LinearPattern

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


_Compiled = tuple[LinearPattern, Anchors | None, HorizonParts | None, bool]

# Assertions that read the character after a match (or its absence): a pattern holding one can
# stop matching when more text arrives, so its matches at the end of the text so far are not final.
_LOOKS_AHEAD = {_constants.AT_END, _constants.AT_END_LINE, _constants.AT_END_STRING, _constants.AT_BOUNDARY,
                _constants.AT_NON_BOUNDARY, _constants.AT_UNI_BOUNDARY, _constants.AT_UNI_NON_BOUNDARY,
                _constants.AT_LOC_BOUNDARY, _constants.AT_LOC_NON_BOUNDARY}


class RegexCheck(DeltaCheck):
    __slots__ = ("_horizon", "_horizons", "_replacement", "_scanners", "window")

    def __init__(self, patterns: list[_Compiled], window: int, replacement: str) -> None:
        self.window = window
        # An end-sensitive pattern's match is final once a character follows it (on RE2 ``$``
        # without ``m`` matches only at the very end, never before a last newline).
        self._scanners = [TailScanner(p, window, anchors=anchors, end_sensitive=ahead)
                          for p, anchors, _, ahead in patterns]
        self._horizons = [parts.arm() if parts else None for _, _, parts, _ in patterns]
        self._horizon = 0
        self._replacement = replacement

    def horizon(self, accumulated: str) -> int:
        return self._horizon

    def check(self, accumulated: str, delta: str) -> Decision:
        return self._scan(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        return self._scan(accumulated, final=True)

    def _scan(self, text: str, *, final: bool) -> Decision:
        for number, scanner in enumerate(self._scanners, start=1):
            if scanner.next(text, final=final) is not None:
                # The pattern's number, not its text: a model told the pattern learns to dodge it.
                return Block(PATTERN_MATCH, self._replacement,
                             f"The answer matched deny pattern #{number} of the policy. Rephrase "
                             "without that content.")
        fixed = max(0, len(text) - self.window)
        self._horizon = min((fixed if h is None else h.update(scanner, text))
                            for scanner, h in zip(self._scanners, self._horizons, strict=True))
        return PASS


class RegexProvider:
    """The ``regex`` stream guardrail; patterns are compiled once, with the policy."""

    def __init__(self, spec: RegexGuardrail, replacement: str) -> None:
        flags = re.NOFLAG
        for flag in spec.flags:
            flags |= _FLAGS[flag]
        self._patterns = [_compile(spec.id, number, p, flags) for number, p in enumerate(spec.patterns, start=1)]
        self.id = spec.id
        self._window = spec.window
        self._replacement = replacement

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        if not self._patterns:
            return None
        return RegexCheck(self._patterns, self._window, self._replacement)


def _compile(guardrail_id: str, number: int, pattern: str, flags: int) -> _Compiled:
    """The pattern on RE2, its anchors (its literal prefix, run only from where it occurs) and what
    its horizon needs. ValueError, naming the pattern, when Python cannot parse it or RE2 cannot run
    it in linear time."""
    where = f"guardrail {guardrail_id!r}: pattern #{number} {pattern!r}"
    try:
        parsed = re.compile(pattern, flags)  # Python's syntax; analysed here, never run
    except re.error as exc:
        raise ValueError(f"{where}: invalid pattern: {exc}") from exc
    try:
        linear = LinearPattern(pattern, flags)
    except ValueError as exc:
        raise ValueError(f"{where}: not accepted: {exc} (deny patterns run on a linear-time engine, "
                         "RE2, so that no pattern can stall the proxy)") from exc
    prefix = literal_prefix(parsed)
    anchors = None if prefix is None else Anchors([(prefix, 0)])
    try:
        full = LinearClosure(pattern, flags)
        # A literal prefix cannot make ``re`` backtrack: its closure is searched there, cheaply.
        tail = None if prefix is None else Closure(prefix, flags)
    except ValueError:  # no closure: this pattern holds its whole window
        return linear, anchors, None, _looks_ahead(pattern, flags)
    return linear, anchors, HorizonParts(full, tail, 0 if anchors is None else anchors.reach), \
        _looks_ahead(pattern, flags)


def _looks_ahead(pattern: str, flags: int) -> bool:
    """True when the pattern holds an assertion about what follows a position (``$``, ``\\Z``,
    ``\\b``, ``\\B``), anywhere: conservative, it only delays reporting a long match at the end."""
    def walk(node: Any) -> bool:
        if isinstance(node, tuple) and len(node) == 2 and node[0] is _constants.AT:
            return node[1] in _LOOKS_AHEAD
        if isinstance(node, (list, tuple)) or hasattr(node, "data"):
            items = node.data if hasattr(node, "data") else node
            return any(walk(item) for item in items)
        return False
    return walk(_parser.parse(pattern, flags))
