"""Helpers shared by the stream guardrail tests: feed a check a text in chunks, record what it did."""

from __future__ import annotations

import codecs
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st

from guardrails.decision import PASS, Block, Decision, Redact
from guardrails.seams import DeltaCheck, StreamContext, StreamGuardrail
from guardrails.stream import ArmedSet


@dataclass
class Outcome:
    block: Block | None = None
    blocked_at: int | None = None
    """len(accumulated) when the block fired; None for a block at finish or no block."""
    at_finish: bool = False
    redactions: list[tuple[int, int, str]] = field(default_factory=list)
    text: str = ""

    @property
    def redacted(self) -> list[str]:
        return [self.text[s:e] for s, e, _ in self.redactions]


def one_char(text: str) -> list[str]:
    return list(text)


@st.composite
def split_deltas(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into deltas, drawn: one character each, small ones (1-4) or token-sized ones (1-12)."""
    mode = draw(st.sampled_from(["one", "small", "tokens"]))
    if mode == "one":
        return list(text)
    hi = 4 if mode == "small" else 12
    deltas, i = [], 0
    while i < len(text):
        n = draw(st.integers(1, hi))
        deltas.append(text[i:i + n])
        i += n
    return deltas


def blocks_afresh(guardrails: Sequence[StreamGuardrail], ctx: StreamContext, deltas: Sequence[str]) -> bool:
    """Whether ``guardrails``, armed afresh, block the message made of ``deltas``."""
    armed = ArmedSet.arm(guardrails, ctx)
    acc = ""
    for delta in deltas:
        acc += delta
        if armed.check(acc, delta) is not None:
            return True
    return armed.finish(acc) is not None


def random_chunks(text: str, seed: int, lo: int = 1, hi: int = 9) -> Iterator[str]:
    rng = random.Random(seed)
    i = 0
    while i < len(text):
        n = rng.randint(lo, hi)
        yield text[i:i + n]
        i += n


def cut_by(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` in reads of the sizes in ``cuts``, taken in turn (and again from the first)."""
    out, i, k = [], 0, 0
    while i < len(data):
        n = cuts[k % len(cuts)]
        out.append(data[i:i + n])
        i, k = i + n, k + 1
    return out


def cut_text(text: str, sizes: list[int]) -> list[str]:
    """``text`` in deltas of the sizes in ``sizes``, taken in turn (and again from the first)."""
    out, i, k = [], 0, 0
    while i < len(text):
        out.append(text[i:i + sizes[k % len(sizes)]])
        i, k = i + sizes[k % len(sizes)], k + 1
    return out


def utf8_deltas(text: str, sizes: list[int]) -> list[str]:
    """``text`` as the proxy decodes it from reads of ``sizes`` bytes each, taken in turn: a read may
    split a character, which then goes with the later delta (the delta before it may be empty)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    return [decoder.decode(read) for read in cut_by(text.encode(), sizes)]


def horizons_until_block(guardrail: StreamGuardrail, ctx: StreamContext, pieces: Iterable[str]) -> tuple[bool, list[int]]:
    """Whether ``guardrail``'s armed check blocks the text fed in ``pieces`` (then ``finish``), and the
    horizons it reported before it did."""
    check = guardrail.arm(ctx)
    assert check is not None
    horizons: list[int] = []
    text = ""
    for piece in pieces:
        text += piece
        found = check.check_horizon(text, piece)
        if isinstance(found, Block):
            return True, horizons
        if isinstance(found, int):
            horizons.append(found)
    return check.finish(text) is not PASS, horizons


def run(check: DeltaCheck, chunks: Iterable[str]) -> Outcome:
    """Drive ``check`` the way the pipeline does: re-call with an empty delta after a Redact."""
    out = Outcome()
    acc = ""
    for delta in chunks:
        acc += delta
        out.text = acc
        decision: Decision = check.check(acc, delta)
        while isinstance(decision, Redact):
            out.redactions.append((decision.start, decision.end, decision.mask))
            decision = check.check(acc, "")
        if isinstance(decision, Block):
            out.block, out.blocked_at = decision, len(acc)
            return out
    out.text = acc
    decision = check.finish(acc)
    while isinstance(decision, Redact):
        out.redactions.append((decision.start, decision.end, decision.mask))
        decision = check.finish(acc)
    if isinstance(decision, Block):
        out.block, out.at_finish = decision, True
    return out


def summary(out: Outcome) -> tuple[str | None, list[tuple[int, int, str]]]:
    """What must not depend on the chunking: the reason code (or None) and the redactions."""
    return (out.block.reason_code if out.block else None), out.redactions


def armed_passes(guardrail: StreamGuardrail, ctx: StreamContext, pieces: Iterable[str]) -> bool:
    """Whether ``guardrail``'s armed check passes a complete text fed in ``pieces`` (then ``finish``):
    the oracle the whole-text forms are held to, kept apart from ``guardrails.stream.passes_complete``."""
    check = guardrail.arm(ctx)
    if check is None:
        return True
    accumulated = ""
    for piece in pieces:
        accumulated += piece
        if check.check(accumulated, piece) is not PASS:
            return False
    return check.finish(accumulated) is PASS
