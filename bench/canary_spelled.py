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

from bench.canary_lookalikes import GREEK, PROMPT, ROOT, RUSSIAN, blocked_streamed, messages, random_deltas
from bench.holdback import _TOKEN, real_text, token_deltas
from config.policy import CanaryGuardrail
from guardrails.seams import StreamContext
from guardrails.stream import canary
from guardrails.stream.canary import CanaryProvider
from tests.checks.test_canary_spelled import SPELLINGS

RUNS = 5
ROUNDS = 3


@contextmanager
def squeezed_off() -> Iterator[None]:
    """Prompt indexes built without the squeezed view (``_index_of`` looks ``squeeze`` up by name)."""
    real = canary.squeeze
    canary.squeeze = lambda text: ""
    try:
        yield
    finally:
        canary.squeeze = real


def corpus() -> str:
    docs = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join([real_text(), *docs])


def fresh() -> tuple[CanaryProvider, StreamContext]:
    return CanaryProvider(CanaryGuardrail(id="canary", kind="canary"), "[withheld]"), StreamContext(system_prompt=PROMPT)


def verdicts(deltas: list[str]) -> dict[str, float | int]:
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


def costs(deltas: list[str]) -> dict[str, float | int]:
    provider, ctx = fresh()

    def per_delta() -> float:
        total = 0.0
        for message in messages(deltas):
            check = provider.arm(ctx)
            assert check is not None
            acc = ""
            start = time.process_time()
            for delta in message:
                acc += delta
                check.check_horizon(acc, delta)
            total += time.process_time() - start
        return total / len(deltas) * 1e6

    def build() -> float:
        start = time.process_time()
        provider.index_of(PROMPT)
        return (time.process_time() - start) * 1e3

    return {"cpu us/delta": round(statistics.median(per_delta() for _ in range(RUNS)), 2),
            "index build ms": round(statistics.median(build() for _ in range(RUNS)), 1),
            "index KB": provider.index_of(PROMPT).size_bytes // 1024}


def main() -> None:
    deltas = _TOKEN.findall(corpus())  # all of it (``token_deltas`` keeps the first 20,000)
    with squeezed_off():
        before = verdicts(deltas)
    after = verdicts(deltas)
    rounds: dict[bool, list[dict[str, float | int]]] = {False: [], True: []}
    for _ in range(ROUNDS):
        with squeezed_off():
            rounds[False].append(costs(deltas[:10_000]))
        rounds[True].append(costs(deltas[:10_000]))
    for on, target in ((False, before), (True, after)):
        for key in rounds[on][0]:
            target[key] = round(statistics.median(r[key] for r in rounds[on]), 2)
    print("| measure | squeezed view off (before) | on (after) |")
    print("|---|---:|---:|")
    for key in after:
        print(f"| {key} | {before[key]} | {after[key]} |")


if __name__ == "__main__":
    main()
