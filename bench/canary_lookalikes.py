"""The canary's look-alike skeleton, on against off, side by side in one run.

Run: ``PYTHONPATH=. .venv/bin/python -m bench.canary_lookalikes``. "Off" swaps the skeleton's table
for an empty one (the canary as it was before look-alikes were folded). Against Gemini CLI's own
system prompt (captured from the pinned CLI, ``tests/data/gemini_cli_system_prompt.txt``, 21 KB):

- **False positives**: the project's README and sources streamed in token-sized deltas (as
  ``bench.holdback`` streams them, one message per 2,000 deltas) and checked whole per message, plus
  Russian and Greek prose: messages blocked.
- **Detection**: 200 excerpts of the prompt (60-200 characters) with a random half of the letters
  that have a look-alike swapped for one, streamed in random deltas and checked whole: blocked.
- **Cost**: canary CPU per delta (``process_time``) on the ASCII stream and on a Russian one, and
  the prompt index's build time for 15 KB and 57 KB prompts (ASCII and with Cyrillic look-alikes),
  in alternating rounds (off, on, off, on...) so a busy machine weighs on both alike.

Prints a table; writes nothing.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

import guardrails.stream._canary_text as canary_text
from bench.canary_common import (
    GREEK,
    PROMPT,
    RUNS,
    RUSSIAN,
    Row,
    blocked_streamed,
    cpu_us_per_delta,
    fresh,
    messages,
    off_against_on,
    print_table,
    random_deltas,
)
from bench.holdback import real_text, token_deltas
from guardrails.seams import StreamContext
from guardrails.stream.canary import CanaryProvider

LOOKALIKES = {"a": "аα", "c": "сᴄ", "e": "е", "i": "іι", "j": "ј", "o": "оο", "p": "рρ", "s": "ѕ", "x": "хχ",
              "y": "у", "h": "һ", "v": "ν", "A": "АΑ", "B": "ВΒ", "E": "ЕΕ", "H": "НΗ", "K": "КΚ", "M": "МΜ",
              "O": "ОΟ", "P": "РΡ", "T": "ТΤ", "X": "ХΧ", "C": "С", "S": "Ѕ"}


@contextmanager
def skeleton_off() -> Iterator[None]:
    """The canary normalising without look-alikes (``normalise`` looks the table up by name)."""
    real = canary_text.skeleton_table
    canary_text.skeleton_table = dict  # type: ignore[assignment] # an empty table
    try:
        yield
    finally:
        canary_text.skeleton_table = real


def lookalike_copy(text: str, rng: random.Random) -> str:
    return "".join(rng.choice(LOOKALIKES[c]) if c in LOOKALIKES and rng.random() < 0.5 else c for c in text)


def false_positives(provider: CanaryProvider, ctx: StreamContext) -> dict[str, int]:
    own = messages(token_deltas(real_text()))
    prose = messages(token_deltas((RUSSIAN + GREEK) * 40))
    return {"own messages": len(own),
            "own streamed blocked": sum(blocked_streamed(provider, ctx, m) for m in own),
            "own whole blocked": sum(not provider.passes_whole(ctx, ["".join(m)]) for m in own),
            "ru/el streamed blocked": sum(blocked_streamed(provider, ctx, m) for m in prose),
            "ru/el whole blocked": sum(not provider.passes_whole(ctx, ["".join(m)]) for m in prose)}


def detection(provider: CanaryProvider, ctx: StreamContext) -> dict[str, int]:
    rng = random.Random(7)
    leaks = []
    for _ in range(200):
        start = rng.randrange(0, len(PROMPT) - 200)
        leaks.append(lookalike_copy(PROMPT[start:start + rng.randint(60, 200)], rng))
    return {"leaks": len(leaks),
            "streamed blocked": sum(blocked_streamed(provider, ctx, random_deltas(t, rng)) for t in leaks),
            "whole blocked": sum(not provider.passes_whole(ctx, [t]) for t in leaks)}


def index_ms(provider: CanaryProvider, prompt: str) -> float:
    def once() -> float:
        start = time.process_time()
        provider.index_of(prompt)
        return time.process_time() - start
    return statistics.median(once() for _ in range(RUNS)) * 1e3


def verdicts() -> Row:
    provider, ctx = fresh()
    return {**false_positives(provider, ctx), **detection(provider, ctx)}


def costs() -> Row:
    provider, ctx = fresh()
    base = real_text()
    row: Row = {
        "ascii us/delta": round(cpu_us_per_delta(provider, ctx, token_deltas(base)[:10_000]), 2),
        "russian us/delta": round(cpu_us_per_delta(provider, ctx, token_deltas(RUSSIAN * 200)[:10_000]), 2)}
    for kb in (15, 57):
        prompt = base[:kb * 1024]
        row[f"index {kb} KB ms"] = round(index_ms(provider, prompt), 1)
        row[f"index {kb} KB look-alike ms"] = round(index_ms(provider, lookalike_copy(prompt, random.Random(1))), 1)
    return row


def main() -> None:
    """Verdicts once each; costs in alternating rounds (off, on, off, on...), medians."""
    print_table(*off_against_on(skeleton_off, verdicts, costs), "skeleton off (before)", "skeleton on (after)")


if __name__ == "__main__":
    main()
