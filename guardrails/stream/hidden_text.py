"""``hidden_text``: text a model reads and no client shows ("ASCII smuggling").

Unicode's tag characters (U+E0000-E007F) mirror ASCII one for one and no client draws them; a run
of variation selectors (U+FE00-FE0F, U+E0100-E01EF) carries bytes the same way. An answer or a tool
argument holding them passes a message the user never sees to the next model that reads it: the
agent's own history, a file it writes, a reviewer. Text holds them legitimately only in emoji: one
variation selector after a character (``❤️``), and tag characters inside a subdivision flag (U+1F3F4
black flag, two to six tag letters or digits, U+E007F cancel tag: England, Scotland, Wales). This
check trips on anything else: a run of tag characters outside a flag, or two variation selectors
in a row. With ``bidi`` (the default) it also trips on the bidirectional embedding, override and
isolate controls (U+202A-202E, U+2066-2069): they make a client draw text in another order than the
one every reader and check reads it in ("Trojan Source", CVE-2021-42574: code whose drawn logic is
not the logic that runs; an address written backwards after U+202E that is drawn forwards). rustc
refuses them in source by default and GitHub flags them in a diff; prose in right-to-left scripts
reads correctly without them (the renderer orders it itself), so ``redact`` drops them.

Horizon: nothing is held but the characters that could still become hidden text: a flag's tags
while it is being written, and a variation selector at the very end (a second one may follow).
Cost: an ASCII delta (none of these is ASCII) is passed on ``str.isascii``; any other delta costs
one regex search from where the check stopped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from config.policy import HiddenTextGuardrail
from guardrails.decision import HIDDEN_TEXT, PASS, Block, Decision, Redact
from guardrails.seams import DeltaCheck, StreamContext

_TAGS_AND_SELECTORS = "[\U000e0000-\U000e007f]+|[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}"
_BIDI = "[\u202a-\u202e\u2066-\u2069]+"
_HIDDEN = re.compile(_TAGS_AND_SELECTORS)
"""A run of tag characters, or of two or more variation selectors."""
_HIDDEN_OR_BIDI = re.compile(f"{_TAGS_AND_SELECTORS}|{_BIDI}")
"""The same, or a run of bidirectional controls."""
_SELECTOR = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]+")
_FLAG_BASE = "\U0001f3f4"
_FLAG_TAGS = re.compile("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f")
"""The tags of a subdivision flag after its black flag (UTS #51 emoji tag sequences)."""
_FLAG_SO_FAR = re.compile("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{0,6}")
WINDOW = 8
"""The most a check holds: a flag's six tags and its cancel tag, still being written."""


def _selector(char: str) -> bool:
    return "\ufe00" <= char <= "\ufe0f" or "\U000e0100" <= char <= "\U000e01ef"


class HiddenTextCheck(DeltaCheck):
    """Per-stream state: where the scan stopped, the horizon, and whether a reported run of
    variation selectors reaches the end (its continuation is hidden text too)."""

    __slots__ = ("_from", "_hidden", "_horizon", "_open_run", "_redact", "_replacement", "window")

    def __init__(self, redact: bool, replacement: str, *, bidi: bool = True) -> None:
        self.window = WINDOW
        self._hidden = _HIDDEN_OR_BIDI if bidi else _HIDDEN
        self._redact = redact
        self._replacement = replacement
        self._from = 0
        self._horizon = 0
        self._open_run = False

    def check(self, accumulated: str, delta: str) -> Decision:
        if delta.isascii() and self._from >= len(accumulated) - len(delta):
            if delta:  # (an empty one: the call again after a redaction, nothing new)
                self._from = self._horizon = len(accumulated)
                self._open_run = False
            return PASS
        return self._next(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        return self._next(accumulated, final=True)

    def horizon(self, accumulated: str) -> int:
        return self._horizon

    def _next(self, text: str, *, final: bool) -> Decision:
        n, pos = len(text), self._from
        if self._open_run and pos < n and _selector(text[pos]):
            run = _SELECTOR.match(text, pos)
            assert run is not None  # (text[pos] is a selector)
            return self._found(pos, run.end(), n, selectors=True)
        self._open_run = False
        for match in self._hidden.finditer(text, pos):
            start, end = match.span()
            if _selector(text[start]):
                return self._found(start, end, n, selectors=True)
            if text[start] < "\U000e0000":
                return self._found(start, end, n)  # bidirectional controls
            if start > 0 and text[start - 1] == _FLAG_BASE:
                flag = _FLAG_TAGS.match(text, start, end)
                if flag is not None:
                    if flag.end() == end:
                        continue  # a subdivision flag
                    start = flag.end()  # hidden tags right after a flag's own
                elif end == n and not final and _FLAG_SO_FAR.fullmatch(text, start, end):
                    self._from = self._horizon = start  # a flag still being written
                    return PASS
            return self._found(start, end, n)
        # A selector at the very end may be the first of a run: the scan starts there next time.
        self._from = self._horizon = n - 1 if not final and n and _selector(text[-1]) else n
        return PASS

    def _found(self, start: int, end: int, n: int, *, selectors: bool = False) -> Decision:
        """Report ``[start, end)``; a run of selectors that reaches the end goes on in what follows."""
        self._from = self._horizon = end
        self._open_run = selectors and end == n
        return self._decision(start, end)

    def _decision(self, start: int, end: int) -> Decision:
        if self._redact:
            return Redact(HIDDEN_TEXT, start, end, "")
        return Block(HIDDEN_TEXT, self._replacement,
                     "The answer carried hidden characters (Unicode tag characters, a run of variation "
                     "selectors, or bidirectional controls that reorder what the user sees). Write only "
                     "visible text, in the order it is meant to be read.")


class HiddenTextProvider:
    """The ``hidden_text`` stream guardrail."""

    def __init__(self, spec: HiddenTextGuardrail, replacement: str) -> None:
        self.id = spec.id
        self._redact = spec.action == "redact"
        self._replacement = replacement
        self._bidi = spec.bidi

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        return HiddenTextCheck(self._redact, self._replacement, bidi=self._bidi)

    def passes_whole(self, ctx: StreamContext, pieces: Sequence[str]) -> bool:
        """``HiddenTextCheck``'s verdict over a complete text (``PassesWhole``): nothing hidden."""
        for piece in pieces:
            if not piece.isascii():
                return HiddenTextCheck(False, "", bidi=self._bidi).finish("".join(pieces)) is PASS
        return True
