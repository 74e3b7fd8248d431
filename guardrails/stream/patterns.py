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
from collections.abc import Sequence
from dataclasses import dataclass
from re import _constants, _parser  # type: ignore[attr-defined]
from typing import Any

from config.policy import RegexGuardrail
from guardrails.decision import PASS, PATTERN_MATCH, Block, Decision
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream._horizon import Closure, HorizonParts
from guardrails.stream._prefix import first_chars, prefix_closure
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
    __slots__ = ("_gate", "_gate_from", "_horizon", "_horizons", "_idle", "_replacement", "_scanners", "window")
    sees_visible_text = True  # invisible characters inside a match hide nothing from the reader

    def __init__(self, patterns: list[_Compiled], window: int, replacement: str, gate: Gate | None) -> None:
        self.window = window
        # An end-sensitive pattern's match is final once a character follows it (on RE2 ``$``
        # without ``m`` matches only at the very end, never before a last newline).
        self._scanners = [TailScanner(p, window, anchors=anchors, end_sensitive=ahead)
                          for p, anchors, _, ahead in patterns]
        self._horizons = [parts.arm() if parts else None for _, _, parts, _ in patterns]
        self._horizon = 0
        self._replacement = replacement
        self._gate = gate
        self._gate_from = 0
        """Where the gate's anchor search starts: no scanner's own search starts before it."""
        self._idle = gate is not None
        """No scanner has a found anchor or a pending match, no horizon an anchor alive: the state
        in which a delta that completes no anchor and ends in no start of one changes nothing but
        the offsets (``_pass_quietly``)."""

    def horizon(self, accumulated: str) -> int:
        return self._horizon

    def check(self, accumulated: str, delta: str) -> Decision:
        if self._idle and self._pass_quietly(accumulated):
            return PASS
        return self._scan(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        return self._scan(accumulated, final=True)

    def _pass_quietly(self, text: str) -> bool:
        """The per-pattern passes of ``_scan`` in one search when none of them can find anything:
        one search of every pattern's anchor (literal prefix) over the new text, one of every
        horizon's tail closure over the last characters. When both find nothing, each scanner's
        pass would have found no anchor (its search covers a part of the gate's) and each horizon
        would be the end of the text (the closure's ``\\Z`` alternative): the state is moved on
        exactly so. Anything found: False, and ``_scan`` runs the patterns one by one."""
        gate, end = self._gate, len(text)
        assert gate is not None
        if gate.anchors.search(text, max(0, self._gate_from)) is not None \
                or gate.tails.search(text, max(0, end - gate.tail_reach)) is not None:
            return False
        for scanner in self._scanners:
            scanner.passed(end)
        for h in self._horizons:
            h.value = end  # type: ignore[union-attr]  # a gate is built only when every pattern has one
        self._horizon = end
        self._gate_from = end - gate.reach + 1
        return True

    def _scan(self, text: str, *, final: bool) -> Decision:
        for number, scanner in enumerate(self._scanners, start=1):
            if scanner.next(text, final=final) is not None:
                self._idle = False
                # The pattern's number, not its text: a model told the pattern learns to dodge it.
                return Block(PATTERN_MATCH, self._replacement,
                             f"The answer matched deny pattern #{number} of the policy. Rephrase "
                             "without that content.")
        fixed = max(0, len(text) - self.window)
        self._horizon = min((fixed if h is None else h.update(scanner, text))
                            for scanner, h in zip(self._scanners, self._horizons, strict=True))
        if self._gate is not None:
            self._idle = all(s.idle for s in self._scanners) and all(h is not None and h.idle for h in self._horizons)
            self._gate_from = min(s.since for s in self._scanners)
        return PASS


class RegexProvider:
    """The ``regex`` stream guardrail; patterns are compiled once, with the policy."""

    sees_visible_text = RegexCheck.sees_visible_text  # (its whole-text form reads what the check reads)

    def __init__(self, spec: RegexGuardrail, replacement: str) -> None:
        flags = re.NOFLAG
        for flag in spec.flags:
            flags |= _FLAGS[flag]
        self._patterns = [_compile(spec.id, number, p, flags) for number, p in enumerate(spec.patterns, start=1)]
        self.id = spec.id
        self._window = spec.window
        self._replacement = replacement
        self._gate = Gate.of(spec.patterns, flags, self._patterns)
        self._prefixes = _prefixes(spec.patterns, flags)

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        if not self._patterns:
            return None
        return RegexCheck(self._patterns, self._window, self._replacement, self._gate)

    def passes_whole(self, ctx: StreamContext, pieces: Sequence[str]) -> bool:
        """``RegexCheck``'s verdict over a complete text (``PassesWhole``): when every pattern opens
        with literal characters, none of them anywhere in the text (a pattern runs only from where
        they occur). A pattern without them: the armed check decides."""
        if not self._patterns:
            return True
        if self._prefixes is None:
            return False
        return self._prefixes.search(pieces[0] if len(pieces) == 1 else "".join(pieces)) is None


@dataclass(frozen=True, slots=True)
class Gate:
    """Every pattern's anchor and horizon tail in one search each (``RegexCheck._pass_quietly``):
    with several deny patterns, a delta that concerns none of them costs two searches, not two per
    pattern. Built only when every pattern opens with literal characters (all anchored, every
    horizon's tail a closure of those characters, on ``re``, which cannot backtrack on literals)."""

    anchors: re.Pattern[str]
    reach: int
    """The longest text an anchor reads (the gate searches from this far before the new text)."""
    tails: re.Pattern[str]
    """The tails' closures without their empty alternative: a hit is a start a horizon would hold."""
    tail_reach: int

    @classmethod
    def of(cls, sources: list[str], flags: int, patterns: list[_Compiled]) -> Gate | None:
        prefixes = [literal_prefix(re.compile(p, flags)) for p in sources]
        if len(patterns) < 2 or any(a is None or parts is None or parts.tail is None for _, a, parts, _ in patterns):
            return None
        assert all(prefixes)
        tails = []
        for prefix in prefixes:
            assert prefix is not None
            first = first_chars(prefix, flags)
            guard = f"(?={first})" if first else ""
            tails.append(f"(?:{guard}(?:{prefix_closure(prefix, flags)})\\Z)")
        try:
            return cls(re.compile("|".join(f"(?:{p})" for p in prefixes)),
                       max(a.reach for _, a, _, _ in patterns if a is not None), re.compile("|".join(tails)),
                       max(parts.tail_reach for _, _, parts, _ in patterns if parts is not None))
        except re.error:  # flags written inside a prefix cannot be joined: the patterns run one by one
            return None


def _prefixes(sources: list[str], flags: int) -> re.Pattern[str] | None:
    """Every pattern's literal prefix in one search (``RegexProvider.passes_whole``), or None when a
    pattern has none."""
    prefixes = [literal_prefix(re.compile(p, flags)) for p in sources]
    if not prefixes or any(p is None for p in prefixes):
        return None
    try:
        return re.compile("|".join(f"(?:{p})" for p in prefixes))
    except re.error:
        return None


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
