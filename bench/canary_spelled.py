"""The canary's letters-and-digits view (``_canary_text.squeeze``), off against on, in one run.

Run: ``PYTHONPATH=. .venv/bin/python -m bench.canary_spelled``. "Off" builds prompt indexes without
the squeezed view (the canary as it was before spelled-out copies were read). Against Gemini CLI's
own system prompt (``tests/data/gemini_cli_system_prompt.txt``, 21 KB):

- **False positives**: the project's README, docs and sources (all of them) streamed in token-sized deltas (one
  message per 2,000 deltas, as ``bench.holdback`` streams them) and checked whole per message, plus
  Russian and Greek prose: messages blocked.
- **Detection**: 200 excerpts of the prompt (80-300 characters), each spelled one of the ways
  ``tests/checks/test_canary_spelled.py`` lists, streamed in random deltas and checked whole: blocked.
- **Hold**: characters held by the canary's horizon after each delta of the README/docs/sources
  stream (median and 99th percentile): what the view costs in latency of ordinary text.
- **Cost**: canary CPU per delta (``process_time``) on that stream, and the index's build time and
  size for the 21 KB prompt, in alternating rounds (off, on, off, on...), medians.

Prints a table; writes nothing.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bench.canary_common import (
    GREEK,
    PROMPT,
    RUNS,
    RUSSIAN,
    Row,
    blocked_streamed,
    corpus,
    cpu_us_per_delta,
    fresh,
    messages,
    off_against_on,
    print_table,
    random_deltas,
)
from bench.holdback import _TOKEN, token_deltas
from guardrails.seams import StreamContext
from guardrails.stream import canary
from guardrails.stream.canary import CanaryProvider
from tests.checks.test_canary_spelled import SPELLINGS


@contextmanager
def squeezed_off() -> Iterator[None]:
    """Prompt indexes built without the squeezed view (``_index_of`` looks ``squeeze`` up by name)."""
    real = canary.squeeze
    canary.squeeze = lambda text: ""
    try:
        yield
    finally:
        canary.squeeze = real


def verdicts(deltas: list[str]) -> Row:
    provider, ctx = fresh()
    own = messages(deltas)
    prose = messages(token_deltas((RUSSIAN + GREEK) * 40))
    rng = random.Random(11)
    leaks = []
    while len(leaks) < 200:
        start = rng.randrange(0, len(PROMPT) - 300)
        excerpt = PROMPT[start:start + rng.randint(80, 300)]
        leaks.append(SPELLINGS[rng.choice(sorted(SPELLINGS))](excerpt))
    held = holds(provider, ctx, own)
    return {"own messages": len(own),
            "own streamed blocked": sum(blocked_streamed(provider, ctx, m) for m in own),
            "own whole blocked": sum(not provider.passes_whole(ctx, ["".join(m)]) for m in own),
            "ru/el streamed blocked": sum(blocked_streamed(provider, ctx, m) for m in prose),
            "ru/el whole blocked": sum(not provider.passes_whole(ctx, ["".join(m)]) for m in prose),
            "spelled leaks": len(leaks),
            "spelled streamed blocked": sum(blocked_streamed(provider, ctx, random_deltas(t, rng)) for t in leaks),
            "spelled whole blocked": sum(not provider.passes_whole(ctx, [t]) for t in leaks),
            "held chars median": statistics.median(held),
            "held chars p99": sorted(held)[len(held) * 99 // 100]}


def holds(provider: CanaryProvider, ctx: StreamContext, msgs: list[list[str]]) -> list[int]:
    out = []
    for message in msgs:
        check = provider.arm(ctx)
        assert check is not None
        acc = ""
        for delta in message:
            acc += delta
            found = check.check_horizon(acc, delta)
            if isinstance(found, int):
                out.append(len(acc) - found)
    return out


def costs(deltas: list[str]) -> Row:
    provider, ctx = fresh()

    def build() -> float:
        start = time.process_time()
        provider.index_of(PROMPT)
        return (time.process_time() - start) * 1e3

    return {"cpu us/delta": round(cpu_us_per_delta(provider, ctx, deltas), 2),
            "index build ms": round(statistics.median(build() for _ in range(RUNS)), 1),
            "index KB": provider.index_of(PROMPT).size_bytes // 1024}


def main() -> None:
    deltas = _TOKEN.findall(corpus())  # all of it (``token_deltas`` keeps the first 20,000)
    print_table(*off_against_on(squeezed_off, lambda: verdicts(deltas), lambda: costs(deltas[:10_000])),
                "squeezed view off (before)", "on (after)")


if __name__ == "__main__":
    main()
