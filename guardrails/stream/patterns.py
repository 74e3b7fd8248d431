"""``regex``: the policy's own deny patterns, matched across deltas.

Each pattern has its own tail scanner: every delta the regex runs over the last ``window +
len(delta)`` characters (``spec.window``: the longest text a pattern may match). A match is
reported once it cannot grow (characters follow it), once it is ``window`` long, or at
``finish``, and never twice. Patterns are the user's: a pattern with lookaheads that read past
its match, or matches longer than ``window``, may be reported later or not at all; and a
pattern's cost per delta is whatever the regex engine spends on ``window`` characters. A pattern
that opens with literal characters (``project`` in ``project\\s+nightingale``) runs only from
where they occur, and they are searched for in the new text alone: such a pattern costs
O(len(delta)) per delta while they are not within ``window`` of the end.
"""

from __future__ import annotations

import re

from config.policy import RegexGuardrail
from guardrails.decision import PASS, PATTERN_MATCH, Block, Decision
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream._horizon import Closure, HorizonParts
from guardrails.stream._scan import Anchors, TailScanner, literal_prefix

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


_Compiled = tuple[re.Pattern[str], Anchors | None, HorizonParts | None]


class RegexCheck(DeltaCheck):
    def __init__(self, patterns: list[_Compiled], window: int, replacement: str) -> None:
        self.window = window
        self._scanners = [TailScanner(p, window, anchors=anchors) for p, anchors, _ in patterns]
        self._horizons = [parts.arm() if parts else None for _, _, parts in patterns]
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
        try:
            compiled = [re.compile(p, flags) for p in spec.patterns]
        except re.error as exc:
            raise ValueError(f"guardrail {spec.id!r}: invalid pattern: {exc}") from exc
        # A pattern that opens with literal characters is run only from where they occur.
        self._patterns = [_with_horizon(p, literal_prefix(p)) for p in compiled]
        self.id = spec.id
        self._window = spec.window
        self._replacement = replacement

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        if not self._patterns:
            return None
        return RegexCheck(self._patterns, self._window, self._replacement)


def _with_horizon(pattern: re.Pattern[str], prefix: str | None) -> _Compiled:
    """The pattern, its anchors (its literal prefix) and what its horizon needs; a pattern whose
    prefix closure cannot be written holds its whole window (``horizon`` None)."""
    anchors = None if prefix is None else Anchors([(prefix, 0)])
    try:
        full = Closure(pattern.pattern, pattern.flags)
        tail = None if prefix is None else Closure(prefix, pattern.flags)
    except ValueError:
        return pattern, anchors, None
    return pattern, anchors, HorizonParts(full, tail, 0 if anchors is None else anchors.reach)
