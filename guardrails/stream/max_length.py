"""``max_length``: the answer is cut off once it grows past ``max_chars`` characters. O(1)."""

from __future__ import annotations

from collections.abc import Sequence

from config.policy import MaxLengthGuardrail
from guardrails.decision import MAX_LENGTH, PASS, Block, Decision
from guardrails.seams import DeltaCheck, StreamContext


class MaxLengthCheck(DeltaCheck):
    """Trips once, on the delta that crosses the limit (window 0: nothing needs holding back)."""

    __slots__ = ("_max_chars", "_replacement", "_tripped", "window")

    def __init__(self, max_chars: int, replacement: str) -> None:
        self.window = 0
        self._max_chars = max_chars
        self._replacement = replacement
        self._tripped = False

    def horizon(self, accumulated: str) -> int:
        """Nothing pending: the limit counts characters, it does not match any."""
        return len(accumulated)

    def check(self, accumulated: str, delta: str) -> Decision:
        if self._tripped or len(accumulated) <= self._max_chars:
            return PASS
        self._tripped = True
        return Block(MAX_LENGTH, self._replacement,
                     f"The answer exceeded {self._max_chars} characters. Answer more briefly.")


class MaxLengthProvider:
    def __init__(self, spec: MaxLengthGuardrail, replacement: str) -> None:
        self.id = spec.id
        self._max_chars = spec.max_chars
        self._replacement = replacement

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        return MaxLengthCheck(self._max_chars, self._replacement)

    def passes_whole(self, ctx: StreamContext, pieces: Sequence[str]) -> bool:
        """``MaxLengthCheck`` trips exactly when the text grows past the limit (``PassesWhole``)."""
        return sum(map(len, pieces)) <= self._max_chars
